//! wgmma: the ladder on Hopper's own machinery (sm_90a): tiles fed by the copy engine
//! ([`crate::gpu::tma`]) through a ring of stages ([`crate::gpu::ring`]) and
//! multiplied by warpgroups (`wgmma`, [`crate::gpu::wgmma`]). C = A B, row-major f32,
//! TF32 tensor cores.
//!
//! TF32 wgmma reads shared-memory operands only K-major. A (m x k, row-major) is, so
//! its tile goes to the tensor cores as it lands. B (k x n, row-major) is N-major, so
//! each block computes the transposed tile, C^T = B^T A^T: its rows are n, B^T's
//! fragments go through registers (the instruction's A operand, loaded from B's tile
//! with `ld.shared`), and A's tile is the instruction's B operand. A consumer
//! warpgroup owns 64 n-rows by BM m-columns of C^T (`m64nBMk8`, BM / 2 accumulators a
//! thread), two warpgroups a block: a BM x 128 tile of C.
//!
//! Tiles: A's is BM x 32 (one box, 128-byte rows of k, swizzled), B's is 32 x 128 (four
//! 32 x 32 boxes, 128-byte rows of n, swizzled). A thread's fragment rows are n
//! `4 p + {0..4, 16..20} (+ 8)` of its warp pair's 32-column box (`p` the warp's parity),
//! which puts a warp's 32 loads of one register on 32 different banks through the
//! swizzle; the accumulators keep that row order, undone at the store.
//!
//! Any m (the copy engine zero-fills rows past m and the stores are guarded); k and n
//! multiples of 4, as the copy engine reads rows that start on 16-byte boundaries (the
//! host refuses other shapes in one line).
//!
//! The rungs, one lesson each, each a configuration of the ring:
//! 1. [`sgemm_wgmma`]: every warpgroup computes; one thread also issues the copies,
//!    STAGES - 1 k-tiles ahead, refilling the stage a block barrier has just freed (a
//!    ring without `empty` barriers).
//! 2. [`sgemm_wgmma_ws`]: warp specialisation. A producer warpgroup only issues copies
//!    (one thread), waiting on each stage's `empty` barrier; two consumer warpgroups only
//!    multiply, waiting on `full` barriers, loading the next k-tile's fragments while
//!    the tensor cores run the current one, and free each stage (a ring with consumers).
//!    `setmaxnreg` moves registers from the producer (40 a thread) to the consumers
//!    (232). No block barrier in the loop.
//! 3. [`sgemm_wgmma_cluster`]: clusters of two blocks on the same rows of A (adjacent
//!    column tiles of C): each copies half of A's tile and multicasts it to both,
//!    halving A's reads from L2; a consumer frees a stage in both blocks (the ring of
//!    rung 2, clustered).
//!
//! 4. [`sgemm_wgmma_tma_store`]: rung 2 made persistent and its C handed to the copy
//!    engine (the 16-bit chapter's rungs 4 and 5 in TF32). One block an SM walks the
//!    tiles, the ring running on from tile to tile, so the producer copies the next
//!    tile's k-tiles while the consumers store this one's C. Stored from registers, a
//!    warp's C^T fragments fill half of each 32-byte sector they touch; instead each
//!    consumer warpgroup writes C in bands of 32 rows into two swizzled 32 x 32 boxes of
//!    shared memory and one thread hands them to the copy engine
//!    (`cp.async.bulk.tensor`, clipped at C's edges), while the warpgroup writes the
//!    next band into the other buffer.
//!
//! Rung 2 also comes in narrower tiles: `sgemm_wgmma_ws_192`, `sgemm_wgmma_ws_128` and
//! `sgemm_wgmma_ws_64` (192, 128 or 64 rows of A), more blocks for products too small
//! to fill the SMs with 256-row tiles.

use super::consumer::{Lane, STAGED_BOX};
use crate::gpu::mma::Tf32;
use crate::gpu::ring::{Ring, Stage};
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{block_idx_x, grid_dim_x, sync_threads, thread_idx_x};
use crate::gpu::tma::{self, TensorMap, load_2d, load_2d_multicast};
use crate::gpu::wgmma::{self, Accumulator, Descriptor};
use crate::gpu::{Global, GlobalMut};

/// k per tile: one 128-byte row of TF32.
pub const BK: usize = 32;
/// n per block: two consumer warpgroups of 64 rows of C^T.
pub const BN: usize = 128;
/// Blocks of one band of m tiles run together ([`tile_of`]): 8 rows of tiles, twice
/// that for tiles wider than tall, so the 132 tiles an H100's or H200's SMs hold at
/// once span about as many rows of C as columns (16 x 128 rows by 8 x 256 columns).
pub const GROUP_M: u32 = 8;
/// Warps of a warp-specialised block's two consumer warpgroups: each frees a stage.
const CONSUMER_WARPS: u32 = 8;

/// A Hopper tuning: m per block (the wgmma's N) and shared stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgmmaTiling {
    pub bm: usize,
    pub stages: usize,
    /// Warpgroups a block: consumers, plus one producer when warp-specialised.
    pub warpgroups: usize,
    /// Floats of shared memory after the stages where C is staged for the copy engine.
    pub staging: usize,
}

impl WgmmaTiling {
    /// Floats of A's tile.
    pub const fn a_floats(&self) -> usize {
        self.bm * BK
    }
    /// Floats of one stage: A's tile, then B's four boxes.
    pub const fn stage_floats(&self) -> usize {
        self.a_floats() + BK * BN
    }
    /// Bytes the copy engine writes into a stage.
    pub const fn stage_bytes(&self) -> u32 {
        (self.stage_floats() * 4) as u32
    }
    /// Where the staging buffers start, in floats: after the stages.
    pub const fn staging_at(&self) -> usize {
        self.stages * self.stage_floats()
    }
    /// Dynamic shared memory: the stages, the staging buffers and two barriers a stage,
    /// with room to start the stages on a 1024-byte boundary (the swizzle's).
    pub const fn shared_bytes(&self) -> usize {
        (self.staging_at() + self.staging) * 4 + self.stages * 16 + 1024
    }
    pub const fn threads(&self) -> usize {
        128 * self.warpgroups
    }
}

/// `wgmma`: 256 x 128 tiles, 4 stages, two warpgroups that compute.
pub const WGMMA: WgmmaTiling = WgmmaTiling {
    bm: 256,
    stages: 4,
    warpgroups: 2,
    staging: 0,
};
/// `wgmma-ws`: the same tiles, a producer warpgroup and two consumers.
pub const WGMMA_WS: WgmmaTiling = WgmmaTiling {
    bm: 256,
    stages: 4,
    warpgroups: 3,
    staging: 0,
};
/// `wgmma-ws-192`: 192 x 128 tiles with 5 stages (more blocks for small products).
pub const WGMMA_WS_192: WgmmaTiling = WgmmaTiling {
    bm: 192,
    stages: 5,
    warpgroups: 3,
    staging: 0,
};
/// `wgmma-ws-64`: 64 x 128 tiles (`m64n64k8`), four times wgmma-ws's blocks, for
/// products too small to give every SM a 256 x 128 tile. A stage's wgmmas take a
/// quarter of wgmma-ws's time, so 8 stages (192 KiB) keep twice the k in flight.
pub const WGMMA_WS_64: WgmmaTiling = WgmmaTiling {
    bm: 64,
    stages: 8,
    warpgroups: 3,
    staging: 0,
};
/// `wgmma-ws-128`: 128 x 128 tiles (`m64n128k8`), one round of the SMs at 1280³ (100
/// tiles, where 256 x 128 makes 50 and 192 x 128 70); a stage's wgmmas take half of
/// wgmma-ws's time, so 6 stages (192 KiB).
pub const WGMMA_WS_128: WgmmaTiling = WgmmaTiling {
    bm: 128,
    stages: 6,
    warpgroups: 3,
    staging: 0,
};
/// `wgmma-cluster`: `wgmma-ws` in clusters of two sharing A's tile.
pub const WGMMA_CLUSTER: WgmmaTiling = WGMMA_WS;
/// `wgmma-tma-store`: wgmma-ws's tiles and stages, and per consumer warpgroup two
/// buffers of its two boxes (32 KiB; 225 KiB in all, of the 227 a block may have).
pub const WGMMA_TMA_STORE: WgmmaTiling = WgmmaTiling {
    staging: 2 * 2 * 2 * STAGED_BOX,
    ..WGMMA_WS
};

/// Which BM x BN tile of C block `b` computes: blocks run in bands of [`GROUP_M`] m
/// tiles, column tile by column tile, so the blocks resident at once share A's rows
/// and B's columns in L2.
#[inline(always)]
pub fn tile_of(b: u32, m: u32, n: u32, bm: u32, bn: u32) -> (u32, u32) {
    let (tiles_m, tiles_n) = (m.div_ceil(bm), n.div_ceil(bn));
    let group = if bn > bm { 2 * GROUP_M } else { GROUP_M };
    // Both divisors at least 1 for any b: the function has no path that traps, which
    // would stall the wgmmas a walking consumer keeps in flight around it.
    let per_band = (group * tiles_n).max(1);
    let first = (b / per_band) * group;
    let rows = tiles_m.saturating_sub(first).clamp(1, group);
    let within = b % per_band;
    ((first + within % rows) * bm, (within / rows) * bn)
}

/// The ring of a tiling: its stages from the dynamic segment's first 1024-byte
/// boundary (the swizzle's), then their barriers.
#[inline(always)]
unsafe fn ring(t: WgmmaTiling) -> Ring {
    // SAFETY: the host launches with t.shared_bytes() of dynamic shared memory.
    let tiles = unsafe { dynamic_shared_array::<f32>(t.shared_bytes() / 4).aligned(1024) };
    Ring::new(tiles, t.stages, t.stage_floats()).with_barriers_at(t.staging_at() + t.staging)
}

/// Issues the copies of k-tile `i` into the producer's stage `s` once it is free (one
/// thread): A's BM x 32 box, B's four 32 x 32 boxes, all completing on its `full`
/// barrier. In a cluster, this block copies its part of A's box into every block.
#[inline(always)]
unsafe fn load_stage(
    t: WgmmaTiling,
    ring: Ring,
    s: Stage,
    (a, b): (Global<TensorMap>, Global<TensorMap>),
    (m0, n0, i): (u32, u32, u32),
) {
    let (tiles, stage, k) = (ring.tiles(), ring.stage(s), (i * BK as u32) as i32);
    // SAFETY: the producer's ring; the stage's copies bring its bytes in all.
    unsafe {
        let full = ring.acquire(s);
        match ring.cluster() {
            (1, _) => load_2d(a, [k, m0 as i32], tiles, stage, full),
            (blocks, rank) => {
                let rows = t.bm / blocks as usize;
                let at = m0 + rank * rows as u32;
                let dst = stage + rank as usize * rows * BK;
                load_2d_multicast(a, [k, at as i32], tiles, dst, full, ring.multicast_mask());
            }
        }
        for j in 0..BN / 32 {
            let col = (n0 + 32 * j as u32) as i32;
            load_2d(b, [col, k], tiles, stage + t.a_floats() + 1024 * j, full);
        }
    }
}

/// One k-tile's wgmmas from stage `s`: four `m64nBMk8`, one group.
#[inline(always)]
unsafe fn multiply<A: Accumulator>(acc: &mut A, frags: &[[Tf32; 4]; 4], ring: Ring, s: Stage) {
    let (tiles, a) = (ring.tiles(), ring.stage(s));
    // SAFETY: the stage has landed; the group is waited for before the stage is freed.
    unsafe {
        let b: [Descriptor; 4] = core::array::from_fn(|kk| Descriptor::k_major_128b(tiles, a + 8 * kk));
        wgmma::fence();
        for kk in 0..4 {
            wgmma::mma_tf32(acc, frags[kk], b[kk]);
        }
        wgmma::commit_group();
    }
}

/// The zeroed accumulators of a consumer thread.
#[inline(always)]
fn zeroed<A: Accumulator>() -> A {
    A::zeroed()
}

/// Rung 1: every warpgroup multiplies; thread 0 also copies, `stages - 1` k-tiles
/// ahead, into the stage a block barrier has just freed (a ring without `empty`
/// barriers).
#[inline(always)]
unsafe fn plain<A: Accumulator>(
    t: WgmmaTiling,
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<f32>,
) {
    // SAFETY: the host's launch (t.shared_bytes(), t.threads()) and maps of A and B.
    unsafe {
        let ring = ring(t);
        let (m0, n0) = tile_of(block_idx_x(), m, n, t.bm as u32, BN as u32);
        let ktiles = k.div_ceil(BK as u32);
        let tid = thread_idx_x() as usize;
        if tid == 0 {
            ring.init();
        }
        // Initialised before the block barrier, armed after it (as the ring's contract
        // says): in one branch with the first loads, ptxas runs the initialisation as
        // warp-wide uniform instructions, and racecheck reports it and the arrival as a
        // race inside warp 0.
        ring.sync();
        // Every thread keeps the producer's place, so that it stays in uniform registers.
        let mut load = ring.producer_start();
        for i in 0..(t.stages as u32 - 1).min(ktiles) {
            if tid == 0 {
                load_stage(t, ring, load, maps, (m0, n0, i));
            }
            load.advance();
        }
        let me = Lane::new(tid / 128, tid % 128);
        let mut acc = zeroed::<A>();
        let mut s = ring.consumer_start();
        for i in 0..ktiles {
            ring.wait(s);
            let frags = me.fragments(ring, t.a_floats(), s);
            multiply(&mut acc, &frags, ring, s);
            wgmma::wait_group::<0, A>(&mut acc);
            // Every warpgroup is done with k-tile i - 1's stage: refill it.
            sync_threads();
            let next = i + t.stages as u32 - 1;
            if tid == 0 && next < ktiles {
                load_stage(t, ring, load, maps, (m0, n0, next));
            }
            // Past the last k-tile the producer's place is not used again.
            load.advance();
            s.advance();
        }
        me.store(&mut acc, c, (m, n), (m0, n0));
    }
}

/// The consumer's loop of rungs 2 and 3: k-tile i's wgmmas from the fragments in
/// `cur` while k-tile i + 1's are loaded into `next`; then the stage is released.
#[inline(always)]
unsafe fn consume<A: Accumulator>(
    ring: Ring,
    t: WgmmaTiling,
    ktiles: u32,
    me: Lane,
    acc: &mut A,
    s: &mut Stage,
) {
    // SAFETY: the ring of this block (the caller's launch).
    unsafe {
        let step = |i: u32, s: Stage, acc: &mut A, cur: &[[Tf32; 4]; 4], next: &mut [[Tf32; 4]; 4]| {
            // The stage's barriers (the partner's mapped) before the wgmmas, so that
            // the release follows the wait for them at once.
            let free = ring.releaser(s);
            multiply(acc, cur, ring, s);
            let s1 = s.next();
            if i + 1 < ktiles {
                ring.wait(s1);
                *next = me.fragments(ring, t.a_floats(), s1);
            }
            wgmma::wait_group::<0, A>(acc);
            // One arrival a warp.
            if me.lane == 0 {
                free.arrive();
            }
            s1
        };
        ring.wait(*s);
        let mut f0 = me.fragments(ring, t.a_floats(), *s);
        let mut f1 = f0;
        let mut i = 0;
        while i < ktiles {
            *s = step(i, *s, acc, &f0, &mut f1);
            if i + 1 < ktiles {
                *s = step(i + 1, *s, acc, &f1, &mut f0);
            }
            i += 2;
        }
    }
}

/// Where C goes from the consumers' registers.
#[derive(Clone, Copy)]
enum Out {
    /// Stored by the threads (rungs 1 to 3).
    Registers(GlobalMut<f32>),
    /// Staged in shared memory and stored by the copy engine (rung 4) with this map of
    /// C in boxes of 32 x 32.
    CopyEngine(Global<TensorMap>),
}

/// Rungs 2 to 4: warpgroup 0 copies (one thread), 1 and 2 multiply, through a ring
/// whose consumers free each stage (one arrival from each consumer warp, of every
/// block of the cluster); the block computes tiles `first`, `first + step`, ...
/// below `tiles` of `tile` (one for rungs 2 and 3).
#[inline(always)]
unsafe fn specialised<A: Accumulator>(
    (t, ring): (WgmmaTiling, Ring),
    (m, n, k): (u32, u32, u32),
    (first, step, tiles): (u32, u32, u32),
    tile: impl Fn(u32) -> (u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    out: Out,
) {
    // SAFETY: the host's launch (t.shared_bytes(), 384 threads) and maps of A and B.
    unsafe {
        let ktiles = k.div_ceil(BK as u32);
        let tid = thread_idx_x() as usize;
        if tid == 0 {
            ring.init();
        }
        ring.sync();
        if tid < 128 {
            wgmma::shrink_registers::<40>();
            if tid == 0 {
                let mut s = ring.producer_start();
                let mut i = first;
                while i < tiles {
                    let (m0, n0) = tile(i);
                    for kt in 0..ktiles {
                        load_stage(t, ring, s, maps, (m0, n0, kt));
                        s.advance();
                    }
                    i += step;
                }
            }
        } else {
            wgmma::grow_registers::<232>();
            let me = Lane::new(tid / 128 - 1, tid % 128);
            let (mut s, mut bands) = (ring.consumer_start(), 0);
            let mut i = first;
            while i < tiles {
                let at = tile(i);
                let mut acc = zeroed::<A>();
                consume(ring, t, ktiles, me, &mut acc, &mut s);
                match out {
                    Out::Registers(c) => me.store(&mut acc, c, (m, n), at),
                    Out::CopyEngine(c) => {
                        me.store_staged(&mut acc, (ring, t.staging_at()), c, at, &mut bands)
                    }
                }
                i += step;
            }
            if let Out::CopyEngine(_) = out {
                // The copy engine has read the staging buffers and written C before
                // the block's shared memory goes.
                if me.leader {
                    tma::wait_group::<0>();
                }
            }
        }
        ring.tail();
    }
}

/// Rung 2: warp specialisation. A producer warpgroup waits for each stage's `empty`
/// barrier, the consumers for its `full` barrier.
#[inline(always)]
unsafe fn warp_specialised<A: Accumulator>(
    t: WgmmaTiling,
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<f32>,
) {
    // SAFETY: the host's launch (t.shared_bytes(), 384 threads) and maps of A and B.
    unsafe {
        let ring = ring(t).with_consumers(CONSUMER_WARPS);
        let tile = |i| tile_of(i, m, n, t.bm as u32, BN as u32);
        let one = (block_idx_x(), 1, block_idx_x() + 1);
        specialised::<A>((t, ring), (m, n, k), one, tile, maps, Out::Registers(c))
    }
}

/// Rung 3: rung 2 in clusters of two blocks on the same rows of A; block `r` copies
/// rows `r BM / 2..` of A's tile into both, and a consumer frees a stage in both.
#[inline(always)]
unsafe fn clustered<A: Accumulator>(
    t: WgmmaTiling,
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<f32>,
) {
    // SAFETY: the host's launch (clusters of 2, t.shared_bytes(), 384 threads); the
    // first map is A's in boxes of BM / 2 rows.
    unsafe {
        let ring = ring(t).with_consumers(CONSUMER_WARPS).clustered(2);
        let rank = ring.cluster().1;
        let tile = |i| {
            let (m0, pair) = tile_of(i, m, n, t.bm as u32, 2 * BN as u32);
            (m0, pair + rank * BN as u32)
        };
        let one = (block_idx_x() / 2, 1, block_idx_x() / 2 + 1);
        specialised::<A>((t, ring), (m, n, k), one, tile, maps, Out::Registers(c))
    }
}

/// Rung 4: rung 2 with one block an SM, block `b` of `B` computing tiles `b`, `b + B`,
/// ..., and C staged for the copy engine.
#[inline(always)]
unsafe fn tma_store<A: Accumulator>(
    t: WgmmaTiling,
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: Global<TensorMap>,
) {
    // SAFETY: the host's launch (t.shared_bytes(), 384 threads, at most one block an
    // SM); `c` maps C in boxes of 32 x 32.
    unsafe {
        let ring = ring(t).with_consumers(CONSUMER_WARPS);
        let (bm, bn) = (t.bm as u32, BN as u32);
        let walk = (block_idx_x(), grid_dim_x(), m.div_ceil(bm) * n.div_ceil(bn));
        let tile = |i| tile_of(i, m, n, bm, bn);
        specialised::<A>((t, ring), (m, n, k), walk, tile, maps, Out::CopyEngine(c))
    }
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    /// wgmma, 256 x 128 x 32, 4 stages: TMA-fed tiles multiplied by two warpgroups
    /// (`wgmma`, B^T from registers); thread 0 also issues the copies.
    pub fn sgemm_wgmma(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<f32>) {
        // SAFETY: the host launches WGMMA's grid, block and shared memory with maps of A and B.
        unsafe { plain::<[f32; 128]>(WGMMA, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws, 256 x 128 x 32, 4 stages: a producer warpgroup copies, two consumer
    /// warpgroups multiply, `setmaxnreg` gives the consumers the producer's registers.
    pub fn sgemm_wgmma_ws(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<f32>) {
        // SAFETY: as above, WGMMA_WS's launch.
        unsafe { warp_specialised::<[f32; 128]>(WGMMA_WS, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws-192, 192 x 128 x 32, 5 stages: the same with narrower tiles.
    pub fn sgemm_wgmma_ws_192(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<f32>) {
        // SAFETY: as above, WGMMA_WS_192's launch.
        unsafe { warp_specialised::<[f32; 96]>(WGMMA_WS_192, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws-64, 64 x 128 x 32, 8 stages: the same with small tiles, for small products.
    pub fn sgemm_wgmma_ws_64(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<f32>) {
        // SAFETY: as above, WGMMA_WS_64's launch.
        unsafe { warp_specialised::<[f32; 32]>(WGMMA_WS_64, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws-128, 128 x 128 x 32, 6 stages: the same with 128-row tiles.
    pub fn sgemm_wgmma_ws_128(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<f32>) {
        // SAFETY: as above, WGMMA_WS_128's launch.
        unsafe { warp_specialised::<[f32; 64]>(WGMMA_WS_128, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// wgmma-cluster, 256 x 128 x 32, 4 stages, clusters of 2: each block copies half of
    /// A's tile to both (multicast).
    pub fn sgemm_wgmma_cluster(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<f32>) {
        // SAFETY: as above, in clusters of two, `a` mapping A in boxes of 128 rows.
        unsafe { clustered::<[f32; 128]>(WGMMA_CLUSTER, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-tma-store, 256 x 128 x 32, 4 stages: wgmma-ws with one block an SM walking
    /// the tiles, C staged in shared memory and stored by the copy engine.
    pub fn sgemm_wgmma_tma_store(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: as above, WGMMA_TMA_STORE's launch, `c` mapping C in boxes of 32 x 32.
        unsafe { tma_store::<[f32; 128]>(WGMMA_TMA_STORE, (m, n, k), (a, b), c) }
    }
}
