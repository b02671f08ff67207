//! The 16-bit rungs on Hopper (sm_90a): C = A B with A, B and C row-major in one
//! 16-bit type `H` ([`Bf16`] or [`F16`]), products accumulated in f32 by warpgroup
//! MMAs that read both operands from shared memory, fed by the copy engine through
//! the ring of stages ([`crate::gpu::ring`]).
//!
//! In 16 bits the tensor cores read a shared tile either way round, so nothing goes
//! through registers: A (m x k) lands K-major, one box of the tile's rows of 64 k (128 bytes,
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
//! 4. [`persistent`]: rung 2 with one block an SM, each walking its share of the
//!    tiles in the same L2-friendly order, the ring running on from tile to tile, so
//!    the next tile's copies start while this one's results are stored. Without rung
//!    3's clusters: walking tiles, a pair's blocks wait on each other at every stage.
//! 5. [`tma_store`]: the consumers hand C to the copy engine: each warp writes its 16
//!    rows into a swizzled staging tile in shared memory, half a row band at a time,
//!    and one lane issues the stores (`cp.async.bulk.tensor`, clipped at C's edges),
//!    so the warp is back at the tensor cores while the copy engine writes C.
//! 6. `small`: rung 5 with 64 x 128 tiles and one consumer warpgroup: four times as
//!    many tiles, so a small product still gives every SM one (in rung 3's clusters).
//! 7. [`super::stream_k`]: rung 5 in rung 3's clusters, dealing out k-blocks instead
//!    of whole tiles, so the last round of tiles leaves no SM idle.
//! 8. `tma-store-192`: rung 5 with 192 x 128 tiles and three consumer warpgroups, a
//!    tile count that fills the last round at shapes that are multiples of 384.
//! 9. `tma-store-128`: rung 5 with 128 x 128 tiles and 6 stages, one round of tiles
//!    at shapes (1280³) where 128 x 256 leaves half the SMs idle and 64 x 128 takes
//!    two rounds.
//! 10. [`super::overlap`]: rung 5 with each consumer's accumulators in two halves, each
//!     stored while the tensor cores run the other's MMAs.

use super::epilogue::{Out, store, store_staged};
use super::tiling::{
    B_ATOM_BYTES, B_BOX, BK, HalfTiling, PLAIN, SMALL, SPECIALISED, STAGED, STAGED_128, STAGED_192,
};
use crate::gpu::ring::{Release, Ring, Stage};
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{block_idx_x, grid_dim_x, sync_threads, thread_idx_x};
use crate::gpu::tma::{self, TensorMap, load_2d, load_2d_multicast};
use crate::gpu::wgmma::{self, Accumulator, Descriptor};
use crate::gpu::{Bf16, F16, Global, GlobalMut, Half};
use crate::sgemm::wgmma::tile_of;

/// The ring of a tiling: its stages from the dynamic segment's first 1024-byte
/// boundary, then their barriers.
#[inline(always)]
pub(super) unsafe fn ring<H: Half>(t: HalfTiling) -> Ring<H> {
    // SAFETY: the host launches with t.shared_bytes() of dynamic shared memory.
    let tiles = unsafe { dynamic_shared_array::<H>(t.shared_bytes() / 2).aligned(1024) };
    Ring::new(tiles, t.stages, t.stage_len()).with_barriers_at(t.staging_at() + t.staging())
}

/// Issues the copies of k-tile `i` of the tile at (`m0`, `n0`) into the producer's
/// stage `s` once it is free (one thread): A's box, B's four, all completing on the
/// stage's `full` barrier. In a cluster, this block copies its half of B's boxes into
/// every block.
#[inline(always)]
pub(super) unsafe fn load_stage<H: Half>(
    t: HalfTiling,
    ring: Ring<H>,
    s: Stage,
    (a, b): (Global<TensorMap>, Global<TensorMap>),
    (m0, n0, i): (u32, u32, u32),
) {
    let (tiles, stage, k) = (ring.tiles(), ring.stage(s), (i * BK as u32) as i32);
    let box_at = |j: usize| {
        (
            (n0 as usize + B_BOX * j) as i32,
            stage + t.a_len() + BK * B_BOX * j,
        )
    };
    // SAFETY: the producer's ring; the stage's copies bring its bytes in all.
    unsafe {
        let full = ring.acquire(s);
        load_2d(a, [k, m0 as i32], tiles, stage, full);
        match ring.cluster() {
            (1, _) => {
                for j in 0..t.bn / B_BOX {
                    let (col, at) = box_at(j);
                    load_2d(b, [col, k], tiles, at, full);
                }
            }
            (blocks, rank) => {
                let per = t.bn / B_BOX / blocks as usize;
                for j in rank as usize * per..(rank as usize + 1) * per {
                    let (col, at) = box_at(j);
                    load_2d_multicast(b, [col, k], tiles, at, full, ring.multicast_mask());
                }
            }
        }
    }
}

/// One k-tile's MMAs from stage `s` for consumer warpgroup `c`: four `m64nNk16` (N the
/// tile's width), one group.
#[inline(always)]
unsafe fn multiply<H: Half, A: Accumulator>(acc: &mut A, t: HalfTiling, ring: Ring<H>, s: Stage, c: usize) {
    let (tiles, stage) = (ring.tiles(), ring.stage(s));
    // SAFETY: the stage has landed; the group is waited for before the stage is freed.
    unsafe {
        wgmma::fence();
        for kk in 0..BK / 16 {
            let a = Descriptor::k_major_128b(tiles, stage + 64 * BK * c + 16 * kk);
            let b = Descriptor::mn_major_128b(tiles, stage + t.a_len() + 16 * B_BOX * kk, B_ATOM_BYTES);
            wgmma::mma_16bit_ss::<H, A>(acc, a, b);
        }
        wgmma::commit_group();
    }
}

/// Rung 1: every warpgroup multiplies; thread 0 also copies, `stages - 1` k-tiles
/// ahead, into the stage a block barrier has just freed (a ring without `empty`
/// barriers).
#[inline(always)]
unsafe fn plain<H: Half, A: Accumulator>(
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    let t = PLAIN;
    // SAFETY: the host's launch (PLAIN's shared memory and threads) and maps of A and B.
    unsafe {
        let ring = ring::<H>(t);
        let (m0, n0) = tile_of(block_idx_x(), m, n, t.bm() as u32, t.bn as u32);
        let ktiles = k.div_ceil(BK as u32);
        let tid = thread_idx_x() as usize;
        if tid == 0 {
            ring.init();
        }
        ring.sync();
        let mut load = ring.producer_start();
        for i in 0..(t.stages as u32 - 1).min(ktiles) {
            if tid == 0 {
                load_stage(t, ring, load, maps, (m0, n0, i));
            }
            load.advance();
        }
        let mut acc = A::zeroed();
        let mut s = ring.consumer_start();
        for i in 0..ktiles {
            ring.wait(s);
            multiply(&mut acc, t, ring, s, tid / 128);
            wgmma::wait_group::<0, A>(&mut acc);
            // Every warpgroup is done with k-tile i - 1's stage: refill it.
            sync_threads();
            let next = i + t.stages as u32 - 1;
            if tid == 0 && next < ktiles {
                load_stage(t, ring, load, maps, (m0, n0, next));
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
pub(super) unsafe fn consume<H: Half, A: Accumulator>(
    (t, ring): (HalfTiling, Ring<H>),
    ktiles: u32,
    (wg, lane): (usize, usize),
    acc: &mut A,
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
            multiply(acc, t, ring, *s, wg);
            wgmma::wait_group::<1, A>(acc);
            if let Some(r) = pending {
                free(r);
            }
            pending = Some(ring.releaser(*s));
            s.advance();
        }
        wgmma::wait_group::<0, A>(acc);
        if let Some(r) = pending {
            free(r);
        }
    }
}

/// The tile (`m0`, `n0`) of tile index `i` for this block: in a cluster, the pair of
/// row tiles on the same columns, this block's by its rank.
#[inline(always)]
pub(super) fn tile<H: Half>(t: HalfTiling, ring: Ring<H>, i: u32, (m, n): (u32, u32)) -> (u32, u32) {
    let (blocks, rank, bm) = (ring.cluster().0, ring.cluster().1, t.bm() as u32);
    let (m0, n0) = tile_of(i, m, n, blocks * bm, t.bn as u32);
    (m0 + rank * bm, n0)
}

/// Rungs 2 to 4: warpgroup 0 copies (one thread), 1 and 2 multiply, through a ring
/// whose consumers free each stage; the block computes tiles `first`, `first + step`,
/// ... below `tiles` (one tile for rungs 2 and 3).
#[inline(always)]
unsafe fn specialised<H: Half, A: Accumulator>(
    (t, ring): (HalfTiling, Ring<H>),
    (m, n, k): (u32, u32, u32),
    walk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    out: Out<H>,
) {
    let ktiles = k.div_ceil(BK as u32);
    let c = match out {
        Out::CopyEngine(c) => Some(c),
        Out::Registers(_) => None,
    };
    // SAFETY: the host's launch (t's shared memory and threads) and maps.
    unsafe {
        split_warpgroups(
            (t, ring),
            (m, n, ktiles),
            walk,
            maps,
            c,
            #[inline(always)]
            |wg, me| {
                let (first, step, tiles) = walk;
                let mut s = ring.consumer_start();
                let mut i = first;
                while i < tiles {
                    let at = tile(t, ring, i, (m, n));
                    let mut acc = A::zeroed();
                    consume((t, ring), ktiles, (wg, me % 32), &mut acc, &mut s);
                    match out {
                        Out::Registers(c) => store(&acc, c, (m, n), at, wg, me),
                        Out::CopyEngine(c) => store_staged(&acc, ring, t, c, at, wg, me),
                    }
                    i += step;
                }
            },
        )
    }
}

/// A warp-specialised block: thread 0 prefetches the tensor maps (`c`, C's, where the
/// copy engine stores it) and sets up the ring; warpgroup 0 copies the walk's tiles
/// (one thread); each consumer thread runs `consume` with its warpgroup among the
/// consumers and its place in it, the registers rebalanced, and where the copy engine
/// stores C, waits until it has (lane 0 of each warp, whose stores they are).
#[inline(always)]
pub(super) unsafe fn split_warpgroups<H: Half>(
    (t, ring): (HalfTiling, Ring<H>),
    (m, n, ktiles): (u32, u32, u32),
    (first, step, tiles): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: Option<Global<TensorMap>>,
    consume: impl FnOnce(usize, usize),
) {
    // SAFETY: the caller's launch (t's shared memory and threads) and maps.
    unsafe {
        let tid = thread_idx_x() as usize;
        if tid == 0 {
            tma::prefetch(maps.0);
            tma::prefetch(maps.1);
            if let Some(c) = c {
                tma::prefetch(c);
            }
            ring.init();
        }
        ring.sync();
        // Two consumers of m64n256 need more than a third of the registers each:
        // the producer gives its share back.
        let rebalance = t.consumers == 2;
        if tid < 128 {
            if rebalance {
                wgmma::shrink_registers::<40>();
            }
            if tid == 0 {
                let mut s = ring.producer_start();
                let mut i = first;
                while i < tiles {
                    let (m0, n0) = tile(t, ring, i, (m, n));
                    for kt in 0..ktiles {
                        load_stage(t, ring, s, maps, (m0, n0, kt));
                        s.advance();
                    }
                    i += step;
                }
            }
        } else {
            if rebalance {
                wgmma::grow_registers::<232>();
            }
            let (wg, me) = (tid / 128 - 1, tid % 128);
            consume(wg, me);
            // The copy engine has read the staging tiles and written C before the
            // block's shared memory goes.
            if c.is_some() && me % 32 == 0 {
                tma::wait_group::<0>();
            }
        }
        ring.tail();
    }
}

/// Rung 2: warp specialisation, one tile a block.
#[inline(always)]
unsafe fn warp_specialised<H: Half, A: Accumulator>(
    mnk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    // SAFETY: the host's launch and maps.
    unsafe {
        let t = SPECIALISED;
        let ring = ring::<H>(t).with_consumers(t.consumer_warps());
        let one = (block_idx_x(), 1, block_idx_x() + 1);
        specialised::<H, A>((t, ring), mnk, one, maps, Out::Registers(c))
    }
}

/// Rung 3: rung 2 in clusters of two blocks on the same columns of B, each copying
/// half of B's boxes into both; a consumer frees a stage in both.
#[inline(always)]
unsafe fn clustered<H: Half, A: Accumulator>(
    mnk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    // SAFETY: the host's launch, in clusters of two.
    unsafe {
        let t = SPECIALISED;
        let ring = ring::<H>(t).with_consumers(t.consumer_warps()).clustered(2);
        let pair = block_idx_x() / 2;
        specialised::<H, A>((t, ring), mnk, (pair, 1, pair + 1), maps, Out::Registers(c))
    }
}

/// Rung 4: rung 2 with one block an SM, each computing tiles `block, block + blocks,
/// ...`. Not rung 3's clusters: a pair waits on its slower block at every stage (a stage
/// is full when both halves of B land, free when both blocks are done with it), and once
/// the blocks walk tiles that wait costs more than B's second read from L2.
#[inline(always)]
unsafe fn persistent<H: Half, A: Accumulator>(
    mnk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<H>,
) {
    // SAFETY: the host's launch, at most one block an SM.
    unsafe {
        let t = SPECIALISED;
        let ring = walking_ring::<H>(t);
        specialised::<H, A>((t, ring), mnk, walk(t, mnk), maps, Out::Registers(c))
    }
}

/// Rung 5: rung 4 with C staged in shared memory and stored by the copy engine (with
/// `t` = STAGED; rungs 6, 8 and 9 with their tiles, `small` in clusters).
#[inline(always)]
unsafe fn tma_store<H: Half, A: Accumulator>(
    t: HalfTiling,
    mnk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: Global<TensorMap>,
) {
    // SAFETY: the host's launch (t's shared memory and clusters), at most one block an
    // SM; `c` maps C in boxes of 16 x 64.
    unsafe {
        let ring = walking_ring::<H>(t);
        specialised::<H, A>((t, ring), mnk, walk(t, mnk), maps, Out::CopyEngine(c))
    }
}

/// The ring of a rung that walks tiles: its consumers free the stages, in the
/// tiling's clusters.
#[inline(always)]
pub(super) unsafe fn walking_ring<H: Half>(t: HalfTiling) -> Ring<H> {
    // SAFETY: the caller's launch has t's shared memory and clusters.
    let ring = unsafe { ring::<H>(t) }.with_consumers(t.consumer_warps());
    if t.cluster > 1 {
        ring.clustered(t.cluster as u32)
    } else {
        ring
    }
}

/// This block's walk through C's tiles: its cluster's first tile, the clusters, and
/// the tiles (a cluster's row tiles on the same columns count as one).
#[inline(always)]
pub(super) fn walk(t: HalfTiling, (m, n, _): (u32, u32, u32)) -> (u32, u32, u32) {
    let c = t.cluster as u32;
    (
        block_idx_x() / c,
        grid_dim_x() / c,
        t.cluster_tiles(m.into(), n.into()) as u32,
    )
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    /// wgmma, 128 x 256 x 64, 4 stages: TMA-fed tiles multiplied from shared memory by two
    /// warpgroups; thread 0 also issues the copies. Bf16.
    pub fn hgemm_wgmma_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { plain::<Bf16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    /// wgmma, 128 x 256 x 64, 4 stages: TMA-fed tiles multiplied from shared memory by two
    /// warpgroups; thread 0 also issues the copies. F16.
    pub fn hgemm_wgmma_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { plain::<F16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws: a producer warpgroup copies, two consumer warpgroups multiply, each
    /// keeping one group of MMAs in flight. Bf16.
    pub fn hgemm_wgmma_ws_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { warp_specialised::<Bf16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// wgmma-ws: a producer warpgroup copies, two consumer warpgroups multiply, each
    /// keeping one group of MMAs in flight. F16.
    pub fn hgemm_wgmma_ws_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { warp_specialised::<F16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// wgmma-cluster: wgmma-ws in clusters of two blocks sharing B's tile (multicast). Bf16.
    pub fn hgemm_wgmma_cluster_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { clustered::<Bf16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// wgmma-cluster: wgmma-ws in clusters of two blocks sharing B's tile (multicast). F16.
    pub fn hgemm_wgmma_cluster_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { clustered::<F16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// persistent: wgmma-ws with one block an SM, walking the tiles. Bf16.
    pub fn hgemm_persistent_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { persistent::<Bf16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// persistent: wgmma-ws with one block an SM, walking the tiles. F16.
    pub fn hgemm_persistent_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<F16>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A and B.
        unsafe { persistent::<F16, [f32; 128]>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// tma-store: persistent, with C staged in shared memory and stored by the copy
    /// engine. Bf16.
    pub fn hgemm_tma_store_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<Bf16, [f32; 128]>(STAGED, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// tma-store: persistent, with C staged in shared memory and stored by the copy
    /// engine. F16.
    pub fn hgemm_tma_store_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<F16, [f32; 128]>(STAGED, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// small: tma-store with 64 x 128 tiles, a producer and one consumer warpgroup. Bf16.
    pub fn hgemm_small_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<Bf16, [f32; 64]>(SMALL, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// small: tma-store with 64 x 128 tiles, a producer and one consumer warpgroup. F16.
    pub fn hgemm_small_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<F16, [f32; 64]>(SMALL, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(512, 1)]
    #[requires(sm_90a)]
    /// tma-store-192: tma-store with 192 x 128 tiles, a producer and three consumer
    /// warpgroups. Bf16.
    pub fn hgemm_tma_store_192_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<Bf16, [f32; 64]>(STAGED_192, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(512, 1)]
    #[requires(sm_90a)]
    /// tma-store-192: tma-store with 192 x 128 tiles, a producer and three consumer
    /// warpgroups. F16.
    pub fn hgemm_tma_store_192_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<F16, [f32; 64]>(STAGED_192, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// tma-store-128: tma-store with 128 x 128 tiles and 6 stages, a producer and two
    /// consumer warpgroups. Bf16.
    pub fn hgemm_tma_store_128_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<Bf16, [f32; 64]>(STAGED_128, (m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// tma-store-128: tma-store with 128 x 128 tiles and 6 stages, a producer and two
    /// consumer warpgroups. F16.
    pub fn hgemm_tma_store_128_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { tma_store::<F16, [f32; 64]>(STAGED_128, (m, n, k), (a, b), c) }
    }
}
