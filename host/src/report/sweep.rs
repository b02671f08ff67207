//! Predicted against measured at every size the results hold: `report --from` with
//! several results files of one GPU (each a run at its own `--size` or `--shape`, as
//! the predict stage of scripts/gpu-run.sh writes them) keeps the first as the report
//! and the others as its runs at other sizes; with `--profile`, the model predicts
//! each kernel at each run's own size, so a reader sees at which sizes it holds.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Results;
use super::markdown_table::table;
use super::predicted::{self, Predicted};
use crate::error::Result;
use crate::harness::Row;
use crate::profile::Profile;
use crate::run_table::Run;
use crate::units::format_bytes;

/// A prediction counts as holding where it is this close to the measurement.
pub const WITHIN: f64 = 0.10;

/// A run of the report's GPU at another size than the report's own, with what the
/// model predicts at that size (empty without a profile).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AtSize {
    #[serde(flatten)]
    pub run: Run,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicted: Vec<Predicted>,
}

/// The size a row ran at, as the results table shows it: its shape, else its bytes
/// per array.
pub fn size_of(row: &Row) -> String {
    row.size_label
        .clone()
        .unwrap_or_else(|| format_bytes(row.size_bytes))
}

/// One kernel at one size: what was measured, and what the model predicted there.
#[derive(Clone, Copy, Debug)]
pub struct Point<'a> {
    pub row: &'a Row,
    pub predicted: Option<&'a Predicted>,
}

impl Point<'_> {
    /// (predicted, measured) in the kernel's own unit (GFLOP/s for a product, GB/s
    /// else); None without a prediction, or a measurement that failed validation.
    pub fn rates(&self) -> Option<(f64, f64)> {
        let p = self.predicted?;
        if !self.row.validated {
            return None;
        }
        match (p.gflop_per_s, self.row.gflop_per_s) {
            (Some(predicted), Some(measured)) => Some((predicted, measured)),
            (None, None) => Some((p.gb_per_s?, self.row.gb_per_s)),
            _ => None,
        }
        .filter(|(_, measured)| *measured > 0.0)
    }

    /// (predicted - measured) / measured.
    pub fn error(&self) -> Option<f64> {
        self.rates().map(|(p, m)| (p - m) / m)
    }

    pub fn unit(&self) -> &'static str {
        if self.row.flops.is_some() {
            "GFLOP/s"
        } else {
            "GB/s"
        }
    }
}

/// A kernel (experiment, variant) with its points from the smallest size to the
/// largest.
pub type Kernel<'a> = ((&'a str, &'a str), Vec<Point<'a>>);

/// The sweep of one GPU's results: each kernel at each size, the report's own run
/// and its runs at other sizes.
pub struct Sweep<'a> {
    /// Each kernel in the order the results first list it.
    pub kernels: Vec<Kernel<'a>>,
}

/// The order of sizes: by work (a product's FLOPs), then bytes, then name.
fn size_key(row: &Row) -> (u64, u64, String) {
    (row.flops.unwrap_or(0), row.size_bytes, size_of(row))
}

impl<'a> Sweep<'a> {
    /// None where the results hold one size only (no runs at other sizes).
    pub fn of(results: &'a Results) -> Option<Sweep<'a>> {
        if results.other_sizes.is_empty() {
            return None;
        }
        let runs = std::iter::once((&results.run, &results.predicted))
            .chain(results.other_sizes.iter().map(|s| (&s.run, &s.predicted)));
        let mut kernels: Vec<Kernel> = Vec::new();
        for (run, predictions) in runs {
            for row in &run.rows {
                let predicted = predictions
                    .iter()
                    .find(|p| p.experiment == row.experiment && p.variant == row.variant);
                let point = Point { row, predicted };
                let key = (row.experiment.as_str(), row.variant.as_str());
                match kernels.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, points)) => points.push(point),
                    None => kernels.push((key, vec![point])),
                }
            }
        }
        for (_, points) in &mut kernels {
            points.sort_by_key(|p| size_key(p.row));
        }
        Some(Sweep { kernels })
    }

    /// Each experiment with its kernels, in order.
    pub fn experiments(&self) -> Vec<(&'a str, Vec<&Kernel<'a>>)> {
        let mut out: Vec<(&str, Vec<_>)> = Vec::new();
        for k in &self.kernels {
            match out.iter_mut().find(|(e, _)| *e == k.0.0) {
                Some((_, list)) => list.push(k),
                None => out.push((k.0.0, vec![k])),
            }
        }
        out
    }

    /// The sizes of an experiment's kernels, smallest first.
    pub fn sizes(kernels: &[&Kernel]) -> Vec<String> {
        let mut rows: Vec<&Row> = kernels.iter().flat_map(|k| k.1.iter().map(|p| p.row)).collect();
        rows.sort_by_key(|r| size_key(r));
        let mut out: Vec<String> = Vec::new();
        for r in rows {
            let s = size_of(r);
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// Each size with the errors of every kernel predicted there, in the order sizes
    /// first appear over the kernels (bandwidth sizes and shapes apart).
    pub fn by_size(&self) -> Vec<Summary> {
        let mut points: Vec<&Point> = self.kernels.iter().flat_map(|k| &k.1).collect();
        points.sort_by_key(|p| (p.row.flops.is_some(), size_key(p.row)));
        let mut out: Vec<Summary> = Vec::new();
        for p in points {
            let Some(e) = p.error() else { continue };
            let size = size_of(p.row);
            let kernel = format!("{}/{}", p.row.experiment, p.row.variant);
            match out.iter_mut().find(|s| s.size == size) {
                Some(s) => s.errors.push((kernel, e)),
                None => out.push(Summary {
                    size,
                    errors: vec![(kernel, e)],
                }),
            }
        }
        out
    }

    /// Every predicted point's error, across all sizes (each kernel named with its
    /// size).
    pub fn overall(&self) -> Summary {
        Summary {
            size: "every size".into(),
            errors: self
                .by_size()
                .into_iter()
                .flat_map(|s| {
                    let size = s.size;
                    s.errors
                        .into_iter()
                        .map(move |(k, e)| (format!("{k} at {size}"), e))
                })
                .collect(),
        }
    }
}

/// The errors of the kernels predicted at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub size: String,
    /// Each kernel (`experiment/variant`) with its (predicted - measured) / measured.
    pub errors: Vec<(String, f64)>,
}

impl Summary {
    pub fn within(&self) -> usize {
        self.errors.iter().filter(|(_, e)| e.abs() <= WITHIN).count()
    }

    pub fn mean_abs(&self) -> f64 {
        self.errors.iter().map(|(_, e)| e.abs()).sum::<f64>() / self.errors.len().max(1) as f64
    }

    /// The kernel furthest from its measurement.
    pub fn worst(&self) -> Option<&(String, f64)> {
        self.errors.iter().max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
    }
}

/// The results of a run alone, for [`predicted::predict`] at that run's size.
fn of_run(run: &Run) -> Results {
    Results {
        elapsed_s: 0.0,
        run: run.clone(),
        compare: None,
        predicted: Vec::new(),
        emulated: Vec::new(),
        other_sizes: Vec::new(),
    }
}

/// The kernels [`predict`] emulates for the runs at other sizes: the steps its
/// progress hears of.
pub fn steps(results: &Results, profile: &Profile) -> u64 {
    results
        .other_sizes
        .iter()
        .map(|s| predicted::steps(&of_run(&s.run), profile))
        .sum()
}

/// Predicts every kernel of each run at another size at that run's own size, as
/// [`predicted::predict`] does the report's own run; the emulated sites are left
/// out (the page annotates the source from the report's own run).
pub fn predict(
    results: &mut Results,
    profile: &Profile,
    origin: &str,
    mut progress: impl FnMut(&str),
) -> Result<()> {
    for s in &mut results.other_sizes {
        let mut predicted = predicted::predict(&of_run(&s.run), profile.clone(), origin, &mut progress)?;
        for p in &mut predicted {
            p.sites.clear();
        }
        s.predicted = predicted;
    }
    Ok(())
}

/// `+3.2%`.
pub fn signed_pct(e: f64) -> String {
    format!("{:+.1}%", 100.0 * e)
}

/// One summary's cells: size, kernels, within 10%, mean |error|, furthest.
pub fn summary_cells(s: &Summary) -> Vec<String> {
    vec![
        s.size.clone(),
        s.errors.len().to_string(),
        s.within().to_string(),
        format!("{:.1}%", 100.0 * s.mean_abs()),
        s.worst()
            .map(|(k, e)| format!("{k} {}", signed_pct(*e)))
            .unwrap_or_default(),
    ]
}

pub const SUMMARY_HEADER: [&str; 5] = [
    "size",
    "kernels predicted",
    "within 10%",
    "mean abs. error",
    "furthest",
];

/// A point's cell: `measured / predicted (error)`, the error in bold beyond 10%.
fn cell(p: &Point) -> String {
    match (p.rates(), p.row.validated) {
        (_, false) => "NOT VALIDATED".into(),
        (None, true) => format!("{:.0} / -", measured(p.row)),
        (Some((predicted, measured)), true) => {
            let e = signed_pct((predicted - measured) / measured);
            let e = if ((predicted - measured) / measured).abs() <= WITHIN {
                e
            } else {
                format!("**{e}**")
            };
            format!("{measured:.0} / {predicted:.0} ({e})")
        }
    }
}

/// What the run measured, in the row's own unit.
pub fn measured(row: &Row) -> f64 {
    row.gflop_per_s.unwrap_or(row.gb_per_s)
}

/// The report.md section: each size's summary, then each experiment's kernels at
/// each size, measured beside predicted.
pub fn render(out: &mut String, results: &Results) {
    let Some(sweep) = Sweep::of(results) else {
        return;
    };
    let _ = writeln!(out, "\n## Predicted beside measured at each size\n");
    let _ = writeln!(
        out,
        "Each kernel measured at each size these results hold (one run per size) beside \
         what `coalesce explain --profile` predicts at that size: GB/s for bandwidth \
         kernels, GFLOP/s for matrix products; the error is (predicted - measured) / \
         measured, in bold where it is more than 10%.\n"
    );
    let overall = sweep.overall();
    if overall.errors.is_empty() {
        let _ = writeln!(
            out,
            "No predictions: render the report with `--profile` (this GPU's profile) to set them beside the measurements.\n"
        );
    } else {
        let mut rows: Vec<Vec<String>> = sweep.by_size().iter().map(summary_cells).collect();
        rows.push(summary_cells(&overall));
        table(out, &SUMMARY_HEADER, rows);
    }
    for (experiment, kernels) in sweep.experiments() {
        let sizes = Sweep::sizes(&kernels);
        let unit = kernels[0].1[0].unit();
        let _ = writeln!(out, "\n### {experiment}: {unit} measured / predicted\n");
        let mut header = vec!["variant".to_string()];
        header.extend(sizes.iter().cloned());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows = kernels.iter().map(|((_, variant), points)| {
            let mut cells = vec![variant.to_string()];
            cells.extend(sizes.iter().map(|s| {
                points
                    .iter()
                    .find(|p| size_of(p.row) == *s)
                    .map_or_else(|| "not run".into(), cell)
            }));
            cells
        });
        table(out, &header, rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ladder::tests::{results, row};

    fn predicted(variant: &str, gflop_per_s: f64) -> Predicted {
        Predicted {
            experiment: "sgemm".into(),
            variant: variant.into(),
            pct_of_copy: 0.0,
            bound: "FFMA".into(),
            gb_per_s: None,
            ceiling_gb_per_s: None,
            gflop_per_s: Some(gflop_per_s),
            not_modelled: Vec::new(),
            sites: Vec::new(),
        }
    }

    /// `row` at another shape, with that shape's FLOPs.
    fn at(shape: &str, variant: &str, g: f64) -> Row {
        let dims = crate::units::parse_shape(shape).unwrap();
        Row {
            size_label: Some(shape.into()),
            flops: Some(2 * dims.iter().map(|d| *d as u64).product::<u64>()),
            ..row(variant, g)
        }
    }

    /// The report's own run at 4096³ and a run at 1024³ (listed after it): each
    /// kernel's points come smallest first, each with its own run's prediction; a
    /// kernel one run lacks is "not run" there, one that failed validation counts in
    /// no summary.
    #[test]
    fn each_kernel_has_a_point_per_size_with_that_sizes_prediction() {
        let mut r = results(
            vec![
                at("4096x4096x4096", "naive", 1000.0),
                at("4096x4096x4096", "tiled", 9000.0),
            ],
            None,
        );
        r.predicted = vec![predicted("naive", 1050.0), predicted("tiled", 7000.0)];
        let small = results(
            vec![
                at("1024x1024x1024", "naive", 800.0),
                Row {
                    validated: false,
                    ..at("1024x1024x1024", "wide", 5.0)
                },
            ],
            None,
        )
        .run;
        r.other_sizes.push(AtSize {
            run: small,
            predicted: vec![predicted("naive", 1000.0), predicted("wide", 5.0)],
        });
        let sweep = Sweep::of(&r).unwrap();
        let naive = &sweep.kernels[0];
        assert_eq!(naive.0, ("sgemm", "naive"));
        let got: Vec<(String, Option<(f64, f64)>)> =
            naive.1.iter().map(|p| (size_of(p.row), p.rates())).collect();
        assert_eq!(
            got,
            vec![
                ("1024x1024x1024".into(), Some((1000.0, 800.0))),
                ("4096x4096x4096".into(), Some((1050.0, 1000.0))),
            ]
        );
        assert_eq!(naive.1[0].unit(), "GFLOP/s");
        // Unvalidated: no error to count.
        let wide = sweep.kernels.iter().find(|k| k.0.1 == "wide").unwrap();
        assert_eq!(wide.1[0].rates(), None);

        let by_size = sweep.by_size();
        assert_eq!(by_size.len(), 2);
        assert_eq!(by_size[0].size, "1024x1024x1024");
        assert_eq!(by_size[0].errors, vec![("sgemm/naive".to_string(), 0.25)]);
        assert_eq!((by_size[0].within(), by_size[1].within()), (0, 1));
        assert!((by_size[1].mean_abs() - (0.05 + 2.0 / 9.0) / 2.0).abs() < 1e-12);
        let overall = sweep.overall();
        assert_eq!((overall.errors.len(), overall.within()), (3, 1));
        assert_eq!(overall.worst().unwrap().0, "sgemm/naive at 1024x1024x1024");

        let mut md = String::new();
        render(&mut md, &r);
        assert!(
            md.contains("| naive | 800 / 1000 (**+25.0%**) | 1000 / 1050 (+5.0%) |"),
            "{md}"
        );
        assert!(
            md.contains("| tiled | not run | 9000 / 7000 (**-22.2%**) |"),
            "{md}"
        );
        assert!(md.contains("| wide | NOT VALIDATED | not run |"), "{md}");
        assert!(
            md.contains("| every size | 3 | 1 | 17.4% | sgemm/naive at 1024x1024x1024 +25.0% |"),
            "{md}"
        );
    }

    #[test]
    fn one_size_has_no_sweep() {
        let r = results(vec![row("naive", 1.0)], None);
        assert!(Sweep::of(&r).is_none());
        let mut md = String::new();
        render(&mut md, &r);
        assert!(md.is_empty());
    }
}
