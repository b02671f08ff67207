//! What `explain --profile` predicts for the kernels a report measured: set beside
//! the measurement in report.md and in the stride and good-against-bad plots.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Results;
use super::md::table;
use crate::error::Result;
use crate::experiment::Kind;
use crate::experiments::{Selection, named};
use crate::explain::{self, model::Model};
use crate::profile::Profile;

/// One kernel's predicted % of copy on the profile's GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Predicted {
    pub experiment: String,
    pub variant: String,
    pub pct_of_copy: f64,
    /// The bound the model says sets the time.
    pub bound: String,
}

/// Predicts every bandwidth kernel of `results` at the sizes it ran at, with a
/// profile of the GPU it ran on (another GPU's profile is refused).
pub fn predict(results: &Results, profile: Profile, origin: &str) -> Result<Vec<Predicted>> {
    let profile = profile.for_device(&results.run.device.name, origin)?;
    let mut out = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    for row in &results.run.rows {
        let Some(exp) = named(&row.experiment) else {
            continue;
        };
        if row.flops.is_some() || done.contains(&exp.name) {
            continue;
        }
        done.push(exp.name);
        // The size the row ran at: bytes per array, or its matrix's shape.
        let shape = match exp.kind {
            Kind::Elements => None,
            _ => row
                .size_label
                .as_deref()
                .and_then(|l| crate::units::parse_shape(l).ok()),
        };
        let opts = explain::Options {
            size: Some(row.size_bytes),
            shape,
            model: Model::Sm70,
            blocks: 8,
            profile: Some(profile.clone()),
        };
        let report = explain::explain(&[Selection::all(exp)], &opts, |_| {})?;
        out.extend(report.kernels.into_iter().filter_map(|k| {
            let p = k.prediction?;
            Some(Predicted {
                experiment: k.experiment,
                variant: k.variant,
                pct_of_copy: p.pct_of_copy,
                bound: p.bound.describe().to_string(),
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

/// The section: each predicted kernel, measured beside predicted.
pub fn render(out: &mut String, results: &Results) {
    if results.predicted.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Predicted beside measured\n");
    let _ = writeln!(
        out,
        "`coalesce explain --profile` for this GPU (docs/model.md): each bandwidth kernel's \
         % of copy from its emulated address stream and the GPU's calibration, beside what \
         this run measured.\n"
    );
    table(
        out,
        &[
            "experiment",
            "variant",
            "measured % of copy",
            "predicted % of copy",
            "deviation",
            "bound",
        ],
        results.predicted.iter().filter_map(|p| {
            let r = results
                .run
                .rows
                .iter()
                .find(|r| r.experiment == p.experiment && r.variant == p.variant)?;
            Some(vec![
                p.experiment.clone(),
                p.variant.clone(),
                format!("{:.1}", r.pct_of_copy),
                format!("{:.1}", p.pct_of_copy),
                format!("{:+.1}%", 100.0 * (p.pct_of_copy - r.pct_of_copy) / r.pct_of_copy),
                p.bound.clone(),
            ])
        }),
    );
}
