//! Rung 9, `cp_async` (the `async` variants): asynchronous copies. Over
//! [`super::pipeline`], whose next tile travels through registers and shared stores,
//! `cp.async` copies it from global straight into one of STAGES shared buffers: no
//! registers hold a tile in transit, no shared stores are issued, and STAGES - 1
//! tiles are in flight while one is computed. Needs sm_80 (`#[requires(sm_80)]`:
//! these kernels are in the second PTX module).

use super::pipeline::PIPE_128X128X8;
use super::warptile::{WarpPlace, compute_stage, store_c};
use super::{PAD, WarpTiling};
use crate::gpu::async_copy::{commit_group, wait_group};
use crate::gpu::thread::{sync_threads, thread_idx_x};
use crate::gpu::{Global, GlobalMut, SharedArray};

/// `async`: shared-memory stages, STAGES - 1 tiles in flight during each compute.
pub const ASYNC_STAGES: usize = 3;

/// `async-128x128x8`: the pipeline-128x128x8 tiling, fed by `cp.async` in 3 stages.
pub const ASYNC_128X128X8: WarpTiling = PIPE_128X128X8;

/// `async-128x256x8`: eight warps of 64 x 64, each in 2 x 2 sub-tiles of 32 x 32 with
/// 4 x 8 outputs per thread (the thread tiles of pipeline-128x128x8-4x8: with 8 x 4
/// ones ptxas issued most fragment loads 1-5 instructions before their FMAs, 39.1
/// against 44.0 TFLOP/s on the H100): 128 outputs per thread as cuBLAS's SIMT kernel,
/// twice the FMAs per shared fragment load and per barrier of 128 x 128 x 8, one block
/// of 256 threads per SM.
pub const ASYNC_128X256X8: WarpTiling = WarpTiling {
    bm: 128,
    bn: 256,
    bk: 8,
    wm: 64,
    wn: 64,
    wniter: 2,
    tm: 4,
    tn: 8,
    threads: 256,
    unroll: 8,
};

const _: () =
    assert!(ASYNC_128X256X8.is_valid() && ASYNC_128X256X8.stage_floats() * ASYNC_STAGES * 4 <= 48 * 1024);

/// Multi-stage `cp.async` pipelining: the warp-tiled compute of [`super::warptile`],
/// fed by asynchronous copies from global straight into STAGES shared buffers, so no
/// registers hold a tile in transit and no shared stores are issued: A's tile goes in
/// transposed by 4-byte copies (`cp.async.ca`, consecutive lanes on consecutive k of
/// a row: whole sectors), B's by 16-byte copies (`cp.async.cg`), or 4-byte ones where
/// n % 4 != 0. Elements outside the matrices are zero-filled by the copies themselves.
///
/// Tiles 0..STAGES - 1 are issued up front, one commit group each; at tile t a thread
/// waits until at most STAGES - 2 groups are in flight (its copies of tile t have
/// landed), and the barrier then makes everyone's copies visible and ends everyone's
/// reads of tile t - 1, whose stage tile t + STAGES - 1 is then issued into: one
/// barrier per tile. Every thread commits every iteration, empty groups included, so
/// the counts agree.
#[inline(always)]
#[rustfmt::skip]
unsafe fn async_warptile<const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize, const NT: usize, const STAGES: usize, const UNROLL: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    (a_tiles, b_tiles): (SharedArray<f32>, SharedArray<f32>),
) {
    const {
        assert!(
            NT == BM * BN / (WMITER * WNITER * TM * TN)
                && (BM * BK).is_multiple_of(NT)
                && NT.is_multiple_of(BK)
                && (BK * BN / 4).is_multiple_of(NT)
                && NT.is_multiple_of(BN / 4)
                && STAGES >= 2
        )
    };
    let w = WarpPlace::new::<BM, BN, WM, WN, WMITER, WNITER, TM, TN>();
    let (pitch, bn, bk, bn4) = (w.pitch, BN as u32, BK as u32, (BN / 4) as u32);
    let tid = thread_idx_x();
    let (row0, col0) = (w.row0, w.col0);
    let b_vector = n % 4 == 0;
    let (a_stage, b_stage) = (bk * pitch, bk * bn);
    let mut acc = [[[[0.0f32; TN]; TM]; WNITER]; WMITER];
    // Issues the copies of the tile at k0 into stage s.
    let issue = |s: u32, k0: u32| {
        // Per thread per tile: BM·BK/NT 4-byte copies of A, BK·BN/4/NT 16-byte ones of B.
        unroll!(i < BM * BK / NT; 8 => {
            let (r, cc) = (tid / bk + (i * NT / BK) as u32, tid % bk);
            let (row, col) = (row0 + r, k0 + cc);
            let src = if row < m && col < k { Some((row * k + col) as usize) } else { None };
            // SAFETY: r < BM <= pitch, cc < BK: inside stage s; src inside A.
            unsafe { a_tiles.copy_async((s * a_stage + cc * pitch + r) as usize, a, src) };
        });
        unroll!(i < BK * BN / 4 / NT; 8 => {
            let (r, cc) = (tid / bn4 + (i * NT / (BN / 4)) as u32, tid % bn4 * 4);
            let (row, col) = (k0 + r, col0 + cc);
            let at = s * b_stage + r * bn + cc;
            if b_vector {
                // n % 4 == 0 and col % 4 == 0: the four are aligned and all inside B or none.
                let src = if row < k && col < n { Some((row * n + col) as usize) } else { None };
                // SAFETY: r < BK, cc + 4 <= BN, aligned: inside stage s.
                unsafe { b_tiles.copy4_async(at as usize, b, src) };
            } else {
                unroll!(q < 4; 4 => {
                    let col = col + q as u32;
                    let src = if row < k && col < n { Some((row * n + col) as usize) } else { None };
                    // SAFETY: inside stage s; src inside B.
                    unsafe { b_tiles.copy_async((at + q as u32) as usize, b, src) };
                });
            }
        });
    };
    let tiles = k.div_ceil(bk);
    let stages = STAGES as u32;
    for t in 0..stages - 1 {
        if t < tiles {
            issue(t, t * bk);
        }
        commit_group();
    }
    // The stage tile t is read from, and the one tile t + STAGES - 1 is written to.
    let (mut read, mut write) = (0u32, stages - 1);
    for t in 0..tiles {
        wait_for_oldest::<STAGES>();
        sync_threads();
        if t + stages - 1 < tiles {
            issue(write, (t + stages - 1) * bk);
        }
        commit_group();
        // SAFETY: tile t landed in stage `read` before the barrier above.
        unsafe { compute_stage::<BK, WMITER, WNITER, TM, TN, UNROLL>(&mut acc, (a_tiles, b_tiles), (read * a_stage, read * b_stage), &w) };
        read = if read + 1 == stages { 0 } else { read + 1 };
        write = if write + 1 == stages { 0 } else { write + 1 };
    }
    // SAFETY: store_c guards C.
    unsafe { store_c(c, (m, n), &acc, &w, b_vector) };
}

/// `wait_group::<{ STAGES - 2 }>()`: all but the STAGES - 2 newest groups landed
/// (a generic function cannot compute a const argument, so the few depths are spelled).
#[inline(always)]
pub(crate) fn wait_for_oldest<const STAGES: usize>() {
    const { assert!(STAGES >= 2 && STAGES <= 5) };
    match STAGES {
        2 => wait_group::<0>(),
        3 => wait_group::<1>(),
        4 => wait_group::<2>(),
        _ => wait_group::<3>(),
    }
}

kernel! {
    #[requires(sm_80)]
    /// async, 128 x 128 x 8 (256 threads, 64 outputs each): pipeline-128x128x8's tiles
    /// in 3 shared stages filled by `cp.async`, two tiles in flight while one is computed.
    pub fn sgemm_async_128x128x8(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = ASYNC_128X128X8;
        let a_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X128X8_A: [f32; ASYNC_STAGES * ASYNC_128X128X8.bk * (ASYNC_128X128X8.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X128X8_B: [f32; ASYNC_STAGES * ASYNC_128X128X8.bk * ASYNC_128X128X8.bn]];
        // SAFETY: the arrays hold ASYNC_STAGES stages of the tiling's tiles.
        unsafe {
            async_warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, ASYNC_STAGES, { T.unroll }>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}

kernel! {
    #[requires(sm_80)]
    /// async, 128 x 256 x 8 (256 threads, 128 outputs each): warps of 64 x 64 in 4 x 8
    /// thread tiles, twice the work per fragment load and per barrier, 3 stages of
    /// `cp.async`.
    pub fn sgemm_async_128x256x8(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = ASYNC_128X256X8;
        let a_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X256X8_A: [f32; ASYNC_STAGES * ASYNC_128X256X8.bk * (ASYNC_128X256X8.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X256X8_B: [f32; ASYNC_STAGES * ASYNC_128X256X8.bk * ASYNC_128X256X8.bn]];
        // SAFETY: the arrays hold ASYNC_STAGES stages of the tiling's tiles.
        unsafe {
            async_warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, ASYNC_STAGES, { T.unroll }>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}
