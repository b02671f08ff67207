//! Predictions beside a run's measurements: each bandwidth kernel's predicted rate
//! against what `coalesce run` measured on the profile's GPU.
//!
//! GB/s are compared with GB/s: both are stated as % of the profile's copy ceiling
//! (the prediction's own denominator), not the measured row's % of copy, which is over
//! a copy timed in that run at the experiment's size, which may run under the ceiling
//! and raise the row's % by as much (docs/model.md). The run's own % of copy is shown
//! beside them.

use serde::Serialize;

use super::bandwidth::Bound;
use super::product::ProductBound;
use super::report::ExplainReport;
use crate::columns::{Layout, columns};
use crate::error::{Error, Result};
use crate::run_table::Run;

/// A predicted rate within this fraction of the measured one counts as a match.
pub const RATE_TOLERANCE: f64 = 0.10;

/// A product's predicted GFLOP/s within this fraction of the measured counts as a
/// match: its model (docs/model.md, "Products") is coarser than the bandwidth one.
pub const PRODUCT_TOLERANCE: f64 = 0.15;

/// A predicted and a measured rate as `--against-run`, the predict stage and the
/// report compare them: GB/s against GB/s, both stated as % of the profile's copy
/// ceiling `ceiling_gb_per_s` (the prediction's own denominator). Returns (predicted
/// %, measured %); the deviation is theirs, (predicted - measured) / measured.
pub fn pct_of_ceiling(predicted_gb_per_s: f64, measured_gb_per_s: f64, ceiling_gb_per_s: f64) -> (f64, f64) {
    (
        100.0 * predicted_gb_per_s / ceiling_gb_per_s,
        100.0 * measured_gb_per_s / ceiling_gb_per_s,
    )
}

/// One kernel, predicted and measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Versus {
    pub variant: String,
    pub kernel: String,
    /// % of the profile's copy ceiling: predicted, and the run's GB/s over the same.
    pub predicted_pct_of_copy: f64,
    pub measured_pct_of_copy: f64,
    /// The run's own % of copy (over its copy baseline at the experiment's size).
    pub run_pct_of_copy: f64,
    pub bound: Bound,
}

impl Versus {
    /// (predicted - measured) / measured.
    pub fn deviation(&self) -> f64 {
        (self.predicted_pct_of_copy - self.measured_pct_of_copy) / self.measured_pct_of_copy
    }
}

/// Pairs every predicted kernel with the run's row of the same variant; the run must
/// come from the GPU the profile describes.
pub fn against(report: &ExplainReport, run: &Run, origin: &str) -> Result<Vec<Versus>> {
    let profiled = report.kernels.iter().find_map(|k| {
        k.prediction
            .as_ref()
            .map(|p| p.device.as_str())
            .or(k.product.as_ref().map(|p| p.device.as_str()))
    });
    if let Some(device) = profiled.filter(|d| *d != run.device.name) {
        return Err(Error::BadResults {
            path: origin.to_string(),
            why: format!("measured on {}, but the profile is of {device}", run.device.name),
        });
    }
    Ok(report
        .kernels
        .iter()
        .filter_map(|k| {
            let p = k.prediction.as_ref()?;
            let r = run
                .rows
                .iter()
                .find(|r| r.experiment == k.experiment && r.variant == k.variant && r.validated)?;
            let (predicted, measured) = pct_of_ceiling(p.gb_per_s, r.gb_per_s, p.ceiling_gb_per_s());
            Some(Versus {
                variant: format!("{}/{}", k.experiment, k.variant),
                kernel: k.kernel.clone(),
                predicted_pct_of_copy: predicted,
                measured_pct_of_copy: measured,
                run_pct_of_copy: r.pct_of_copy,
                bound: p.bound,
            })
        })
        .collect())
}

/// The table, with ok or MISS per line and a count.
pub fn render(rows: &[Versus], device: &str) -> String {
    let cells = rows
        .iter()
        .map(|r| {
            let d = r.deviation();
            let row = vec![
                r.variant.clone(),
                r.kernel.clone(),
                format!("{:.1}", r.predicted_pct_of_copy),
                format!("{:.1}", r.measured_pct_of_copy),
                format!("{:.1}", r.run_pct_of_copy),
                format!("{:+.1}%", 100.0 * d),
                r.bound.describe().into(),
            ];
            (row, d)
        })
        .collect();
    deviation_table(
        &format!(
            "predicted (coalesce explain --profile) against measured (coalesce run) on {device}; \
             % of the profile's copy ceiling (GB/s against GB/s; the run's own % of copy beside)"
        ),
        &[
            "experiment/variant",
            "kernel",
            "predicted % copy",
            "measured % copy",
            "run's % copy",
            "deviation",
            "bound",
        ],
        &[false, false, true, true, true, true, false],
        cells,
        RATE_TOLERANCE,
    )
}

/// A table of predictions against measurements: `title`, the header, one row of cells
/// per kernel with its deviation (then ok within `tolerance`, else MISS), and the
/// count within it. `right`: which of the header's columns align right.
fn deviation_table(
    title: &str,
    header: &[&str],
    right: &[bool],
    rows: Vec<(Vec<String>, f64)>,
    tolerance: f64,
) -> String {
    let mut head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    head.push(String::new());
    let mut cells = vec![head];
    let mut aligned = right.to_vec();
    aligned.push(false);
    let matched = rows.iter().filter(|(_, d)| d.abs() <= tolerance).count();
    let total = rows.len();
    for (mut row, d) in rows {
        row.push(if d.abs() <= tolerance { "ok" } else { "MISS" }.into());
        cells.push(row);
    }
    let mut out = format!("{title}\n");
    out.push_str(&columns(
        &cells,
        Layout {
            right: &aligned,
            rule: true,
            ..Layout::default()
        },
    ));
    out.push_str(&format!(
        "{matched} of {total} within {:.0}% (relative)\n",
        100.0 * tolerance
    ));
    out
}

/// One product kernel, predicted and measured, GFLOP/s.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProductVersus {
    pub variant: String,
    pub kernel: String,
    pub predicted_gflop_per_s: f64,
    pub measured_gflop_per_s: f64,
    pub bound: ProductBound,
    /// The busiest unit's share of the time busy, as the model has it.
    pub busiest: f64,
    /// "SASS" or "PTX": the code the instruction mix was read from.
    pub mix_source: String,
}

impl ProductVersus {
    /// (predicted - measured) / measured.
    pub fn deviation(&self) -> f64 {
        (self.predicted_gflop_per_s - self.measured_gflop_per_s) / self.measured_gflop_per_s
    }
}

/// Pairs every predicted product with the run's validated row of the same variant
/// (the run's GPU was checked by [`against`]); a row measured at another shape than
/// the prediction's is refused, naming the shape to give.
pub fn against_products(report: &ExplainReport, run: &Run, origin: &str) -> Result<Vec<ProductVersus>> {
    let mut out = Vec::new();
    for k in &report.kernels {
        let Some(p) = k.product.as_ref() else { continue };
        let Some(r) = run
            .rows
            .iter()
            .find(|r| r.experiment == k.experiment && r.variant == k.variant && r.validated)
        else {
            continue;
        };
        let Some(measured) = r.gflop_per_s else { continue };
        let predicted_at = k.problem.label();
        if let Some(at) = r.size_label.as_deref().filter(|at| *at != predicted_at) {
            return Err(Error::BadResults {
                path: origin.to_string(),
                why: format!(
                    "measured {}/{} at {at}, but explain predicted it at {predicted_at}: give --shape {at}",
                    k.experiment, k.variant
                ),
            });
        }
        out.push(ProductVersus {
            variant: format!("{}/{}", k.experiment, k.variant),
            kernel: k.kernel.clone(),
            predicted_gflop_per_s: p.gflop_per_s,
            measured_gflop_per_s: measured,
            bound: p.bound,
            busiest: p.units.first().map_or(0.0, |u| u.busy),
            mix_source: p.mix_source.clone(),
        });
    }
    Ok(out)
}

/// The products' table, with ok or MISS per line and a count.
pub fn render_products(rows: &[ProductVersus], device: &str) -> String {
    let cells = rows
        .iter()
        .map(|r| {
            let d = r.deviation();
            let row = vec![
                r.variant.clone(),
                r.kernel.clone(),
                format!("{:.0}", r.predicted_gflop_per_s),
                format!("{:.0}", r.measured_gflop_per_s),
                format!("{:+.1}%", 100.0 * d),
                r.bound.describe(),
                format!("{:.0}%", 100.0 * r.busiest),
                r.mix_source.clone(),
            ];
            (row, d)
        })
        .collect();
    deviation_table(
        &format!(
            "products: predicted (coalesce explain --profile) against measured (coalesce run) on {device}, GFLOP/s"
        ),
        &[
            "experiment/variant",
            "kernel",
            "predicted GFLOP/s",
            "measured GFLOP/s",
            "deviation",
            "bound",
            "busiest unit busy",
            "mix from",
        ],
        &[false, false, true, true, true, false, true, false],
        cells,
        PRODUCT_TOLERANCE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::product::Unit;

    #[test]
    fn products_are_matched_within_their_own_tolerance() {
        let versus = |predicted: f64, bound| ProductVersus {
            variant: "sgemm/interior".into(),
            kernel: "sgemm_interior".into(),
            predicted_gflop_per_s: predicted,
            measured_gflop_per_s: 40_000.0,
            bound,
            busiest: 0.86,
            mix_source: "SASS".into(),
        };
        let rows = [
            versus(45_000.0, ProductBound::Unit(Unit::IssueSlots)),
            versus(30_000.0, ProductBound::Latency),
        ];
        assert!((rows[0].deviation() - 0.125).abs() < 1e-12);
        let text = render_products(&rows, "Test GPU");
        assert!(text.contains("+12.5%") && text.contains("issue slots"), "{text}");
        assert!(text.contains("-25.0%") && text.contains("MISS"), "{text}");
        assert!(text.ends_with("1 of 2 within 15% (relative)\n"), "{text}");
    }
}
