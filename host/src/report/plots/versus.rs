//! Rust against CUDA C++: each kernel's speed over its twin's, as a bar from 1.0
//! (left: Rust slower, right: Rust faster), with the line 2% under it.

use super::Plot;
use super::chart::{self, Bar, BarChart};
use crate::compare::CompareReport;
use crate::error::Result;
use crate::report::versus::KEEPS_UP;

pub const TITLE: &str = "Rust against CUDA C++: speed of each kernel over its C++ twin";

/// The plot, or None where no twin ran.
pub fn rust_vs_cpp(c: &CompareReport, device: &str) -> Result<Option<Plot>> {
    let mut bars: Vec<Bar> = Vec::new();
    let mut last: Option<&str> = None;
    for r in &c.rows {
        let (Some(ratio), Some(cpp)) = (r.rust_over_cpp, &r.cpp) else {
            continue;
        };
        let checked = if r.rust.validated && cpp.validated {
            ""
        } else {
            " (NOT VALIDATED)"
        };
        bars.push(Bar {
            label: format!("{} {}", r.experiment, r.variant),
            value: ratio,
            text: format!("{ratio:.3}x{checked}"),
            color: if ratio >= KEEPS_UP {
                chart::GREEN
            } else {
                chart::RED
            },
            gap_before: last != Some(r.experiment.as_str()),
        });
        last = Some(&r.experiment);
    }
    if bars.is_empty() {
        return Ok(None);
    }
    let svg = chart::bar_chart(&BarChart {
        title: TITLE,
        device,
        x_desc: "Rust / C++ (ratio of GB/s, GFLOP/s for matmul; medians of interleaved launches)",
        origin: 1.0,
        bars,
        legend: vec![
            (format!("at least {KEEPS_UP}x"), chart::GREEN),
            (format!("under {KEEPS_UP}x"), chart::RED),
        ],
        reference: Some((KEEPS_UP, format!("{KEEPS_UP}x"))),
        row_px: chart::ROW_PX,
    })?;
    Ok(Some(Plot {
        file: "rust-vs-cpp.svg",
        title: TITLE.into(),
        svg,
    }))
}
