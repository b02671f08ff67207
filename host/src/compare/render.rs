//! The human table of `coalesce compare`: each kernel's rate in both languages,
//! the ratio, % of copy and, for products, % of cuBLAS.

use std::fmt::Write as _;

use super::{CompareReport, CompareRow, Side};
use crate::columns::{Layout, columns, numbers_from};
use crate::run_table;
use crate::units::format_bytes;

/// The column naming the cuBLAS operand layout each row's % of cuBLAS is of.
pub const LAYOUT_COLUMN: &str = "cuBLAS layout";

/// What the layout column means.
pub const LAYOUT_NOTE: &str = "cuBLAS layout: how A and B were stored in the cuBLAS call the row's % of \
     cuBLAS divides by, the fastest of the four (A's letter, then B's: N row-major, T column-major; C \
     row-major).";

/// A side's rate with its unit: GFLOP/s where the work is FLOPs, else GB/s.
pub fn rate(s: &Side) -> String {
    match s.gflop_per_s {
        Some(g) => format!("{g:.0} GFLOP/s"),
        None => format!("{:.1} GB/s", s.gb_per_s),
    }
}

/// A side's share of the copy and of cuBLAS, `-` where it has none: a product's rate
/// is FLOPs, so its share is of cuBLAS, not of the copy.
pub fn shares(s: &Side) -> (String, String) {
    let of_copy = match s.gflop_per_s {
        Some(_) => "-".into(),
        None => format!("{:.1}", s.pct_of_copy),
    };
    let of_cublas = s.pct_of_cublas.map_or_else(|| "-".into(), |p| format!("{p:.1}"));
    (of_copy, of_cublas)
}

/// Which products multiply in what, where any is not FP32: `TF32: sgemm/tf32-a,
/// sgemm/wgmma; BF16: gemm-bf16/simt; the other products FP32` (each % of cuBLAS is
/// of cuBLAS in the row's own precision). None where every product is FP32.
pub fn precision_note<'a>(rows: impl IntoIterator<Item = &'a CompareRow>) -> Option<String> {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    let mut fp32 = false;
    for r in rows.into_iter().filter(|r| r.flops.is_some()) {
        let precision = r.precision();
        if precision == "FP32" {
            fp32 = true;
            continue;
        }
        let name = format!("{}/{}", r.experiment, r.variant);
        match groups.iter_mut().find(|(p, _)| *p == precision) {
            Some((_, names)) => names.push(name),
            None => groups.push((precision, vec![name])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = groups
        .iter()
        .map(|(p, names)| format!("{p}: {}", names.join(", ")))
        .collect();
    if fp32 {
        parts.push("the other products FP32".into());
    }
    Some(format!("Precision: {}", parts.join("; ")))
}

/// The human table.
pub fn render(report: &CompareReport) -> String {
    let mut out = String::new();
    let ptx = run_table::ptx_ran(
        &report.rust_ptx_arch,
        report.rows.iter().map(|r| r.kernel.as_str()),
    );
    let _ = writeln!(out, "{}", run_table::device_line(&report.device, &ptx));
    for line in report.toolkit() {
        let _ = writeln!(out, "{line}");
    }
    for b in &report.baselines {
        let _ = writeln!(out, "{}", run_table::baseline_line(b));
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
    let with_layout = report.rows.iter().any(|r| r.cublas_layout.is_some());
    // Products say what they multiply in (and so which cuBLAS they are set beside).
    let with_precision = report.rows.iter().any(|r| r.flops.is_some());
    let mut header: Vec<String> = [
        "experiment",
        "variant",
        "size",
        "precision",
        "Rust",
        "C++",
        "Rust/C++",
        "Rust % copy",
        "C++ % copy",
    ]
    .map(String::from)
    .to_vec();
    if !with_precision {
        header.remove(3);
    }
    if with_cublas {
        header.extend(["Rust % cuBLAS".to_string(), "C++ % cuBLAS".to_string()]);
    }
    if with_layout {
        header.push(LAYOUT_COLUMN.into());
    }
    header.push("valid (Rust/C++)".into());
    let dash = || "-".to_string();
    let yes = |ok: bool| if ok { "yes" } else { "NO" };
    let mut cells = vec![header];
    for r in &report.rows {
        let cpp = r.cpp.as_ref();
        let (rust_copy, rust_cublas) = shares(&r.rust);
        let (cpp_copy, cpp_cublas) = cpp.map(shares).unwrap_or_else(|| (dash(), dash()));
        let mut row = vec![
            r.experiment.clone(),
            r.variant.clone(),
            r.size_label.clone().unwrap_or_else(|| format_bytes(r.size_bytes)),
            if r.flops.is_some() {
                r.precision().to_string()
            } else {
                dash()
            },
            rate(&r.rust),
            cpp.map(rate).unwrap_or_else(dash),
            r.rust_over_cpp.map(|x| format!("{x:.3}")).unwrap_or_else(dash),
            rust_copy,
            cpp_copy,
        ];
        if !with_precision {
            row.remove(3);
        }
        if with_cublas {
            row.push(rust_cublas);
            row.push(cpp_cublas);
        }
        if with_layout {
            row.push(r.cublas_layout.map_or_else(dash, |l| l.label().to_string()));
        }
        row.push(format!(
            "{}/{}",
            yes(r.rust.validated),
            cpp.map(|c| yes(c.validated)).unwrap_or("-")
        ));
        cells.push(row);
    }
    let mut right = numbers_from(2, cells[0].len());
    if with_precision {
        right[3] = false;
    }
    if with_layout {
        let at = right.len() - 2;
        right[at] = false;
    }
    out.push_str(&columns(
        &cells,
        Layout {
            right: &right,
            rule: true,
            ..Layout::default()
        },
    ));
    if with_cublas {
        let _ = writeln!(
            out,
            "% cuBLAS: of cuBLAS in the row's precision on the same matrices, its launches interleaved with the row's (the baseline lines time it alone, after the variants)"
        );
    }
    if with_layout {
        let _ = writeln!(out, "{LAYOUT_NOTE}");
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
            "NOT VALIDATED {}/cuBLAS {} {}: {}",
            c.experiment,
            c.math.routine(),
            c.math.label(),
            c.check
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{CompareRow, CublasRate};
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
            schema: crate::run_table::SCHEMA,
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

    /// A product's share is of cuBLAS: of the copy it would be FLOPs over bytes.
    #[test]
    fn products_show_a_share_of_cublas_not_of_the_copy() {
        let product = |ms: f64| {
            let case = Case {
                experiment: "matmul".into(),
                variant: "remapped".into(),
                kernel: "matmul_remapped".into(),
                problem: Problem::Product {
                    m: 1000,
                    n: 17,
                    k: 33,
                },
                work: Work::Flops {
                    flops: 2 * 1000 * 17 * 33,
                    bytes: 4 * (1000 * 33 + 33 * 17 + 1000 * 17),
                },
            };
            let base = Baseline {
                bytes: 1 << 20,
                timing: Timing::from_samples(vec![1.0]),
                gb_per_s: 4000.0,
            };
            let check = Validation {
                ok: true,
                detail: "ok".into(),
            };
            harness::row(&case, Timing::from_samples(vec![ms]), &base, &info(), check)
        };
        let (rust, cpp) = (product(0.01), product(0.02));
        let cublas = 2.0 * rust.gflop_per_s.unwrap();
        let r = CompareReport {
            rows: vec![CompareRow::new(
                &rust,
                Some(&cpp),
                Some(CublasRate::Interleaved(cublas)),
            )],
            ..report(None)
        };
        let t = render(&r);
        let row = t.lines().find(|l| l.starts_with("matmul")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        // ... Rust, C++, Rust/C++, Rust % copy, C++ % copy, Rust % cuBLAS, C++ % cuBLAS, valid
        assert_eq!(
            cells[cells.len() - 5..],
            ["-", "-", "50.0", "25.0", "yes/yes"],
            "{t}"
        );
        assert_eq!(cells[3], "FP32", "the product's precision: {t}");
        assert!(t.contains("% cuBLAS: of cuBLAS in the row's precision"), "{t}");
        // Without cuBLAS: no share at all.
        let alone = CompareReport {
            rows: vec![CompareRow::new(&rust, Some(&cpp), None)],
            ..report(None)
        };
        let t = render(&alone);
        let row = t.lines().find(|l| l.starts_with("matmul")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[cells.len() - 3..], ["-", "-", "yes/yes"], "{t}");
    }

    /// Where cuBLAS's layouts were timed, each row names the fastest, which its % of
    /// cuBLAS is of, and the baseline line names its own; older files show neither.
    #[test]
    fn the_fastest_cublas_layout_is_shown_where_its_rate_is() {
        use crate::compare::CublasRow;
        use crate::compare::cublas::Math;
        use crate::compare::layout::Layout;
        let mut r = report(None);
        r.rows[0].rust.pct_of_cublas = Some(80.0);
        r.rows[0].flops = Some(1);
        let line = CublasRow {
            experiment: "gemm-bf16".into(),
            math: Math::Bf16,
            m: 64,
            n: 32,
            k: 16,
            timing: Timing::from_samples(vec![1.0]),
            gflop_per_s: 100.0,
            validated: true,
            check: "ok".into(),
            layout: None,
        };
        r.cublas_rows.push(line.clone());
        let old = render(&r);
        assert!(!old.contains(LAYOUT_COLUMN) && !old.contains("layout"), "{old}");
        r.rows[0].cublas_layout = Some(Layout::TN);
        r.cublas_rows[0].layout = Some(Layout::NT);
        let t = render(&r);
        let header = t.lines().find(|l| l.starts_with("experiment")).unwrap();
        assert!(header.contains("C++ % cuBLAS  cuBLAS layout"), "{t}");
        let row = t.lines().find(|l| l.starts_with("copy")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[cells.len() - 4..], ["80.0", "-", "TN", "yes/-"], "{t}");
        assert!(t.contains(LAYOUT_NOTE), "{t}");
        assert!(
            t.contains("cuBLAS GEMM BF16 64x32x16 = 100 GFLOP/s, layout NT, the fastest of 4 (median of 1)"),
            "{t}"
        );
        // Through JSON and back, and an old file (no layouts) reads as it was.
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains("\"cublas_layout\":\"TN\"") && json.contains("\"layout\":\"NT\""),
            "{json}"
        );
        let back: CompareReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let older = json
            .replace(",\"cublas_layout\":\"TN\"", "")
            .replace(",\"layout\":\"NT\"", "");
        let back: CompareReport = serde_json::from_str(&older).unwrap();
        assert_eq!((back.rows[0].cublas_layout, &back.cublas_rows[0]), (None, &line));
    }

    /// The JSON names each row's precision; a file that predates the field reads as FP32.
    #[test]
    fn rows_carry_their_precision_through_json() {
        let mut r = report(None);
        r.rows[0].precision = "BF16".into();
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"precision\":\"BF16\""), "{json}");
        let old = json.replace(",\"precision\":\"BF16\"", "");
        assert_ne!(old, json);
        let back: CompareReport = serde_json::from_str(&old).unwrap();
        assert_eq!(
            (back.rows[0].precision.as_str(), back.rows[0].precision()),
            ("", "FP32")
        );
        assert_eq!(back.rust_run().rows[0].precision(), "FP32");
        // Written again, it is the file it was.
        assert_eq!(serde_json::to_string(&back).unwrap(), old);
        // An old file's TF32 rung reads as this build declares it.
        let mut tf32 = back.rows[0].clone();
        (tf32.experiment, tf32.variant) = ("sgemm".into(), "wgmma".into());
        assert_eq!(tf32.precision(), "TF32");
        // Bandwidth tables have no precision column.
        assert!(!render(&report(None)).contains("precision"));
    }

    #[test]
    fn the_precision_note_names_every_product_not_in_fp32() {
        let mut r = report(None);
        assert_eq!(precision_note(&r.rows), None, "a copy has no precision");
        let mut row = r.rows[0].clone();
        row.flops = Some(1);
        let named = |e: &str, v: &str, p: &str| CompareRow {
            experiment: e.into(),
            variant: v.into(),
            precision: p.into(),
            ..row.clone()
        };
        r.rows = vec![
            named("sgemm", "smem", "FP32"),
            named("sgemm", "tf32-a", "TF32"),
            named("gemm-bf16", "simt", "BF16"),
            named("sgemm", "wgmma", "TF32"),
        ];
        assert_eq!(
            precision_note(&r.rows).unwrap(),
            "Precision: TF32: sgemm/tf32-a, sgemm/wgmma; BF16: gemm-bf16/simt; the other products FP32"
        );
        assert_eq!(precision_note(&r.rows[..1]), None);
        assert_eq!(
            precision_note(&r.rows[2..3]).unwrap(),
            "Precision: BF16: gemm-bf16/simt"
        );
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
