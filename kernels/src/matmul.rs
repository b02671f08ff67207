//! matmul: C (m x n) = A (m x k) B (k x n), row-major, one thread per element of C.
//! The three kernels are the same dot product; only which index threadIdx.x drives
//! changes, and with it whether a warp's loads coalesce.
//!
//! Dimensions and index arithmetic are 32-bit (`u32`), as a CUDA programmer writes
//! them (`int M, int N, int K`); the host refuses products whose matrices do not fit.

use crate::gpu::math::fma;
use crate::gpu::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};
use crate::gpu::{Global, GlobalMut};

/// Block edge: 32 x 32 threads (or 1024 in 1D for the remapped kernel).
pub const TILE: usize = 32;
const T: u32 = TILE as u32;

/// C[row][col] = sum over kk of A[row][kk] B[kk][col], guarded for any m, n, k.
///
/// A's and B's pointers step (by 1 and by n) as the twin's do: LLVM then keeps one
/// 64-bit address per stream, where `(row * k + kk) as usize` (32-bit arithmetic that
/// may wrap, so LLVM cannot widen it) rebuilt and widened every load's address, and
/// ran at 0.76x of the twin (docs/perf-notes.md).
#[inline(always)]
unsafe fn dot_into(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    row: u32,
    col: u32,
) {
    if row < m && col < n {
        let mut acc = 0.0f32;
        // The starts of A's row and of B's column.
        let (mut a_at, mut b_at) = (a.offset((row * k) as usize), b.offset(col as usize));
        for _ in 0..k {
            // SAFETY: step kk < k reads A[row][kk] and B[kk][col] (row < m, col < n).
            acc = fma(unsafe { a_at.read(0) }, unsafe { b_at.read(0) }, acc);
            a_at = a_at.offset(1);
            b_at = b_at.offset(n as usize);
        }
        // SAFETY: row < m, col < n.
        unsafe { c.write((row * n + col) as usize, acc) };
    }
}

kernel! {
    /// Naive: threadIdx.x on rows. A warp's 32 lanes read A 4·k bytes apart (32
    /// sectors per load), all read the same B element (a broadcast), and write C
    /// down a column (32 sectors).
    pub fn matmul_naive(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let row = block_idx_y() * T + thread_idx_x();
        let col = block_idx_x() * T + thread_idx_y();
        // SAFETY: forwards the kernel's arguments.
        unsafe { dot_into((m, n, k), a, b, c, row, col) }
    }
}

kernel! {
    /// Accidental: the same code with threadIdx.x on columns. Now a warp reads one
    /// A element (broadcast) and 32 consecutive B elements, and writes a C row
    /// segment: coalesced by luck of the naming.
    pub fn matmul_accidental(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let row = block_idx_y() * T + thread_idx_y();
        let col = block_idx_x() * T + thread_idx_x();
        // SAFETY: forwards the kernel's arguments.
        unsafe { dot_into((m, n, k), a, b, c, row, col) }
    }
}

kernel! {
    /// Remapped: 1D blocks of 1024 threads with col = tid % 32, row = tid / 32, so
    /// the 32 lanes of a warp share a row and span 32 columns: coalesced by design,
    /// whatever the block's shape.
    pub fn matmul_remapped(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let tid = thread_idx_x();
        let row = block_idx_y() * T + tid / T;
        let col = block_idx_x() * T + tid % T;
        // SAFETY: forwards the kernel's arguments.
        unsafe { dot_into((m, n, k), a, b, c, row, col) }
    }
}
