//! report.md's "Rust against CUDA C++" section: each kernel beside its C++ twin,
//! and the cuBLAS SGEMM lines, from the comparison `coalesce compare` runs.

use std::fmt::Write as _;

use super::markdown_table::table;
use crate::compare::render::{LAYOUT_COLUMN, LAYOUT_NOTE, rate, shares};
use crate::compare::{CompareReport, CompareRow};

/// A kernel's speed over its twin's that counts as keeping up with C++: at most 2%
/// slower.
pub const KEEPS_UP: f64 = 0.98;

pub const HEADER: [&str; 12] = [
    "experiment",
    "variant",
    "kernel",
    "Rust",
    "C++",
    "Rust/C++",
    "Rust % of copy",
    "C++ % of copy",
    "Rust % of cuBLAS",
    "C++ % of cuBLAS",
    "Rust valid",
    "C++ valid",
];

fn valid(ok: bool) -> String {
    if ok { "yes".into() } else { "**NO**".into() }
}

/// The cells of one kernel's row, in [`HEADER`] order; None where its twin did not run.
pub fn cells(r: &CompareRow) -> Option<Vec<String>> {
    let cpp = r.cpp.as_ref()?;
    let ((rust_copy, rust_cublas), (cpp_copy, cpp_cublas)) = (shares(&r.rust), shares(cpp));
    Some(vec![
        r.experiment.clone(),
        r.variant.clone(),
        format!("`{}`", r.kernel),
        rate(&r.rust),
        rate(cpp),
        r.rust_over_cpp
            .map(|x| format!("{x:.3}"))
            .unwrap_or_else(|| "-".into()),
        rust_copy,
        cpp_copy,
        rust_cublas,
        cpp_cublas,
        valid(r.rust.validated),
        valid(cpp.validated),
    ])
}

/// Appends the section to `out`. Where NVRTC (or cuBLAS) could not be loaded the
/// comparison's own line says so and the table is left out: the results table
/// above already holds the Rust side.
pub fn render(out: &mut String, c: &CompareReport) {
    let _ = writeln!(out, "\n## Rust against CUDA C++\n");
    for line in c.toolkit() {
        let _ = writeln!(out, "- {line}");
    }
    for s in &c.cublas_rows {
        let check = if s.validated {
            "validated".to_string()
        } else {
            format!("**NOT VALIDATED**: {}", s.check)
        };
        let _ = writeln!(out, "- {}: {}, {check}", s.experiment, s.describe());
    }
    // Which of cuBLAS's operand layouts each % of cuBLAS is of, where they were timed.
    let layouts = c.rows.iter().any(|r| r.cublas_layout.is_some());
    let rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .filter_map(|r| {
            let mut row = cells(r)?;
            if layouts {
                row.insert(10, r.cublas_layout.map_or("-", |l| l.label()).to_string());
            }
            Some(row)
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let mut header = HEADER.to_vec();
    if layouts {
        header.insert(10, LAYOUT_COLUMN);
    }
    let _ = writeln!(out);
    table(out, &header, rows);
    let ratios: Vec<f64> = c.rows.iter().filter_map(|r| r.rust_over_cpp).collect();
    let kept_up = ratios.iter().filter(|&&x| x >= KEEPS_UP).count();
    let _ = writeln!(
        out,
        "\nRust and C++ launches interleaved on the same buffers, medians of the same run; \
         Rust/C++ above 1: Rust is faster. {kept_up} of {} kernels at {KEEPS_UP}x or better.",
        ratios.len()
    );
    if c.rows.iter().any(|r| r.rust.pct_of_cublas.is_some()) {
        let of = if c.cublas_shares_in_same_rounds() {
            "cuBLAS on the same matrices, its launches interleaved with the row's (the cuBLAS \
             lines above time it alone, after the variants)"
        } else {
            "the cuBLAS lines above (timed alone, after the variants)"
        };
        let _ = writeln!(out, "\n% of cuBLAS: of {of}.");
        if layouts {
            let _ = writeln!(out, "{LAYOUT_NOTE}");
        }
        // The ladder marks its TF32 rungs; 16-bit products are named here, each % of
        // cuBLAS being of cuBLAS in the row's own precision.
        if c.rows.iter().any(|r| matches!(r.precision(), "BF16" | "FP16"))
            && let Some(note) = crate::compare::render::precision_note(&c.rows)
        {
            let _ = writeln!(
                out,
                "{note}; each % of cuBLAS is of cuBLAS in the row's precision."
            );
        }
    }
    let failed: Vec<&CompareRow> = c
        .rows
        .iter()
        .filter(|r| r.cpp.as_ref().is_some_and(|s| !s.validated))
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\n**C++ twins not validated**:\n");
        for r in failed {
            let check = r.cpp.as_ref().map_or("", |s| s.check.as_str());
            let _ = writeln!(out, "- {}/{} (`{}`): {check}", r.experiment, r.variant, r.kernel);
        }
    }
}
