//! matmul: C (m x n) = A (m x k) B (k x n), row-major, one thread per element of C.
//! The three kernels are the same dot product; only which index threadIdx.x drives
//! changes, and with it whether a warp's loads coalesce.

use crate::gpu::math::fma;
use crate::gpu::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};
use crate::gpu::{Global, GlobalMut};

/// Block edge: 32 x 32 threads (or 1024 in 1D for the remapped kernel).
pub const TILE: usize = 32;

/// C[row][col] = sum over kk of A[row][kk] B[kk][col], guarded for any m, n, k.
#[inline(always)]
unsafe fn dot_into(
    (m, n, k): (usize, usize, usize),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    row: usize,
    col: usize,
) {
    if row < m && col < n {
        let mut acc = 0.0f32;
        for kk in 0..k {
            // SAFETY: row < m, col < n, kk < k.
            acc = fma(
                unsafe { a.read(row * k + kk) },
                unsafe { b.read(kk * n + col) },
                acc,
            );
        }
        // SAFETY: row < m, col < n.
        unsafe { c.write(row * n + col, acc) };
    }
}

kernel! {
    /// Naive: threadIdx.x on rows. A warp's 32 lanes read A 4·k bytes apart (32
    /// sectors per load), all read the same B element (a broadcast), and write C
    /// down a column (32 sectors).
    pub fn matmul_naive(m: usize, n: usize, k: usize, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let row = block_idx_y() as usize * TILE + thread_idx_x() as usize;
        let col = block_idx_x() as usize * TILE + thread_idx_y() as usize;
        // SAFETY: forwards the kernel's arguments.
        unsafe { dot_into((m, n, k), a, b, c, row, col) }
    }
}

kernel! {
    /// Accidental: the same code with threadIdx.x on columns. Now a warp reads one
    /// A element (broadcast) and 32 consecutive B elements, and writes a C row
    /// segment: coalesced by luck of the naming.
    pub fn matmul_accidental(m: usize, n: usize, k: usize, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let row = block_idx_y() as usize * TILE + thread_idx_y() as usize;
        let col = block_idx_x() as usize * TILE + thread_idx_x() as usize;
        // SAFETY: forwards the kernel's arguments.
        unsafe { dot_into((m, n, k), a, b, c, row, col) }
    }
}

kernel! {
    /// Remapped: 1D blocks of 1024 threads with col = tid % 32, row = tid / 32, so
    /// the 32 lanes of a warp share a row and span 32 columns: coalesced by design,
    /// whatever the block's shape.
    pub fn matmul_remapped(m: usize, n: usize, k: usize, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let tid = thread_idx_x() as usize;
        let row = block_idx_y() as usize * TILE + tid / TILE;
        let col = block_idx_x() as usize * TILE + tid % TILE;
        // SAFETY: forwards the kernel's arguments.
        unsafe { dot_into((m, n, k), a, b, c, row, col) }
    }
}
