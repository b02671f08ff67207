//! Where a 16-bit Hopper rung's consumers put C ([`super::wgmma`]): straight from
//! their registers, or staged in shared memory for the copy engine to store.

use super::tiling::{B_BOX, HalfTiling, STAGED_BOX, STAGED_COLS, STAGED_ROWS};
use crate::gpu::ring::Ring;
use crate::gpu::thread::sync_warp;
use crate::gpu::tma::{self, TensorMap};
use crate::gpu::wgmma::Accumulator;
use crate::gpu::{Global, GlobalMut, Half};

/// Stores consumer warpgroup `c`'s accumulators, thread `tid` of it, to the tile at
/// (`m0`, `n0`): `acc[4 j + 2 h + e]` is C[64 c + 16 w + g + 8 h][8 j + 2 t + e], two
/// neighbours packed into one 4-byte store where n is even (they share a row and an
/// aligned word), one by one where it is odd.
#[inline(always)]
pub(super) unsafe fn store<H: Half, A: Accumulator>(
    acc: &A,
    c: GlobalMut<H>,
    (m, n): (u32, u32),
    (m0, n0): (u32, u32),
    wg: usize,
    tid: usize,
) {
    let (w, lane) = (tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    // SAFETY: C is m x n of H; the words are written only where n is even, so each
    // pair is one aligned 4-byte word.
    let pairs = unsafe { c.cast::<u32>() };
    let (row0, n, even) = (m0 as usize + 64 * wg + 16 * w + g, n as usize, n % 2 == 0);
    let acc = acc.as_slice();
    unroll!(j < A::N / 8; 32 => {
        for h in 0..2 {
            let (row, col) = (row0 + 8 * h, n0 as usize + 8 * j + 2 * t);
            if row < m as usize && col < n {
                let word = H::pack2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                // SAFETY (each): in bounds (guarded, the neighbour too); for the
                // word, (row n + col) is even.
                if even {
                    unsafe { pairs.write((row * n + col) / 2, word) };
                } else {
                    unsafe { c.write(row * n + col, H::from_bits(word as u16)) };
                    if col + 1 < n {
                        unsafe { c.write(row * n + col + 1, H::from_bits((word >> 16) as u16)) };
                    }
                }
            }
        }
    });
}

/// Where C goes from the consumers' registers.
#[derive(Clone, Copy)]
pub(super) enum Out<H> {
    /// Stored by the threads (rungs 1 to 4).
    Registers(GlobalMut<H>),
    /// Staged in shared memory and stored by the copy engine (rung 5) with this map of
    /// C in boxes of 16 rows of 64.
    CopyEngine(Global<TensorMap>),
}

/// Rung 5's epilogue for thread `tid` of consumer warpgroup `wg`: its warp's 16 rows
/// of the tile, in bands of 128 columns, each written into the warp's staging
/// tile (two 64 x 16 boxes, swizzled by 128 bytes so a store of the warp's 32 lanes
/// hits 32 banks) and handed to the copy engine by lane 0 ([`store_band`]). The warp
/// waits only until the copy engine has read the band before it writes the next one.
#[inline(always)]
pub(super) unsafe fn store_staged<H: Half, A: Accumulator>(
    acc: &A,
    ring: Ring<H>,
    t: HalfTiling,
    c: Global<TensorMap>,
    at: (u32, u32),
    wg: usize,
    tid: usize,
) {
    let acc = acc.as_slice();
    for band in 0..A::N / STAGED_COLS {
        // SAFETY: forwarded from the caller.
        unsafe {
            store_band(
                &acc[BAND_ACCS * band..BAND_ACCS * (band + 1)],
                ring,
                t,
                c,
                at,
                band,
                (wg, tid),
            )
        };
    }
}

/// A band's accumulators a thread: 16 rows by 128 columns over the warp's 32 lanes.
const BAND_ACCS: usize = 16 * STAGED_COLS / 32;

/// Band `band` (columns 128 band.. of the tile) of [`store_staged`], from its 64
/// accumulators a thread (`acc[4 j + 2 h + e]`: C[16 w + g + 8 h][128 band + 8 j + 2 t + e]).
#[inline(always)]
pub(super) unsafe fn store_band<H: Half>(
    acc: &[f32],
    ring: Ring<H>,
    t: HalfTiling,
    c: Global<TensorMap>,
    (m0, n0): (u32, u32),
    band: usize,
    (wg, tid): (usize, usize),
) {
    let (w, lane) = (tid / 32, tid % 32);
    let (g, tt) = (lane / 4, lane % 4);
    let at = t.staging_at() + (4 * wg + w) * STAGED_ROWS * STAGED_COLS;
    let (tiles, row) = (ring.tiles(), m0 as usize + 64 * wg + STAGED_ROWS * w);
    let words = tiles.offset(at).cast::<u32>();
    // SAFETY: the warp's own staging tile; lane 0's stores of the last band have read
    // it once its wait returns.
    unsafe {
        if lane == 0 {
            tma::wait_group_read::<0>();
        }
        sync_warp();
        unroll!(j < 16; 32 => {
            for h in 0..2 {
                // Row g + 8 h of the band, 16-byte chunk j % 8 of box j / 8, swizzled
                // by the row (g).
                let word = (j / 8) * STAGED_BOX / 2 + (g + 8 * h) * 32 + (((j % 8) ^ g) * 4) + tt;
                words.write(word, H::pack2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
            }
        });
        tma::fence_proxy_async();
        sync_warp();
        if lane == 0 {
            for bx in 0..2 {
                let col = n0 as usize + STAGED_COLS * band + B_BOX * bx;
                tma::store_2d(c, [col as i32, row as i32], tiles, at + STAGED_BOX * bx);
            }
            tma::commit_group();
        }
    }
}
