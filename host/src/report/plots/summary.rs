//! The across-GPU report's picture: a handful of lessons, each a bad access pattern
//! and its fix, as % of the same GPU's reference (its copy, or cuBLAS for matrix
//! products), one bar per GPU. Short enough to sit at the top of a page.

use super::Plot;
use super::chart::{self, Bar, BarChart};
use crate::error::Result;
use crate::experiment::Arithmetic;
use crate::experiments::{copy, matmul, particles, stride, transpose};
use crate::harness::Row;
use crate::report::Results;
use crate::report::ladder::ladder;
use crate::report::named::VariantOf;

pub const FILE: &str = "summary.svg";
pub const TITLE: &str = "Bad access patterns and their fixes, on each GPU";

/// Which kernel a line of the picture shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// This variant: as % of copy, or of cuBLAS SGEMM FP32 for a product.
    Kernel(VariantOf),
    /// The fastest validated FP32 rung of the matmul ladder, as % of cuBLAS SGEMM FP32.
    BestRung,
}

/// One line of the picture: its label, and whether it starts a new lesson.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    pub label: &'static str,
    pub pick: Pick,
    pub new_lesson: bool,
}

const fn line(label: &'static str, pick: Pick, new_lesson: bool) -> Line {
    Line {
        label,
        pick,
        new_lesson,
    }
}

const fn kernel(
    experiment: &'static crate::experiment::Experiment,
    variant: &'static crate::experiment::Variant,
) -> Pick {
    Pick::Kernel(VariantOf::new(experiment, variant))
}

/// Each lesson's bad pattern first, then its fix.
pub const LINES: &[Line] = &[
    line(
        "copy, float4: the ceiling",
        kernel(&copy::EXPERIMENT, &copy::F32X4),
        true,
    ),
    line(
        "stride 32: a line per thread",
        kernel(&stride::EXPERIMENT, &stride::S32),
        true,
    ),
    line(
        "stride 1: coalesced",
        kernel(&stride::EXPERIMENT, &stride::S1),
        false,
    ),
    line(
        "transpose, naive: strided writes",
        kernel(&transpose::EXPERIMENT, &transpose::NAIVE_WRITE),
        true,
    ),
    line(
        "transpose, padded shared tile",
        kernel(&transpose::EXPERIMENT, &transpose::TILED_PADDED),
        false,
    ),
    line(
        "particles, array of structs",
        kernel(&particles::EXPERIMENT, &particles::AOS),
        true,
    ),
    line(
        "particles, struct of arrays",
        kernel(&particles::EXPERIMENT, &particles::SOA),
        false,
    ),
    line(
        "matmul, naive (of cuBLAS)",
        kernel(&matmul::EXPERIMENT, &matmul::NAIVE),
        true,
    ),
    line(
        "matmul, remapped (of cuBLAS)",
        kernel(&matmul::EXPERIMENT, &matmul::REMAPPED),
        false,
    ),
    line("fastest SGEMM rung (of cuBLAS)", Pick::BestRung, false),
];

const COLORS: [plotters::style::RGBColor; 4] = [chart::BLUE, chart::ORANGE, chart::GREEN, chart::RED];

fn row(r: &Results, of: VariantOf) -> Option<&Row> {
    r.run
        .rows
        .iter()
        .find(|x| of.is(&x.experiment, &x.variant) && x.validated)
}

/// A line's value on one GPU, and the text beside its bar; None where it did not run
/// (or a product ran without cuBLAS beside it).
fn value(r: &Results, pick: Pick) -> Option<(f64, String)> {
    match pick {
        Pick::Kernel(of) => {
            let x = row(r, of)?;
            let pct = match x.gflop_per_s {
                None => x.pct_of_copy,
                Some(g) => {
                    let cublas = r
                        .compare
                        .as_ref()?
                        .sgemm_fp32(&x.experiment)
                        .filter(|c| c.validated)?;
                    100.0 * g / cublas.gflop_per_s
                }
            };
            Some((pct, format!("{pct:.1}%")))
        }
        Pick::BestRung => {
            let l = ladder(r)?;
            let best = l.best_of(Arithmetic::Fp32)?;
            let pct = best.rust_pct_of_cublas?;
            Some((pct, format!("{pct:.1}% ({})", best.variant)))
        }
    }
}

/// The picture, or None where no line has a value on any GPU.
pub fn plot(all: &[Results]) -> Result<Option<Plot>> {
    let mut bars = Vec::new();
    for l in LINES {
        let mut first = true;
        for (i, r) in all.iter().enumerate() {
            let Some((v, text)) = value(r, l.pick) else {
                continue;
            };
            bars.push(Bar {
                label: if first { l.label.to_string() } else { String::new() },
                value: v,
                text,
                color: COLORS[i % COLORS.len()],
                gap_before: first && l.new_lesson,
            });
            first = false;
        }
    }
    if bars.is_empty() {
        return Ok(None);
    }
    // Each GPU by its report's label: GPUs of one model apart by ordinal and bus.
    let names = crate::report::gpus::labels(all);
    let devices = names.join(" / ");
    let svg = chart::bar_chart(&BarChart {
        title: TITLE,
        device: &devices,
        x_desc: "% of the same GPU's copy (matrix products: of its cuBLAS SGEMM FP32)",
        origin: 0.0,
        bars,
        legend: names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.clone(), COLORS[i % COLORS.len()]))
            .collect(),
        reference: Some((100.0, "copy (or cuBLAS) = 100%".into())),
        row_px: 30,
    })?;
    Ok(Some(Plot {
        file: FILE,
        title: TITLE.into(),
        svg,
    }))
}
