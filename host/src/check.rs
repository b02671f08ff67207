//! `coalesce check`: every kernel validated at awkward sizes, without timing. Used by
//! the GPU tests and by `scripts/sanitize.sh` under compute-sanitizer.

use serde::{Deserialize, Serialize};

use crate::device::Gpu;
use crate::error::Result;
use crate::experiments::Selection;
use crate::prepared::Prepared;

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

/// Validates every selected variant at every awkward problem of its experiment
/// ([`crate::experiment::Kind::awkward`]).
pub fn run_checks(gpu: &Gpu, selection: &[Selection], seed: u64) -> Result<Vec<CheckRow>> {
    let mut rows = Vec::new();
    for s in selection {
        let exp = s.experiment;
        for (j, problem) in exp.kind.awkward().into_iter().enumerate() {
            let mut prepared = Prepared::new(gpu, exp, problem, seed.wrapping_add(j as u64))?;
            for (i, v) in exp.variants.iter().enumerate() {
                if !s.includes(v.name) {
                    continue;
                }
                // A kernel this GPU cannot run (sm_80 on an older one): one line per
                // variant, not per problem.
                if let Err(why) = gpu.supports(v.kernel) {
                    if j == 0 {
                        eprintln!("{}/{}: {why}", exp.name, v.name);
                    }
                    continue;
                }
                // A shape the copy engine cannot address: that problem's line only.
                if let Err(why) = prepared.applicable(i) {
                    eprintln!("{}/{}: {why}", exp.name, v.name);
                    continue;
                }
                let f = gpu.function(v.kernel)?;
                let check = prepared.check(gpu, i, &f)?;
                rows.push(CheckRow {
                    experiment: exp.name.to_string(),
                    variant: v.name.to_string(),
                    kernel: v.kernel.name.to_string(),
                    problem: problem.label(),
                    validated: check.ok,
                    check: check.detail,
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
        let mark = if r.validated { "ok  " } else { "FAIL" };
        out.push_str(&format!(
            "{mark} {:<10} {:<14} {:<16} {}\n",
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
