//! Rung 6, `warptile`: warp tiling. Over [`super::banks`], whose threads tile C with
//! no regard for warps, warp w owns a WM x WN tile of the block's C, walked as
//! WMITER x WNITER sub-tiles; within a sub-tile its 32 lanes form a grid of TM x TN
//! thread tiles. A quarter-warp's fragment loads then hit at most two distinct
//! float4s (no conflicts, mostly broadcasts), each fragment register serves a whole
//! row or column of sub-tiles, and the block's tile can grow (more reuse of each
//! global load) without more threads. Its body also serves [`super::pipeline`] and
//! [`super::interior`].

use super::vec4::fetch_tiles;
use super::{PAD, WarpTiling, block_origin, get4, outer_product, put4, store4};
use crate::gpu::thread::{sync_threads, thread_idx_x};
use crate::gpu::{Float4, Global, GlobalMut, SharedArray};

/// `warptile`: 128 x 128 x 16, four warps of 64 x 64 in 4 sub-tiles of 64 x 16,
/// 8 x 4 per thread per sub-tile: 128 outputs per thread.
pub const WARPTILE: WarpTiling = WarpTiling {
    bm: 128,
    bn: 128,
    bk: 16,
    wm: 64,
    wn: 64,
    wniter: 4,
    tm: 8,
    tn: 4,
    threads: 128,
    unroll: 8,
};

const _: () = assert!(WARPTILE.is_valid());

/// Where a thread's outputs lie in a warp-tiled block: the geometry [`warptile`] and
/// the `cp.async` rung ([`super::cp_async`]) share.
pub(super) struct WarpPlace {
    /// The block's first row and column of C.
    pub(super) row0: u32,
    pub(super) col0: u32,
    /// This thread's first row in A's tile (a column of the transposed tile) and
    /// column in B's, for sub-tile (0, 0).
    pub(super) a_base: u32,
    pub(super) b_base: u32,
    /// The sub-tiles' extents, the transposed A tile's row pitch, B's (BN).
    pub(super) wsubm: u32,
    pub(super) wsubn: u32,
    pub(super) pitch: u32,
    pub(super) bn: u32,
}

impl WarpPlace {
    /// Warp w owns a WM x WN tile of the block's BM x BN, walked as WMITER x WNITER
    /// sub-tiles; within a sub-tile its lanes form a grid of TM x TN thread tiles.
    #[inline(always)]
    #[rustfmt::skip]
    pub(super) fn new<const BM: usize, const BN: usize, const WM: usize, const WN: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize>() -> WarpPlace {
        let (bn, tm, tn) = (BN as u32, TM as u32, TN as u32);
        let (wsubm, wsubn) = ((WM / WMITER) as u32, (WN / WNITER) as u32);
        let tid = thread_idx_x();
        let (row0, col0) = block_origin(BM, BN);
        let warp = tid / 32;
        let (warp_row, warp_col) = (warp / (bn / WN as u32), warp % (bn / WN as u32));
        let lane = tid % 32;
        let (lane_row, lane_col) = (lane / (wsubn / tn), lane % (wsubn / tn));
        WarpPlace {
            row0,
            col0,
            a_base: warp_row * WM as u32 + lane_row * tm,
            b_base: warp_col * WN as u32 + lane_col * tn,
            wsubm,
            wsubn,
            pitch: (BM + PAD) as u32,
            bn,
        }
    }
}

/// One stage's BK k steps of a warp-tiled block: per step, the thread's fragments of
/// A (transposed, at `a_off`) and B (at `b_off`) as `ld.shared.v4`, then the outer
/// products of every sub-tile pair. The k steps go UNROLL at a time (the tuning's
/// `unroll`), each group one basic block for ptxas to schedule.
///
/// # Safety
/// The stage is in the tiles, aligned, and written before a barrier this thread passed.
#[inline(always)]
#[rustfmt::skip]
pub(super) unsafe fn compute_stage<const BK: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize, const UNROLL: usize>(
    acc: &mut [[[[f32; TN]; TM]; WNITER]; WMITER],
    (a_tiles, b_tiles): (SharedArray<f32>, SharedArray<f32>),
    (a_off, b_off): (u32, u32),
    w: &WarpPlace,
) {
    let (pitch, bn, a_base, b_base, wsubm, wsubn) = (w.pitch, w.bn, w.a_base, w.b_base, w.wsubm, w.wsubn);
    let mut reg_m = [[0.0f32; TM]; WMITER];
    let mut reg_n = [[0.0f32; TN]; WNITER];
    for group in 0..(BK / UNROLL) as u32 {
        unroll!(step < UNROLL; 8 => {
            let dot = group * UNROLL as u32 + step as u32;
            unroll!(wm < WMITER; 2 => {
                unroll!(i < TM / 4; 2 => {
                    let at = a_off + dot * pitch + a_base + wm as u32 * wsubm + 4 * i as u32;
                    // SAFETY: aligned, inside the stage (the caller).
                    put4(&mut reg_m[wm], 4 * i, unsafe { a_tiles.read4(at as usize) });
                });
            });
            unroll!(wn < WNITER; 4 => {
                unroll!(j < TN / 4; 2 => {
                    let at = b_off + dot * bn + b_base + wn as u32 * wsubn + 4 * j as u32;
                    // SAFETY: aligned, inside the stage.
                    put4(&mut reg_n[wn], 4 * j, unsafe { b_tiles.read4(at as usize) });
                });
            });
            unroll!(wm < WMITER; 2 => {
                unroll!(wn < WNITER; 4 => {
                    outer_product(&mut acc[wm][wn], &reg_m[wm], &reg_n[wn]);
                });
            });
        });
    }
}

/// Stores a warp-tiled thread's outputs to C, four columns at a time.
///
/// # Safety
/// `c` holds m x n floats.
#[inline(always)]
pub(super) unsafe fn store_c<const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize>(
    c: GlobalMut<f32>,
    (m, n): (u32, u32),
    acc: &[[[[f32; TN]; TM]; WNITER]; WMITER],
    w: &WarpPlace,
    vector: bool,
) {
    unroll!(wm < WMITER; 2 => {
        unroll!(wn < WNITER; 4 => {
            unroll!(i < TM; 8 => {
                let row = w.row0 + w.a_base + wm as u32 * w.wsubm + i as u32;
                unroll!(g < TN / 4; 2 => {
                    let col = w.col0 + w.b_base + wn as u32 * w.wsubn + 4 * g as u32;
                    // SAFETY: store4 guards C.
                    unsafe { store4(c, (m, n), row, col, get4(&acc[wm][wn][i], 4 * g), vector) };
                });
            });
        });
    });
}

/// Warp tiling: warp w owns a WM x WN tile of the block's C, walked as WMITER x
/// WNITER sub-tiles; within a sub-tile its 32 lanes form a (WSUBM/TM) x (WSUBN/TN)
/// grid of TM x TN thread tiles. A quarter-warp's fragment loads then hit at most two
/// distinct float4s (no conflicts, mostly broadcasts), each fragment register serves
/// a whole row or column of sub-tiles, and the block's tile can grow (more reuse of
/// each global load) without more threads.
///
/// With `DOUBLE` (the pipeline rung) the shared tiles are two buffers: while tile t
/// is computed from one, tile t + 1's global loads are already in flight into
/// registers, and are stored into the other buffer after the compute; one barrier
/// per tile suffices, since the buffer written in step t was last read in step t - 1,
/// before the barrier that ended it.
///
/// `WHOLE` is [`fetch_tiles`]'s: the caller promises what it needs.
#[inline(always)]
#[rustfmt::skip]
pub(super) unsafe fn warptile<const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize, const NT: usize, const AL: usize, const BL: usize, const DOUBLE: bool, const UNROLL: usize, const WHOLE: bool>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    (a_tiles, b_tiles): (SharedArray<f32>, SharedArray<f32>),
) {
    const { assert!(NT == BM * BN / (WMITER * WNITER * TM * TN) && TM.is_multiple_of(4) && TN.is_multiple_of(4)) };
    let w = WarpPlace::new::<BM, BN, WM, WN, WMITER, WNITER, TM, TN>();
    let (pitch, bn, bk) = (w.pitch, BN as u32, BK as u32);
    let tid = thread_idx_x();
    let (row0, col0) = (w.row0, w.col0);
    let (a_vector, b_vector) = (k % 4 == 0, n % 4 == 0);
    // One stage's offsets into the (possibly double) tiles.
    let (a_stage, b_stage) = (BK as u32 * pitch, bk * bn);
    let mut acc = [[[[0.0f32; TN]; TM]; WNITER]; WMITER];
    let fetch = |k0: u32| {
        // SAFETY: fetch_tiles guards A and B.
        unsafe { fetch_tiles::<BM, BN, BK, NT, AL, BL, WHOLE>((m, n, k), a, b, (row0, col0, k0), tid, (a_vector, b_vector)) }
    };
    // Stores a fetched tile into stage s.
    let store = |s: u32, v: ([Float4; AL], [Float4; BL])| {
        let (bk4, bn4) = ((BK / 4) as u32, (BN / 4) as u32);
        unroll!(i < AL; 8 => {
            let (r, cc) = (tid / bk4 + (i * NT / (BK / 4)) as u32, tid % bk4 * 4);
            let (f, at) = (v.0[i], s * a_stage + cc * pitch + r);
            // SAFETY: cc + 3 < BK, r < BM < pitch: inside stage s.
            unsafe {
                a_tiles.write(at as usize, f.x);
                a_tiles.write((at + pitch) as usize, f.y);
                a_tiles.write((at + 2 * pitch) as usize, f.z);
                a_tiles.write((at + 3 * pitch) as usize, f.w);
            }
        });
        unroll!(i < BL; 8 => {
            let (r, cc) = (tid / bn4 + (i * NT / (BN / 4)) as u32, tid % bn4 * 4);
            // SAFETY: r < BK, cc + 4 <= BN, aligned: inside stage s.
            unsafe { b_tiles.write4((s * b_stage + r * bn + cc) as usize, v.1[i]) };
        });
    };
    let mut stage = 0u32;
    if DOUBLE && k > 0 {
        store(0, fetch(0));
        sync_threads();
    }
    let mut k0 = 0;
    while k0 < k {
        let next = if DOUBLE && k0 + bk < k { Some(fetch(k0 + bk)) } else { None };
        if !DOUBLE {
            store(0, fetch(k0));
            sync_threads();
        }
        let (a_off, b_off) = (stage * a_stage, stage * b_stage);
        // SAFETY: the stage was stored before the barrier above.
        unsafe { compute_stage::<BK, WMITER, WNITER, TM, TN, UNROLL>(&mut acc, (a_tiles, b_tiles), (a_off, b_off), &w) };
        if let Some(v) = next {
            stage ^= 1;
            store(stage, v);
        }
        sync_threads();
        k0 += bk;
    }
    // SAFETY: store_c guards C.
    unsafe { store_c(c, (m, n), &acc, &w, b_vector) };
}

/// Float4 loads per thread per tile of a [`WarpTiling`] (A, B).
pub(super) const fn loads(t: WarpTiling) -> (usize, usize) {
    (t.bm * t.bk / 4 / t.threads, t.bk * t.bn / 4 / t.threads)
}

kernel! {
    /// warptile: 128 x 128 x 16 block tiles, 4 warps of 64 x 64 (4 sub-tiles of
    /// 64 x 16), 8 x 4 outputs per thread per sub-tile; float4 loads, padded
    /// transposed A tile, one shared buffer.
    pub fn sgemm_warptile(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = WARPTILE;
        let a_tiles = shared_array![COALESCE_SGEMM_WARPTILE_A: [f32; WARPTILE.bk * (WARPTILE.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_WARPTILE_B: [f32; WARPTILE.bk * WARPTILE.bn]];
        // SAFETY: the arrays hold one stage of the tiling's tiles.
        unsafe {
            warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, { loads(T).0 }, { loads(T).1 }, false, { T.unroll }, false>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}
