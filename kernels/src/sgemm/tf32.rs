//! Rung 10, `tf32`: tensor cores. C = A B with TF32 tensor cores (`mma.sync`), the
//! same row-major f32 matrices and the same any-size contract as the FP32 rungs, fed
//! by [`super::cp_async`]'s multi-stage `cp.async` pipeline. The lesson: each
//! `mma.sync` does 1024 multiply-adds for a warp, so what limits the rung is now how
//! fast fragments come from shared memory, not the multiplies.
//!
//! Each warp owns a 64 x 64 tile of C: 4 x 8 tiles of 16 x 8, one `mma.m16n8k8` each
//! per k step of 8, 128 accumulators per lane. Per k step a lane loads its fragments
//! with four `ldmatrix.x4` (A) and four `ld.shared.v4` (B) for 32 mma instructions,
//! the fragments of the next k step while this one's multiply.
//!
//! Two layouts make those loads wide and free of bank conflicts:
//! - A's tile stays row-major (as in global memory, so its 16-byte `cp.async` copies
//!   go straight in) with rows padded to BK + 4 floats: the eight 16-byte rows of an
//!   `ldmatrix` pass then start 16 bytes apart modulo 128, all 32 banks once.
//! - B's fragment wants B[k][n] for eight n of one k per lane group, and the k x n
//!   tile has those n contiguous: one float4 per lane serves four 16 x 8 tiles, if
//!   tile q of a group of four takes the columns q, q + 4, q + 8, ... of 32 columns
//!   (any assignment of C's columns to the mma's n works, as long as the stores undo
//!   it). Rows padded to BN + 8 floats put a quarter-warp's eight float4s (lanes t =
//!   0..3 on rows k + t, two float4s per row) on 8 different bank groups. The stores
//!   of C then find each lane's outputs of a row at 8 consecutive columns: two float4s.
//!
//! Inputs are rounded to TF32 ([`to_tf32`], `cvt.rna`) as each fragment is loaded:
//! each product carries at most 2^-11 relative rounding per input, which the host's
//! validation bound accounts for (and nothing else is looser than the FP32 rungs).
//!
//! The shared stages (over 48 KiB) are dynamic shared memory, sized by the host's
//! launch ([`Tf32Tiling::shared_bytes`]).

use super::cp_async::wait_for_oldest;
use super::store4;
use crate::gpu::async_copy::commit_group;
use crate::gpu::mma::{Tf32, mma_m16n8k8_tf32_tiles, to_tf32};
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::gpu::{Float4, Global, GlobalMut, SharedArray};

/// A tensor-core tuning: block tile BM x BN, k in tiles of BK, warps of WM x WN (in
/// 16 x 8 mma tiles), STAGES shared stages filled by `cp.async`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tf32Tiling {
    pub bm: usize,
    pub bn: usize,
    pub bk: usize,
    pub wm: usize,
    pub wn: usize,
    pub stages: usize,
    pub threads: usize,
    /// The k steps of a tile over which the next tile's copies are spread (1 to BK /
    /// 8, dividing it): a share of the copies before each step's multiplies.
    pub copy_steps: usize,
}

impl Tf32Tiling {
    /// Floats per row of A's tile: BK plus the padding that spreads `ldmatrix` rows.
    pub const fn a_pitch(&self) -> usize {
        self.bk + 4
    }
    /// Floats per row of B's tile: BN plus the padding that spreads fragment loads.
    pub const fn b_pitch(&self) -> usize {
        self.bn + 8
    }
    /// Floats of one stage: A's tile, then B's.
    pub const fn stage_floats(&self) -> usize {
        self.bm * self.a_pitch() + self.bk * self.b_pitch()
    }
    /// Dynamic shared memory per block, every stage.
    pub const fn shared_bytes(&self) -> usize {
        self.stages * self.stage_floats() * 4
    }
    /// Whether the tiling is one the kernel body handles: whole warps of whole mma
    /// tiles (16 x 32 groups), k steps of 8, 16-byte copies spread evenly over the
    /// threads, at most 8 copies of each tile per thread, 2 to 5 stages.
    pub const fn is_valid(&self) -> bool {
        self.wm.is_multiple_of(16)
            && self.wn.is_multiple_of(32)
            && self.wm / 16 <= 4
            && self.wn / 32 <= 2
            && self.bm.is_multiple_of(self.wm)
            && self.bn.is_multiple_of(self.wn)
            && self.threads == 32 * (self.bm / self.wm) * (self.bn / self.wn)
            && self.bk.is_multiple_of(8)
            && self.bk / 8 <= 4
            && (self.bm * self.bk / 4).is_multiple_of(self.threads)
            && (self.bk * self.bn / 4).is_multiple_of(self.threads)
            && self.bm * self.bk / 4 / self.threads <= 8
            && self.bk * self.bn / 4 / self.threads <= 8
            && self.stages >= 2
            && self.stages <= 5
            && self.copy_steps >= 1
            && (self.bk / 8).is_multiple_of(self.copy_steps)
    }
}

/// `tf32-128x128x32`: four warps of 64 x 64, 3 stages (105 KiB): two blocks per SM,
/// so one block's barrier overlaps the other's multiplies. Copies at 2 of the 4 k
/// steps: at 4, nvcc spills in the twin (255 registers), 0.68x the Rust kernel.
pub const TF32_128X128X32: Tf32Tiling = Tf32Tiling {
    bm: 128,
    bn: 128,
    bk: 32,
    wm: 64,
    wn: 64,
    stages: 3,
    threads: 128,
    copy_steps: 2,
};

/// `tf32-128x256x32`: eight warps of 64 x 64, 3 stages (153 KiB): one block per SM,
/// a quarter less global (L2) traffic per multiply than 128 x 128.
pub const TF32_128X256X32: Tf32Tiling = Tf32Tiling {
    bm: 128,
    bn: 256,
    bk: 32,
    wm: 64,
    wn: 64,
    stages: 3,
    threads: 256,
    copy_steps: 4,
};

const _: () = assert!(TF32_128X128X32.is_valid() && TF32_128X256X32.is_valid());

/// One k step's fragments: A's per 16-row tile, B's per 8-column tile (tile 4 g + q is
/// column q of each four of the g-th 32 columns).
type Fragments<const TM: usize, const TN: usize> = ([[Tf32; 4]; TM], [[Tf32; 2]; TN]);

/// A thread's place in a block of [`tf32_gemm`] (whose parameters it takes): what its
/// copies and fragment loads address, computed once.
struct Place<
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const TM: usize,
    const TN: usize,
    const STAGES: usize,
    const NT: usize,
> {
    m: u32,
    n: u32,
    k: u32,
    tid: u32,
    /// The block's first row and column of C.
    row0: u32,
    col0: u32,
    /// The warp's first row and column in the block's tile.
    warp_row: u32,
    warp_col: u32,
    /// The index this lane passes to `ldmatrix` for A's first 16 x 8 tile of stage 0.
    a_lane: u32,
    /// The index of this lane's first float4 of B in stage 0.
    b_lane: u32,
    /// Tiles may be copied 16 bytes at a time: k % 4 == 0 and n % 4 == 0 (A's and B's
    /// rows are whole, aligned float4s).
    vector: bool,
    /// C's rows are whole, aligned float4s: n % 4 == 0.
    c_vector: bool,
}

impl<
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const TM: usize,
    const TN: usize,
    const STAGES: usize,
    const NT: usize,
> Place<BM, BN, BK, WM, WN, TM, TN, STAGES, NT>
{
    /// Floats per row of A's and B's tiles, per stage of each, and where B's stages
    /// start (after A's, in the one dynamic array).
    const LAYOUT: (u32, u32, u32, u32, u32) = {
        let (ap, bp) = ((BK + 4) as u32, (BN + 8) as u32);
        let (a_stage, b_stage) = (BM as u32 * ap, BK as u32 * bp);
        (ap, bp, a_stage, b_stage, STAGES as u32 * a_stage)
    };

    #[inline(always)]
    fn new((m, n, k): (u32, u32, u32)) -> Self {
        let (ap, bp) = ((BK + 4) as u32, (BN + 8) as u32);
        let tid = thread_idx_x();
        let (warp, lane) = (tid / 32, tid % 32);
        let (warp_row, warp_col) = (
            warp / (BN / WN) as u32 * WM as u32,
            warp % (BN / WN) as u32 * WN as u32,
        );
        let (g, t) = (lane / 4, lane % 4);
        Place {
            m,
            n,
            k,
            tid,
            row0: block_idx_y() * BM as u32,
            col0: block_idx_x() * BN as u32,
            warp_row,
            warp_col,
            // Matrix j = lane / 8 of an `ldmatrix` is rows 8 (j % 2).. and columns
            // 4 (j / 2).. of a 16 x 8 tile; this lane addresses its row lane % 8.
            a_lane: (warp_row + lane % 8 + 8 * (lane / 8 % 2)) * ap + 4 * (lane / 16),
            // Row t of a k step, columns 4g.. of each 32.
            b_lane: t * bp + warp_col + 4 * g,
            vector: k % 4 == 0 && n % 4 == 0,
            c_vector: n % 4 == 0,
        }
    }

    /// Issues part `part` of `parts` of the copies of the tile at k0 into stage s: A's
    /// BM x BK and B's BK x BN, by 16-byte copies if VECTOR (`self.vector`), else by
    /// 4-byte ones.
    ///
    /// # Safety
    /// `tiles` holds STAGES stages; s < STAGES; VECTOR only where `self.vector`; no
    /// thread reads stage s until a wait covering these copies and a barrier.
    #[inline(always)]
    #[rustfmt::skip]
    unsafe fn issue<const VECTOR: bool>(&self, (a, b, tiles): (Global<f32>, Global<f32>, SharedArray<f32>), s: u32, k0: u32, parts: (usize, usize)) {
        let (ap, bp, a_stage, b_stage, b_region) = Self::LAYOUT;
        let (m, n, k) = (self.m, self.n, self.k);
        // SAFETY: each stage holds A's BM rows of pitch ap >= BK and B's BK rows of
        // pitch bp >= BN, 16-byte aligned; the rest is the caller's.
        unsafe {
            copy_tile::<BM, BK, NT, VECTOR>(self.tid, a, (m, k), (self.row0, k0), (tiles, s * a_stage, ap), parts);
            copy_tile::<BK, BN, NT, VECTOR>(self.tid, b, (k, n), (k0, self.col0), (tiles, b_region + s * b_stage, bp), parts);
        }
    }

    /// The fragments of k step `step` of the tile in stage s, rounded to TF32.
    ///
    /// # Safety
    /// Every lane of the warp calls it; the stage landed before a barrier this thread
    /// passed.
    #[inline(always)]
    #[rustfmt::skip]
    unsafe fn load(&self, tiles: SharedArray<f32>, s: u32, step: u32) -> Fragments<TM, TN> {
        let (ap, bp, a_stage, b_stage, b_region) = Self::LAYOUT;
        let mut fa = [[Tf32::default(); 4]; TM];
        let mut fb = [[Tf32::default(); 2]; TN];
        unroll!(mt < TM; 4 => {
            let at = s * a_stage + self.a_lane + (16 * mt) as u32 * ap + 8 * step;
            // SAFETY: rows inside the stage, 16-byte aligned, every lane (the caller).
            fa[mt] = unsafe { tiles.ldmatrix_x4(at as usize) }.map(to_tf32);
        });
        unroll!(grp < TN / 4; 2 => {
            let at = b_region + s * b_stage + self.b_lane + 8 * step * bp + (32 * grp) as u32;
            // SAFETY: rows 8 step + t and + 4 < BK, columns inside BN, aligned.
            let (lo, hi) = unsafe { (tiles.read4(at as usize), tiles.read4((at + 4 * bp) as usize)) };
            fb[4 * grp] = [lo.x, hi.x].map(to_tf32);
            fb[4 * grp + 1] = [lo.y, hi.y].map(to_tf32);
            fb[4 * grp + 2] = [lo.z, hi.z].map(to_tf32);
            fb[4 * grp + 3] = [lo.w, hi.w].map(to_tf32);
        });
        (fa, fb)
    }

    /// The k loop: tiles through the shared stages, `acc` += their products.
    ///
    /// Stages 0..STAGES - 1 are issued up front. During each tile the copies of the
    /// tile STAGES - 1 ahead go into the stage the barrier before it freed, a share of
    /// them at each of COPY_STEPS k steps (issued all at once, each copy's address
    /// registers waited for the one before to leave: a fifth of the warps' stall
    /// samples on the H100, long scoreboard). At the last k step (its fragments already in registers) a thread
    /// waits for the next tile's copies and the barrier makes them visible to all and
    /// frees the stage just read: one barrier per tile, as in the async rung. The next
    /// tile's first fragments load before this tile's last multiplies.
    ///
    /// # Safety
    /// `tiles` holds STAGES stages; VECTOR only where `self.vector`; every thread of
    /// the block calls it (its waits, barriers and warp-wide loads line up).
    #[inline(always)]
    unsafe fn k_loop<const VECTOR: bool, const COPY_STEPS: usize>(
        &self,
        sources: (Global<f32>, Global<f32>, SharedArray<f32>),
        acc: &mut [[[f32; 4]; TN]; TM],
    ) {
        let (bk, stages, tiles) = (BK as u32, STAGES as u32, sources.2);
        let tiles_k = self.k.div_ceil(bk);
        // SAFETY (every issue and load): the caller's, and stages < STAGES.
        for s in 0..stages - 1 {
            if s < tiles_k {
                unsafe { self.issue::<VECTOR>(sources, s, s * bk, (0, 1)) };
            }
            commit_group();
        }
        wait_for_oldest::<STAGES>();
        sync_threads();

        let mut frags = unsafe { self.load(tiles, 0, 0) };
        // The stage being read, and the one being filled (free since the last barrier).
        let (mut read, mut fill) = (0u32, stages - 1);
        for tile in 0..tiles_k {
            unroll!(step < BK / 8; 4 => {
                // Past the last tile the copies zero-fill (their sources lie outside the
                // matrices) rather than branch: one block per step for ptxas to schedule.
                let every = BK / 8 / COPY_STEPS;
                if step.is_multiple_of(every) {
                    unsafe { self.issue::<VECTOR>(sources, fill, (tile + stages - 1) * bk, (step / every, COPY_STEPS)) };
                }
                let next = if step + 1 < BK / 8 {
                    unsafe { self.load(tiles, read, step as u32 + 1) }
                } else {
                    // This tile is all in registers: wait for the next one, free its stage.
                    commit_group();
                    wait_for_oldest::<STAGES>();
                    sync_threads();
                    fill = read;
                    read = if read + 1 == stages { 0 } else { read + 1 };
                    // The next tile's first step (after the last tile, unused).
                    unsafe { self.load(tiles, read, 0) }
                };
                mma_m16n8k8_tf32_tiles(acc, &frags.0, &frags.1);
                frags = next;
            });
        }
    }
}

/// Issues part `part` of `parts` of the copies of the R x C tile at (row0, col0) of a
/// rows x cols row-major matrix into `tiles` at `at` (rows `pitch` floats apart): R C
/// / 4 chunks of 4 floats, chunk `tid + i NT` the thread's i-th, in part i parts / (R C
/// / 4 / NT). Each chunk is one 16-byte copy if VECTOR, four 4-byte copies otherwise;
/// zeros outside the matrix.
///
/// # Safety
/// The tile fits at `at` (aligned, C <= pitch, 16-byte aligned rows); VECTOR only if
/// cols % 4 == 0 (rows of whole, aligned float4s); no thread reads the tile until a
/// wait covering these copies and a barrier.
#[inline(always)]
#[rustfmt::skip]
unsafe fn copy_tile<const R: usize, const C: usize, const NT: usize, const VECTOR: bool>(
    tid: u32,
    src: Global<f32>,
    (rows, cols): (u32, u32),
    (row0, col0): (u32, u32),
    (tiles, at, pitch): (SharedArray<f32>, u32, u32),
    (part, parts): (usize, usize),
) {
    let c4 = (C / 4) as u32;
    let mine = |i: usize| i * parts / (R * C / 4 / NT) == part;
    // The tile row and first column of the thread's i-th chunk.
    let place = |i: usize| {
        let id = tid + (i * NT) as u32;
        (id / c4, id % c4 * 4)
    };
    let from = |row: u32, col: u32| if row < rows && col < cols { Some((row * cols + col) as usize) } else { None };
    if VECTOR {
        unroll!(i < R * C / 4 / NT; 8 => {
            if mine(i) {
                let (r, cc) = place(i);
                // SAFETY: r < R, cc + 4 <= C: inside the tile, aligned; cols % 4 == 0 and
                // col0 + cc % 4 == 0: the source float4 is aligned and wholly in or out.
                unsafe { tiles.copy4_async((at + r * pitch + cc) as usize, src, from(row0 + r, col0 + cc)) };
            }
        });
    } else {
        unroll!(i < R * C / 4 / NT; 8 => {
            if mine(i) {
                let (r, cc) = place(i);
                unroll!(q < 4; 4 => {
                    let q = q as u32;
                    // SAFETY: inside the tile; the source element inside the matrix.
                    unsafe { tiles.copy_async((at + r * pitch + cc + q) as usize, src, from(row0 + r, col0 + cc + q)) };
                });
            }
        });
    }
}

/// TF32 tensor cores over a `cp.async` pipeline: block tile BM x BN in STAGES shared
/// stages of BK, warps of WM x WN = TM x TN mma tiles of 16 x 8, NT threads
/// ([`Place::k_loop`]), then the stores of C.
#[inline(always)]
#[rustfmt::skip]
unsafe fn tf32_gemm<const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize, const TM: usize, const TN: usize, const STAGES: usize, const NT: usize, const COPY_STEPS: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    tiles: SharedArray<f32>,
) {
    const {
        assert!(
            TM * 16 == WM
                && TN * 8 == WN
                && WN.is_multiple_of(32)
                && NT == 32 * (BM / WM) * (BN / WN)
                && BK.is_multiple_of(8)
                && (BM * BK / 4).is_multiple_of(NT)
                && (BK * BN / 4).is_multiple_of(NT)
                && STAGES >= 2
        )
    };
    let p = Place::<BM, BN, BK, WM, WN, TM, TN, STAGES, NT>::new((m, n, k));
    let mut acc = [[[0.0f32; 4]; TN]; TM];
    // The k loop in two versions, by 16-byte copies where k and n are multiples of 4
    // (the usual case) and 4-byte ones elsewhere: chosen inside one loop, ptxas
    // predicates both kinds of copies into one block and issues them all every tile.
    // SAFETY: the array holds STAGES stages (the caller).
    unsafe {
        if p.vector {
            p.k_loop::<true, COPY_STEPS>((a, b, tiles), &mut acc);
        } else {
            p.k_loop::<false, COPY_STEPS>((a, b, tiles), &mut acc);
        }
    }

    // Lane (g, t) holds rows g and g + 8 of each 16-row tile; of each 32 columns, the
    // eight at 8t.. (tile q's columns 2t and 2t + 1 are 4 (2t) + q and 4 (2t + 1) + q).
    let lane = p.tid % 32;
    let (g, t) = (lane / 4, lane % 4);
    unroll!(mt < TM; 4 => {
        unroll!(half < 2; 2 => {
            let row = p.row0 + p.warp_row + (16 * mt + 8 * half) as u32 + g;
            unroll!(grp < TN / 4; 2 => {
                let col = p.col0 + p.warp_col + (32 * grp) as u32 + 8 * t;
                let d = &acc[mt][4 * grp..4 * grp + 4];
                let (lo, hi) = (2 * half, 2 * half + 1);
                // SAFETY: store4 guards C.
                unsafe {
                    store4(c, (m, n), row, col, Float4::new(d[0][lo], d[1][lo], d[2][lo], d[3][lo]), p.c_vector);
                    store4(c, (m, n), row, col + 4, Float4::new(d[0][hi], d[1][hi], d[2][hi], d[3][hi]), p.c_vector);
                }
            });
        });
    });
}

kernel! {
    #[requires(sm_80)]
    /// tf32, 128 x 128 x 32 (128 threads): TF32 tensor cores. The lesson: the same
    /// tiles and pipeline as the FP32 rungs, but each `mma.sync` does 1024 multiply-adds
    /// for a warp, so shared-memory fragments must be loaded wide (`ldmatrix`, float4)
    /// and without bank conflicts to keep up.
    pub fn sgemm_tf32_128x128x32(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: Tf32Tiling = TF32_128X128X32;
        // SAFETY: the host launches it with T.shared_bytes() of dynamic shared memory.
        let tiles = unsafe { dynamic_shared_array::<f32>(T.stages * T.stage_floats()) };
        // SAFETY: the array holds T.stages stages of the tiling.
        unsafe {
            tf32_gemm::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wm / 16 }, { T.wn / 8 }, { T.stages }, { T.threads }, { T.copy_steps }>(
                (m, n, k), a, b, c, tiles,
            )
        }
    }
}

kernel! {
    #[requires(sm_80)]
    /// tf32, 128 x 256 x 32 (256 threads): the same with eight warps of 64 x 64, one
    /// block per SM and less global traffic per multiply.
    pub fn sgemm_tf32_128x256x32(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: Tf32Tiling = TF32_128X256X32;
        // SAFETY: the host launches it with T.shared_bytes() of dynamic shared memory.
        let tiles = unsafe { dynamic_shared_array::<f32>(T.stages * T.stage_floats()) };
        // SAFETY: the array holds T.stages stages of the tiling.
        unsafe {
            tf32_gemm::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wm / 16 }, { T.wn / 8 }, { T.stages }, { T.threads }, { T.copy_steps }>(
                (m, n, k), a, b, c, tiles,
            )
        }
    }
}
