//! Comparing a kernel's output with its CPU reference: bit for bit, within a
//! tolerance, or (a matrix product) within an error bound that grows with k.

use kernels::fill::mix64;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::elem::Elem;

/// How one output compared with its reference: passed or not, and a one-line account.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    pub ok: bool,
    pub detail: String,
}

/// Tolerance for arithmetic results: |got - want| <= max(abs, rel * |want|).
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    pub rel: f32,
    pub abs: f32,
}

fn compare(
    got: &[f32],
    want: impl Fn(usize) -> f32 + Sync,
    equal: impl Fn(f32, f32) -> bool + Sync,
    how: &str,
) -> Validation {
    let bad = got
        .par_iter()
        .enumerate()
        .filter(|&(i, &g)| !equal(g, want(i)))
        .map(|(i, _)| i);
    let mismatches = bad.clone().count();
    if mismatches == 0 {
        return Validation {
            ok: true,
            detail: format!("{how}: all {} match", got.len()),
        };
    }
    let first = bad.min().unwrap_or(0);
    Validation {
        ok: false,
        detail: format!(
            "{how}: {mismatches} of {} differ; first at [{first}]: got {}, expected {}",
            got.len(),
            got[first],
            want(first)
        ),
    }
}

/// Bit-for-bit equality (copies, transposes): a poisoned NaN never passes.
pub fn exact(got: &[f32], want: impl Fn(usize) -> f32 + Sync) -> Validation {
    compare(got, want, |g, w| g.to_bits() == w.to_bits(), "exact")
}

/// Equality within `tol` (arithmetic); NaN never passes.
pub fn close(got: &[f32], want: impl Fn(usize) -> f32 + Sync, tol: Tolerance) -> Validation {
    compare(
        got,
        want,
        |g, w| approx::relative_eq!(g, w, epsilon = tol.abs, max_relative = tol.rel),
        &format!("rel {:.0e}", tol.rel),
    )
}

/// Combines the checks of several outputs of one launch.
pub fn all(checks: impl IntoIterator<Item = Validation>) -> Validation {
    let checks: Vec<Validation> = checks.into_iter().collect();
    match checks.iter().find(|c| !c.ok) {
        Some(bad) => bad.clone(),
        None => Validation {
            ok: true,
            detail: checks
                .iter()
                .map(|c| c.detail.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        },
    }
}

/// Products with at most this many entries are checked in full; larger ones on a sample.
const FULL_CHECK: usize = 1 << 16;
/// Sampled entries of a large product, each a full dot product.
pub const SAMPLES: usize = 4096;

/// Checks `c` (m x n) against A B computed in f64 at the entries `at`: each entry
/// must be within 2 (k + 2) u sum |a_i b_i| of the exact dot product (u = 2^-24),
/// twice the classical bound for k-term f32 summation, so any reduction order passes
/// and a wrong element does not.
pub fn check_product(
    c: &[f32],
    dims: (usize, usize, usize),
    a: impl Fn(usize) -> f32 + Sync,
    b: impl Fn(usize) -> f32 + Sync,
    at: &[usize],
) -> Validation {
    check_rounded_product(c, dims, a, b, at, 0.0)
}

/// [`check_product`] for a product whose inputs were first rounded to relative
/// precision `r`: each term may be off by (2 r + r^2) |a_i b_i| more, so the bound
/// grows by twice that, 2 (2 r + r^2) sum |a_i b_i|. TF32 keeps 11 significant bits:
/// rounded to nearest (the tensor-core rungs) r = 2^-11, truncated (cuBLAS may) 2^-10.
pub fn check_rounded_product(
    c: &[f32],
    dims: (usize, usize, usize),
    a: impl Fn(usize) -> f32 + Sync,
    b: impl Fn(usize) -> f32 + Sync,
    at: &[usize],
    r: f64,
) -> Validation {
    check_product_bound(
        c,
        dims,
        a,
        b,
        at,
        ProductBound {
            input: r,
            output: Elem::F32,
        },
    )
}

/// How far a product's entries may be from the exact dot product of its inputs' values
/// (`a`, `b`: what the buffers hold, exactly), for any order of summation.
///
/// With u = 2^-24 (f32's unit roundoff), m = sum |a_i b_i| and s the exact dot
/// product, an f32 accumulation over k terms, each input first rounded to relative
/// precision `input` = r, lands within
///
///   g = (2 (k + 2) u + 2 (2 r + r^2)) m
///
/// of s (twice the classical k-term bound, so any reduction order passes). An
/// `output` of f32 is that sum. A 16-bit output rounds it once more, to nearest with
/// p = [`Elem::bits`] significant bits (8 for BF16, 11 for FP16): off by at most
/// 2^-p of the sum's magnitude, at most |s| + g, plus half the type's smallest
/// subnormal t ([`Elem::tiny`]) where the result is tiny. So an entry passes when
///
///   |c - s| <= g + 2^-p (|s| + g) + t.
///
/// A result rounded to 16 bits after each k step, one off by a unit in its last
/// place, or one missing a k term lands outside it (the tests below).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProductBound {
    /// Relative rounding of each input before it is multiplied (0: exact).
    pub input: f64,
    /// What C holds: f32 (the sum itself) or a 16-bit type (the sum rounded once).
    pub output: Elem,
}

impl ProductBound {
    /// The largest |c - s| allowed for an entry of exact value `exact` whose terms sum
    /// to `mag` in magnitude, at reduction length `k`.
    pub fn allowed(&self, k: usize, exact: f64, mag: f64) -> f64 {
        let u = f64::from(f32::EPSILON) / 2.0;
        let r = self.input;
        let g = (2.0 * (k as f64 + 2.0) * u + 2.0 * (2.0 * r + r * r)) * mag;
        match self.output {
            Elem::F32 => g,
            out => g + 2f64.powi(-(out.bits() as i32)) * (exact.abs() + g) + out.tiny(),
        }
    }
}

/// Checks `c` (m x n) against A B computed in f64 at the entries `at`, each within
/// `bound` ([`ProductBound`]).
pub fn check_product_bound(
    c: &[f32],
    (m, n, k): (usize, usize, usize),
    a: impl Fn(usize) -> f32 + Sync,
    b: impl Fn(usize) -> f32 + Sync,
    at: &[usize],
    bound: ProductBound,
) -> Validation {
    let bad: Vec<(usize, f32, f64)> = at
        .par_iter()
        .filter_map(|&idx| {
            let (row, col) = (idx / n, idx % n);
            let (mut exact, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let t = f64::from(a(row * k + kk)) * f64::from(b(kk * n + col));
                exact += t;
                mag += t.abs();
            }
            let got = f64::from(c[idx]);
            let ok = (got - exact).abs() <= bound.allowed(k, exact, mag);
            (!ok).then_some((idx, c[idx], exact))
        })
        .collect();
    let scope = if at.len() == m * n {
        "all".to_string()
    } else {
        format!("{} sampled", at.len())
    };
    let rounded = match bound.output {
        Elem::F32 => String::new(),
        out => format!(", rounded to {}", out.label()),
    };
    match bad.iter().min_by_key(|b| b.0) {
        None => Validation {
            ok: true,
            detail: format!("f64 reference, error bound scaled with k={k}{rounded}: {scope} entries match"),
        },
        Some(&(idx, got, want)) => Validation {
            ok: false,
            detail: format!(
                "f64 reference: {} of {scope} entries differ; first C[{}][{}]: got {got}, expected {want}",
                bad.len(),
                idx / n,
                idx % n
            ),
        },
    }
}

/// The entries to check: all of a small product, else `SAMPLES` spread by a hash
/// (always including the first and last, where guards go wrong).
pub fn sample_entries(total: usize, seed: u64) -> Vec<usize> {
    if total <= FULL_CHECK {
        return (0..total).collect();
    }
    let mut at: Vec<usize> = (0..SAMPLES as u64 - 2)
        .map(|i| (mix64(seed ^ i) % total as u64) as usize)
        .collect();
    at.extend([0, total - 1]);
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels::fill::uniform;

    fn reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).fold(0f32, |acc, kk| a[i * k + kk].mul_add(b[kk * n + j], acc));
            }
        }
        c
    }

    #[test]
    fn f32_product_passes_and_a_wrong_entry_fails() {
        let (m, n, k) = (33, 65, 17);
        let a: Vec<f32> = (0..m * k).map(|i| uniform(1, i as u64)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| uniform(2, i as u64)).collect();
        let mut c = reference(m, n, k, &a, &b);
        let all: Vec<usize> = (0..m * n).collect();
        assert!(check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all).ok);
        c[5 * n + 7] += 1e-3;
        let v = check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all);
        assert!(!v.ok && v.detail.contains("C[5][7]"), "{}", v.detail);
        c[5 * n + 7] = f32::NAN;
        assert!(!check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all).ok);
    }

    #[test]
    fn rounded_inputs_widen_the_bound_just_enough() {
        let (m, n, k) = (8, 8, 64);
        let a: Vec<f32> = (0..m * k).map(|i| uniform(3, i as u64)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| uniform(4, i as u64)).collect();
        // TF32 keeps 10 mantissa bits: truncate the inputs, then multiply in f32.
        let tf32 = |x: f32| f32::from_bits(x.to_bits() & !0x1fff);
        let (ta, tb): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|&x| tf32(x)).collect(),
            b.iter().map(|&x| tf32(x)).collect(),
        );
        let c = reference(m, n, k, &ta, &tb);
        let all: Vec<usize> = (0..m * n).collect();
        let r = 2f64.powi(-10);
        assert!(!check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all).ok);
        assert!(check_rounded_product(&c, (m, n, k), |i| a[i], |i| b[i], &all, r).ok);
        let mut off = c.clone();
        off[9] += 0.5;
        assert!(!check_rounded_product(&off, (m, n, k), |i| a[i], |i| b[i], &all, r).ok);
    }

    /// The tensor-core rungs' bound (r = 2^-11): a product of inputs rounded to TF32
    /// passes it (and, at small k, fails the FP32 bound: the widening is needed),
    /// while one that skips a k step of 8 (a missed mma) or only the last k term (an
    /// off-by-one at the k tail) fails it.
    #[test]
    fn the_tf32_bound_passes_rounded_inputs_and_catches_missing_terms() {
        let r = 2f64.powi(-11);
        // Round to nearest, ties away, to 10 mantissa bits, as kernels::gpu::mma does.
        let tf32 = |x: f32| f32::from_bits((x.to_bits() + 0x1000) & !0x1fff);
        for (m, n, k) in [(33, 65, 17), (17, 33, 1000)] {
            let a: Vec<f32> = (0..m * k).map(|i| uniform(5, i as u64)).collect();
            let b: Vec<f32> = (0..k * n).map(|i| uniform(6, i as u64)).collect();
            let ta: Vec<f32> = a.iter().map(|&x| tf32(x)).collect();
            let tb: Vec<f32> = b.iter().map(|&x| tf32(x)).collect();
            // The product of the rounded inputs, leaving out k terms `skip`.
            let without = |skip: std::ops::Range<usize>| {
                let keep = |i: usize, x: f32| if skip.contains(&(i % k)) { 0.0 } else { x };
                let ta: Vec<f32> = ta.iter().enumerate().map(|(i, &x)| keep(i, x)).collect();
                reference(m, n, k, &ta, &tb)
            };
            let all: Vec<usize> = (0..m * n).collect();
            let check = |c: &[f32], r| check_rounded_product(c, (m, n, k), |i| a[i], |i| b[i], &all, r);
            let good = without(0..0);
            assert!(check(&good, r).ok, "{m}x{n}x{k}: {}", check(&good, r).detail);
            if k < 100 {
                assert!(!check(&good, 0.0).ok, "{m}x{n}x{k} passed the FP32 bound");
            }
            assert!(
                !check(&without(8..16), r).ok,
                "{m}x{n}x{k}: a k step left out passed"
            );
            assert!(
                !check(&without(k - 1..k), r).ok,
                "{m}x{n}x{k}: the last k term left out passed"
            );
        }
    }

    /// 16-bit inputs and output (f32 accumulation): the exact inputs' product summed
    /// in f32 in any order and rounded once passes; rounded after every k step or a k
    /// term short, it fails; at small k, one unit in the last place off fails too, and
    /// the FP32 bound, with no room for the output's rounding, refuses the correct one.
    #[test]
    fn the_16_bit_bound_allows_one_rounding_of_the_output_and_no_more() {
        for elem in [Elem::Bf16, Elem::F16] {
            for (m, n, k) in [(33, 65, 17), (17, 33, 1000)] {
                let a: Vec<f32> = (0..m * k).map(|i| elem.round(uniform(7, i as u64))).collect();
                let b: Vec<f32> = (0..k * n).map(|i| elem.round(uniform(8, i as u64))).collect();
                let product = |step: &dyn Fn(f32) -> f32, skip: usize, reverse: bool| -> Vec<f32> {
                    let mut c = vec![0f32; m * n];
                    for i in 0..m {
                        for j in 0..n {
                            let mut order: Vec<usize> = (0..k).filter(|&kk| kk != skip).collect();
                            if reverse {
                                order.reverse();
                            }
                            let sum = order
                                .into_iter()
                                .fold(0f32, |acc, kk| step(a[i * k + kk].mul_add(b[kk * n + j], acc)));
                            c[i * n + j] = elem.round(sum);
                        }
                    }
                    c
                };
                let all: Vec<usize> = (0..m * n).collect();
                let bound = ProductBound {
                    input: 0.0,
                    output: elem,
                };
                let check = |c: &[f32]| check_product_bound(c, (m, n, k), |i| a[i], |i| b[i], &all, bound);
                let what = format!("{elem:?} {m}x{n}x{k}");
                for reverse in [false, true] {
                    let good = product(&|x| x, usize::MAX, reverse);
                    assert!(check(&good).ok, "{what}: {}", check(&good).detail);
                    assert!(
                        check(&good).detail.contains(elem.label()),
                        "{}",
                        check(&good).detail
                    );
                    // (At large k the f32 accumulation term alone covers FP16's rounding.)
                    let fp32 = check_product(&good, (m, n, k), |i| a[i], |i| b[i], &all);
                    assert!(
                        k > 100 || !fp32.ok,
                        "{what}: the FP32 bound passed a 16-bit result"
                    );
                }
                let every_step = product(&|x| elem.round(x), usize::MAX, false);
                assert!(!check(&every_step).ok, "{what}: rounding every k step passed");
                assert!(
                    !check(&product(&|x| x, k - 1, false)).ok,
                    "{what}: a missing k term passed"
                );
                // One entry a unit in the last place off (at large k the f32
                // accumulation's worst case is wider than a 16-bit unit).
                if k > 100 {
                    continue;
                }
                let mut ulp = product(&|x| x, usize::MAX, false);
                let at = all
                    .iter()
                    .copied()
                    .max_by(|&x, &y| ulp[x].abs().total_cmp(&ulp[y].abs()))
                    .unwrap();
                let step = 2f32.powi(ulp[at].abs().log2().floor() as i32 + 1 - elem.bits() as i32);
                ulp[at] += step.copysign(ulp[at]);
                assert_eq!(elem.round(ulp[at]), ulp[at], "{what}: still a {elem:?} value");
                let v = check(&ulp);
                assert!(
                    !v.ok && v.detail.starts_with("f64 reference: 1 of"),
                    "{what}: {}",
                    v.detail
                );
            }
        }
    }

    #[test]
    fn the_bound_is_the_fp32_one_for_an_f32_output() {
        let fp32 = ProductBound {
            input: 0.0,
            output: Elem::F32,
        };
        let u = f64::from(f32::EPSILON) / 2.0;
        assert_eq!(fp32.allowed(10, 3.0, 4.0), 2.0 * 12.0 * u * 4.0);
        let bf16 = ProductBound {
            output: Elem::Bf16,
            ..fp32
        };
        let g = fp32.allowed(10, 3.0, 4.0);
        assert_eq!(
            bf16.allowed(10, 3.0, 4.0),
            g + (3.0 + g) / 256.0 + Elem::Bf16.tiny()
        );
    }

    #[test]
    fn samples_large_products_and_checks_small_ones_fully() {
        assert_eq!(sample_entries(1000, 0).len(), 1000);
        let s = sample_entries(4096 * 4096, 7);
        assert_eq!(s.len(), SAMPLES);
        assert!(s.contains(&0) && s.contains(&(4096 * 4096 - 1)));
        assert!(s.iter().all(|&i| i < 4096 * 4096));
    }

    #[test]
    fn exact_catches_a_poisoned_element() {
        let mut v: Vec<f32> = (0..100).map(|i| i as f32).collect();
        assert!(exact(&v, |i| i as f32).ok);
        v[42] = f32::NAN;
        let r = exact(&v, |i| i as f32);
        assert!(!r.ok);
        assert!(
            r.detail.contains("1 of 100") && r.detail.contains("[42]"),
            "{}",
            r.detail
        );
    }

    #[test]
    fn close_allows_rounding_but_not_nan() {
        let tol = Tolerance { rel: 1e-6, abs: 1e-6 };
        assert!(close(&[1.0 + 1e-7, 0.0], |i| [1.0, 1e-7][i], tol).ok);
        assert!(!close(&[1.01], |_| 1.0, tol).ok);
        assert!(!close(&[f32::NAN], |_| f32::NAN, tol).ok);
    }

    #[test]
    fn all_reports_the_first_failure() {
        let good = Validation {
            ok: true,
            detail: "a".into(),
        };
        let bad = Validation {
            ok: false,
            detail: "b".into(),
        };
        assert!(all([good.clone(), good.clone()]).ok);
        assert_eq!(all([good, bad.clone()]), bad);
    }
}
