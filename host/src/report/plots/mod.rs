//! The report's plots, each drawn from the rows of a run; a plot whose experiment
//! did not run is left out.

pub(super) mod chart;
mod ladder;
pub mod summary;
mod versus;

use chart::{Bar, BarChart, LineChart, Scale, Series};

use super::{Results, predicted};
use crate::error::Result;
use crate::experiments::{complex, copy, matmul, offset, particles, saxpy, stride, transpose};
use crate::harness::Row;
use crate::report::variant_of::VariantOf;

/// One drawn plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// File name inside the report directory.
    pub file: &'static str,
    pub title: String,
    pub svg: String,
}

/// Good against bad, per experiment: the designed contrast of each lesson (two
/// variants of one experiment). Experiments without an entry show their fastest
/// against their slowest variant.
pub const CONTRASTS: &[(VariantOf, VariantOf)] = &[
    contrast_of(&copy::EXPERIMENT, &copy::F32X4, &copy::F32),
    contrast_of(&stride::EXPERIMENT, &stride::S1, &stride::S32),
    contrast_of(&offset::EXPERIMENT, &offset::O0, &offset::O1),
    contrast_of(
        &transpose::EXPERIMENT,
        &transpose::TILED_PADDED,
        &transpose::NAIVE_WRITE,
    ),
    contrast_of(&particles::EXPERIMENT, &particles::SOA, &particles::AOS),
    contrast_of(&saxpy::EXPERIMENT, &saxpy::F32X4, &saxpy::F32X4_STRIDED),
    contrast_of(&complex::EXPERIMENT, &complex::SPLIT, &complex::INTERLEAVED),
];

const fn contrast_of(
    experiment: &'static crate::experiment::Experiment,
    good: &'static crate::experiment::Variant,
    bad: &'static crate::experiment::Variant,
) -> (VariantOf, VariantOf) {
    (VariantOf::new(experiment, good), VariantOf::new(experiment, bad))
}

/// The variants the plots single out (beyond [`CONTRASTS`]): the matmul plot's
/// speed-ups are over the naive kernel.
pub const NAMED_VARIANTS: &[VariantOf] = &[MATMUL_BASE];

/// What the matmul plot's speed-ups are over.
const MATMUL_BASE: VariantOf = VariantOf::new(&matmul::EXPERIMENT, &matmul::NAIVE);

/// Every plot the results allow, in the order the report shows them.
pub fn all(results: &Results) -> Result<Vec<Plot>> {
    let device = results.run.device.name.as_str();
    let rows = &results.run.rows;
    let mut plots = Vec::new();
    let drawn = [
        stride(rows, device, results)?,
        offset(rows, device)?,
        good_vs_bad(rows, device, results)?,
        transpose(rows, device)?,
        matmul(rows, device)?,
    ];
    plots.extend(drawn.into_iter().flatten());
    if let Some(p) = ladder::plot(results)? {
        plots.push(p);
    }
    if let Some(c) = &results.compare
        && let Some(p) = versus::rust_vs_cpp(c, device)?
    {
        plots.push(p);
    }
    Ok(plots)
}

fn of<'a>(rows: &'a [Row], experiment: &str) -> Vec<&'a Row> {
    rows.iter().filter(|r| r.experiment == experiment).collect()
}

/// Rows whose variant is a number (a stride, an offset), with that number.
fn numbered<'a>(rows: &'a [Row], experiment: &str) -> Vec<(f64, &'a Row)> {
    of(rows, experiment)
        .into_iter()
        .filter_map(|r| r.variant.parse::<u32>().ok().map(|v| (f64::from(v), r)))
        .collect()
}

/// The two models of the stride curve: the fraction of fetched bytes a warp uses
/// when 32 threads read f32s `s` apart. Served in 128-byte lines, a warp touches s
/// lines (1/s useful) until every thread has its own line (1/32). Served in 32-byte
/// sectors, it touches 4s sectors until every thread has its own sector (1/8).
pub fn line_model(s: f64) -> f64 {
    (1.0 / s).max(1.0 / 32.0)
}
pub fn sector_model(s: f64) -> f64 {
    (1.0 / s).max(1.0 / 8.0)
}

fn stride(rows: &[Row], device: &str, results: &Results) -> Result<Option<Plot>> {
    let points = numbered(rows, "stride");
    if points.is_empty() {
        return Ok(None);
    }
    // The models predict a fraction of the coalesced case: scale them to the
    // measured stride 1 where it ran, else to the copy (100%).
    let (scale, scale_name) = match points.iter().find(|(s, _)| *s == 1.0) {
        Some((_, r)) => (
            r.pct_of_copy,
            format!("scaled to measured stride 1 = {:.1}%", r.pct_of_copy),
        ),
        None => (100.0, "scaled to 100% of copy (stride 1 not run)".to_string()),
    };
    let max_s = points.iter().map(|p| p.0).fold(1.0, f64::max);
    // Eight samples per octave draw 1/s as the curve it is on a log axis.
    let octaves = max_s.log2().ceil() as i32;
    let grid: Vec<f64> = (0..=octaves * 8).map(|k| 2f64.powf(f64::from(k) / 8.0)).collect();
    let model = |f: fn(f64) -> f64| grid.iter().map(|&s| (s, scale * f(s))).collect();
    let title = "Strided reads: effective bandwidth against stride";
    // With a profile: what `explain --profile` predicts for each stride on this GPU.
    let predicted: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|(s, r)| {
            let p = predicted::of(results, &r.experiment, &r.variant)?;
            Some((*s, p.on_run_scale(r)?))
        })
        .collect();
    let mut series = vec![
        Series {
            name: "measured (useful bytes / time)".into(),
            points: points.iter().map(|(s, r)| (*s, r.pct_of_copy)).collect(),
            color: chart::BLUE,
            measured: true,
            width: 2,
            values: true,
        },
        Series {
            name: format!("128-byte-line model: 1/s down to 1/32, {scale_name}"),
            points: model(line_model),
            color: chart::ORANGE,
            measured: false,
            width: 6,
            values: false,
        },
        Series {
            name: format!("32-byte-sector model: 1/s down to 1/8, {scale_name}"),
            points: model(sector_model),
            color: chart::GREEN,
            measured: false,
            width: 2,
            values: false,
        },
    ];
    if !predicted.is_empty() {
        series.push(Series {
            name: "predicted for this GPU (coalesce explain --profile), on this run's copy scale".into(),
            points: predicted,
            color: chart::GREY,
            measured: true,
            width: 2,
            values: false,
        });
    }
    let svg = chart::line_chart(&LineChart {
        title,
        device,
        x_desc: "stride s (f32 elements between consecutive threads, log2 scale)",
        y_desc: "effective bandwidth (% of cuMemcpyDtoD)",
        x_scale: Scale::Log2,
        series,
    })?;
    Ok(Some(Plot {
        file: "stride.svg",
        title: title.into(),
        svg,
    }))
}

fn offset(rows: &[Row], device: &str) -> Result<Option<Plot>> {
    let points = numbered(rows, "offset");
    if points.is_empty() {
        return Ok(None);
    }
    let title = "Misaligned reads: effective bandwidth against offset";
    let svg = chart::line_chart(&LineChart {
        title,
        device,
        x_desc: "offset o (f32 elements; o = 0 is aligned to 128 bytes)",
        y_desc: "effective bandwidth (% of cuMemcpyDtoD)",
        x_scale: Scale::Linear,
        series: vec![Series {
            name: "measured: out[i] = in[i + o]".into(),
            points: points.iter().map(|(o, r)| (*o, r.pct_of_copy)).collect(),
            color: chart::BLUE,
            measured: true,
            width: 2,
            values: false,
        }],
    })?;
    Ok(Some(Plot {
        file: "offset.svg",
        title: title.into(),
        svg,
    }))
}

fn pct_text(r: &Row) -> String {
    format!("{:.1}%", r.pct_of_copy)
}

/// The good and bad rows of one experiment: its designed contrast, or fastest and slowest.
fn contrast<'a>(rows: &'a [Row], experiment: &str) -> Option<(&'a Row, &'a Row)> {
    let rows = of(rows, experiment);
    let find = |v: VariantOf| rows.iter().copied().find(|r| v.is(&r.experiment, &r.variant));
    if let Some(&(good, bad)) = CONTRASTS.iter().find(|c| c.0.experiment.name == experiment)
        && let (Some(g), Some(b)) = (find(good), find(bad))
    {
        return Some((g, b));
    }
    let by_pct = |a: &&Row, b: &&Row| a.pct_of_copy.total_cmp(&b.pct_of_copy);
    let best = rows.iter().copied().max_by(by_pct)?;
    let worst = rows.iter().copied().min_by(by_pct)?;
    (best.variant != worst.variant).then_some((best, worst))
}

fn good_vs_bad(rows: &[Row], device: &str, results: &Results) -> Result<Option<Plot>> {
    let mut experiments: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.flops.is_none()) {
        if !experiments.contains(&r.experiment.as_str()) {
            experiments.push(&r.experiment);
        }
    }
    let mut bars = Vec::new();
    for e in experiments {
        if let Some((good, bad)) = contrast(rows, e) {
            for (r, color, first) in [(good, chart::GREEN, true), (bad, chart::RED, false)] {
                let predicted =
                    predicted::of(results, &r.experiment, &r.variant).and_then(|p| p.on_run_scale(r));
                let text = match predicted {
                    Some(p) => format!("{} (predicted {p:.1}%)", pct_text(r)),
                    None => pct_text(r),
                };
                bars.push(Bar {
                    label: format!("{e} {}", r.variant),
                    value: r.pct_of_copy,
                    text,
                    color,
                    gap_before: first,
                });
            }
        }
    }
    if bars.is_empty() {
        return Ok(None);
    }
    let title = "Good against bad access patterns";
    let svg = chart::bar_chart(&BarChart {
        title,
        device,
        x_desc: "effective bandwidth (% of cuMemcpyDtoD)",
        origin: 0.0,
        bars,
        legend: vec![
            ("coalesced (good)".into(), chart::GREEN),
            ("uncoalesced (bad)".into(), chart::RED),
        ],
        reference: Some((100.0, "cuMemcpyDtoD = 100%".into())),
        row_px: chart::ROW_PX,
    })?;
    Ok(Some(Plot {
        file: "good-vs-bad.svg",
        title: title.into(),
        svg,
    }))
}

fn transpose(rows: &[Row], device: &str) -> Result<Option<Plot>> {
    let rows = of(rows, "transpose");
    if rows.is_empty() {
        return Ok(None);
    }
    let title = "Transpose ladder: one lesson per step";
    let bars = rows
        .iter()
        .map(|r| Bar {
            label: r.variant.clone(),
            value: r.pct_of_copy,
            text: format!("{} ({:.0} GB/s)", pct_text(r), r.gb_per_s),
            color: chart::BLUE,
            gap_before: false,
        })
        .collect();
    let svg = chart::bar_chart(&BarChart {
        title,
        device,
        x_desc: "effective bandwidth (% of cuMemcpyDtoD)",
        origin: 0.0,
        bars,
        legend: Vec::new(),
        reference: Some((100.0, "cuMemcpyDtoD = 100%".into())),
        row_px: chart::ROW_PX,
    })?;
    Ok(Some(Plot {
        file: "transpose.svg",
        title: title.into(),
        svg,
    }))
}

fn matmul(rows: &[Row], device: &str) -> Result<Option<Plot>> {
    let rows: Vec<&Row> = of(rows, "matmul")
        .into_iter()
        .filter(|r| r.gflop_per_s.is_some())
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let naive = rows
        .iter()
        .find(|r| MATMUL_BASE.is(&r.experiment, &r.variant))
        .and_then(|r| r.gflop_per_s);
    let title = "Matrix multiply: GFLOP/s per variant";
    let bars = rows
        .iter()
        .map(|r| {
            let g = r.gflop_per_s.unwrap_or(0.0);
            let text = match naive {
                Some(n) if n > 0.0 => format!("{g:.0} GFLOP/s ({:.1}x naive)", g / n),
                _ => format!("{g:.0} GFLOP/s"),
            };
            Bar {
                label: r.variant.clone(),
                value: g,
                text,
                color: chart::BLUE,
                gap_before: false,
            }
        })
        .collect();
    let svg = chart::bar_chart(&BarChart {
        title,
        device,
        x_desc: "GFLOP/s (2 M N K / median time)",
        origin: 0.0,
        bars,
        legend: Vec::new(),
        reference: None,
        row_px: chart::ROW_PX,
    })?;
    Ok(Some(Plot {
        file: "matmul.svg",
        title: title.into(),
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_follow_the_cache_geometry() {
        assert_eq!(line_model(1.0), 1.0);
        assert_eq!(line_model(2.0), 0.5);
        assert_eq!(line_model(32.0), 1.0 / 32.0);
        assert_eq!(line_model(64.0), 1.0 / 32.0);
        assert_eq!(sector_model(4.0), 0.25);
        assert_eq!(sector_model(8.0), 0.125);
        assert_eq!(sector_model(32.0), 0.125);
    }
}
