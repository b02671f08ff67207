//! Rung 4, `vec4`: vector loads. Over [`super::tile_2d`], A and B come from global
//! memory as 16-byte loads (where k, n % 4 == 0) and A's tile is stored transposed,
//! so a thread's TM values of A are contiguous in shared memory: both fragments load
//! as `ld.shared.v4`, and C is written with 16-byte stores. Its shared accesses still
//! conflict on banks ([`super::banks`] removes that).

use super::tile_2d::{T2_BK, T2_BM, T2_BN, T2_THREADS, T2_TM, T2_TN};
use super::{at4, block_origin, get4, outer_product, put4, store4};
use crate::gpu::math::opaque;
use crate::gpu::thread::{sync_threads, thread_idx_x};
use crate::gpu::{Float4, Global, GlobalMut, SharedArray};

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
pub(super) unsafe fn fetch_tiles<
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
pub(super) unsafe fn vec4<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const NT: usize, const PITCH: usize, const SPLIT_B: bool, const AL: usize, const BL: usize>(
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
pub(super) const T2_AL: usize = T2_BM * T2_BK / 4 / T2_THREADS;
pub(super) const T2_BL: usize = T2_BK * T2_BN / 4 / T2_THREADS;

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
