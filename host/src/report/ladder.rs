//! report.md's "The matmul ladder": every matrix-multiply kernel from the naive one
//! to the best register-blocked rung, each beside its C++ twin, as % of cuBLAS SGEMM
//! FP32 on the same matrices; the TF32 tensor-core rungs as % of cuBLAS in TF32. Where
//! the comparison ran, every figure of a rung is its row there: Rust, C++ and cuBLAS
//! timed in the same rounds (under a power limit a launch's clock depends on what ran
//! before it, so figures from different passes do not divide).

use std::fmt::Write as _;

use super::Results;
use super::markdown_table::table;
use crate::compare::cublas::Math;
use crate::compare::layout::Layout;
use crate::experiment::Arithmetic;

/// The experiments whose variants are the ladder's rungs, in order.
pub const EXPERIMENTS: [&str; 4] = ["matmul", "sgemm", "gemm-bf16", "gemm-f16"];

/// A published kernel a reader can place the rungs against: its share of cuBLAS SGEMM
/// FP32 at 4096³, and the GPU that share was measured on (docs/perf-notes.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peer {
    pub name: &'static str,
    pub pct_of_cublas: f64,
    pub measured_on: &'static str,
}

/// The best published FP32 SIMT ladder's best kernel, run unmodified.
pub const SIMT_PEER: Peer = Peer {
    name: "SGEMM_CUDA's warptiling kernel (Simon Boehm)",
    pct_of_cublas: 71.0,
    measured_on: "an H100",
};

impl Peer {
    /// `SGEMM_CUDA's warptiling kernel (Simon Boehm): 71% on an H100`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {:.0}% on {}",
            self.name, self.pct_of_cublas, self.measured_on
        )
    }
}

/// One rung, both languages.
#[derive(Clone, Debug, PartialEq)]
pub struct Rung {
    pub experiment: String,
    pub variant: String,
    pub kernel: String,
    pub rust_gflop_per_s: f64,
    pub cpp_gflop_per_s: Option<f64>,
    /// Each side as % of cuBLAS in the rung's arithmetic, timed in the same rounds.
    pub rust_pct_of_cublas: Option<f64>,
    pub cpp_pct_of_cublas: Option<f64>,
    pub validated: bool,
    /// FP32, or TF32 tensor cores (compared with cuBLAS in TF32).
    pub arithmetic: Arithmetic,
}

/// The rungs that ran, and cuBLAS on the same matrices where it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Ladder {
    pub rungs: Vec<Rung>,
    /// cuBLAS SGEMM FP32 and TF32, GFLOP/s (the last experiment's that ran them).
    pub cublas_fp32: Option<f64>,
    pub cublas_tf32: Option<f64>,
    /// The operand layouts those lines were fastest in, where the layouts were timed.
    pub cublas_fp32_layout: Option<Layout>,
    pub cublas_tf32_layout: Option<Layout>,
    /// Every rung's % of cuBLAS divides by cuBLAS timed in the same rounds as the
    /// rung, not by the lines above (older results files time cuBLAS alone).
    pub cublas_interleaved: bool,
}

impl Ladder {
    /// The fastest validated Rust rung of `arithmetic`.
    pub fn best_of(&self, arithmetic: Arithmetic) -> Option<&Rung> {
        self.rungs
            .iter()
            .filter(|r| r.validated && r.arithmetic == arithmetic)
            .max_by(|a, b| a.rust_gflop_per_s.total_cmp(&b.rust_gflop_per_s))
    }

    /// The fastest validated FP32 rung: the one set beside the SIMT peer.
    pub fn best(&self) -> Option<&Rung> {
        self.best_of(Arithmetic::Fp32)
    }
}

/// The ladder of `results`, or None when no matrix multiply ran: each rung's row of
/// the comparison where it ran, else its row of the run (GFLOP/s only).
pub fn ladder(results: &Results) -> Option<Ladder> {
    let mut rungs = Vec::new();
    for e in EXPERIMENTS {
        for r in results.run.rows.iter().filter(|r| r.experiment == e) {
            let Some(g) = r.gflop_per_s else { continue };
            let compared = results.compare.as_ref().and_then(|c| {
                c.rows
                    .iter()
                    .find(|x| x.experiment == r.experiment && x.variant == r.variant)
            });
            let rust = compared.map(|x| &x.rust);
            let cpp = compared.and_then(|x| x.cpp.as_ref());
            rungs.push(Rung {
                experiment: r.experiment.clone(),
                variant: r.variant.clone(),
                kernel: r.kernel.clone(),
                rust_gflop_per_s: rust.and_then(|s| s.gflop_per_s).unwrap_or(g),
                cpp_gflop_per_s: cpp.and_then(|c| c.gflop_per_s),
                rust_pct_of_cublas: rust.and_then(|s| s.pct_of_cublas),
                cpp_pct_of_cublas: cpp.and_then(|c| c.pct_of_cublas),
                validated: r.validated && rust.is_none_or(|s| s.validated) && cpp.is_none_or(|c| c.validated),
                arithmetic: crate::experiments::arithmetic(&r.experiment, &r.variant),
            });
        }
    }
    if rungs.is_empty() {
        return None;
    }
    let cublas = |math: Math| {
        results.compare.as_ref().and_then(|c| {
            EXPERIMENTS.iter().rev().find_map(|e| {
                c.cublas_rows
                    .iter()
                    .find(|x| x.experiment == *e && x.math == math && x.validated)
            })
        })
    };
    let (fp32, tf32) = (cublas(Math::Fp32), cublas(Math::Tf32));
    let cublas_interleaved = results
        .compare
        .as_ref()
        .is_some_and(|c| c.cublas_shares_in_same_rounds());
    Some(Ladder {
        rungs,
        cublas_fp32: fp32.map(|x| x.gflop_per_s),
        cublas_tf32: tf32.map(|x| x.gflop_per_s),
        cublas_fp32_layout: fp32.and_then(|x| x.layout),
        cublas_tf32_layout: tf32.and_then(|x| x.layout),
        cublas_interleaved,
    })
}

/// The section.
pub fn render(out: &mut String, results: &Results) {
    let Some(l) = ladder(results) else { return };
    let _ = writeln!(out, "\n## The matmul ladder\n");
    let _ = writeln!(
        out,
        "Every matrix-multiply kernel from the naive one up, each rung one lesson further, \
         beside its idiomatic CUDA C++ twin on the same matrices. Coalescing is the step from \
         naive to remapped (Simon Boehm's worklog: naive 1.3% of cuBLAS, remapped 8.5%, on an \
         RTX A6000); the rungs after it continue toward cuBLAS. For scale, the best published \
         FP32 SIMT kernel, {}, reaches {:.0}% of cuBLAS SGEMM FP32 at 4096³ on {}.\n",
        SIMT_PEER.name, SIMT_PEER.pct_of_cublas, SIMT_PEER.measured_on
    );
    // The fastest operand layout of a line, where the layouts were timed.
    let layout = |l: Option<Layout>| l.map(|l| format!(" (layout {})", l.label())).unwrap_or_default();
    match (l.cublas_fp32, l.cublas_tf32) {
        (Some(f), t) => {
            let tf32 = t
                .map(|t| {
                    format!(
                        "; TF32 tensor cores: {t:.0} GFLOP/s{}",
                        layout(l.cublas_tf32_layout)
                    )
                })
                .unwrap_or_default();
            let f = format!("{f:.0} GFLOP/s{}", layout(l.cublas_fp32_layout));
            let line = if l.cublas_interleaved {
                format!(
                    "cuBLAS SGEMM FP32 on the same matrices, timed alone after the rungs: \
                     {f}{tf32}. Each rung's % of cuBLAS divides by cuBLAS timed in the same \
                     rounds as the rung and its twin: under the GPU's power limit, a launch's \
                     clock depends on what ran before it."
                )
            } else {
                format!(
                    "cuBLAS SGEMM FP32 on the same matrices: {f}{tf32}; each rung's % of cuBLAS \
                     divides by it."
                )
            };
            let _ = writeln!(out, "{line}\n");
        }
        (None, _) => {
            let _ = writeln!(
                out,
                "cuBLAS did not run (`--rust-only`, or not found): GFLOP/s only.\n"
            );
        }
    }
    let dash = || "-".to_string();
    let pct = |p: Option<f64>| p.map(|p| format!("{p:.1}")).unwrap_or_else(dash);
    let tf32 = |r: &Rung| {
        if r.arithmetic == Arithmetic::Tf32 {
            " (TF32)"
        } else {
            ""
        }
    };
    // `explain --profile`'s prediction of each rung, where the report has them.
    let predicted = |r: &Rung| {
        super::predicted::of(results, &r.experiment, &r.variant)
            .and_then(|p| p.gflop_per_s.map(|g| (g, p.bound.clone())))
    };
    let with_predictions = l.rungs.iter().any(|r| predicted(r).is_some());
    let mut header = vec![
        "rung",
        "kernel",
        "Rust GFLOP/s",
        "C++ GFLOP/s",
        "Rust / C++",
        "Rust % of cuBLAS",
        "C++ % of cuBLAS",
        "valid",
    ];
    if with_predictions {
        header.extend(["predicted GFLOP/s", "predicted vs measured", "bound (predicted)"]);
    }
    table(
        out,
        &header,
        l.rungs.iter().map(|r| {
            let mut cells = vec![
                format!("{}/{}{}", r.experiment, r.variant, tf32(r)),
                format!("`{}`", r.kernel),
                format!("{:.0}", r.rust_gflop_per_s),
                r.cpp_gflop_per_s.map(|c| format!("{c:.0}")).unwrap_or_else(dash),
                r.cpp_gflop_per_s
                    .filter(|c| *c > 0.0)
                    .map(|c| format!("{:.3}", r.rust_gflop_per_s / c))
                    .unwrap_or_else(dash),
                pct(r.rust_pct_of_cublas),
                pct(r.cpp_pct_of_cublas),
                if r.validated {
                    "yes".into()
                } else {
                    "**NO**".into()
                },
            ];
            if with_predictions {
                match predicted(r) {
                    Some((g, bound)) => cells.extend([
                        format!("{g:.0}"),
                        format!("{:+.1}%", 100.0 * (g - r.rust_gflop_per_s) / r.rust_gflop_per_s),
                        bound,
                    ]),
                    None => cells.extend([dash(), dash(), dash()]),
                }
            }
            cells
        }),
    );
    if with_predictions {
        let pairs: Vec<f64> = l
            .rungs
            .iter()
            .filter_map(|r| predicted(r).map(|(g, _)| (g - r.rust_gflop_per_s) / r.rust_gflop_per_s))
            .collect();
        let within = pairs
            .iter()
            .filter(|d| d.abs() <= crate::explain::against_run::PRODUCT_TOLERANCE)
            .count();
        let _ = writeln!(
            out,
            "\nPredicted: `coalesce explain --profile` for this GPU (docs/model.md, \"Products\"), \
             from each kernel's instruction mix, its emulated shared-memory and global traffic, \
             its residency and the GPU's calibrated rates; the bound is the unit that sets the \
             time in the model (\"latency\": too few warps to keep it busy; \"drain\": the \
             tensor pipe empties at a block barrier each k step; \"power\": the board's limit \
             lowers the clock). {within} of {} \
             rungs within {:.0}% of measured.",
            pairs.len(),
            100.0 * crate::explain::against_run::PRODUCT_TOLERANCE
        );
    }
    if let Some(b) = l.best() {
        let share = b
            .rust_pct_of_cublas
            .map(|p| format!(", {p:.1}% of cuBLAS SGEMM FP32 ({})", SIMT_PEER.describe()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "\nBest Rust rung: {}/{} at {:.0} GFLOP/s{share}.",
            b.experiment, b.variant, b.rust_gflop_per_s
        );
    }
    if let Some(b) = l.best_of(Arithmetic::Tf32) {
        let share = b
            .rust_pct_of_cublas
            .map(|p| format!(", {p:.1}% of cuBLAS SGEMM TF32"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "\nRungs marked (TF32) multiply on TF32 tensor cores (inputs rounded to 11 significant \
             bits, validated with a bound widened for that): their % is of cuBLAS in TF32. Best: \
             {}/{} at {:.0} GFLOP/s{share}.",
            b.experiment, b.variant, b.rust_gflop_per_s
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn row(variant: &str, g: f64) -> crate::harness::Row {
        crate::harness::Row {
            experiment: "sgemm".into(),
            variant: variant.into(),
            kernel: format!("sgemm_{variant}"),
            size_bytes: 64 << 20,
            size_label: Some("4096x4096x4096".into()),
            useful_bytes: 0,
            flops: Some(1 << 37),
            timing: crate::timing::Timing::from_samples(vec![1.0]),
            gb_per_s: 0.0,
            gflop_per_s: Some(g),
            pct_of_copy: 0.0,
            pct_of_peak: None,
            speedup_over_slowest: 1.0,
            validated: true,
            check: String::new(),
            precision: "FP32".into(),
        }
    }

    pub(crate) fn results(
        rows: Vec<crate::harness::Row>,
        compare: Option<crate::compare::CompareReport>,
    ) -> Results {
        Results {
            elapsed_s: 0.0,
            run: crate::run_table::Run {
                schema: crate::run_table::SCHEMA,
                coalesce_version: "test".into(),
                date: None,
                device: crate::device::DeviceInfo::h100(),
                ptx_arch: "sm_70".into(),
                peak_gb_per_s: None,
                baselines: Vec::new(),
                rows,
            },
            compare,
            predicted: Vec::new(),
            emulated: Vec::new(),
            other_sizes: Vec::new(),
        }
    }

    /// A comparison of `rows` on an H100, with no cuBLAS lines.
    pub(crate) fn comparison(rows: Vec<crate::compare::CompareRow>) -> crate::compare::CompareReport {
        crate::compare::CompareReport {
            schema: crate::run_table::SCHEMA,
            coalesce_version: "test".into(),
            date: None,
            device: crate::device::DeviceInfo::h100(),
            rust_ptx_arch: "sm_70".into(),
            cpp_available: true,
            cpp: String::new(),
            cpp_broken: false,
            cublas: None,
            baselines: Vec::new(),
            cublas_rows: Vec::new(),
            rows,
        }
    }

    /// Where the comparison ran, a rung's every figure is its row there (Rust, C++ and
    /// cuBLAS timed in the same rounds), not the run's; a TF32 rung's share is of cuBLAS
    /// in TF32; the best FP32 rung (the one set beside the SIMT peer) stays the best
    /// FP32 one however fast the tensor cores are.
    #[test]
    fn rungs_take_their_figures_from_the_comparison() {
        let compared = |variant: &str, rust: f64, cpp: f64, cublas: f64| {
            crate::compare::CompareRow::new(
                &row(variant, rust),
                Some(&row(variant, cpp)),
                Some(crate::compare::CublasRate::Interleaved(cublas)),
            )
        };
        let compare = comparison(vec![
            compared("async-128x256x8", 38_000.0, 40_000.0, 47_500.0),
            compared("tf32-128x256x32", 190_000.0, 180_000.0, 380_000.0),
        ]);
        let run = vec![
            row("async-128x256x8", 40_000.0),
            row("tf32-128x256x32", 200_000.0),
            row("interior", 45_000.0),
        ];
        let l = ladder(&results(run, Some(compare))).unwrap();
        let figures = |r: &Rung| {
            (
                r.rust_gflop_per_s,
                r.cpp_gflop_per_s,
                r.rust_pct_of_cublas,
                r.cpp_pct_of_cublas,
            )
        };
        assert_eq!(
            figures(&l.rungs[0]),
            (38_000.0, Some(40_000.0), Some(80.0), Some(40_000.0 / 475.0))
        );
        assert_eq!(l.rungs[1].arithmetic, Arithmetic::Tf32);
        assert_eq!(
            figures(&l.rungs[1]),
            (190_000.0, Some(180_000.0), Some(50.0), Some(180_000.0 / 3800.0))
        );
        // A rung the comparison did not run: the run's GFLOP/s, no share of cuBLAS.
        assert_eq!(figures(&l.rungs[2]), (45_000.0, None, None, None));
        assert_eq!(l.best().map(|r| r.variant.as_str()), Some("interior"));
        assert_eq!(
            l.best_of(Arithmetic::Tf32).map(|r| r.variant.as_str()),
            Some("tf32-128x256x32")
        );
    }

    /// The cuBLAS lines name the operand layout each was fastest in, where the
    /// layouts were timed; an older file's lines name none.
    #[test]
    fn the_cublas_lines_name_their_fastest_layout() {
        let line = |math: Math, g: f64, layout: Option<Layout>| crate::compare::CublasRow {
            experiment: "sgemm".into(),
            math,
            m: 4096,
            n: 4096,
            k: 4096,
            timing: crate::timing::Timing::from_samples(vec![1.0]),
            gflop_per_s: g,
            validated: true,
            check: "ok".into(),
            layout,
        };
        let section = |layouts: [Option<Layout>; 2]| {
            let mut compare = comparison(Vec::new());
            compare.cublas_rows = vec![
                line(Math::Fp32, 50_000.0, layouts[0]),
                line(Math::Tf32, 400_000.0, layouts[1]),
            ];
            let mut out = String::new();
            render(&mut out, &results(vec![row("interior", 45_000.0)], Some(compare)));
            out
        };
        let new = section([Some(Layout::NN), Some(Layout::TN)]);
        assert!(
            new.contains("50000 GFLOP/s (layout NN); TF32 tensor cores: 400000 GFLOP/s (layout TN)"),
            "{new}"
        );
        let old = section([None, None]);
        assert!(
            old.contains("50000 GFLOP/s; TF32 tensor cores: 400000 GFLOP/s") && !old.contains("layout"),
            "{old}"
        );
    }

    /// With predictions, each rung's predicted GFLOP/s, its deviation and its bound sit
    /// beside it, and the section counts the rungs within the tolerance.
    #[test]
    fn predictions_sit_beside_their_rungs() {
        use crate::report::predicted::Predicted;
        let predicted = |variant: &str, g: f64| Predicted {
            experiment: "sgemm".into(),
            variant: variant.into(),
            pct_of_copy: 0.0,
            bound: "issue slots".into(),
            gb_per_s: None,
            ceiling_gb_per_s: None,
            gflop_per_s: Some(g),
            not_modelled: Vec::new(),
            sites: Vec::new(),
        };
        let results = Results {
            // interior within 15% (+5%), banks not (+20%).
            predicted: vec![predicted("interior", 42_000.0), predicted("banks", 36_000.0)],
            ..results(vec![row("interior", 40_000.0), row("banks", 30_000.0)], None)
        };
        let mut out = String::new();
        render(&mut out, &results);
        assert!(
            out.contains("| predicted GFLOP/s | predicted vs measured | bound (predicted) |"),
            "{out}"
        );
        assert!(out.contains("| 42000 | +5.0% | issue slots |"), "{out}");
        assert!(out.contains("| 36000 | +20.0% | issue slots |"), "{out}");
        assert!(out.contains("1 of 2 rungs within 15% of measured"), "{out}");
    }
}
