//! sgemm: the matmul chapter continued. C (m x n) = A (m x k) B (k x n), row-major
//! f32, from the coalesced one-thread-per-element kernel (`matmul_remapped`) toward
//! cuBLAS, one lesson per rung (after siboehm's SGEMM_CUDA, written anew):
//!
//! 1. `smem`: stage 32 x 32 tiles of A and B in shared memory; each global element is
//!    loaded once per block instead of once per thread.
//! 2. `tile_1d`: each thread computes TM outputs of a column: one B value from shared
//!    memory serves TM fused multiply-adds.
//! 3. `tile_2d`: TM x TN outputs per thread from TM + TN shared loads (outer product).
//! 4. `vec4`: 16-byte global loads, A's tile stored transposed so a thread's TM values
//!    are contiguous and load as `ld.shared.v4`.
//! 5. `banks`: the vec4 rung without its shared-memory bank conflicts.
//! 6. `warptile`: a warp owns a WM x WN tile of C, iterated in sub-tiles, so a warp's
//!    shared loads touch few distinct addresses and registers are reused across them.
//! 7. `pipeline`: two shared buffers; the next tile's global loads are in flight in
//!    registers while the current tile is computed, one barrier per tile.
//! 8. `async`: STAGES shared buffers filled by `cp.async` (global straight to shared
//!    memory, no staging registers, no shared stores): STAGES - 1 tiles in flight
//!    while one is computed. Needs sm_80 (`#[requires(sm_80)]`: the second PTX module).
//!
//! Tile sizes are const generics of one `#[inline(always)]` body per rung; each
//! `kernel!` entry point instantiates one tuning (PTX entry points cannot be generic)
//! and declares its shared arrays. The `pub const`s below are the one source of truth
//! for both the kernels and the host's launch rules.
//!
//! Every kernel handles any m, n, k: partial tiles are zero-filled when loaded and
//! guarded when stored. Float4 global accesses are used only when they are 16-byte
//! aligned and whole: `k % 4 == 0` for A, `n % 4 == 0` for B and C (device
//! allocations are 256-byte aligned); otherwise the same tile is loaded with guarded
//! scalars. Dimensions and indices are `u32` (the host keeps them below 2^31).

use crate::gpu::async_copy::{commit_group, wait_group};
use crate::gpu::math::{fma, opaque};
use crate::gpu::thread::{block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::gpu::{Float4, Global, GlobalMut, SharedArray};

/// `#pragma unroll` for loops over register arrays: `unroll!(i < N; 8 => { ... })`
/// repeats the body for i = 0, 1, ... 7, each copy under `if i < N` (N a constant, at
/// most the listed count), so every index into a register array is a compile-time
/// constant and the array stays in registers (a loop LLVM leaves rolled would index it
/// dynamically, in local memory).
macro_rules! unroll {
    ($i:ident < $n:expr; 2 => $body:block) => { unroll!(@ $i, $n, $body, 0 1) };
    ($i:ident < $n:expr; 4 => $body:block) => { unroll!(@ $i, $n, $body, 0 1 2 3) };
    ($i:ident < $n:expr; 8 => $body:block) => { unroll!(@ $i, $n, $body, 0 1 2 3 4 5 6 7) };
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

/// `smem`: the tile edge; blocks of SMEM_TILE² threads, one per element of C.
pub const SMEM_TILE: usize = 32;

/// `tile_1d`: a BM x BN tile of C per block, k in steps of BK, TM rows per thread.
pub const T1_BM: usize = 64;
pub const T1_BN: usize = 64;
pub const T1_BK: usize = 8;
pub const T1_TM: usize = 8;
/// Threads per block of the 1D-blocked rung.
pub const T1_THREADS: usize = T1_BM * T1_BN / T1_TM;

/// `tile_2d`, `vec4`, `banks`: a BM x BN tile, TM x TN outputs per thread.
pub const T2_BM: usize = 128;
pub const T2_BN: usize = 128;
pub const T2_BK: usize = 8;
pub const T2_TM: usize = 8;
pub const T2_TN: usize = 8;
/// Threads per block of the 2D-blocked rungs.
pub const T2_THREADS: usize = T2_BM * T2_BN / (T2_TM * T2_TN);

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
    /// tuning (measured for issue 12): 8 for the 128 x 128 x 16 tiles, 2 where
    /// it keeps 128 x 128 x 8 at 128 registers (two blocks of 256 per SM) and
    /// 128 x 64 x 16 at 125 (four blocks of 128).
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

/// `async`: shared-memory stages, STAGES - 1 tiles in flight during each compute.
pub const ASYNC_STAGES: usize = 3;

/// `async-128x128x8`: the pipeline-128x128x8 tiling, fed by `cp.async` in 3 stages.
pub const ASYNC_128X128X8: WarpTiling = PIPE_128X128X8;

/// `async-128x256x8`: eight warps of 64 x 64, each in 2 x 2 sub-tiles of 32 x 32 with
/// 4 x 8 outputs per thread (the thread tiles of pipeline-128x128x8-4x8: with 8 x 4
/// ones ptxas issued most fragment loads 1-5 instructions before their FMAs, 39.1
/// against 44.0 TFLOP/s on the H100): 128 outputs per thread as cuBLAS's SIMT kernel,
/// twice the FMAs per shared fragment load and per barrier of 128 x 128 x 8, one block
/// of 256 threads per SM.
pub const ASYNC_128X256X8: WarpTiling = WarpTiling {
    bm: 128,
    bn: 256,
    bk: 8,
    wm: 64,
    wn: 64,
    wniter: 2,
    tm: 4,
    tn: 8,
    threads: 256,
    unroll: 8,
};

const _: () = assert!(
    WARPTILE.is_valid()
        && PIPE_128X128X8.is_valid()
        && PIPE_128X64X16.is_valid()
        && PIPE_128X128X8_4X8.is_valid()
        && ASYNC_128X256X8.is_valid()
        && ASYNC_128X256X8.stage_floats() * ASYNC_STAGES * 4 <= 48 * 1024
);

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

// --- 1. smem ------------------------------------------------------------------------

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

// --- 2. tile-1d ---------------------------------------------------------------------

/// Loads the BM x BK tile of A at (row0, k0) into `a_tile` (row-major, pitch BK) and
/// the BK x BN tile of B at (k0, col0) into `b_tile` (pitch BN), zero-filled outside
/// the matrices, one coalesced scalar per thread per step.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_tiles_scalar<const BM: usize, const BN: usize, const BK: usize, const NT: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    (a_tile, b_tile): (SharedArray<f32>, SharedArray<f32>),
    (row0, col0, k0): (u32, u32, u32),
    tid: u32,
) {
    let (bn, bk) = (BN as u32, BK as u32);
    for i in 0..BM * BK / NT {
        let (r, cc) = (tid / bk + (i * NT / BK) as u32, tid % bk);
        // SAFETY: r < BM, cc < BK; at() guards A.
        unsafe { a_tile.write((r * bk + cc) as usize, at(a, m, k, row0 + r, k0 + cc)) };
    }
    for i in 0..BK * BN / NT {
        let (r, cc) = (tid / bn + (i * NT / BN) as u32, tid % bn);
        // SAFETY: r < BK, cc < BN; at() guards B.
        unsafe { b_tile.write((r * bn + cc) as usize, at(b, k, n, k0 + r, col0 + cc)) };
    }
}

/// 1D register blocking: each thread accumulates TM outputs of one column of C in
/// registers; per k step it reads one B value from shared memory and reuses it TM
/// times (the A values are broadcasts within a warp).
#[inline(always)]
unsafe fn tile_1d<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const NT: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    tiles: (SharedArray<f32>, SharedArray<f32>),
) {
    const { assert!(NT == BM * BN / TM && NT.is_multiple_of(BK) && NT.is_multiple_of(BN)) };
    let (bn, bk, tm) = (BN as u32, BK as u32, TM as u32);
    let tid = thread_idx_x();
    let (row0, col0) = block_origin(BM, BN);
    let (thread_row, thread_col) = (tid / bn, tid % bn);
    let (a_tile, b_tile) = tiles;
    let mut acc = [0.0f32; TM];
    let mut k0 = 0;
    while k0 < k {
        // SAFETY: the tiles hold BM x BK and BK x BN floats.
        unsafe { load_tiles_scalar::<BM, BN, BK, NT>((m, n, k), a, b, tiles, (row0, col0, k0), tid) };
        sync_threads();
        for dot in 0..bk {
            // SAFETY: in the tiles; written before the barrier.
            let bv = unsafe { b_tile.read((dot * bn + thread_col) as usize) };
            unroll!(i < TM; 8 => {
                let r = thread_row * tm + i as u32;
                // SAFETY: r < BM, dot < BK.
                acc[i] = fma(unsafe { a_tile.read((r * bk + dot) as usize) }, bv, acc[i]);
            });
        }
        sync_threads();
        k0 += bk;
    }
    let col = col0 + thread_col;
    unroll!(i < TM; 8 => {
        let row = row0 + thread_row * tm + i as u32;
        if row < m && col < n {
            // SAFETY: row < m, col < n.
            unsafe { c.write((row * n + col) as usize, acc[i]) };
        }
    });
}

kernel! {
    /// tile-1d: 64 x 64 tiles, k steps of 8, 512 threads each computing 8 outputs of
    /// a column of C. Global loads as in smem (coalesced scalars).
    pub fn sgemm_tile_1d(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_T1_A: [f32; T1_BM * T1_BK]];
        let b_tile = shared_array![COALESCE_SGEMM_T1_B: [f32; T1_BK * T1_BN]];
        // SAFETY: the tiles have the sizes tile_1d expects.
        unsafe { tile_1d::<T1_BM, T1_BN, T1_BK, T1_TM, T1_THREADS>((m, n, k), a, b, c, (a_tile, b_tile)) }
    }
}

// --- 3. tile-2d ---------------------------------------------------------------------

/// 2D register blocking: each thread computes a TM x TN block of C as a sum of outer
/// products, loading TM values of A and TN of B from shared memory per k step for
/// TM·TN fused multiply-adds.
#[inline(always)]
#[rustfmt::skip]
unsafe fn tile_2d<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const NT: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    tiles: (SharedArray<f32>, SharedArray<f32>),
) {
    const { assert!(NT == BM * BN / (TM * TN) && NT.is_multiple_of(BK) && NT.is_multiple_of(BN)) };
    let (bn, bk, tm, tn) = (BN as u32, BK as u32, TM as u32, TN as u32);
    let tid = thread_idx_x();
    let (row0, col0) = block_origin(BM, BN);
    let (thread_row, thread_col) = (tid / (bn / tn), tid % (bn / tn));
    let (a_tile, b_tile) = tiles;
    let mut acc = [[0.0f32; TN]; TM];
    let (mut reg_m, mut reg_n) = ([0.0f32; TM], [0.0f32; TN]);
    let mut k0 = 0;
    while k0 < k {
        // SAFETY: the tiles hold BM x BK and BK x BN floats.
        unsafe { load_tiles_scalar::<BM, BN, BK, NT>((m, n, k), a, b, tiles, (row0, col0, k0), tid) };
        sync_threads();
        for dot in 0..bk {
            unroll!(i < TM; 8 => {
                // SAFETY: row < BM, dot < BK; written before the barrier.
                reg_m[i] = unsafe { a_tile.read(((thread_row * tm + i as u32) * bk + dot) as usize) };
            });
            unroll!(j < TN; 8 => {
                // SAFETY: dot < BK, column < BN.
                reg_n[j] = unsafe { b_tile.read((dot * bn + thread_col * tn + j as u32) as usize) };
            });
            outer_product(&mut acc, &reg_m, &reg_n);
        }
        sync_threads();
        k0 += bk;
    }
    unroll!(i < TM; 8 => {
        let row = row0 + thread_row * tm + i as u32;
        unroll!(j < TN; 8 => {
            let col = col0 + thread_col * tn + j as u32;
            if row < m && col < n {
                // SAFETY: row < m, col < n.
                unsafe { c.write((row * n + col) as usize, acc[i][j]) };
            }
        });
    });
}

kernel! {
    /// tile-2d: 128 x 128 tiles, k steps of 8, 256 threads of 8 x 8 outputs each.
    pub fn sgemm_tile_2d(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_T2_A: [f32; T2_BM * T2_BK]];
        let b_tile = shared_array![COALESCE_SGEMM_T2_B: [f32; T2_BK * T2_BN]];
        // SAFETY: the tiles have the sizes tile_2d expects.
        unsafe {
            tile_2d::<T2_BM, T2_BN, T2_BK, T2_TM, T2_TN, T2_THREADS>((m, n, k), a, b, c, (a_tile, b_tile))
        }
    }
}

// --- 4. vec4 and 5. banks -----------------------------------------------------------

/// Loads A's BM x BK tile transposed (element (r, c) at `c * PITCH + r`) and B's BK x
/// BN tile (pitch BN) with float4 global loads where aligned (`vector`), guarded
/// scalars otherwise; each thread's float4s come back in registers, first A's then
/// B's, for [`store_tiles`] (the pipeline rung stores them one tile later).
///
/// With `WHOLE` (the interior rung) every load is one unguarded float4: the caller
/// has checked that the block's BM rows of A and BN columns of B lie inside the
/// matrices, that k % BK == 0 (so every k tile is full and k % 4 == 0) and that
/// n % 4 == 0.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fetch_tiles<
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const NT: usize,
    const AL: usize,
    const BL: usize,
    const WHOLE: bool,
>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    (row0, col0, k0): (u32, u32, u32),
    tid: u32,
    (a_vector, b_vector): (bool, bool),
) -> ([Float4; AL], [Float4; BL]) {
    const {
        assert!(
            AL * NT * 4 == BM * BK
                && BL * NT * 4 == BK * BN
                && NT.is_multiple_of(BK / 4)
                && NT.is_multiple_of(BN / 4)
        )
    };
    let (bk4, bn4) = ((BK / 4) as u32, (BN / 4) as u32);
    let a_at = |i: usize| (row0 + tid / bk4 + (i * NT / (BK / 4)) as u32, k0 + tid % bk4 * 4);
    let b_at = |i: usize| (k0 + tid / bn4 + (i * NT / (BN / 4)) as u32, col0 + tid % bn4 * 4);
    if WHOLE {
        let mut av = [Float4::default(); AL];
        let mut bv = [Float4::default(); BL];
        unroll!(i < AL; 8 => {
            let (r, c) = a_at(i);
            // SAFETY (WHOLE): row r < m, columns c..c + 3 < k (full tiles), aligned as
            // k % 4 == 0 and c % 4 == 0.
            av[i] = unsafe { a.cast::<Float4>().read(((r * k + c) / 4) as usize) };
        });
        unroll!(i < BL; 8 => {
            let (r, c) = b_at(i);
            // SAFETY (WHOLE): row r < k, columns c..c + 3 < n, aligned as n % 4 == 0
            // and c % 4 == 0.
            bv[i] = unsafe { b.cast::<Float4>().read(((r * n + c) / 4) as usize) };
        });
        return (av, bv);
    }
    // SAFETY: at4 guards both matrices.
    unsafe {
        (
            guarded_loads(a, (m, k), a_at, a_vector),
            guarded_loads(b, (k, n), b_at, b_vector),
        )
    }
}

/// N float4s of a rows x cols matrix at `at(i)` = (row, column), through [`at4`] with
/// one test of `vector` for all N, not one per load: a tile's loads of a matrix are
/// then one block of float4 loads, or one of scalars.
#[inline(always)]
unsafe fn guarded_loads<const N: usize>(
    x: Global<f32>,
    (rows, cols): (u32, u32),
    at: impl Fn(usize) -> (u32, u32),
    vector: bool,
) -> [Float4; N] {
    let mut v = [Float4::default(); N];
    if vector {
        unroll!(i < N; 8 => {
            let (r, c) = at(i);
            // SAFETY: at4 guards the matrix.
            v[i] = unsafe { at4(x, rows, cols, r, c, true) };
        });
    } else {
        unroll!(i < N; 8 => {
            let (r, c) = at(i);
            // SAFETY: at4 guards the matrix.
            v[i] = unsafe { at4(x, rows, cols, r, c, false) };
        });
    }
    v
}

/// Stores what [`fetch_tiles`] loaded: A transposed (four scalar stores per float4,
/// rows PITCH floats apart), B as one `st.shared.v4` per float4.
#[inline(always)]
#[rustfmt::skip]
unsafe fn store_tiles<const BM: usize, const BN: usize, const BK: usize, const NT: usize, const PITCH: usize, const AL: usize, const BL: usize>(
    (a_tile, b_tile): (SharedArray<f32>, SharedArray<f32>),
    (av, bv): ([Float4; AL], [Float4; BL]),
    tid: u32,
) {
    let (bk4, bn4, pitch, bn) = ((BK / 4) as u32, (BN / 4) as u32, PITCH as u32, BN as u32);
    unroll!(i < AL; 8 => {
        let (r, cc) = (tid / bk4 + (i * NT / (BK / 4)) as u32, tid % bk4 * 4);
        let v = av[i];
        // SAFETY: cc + 3 < BK, r < BM <= PITCH.
        unsafe {
            a_tile.write((cc * pitch + r) as usize, v.x);
            a_tile.write(((cc + 1) * pitch + r) as usize, v.y);
            a_tile.write(((cc + 2) * pitch + r) as usize, v.z);
            a_tile.write(((cc + 3) * pitch + r) as usize, v.w);
        }
    });
    unroll!(i < BL; 8 => {
        let (r, cc) = (tid / bn4 + (i * NT / (BN / 4)) as u32, tid % bn4 * 4);
        // SAFETY: r < BK, cc + 4 <= BN, cc % 4 == 0.
        unsafe { b_tile.write4((r * bn + cc) as usize, bv[i]) };
    });
}

/// Float4 loads and a transposed A tile, 2D register blocking as in tile-2d. The
/// thread's TM values of A are now contiguous in shared memory (a column of the
/// transposed tile), so A and B fragments both load as `ld.shared.v4`.
///
/// With `SPLIT_B` (the banks rung) a thread's TN columns are TN/4 float4s BN/(TN/4)
/// apart instead of TN adjacent ones: a quarter-warp's 8 float4 loads then cover 128
/// consecutive bytes, all 32 banks once, where adjacent groups of TN = 8 (32 bytes per
/// thread) put lanes 0 and 4 on the same banks: a 2-way conflict on every B load.
/// PITCH = BM + PAD does the same for the transposed A stores.
#[inline(always)]
#[rustfmt::skip]
unsafe fn vec4<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const NT: usize, const PITCH: usize, const SPLIT_B: bool, const AL: usize, const BL: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    tiles: (SharedArray<f32>, SharedArray<f32>),
) {
    const { assert!(NT == BM * BN / (TM * TN) && TM.is_multiple_of(4) && TN.is_multiple_of(4) && PITCH.is_multiple_of(4) && PITCH >= BM) };
    let (bn, bk, tm, tn, pitch) = (BN as u32, BK as u32, TM as u32, TN as u32, PITCH as u32);
    let tid = thread_idx_x();
    let (row0, col0) = block_origin(BM, BN);
    let (thread_row, thread_col) = (tid / (bn / tn), tid % (bn / tn));
    // B's column of a thread's float4 group g: adjacent groups, or groups spread.
    let b_col = |g: u32| if SPLIT_B { g * (bn / (tn / 4)) + thread_col * 4 } else { thread_col * tn + g * 4 };
    let (a_vector, b_vector) = (k % 4 == 0, n % 4 == 0);
    let (a_tile, b_tile) = tiles;
    let mut acc = [[0.0f32; TN]; TM];
    let (mut reg_m, mut reg_n) = ([0.0f32; TM], [0.0f32; TN]);
    let mut k0 = 0;
    while k0 < k {
        // k0 through `opaque`: the tile's addresses are then computed from it as the
        // twin's are, (row * cols + col) per tile, instead of LLVM's B offset stepped
        // by 8n and A's row * k + column hoisted: two fewer values live through the
        // unrolled k steps, which ptxas spends on loading fragments ahead.
        // SAFETY: the tiles hold BK x PITCH and BK x BN floats.
        unsafe {
            let v = fetch_tiles::<BM, BN, BK, NT, AL, BL, false>((m, n, k), a, b, (row0, col0, opaque(k0)), tid, (a_vector, b_vector));
            store_tiles::<BM, BN, BK, NT, PITCH, AL, BL>(tiles, v, tid);
        }
        sync_threads();
        // All BK k steps unrolled (the twin's `#pragma unroll`); LLVM alone unrolls by 4.
        unroll!(dot < BK; 8 => {
            let dot = dot as u32;
            unroll!(i < TM / 4; 4 => {
                // SAFETY: aligned (PITCH, TM multiples of 4) and in the tile; written before the barrier.
                let v = unsafe { a_tile.read4((dot * pitch + thread_row * tm + 4 * i as u32) as usize) };
                put4(&mut reg_m, 4 * i, v);
            });
            unroll!(g < TN / 4; 4 => {
                // SAFETY: aligned and in the tile.
                let v = unsafe { b_tile.read4((dot * bn + b_col(g as u32)) as usize) };
                put4(&mut reg_n, 4 * g, v);
            });
            outer_product(&mut acc, &reg_m, &reg_n);
        });
        sync_threads();
        k0 += bk;
    }
    unroll!(i < TM; 8 => {
        let row = row0 + thread_row * tm + i as u32;
        unroll!(g < TN / 4; 4 => {
            // SAFETY: store4 guards C.
            unsafe { store4(c, (m, n), row, col0 + b_col(g as u32), get4(&acc[i], 4 * g), b_vector) };
        });
    });
}

/// Float4 loads each thread makes per tile of the 2D-blocked rungs (A, B).
const T2_AL: usize = T2_BM * T2_BK / 4 / T2_THREADS;
const T2_BL: usize = T2_BK * T2_BN / 4 / T2_THREADS;

kernel! {
    /// vec4: tile-2d with 16-byte global loads of A and B (where k, n % 4 == 0) and
    /// A's tile transposed, so both fragments load as `ld.shared.v4`; C is written
    /// with 16-byte stores. Bank conflicts remain (see banks).
    pub fn sgemm_vec4(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_VEC4_A: [f32; T2_BK * T2_BM]];
        let b_tile = shared_array![COALESCE_SGEMM_VEC4_B: [f32; T2_BK * T2_BN]];
        // SAFETY: the tiles have the sizes vec4 expects at PITCH = BM.
        unsafe {
            vec4::<T2_BM, T2_BN, T2_BK, T2_TM, T2_TN, T2_THREADS, T2_BM, false, T2_AL, T2_BL>(
                (m, n, k), a, b, c, (a_tile, b_tile),
            )
        }
    }
}

kernel! {
    /// banks: vec4 without bank conflicts: each thread's 8 columns of B are two
    /// float4s 64 columns apart (a quarter-warp reads 128 contiguous bytes), and A's
    /// transposed tile rows are padded by 4 floats (the transposed stores of a warp's
    /// two k-columns land on different banks).
    pub fn sgemm_banks(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let a_tile = shared_array![COALESCE_SGEMM_BANKS_A: [f32; T2_BK * (T2_BM + PAD)]];
        let b_tile = shared_array![COALESCE_SGEMM_BANKS_B: [f32; T2_BK * T2_BN]];
        // SAFETY: the tiles have the sizes vec4 expects at PITCH = BM + PAD.
        unsafe {
            vec4::<T2_BM, T2_BN, T2_BK, T2_TM, T2_TN, T2_THREADS, { T2_BM + PAD }, true, T2_AL, T2_BL>(
                (m, n, k), a, b, c, (a_tile, b_tile),
            )
        }
    }
}

// --- 6. warptile and 7. pipeline ------------------------------------------------------

/// Where a thread's outputs lie in a warp-tiled block: the geometry [`warptile`] and
/// [`async_warptile`] share.
struct WarpPlace {
    /// The block's first row and column of C.
    row0: u32,
    col0: u32,
    /// This thread's first row in A's tile (a column of the transposed tile) and
    /// column in B's, for sub-tile (0, 0).
    a_base: u32,
    b_base: u32,
    /// The sub-tiles' extents, the transposed A tile's row pitch, B's (BN).
    wsubm: u32,
    wsubn: u32,
    pitch: u32,
    bn: u32,
}

impl WarpPlace {
    /// Warp w owns a WM x WN tile of the block's BM x BN, walked as WMITER x WNITER
    /// sub-tiles; within a sub-tile its lanes form a grid of TM x TN thread tiles.
    #[inline(always)]
    #[rustfmt::skip]
    fn new<const BM: usize, const BN: usize, const WM: usize, const WN: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize>() -> WarpPlace {
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
unsafe fn compute_stage<const BK: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize, const UNROLL: usize>(
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
unsafe fn store_c<const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize>(
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
unsafe fn warptile<const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize, const NT: usize, const AL: usize, const BL: usize, const DOUBLE: bool, const UNROLL: usize, const WHOLE: bool>(
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
const fn loads(t: WarpTiling) -> (usize, usize) {
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

// --- 8. async ---------------------------------------------------------------------------
/// Multi-stage `cp.async` pipelining: the warp-tiled compute of [`warptile`], fed by
/// asynchronous copies from global straight into STAGES shared buffers, so no
/// registers hold a tile in transit and no shared stores are issued: A's tile goes in
/// transposed by 4-byte copies (`cp.async.ca`, consecutive lanes on consecutive k of
/// a row: whole sectors), B's by 16-byte copies (`cp.async.cg`), or 4-byte ones where
/// n % 4 != 0. Elements outside the matrices are zero-filled by the copies themselves.
///
/// Tiles 0..STAGES - 1 are issued up front, one commit group each; at tile t a thread
/// waits until at most STAGES - 2 groups are in flight (its copies of tile t have
/// landed), and the barrier then makes everyone's copies visible and ends everyone's
/// reads of tile t - 1, whose stage tile t + STAGES - 1 is then issued into: one
/// barrier per tile. Every thread commits every iteration, empty groups included, so
/// the counts agree.
#[inline(always)]
#[rustfmt::skip]
unsafe fn async_warptile<const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize, const WMITER: usize, const WNITER: usize, const TM: usize, const TN: usize, const NT: usize, const STAGES: usize, const UNROLL: usize>(
    (m, n, k): (u32, u32, u32),
    a: Global<f32>,
    b: Global<f32>,
    c: GlobalMut<f32>,
    (a_tiles, b_tiles): (SharedArray<f32>, SharedArray<f32>),
) {
    const {
        assert!(
            NT == BM * BN / (WMITER * WNITER * TM * TN)
                && (BM * BK).is_multiple_of(NT)
                && NT.is_multiple_of(BK)
                && (BK * BN / 4).is_multiple_of(NT)
                && NT.is_multiple_of(BN / 4)
                && STAGES >= 2
        )
    };
    let w = WarpPlace::new::<BM, BN, WM, WN, WMITER, WNITER, TM, TN>();
    let (pitch, bn, bk, bn4) = (w.pitch, BN as u32, BK as u32, (BN / 4) as u32);
    let tid = thread_idx_x();
    let (row0, col0) = (w.row0, w.col0);
    let b_vector = n % 4 == 0;
    let (a_stage, b_stage) = (bk * pitch, bk * bn);
    let mut acc = [[[[0.0f32; TN]; TM]; WNITER]; WMITER];
    // Issues the copies of the tile at k0 into stage s.
    let issue = |s: u32, k0: u32| {
        // Per thread per tile: BM·BK/NT 4-byte copies of A, BK·BN/4/NT 16-byte ones of B.
        unroll!(i < BM * BK / NT; 8 => {
            let (r, cc) = (tid / bk + (i * NT / BK) as u32, tid % bk);
            let (row, col) = (row0 + r, k0 + cc);
            let src = if row < m && col < k { Some((row * k + col) as usize) } else { None };
            // SAFETY: r < BM <= pitch, cc < BK: inside stage s; src inside A.
            unsafe { a_tiles.copy_async((s * a_stage + cc * pitch + r) as usize, a, src) };
        });
        unroll!(i < BK * BN / 4 / NT; 8 => {
            let (r, cc) = (tid / bn4 + (i * NT / (BN / 4)) as u32, tid % bn4 * 4);
            let (row, col) = (k0 + r, col0 + cc);
            let at = s * b_stage + r * bn + cc;
            if b_vector {
                // n % 4 == 0 and col % 4 == 0: the four are aligned and all inside B or none.
                let src = if row < k && col < n { Some((row * n + col) as usize) } else { None };
                // SAFETY: r < BK, cc + 4 <= BN, aligned: inside stage s.
                unsafe { b_tiles.copy4_async(at as usize, b, src) };
            } else {
                unroll!(q < 4; 4 => {
                    let col = col + q as u32;
                    let src = if row < k && col < n { Some((row * n + col) as usize) } else { None };
                    // SAFETY: inside stage s; src inside B.
                    unsafe { b_tiles.copy_async((at + q as u32) as usize, b, src) };
                });
            }
        });
    };
    let tiles = k.div_ceil(bk);
    let stages = STAGES as u32;
    for t in 0..stages - 1 {
        if t < tiles {
            issue(t, t * bk);
        }
        commit_group();
    }
    // The stage tile t is read from, and the one tile t + STAGES - 1 is written to.
    let (mut read, mut write) = (0u32, stages - 1);
    for t in 0..tiles {
        wait_for_oldest::<STAGES>();
        sync_threads();
        if t + stages - 1 < tiles {
            issue(write, (t + stages - 1) * bk);
        }
        commit_group();
        // SAFETY: tile t landed in stage `read` before the barrier above.
        unsafe { compute_stage::<BK, WMITER, WNITER, TM, TN, UNROLL>(&mut acc, (a_tiles, b_tiles), (read * a_stage, read * b_stage), &w) };
        read = if read + 1 == stages { 0 } else { read + 1 };
        write = if write + 1 == stages { 0 } else { write + 1 };
    }
    // SAFETY: store_c guards C.
    unsafe { store_c(c, (m, n), &acc, &w, b_vector) };
}

/// `wait_group::<{ STAGES - 2 }>()`: all but the STAGES - 2 newest groups landed
/// (a generic function cannot compute a const argument, so the few depths are spelled).
#[inline(always)]
pub(crate) fn wait_for_oldest<const STAGES: usize>() {
    const { assert!(STAGES >= 2 && STAGES <= 5) };
    match STAGES {
        2 => wait_group::<0>(),
        3 => wait_group::<1>(),
        4 => wait_group::<2>(),
        _ => wait_group::<3>(),
    }
}

kernel! {
    #[requires(sm_80)]
    /// async, 128 x 128 x 8 (256 threads, 64 outputs each): pipeline-128x128x8's tiles
    /// in 3 shared stages filled by `cp.async`, two tiles in flight while one is computed.
    pub fn sgemm_async_128x128x8(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = ASYNC_128X128X8;
        let a_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X128X8_A: [f32; ASYNC_STAGES * ASYNC_128X128X8.bk * (ASYNC_128X128X8.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X128X8_B: [f32; ASYNC_STAGES * ASYNC_128X128X8.bk * ASYNC_128X128X8.bn]];
        // SAFETY: the arrays hold ASYNC_STAGES stages of the tiling's tiles.
        unsafe {
            async_warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, ASYNC_STAGES, { T.unroll }>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}

kernel! {
    #[requires(sm_80)]
    /// async, 128 x 256 x 8 (256 threads, 128 outputs each): warps of 64 x 64 in 4 x 8
    /// thread tiles, twice the work per fragment load and per barrier, 3 stages of
    /// `cp.async`.
    pub fn sgemm_async_128x256x8(m: u32, n: u32, k: u32, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        const T: WarpTiling = ASYNC_128X256X8;
        let a_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X256X8_A: [f32; ASYNC_STAGES * ASYNC_128X256X8.bk * (ASYNC_128X256X8.bm + PAD)]];
        let b_tiles = shared_array![COALESCE_SGEMM_ASYNC_128X256X8_B: [f32; ASYNC_STAGES * ASYNC_128X256X8.bk * ASYNC_128X256X8.bn]];
        // SAFETY: the arrays hold ASYNC_STAGES stages of the tiling's tiles.
        unsafe {
            async_warptile::<{ T.bm }, { T.bn }, { T.bk }, { T.wm }, { T.wn }, { T.wmiter() }, { T.wniter }, { T.tm }, { T.tn }, { T.threads }, ASYNC_STAGES, { T.unroll }>(
                (m, n, k), a, b, c, (a_tiles, b_tiles),
            )
        }
    }
}
