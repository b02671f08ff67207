//! `coalesce check`: every kernel validated at awkward sizes, without timing. Used by
//! the GPU tests and by `scripts/sanitize.sh` under compute-sanitizer.

use serde::{Deserialize, Serialize};

use crate::device::Gpu;
use crate::error::Result;
use crate::experiments::Selection;
use crate::harness::{Params, check_case};

/// Element counts that are not multiples of a warp, a block or a vector.
pub const AWKWARD_SIZES: [u64; 5] = [1, 31, 33, 4095, (1 << 20) + 7];
/// Matrices that are neither square nor multiples of a tile.
pub const AWKWARD_2D: [[usize; 2]; 4] = [[1, 1], [33, 65], [1000, 17], [17, 1000]];
/// Products likewise (m x n x k).
pub const AWKWARD_3D: [[usize; 3]; 4] = [[1, 1, 1], [33, 65, 17], [1000, 17, 33], [17, 33, 1000]];

/// The awkward problems for an experiment of `shape_rank`: shapes for matrix
/// experiments, element counts otherwise.
pub fn awkward(shape_rank: usize, seed: u64) -> Vec<Params> {
    let shaped = |d: &[usize]| Params {
        size: 4,
        shape: Some(d.to_vec()),
        seed,
    };
    match shape_rank {
        2 => AWKWARD_2D.iter().map(|d| shaped(d)).collect(),
        3 => AWKWARD_3D.iter().map(|d| shaped(d)).collect(),
        _ => AWKWARD_SIZES
            .iter()
            .map(|&n| Params::sized(n * 4, seed.wrapping_add(n)))
            .collect(),
    }
}

/// How a problem is described in the output: `33x65` or `4095 elements`.
pub fn describe(p: &Params) -> String {
    match &p.shape {
        Some(d) => d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x"),
        None => format!("{} elements", p.size / 4),
    }
}

/// One validated launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckRow {
    pub experiment: String,
    pub variant: String,
    pub kernel: String,
    pub problem: String,
    pub validated: bool,
    pub check: String,
}

/// Validates every selected variant at every awkward problem of its experiment.
pub fn run_checks(gpu: &Gpu, selection: &[Selection], seed: u64) -> Result<Vec<CheckRow>> {
    let mut rows = Vec::new();
    for s in selection {
        let exp = s.experiment;
        for params in awkward(exp.shape_rank(), seed) {
            let mut prepared = exp.prepare(gpu, &params)?;
            for i in 0..prepared.cases().len() {
                let case = prepared.cases()[i].clone();
                if s.variants.as_ref().is_some_and(|v| !v.contains(&case.variant)) {
                    continue;
                }
                let f = gpu.function(case.kernel)?;
                let v = check_case(gpu, prepared.as_mut(), i, &f)?;
                rows.push(CheckRow {
                    experiment: exp.name().to_string(),
                    variant: case.variant,
                    kernel: case.kernel.to_string(),
                    problem: describe(&params),
                    validated: v.ok,
                    check: v.detail,
                });
            }
        }
    }
    Ok(rows)
}

/// One line per launch, then a summary line.
pub fn render(rows: &[CheckRow]) -> String {
    let mut out = String::new();
    for r in rows {
        let verdict = if r.validated { "ok  " } else { "FAIL" };
        out.push_str(&format!(
            "{verdict} {:<10} {:<14} {:<16} {}\n",
            r.experiment,
            r.variant,
            r.problem,
            if r.validated {
                String::new()
            } else {
                r.check.clone()
            }
        ));
    }
    let failed = rows.iter().filter(|r| !r.validated).count();
    out.push_str(&format!(
        "check: {} launches, {} passed, {failed} failed\n",
        rows.len(),
        rows.len() - failed
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awkward_problems_by_rank() {
        assert_eq!(awkward(0, 1).len(), AWKWARD_SIZES.len());
        assert_eq!(awkward(0, 1)[1].size, 31 * 4);
        assert_eq!(awkward(2, 1)[1].shape.as_deref(), Some(&[33, 65][..]));
        assert_eq!(awkward(3, 1)[1].shape.as_deref(), Some(&[33, 65, 17][..]));
        assert_eq!(describe(&awkward(3, 1)[1]), "33x65x17");
        assert_eq!(describe(&awkward(0, 1)[3]), "4095 elements");
    }

    #[test]
    fn render_counts_failures() {
        let row = |ok| CheckRow {
            experiment: "copy".into(),
            variant: "f32".into(),
            kernel: "copy_f32".into(),
            problem: "31 elements".into(),
            validated: ok,
            check: "exact: 1 of 31 differ".into(),
        };
        let text = render(&[row(true), row(false)]);
        assert!(text.contains("FAIL copy") && text.contains("exact: 1 of 31 differ"));
        assert!(text.ends_with("check: 2 launches, 1 passed, 1 failed\n"));
    }
}
