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
use crate::report::variant_of::VariantOf;

pub const FILE: &str = "summary.svg";
pub const TITLE: &str = "Bad access patterns and their fixes, on each GPU";

/// Which kernel a line of the picture shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// This variant: as % of copy, or of cuBLAS SGEMM FP32 for a product.
    Kernel(VariantOf),
    /// The fastest validated rung of the matmul ladder in this arithmetic, as % of
    /// cuBLAS in the same arithmetic (SGEMM, or `cublasGemmEx` for 16 bits).
    BestRung(Arithmetic),
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
    line(
        "fastest SGEMM rung (of cuBLAS)",
        Pick::BestRung(Arithmetic::Fp32),
        false,
    ),
    line(
        "fastest tensor-core rung (of cuBLAS TF32)",
        Pick::BestRung(Arithmetic::Tf32),
        true,
    ),
    line(
        "fastest BF16 rung (of cuBLAS BF16)",
        Pick::BestRung(Arithmetic::Bf16),
        false,
    ),
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
                // The ladder's and the claims' figure: cuBLAS in the same rounds.
                Some(_) => {
                    r.compare
                        .as_ref()?
                        .fp32_share(x)
                        .filter(|s| s.cublas_validated)?
                        .pct
                }
            };
            Some((pct, format!("{pct:.1}%")))
        }
        Pick::BestRung(arithmetic) => {
            let l = ladder(r)?;
            let best = l.best_of(arithmetic)?;
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
    let names = crate::report::from_files::labels(all);
    let devices = names.join(" / ");
    let svg = chart::bar_chart(&BarChart {
        title: TITLE,
        device: &devices,
        x_desc: "% of the same GPU's copy (matrix products: of its cuBLAS, same precision)",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{CompareRow, CublasRate};
    use crate::report::ladder::tests::{comparison, results, row};

    /// The ladder's lines show the fastest FP32 and TF32 rungs as the comparison
    /// measured them (cuBLAS in the same rounds, in each rung's arithmetic), and a
    /// line whose rungs did not run (no Hopper GPU, an older results file) is left out.
    #[test]
    fn each_arithmetic_shows_its_fastest_rung_of_its_cublas() {
        let compared = |v: &str, g: f64, cublas: f64| {
            CompareRow::new(
                &row(v, g),
                Some(&row(v, g)),
                Some(CublasRate::Interleaved(cublas)),
            )
        };
        let run = vec![row("interior", 45_000.0), row("wgmma-cluster", 380_000.0)];
        let compare = comparison(vec![
            compared("interior", 45_000.0, 50_000.0),
            compared("wgmma-cluster", 380_000.0, 400_000.0),
        ]);
        let r = results(run, Some(compare));
        assert_eq!(
            value(&r, Pick::BestRung(Arithmetic::Fp32)),
            Some((90.0, "90.0% (interior)".into()))
        );
        assert_eq!(
            value(&r, Pick::BestRung(Arithmetic::Tf32)),
            Some((95.0, "95.0% (wgmma-cluster)".into()))
        );
        let fp32_only = results(
            vec![row("interior", 45_000.0)],
            Some(comparison(vec![compared("interior", 45_000.0, 50_000.0)])),
        );
        assert_eq!(value(&fp32_only, Pick::BestRung(Arithmetic::Tf32)), None);
        let svg = plot(&[fp32_only]).unwrap().unwrap().svg;
        assert!(
            svg.contains("90.0% (interior)") && !svg.contains("tensor-core"),
            "{svg}"
        );
    }
}
