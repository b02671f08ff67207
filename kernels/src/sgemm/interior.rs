//! Rung 8, `interior`: no guards where none are needed. [`super::pipeline`]'s
//! 128 x 128 x 8 tuning with 4 x 8 thread tiles, with a second copy of its loop for
//! the blocks that lie wholly inside C with every k tile full (most of them at any
//! size past a few tiles): their loads need no guards, no scalar fallback and no
//! zero fill. Launch bounds keep the two copies of the loop to the registers of two
//! blocks per SM.

use super::block_origin;
use super::pipeline::PIPE_128X128X8_4X8;
use super::warptile::{loads, warptile};
use super::{PAD, WarpTiling};
use crate::gpu::{Global, GlobalMut};

kernel! {
    #[launch_bounds(256, 2)]
    /// interior, 128 x 128 x 8, 4 x 8 per thread: pipeline-128x128x8-4x8 with a second
    /// copy of its loop for the blocks that lie wholly inside C with every k tile
    /// full (most of them at any size past a few tiles): their loads need no guards,
    /// no scalar fallback and no zero fill, 574 instructions per 512 FMAs of a tile
    /// against 647 (sm_90). Two copies of the loop take ptxas to 141 registers, one
    /// block per SM; the launch bounds (256 threads, 2 blocks per SM, as the twin's
    /// `__launch_bounds__`) hold it at 128.
    pub fn sgemm_interior(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = PIPE_128X128X8_4X8;
        let a_tiles = shared_array![COALESCE_SGEMM_INTERIOR_A: [f32; 2 * PIPE_128X128X8_4X8.bk * (PIPE_128X128X8_4X8.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_INTERIOR_B: [f32; 2 * PIPE_128X128X8_4X8.bk * PIPE_128X128X8_4X8.bn]];
        let (row0, col0) = block_origin(T.bm, T.bn);
        // k % BK == 0 also makes k % 4 == 0: A's float4s aligned, like B's with n % 4 == 0.
        let whole = row0 + T.bm as u32 <= m && col0 + T.bn as u32 <= n && k.is_multiple_of(T.bk as u32) && n.is_multiple_of(4);
        // SAFETY: the arrays hold two stages of the tiling's tiles; `whole` is what
        // fetch_tiles's WHOLE needs.
        unsafe {
            if whole {
                warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, { loads(T).0 }, { loads(T).1 }, true, { T.unroll }, true>(
                    (m, n, k), a, b, c, (a_tiles, b_tiles),
                )
            } else {
                warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, { loads(T).0 }, { loads(T).1 }, true, { T.unroll }, false>(
                    (m, n, k), a, b, c, (a_tiles, b_tiles),
                )
            }
        }
    }
}
