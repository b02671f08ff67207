//! Rung 7, `pipeline`: double buffering. [`super::warptile`] with two shared
//! buffers: while tile t is computed from one, tile t + 1's global loads are already
//! in flight into registers, and are stored into the other buffer after the compute;
//! one barrier per tile. In several tunings (tile shape, threads, outputs per
//! thread), so the best can be picked per GPU.

use super::warptile::{WARPTILE, loads, warptile};
use super::{PAD, WarpTiling};
use crate::gpu::{Global, GlobalMut};

/// `pipeline-128x128x16`: the warptile tuning, double-buffered.
pub const PIPE_128X128X16: WarpTiling = WARPTILE;

/// `pipeline-128x128x8`: eight warps of 64 x 32, 64 outputs per thread, half the
/// registers, twice the warps.
pub const PIPE_128X128X8: WarpTiling = WarpTiling {
    bm: 128,
    bn: 128,
    bk: 8,
    wm: 64,
    wn: 32,
    wniter: 2,
    tm: 8,
    tn: 4,
    threads: 256,
    unroll: 2,
};

/// `pipeline-128x64x16`: four warps of 64 x 32 over a narrower tile: twice the
/// blocks at a given size (better SM balance on small products).
pub const PIPE_128X64X16: WarpTiling = WarpTiling {
    bm: 128,
    bn: 64,
    bk: 16,
    wm: 64,
    wn: 32,
    wniter: 2,
    tm: 8,
    tn: 4,
    threads: 128,
    unroll: 2,
};

/// `pipeline-128x128x8-4x8`: pipeline-128x128x8 with each warp's 64 x 32 tile in two
/// sub-tiles of 32 x 32 and 4 x 8 outputs per thread in each (not one sub-tile row of
/// 8 x 4 pairs), all 8 k steps unrolled: same 64 outputs and 128 registers, but ptxas
/// now issues each fragment's shared load ~50 instructions ahead of its first FMA
/// (1-5 with 8 x 4 at unroll 8, which is why that tuning is unrolled by 2).
pub const PIPE_128X128X8_4X8: WarpTiling = WarpTiling {
    bm: 128,
    bn: 128,
    bk: 8,
    wm: 64,
    wn: 32,
    wniter: 1,
    tm: 4,
    tn: 8,
    threads: 256,
    unroll: 8,
};

const _: () =
    assert!(PIPE_128X128X8.is_valid() && PIPE_128X64X16.is_valid() && PIPE_128X128X8_4X8.is_valid());

kernel! {
    /// pipeline, 128 x 128 x 16 (128 threads, 128 outputs each): warptile with two
    /// shared buffers and the next tile's global loads in flight in registers while
    /// the current tile is computed.
    pub fn sgemm_pipeline_128x128x16(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = PIPE_128X128X16;
        let a_tiles = shared_array![COALESCE_SGEMM_PIPE_128X128X16_A: [f32; 2 * PIPE_128X128X16.bk * (PIPE_128X128X16.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_PIPE_128X128X16_B: [f32; 2 * PIPE_128X128X16.bk * PIPE_128X128X16.bn]];
        // SAFETY: the arrays hold two stages of the tiling's tiles.
        unsafe {
            warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, { loads(T).0 }, { loads(T).1 }, true, { T.unroll }, false>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}

kernel! {
    /// pipeline, 128 x 128 x 8 (256 threads, 64 outputs each): the same tile with half
    /// the registers per thread and twice the warps.
    pub fn sgemm_pipeline_128x128x8(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = PIPE_128X128X8;
        let a_tiles = shared_array![COALESCE_SGEMM_PIPE_128X128X8_A: [f32; 2 * PIPE_128X128X8.bk * (PIPE_128X128X8.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_PIPE_128X128X8_B: [f32; 2 * PIPE_128X128X8.bk * PIPE_128X128X8.bn]];
        // SAFETY: the arrays hold two stages of the tiling's tiles.
        unsafe {
            warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, { loads(T).0 }, { loads(T).1 }, true, { T.unroll }, false>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}

kernel! {
    /// pipeline, 128 x 64 x 16 (128 threads, 64 outputs each): a narrower tile, twice
    /// the blocks at a given size.
    pub fn sgemm_pipeline_128x64x16(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = PIPE_128X64X16;
        let a_tiles = shared_array![COALESCE_SGEMM_PIPE_128X64X16_A: [f32; 2 * PIPE_128X64X16.bk * (PIPE_128X64X16.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_PIPE_128X64X16_B: [f32; 2 * PIPE_128X64X16.bk * PIPE_128X64X16.bn]];
        // SAFETY: the arrays hold two stages of the tiling's tiles.
        unsafe {
            warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, { loads(T).0 }, { loads(T).1 }, true, { T.unroll }, false>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}

kernel! {
    /// pipeline, 128 x 128 x 8, 4 x 8 per thread (256 threads, 64 outputs each): the
    /// 128 x 128 x 8 pipeline with thread tiles ptxas schedules well (see
    /// [`PIPE_128X128X8_4X8`]).
    pub fn sgemm_pipeline_128x128x8_4x8(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = PIPE_128X128X8_4X8;
        let a_tiles = shared_array![COALESCE_SGEMM_PIPE_128X128X8_4X8_A: [f32; 2 * PIPE_128X128X8_4X8.bk * (PIPE_128X128X8_4X8.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_PIPE_128X128X8_4X8_B: [f32; 2 * PIPE_128X128X8_4X8.bk * PIPE_128X128X8_4X8.bn]];
        // SAFETY: the arrays hold two stages of the tiling's tiles.
        unsafe {
            warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, { loads(T).0 }, { loads(T).1 }, true, { T.unroll }, false>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}
