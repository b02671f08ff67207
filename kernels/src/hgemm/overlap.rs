//! Rung 10, `overlap`: tma-store with each consumer warpgroup's 64 x 256 share of the
//! tile held as two halves of 64 x 128 (`m64n128k16`), each its own chain of groups,
//! so the epilogue runs beside the tensor cores instead of after them.
//!
//! In tma-store both consumers stop multiplying while they write C (about 4% of the
//! time at 4096³, the gap to the same kernel without a store). Here a consumer issues
//! each k-tile's MMAs as two groups, the left half's then the right's. After the
//! tile's last k-tile it waits only for the left half, and stages and stores it
//! while the right half's last MMAs run. It then issues the next tile's first left
//! MMAs, waits for the right half, and stores it while those run.
//!
//! The registers are tma-store's (two halves of 64 accumulators a thread); what it
//! costs is A's tile read twice from shared memory for each k step, once for each half.

use super::epilogue::store_band;
use super::tiling::{B_ATOM_BYTES, B_BOX, BK, HalfTiling, STAGED};
use super::wgmma::{split_warpgroups, tile, walk, walking_ring};
use crate::gpu::ring::{Release, Ring, Stage};
use crate::gpu::tma::TensorMap;
use crate::gpu::wgmma::{self, Descriptor};
use crate::gpu::{Bf16, F16, Global, Half};

/// Accumulators of one half: 64 rows by 128 columns over the warpgroup.
type HalfAcc = [f32; 64];

/// One k-tile's MMAs from stage `s` into half `half` (columns 128 half..) of consumer
/// warpgroup `c`'s rows: four `m64n128k16` over two of B's four boxes, one group.
#[inline(always)]
unsafe fn multiply_half<H: Half>(
    acc: &mut HalfAcc,
    (t, ring): (HalfTiling, Ring<H>),
    s: Stage,
    c: usize,
    half: usize,
) {
    let (tiles, stage) = (ring.tiles(), ring.stage(s));
    let b0 = stage + t.a_len() + 2 * half * BK * B_BOX;
    // SAFETY: the stage has landed; its groups are waited for before it is freed.
    unsafe {
        for kk in 0..BK / 16 {
            let a = Descriptor::k_major_128b(tiles, stage + 64 * BK * c + 16 * kk);
            let b = Descriptor::mn_major_128b(tiles, b0 + 16 * B_BOX * kk, B_ATOM_BYTES);
            wgmma::mma_16bit_ss::<H, HalfAcc>(acc, a, b);
        }
        wgmma::commit_group();
    }
}

/// The rung: tma-store's launch, ring and walk, and the consumers' loop above.
#[inline(always)]
unsafe fn overlap<H: Half>(
    mnk: (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: Global<TensorMap>,
) {
    let t = STAGED;
    let (m, n, k) = mnk;
    // SAFETY: the host's launch (STAGED's shared memory and threads, at most one block
    // an SM) and maps; `c` maps C in boxes of 16 x 64.
    unsafe {
        let ring = walking_ring::<H>(t);
        let (first, step, tiles) = walk(t, mnk);
        let ktiles = k.div_ceil(BK as u32);
        split_warpgroups(
            (t, ring),
            (m, n, ktiles),
            (first, step, tiles),
            maps,
            Some(c),
            #[inline(always)]
            |wg, me| {
                let lane = me % 32;
                let free = |r: Release<H>| {
                    if lane == 0 {
                        // This warp's groups reading the stage have retired.
                        r.arrive();
                    }
                };
                let (mut left, mut right): (HalfAcc, HalfAcc) = ([0.0; 64], [0.0; 64]);
                let mut s = ring.consumer_start();
                let mut pending: Option<Release<H>> = None;
                // Whether the last tile's epilogue issued this tile's first k-tile.
                let mut started = false;
                let mut i = first;
                while i < tiles {
                    let at = tile(t, ring, i, (m, n));
                    for _ in started as u32..ktiles {
                        ring.wait(s);
                        wgmma::fence();
                        multiply_half(&mut left, (t, ring), s, wg, 0);
                        multiply_half(&mut right, (t, ring), s, wg, 1);
                        // The k-tile before this one has retired, both halves: free it.
                        wgmma::wait_group_pair::<2, _>(&mut left, &mut right);
                        if let Some(r) = pending {
                            free(r);
                        }
                        pending = Some(ring.releaser(s));
                        s.advance();
                    }
                    // The left half is done; it is stored while the right's last group runs.
                    wgmma::wait_group::<1, _>(&mut left);
                    store_band(&left, ring, t, c, at, 0, (wg, me));
                    i += step;
                    started = i < tiles;
                    if started {
                        // The next tile's first left group runs while the right half is stored.
                        ring.wait(s);
                        left = [0.0; 64];
                        wgmma::fence_after(&mut left);
                        multiply_half(&mut left, (t, ring), s, wg, 0);
                        wgmma::wait_group::<1, _>(&mut right);
                        if let Some(r) = pending.take() {
                            free(r);
                        }
                        store_band(&right, ring, t, c, at, 1, (wg, me));
                        right = [0.0; 64];
                        wgmma::fence_after(&mut right);
                        multiply_half(&mut right, (t, ring), s, wg, 1);
                        pending = Some(ring.releaser(s));
                        s.advance();
                    } else {
                        wgmma::wait_group::<0, _>(&mut right);
                        if let Some(r) = pending.take() {
                            free(r);
                        }
                        store_band(&right, ring, t, c, at, 1, (wg, me));
                    }
                }
            },
        );
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// overlap: tma-store with each consumer's accumulators in two halves, each stored
    /// while the tensor cores run the other's MMAs. Bf16.
    pub fn hgemm_overlap_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { overlap::<Bf16>((m, n, k), (a, b), c) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    /// overlap: tma-store with each consumer's accumulators in two halves, each stored
    /// while the tensor cores run the other's MMAs. F16.
    pub fn hgemm_overlap_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C.
        unsafe { overlap::<F16>((m, n, k), (a, b), c) }
    }
}
