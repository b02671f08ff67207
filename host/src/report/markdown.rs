//! report.md: the device and date, the full table, Rust against CUDA C++, published
//! claims beside this GPU's numbers, and the plots; and the Markdown table every
//! section writes.

use std::fmt::Write as _;

use super::Results;
use super::markdown_table::table;
use super::plots::Plot;
use super::{claims, ladder, predicted, sweep, versus};
use crate::harness::Row;
use crate::run_table::{copy_shares, device_line};
use crate::units::{format_bytes, format_ms};

/// The cells of one result row, in [`RESULT_HEADER`] order. A product's rate is
/// FLOPs: its GB/s and shares of the copy and of the DRAM's peak say nothing of it
/// (the comparison sets it beside cuBLAS), so they are left out, as `coalesce run`
/// leaves them.
pub fn result_cells(r: &Row) -> Vec<String> {
    let dash = || "-".to_string();
    let gb_per_s = match r.gflop_per_s {
        Some(_) => dash(),
        None => format!("{:.1}", r.gb_per_s),
    };
    let (of_copy, of_peak) = copy_shares(r);
    vec![
        r.experiment.clone(),
        r.variant.clone(),
        format!("`{}`", r.kernel),
        r.size_label.clone().unwrap_or_else(|| format_bytes(r.size_bytes)),
        format_ms(r.timing.median_ms),
        format_ms(r.timing.min_ms),
        format_ms(r.timing.max_ms),
        gb_per_s,
        r.gflop_per_s.map(|g| format!("{g:.1}")).unwrap_or_else(dash),
        of_copy,
        of_peak,
        format!("{:.2}", r.speedup_over_slowest),
        if r.validated {
            "yes".into()
        } else {
            "**NO**".into()
        },
    ]
}

pub const RESULT_HEADER: [&str; 13] = [
    "experiment",
    "variant",
    "kernel",
    "size",
    "median",
    "min",
    "max",
    "GB/s",
    "GFLOP/s",
    "% of copy",
    "% of peak",
    "x slowest",
    "valid",
];

pub fn render(results: &Results, plots: &[Plot]) -> String {
    let report = &results.run;
    let mut out = String::new();
    let _ = writeln!(out, "# coalesce report\n");
    let _ = writeln!(
        out,
        "- Device: {}",
        device_line(&report.device, &report.ptx_ran())
    );
    let _ = writeln!(out, "- Date: {}", results.date());
    let took = if results.elapsed_s > 0.0 {
        format!(", took {:.0} s", results.elapsed_s)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "- Run: coalesce {}, {} experiment(s), {} kernel(s){took}",
        report.coalesce_version,
        report.baselines.len(),
        report.rows.len(),
    );
    if let Some(r) = report.rows.first() {
        let _ = writeln!(
            out,
            "- Timing: CUDA events around each launch, median of {} launches after a warm-up; \
             GB/s counts useful bytes (each input read once, each output written once)",
            r.timing.reps
        );
    }
    for b in &report.baselines {
        let _ = writeln!(
            out,
            "- Baseline for {}: cuMemcpyDtoD of {} = {:.0} GB/s (read + write)",
            b.experiment,
            format_bytes(b.baseline.bytes),
            b.baseline.gb_per_s
        );
    }
    if results.compare.is_none() {
        let _ = writeln!(out, "- Rust against CUDA C++: not measured (`--rust-only`)");
    }

    let _ = writeln!(out, "\n## Results\n");
    table(&mut out, &RESULT_HEADER, report.rows.iter().map(result_cells));
    let failed: Vec<&Row> = report.rows.iter().filter(|r| !r.validated).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\n**Not validated** (their numbers mean nothing):\n");
        for r in failed {
            let _ = writeln!(
                out,
                "- {}/{} (`{}`): {}",
                r.experiment, r.variant, r.kernel, r.check
            );
        }
    }

    if let Some(c) = &results.compare {
        versus::render(&mut out, c);
    }
    ladder::render(&mut out, results);
    predicted::render(&mut out, results);
    sweep::render(&mut out, results);

    let _ = writeln!(out, "\n## Published claims beside this GPU\n");
    table(
        &mut out,
        &["claim", "said by", "measured on", "they say", "this GPU"],
        claims::claim_lines(&report.rows, results.compare.as_ref())
            .into_iter()
            .map(|v| {
                vec![
                    v.claim.to_string(),
                    v.source.said_by.to_string(),
                    v.source.measured_on.to_string(),
                    v.says.to_string(),
                    v.measured,
                ]
            }),
    );
    let _ = writeln!(
        out,
        "\nStride claims compare each stride's bandwidth with stride 1's (the useful fraction of \
         what the warp fetches); % of copy is over cuMemcpyDtoD of the same size in the same run."
    );

    if !plots.is_empty() {
        let _ = writeln!(out, "\n## Plots\n");
        for p in plots {
            let _ = writeln!(out, "![{}]({})\n", p.title, p.file);
        }
    }
    out
}
