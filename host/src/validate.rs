//! Comparing a kernel's output with its CPU reference.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The verdict on one output: passed or not, and a one-line account.
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

#[cfg(test)]
mod tests {
    use super::*;

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
