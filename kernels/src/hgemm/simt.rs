//! The first 16-bit rung: one thread per element of C, on the CUDA cores. The
//! coalesced matmul kernel again ([`crate::matmul`], threadIdx.x on columns), reading
//! 16-bit elements and converting each to f32 before the multiply-add, so the sum is
//! an f32 one and only the result is rounded to the 16-bit type.

use crate::gpu::math::fma;
use crate::gpu::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};
use crate::gpu::{Bf16, F16, Global, GlobalMut, Half};

/// Block edge: 32 x 32 threads, one per element of a 32 x 32 tile of C.
pub const TILE: usize = 32;
const T: u32 = TILE as u32;

/// C[row][col] = sum over kk of A[row][kk] B[kk][col], summed in f32 and rounded to
/// `H` once. A warp's 32 lanes share a row: one A element (a broadcast) and 32
/// consecutive B elements (64 bytes, two sectors) per step, and a 64-byte run of C.
#[inline(always)]
unsafe fn simt<H: Half>(m: u32, n: u32, k: u32, a: Global<H>, b: Global<H>, c: GlobalMut<H>) {
    let row = block_idx_y() * T + thread_idx_y();
    let col = block_idx_x() * T + thread_idx_x();
    if row < m && col < n {
        let mut acc = 0.0f32;
        let (mut a_at, mut b_at) = (a.offset((row * k) as usize), b.offset(col as usize));
        for _ in 0..k {
            // SAFETY: step kk < k reads A[row][kk] and B[kk][col] (row < m, col < n).
            let (x, y) = unsafe { (a_at.read(0), b_at.read(0)) };
            acc = fma(x.to_f32(), y.to_f32(), acc);
            a_at = a_at.offset(1);
            b_at = b_at.offset(n as usize);
        }
        // SAFETY: row < m, col < n.
        unsafe { c.write((row * n + col) as usize, H::from_f32(acc)) };
    }
}

kernel! {
    /// BF16 in, f32 accumulation, BF16 out; 32 x 32 blocks, threadIdx.x on columns.
    pub fn hgemm_simt_bf16(m: u32, n: u32, k: u32, a: Global<Bf16>, b: Global<Bf16>, c: GlobalMut<Bf16>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { simt(m, n, k, a, b, c) }
    }
}

kernel! {
    /// FP16 in, f32 accumulation, FP16 out; 32 x 32 blocks, threadIdx.x on columns.
    pub fn hgemm_simt_f16(m: u32, n: u32, k: u32, a: Global<F16>, b: Global<F16>, c: GlobalMut<F16>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { simt(m, n, k, a, b, c) }
    }
}
