//! The 16-bit rungs on Hopper (sm_90a): C = A B with A, B and C row-major in one
//! 16-bit type `H` ([`Bf16`] or [`F16`]), products accumulated in f32 by warpgroup
//! MMAs that read both operands from shared memory, fed by the copy engine through
//! the ring of stages ([`crate::gpu::ring`]).
//!
//! In 16 bits the tensor cores read a shared tile either way round, so nothing goes
//! through registers: A (m x k) lands K-major, one box of BM rows of 64 k (128 bytes,
//! swizzled); B (k x n) lands MN-major, four boxes of 64 k rows of 64 n, which the
//! instruction transposes as it reads ([`wgmma::mma_16bit_ss`]). A consumer warpgroup
//! owns 64 rows of C by the block's 256 columns (`m64n256k16`, 128 f32 accumulators a
//! thread); two of them a block, a 128 x 256 tile, four k steps of 16 a stage.
//!
//! Any m (the copy engine zero-fills rows past m and the stores are guarded); k and n
//! multiples of 8, as the copy engine reads rows that start on 16-byte boundaries (the
//! host refuses other shapes in one line).
//!
//! The rungs, one lesson each, each a configuration of the ring:
//! 1. [`plain`]: every warpgroup multiplies; one thread also issues the copies,
//!    `STAGES - 1` k-tiles ahead, into the stage a block barrier has just freed.
//! 2. [`warp_specialised`]: a producer warpgroup copies, two consumers multiply; each
//!    consumer keeps one group of MMAs in flight and frees a stage when the group after
//!    it has been issued; `setmaxnreg` moves registers to the consumers.
//! 3. [`clustered`]: clusters of two blocks on the same columns of B (adjacent row
//!    tiles of C): each copies half of B's tile into both (multicast), halving B's reads
//!    from L2.
//! 4. [`persistent`]: one cluster per pair of SMs, each walking its share of the
//!    tiles in the same L2-friendly order, the ring running on from tile to tile, so
//!    the next tile's copies start while this one's results are stored.
//! 5. [`tma_store`]: the consumers hand C to the copy engine: each warp writes its 16
//!    rows into a swizzled staging tile in shared memory, half a row band at a time,
//!    and one lane issues the stores (`cp.async.bulk.tensor`, clipped at C's edges),
//!    so the warp is back at the tensor cores while the copy engine writes C.

use crate::gpu::ring::{Release, Ring, Stage};
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{block_idx_x, grid_dim_x, sync_threads, sync_warp, thread_idx_x};
use crate::gpu::tma::{self, TensorMap, load_2d, load_2d_multicast};
use crate::gpu::wgmma::{self, Accumulator, Descriptor};
use crate::gpu::{Bf16, F16, Global, GlobalMut, Half};
use crate::sgemm::wgmma::tile_of;

/// m per block: two consumer warpgroups of 64 rows.
pub const BM: usize = 128;
/// n per block: the wgmma's N.
pub const BN: usize = 256;
/// k per stage: one 128-byte row of 16-bit elements.
pub const BK: usize = 64;
/// n of one of B's boxes: one 128-byte row of 16-bit elements.
pub const B_BOX: usize = 64;
/// Elements of A's tile in a stage, then of B's four boxes.
const A_LEN: usize = BM * BK;
const B_LEN: usize = BK * BN;
/// Bytes from one of B's boxes to the next: the MN-major tile's 64-wide atoms.
const B_ATOM_BYTES: u32 = (BK * B_BOX * 2) as u32;
/// Warps of the two consumer warpgroups: each frees a stage.
const CONSUMER_WARPS: u32 = 8;
/// A consumer's accumulators: `m64n256`.
type Acc = [f32; 128];

/// Rows of C a consumer warp stages at a time, and their columns: a band of the
/// warp's 16 rows, half the tile's width, two 64 x 16 boxes of the copy engine.
pub const STAGED_ROWS: usize = 16;
pub const STAGED_COLS: usize = BN / 2;
/// Elements of one of the staged boxes.
const STAGED_BOX: usize = B_BOX * STAGED_ROWS;

/// A 16-bit tuning: shared stages and warpgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HalfTiling {
    pub stages: usize,
    /// Warpgroups a block: two consumers, plus one producer when warp-specialised.
    pub warpgroups: usize,
    /// Elements after the stages where the consumer warps stage C for the copy engine
    /// (0: they store C from registers).
    pub staging: usize,
}

impl HalfTiling {
    /// Elements of one stage.
    pub const fn stage_len(&self) -> usize {
        A_LEN + B_LEN
    }
    /// Where the staging tiles start, then the barriers, in elements.
    pub const fn staging_at(&self) -> usize {
        self.stages * self.stage_len()
    }
    /// Dynamic shared memory: the stages, the staging tiles and two barriers a stage,
    /// with room to start the stages on a 1024-byte boundary (the swizzle's).
    pub const fn shared_bytes(&self) -> usize {
        (self.staging_at() + self.staging) * 2 + self.stages * 16 + 1024
    }
    pub const fn threads(&self) -> usize {
        128 * self.warpgroups
    }
}

/// `wgmma`: 4 stages of 48 KiB, two warpgroups that multiply.
pub const PLAIN: HalfTiling = HalfTiling {
    stages: 4,
    warpgroups: 2,
    staging: 0,
};
/// `wgmma-ws`, `wgmma-cluster`, `persistent`: a producer warpgroup and two consumers.
pub const SPECIALISED: HalfTiling = HalfTiling {
    stages: 4,
    warpgroups: 3,
    staging: 0,
};
/// `tma-store`: the same, and 4 KiB of staging for each of the 8 consumer warps (227
/// KiB in all, the most a block may have).
pub const STAGED: HalfTiling = HalfTiling {
    staging: CONSUMER_WARPS as usize * STAGED_ROWS * STAGED_COLS,
    ..SPECIALISED
};

/// The ring of a tiling: its stages from the dynamic segment's first 1024-byte
/// boundary, then their barriers.
#[inline(always)]
unsafe fn ring<H: Half>(t: HalfTiling) -> Ring<H> {
    // SAFETY: the host launches with t.shared_bytes() of dynamic shared memory.
    let tiles = unsafe { dynamic_shared_array::<H>(t.shared_bytes() / 2).aligned(1024) };
    Ring::new(tiles, t.stages, t.stage_len()).with_barriers_at(t.staging_at() + t.staging)
}

/// Issues the copies of k-tile `i` of the tile at (`m0`, `n0`) into the producer's
/// stage `s` once it is free (one thread): A's box, B's four, all completing on the
/// stage's `full` barrier. In a cluster, this block copies its half of B's boxes into
/// every block.
#[inline(always)]
unsafe fn load_stage<H: Half>(
    ring: Ring<H>,
    s: Stage,
    (a, b): (Global<TensorMap>, Global<TensorMap>),
    (m0, n0, i): (u32, u32, u32),
) {
    let (tiles, stage, k) = (ring.tiles(), ring.stage(s), (i * BK as u32) as i32);
    let box_at = |j: usize| ((n0 as usize + B_BOX * j) as i32, stage + A_LEN + BK * B_BOX * j);
    // SAFETY: the producer's ring; the stage's copies bring its bytes in all.
    unsafe {
        let full = ring.acquire(s);
        load_2d(a, [k, m0 as i32], tiles, stage, full);
        match ring.cluster() {
            (1, _) => {
                for j in 0..BN / B_BOX {
                    let (col, at) = box_at(j);
                    load_2d(b, [col, k], tiles, at, full);
                }
            }
            (blocks, rank) => {
                let per = BN / B_BOX / blocks as usize;
                for j in rank as usize * per..(rank as usize + 1) * per {
                    let (col, at) = box_at(j);
                    load_2d_multicast(b, [col, k], tiles, at, full, ring.multicast_mask());
                }
            }
        }
    }
}

/// One k-tile's MMAs from stage `s` for consumer warpgroup `c`: four `m64n256k16`, one
/// group.
#[inline(always)]
unsafe fn multiply<H: Half>(acc: &mut Acc, ring: Ring<H>, s: Stage, c: usize) {
    let (tiles, stage) = (ring.tiles(), ring.stage(s));
    // SAFETY: the stage has landed; the group is waited for before the stage is freed.
    unsafe {
        wgmma::fence();
        for kk in 0..BK / 16 {
            let a = Descriptor::k_major_128b(tiles, stage + 64 * BK * c + 16 * kk);
            let b = Descriptor::mn_major_128b(tiles, stage + A_LEN + 16 * B_BOX * kk, B_ATOM_BYTES);
            wgmma::mma_16bit_ss::<H, Acc>(acc, a, b);
        }
        wgmma::commit_group();
    }
}

/// Stores consumer warpgroup `c`'s accumulators, thread `tid` of it, to the tile at
/// (`m0`, `n0`): `acc[4 j + 2 h + e]` is C[64 c + 16 w + g + 8 h][8 j + 2 t + e], two
/// neighbours packed into one 4-byte store (n is even, so they share a row).
#[inline(always)]
unsafe fn store<H: Half>(
    acc: &Acc,
    c: GlobalMut<H>,
    (m, n): (u32, u32),
    (m0, n0): (u32, u32),
    wg: usize,
    tid: usize,
) {
    let (w, lane) = (tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    // SAFETY: C is m x n of H, n even, so each pair is one aligned 4-byte word.
    let pairs = unsafe { c.cast::<u32>() };
    let row0 = m0 as usize + 64 * wg + 16 * w + g;
    unroll!(j < 32; 32 => {
        for h in 0..2 {
            let (row, col) = (row0 + 8 * h, n0 as usize + 8 * j + 2 * t);
            if row < m as usize && col < n as usize {
                let word = H::pack2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                // SAFETY: in bounds (guarded); (row n + col) is even.
                unsafe { pairs.write((row * n as usize + col) / 2, word) };
            }
        }
    });
}

/// Where C goes from the consumers' registers.
#[derive(Clone, Copy)]
enum Out<H> {
    /// Stored by the threads (rungs 1 to 4).
    Registers(GlobalMut<H>),
    /// Staged in shared memory and stored by the copy engine (rung 5) with this map of
    /// C in boxes of 16 rows of 64.
    CopyEngine(Global<TensorMap>),
}

/// Rung 5's epilogue for thread `tid` of consumer warpgroup `wg`: its warp's 16 rows
/// of the tile, in two bands of 128 columns, each written into the warp's staging
/// tile (two 64 x 16 boxes, swizzled by 128 bytes so a store of the warp's 32 lanes
/// hits 32 banks) and handed to the copy engine by lane 0. The warp waits only until
/// the copy engine has read the band before it writes the next one.
#[inline(always)]
unsafe fn store_staged<H: Half>(
    acc: &Acc,
    ring: Ring<H>,
    t: HalfTiling,
    c: Global<TensorMap>,
    (m0, n0): (u32, u32),
    wg: usize,
    tid: usize,
) {
    let (w, lane) = (tid / 32, tid % 32);
    let (g, tt) = (lane / 4, lane % 4);
    let at = t.staging_at() + (4 * wg + w) * STAGED_ROWS * STAGED_COLS;
    let (tiles, row) = (ring.tiles(), m0 as usize + 64 * wg + STAGED_ROWS * w);
    let words = tiles.offset(at).cast::<u32>();
    for band in 0..2 {
        // SAFETY: the warp's own staging tile; lane 0's stores of the last band have
        // read it once its wait returns.
        unsafe {
            if lane == 0 {
                tma::wait_group_read::<0>();
            }
            sync_warp();
            unroll!(jj < 16; 32 => {
                let j = 16 * band + jj;
                for h in 0..2 {
                    // Row g + 8 h of the band, 16-byte chunk jj % 8 of box jj / 8,
                    // swizzled by the row (g).
                    let word = (jj / 8) * STAGED_BOX / 2 + (g + 8 * h) * 32 + (((jj % 8) ^ g) * 4) + tt;
                    words.write(word, H::pack2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
                }
            });
            tma::fence_proxy_async();
            sync_warp();
            if lane == 0 {
                for bx in 0..2 {
                    let col = n0 as usize + STAGED_COLS * band + B_BOX * bx;
                    tma::store_2d(c, [col as i32, row as i32], tiles, at + STAGED_BOX * bx);
                }
                tma::commit_group();
            }
        }
    }
}

/// Rung 1: every warpgroup multiplies; thread 0 also copies, `stages - 1` k-tiles
/// ahead, into the stage a block barrier has just freed (a ring without `empty`
/// barriers).
#[inline(always)]
unsafe fn plain<H: Half>(
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    let t = PLAIN;
    // SAFETY: the host's launch (PLAIN's shared memory and threads) and maps of A and B.
    unsafe {
        let ring = ring::<H>(t);
        let (m0, n0) = tile_of(block_idx_x(), m, n, BM as u32, BN as u32);
        let ktiles = k.div_ceil(BK as u32);
        let tid = thread_idx_x() as usize;
        if tid == 0 {
            ring.init();
        }
        ring.sync();
        let mut load = ring.producer_start();
        for i in 0..(t.stages as u32 - 1).min(ktiles) {
            if tid == 0 {
                load_stage(ring, load, maps, (m0, n0, i));
            }
            load.advance();
        }
        let mut acc = Acc::zeroed();
        let mut s = ring.consumer_start();
        for i in 0..ktiles {
            ring.wait(s);
            multiply(&mut acc, ring, s, tid / 128);
            wgmma::wait_group::<0, Acc>(&mut acc);
            // Every warpgroup is done with k-tile i - 1's stage: refill it.
            sync_threads();
            let next = i + t.stages as u32 - 1;
            if tid == 0 && next < ktiles {
                load_stage(ring, load, maps, (m0, n0, next));
            }
            load.advance();
            s.advance();
        }
        store(&acc, c, (m, n), (m0, n0), tid / 128, tid % 128);
    }
}

/// A consumer's k loop of rungs 2 to 4, from its place `s` in the ring: each k-tile's
/// group is issued before the one before it is waited for, and that one's stage is
/// then freed (one arrival a warp, in every block of the cluster).
#[inline(always)]
unsafe fn consume<H: Half>(
    ring: Ring<H>,
    ktiles: u32,
    (wg, lane): (usize, usize),
    acc: &mut Acc,
    s: &mut Stage,
) {
    let free = |r: Release<H>| {
        if lane == 0 {
            // SAFETY: this warp's reads of the stage completed (the wait before).
            unsafe { r.arrive() };
        }
    };
    // SAFETY: the ring of this block (the caller's launch).
    unsafe {
        let mut pending: Option<Release<H>> = None;
        for _ in 0..ktiles {
            ring.wait(*s);
            multiply(acc, ring, *s, wg);
            wgmma::wait_group::<1, Acc>(acc);
            if let Some(r) = pending {
                free(r);
            }
            pending = Some(ring.releaser(*s));
            s.advance();
        }
        wgmma::wait_group::<0, Acc>(acc);
        if let Some(r) = pending {
            free(r);
        }
    }
}

/// The tile (`m0`, `n0`) of tile index `i` for this block: in a cluster, the pair of
/// row tiles on the same columns, this block's by its rank.
#[inline(always)]
fn tile<H: Half>(ring: Ring<H>, i: u32, (m, n): (u32, u32)) -> (u32, u32) {
    let (blocks, rank) = ring.cluster();
    let (m0, n0) = tile_of(i, m, n, blocks * BM as u32, BN as u32);
    (m0 + rank * BM as u32, n0)
}

/// Rungs 2 to 4: warpgroup 0 copies (one thread), 1 and 2 multiply, through a ring
/// whose consumers free each stage; the block computes tiles `first`, `first + step`,
/// ... below `tiles` (one tile for rungs 2 and 3).
#[inline(always)]
unsafe fn specialised<H: Half>(
    (t, ring): (HalfTiling, Ring<H>),
    (m, n, k): (u32, u32, u32),
    (first, step, tiles): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    out: Out<H>,
) {
    // SAFETY: the host's launch (SPECIALISED's shared memory and threads) and maps.
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
                    let (m0, n0) = tile(ring, i, (m, n));
                    for kt in 0..ktiles {
                        load_stage(ring, s, maps, (m0, n0, kt));
                        s.advance();
                    }
                    i += step;
                }
            }
        } else {
            wgmma::grow_registers::<232>();
            let (wg, me) = (tid / 128 - 1, tid % 128);
            let mut s = ring.consumer_start();
            let mut i = first;
            while i < tiles {
                let at = tile(ring, i, (m, n));
                let mut acc = Acc::zeroed();
                consume(ring, ktiles, (wg, me % 32), &mut acc, &mut s);
                match out {
                    Out::Registers(c) => store(&acc, c, (m, n), at, wg, me),
                    Out::CopyEngine(c) => store_staged(&acc, ring, t, c, at, wg, me),
                }
                i += step;
            }
            if let Out::CopyEngine(_) = out {
                // The copy engine has read the staging tiles and written C before
                // the block's shared memory goes.
                if me % 32 == 0 {
                    tma::wait_group::<0>();
                }
            }
        }
        ring.tail();
    }
}

/// Rung 2: warp specialisation, one tile a block.
#[inline(always)]
unsafe fn warp_specialised<H: Half>(
    mnk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    // SAFETY: the host's launch and maps.
    unsafe {
        let ring = ring::<H>(SPECIALISED).with_consumers(CONSUMER_WARPS);
        let one = (block_idx_x(), 1, block_idx_x() + 1);
        specialised((SPECIALISED, ring), mnk, one, maps, Out::Registers(c))
    }
}

/// Rung 3: rung 2 in clusters of two blocks on the same columns of B, each copying
/// half of B's boxes into both; a consumer frees a stage in both.
#[inline(always)]
unsafe fn clustered<H: Half>(
    mnk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    // SAFETY: the host's launch, in clusters of two.
    unsafe {
        let ring = ring::<H>(SPECIALISED).with_consumers(CONSUMER_WARPS).clustered(2);
        let pair = block_idx_x() / 2;
        specialised(
            (SPECIALISED, ring),
            mnk,
            (pair, 1, pair + 1),
            maps,
            Out::Registers(c),
        )
    }
}

/// Rung 4: rung 3 with one cluster per pair of SMs, each computing pair tiles
/// `cluster, cluster + clusters, ...`.
#[inline(always)]
unsafe fn persistent<H: Half>(
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    // SAFETY: the host's launch, in clusters of two, at most one block an SM.
    unsafe {
        let ring = ring::<H>(SPECIALISED).with_consumers(CONSUMER_WARPS).clustered(2);
        let pairs = m.div_ceil(2 * BM as u32) * n.div_ceil(BN as u32);
        let walk = (block_idx_x() / 2, grid_dim_x() / 2, pairs);
        specialised((SPECIALISED, ring), (m, n, k), walk, maps, Out::Registers(c))
    }
}

/// Rung 5: rung 4 with C staged in shared memory and stored by the copy engine.
#[inline(always)]
unsafe fn tma_store<H: Half>(
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: Global<TensorMap>,
) {
    // SAFETY: the host's launch (STAGED's shared memory), in clusters of two, at most
    // one block an SM; `c` maps C in boxes of 16 x 64.
    unsafe {
        let ring = ring::<H>(STAGED).with_consumers(CONSUMER_WARPS).clustered(2);
        let pairs = m.div_ceil(2 * BM as u32) * n.div_ceil(BN as u32);
        let walk = (block_idx_x() / 2, grid_dim_x() / 2, pairs);
        specialised((STAGED, ring), (m, n, k), walk, maps, Out::CopyEngine(c))
    }
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    /// wgmma, 128 x 256 x 64, 4 stages: TMA-fed tiles multiplied from shared memory by two
    /// warpgroups; thread 0 also issues the copies. Bf16.
    pub fn hgemm_wgmma_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { plain::<Bf16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    /// wgmma, 128 x 256 x 64, 4 stages: TMA-fed tiles multiplied from shared memory by two
    /// warpgroups; thread 0 also issues the copies. F16.
    pub fn hgemm_wgmma_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { plain::<F16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws: a producer warpgroup copies, two consumer warpgroups multiply, each
    /// keeping one group of MMAs in flight. Bf16.
    pub fn hgemm_wgmma_ws_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { warp_specialised::<Bf16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws: a producer warpgroup copies, two consumer warpgroups multiply, each
    /// keeping one group of MMAs in flight. F16.
    pub fn hgemm_wgmma_ws_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { warp_specialised::<F16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// wgmma-cluster: wgmma-ws in clusters of two blocks sharing B's tile (multicast). Bf16.
    pub fn hgemm_wgmma_cluster_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { clustered::<Bf16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// wgmma-cluster: wgmma-ws in clusters of two blocks sharing B's tile (multicast). F16.
    pub fn hgemm_wgmma_cluster_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { clustered::<F16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// persistent: wgmma-cluster with one cluster per two SMs, walking the tiles. Bf16.
    pub fn hgemm_persistent_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { persistent::<Bf16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// persistent: wgmma-cluster with one cluster per two SMs, walking the tiles. F16.
    pub fn hgemm_persistent_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { persistent::<F16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// tma-store: persistent, with C staged in shared memory and stored by the copy
    /// engine. Bf16.
    pub fn hgemm_tma_store_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<Bf16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// tma-store: persistent, with C staged in shared memory and stored by the copy
    /// engine. F16.
    pub fn hgemm_tma_store_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<F16>((m, n, k), (a, b), c) }
    }
}
