//! Tensor cores: warp-wide matrix multiply-accumulate on TF32 (`mma.sync`, sm_80 and
//! later), and the conversion of f32 to TF32 that feeds it.
//!
//! TF32 is f32 with 10 explicit mantissa bits instead of 23 (same sign and exponent):
//! the tensor cores read an operand register's top 19 bits and ignore the 13 below.
//! [`to_tf32`] rounds an f32 for them to nearest, ties away from zero, as
//! `cvt.rna.tf32.f32` does, so each input is off by at most 2^-11 relative;
//! [`mma_m16n8k8_tf32`] multiplies such inputs (each product is exact in f32: 11 x 11
//! significant bits) and accumulates in f32.
//!
//! `mma.sync` is warp-collective: the 32 lanes together hold the three matrices, each
//! lane a fragment in registers at fixed places (the PTX ISA's "Matrix Fragments for
//! mma.m16n8k8", .tf32), with `g = lane / 4` and `t = lane % 4`:
//!
//! ```text
//! A (16 x 8, row-major):  a[0] = A[g][t]    a[1] = A[g + 8][t]  a[2] = A[g][t + 4]  a[3] = A[g + 8][t + 4]
//! B (8 x 8, "col"):       b[0] = B[t][g]    b[1] = B[t + 4][g]
//! C, D (16 x 8):          c[0] = C[g][2t]   c[1] = C[g][2t + 1] c[2] = C[g + 8][2t] c[3] = C[g + 8][2t + 1]
//! ```
//!
//! Every lane of the warp must make the call, with the same control flow. Kernels
//! using it need sm_80: declare them `kernel! { #[requires(sm_80)] ... }`.
//!
//! On the emulator the lanes exchange their fragments ([`super::emu::warp_exchange`])
//! and each computes its four outputs from the layout above, reading each input as the
//! tensor cores do (the 13 low bits dropped) and adding the eight exact products to c
//! in k order, rounding to f32 after each. The hardware's own internal order and
//! rounding of that sum are not specified; the two agree within the error bound
//! products are validated with.

/// A TF32 operand in a 32-bit register, as [`to_tf32`] makes it: only its sign,
/// exponent and 10 high mantissa bits count.
#[derive(Clone, Copy, Debug, Default)]
#[repr(transparent)]
pub struct Tf32(u32);

/// The f32 bits of a TF32 operand that the tensor cores read.
const TF32_BITS: u32 = !0x1fff;

impl Tf32 {
    /// The register's bits, as an instruction operand.
    #[inline(always)]
    pub fn bits(self) -> u32 {
        self.0
    }

    /// The value the tensor cores read: the f32 with the low 13 mantissa bits cleared.
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        f32::from_bits(self.0 & TF32_BITS)
    }
}

/// Rounds `x` to TF32 for [`mma_m16n8k8_tf32`]: to nearest, ties away from zero; past
/// the largest TF32, to infinity; infinities stay.
///
/// It adds half a TF32 unit in the last place (2^12) to the bits and leaves the 13 low
/// bits for the tensor cores to drop: the carry rounds the magnitude up exactly when
/// the dropped part is half a unit or more, which is `cvt.rna.tf32.f32` for every
/// finite and infinite input, in one integer add. (`cvt.rna` itself costs three
/// instructions after ptxas, a finiteness test, a predicated add in place and a mask,
/// and B fragments then need moves into the register pairs `mma` reads; an add can
/// write straight into the pair.) The one
/// difference: a NaN whose payload fills the top mantissa bits wraps to a zero.
#[inline(always)]
pub fn to_tf32(x: f32) -> Tf32 {
    Tf32(x.to_bits().wrapping_add(1 << 12))
}

/// D = A B + C for one 16 x 8 x 8 tile, warp-wide (`mma.sync.aligned.m16n8k8.row.col
/// .f32.tf32.tf32.f32`): this lane's fragments of A (`a`), B (`b`) and C (`c`) in, its
/// fragment of D out, laid out as in the [module docs](self).
#[inline(always)]
pub fn mma_m16n8k8_tf32(a: [Tf32; 4], b: [Tf32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (d0, d1, d2, d3): (f32, f32, f32, f32);
        // SAFETY: registers only. Not `pure`: the instruction is warp-collective, so
        // LLVM must neither drop nor move it into control flow the warp may not share.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};",
                d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
                a0 = in(reg32) a[0].0, a1 = in(reg32) a[1].0, a2 = in(reg32) a[2].0, a3 = in(reg32) a[3].0,
                b0 = in(reg32) b[0].0, b1 = in(reg32) b[1].0,
                c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
                options(nomem, nostack, preserves_flags));
        }
        [d0, d1, d2, d3]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let mut acc = [[c]];
        emulate_tiles(&mut acc, &[a], &[b]);
        acc[0][0]
    }
}

/// A warp's k step of 8 over a grid of mma tiles: tile (i, j) of `acc` (16 x 8) +=
/// A fragment i (16 x 8) times B fragment j (8 x 8), for every i < MT and j < NT: the
/// MT x NT [`mma_m16n8k8_tf32`] a warp tile of 16 MT x 8 NT outputs makes per k step.
///
/// On the GPU it is exactly those instructions, tile by tile; on the emulator the
/// lanes meet once for all of them (one exchange of every fragment) instead of MT x NT
/// times.
#[inline(always)]
pub fn mma_m16n8k8_tf32_tiles<const MT: usize, const NT: usize>(
    acc: &mut [[[f32; 4]; NT]; MT],
    a: &[[Tf32; 4]; MT],
    b: &[[Tf32; 2]; NT],
) {
    // Every index a constant: LLVM leaves a loop nest of asm statements rolled, and
    // would keep the accumulators in local memory to index them.
    #[cfg(target_arch = "nvptx64")]
    {
        const { assert!(MT <= 8 && NT <= 8) };
        macro_rules! each {
            ($i:ident < $n:expr => $body:block) => {
                each!(@ $i, $n, $body, 0 1 2 3 4 5 6 7)
            };
            (@ $i:ident, $n:expr, $body:block, $($k:literal)*) => {
                $(if $k < $n {
                    let $i: usize = $k;
                    $body
                })*
            };
        }
        each!(i < MT => {
            each!(j < NT => {
                acc[i][j] = mma_m16n8k8_tf32(a[i], b[j], acc[i][j]);
            });
        });
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emulate_tiles(acc, a, b);
}

/// The emulator's mma tiles: the lanes exchange their A and B fragments, then each
/// computes its outputs of every tile from the fragment layout.
#[cfg(not(target_arch = "nvptx64"))]
fn emulate_tiles<const MT: usize, const NT: usize>(
    acc: &mut [[[f32; 4]; NT]; MT],
    a: &[[Tf32; 4]; MT],
    b: &[[Tf32; 2]; NT],
) {
    // A lane's share of each m16n8k8: 2 x 16 x 8 x 8 FLOPs over 32 lanes.
    super::emu::count_tensor_flops((MT * NT * 64) as u64);
    // Nothing but addresses comes out of such a launch, and a warp exchange there
    // exchanges nothing.
    if super::emu::addresses_only() {
        return;
    }
    let mut mine = std::vec::Vec::with_capacity(4 * MT + 2 * NT);
    mine.extend(a.iter().flatten().map(|x| x.0));
    mine.extend(b.iter().flatten().map(|x| x.0));
    let all = super::emu::warp_exchange(&mine);
    let lane = super::thread::thread_rank_in_block() % 32;
    let (g, t) = (lane / 4, lane % 4);
    // Lane l's words start at l * words; its A fragment i, then its B fragment j.
    let words = mine.len();
    // A[row][k] of tile i is register (row / 8) + 2 (k / 4) of lane 4 (row % 8) + k % 4;
    // B[k][n] of tile j is register k / 4 of lane 4 n + k % 4.
    let a_at = |i: usize, row: usize, k: usize| {
        Tf32(all[words * (4 * (row % 8) + k % 4) + 4 * i + row / 8 + 2 * (k / 4)]).to_f32()
    };
    let b_at =
        |j: usize, k: usize, n: usize| Tf32(all[words * (4 * n + k % 4) + 4 * MT + 2 * j + k / 4]).to_f32();
    for (i, row_of_tiles) in acc.iter_mut().enumerate() {
        for (j, d) in row_of_tiles.iter_mut().enumerate() {
            for (r, out) in d.iter_mut().enumerate() {
                let (row, col) = (g + 8 * (r / 2), 2 * t + r % 2);
                // The products are exact; each addition rounds to f32.
                *out = (0..8).fold(*out, |sum, k| a_at(i, row, k).mul_add(b_at(j, k, col), sum));
            }
        }
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::gpu::emu::{Dim3, LaunchConfig, Schedule, launch, try_launch};
    use crate::gpu::thread::thread_rank_in_block;
    use std::string::ToString;
    use std::sync::Mutex;
    use std::vec::Vec;

    fn warps(threads: u32, schedule: Schedule) -> LaunchConfig {
        LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(threads),
            schedule,
            ..Default::default()
        }
    }

    #[test]
    fn rounds_to_nearest_ties_away_from_zero() {
        let tf32 = |x: f32| to_tf32(x).to_f32();
        let ulp = 2f32.powi(-10);
        assert_eq!(tf32(1.0), 1.0);
        assert_eq!(tf32(1.0 + ulp), 1.0 + ulp);
        // Below, at and above half an ulp.
        assert_eq!(tf32(1.0 + 0.49 * ulp), 1.0);
        assert_eq!(tf32(1.0 + 0.5 * ulp), 1.0 + ulp, "a tie goes away from zero");
        assert_eq!(tf32(-1.0 - 0.5 * ulp), -1.0 - ulp, "also below zero");
        assert_eq!(tf32(1.0 + 1.5 * ulp), 1.0 + 2.0 * ulp, "not to even");
        assert_eq!(tf32(1.0 + 0.51 * ulp), 1.0 + ulp);
        // The error is at most 2^-11 relative, the bound the validation uses.
        for i in 0..10_000u32 {
            let x = f32::from_bits(0x3f80_0000 + i * 997);
            assert!(((tf32(x) - x) / x).abs() <= 2f32.powi(-11), "{x}");
        }
        // A carry into the exponent; past the largest TF32, infinity; inf and NaN kept.
        assert_eq!(tf32(f32::from_bits(0x3fff_f000)), 2.0);
        assert_eq!(tf32(f32::MAX), f32::INFINITY);
        assert_eq!(tf32(f32::NEG_INFINITY), f32::NEG_INFINITY);
        assert!(tf32(f32::NAN).is_nan());
        assert_eq!(tf32(0.0).to_bits(), 0);
        assert_eq!(tf32(-0.0).to_bits(), 0x8000_0000);
    }

    /// Every lane builds its fragments of A (16 x 8), B (8 x 8) and C from the
    /// layout of the module docs; D must be A B + C element by element, and each lane
    /// must get the elements the layout gives it.
    #[test]
    fn fragments_follow_the_ptx_layout() {
        // Small integers: exact in TF32 and in the f32 sums, so D is exact.
        let a = |r: usize, k: usize| (r * 8 + k) as f32 % 7.0 - 3.0;
        let b = |k: usize, n: usize| (k * 8 + n) as f32 % 5.0 - 2.0;
        let c = |r: usize, n: usize| (r * 8 + n) as f32;
        for schedule in [Schedule::Concurrent, Schedule::Reverse] {
            let out = Mutex::new(Vec::new());
            launch(&warps(32, schedule), || {
                let lane = thread_rank_in_block();
                let (g, t) = (lane / 4, lane % 4);
                let frag_a = [a(g, t), a(g + 8, t), a(g, t + 4), a(g + 8, t + 4)].map(to_tf32);
                let frag_b = [b(t, g), b(t + 4, g)].map(to_tf32);
                let frag_c = [c(g, 2 * t), c(g, 2 * t + 1), c(g + 8, 2 * t), c(g + 8, 2 * t + 1)];
                let d = mma_m16n8k8_tf32(frag_a, frag_b, frag_c);
                out.lock().unwrap().push((lane, d));
            });
            let out = out.into_inner().unwrap();
            assert_eq!(out.len(), 32);
            for (lane, d) in out {
                let (g, t) = (lane / 4, lane % 4);
                let place = [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)];
                for (i, (r, n)) in place.into_iter().enumerate() {
                    let want = (0..8).map(|k| a(r, k) * b(k, n)).sum::<f32>() + c(r, n);
                    assert_eq!(d[i], want, "lane {lane} d[{i}] = D[{r}][{n}] ({schedule:?})");
                }
            }
        }
    }

    /// One call over a grid of 2 x 3 tiles computes what the six single mma calls do,
    /// bit for bit.
    #[test]
    fn a_grid_of_tiles_is_its_single_tiles() {
        let out = Mutex::new(Vec::new());
        launch(&warps(32, Schedule::Concurrent), || {
            let lane = thread_rank_in_block();
            let v = |s: usize| to_tf32((lane * 7 + s * 13) as f32 % 11.0 / 3.0 - 1.5);
            let a: [[Tf32; 4]; 2] = core::array::from_fn(|i| core::array::from_fn(|r| v(4 * i + r)));
            let b: [[Tf32; 2]; 3] = core::array::from_fn(|j| core::array::from_fn(|r| v(20 + 2 * j + r)));
            let mut grid: [[[f32; 4]; 3]; 2] = core::array::from_fn(|i| {
                core::array::from_fn(|j| core::array::from_fn(|r| (i + j + r + lane) as f32))
            });
            let singles: [[[f32; 4]; 3]; 2] =
                core::array::from_fn(|i| core::array::from_fn(|j| mma_m16n8k8_tf32(a[i], b[j], grid[i][j])));
            mma_m16n8k8_tf32_tiles(&mut grid, &a, &b);
            out.lock().unwrap().push((grid, singles));
        });
        for (grid, singles) in out.into_inner().unwrap() {
            assert_eq!(
                grid.map(|r| r.map(|d| d.map(f32::to_bits))),
                singles.map(|r| r.map(|d| d.map(f32::to_bits)))
            );
        }
    }

    /// The tensor cores read only TF32's bits: an unconverted f32 is truncated, a
    /// converted one rounded.
    #[test]
    fn unconverted_inputs_are_truncated() {
        let x = 1.0 + 0.75 * 2f32.powi(-10);
        let out = Mutex::new([0.0f32; 2]);
        launch(&warps(32, Schedule::Concurrent), || {
            let lane = thread_rank_in_block();
            // Only A[0][0] and B[0][0] are non-zero: D[0][0] = A[0][0] B[0][0].
            let one = |v: Tf32| if lane == 0 { v } else { Tf32(0) };
            let raw = mma_m16n8k8_tf32(
                [one(Tf32(x.to_bits())), Tf32(0), Tf32(0), Tf32(0)],
                [one(to_tf32(1.0)), Tf32(0)],
                [0.0; 4],
            );
            let rounded = mma_m16n8k8_tf32(
                [one(to_tf32(x)), Tf32(0), Tf32(0), Tf32(0)],
                [one(to_tf32(1.0)), Tf32(0)],
                [0.0; 4],
            );
            if lane == 0 {
                *out.lock().unwrap() = [raw[0], rounded[0]];
            }
        });
        assert_eq!(*out.lock().unwrap(), [1.0, 1.0 + 2f32.powi(-10)]);
    }

    #[test]
    fn a_partial_warp_cannot_run_a_warp_collective_instruction() {
        let e = try_launch(&warps(48, Schedule::Concurrent), || {
            mma_m16n8k8_tf32([Tf32(0); 4], [Tf32(0); 2], [0.0; 4]);
        })
        .unwrap_err();
        assert!(e.to_string().contains("needs 32 lanes"), "{e}");
    }

    /// A lane that returns early would hang the GPU's warp; the emulator fails the
    /// launch instead, under either kind of schedule.
    #[test]
    fn a_missing_lane_fails_the_launch_instead_of_hanging() {
        for schedule in [Schedule::Concurrent, Schedule::Forward, Schedule::Reverse] {
            let e = try_launch(&warps(64, schedule), || {
                if thread_rank_in_block() == 37 {
                    return;
                }
                mma_m16n8k8_tf32([Tf32(0); 4], [Tf32(0); 2], [0.0; 4]);
            })
            .unwrap_err();
            let e = e.to_string();
            assert!(
                e.contains("warp 1") && e.contains("warp-collective"),
                "{schedule:?}: {e}"
            );
        }
    }

    /// Under a serial schedule a warp that calls the instruction while another reaches
    /// a barrier is named, not run past the barrier (in reverse order warp 1 reaches
    /// the barrier first, and would pass it before warp 0 reached it).
    #[test]
    fn serial_schedules_refuse_warps_that_disagree_on_collective_calls() {
        let e = try_launch(&warps(64, Schedule::Reverse), || {
            if thread_rank_in_block() < 32 {
                mma_m16n8k8_tf32([Tf32(0); 4], [Tf32(0); 2], [0.0; 4]);
            }
            crate::gpu::thread::sync_threads();
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("same barrier and warp-collective calls"), "{e}");
    }
}
