//! sgemm: the matmul chapter continued. C (m x n) = A (m x k) B (k x n), row-major
//! f32, from the coalesced one-thread-per-element kernel (`matmul_remapped`) toward
//! cuBLAS, one lesson per rung (after siboehm's SGEMM_CUDA, written anew), one file
//! per rung family, each opening with what it adds over the rung before:
//!
//! 1. [`smem`]: stage 32 x 32 tiles of A and B in shared memory; each global element
//!    is loaded once per block instead of once per thread.
//! 2. [`tile_1d`]: each thread computes TM outputs of a column: one B value from
//!    shared memory serves TM fused multiply-adds.
//! 3. [`tile_2d`]: TM x TN outputs per thread from TM + TN shared loads (outer product).
//! 4. [`vec4`]: 16-byte global loads, A's tile stored transposed so a thread's TM
//!    values are contiguous and load as `ld.shared.v4`.
//! 5. [`banks`]: the vec4 rung without its shared-memory bank conflicts.
//! 6. [`warptile`]: a warp owns a WM x WN tile of C, iterated in sub-tiles, so a
//!    warp's shared loads touch few distinct addresses and registers are reused
//!    across them.
//! 7. [`pipeline`]: two shared buffers; the next tile's global loads are in flight in
//!    registers while the current tile is computed, one barrier per tile.
//! 8. [`interior`]: the pipeline with a second, unguarded copy of its loop for the
//!    blocks wholly inside C, and launch bounds that keep two blocks per SM.
//! 9. [`cp_async`]: STAGES shared buffers filled by `cp.async` (global straight to
//!    shared memory, no staging registers, no shared stores): STAGES - 1 tiles in
//!    flight while one is computed. Needs sm_80 (`#[requires(sm_80)]`: the second PTX
//!    module).
//! 10. [`tf32`]: the same pipeline feeding TF32 tensor cores (`mma.sync`), sm_80 too.
//! 11. [`wgmma`]: Hopper (sm_90a, the third PTX module): tiles copied by the copy engine
//!     (TMA) through transaction barriers and multiplied by warpgroups (`wgmma`); then
//!     warp specialisation, clusters that share A's tile, and a persistent kernel whose
//!     C the copy engine stores (`consumer` is where a consumer thread's fragments
//!     come from and its C goes).
//!
//! Tile sizes are const generics of one `#[inline(always)]` body per rung; each
//! `kernel!` entry point instantiates one tuning (PTX entry points cannot be generic)
//! and declares its shared arrays. The `pub const`s of each rung are the one source
//! of truth for both the kernels and the host's launch rules.
//!
//! Every kernel handles any m, n, k: partial tiles are zero-filled when loaded and
//! guarded when stored. Float4 global accesses are used only when they are 16-byte
//! aligned and whole: `k % 4 == 0` for A, `n % 4 == 0` for B and C (device
//! allocations are 256-byte aligned); otherwise the same tile is loaded with guarded
//! scalars. Dimensions and indices are `u32` (the host keeps them below 2^31).
//!
//! This file holds what the rungs share: [`unroll!`], the matrix accesses with their
//! guards, the thread tile's outer product, and [`WarpTiling`], the tunings of the
//! warp-tiled rungs.

use crate::gpu::math::fma;
use crate::gpu::thread::{block_idx_x, block_idx_y};
use crate::gpu::{Float4, Global, GlobalMut};

/// `#pragma unroll` for loops over register arrays: `unroll!(i < N; 8 => { ... })`
/// repeats the body for i = 0, 1, ... 7, each copy under `if i < N` (N a constant, at
/// most the listed count), so every index into a register array is a compile-time
/// constant and the array stays in registers (a loop LLVM leaves rolled would index it
/// dynamically, in local memory).
macro_rules! unroll {
    ($i:ident < $n:expr; 2 => $body:block) => { unroll!(@ $i, $n, $body, 0 1) };
    ($i:ident < $n:expr; 4 => $body:block) => { unroll!(@ $i, $n, $body, 0 1 2 3) };
    ($i:ident < $n:expr; 8 => $body:block) => { unroll!(@ $i, $n, $body, 0 1 2 3 4 5 6 7) };
    ($i:ident < $n:expr; 32 => $body:block) => {
        unroll!(@ $i, $n, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@ $i:ident, $n:expr, $body:block, $($k:literal)*) => {{
        const { assert!($n <= [$($k),*].len(), "unroll!: more iterations than copies") };
        $(
            if $k < $n {
                let $i: usize = $k;
                $body
            }
        )*
    }};
}

pub mod banks;
mod consumer;
pub mod cp_async;
pub mod interior;
pub mod pipeline;
pub mod smem;
pub mod tf32;
pub mod tile_1d;
pub mod tile_2d;
pub mod vec4;
pub mod warptile;
pub mod wgmma;

/// Padding (floats) of each row of the transposed A tile in `banks` and later: keeps
/// rows 16-byte aligned and moves the second half of a warp's transposed stores to
/// the other 16 banks.
pub const PAD: usize = 4;

/// A warp-tiled tuning: block tile BM x BN x BK, warp tile WM x WN walked in WNITER
/// sub-tiles along n (and as many along m as the thread count implies), TM x TN
/// outputs per thread per sub-tile; the k steps of a tile are unrolled UNROLL at a
/// time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpTiling {
    pub bm: usize,
    pub bn: usize,
    pub bk: usize,
    pub wm: usize,
    pub wn: usize,
    pub wniter: usize,
    pub tm: usize,
    pub tn: usize,
    pub threads: usize,
    /// k steps per unrolled group of the tile's compute loop (a divisor of bk, at most
    /// 8): the twin's `#pragma unroll` unrolls all bk, but which unrolling lets ptxas
    /// schedule shared loads ahead of the FMAs without losing occupancy depends on the
    /// tuning (docs/perf-notes.md, "the tile's k steps unrolled per tuning"): 8 for the
    /// 128 x 128 x 16 tiles, 2 where it keeps 128 x 128 x 8 at 128 registers (two blocks
    /// of 256 per SM) and 128 x 64 x 16 at 125 (four blocks of 128).
    pub unroll: usize,
}

impl WarpTiling {
    /// Sub-tiles per warp along m: the warp tile's outputs over what 32 threads
    /// compute per sub-tile pair.
    pub const fn wmiter(&self) -> usize {
        self.wm * self.wn / (32 * self.tm * self.tn * self.wniter)
    }
    /// Whether the tiling is self-consistent: warps cover the block tile, threads
    /// cover each warp sub-tile, float4 loads cover the block's tiles evenly.
    pub const fn is_valid(&self) -> bool {
        let warps = self.threads / 32;
        self.threads.is_multiple_of(32)
            && self.bm.is_multiple_of(self.wm)
            && self.bn.is_multiple_of(self.wn)
            && (self.bm / self.wm) * (self.bn / self.wn) == warps
            && self.wmiter() >= 1
            && self.wm.is_multiple_of(self.wmiter())
            && self.wn.is_multiple_of(self.wniter)
            && (self.wn / self.wniter).is_multiple_of(self.tn)
            && (self.wm / self.wmiter()).is_multiple_of(self.tm)
            && (self.wn / self.wniter / self.tn) * (self.wm / self.wmiter() / self.tm) == 32
            && self.tm.is_multiple_of(4)
            && self.tn.is_multiple_of(4)
            && self.bk.is_multiple_of(4)
            && (self.bm * self.bk / 4).is_multiple_of(self.threads)
            && (self.bk * self.bn / 4).is_multiple_of(self.threads)
            && self.threads.is_multiple_of(self.bk / 4)
            && self.threads.is_multiple_of(self.bn / 4)
            && self.unroll >= 1
            && self.unroll <= 8
            && self.bk.is_multiple_of(self.unroll)
    }
    /// Shared floats of one A tile (transposed, padded) plus one B tile.
    pub const fn stage_floats(&self) -> usize {
        self.bk * (self.bm + PAD) + self.bk * self.bn
    }
}

/// A's element (r, c) of an m x k (or B's of a k x n) row-major matrix, 0 outside it.
#[inline(always)]
unsafe fn at(x: Global<f32>, rows: u32, cols: u32, r: u32, c: u32) -> f32 {
    if r < rows && c < cols {
        // SAFETY: (r, c) is inside the matrix; the host keeps rows * cols < 2^31.
        unsafe { x.read((r * cols + c) as usize) }
    } else {
        0.0
    }
}

/// Elements (r, c..c + 4) of a rows x cols row-major matrix, zeros outside it. With
/// `vector` (cols % 4 == 0, c % 4 == 0) one 16-byte load, whole or nothing; else four
/// guarded scalar loads. Both read through one pointer to (r, c), formed only inside
/// the matrix: the scalars are then its elements 1-3 (immediate offsets 4-12, as nvcc
/// gives the twin's `X[r * cols + c + 1]`), where an index per element (`r * cols + c
/// + 1` in u32, which may wrap) costs its own address and keeps more values live.
#[inline(always)]
unsafe fn at4(x: Global<f32>, rows: u32, cols: u32, r: u32, c: u32, vector: bool) -> Float4 {
    if r >= rows || c >= cols {
        return Float4::default();
    }
    // Offset in floats, then cast: an index in float4s would be shifted right by 2 and
    // scaled by 16 again per load.
    let p = x.offset((r * cols + c) as usize);
    if vector {
        // SAFETY: cols % 4 == 0 and c % 4 == 0, so the float4 is aligned and, as
        // c < cols, wholly inside row r.
        unsafe { p.cast::<Float4>().read(0) }
    } else {
        let tail = |j: u32| {
            if c + j < cols {
                // SAFETY: element c + j of row r, inside the matrix.
                unsafe { p.read(j as usize) }
            } else {
                0.0
            }
        };
        // SAFETY: (r, c) is inside the matrix.
        Float4::new(unsafe { p.read(0) }, tail(1), tail(2), tail(3))
    }
}

/// Stores four outputs (r, c..c + 4) of C: one 16-byte store when n % 4 == 0 and
/// the four are inside C, guarded scalars otherwise.
#[inline(always)]
pub(crate) unsafe fn store4(
    c: GlobalMut<f32>,
    (m, n): (u32, u32),
    r: u32,
    col: u32,
    v: Float4,
    vector: bool,
) {
    if r >= m {
        return;
    }
    if vector && col < n {
        // SAFETY: n % 4 == 0 and col % 4 == 0: aligned and wholly inside row r.
        unsafe { c.cast::<Float4>().write(((r * n + col) / 4) as usize, v) };
    } else {
        let row = r * n;
        // SAFETY (each): r < m and the column < n.
        if col < n {
            unsafe { c.write((row + col) as usize, v.x) };
        }
        if col + 1 < n {
            unsafe { c.write((row + col + 1) as usize, v.y) };
        }
        if col + 2 < n {
            unsafe { c.write((row + col + 2) as usize, v.z) };
        }
        if col + 3 < n {
            unsafe { c.write((row + col + 3) as usize, v.w) };
        }
    }
}

/// The block's first row and column of C.
#[inline(always)]
fn block_origin(bm: usize, bn: usize) -> (u32, u32) {
    (block_idx_y() * bm as u32, block_idx_x() * bn as u32)
}

/// acc[i][j] += x[i] y[j]: one thread tile's outer product, fully unrolled.
#[inline(always)]
fn outer_product<const TM: usize, const TN: usize>(acc: &mut [[f32; TN]; TM], x: &[f32; TM], y: &[f32; TN]) {
    unroll!(i < TM; 8 => {
        unroll!(j < TN; 8 => {
            acc[i][j] = fma(x[i], y[j], acc[i][j]);
        });
    });
}

/// Puts a Float4 into registers `at..at + 4` of a fragment.
#[inline(always)]
fn put4<const N: usize>(regs: &mut [f32; N], at: usize, v: Float4) {
    regs[at] = v.x;
    regs[at + 1] = v.y;
    regs[at + 2] = v.z;
    regs[at + 3] = v.w;
}

/// Registers `at..at + 4` of a row of outputs as a Float4.
#[inline(always)]
fn get4<const N: usize>(regs: &[f32; N], at: usize) -> Float4 {
    Float4::new(regs[at], regs[at + 1], regs[at + 2], regs[at + 3])
}
