//! The ladder as bars: each rung's GFLOP/s as % of cuBLAS SGEMM FP32 (a TF32 rung's
//! as % of cuBLAS in TF32), Rust beside C++, with the best published SIMT kernel marked.

use super::Plot;
use super::chart::{self, Bar, BarChart};
use crate::error::Result;
use crate::experiment::Arithmetic;
use crate::report::Results;
use crate::report::ladder::{SIMT_PEER, ladder};

pub const TITLE: &str = "The matmul ladder: each rung as % of cuBLAS SGEMM FP32";

/// The plot, or None where no product ran beside cuBLAS.
pub fn plot(results: &Results) -> Result<Option<Plot>> {
    let Some(l) = ladder(results) else { return Ok(None) };
    if l.cublas_fp32.is_none() {
        return Ok(None);
    }
    let mut bars = Vec::new();
    for r in &l.rungs {
        let tf32 = if r.arithmetic == Arithmetic::Tf32 {
            " (TF32)"
        } else {
            ""
        };
        let label = format!("{} {}{tf32}", r.experiment, r.variant);
        for (lang, g, p, color) in [
            (
                "Rust",
                Some(r.rust_gflop_per_s),
                r.rust_pct_of_cublas,
                chart::BLUE,
            ),
            ("C++", r.cpp_gflop_per_s, r.cpp_pct_of_cublas, chart::ORANGE),
        ] {
            let (Some(g), Some(p)) = (g, p) else {
                continue;
            };
            bars.push(Bar {
                label: if lang == "Rust" {
                    label.clone()
                } else {
                    String::new()
                },
                value: p,
                text: format!("{p:.1}% ({g:.0} GFLOP/s, {lang})"),
                color,
                gap_before: lang == "Rust",
            });
        }
    }
    let svg = chart::bar_chart(&BarChart {
        title: TITLE,
        device: &results.run.device.name,
        x_desc: "% of cuBLAS SGEMM on the same matrices (TF32 rungs: of cuBLAS TF32)",
        origin: 0.0,
        bars,
        legend: vec![
            ("Rust".into(), chart::BLUE),
            ("CUDA C++ twin".into(), chart::ORANGE),
        ],
        reference: Some((SIMT_PEER.pct_of_cublas, SIMT_PEER.describe())),
        row_px: chart::ROW_PX,
    })?;
    Ok(Some(Plot {
        file: "ladder.svg",
        title: TITLE.into(),
        svg,
    }))
}
