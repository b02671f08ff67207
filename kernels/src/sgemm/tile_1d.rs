//! Rung 2, `tile_1d`: 1D register blocking. Over [`super::smem`], whose threads do
//! one multiply-add per shared load, each thread accumulates TM outputs of one column
//! of C in registers: per k step it reads one B value from shared memory and reuses
//! it TM times (the A values are broadcasts within a warp). Fewer, larger tiles in k
//! steps of BK.

use super::{at, block_origin};
use crate::gpu::math::fma;
use crate::gpu::thread::{sync_threads, thread_idx_x};
use crate::gpu::{Global, GlobalMut, SharedArray};

/// `tile_1d`: a BM x BN tile of C per block, k in steps of BK, TM rows per thread.
pub const T1_BM: usize = 64;
pub const T1_BN: usize = 64;
pub const T1_BK: usize = 8;
pub const T1_TM: usize = 8;
/// Threads per block of the 1D-blocked rung.
pub const T1_THREADS: usize = T1_BM * T1_BN / T1_TM;

/// Loads the BM x BK tile of A at (row0, k0) into `a_tile` (row-major, pitch BK) and
/// the BK x BN tile of B at (k0, col0) into `b_tile` (pitch BN), zero-filled outside
/// the matrices, one coalesced scalar per thread per step.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn load_tiles_scalar<const BM: usize, const BN: usize, const BK: usize, const NT: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    (a_tile, b_tile): (SharedArray<f32>, SharedArray<f32>),
    (row0, col0, k0): (u32, u32, u32),
    tid: u32,
) {
    let (bn, bk) = (BN as u32, BK as u32);
    for i in 0..BM * BK / NT {
        let (r, cc) = (tid / bk + (i * NT / BK) as u32, tid % bk);
        // SAFETY: r < BM, cc < BK; at() guards A.
        unsafe { a_tile.write((r * bk + cc) as usize, at(a, m, k, row0 + r, k0 + cc)) };
    }
    for i in 0..BK * BN / NT {
        let (r, cc) = (tid / bn + (i * NT / BN) as u32, tid % bn);
        // SAFETY: r < BK, cc < BN; at() guards B.
        unsafe { b_tile.write((r * bn + cc) as usize, at(b, k, n, k0 + r, col0 + cc)) };
    }
}

/// 1D register blocking: each thread accumulates TM outputs of one column of C in
/// registers; per k step it reads one B value from shared memory and reuses it TM
/// times (the A values are broadcasts within a warp).
#[inline(always)]
unsafe fn tile_1d<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const NT: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    tiles: (SharedArray<f32>, SharedArray<f32>),
) {
    const { assert!(NT == BM * BN / TM && NT.is_multiple_of(BK) && NT.is_multiple_of(BN)) };
    let (bn, bk, tm) = (BN as u32, BK as u32, TM as u32);
    let tid = thread_idx_x();
    let (row0, col0) = block_origin(BM, BN);
    let (thread_row, thread_col) = (tid / bn, tid % bn);
    let (a_tile, b_tile) = tiles;
    let mut acc = [0.0f32; TM];
    let mut k0 = 0;
    while k0 < k {
        // SAFETY: the tiles hold BM x BK and BK x BN floats.
        unsafe { load_tiles_scalar::<BM, BN, BK, NT>((m, n, k), a, b, tiles, (row0, col0, k0), tid) };
        sync_threads();
        for dot in 0..bk {
            // SAFETY: in the tiles; written before the barrier.
            let bv = unsafe { b_tile.read((dot * bn + thread_col) as usize) };
            unroll!(i < TM; 8 => {
                let r = thread_row * tm + i as u32;
                // SAFETY: r < BM, dot < BK.
                acc[i] = fma(unsafe { a_tile.read((r * bk + dot) as usize) }, bv, acc[i]);
            });
        }
        sync_threads();
        k0 += bk;
    }
    let col = col0 + thread_col;
    unroll!(i < TM; 8 => {
        let row = row0 + thread_row * tm + i as u32;
        if row < m && col < n {
            // SAFETY: row < m, col < n.
            unsafe { c.write((row * n + col) as usize, acc[i]) };
        }
    });
}

kernel! {
    /// tile-1d: 64 x 64 tiles, k steps of 8, 512 threads each computing 8 outputs of
    /// a column of C. Global loads as in smem (coalesced scalars).
    pub fn sgemm_tile_1d(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_T1_A: [f32; T1_BM * T1_BK]];
        let b_tile = shared_array![COALESCE_SGEMM_T1_B: [f32; T1_BK * T1_BN]];
        // SAFETY: the tiles have the sizes tile_1d expects.
        unsafe { tile_1d::<T1_BM, T1_BN, T1_BK, T1_TM, T1_THREADS>((m, n, k), a, b, c, (a_tile, b_tile)) }
    }
}
