//! A consumer thread of the TF32 Hopper rungs ([`super::wgmma`]): where its B^T
//! fragments come from in a stage, and where its accumulators go in C, stored from
//! registers or staged in shared memory for the copy engine.

use crate::gpu::mma::{Tf32, to_tf32};
use crate::gpu::ring::{Ring, Stage};
use crate::gpu::thread::sync_warpgroup;
use crate::gpu::tma::{self, TensorMap, swizzled_128};
use crate::gpu::wgmma::Accumulator;
use crate::gpu::{Global, GlobalMut, SharedArray};

/// Floats of one staging box: 32 rows of C by 32 columns (128-byte rows, swizzled).
pub(super) const STAGED_BOX: usize = 32 * 32;

/// A consumer thread's place: its warp pair's 32-column box of B's tile, and its
/// fragment rows' column within that box (rows g and g + 8: `nn` and `nn + 8`).
#[derive(Clone, Copy)]
pub(super) struct Lane {
    box_: usize,
    nn: usize,
    t: usize,
    pub(super) lane: usize,
    /// Thread 0 of its warpgroup.
    pub(super) leader: bool,
}

impl Lane {
    /// Thread `tid` of consumer warpgroup `c`.
    #[inline(always)]
    pub(super) fn new(c: usize, tid: usize) -> Lane {
        let (w, lane) = (tid / 32, tid % 32);
        let (g, t) = (lane / 4, lane % 4);
        Lane {
            box_: 2 * c + w / 2,
            nn: 4 * (w % 2) + 16 * (g / 4) + g % 4,
            t,
            lane,
            leader: tid == 0,
        }
    }

    /// This thread's B^T fragments of a stage's four k steps, rounded to TF32:
    /// step `kk`'s registers are `[kk][..]` = (row g, k t), (g + 8, t), (g, t + 4),
    /// (g + 8, t + 4) of the step's 64 x 8 tile; B's tile starts `b_at` floats into a
    /// stage (after A's).
    #[inline(always)]
    pub(super) unsafe fn fragments(self, ring: Ring, b_at: usize, s: Stage) -> [[Tf32; 4]; 4] {
        let (tiles, b) = (ring.tiles(), ring.stage(s) + b_at + 1024 * self.box_);
        // The swizzle depends on the row only modulo 8, so k step kk's element is the
        // first step's plus 8 rows (256 floats): four addresses a stage, and the
        // steps are constant offsets from them.
        let first: [[SharedArray<f32>; 2]; 2] = core::array::from_fn(|h| {
            core::array::from_fn(|r| tiles.offset(b + swizzled_128(self.t + 4 * h, self.nn + 8 * r)))
        });
        let at = |kk: usize, h: usize, r: usize| {
            // SAFETY: inside the stage's box; the stage has landed (the caller waited).
            to_tf32(unsafe { first[h][r].read(256 * kk) })
        };
        core::array::from_fn(|kk| [at(kk, 0, 0), at(kk, 0, 1), at(kk, 1, 0), at(kk, 1, 1)])
    }

    /// Stores this thread's accumulators: C[m0 + 8 j + 2 t + e][n of row g (+8)].
    #[inline(always)]
    pub(super) unsafe fn store<A: Accumulator>(
        self,
        acc: &mut A,
        c: GlobalMut<f32>,
        (m, n): (u32, u32),
        (m0, n0): (u32, u32),
    ) {
        let acc = acc.as_mut_slice();
        let col = n0 as usize + 32 * self.box_ + self.nn;
        unroll!(j < A::N / 8; 32 => {
            for h in 0..2 {
                for e in 0..2 {
                    let (row, col) = (m0 as usize + 8 * j + 2 * self.t + e, col + 8 * h);
                    if row < m as usize && col < n as usize {
                        // SAFETY: in bounds (guarded).
                        unsafe { c.write(row * n as usize + col, acc[4 * j + 2 * h + e]) };
                    }
                }
            }
        });
    }

    /// Rung 4's store, of this thread's warpgroup's 64 columns of the tile at (`m0`,
    /// `n0`): band after band of 32 rows, each written into one of the warpgroup's two
    /// buffers (the other may still be on its way out) and stored by the leader.
    /// The buffers start `staging_at` floats into the ring's tiles; `bands` counts the
    /// warpgroup's bands so far, which picks the buffer.
    #[inline(always)]
    pub(super) unsafe fn store_staged<A: Accumulator>(
        self,
        acc: &mut A,
        (ring, staging_at): (Ring, usize),
        c: Global<TensorMap>,
        (m0, n0): (u32, u32),
        bands: &mut usize,
    ) {
        let (tiles, acc, wg) = (ring.tiles(), acc.as_mut_slice(), self.box_ / 2);
        unroll!(band < A::N / 32; 8 => {
            let buffer = staging_at + 2 * STAGED_BOX * (2 * wg + *bands % 2);
            // SAFETY: the warpgroup's own buffer, which the leader's stores of two
            // bands ago have read once its wait returns and the warpgroup has met.
            unsafe {
                if self.leader {
                    tma::wait_group_read::<1>();
                }
                sync_warpgroup();
                let mine = buffer + STAGED_BOX * (self.box_ % 2);
                unroll!(jj < 4; 4 => {
                    for h in 0..2 {
                        for e in 0..2 {
                            let at = swizzled_128(8 * jj + 2 * self.t + e, self.nn + 8 * h);
                            tiles.write(mine + at, acc[4 * (4 * band + jj) + 2 * h + e]);
                        }
                    }
                });
                tma::fence_proxy_async();
                sync_warpgroup();
                if self.leader {
                    let row = (m0 as usize + 32 * band) as i32;
                    for bx in 0..2 {
                        let col = (n0 as usize + 64 * wg + 32 * bx) as i32;
                        tma::store_2d(c, [col, row], tiles, buffer + STAGED_BOX * bx);
                    }
                    tma::commit_group();
                }
            }
            *bands += 1;
        });
    }
}
