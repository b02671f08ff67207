//! Rung 5, `banks`: no bank conflicts. [`super::vec4`]'s body with two changes that
//! only move data between shared-memory banks: a thread's TN columns of B are TN/4
//! float4s BN/(TN/4) apart instead of adjacent (a quarter-warp's float4 loads then
//! cover 128 consecutive bytes, all 32 banks once), and A's transposed tile rows are
//! padded by [`PAD`] floats (a warp's transposed stores land on different banks).

use super::PAD;
use super::tile_2d::{T2_BK, T2_BM, T2_BN, T2_THREADS, T2_TM, T2_TN};
use super::vec4::{T2_AL, T2_BL, vec4};
use crate::gpu::{Global, GlobalMut};

kernel! {
    /// banks: vec4 without bank conflicts: each thread's 8 columns of B are two
    /// float4s 64 columns apart (a quarter-warp reads 128 contiguous bytes), and A's
    /// transposed tile rows are padded by 4 floats (the transposed stores of a warp's
    /// two k-columns land on different banks).
    pub fn sgemm_banks(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_BANKS_A: [f32; T2_BK * (T2_BM + PAD)]];
        let b_tile = shared_array![COALESCE_SGEMM_BANKS_B: [f32; T2_BK * T2_BN]];
        // SAFETY: the tiles have the sizes vec4 expects at PITCH = BM + PAD.
        unsafe {
            vec4::<T2_BM, T2_BN, T2_BK, T2_TM, T2_TN, T2_THREADS, { T2_BM + PAD }, true, T2_AL, T2_BL>(
                (m, n, k), a, b, c, (a_tile, b_tile),
            )
        }
    }
}
