//! spread: `coalesce calibrate`'s copies whose waves spread one stream. A coalesced copy
//! of n floats, 16 bytes in flight a thread, with one side cut into chunks of 128 bytes
//! (one warp request's line) placed `apart` chunks apart: consecutive chunks of the
//! contiguous side land that far apart on the other (the chunks of the array taken as
//! a transposed grid of (chunks / apart) x apart). A wave then writes (or reads) runs of a chunk spread over
//! `apart` times the bytes it moves, as a tiled transpose's wave writes short pieces of
//! every output row. The host passes every size as its log2, so the placement is
//! shifts and masks. docs/model.md ("Spread").

use crate::gpu::thread::{block_idx_x, thread_idx_x};
use crate::gpu::{Global, GlobalMut};

/// Threads per block; each copies 4 floats 256 apart, all loaded before any is stored.
pub const BLOCK: u32 = 256;
/// Floats a block copies.
pub const PER_BLOCK: usize = 4 * BLOCK as usize;
/// log2 of a chunk's floats: 32 floats, 128 bytes, a warp request's line, as a tiled
/// transpose writes its rows a line at a time (on the H200, 2026-11-26, a copy whose
/// 128-byte chunks land 32 or 64 apart ran at 91% of a memcpy, 512-byte ones at 94-95%).
pub const CHUNK_LOG2: u32 = 5;

/// Where float i of the contiguous side lies on the spread side: its chunk k of the
/// 2^chunks_log2 chunks moves to (k mod 2^rows_log2) x 2^(chunks_log2 - rows_log2) +
/// k / 2^rows_log2, so chunks k and k + 1 land 2^(chunks_log2 - rows_log2) apart.
#[inline(always)]
pub fn placed(i: usize, chunks_log2: u32, rows_log2: u32) -> usize {
    let (k, o) = (i >> CHUNK_LOG2, i & ((1 << CHUNK_LOG2) - 1));
    let moved = ((k & ((1 << rows_log2) - 1)) << (chunks_log2 - rows_log2)) + (k >> rows_log2);
    (moved << CHUNK_LOG2) + o
}

/// The block's 4 floats, 256 apart: float `from(i)` of src to float `to(i)` of dst for
/// each index i < 2^(chunks_log2 + 7), all loaded before any is stored.
#[inline(always)]
unsafe fn copy_4(
    chunks_log2: u32,
    src: Global<f32>,
    dst: GlobalMut<f32>,
    from: impl Fn(usize) -> usize,
    to: impl Fn(usize) -> usize,
) {
    let base = block_idx_x() as usize * PER_BLOCK + thread_idx_x() as usize;
    let n = 1usize << (chunks_log2 + CHUNK_LOG2);
    let mut v = [0f32; 4];
    for (k, x) in v.iter_mut().enumerate() {
        let i = base + k * BLOCK as usize;
        if i < n {
            // SAFETY: from maps 0..n onto 0..n (the identity or `placed`).
            *x = unsafe { src.read(from(i)) };
        }
    }
    for (k, x) in v.iter().enumerate() {
        let i = base + k * BLOCK as usize;
        if i < n {
            // SAFETY: as above, for to.
            unsafe { dst.write(to(i), *x) };
        }
    }
}

kernel! {
    /// Reads in order, writes spread: float i to float `placed(i)`.
    pub fn spread_writes(chunks_log2: u32, rows_log2: u32, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: placed is a permutation of the array's floats.
        unsafe { copy_4(chunks_log2, src, dst, |i| i, |i| placed(i, chunks_log2, rows_log2)) }
    }
}

kernel! {
    /// Reads spread, writes in order: float `placed(i)` to float i.
    pub fn spread_reads(chunks_log2: u32, rows_log2: u32, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: as above.
        unsafe { copy_4(chunks_log2, src, dst, |i| placed(i, chunks_log2, rows_log2), |i| i) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_is_a_permutation_that_puts_consecutive_chunks_apart_apart() {
        // 16 chunks as 4 rows: chunks land 4 apart, 0 4 8 12 1 5 ...
        let (chunks, rows) = (4, 2);
        let n = 1 << (chunks + CHUNK_LOG2);
        let mut seen = std::vec![false; n];
        for i in 0..n {
            let j = placed(i, chunks, rows);
            assert!(!seen[j], "{i} -> {j} twice");
            seen[j] = true;
        }
        let chunk = 1 << CHUNK_LOG2;
        assert_eq!(placed(chunk, chunks, rows), 4 * chunk);
        assert_eq!(placed(4 * chunk + 3, chunks, rows), chunk + 3);
        // All rows: in order.
        assert_eq!(placed(n - 5, chunks, chunks), n - 5);
    }
}
