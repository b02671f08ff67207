//! Predicted against measured: what Nsight Compute counted on a GPU (`csv.rs`) set
//! beside what the emulator predicts for the same kernels ([`compare`]), and the table
//! that shows them ([`render()`]).

mod csv;
mod render;
#[cfg(test)]
mod tests;

use serde::Serialize;

use super::emulate::analyse::Direction;
use super::report::{ExplainReport, KernelReport};
use csv::{
    DRAM_READ, DRAM_WRITE, GLD_REQUESTS, GLD_SECTORS, GST_REQUESTS, GST_SECTORS, LDGSTS_INSTRUCTIONS,
    LDGSTS_WAVEFRONTS, LDGSTS_WAVEFRONTS_SASS, SLD_INSTRUCTIONS, SLD_INSTRUCTIONS_ON, SLD_WAVEFRONTS,
    SLD_WAVEFRONTS_SASS, SST_INSTRUCTIONS, SST_INSTRUCTIONS_ON, SST_WAVEFRONTS, SST_WAVEFRONTS_SASS,
};
pub use csv::{KernelCounts, METRICS, Measurements, OPTIONAL_METRICS, parse_csv, read_dir, variants};
pub use render::render;

/// A predicted count per request within this fraction of ncu's counts as a match.
pub const COUNT_TOLERANCE: f64 = 0.05;
/// A predicted DRAM byte count within this fraction of ncu's counts as a match.
pub const DRAM_TOLERANCE: f64 = 0.10;

/// One predicted-against-measured line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub variant: String,
    pub kernel: String,
    /// `global load`, `global store`, `shared load`, `shared store`, `cp.async shared`.
    pub access: &'static str,
    /// `sectors/req` (global) or `wavefronts/req` (shared).
    pub unit: &'static str,
    pub predicted: Option<f64>,
    pub measured: Option<f64>,
    /// Requests (global) or instructions (shared) ncu counted, or the launches its
    /// DRAM bytes are averaged over; `None` if the CSV lacks the metric.
    pub measured_requests: Option<f64>,
    /// The ncu metrics `measured` divides, numerator then denominator (the preferred
    /// ones the CSV has).
    pub measured_as: [&'static str; 2],
    /// The deviation that still counts as a match.
    pub tolerance: f64,
}

/// How a prediction fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Within [`COUNT_TOLERANCE`].
    Match,
    Miss,
    /// ncu did not report the metrics.
    NotMeasured,
}

impl Comparison {
    /// (predicted - measured) / measured.
    pub fn deviation(&self) -> Option<f64> {
        match (self.predicted, self.measured) {
            (Some(p), Some(m)) if m > 0.0 => Some((p - m) / m),
            _ => None,
        }
    }
    pub fn agreement(&self) -> Agreement {
        match (self.measured_requests, self.deviation()) {
            (None, _) => Agreement::NotMeasured,
            (Some(_), Some(d)) if d.abs() <= self.tolerance => Agreement::Match,
            _ => Agreement::Miss,
        }
    }
}

/// Kernels the harness launches around the measured one (input filling).
const HELPER_KERNELS: [&str; 1] = ["fill_uniform"];

fn prediction<'r>(report: &'r ExplainReport, m: &KernelCounts) -> Option<&'r KernelReport> {
    report
        .kernels
        .iter()
        .find(|k| format!("{}/{}", k.experiment, k.variant) == m.variant && k.kernel == m.kernel)
}

/// Kernels ncu counted that have no prediction to set beside them (besides the helpers).
pub fn unpaired(report: &ExplainReport, measured: &[KernelCounts]) -> Vec<String> {
    measured
        .iter()
        .filter(|m| !HELPER_KERNELS.contains(&m.kernel.as_str()) && prediction(report, m).is_none())
        .map(|m| format!("{} ({})", m.variant, m.kernel))
        .collect()
}

/// One access class of the comparison: what explain predicts, and the ncu metrics
/// that measure it, each as a list of alternatives in order of preference.
struct Class {
    access: &'static str,
    unit: &'static str,
    predicted: fn(&KernelReport) -> Option<f64>,
    numerator: &'static [&'static str],
    denominator: &'static [&'static str],
}

const CLASSES: [Class; 5] = [
    Class {
        access: "global load",
        unit: "sectors/req",
        predicted: |k| k.ncu_sectors_per_request(Direction::Load),
        numerator: &[GLD_SECTORS],
        denominator: &[GLD_REQUESTS],
    },
    Class {
        access: "global store",
        unit: "sectors/req",
        predicted: |k| k.sectors_per_request(Direction::Store),
        numerator: &[GST_SECTORS],
        denominator: &[GST_REQUESTS],
    },
    Class {
        access: "shared load",
        unit: "wavefronts/req",
        predicted: |k| k.wavefronts_per_request(Direction::Load),
        numerator: &[SLD_WAVEFRONTS_SASS, SLD_WAVEFRONTS],
        denominator: &[SLD_INSTRUCTIONS_ON, SLD_INSTRUCTIONS],
    },
    Class {
        access: "shared store",
        unit: "wavefronts/req",
        predicted: |k| k.wavefronts_per_request(Direction::Store),
        numerator: &[SST_WAVEFRONTS_SASS, SST_WAVEFRONTS],
        denominator: &[SST_INSTRUCTIONS_ON, SST_INSTRUCTIONS],
    },
    Class {
        access: "cp.async shared",
        unit: "wavefronts/req",
        predicted: KernelReport::async_copy_wavefronts_per_request,
        numerator: &[LDGSTS_WAVEFRONTS_SASS, LDGSTS_WAVEFRONTS],
        denominator: &[LDGSTS_INSTRUCTIONS],
    },
];

/// The first of `names` the measurement has, with its value (the first name and
/// `None` if it has none).
fn first_of(m: &KernelCounts, names: &'static [&'static str]) -> (&'static str, Option<f64>) {
    names
        .iter()
        .find_map(|&n| m.metrics.get(n).map(|&v| (n, Some(v))))
        .unwrap_or((names[0], None))
}

/// What `m` measured for `class`: the ratio, its denominator (requests or
/// instructions) and the two metrics it divides.
fn counted(m: &KernelCounts, class: &Class) -> (Option<f64>, Option<f64>, [&'static str; 2]) {
    let (numerator, count) = first_of(m, class.numerator);
    let (denominator, requests) = first_of(m, class.denominator);
    let ratio = match (count, requests) {
        (Some(n), Some(r)) if r > 0.0 => Some(n / r),
        _ => None,
    };
    (ratio, requests, [numerator, denominator])
}

/// Pairs each measured kernel with its prediction (kernels the report lacks, such as
/// the input-filling `fill_uniform`, are skipped: see [`unpaired`]).
pub fn compare(report: &ExplainReport, measured: &[KernelCounts]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for m in measured {
        let Some(k) = prediction(report, m) else {
            continue;
        };
        for class in &CLASSES {
            let predicted = (class.predicted)(k);
            let (measured, requests, measured_as) = counted(m, class);
            // Nothing predicted and nothing counted: the kernel has no such access.
            if predicted.is_none() && measured.is_none() {
                continue;
            }
            out.push(Comparison {
                variant: m.variant.clone(),
                kernel: m.kernel.clone(),
                access: class.access,
                unit: class.unit,
                predicted,
                measured,
                measured_requests: requests,
                measured_as,
                tolerance: COUNT_TOLERANCE,
            });
        }
        // DRAM bytes per launch in steady state, where explain predicted them (a
        // profile was given): a launch writes back the previous launch's writes still
        // in L2 and leaves its own last writes there, as `coalesce run`'s timed ones do.
        if let Some(p) = &k.prediction {
            for (access, predicted, metric) in [
                ("DRAM read", p.dram_read_bytes, DRAM_READ),
                ("DRAM write", p.dram_write_bytes, DRAM_WRITE),
            ] {
                let measured = m.steady_per_launch(metric);
                out.push(Comparison {
                    variant: m.variant.clone(),
                    kernel: m.kernel.clone(),
                    access,
                    unit: "MiB/launch",
                    predicted: Some(predicted / f64::from(1 << 20)),
                    measured: measured.map(|(b, _)| b / f64::from(1 << 20)),
                    measured_requests: measured.map(|(_, n)| n as f64),
                    measured_as: [metric, "launches"],
                    tolerance: DRAM_TOLERANCE,
                });
            }
        }
    }
    out
}
