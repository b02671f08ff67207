//! What `explain --profile` predicts for the kernels a report measured: set beside
//! the measurement in report.md and in the stride and good-against-bad plots.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Results;
use super::markdown_table::table;
use super::sites::SiteNote;
use crate::error::Result;
use crate::experiment::Kind;
use crate::experiments::{Selection, named};
use crate::explain::{self, emulate::model::Model};
use crate::profile::Profile;

/// One kernel's predicted rate on the profile's GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Predicted {
    pub experiment: String,
    pub variant: String,
    /// % of the profile's copy ceiling.
    pub pct_of_copy: f64,
    /// The bound the model says sets the time.
    pub bound: String,
    /// The predicted GB/s and the profile's copy ceiling (GB/s) it is a % of; `None` in
    /// results saved by a coalesce before they were kept (rerun with `--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gb_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_gb_per_s: Option<f64>,
    /// A product's predicted GFLOP/s (its `pct_of_copy` and GB/s mean nothing then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gflop_per_s: Option<f64>,
    /// What the prediction does not count, one line each (`explain`'s "not modelled"
    /// lines: residency from threads only where ptxas was not found, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_modelled: Vec<String>,
    /// What the emulation behind the prediction recorded at each access site: the
    /// report page's notes beside the source lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<SiteNote>,
}

impl Predicted {
    /// (predicted %, measured %) of the profile's ceiling for the run's `row`, as the
    /// predict stage compares them ([`crate::explain::against_run::pct_of_ceiling`]).
    pub fn versus(&self, row: &crate::harness::Row) -> Option<(f64, f64)> {
        let (gb_per_s, ceiling) = (self.gb_per_s?, self.ceiling_gb_per_s?);
        Some(crate::explain::against_run::pct_of_ceiling(
            gb_per_s,
            row.gb_per_s,
            ceiling,
        ))
    }

    /// The prediction on the run's own scale, % of the copy the run timed beside the
    /// kernel, so that it sits beside the run's % of copy in a plot: the run's % times
    /// predicted GB/s / measured GB/s (the same ratio as [`Predicted::versus`]).
    pub fn on_run_scale(&self, row: &crate::harness::Row) -> Option<f64> {
        let gb_per_s = self.gb_per_s?;
        (row.gb_per_s > 0.0).then(|| row.pct_of_copy * gb_per_s / row.gb_per_s)
    }
}

/// The experiments [`predict`] emulates for `results` with `profile`: each
/// experiment that ran, once, with the row that says its size; products only where
/// the profile has compute rates to predict them with.
fn predicted_experiments<'a>(
    results: &'a Results,
    profile: &Profile,
) -> Vec<(&'static crate::experiment::Experiment, &'a crate::harness::Row)> {
    let mut out: Vec<(&'static crate::experiment::Experiment, &crate::harness::Row)> = Vec::new();
    for row in &results.run.rows {
        let Some(exp) = named(&row.experiment) else {
            continue;
        };
        let predictable = row.flops.is_none() || profile.compute.is_some();
        if predictable && !out.iter().any(|(e, _)| e.name == exp.name) {
            out.push((exp, row));
        }
    }
    out
}

/// The kernels [`predict`] emulates for `results`: the steps its progress hears of.
pub fn steps(results: &Results, profile: &Profile) -> u64 {
    predicted_experiments(results, profile)
        .iter()
        .map(|(e, _)| measured(results, e).count() as u64)
        .sum()
}

/// The variants of `exp` that `results` measured (a results file from before a
/// variant existed has no row for it, and gets no prediction for it).
fn measured(results: &Results, exp: &'static crate::experiment::Experiment) -> Selection {
    Selection {
        experiment: exp,
        variants: Some(
            results
                .run
                .rows
                .iter()
                .filter(|r| r.experiment == exp.name)
                .map(|r| r.variant.clone())
                .collect(),
        ),
    }
}

/// What explain is asked for `exp` at the size `row` ran at (bytes per array, or its
/// matrix's shape), predicting with `profile` where one is given.
fn options(
    exp: &crate::experiment::Experiment,
    row: &crate::harness::Row,
    profile: Option<Profile>,
) -> explain::Options {
    let shape = match exp.kind {
        Kind::Elements => None,
        _ => row
            .size_label
            .as_deref()
            .and_then(|l| crate::units::parse_shape(l).ok()),
    };
    explain::Options {
        size: Some(row.size_bytes),
        shape,
        model: Model::Sm70,
        blocks: 8,
        profile,
        memory_limit: explain::EMULATION_BYTES,
    }
}

/// One kernel's emulated sites where no prediction keeps them (a GPU with no
/// profile): the report page's notes beside its source lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Emulated {
    pub experiment: String,
    pub variant: String,
    pub sites: Vec<SiteNote>,
}

/// The experiments that ran, each once, with the row that says its size.
fn ran(results: &Results) -> Vec<(&'static crate::experiment::Experiment, &crate::harness::Row)> {
    let mut out: Vec<(&'static crate::experiment::Experiment, &crate::harness::Row)> = Vec::new();
    for row in &results.run.rows {
        if let Some(exp) = named(&row.experiment)
            && !out.iter().any(|(e, _)| e.name == exp.name)
        {
            out.push((exp, row));
        }
    }
    out
}

/// The kernels [`emulate`] emulates for `results`: the steps its progress hears of.
pub fn emulate_steps(results: &Results) -> u64 {
    ran(results)
        .iter()
        .map(|(e, _)| measured(results, e).count() as u64)
        .sum()
}

/// Every kernel of `results` emulated at the size it ran at, with no profile (so no
/// prediction): what the page sets beside the source of a GPU whose profile coalesce
/// does not have. `progress` hears of each kernel as its emulation finishes.
pub fn emulate(results: &Results, mut progress: impl FnMut(&str)) -> Result<Vec<Emulated>> {
    let mut out = Vec::new();
    for (exp, row) in ran(results) {
        let report = explain::explain(&[measured(results, exp)], &options(exp, row, None), |event| {
            if let explain::ExplainEvent::Explained(variant) = event {
                progress(variant)
            }
        })?;
        out.extend(report.kernels.iter().map(|k| Emulated {
            experiment: k.experiment.clone(),
            variant: k.variant.clone(),
            sites: SiteNote::of_kernel(k),
        }));
    }
    Ok(out)
}

/// Predicts every bandwidth kernel of `results` at the sizes it ran at, with a
/// profile of the GPU it ran on (another GPU's profile is refused); `progress` hears
/// of each kernel ([`steps`] in all) as its emulation finishes.
pub fn predict(
    results: &Results,
    profile: Profile,
    origin: &str,
    mut progress: impl FnMut(&str),
) -> Result<Vec<Predicted>> {
    let profile = profile.for_device(&results.run.device.name, origin)?;
    let mut out = Vec::new();
    for (exp, row) in predicted_experiments(results, &profile) {
        let opts = options(exp, row, Some(profile.clone()));
        let report = explain::explain(&[measured(results, exp)], &opts, |event| {
            if let explain::ExplainEvent::Explained(variant) = event {
                progress(variant)
            }
        })?;
        out.extend(report.kernels.into_iter().filter_map(|k| {
            let sites = SiteNote::of_kernel(&k);
            if let Some(p) = k.product {
                return Some(Predicted {
                    experiment: k.experiment,
                    variant: k.variant,
                    pct_of_copy: 0.0,
                    bound: p.bound.describe(),
                    gb_per_s: None,
                    ceiling_gb_per_s: None,
                    gflop_per_s: Some(p.gflop_per_s),
                    not_modelled: p.not_modelled,
                    sites,
                });
            }
            let p = k.prediction?;
            Some(Predicted {
                experiment: k.experiment,
                variant: k.variant,
                pct_of_copy: p.pct_of_copy,
                bound: p.bound.describe().to_string(),
                gb_per_s: Some(p.gb_per_s),
                ceiling_gb_per_s: Some(p.ceiling_gb_per_s()),
                gflop_per_s: None,
                not_modelled: p.not_modelled,
                sites,
            })
        }));
    }
    Ok(out)
}

/// The prediction for `experiment/variant`, if the report has one.
pub fn of<'a>(results: &'a Results, experiment: &str, variant: &str) -> Option<&'a Predicted> {
    results
        .predicted
        .iter()
        .find(|p| p.experiment == experiment && p.variant == variant)
}

/// The section: each predicted kernel, measured beside predicted, both as % of the
/// profile's copy ceiling (GB/s against GB/s, as `explain --against-run` and the
/// predict stage compare them), with the run's own % of copy beside.
pub fn render(out: &mut String, results: &Results) {
    // Products' predictions are in the ladder's table (`super::ladder`).
    let bandwidth: Vec<&Predicted> = results
        .predicted
        .iter()
        .filter(|p| p.gflop_per_s.is_none())
        .collect();
    if bandwidth.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Predicted beside measured\n");
    let _ = writeln!(
        out,
        "`coalesce explain --profile` for this GPU (docs/model.md): each bandwidth kernel's \
         rate from its emulated address stream and the GPU's calibration, beside what this run \
         measured, both as % of the profile's copy ceiling (GB/s against GB/s); the run's own \
         % of copy, over the copy it timed at the experiment's size, beside.\n"
    );
    let mut stale = 0;
    let rows: Vec<Vec<String>> = bandwidth
        .iter()
        .filter_map(|p| {
            let r = results
                .run
                .rows
                .iter()
                .find(|r| r.experiment == p.experiment && r.variant == p.variant)?;
            let Some((predicted, measured)) = p.versus(r) else {
                stale += 1;
                return None;
            };
            Some(vec![
                p.experiment.clone(),
                p.variant.clone(),
                format!("{measured:.1}"),
                format!("{predicted:.1}"),
                format!("{:+.1}%", 100.0 * (predicted - measured) / measured),
                format!("{:.1}", r.pct_of_copy),
                p.bound.clone(),
            ])
        })
        .collect();
    table(
        out,
        &[
            "experiment",
            "variant",
            "measured % of copy",
            "predicted % of copy",
            "deviation",
            "run's % of copy",
            "bound",
        ],
        rows,
    );
    // Each caveat once, with the kernels it holds for.
    let mut caveats: Vec<(&str, Vec<String>)> = Vec::new();
    for p in &bandwidth {
        for c in &p.not_modelled {
            let kernel = format!("{}/{}", p.experiment, p.variant);
            match caveats.iter_mut().find(|(x, _)| x == c) {
                Some((_, kernels)) => kernels.push(kernel),
                None => caveats.push((c, vec![kernel])),
            }
        }
    }
    if !caveats.is_empty() {
        let _ = writeln!(out, "\nNot counted in these predictions:\n");
        for (c, kernels) in caveats {
            let which = if kernels.len() == bandwidth.len() {
                "every kernel".to_string()
            } else {
                kernels.join(", ")
            };
            let _ = writeln!(out, "- {c} ({which})");
        }
    }
    if stale > 0 {
        let _ = writeln!(
            out,
            "\n{stale} prediction(s) were saved without the profile's ceiling (an older coalesce): \
             rerun the report with --profile to compare them."
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Row;
    use crate::timing::Timing;

    fn row(gb_per_s: f64, pct_of_copy: f64) -> Row {
        Row {
            experiment: "particles".into(),
            variant: "soa".into(),
            kernel: "particles_soa".into(),
            size_bytes: 128 << 20,
            size_label: None,
            useful_bytes: 0,
            flops: None,
            timing: Timing::from_samples(vec![1.0]),
            gb_per_s,
            gflop_per_s: None,
            pct_of_copy,
            pct_of_peak: None,
            speedup_over_slowest: 1.0,
            validated: true,
            check: String::new(),
            precision: "FP32".into(),
        }
    }

    /// The progress of `report --profile` counts every kernel it emulates: each
    /// bandwidth experiment that ran, once, and no product.
    #[test]
    fn progress_hears_of_every_kernel_predicted() {
        let device = crate::device::DeviceInfo {
            name: "NVIDIA H100 80GB HBM3".into(),
            ..crate::device::DeviceInfo::h100()
        };
        let at = |experiment: &str, variant: &str, flops: Option<u64>| Row {
            experiment: experiment.into(),
            variant: variant.into(),
            size_bytes: 1 << 20,
            flops,
            ..row(2890.0, 100.0)
        };
        let results = Results {
            elapsed_s: 0.0,
            run: crate::run_table::Run {
                schema: crate::run_table::SCHEMA,
                coalesce_version: "test".into(),
                date: None,
                device,
                ptx_arch: "sm_70".into(),
                peak_gb_per_s: None,
                baselines: Vec::new(),
                rows: vec![
                    at("copy", "f32", None),
                    at("copy", "f32x4", None),
                    at("matmul", "naive", Some(1)),
                ],
            },
            compare: None,
            predicted: Vec::new(),
            emulated: Vec::new(),
            other_sizes: Vec::new(),
        };
        // The copy variants the results measured, not every declared one (copy/tma is
        // not in them, as in a results file from before it existed).
        let copy = 2;
        assert!(named("copy").unwrap().variants.len() > copy);
        let shipped = Profile::shipped("NVIDIA H100 80GB HBM3").unwrap().unwrap();
        // A profile without compute rates predicts no product, so emulates none; one
        // with them emulates the product too.
        let profile = Profile {
            compute: None,
            ..shipped.clone()
        };
        assert_eq!(steps(&results, &profile), copy as u64);
        let with_rates = Profile {
            compute: crate::profile::tests::sample().compute,
            ..shipped
        };
        assert_eq!(steps(&results, &with_rates), copy as u64 + 1);
        let mut heard = Vec::new();
        let predicted = predict(&results, profile, "test", |k| heard.push(k.to_string())).unwrap();
        assert_eq!(heard.len(), copy, "{heard:?}");
        assert!(heard.iter().all(|k| k.starts_with("copy/")), "{heard:?}");
        assert_eq!(predicted.len(), copy);
        assert!(predicted.iter().all(|p| p.variant != "tma"), "{heard:?}");
        // With no profile, every kernel that ran is emulated, the product too, each
        // with its sites.
        assert_eq!(emulate_steps(&results), copy as u64 + 1);
        let mut heard = Vec::new();
        let emulated = emulate(&results, |k| heard.push(k.to_string())).unwrap();
        assert_eq!(heard.len(), copy + 1, "{heard:?}");
        assert_eq!(emulated.len(), copy + 1);
        assert!(emulated.iter().all(|e| !e.sites.is_empty()), "{emulated:?}");
    }

    #[test]
    fn predictions_compare_gb_per_s_with_gb_per_s() {
        // A run whose own copy baseline (2890 GB/s) is under the profile's ceiling (3000).
        let r = row(2890.0, 100.0);
        let p = Predicted {
            experiment: "particles".into(),
            variant: "soa".into(),
            pct_of_copy: 90.0,
            bound: "DRAM bytes at the copy ceiling".into(),
            gb_per_s: Some(2700.0),
            ceiling_gb_per_s: Some(3000.0),
            gflop_per_s: None,
            not_modelled: Vec::new(),
            sites: Vec::new(),
        };
        // Both over the profile's ceiling: 90.0 against 96.3, not against the run's 100.
        let (predicted, measured) = p.versus(&r).unwrap();
        assert_eq!(predicted, 90.0);
        assert!((measured - 100.0 * 2890.0 / 3000.0).abs() < 1e-12);
        // On the run's scale the same ratio of GB/s: 100 x 2700 / 2890.
        assert!((p.on_run_scale(&r).unwrap() - 100.0 * 2700.0 / 2890.0).abs() < 1e-12);
        // Saved by an older coalesce: nothing to compare.
        let old = Predicted {
            gb_per_s: None,
            ceiling_gb_per_s: None,
            ..p
        };
        assert_eq!((old.versus(&r), old.on_run_scale(&r)), (None, None));
    }
}
