//! Rung 1, `smem`: shared-memory tiling. Over `matmul_remapped` (one thread per
//! element of C, every operand read from global memory by every thread that needs
//! it), the block stages 32 x 32 tiles of A and B in shared memory: each global
//! element is loaded once per block, with coalesced reads, and then read by 32
//! threads from shared memory.

use super::block_origin;
use crate::gpu::math::fma;
use crate::gpu::thread::{sync_threads, thread_idx_x};
use crate::gpu::{Global, GlobalMut, SharedArray};

/// `smem`: the tile edge; blocks of SMEM_TILE² threads, one per element of C.
pub const SMEM_TILE: usize = 32;

/// Shared-memory tiling: the block (T² threads, `col = tid % T` as in the remapped
/// kernel) stages T x T tiles of A and B in shared memory, each thread loading one
/// element of each with coalesced reads, then every thread reads its row of A's tile
/// (a broadcast) and its column of B's (consecutive words: no bank conflict).
#[inline(always)]
unsafe fn smem<const T: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    (a_tile, b_tile): (SharedArray<f32>, SharedArray<f32>),
) {
    let t = T as u32;
    let tid = thread_idx_x();
    let (tr, tc) = (tid / t, tid % t);
    let (row0, col0) = block_origin(T, T);
    let (row, col) = (row0 + tr, col0 + tc);
    let mut acc = 0.0f32;
    let mut k0 = 0;
    // This thread's elements of A (row, k0 + tc) and B (k0 + tr, col), stepped a tile
    // at a time as C steps pointers (read only where the guards below hold). In usize:
    // a block past the edge may point past 2^32 elements, which it never reads.
    let (mut a_at, mut b_at) = (
        a.offset(row as usize * k as usize + tc as usize),
        b.offset(tr as usize * n as usize + col as usize),
    );
    let b_step = T * n as usize;
    while k0 < k {
        let a_in = row < m && k0 + tc < k;
        let b_in = k0 + tr < k && col < n;
        // SAFETY: each read is guarded; tr, tc < T index the T x T tiles.
        unsafe {
            a_tile.write((tr * t + tc) as usize, if a_in { a_at.read(0) } else { 0.0 });
            b_tile.write((tr * t + tc) as usize, if b_in { b_at.read(0) } else { 0.0 });
        }
        a_at = a_at.offset(T);
        b_at = b_at.offset(b_step);
        sync_threads();
        for kk in 0..t {
            // SAFETY: in the tiles; written before the barrier.
            acc = fma(
                unsafe { a_tile.read((tr * t + kk) as usize) },
                unsafe { b_tile.read((kk * t + tc) as usize) },
                acc,
            );
        }
        sync_threads();
        k0 += t;
    }
    if row < m && col < n {
        // SAFETY: row < m, col < n.
        unsafe { c.write((row * n + col) as usize, acc) };
    }
}

kernel! {
    /// smem: 32 x 32 tiles of A and B in shared memory, one thread per element of C
    /// (1024 threads). Global loads stay coalesced and each is shared by 32 threads.
    pub fn sgemm_smem(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_SMEM_A: [f32; SMEM_TILE * SMEM_TILE]];
        let b_tile = shared_array![COALESCE_SGEMM_SMEM_B: [f32; SMEM_TILE * SMEM_TILE]];
        // SAFETY: the tiles hold SMEM_TILE² floats each.
        unsafe { smem::<SMEM_TILE>((m, n, k), a, b, c, (a_tile, b_tile)) }
    }
}
