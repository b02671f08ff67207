//! Rung 3, `tile_2d`: 2D register blocking. Over [`super::tile_1d`]'s column of TM
//! outputs, each thread computes a TM x TN block of C as a sum of outer products:
//! TM values of A and TN of B loaded from shared memory per k step feed TM·TN fused
//! multiply-adds, so shared-memory traffic per multiply-add falls again.

use super::tile_1d::load_tiles_scalar;
use super::{block_origin, outer_product};
use crate::gpu::thread::{sync_threads, thread_idx_x};
use crate::gpu::{Global, GlobalMut, SharedArray};

/// `tile_2d`, `vec4`, `banks`: a BM x BN tile, TM x TN outputs per thread.
pub const T2_BM: usize = 128;
pub const T2_BN: usize = 128;
pub const T2_BK: usize = 8;
pub const T2_TM: usize = 8;
pub const T2_TN: usize = 8;
/// Threads per block of the 2D-blocked rungs.
pub const T2_THREADS: usize = T2_BM * T2_BN / (T2_TM * T2_TN);

/// 2D register blocking: each thread computes a TM x TN block of C as a sum of outer
/// products, loading TM values of A and TN of B from shared memory per k step for
/// TM·TN fused multiply-adds.
#[inline(always)]
#[rustfmt::skip]
unsafe fn tile_2d<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const NT: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    tiles: (SharedArray<f32>, SharedArray<f32>),
) {
    const { assert!(NT == BM * BN / (TM * TN) && NT.is_multiple_of(BK) && NT.is_multiple_of(BN)) };
    let (bn, bk, tm, tn) = (BN as u32, BK as u32, TM as u32, TN as u32);
    let tid = thread_idx_x();
    let (row0, col0) = block_origin(BM, BN);
    let (thread_row, thread_col) = (tid / (bn / tn), tid % (bn / tn));
    let (a_tile, b_tile) = tiles;
    let mut acc = [[0.0f32; TN]; TM];
    let (mut reg_m, mut reg_n) = ([0.0f32; TM], [0.0f32; TN]);
    let mut k0 = 0;
    while k0 < k {
        // SAFETY: the tiles hold BM x BK and BK x BN floats.
        unsafe { load_tiles_scalar::<BM, BN, BK, NT>((m, n, k), a, b, tiles, (row0, col0, k0), tid) };
        sync_threads();
        for dot in 0..bk {
            unroll!(i < TM; 8 => {
                // SAFETY: row < BM, dot < BK; written before the barrier.
                reg_m[i] = unsafe { a_tile.read(((thread_row * tm + i as u32) * bk + dot) as usize) };
            });
            unroll!(j < TN; 8 => {
                // SAFETY: dot < BK, column < BN.
                reg_n[j] = unsafe { b_tile.read((dot * bn + thread_col * tn + j as u32) as usize) };
            });
            outer_product(&mut acc, &reg_m, &reg_n);
        }
        sync_threads();
        k0 += bk;
    }
    unroll!(i < TM; 8 => {
        let row = row0 + thread_row * tm + i as u32;
        unroll!(j < TN; 8 => {
            let col = col0 + thread_col * tn + j as u32;
            if row < m && col < n {
                // SAFETY: row < m, col < n.
                unsafe { c.write((row * n + col) as usize, acc[i][j]) };
            }
        });
    });
}

kernel! {
    /// tile-2d: 128 x 128 tiles, k steps of 8, 256 threads of 8 x 8 outputs each.
    pub fn sgemm_tile_2d(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_T2_A: [f32; T2_BM * T2_BK]];
        let b_tile = shared_array![COALESCE_SGEMM_T2_B: [f32; T2_BK * T2_BN]];
        // SAFETY: the tiles have the sizes tile_2d expects.
        unsafe {
            tile_2d::<T2_BM, T2_BN, T2_BK, T2_TM, T2_TN, T2_THREADS>((m, n, k), a, b, c, (a_tile, b_tile))
        }
    }
}
