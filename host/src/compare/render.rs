//! The human table of `coalesce compare`: each kernel's rate in both languages,
//! the ratio, % of copy and, for products, % of cuBLAS.

use std::fmt::Write as _;

use super::{CompareReport, Side};
use crate::columns::{Layout, columns, numbers_from};
use crate::experiment::Arithmetic;
use crate::table;
use crate::units::format_bytes;

/// A side's rate with its unit: GFLOP/s where the work is FLOPs, else GB/s.
pub fn rate(s: &Side) -> String {
    match s.gflop_per_s {
        Some(g) => format!("{g:.0} GFLOP/s"),
        None => format!("{:.1} GB/s", s.gb_per_s),
    }
}

/// The human table.
pub fn render(report: &CompareReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        table::device_line(&report.device, &report.rust_ptx_arch)
    );
    for line in report.toolkit() {
        let _ = writeln!(out, "{line}");
    }
    for b in &report.baselines {
        let _ = writeln!(out, "{}", table::baseline_line(b));
    }
    for c in &report.cublas_rows {
        let _ = writeln!(
            out,
            "{:<10} baseline: {}, {}",
            c.experiment,
            c.describe(),
            if c.validated { "validated" } else { "NOT VALIDATED" }
        );
    }
    let with_cublas = report.rows.iter().any(|r| r.rust.pct_of_cublas.is_some());
    let mut header: Vec<String> = [
        "experiment",
        "variant",
        "size",
        "Rust",
        "C++",
        "Rust/C++",
        "Rust % copy",
        "C++ % copy",
    ]
    .map(String::from)
    .to_vec();
    if with_cublas {
        header.extend(["Rust % cuBLAS".to_string(), "C++ % cuBLAS".to_string()]);
    }
    header.push("valid (Rust/C++)".into());
    let dash = || "-".to_string();
    let yes = |ok: bool| if ok { "yes" } else { "NO" };
    let mut cells = vec![header];
    for r in &report.rows {
        let cpp = r.cpp.as_ref();
        let mut row = vec![
            r.experiment.clone(),
            r.variant.clone(),
            r.size_label.clone().unwrap_or_else(|| format_bytes(r.size_bytes)),
            rate(&r.rust),
            cpp.map(rate).unwrap_or_else(dash),
            r.rust_over_cpp.map(|x| format!("{x:.3}")).unwrap_or_else(dash),
            format!("{:.1}", r.rust.pct_of_copy),
            cpp.map(|c| format!("{:.1}", c.pct_of_copy)).unwrap_or_else(dash),
        ];
        if with_cublas {
            let pct = |s: Option<&Side>| {
                s.and_then(|s| s.pct_of_cublas)
                    .map(|p| format!("{p:.1}"))
                    .unwrap_or_else(dash)
            };
            row.push(pct(Some(&r.rust)));
            row.push(pct(cpp));
        }
        row.push(format!(
            "{}/{}",
            yes(r.rust.validated),
            cpp.map(|c| yes(c.validated)).unwrap_or("-")
        ));
        cells.push(row);
    }
    let right = numbers_from(2, cells[0].len());
    out.push_str(&columns(
        &cells,
        Layout {
            right: &right,
            rule: true,
            ..Layout::default()
        },
    ));
    let tf32: Vec<String> = report
        .rows
        .iter()
        .filter(|r| crate::experiments::arithmetic(&r.experiment, &r.variant) == Arithmetic::Tf32)
        .map(|r| format!("{}/{}", r.experiment, r.variant))
        .collect();
    if with_cublas && !tf32.is_empty() {
        let _ = writeln!(
            out,
            "TF32 tensor cores ({}): % of cuBLAS SGEMM TF32; the other products: of FP32",
            tf32.join(", ")
        );
    }
    for r in &report.rows {
        let sides = [("Rust", Some(&r.rust)), ("C++", r.cpp.as_ref())];
        for (lang, side) in sides {
            if let Some(s) = side.filter(|s| !s.validated) {
                let _ = writeln!(
                    out,
                    "NOT VALIDATED {}/{} ({lang} {}): {}",
                    r.experiment, r.variant, r.kernel, s.check
                );
            }
        }
    }
    for c in report.cublas_rows.iter().filter(|c| !c.validated) {
        let _ = writeln!(
            out,
            "NOT VALIDATED {}/cuBLAS SGEMM {}: {}",
            c.experiment,
            c.math.label(),
            c.check
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::CompareRow;
    use crate::device::DeviceInfo;
    use crate::experiment::{Problem, Work};
    use crate::harness::{self, Case, Row};
    use crate::timing::{Baseline, Timing};
    use crate::units::gb_per_s;
    use crate::validate::Validation;

    fn info() -> DeviceInfo {
        DeviceInfo {
            name: "test".into(),
            ..DeviceInfo::h100()
        }
    }

    fn row(ms: f64, ok: bool) -> Row {
        let case = Case {
            experiment: "copy".into(),
            variant: "f32".into(),
            kernel: "copy_f32".into(),
            problem: Problem::Elements { n: 1 << 28 },
            work: Work::Bytes(2_000_000_000),
        };
        let base = Baseline {
            bytes: 1_000_000_000,
            timing: Timing::from_samples(vec![1.0]),
            gb_per_s: 4000.0,
        };
        let check = Validation {
            ok,
            detail: "exact".into(),
        };
        harness::row(&case, Timing::from_samples(vec![ms]), &base, &info(), check)
    }

    fn side(ms: f64, ok: bool) -> Side {
        Side::of(&row(ms, ok), None)
    }

    /// A one-kernel comparison; `cpp`: the twin's time and check, where it ran.
    fn report(cpp: Option<(f64, bool)>) -> CompareReport {
        let cpp = cpp.map(|(ms, ok)| row(ms, ok));
        CompareReport {
            schema: crate::table::SCHEMA,
            coalesce_version: "0".into(),
            date: None,
            device: info(),
            rust_ptx_arch: "sm_70".into(),
            cpp: "C++ twins: test".into(),
            cpp_available: cpp.is_some(),
            cpp_broken: false,
            cublas: None,
            baselines: Vec::new(),
            cublas_rows: Vec::new(),
            rows: vec![CompareRow::new(&row(1.0, true), cpp.as_ref(), None)],
        }
    }

    #[test]
    fn sides_share_the_harness_arithmetic() {
        let s = side(1.0, true);
        assert!((s.gb_per_s - gb_per_s(2_000_000_000, 1.0)).abs() < 1e-9);
        assert!((s.pct_of_copy - 50.0).abs() < 1e-9);
    }

    #[test]
    fn table_shows_both_sides_and_the_ratio() {
        let t = render(&report(Some((1.25, true))));
        let row = t.lines().find(|l| l.starts_with("copy")).unwrap();
        for want in ["2000.0 GB/s", "1600.0 GB/s", "1.250", "50.0", "40.0", "yes/yes"] {
            assert!(row.contains(want), "{want:?} missing from {row}");
        }
        assert!(t.contains("C++ twins: test"));
    }

    #[test]
    fn without_twins_the_rust_side_still_shows() {
        let r = report(None);
        let t = render(&r);
        let row = t.lines().find(|l| l.starts_with("copy")).unwrap();
        assert!(row.contains("2000.0 GB/s") && row.ends_with("yes/-"), "{row}");
        assert_eq!(r.failures(), 0);
    }

    #[test]
    fn a_failed_twin_counts_and_is_listed() {
        let r = report(Some((1.0, false)));
        assert_eq!(r.failures(), 1);
        let t = render(&r);
        assert!(t.contains("NOT VALIDATED copy/f32 (C++ copy_f32): exact"), "{t}");
        let broken = CompareReport {
            cpp_broken: true,
            ..report(None)
        };
        assert_eq!(broken.failures(), 1);
    }

    #[test]
    fn the_rust_side_reads_as_a_run() {
        let mut r = report(Some((1.25, true)));
        let mut slow = r.rows[0].clone();
        slow.variant = "slow".into();
        slow.rust = side(2.0, false);
        r.rows.push(slow);
        let run = r.rust_run();
        assert_eq!(run.rows.len(), 2);
        assert_eq!(run.rows[0].gb_per_s, r.rows[0].rust.gb_per_s);
        assert_eq!(run.rows[0].pct_of_peak, r.rows[0].rust.pct_of_peak);
        assert!(run.rows[0].pct_of_peak.is_some());
        assert!((run.rows[0].speedup_over_slowest - 2.0).abs() < 1e-9);
        assert_eq!(run.failures(), 1);
        assert_eq!(run.ptx_arch, "sm_70");
    }

    #[test]
    fn report_round_trips_through_json() {
        let r = report(Some((1.1, true)));
        let back: CompareReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
