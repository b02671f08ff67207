//! `coalesce explain`: the kernels' own source, run on the CPU emulator, and every
//! warp's memory requests turned into sectors per request, useful bytes and bank
//! conflicts, per source line. No GPU needed.
//!
//! Three rooms:
//! - [`emulate`]: the emulation. It runs any declared experiment's kernels (addresses
//!   only, a sample of blocks), groups the access log into warp requests and per-site
//!   statistics under a [`emulate::model::Model`] (sectors, wavefronts, bank
//!   conflicts, useful bytes), and counts the traffic the DRAM and L2 see.
//! - [`bandwidth`]: how fast a bandwidth-bound kernel will run on a profile's GPU.
//! - [`product`]: how fast a matrix product will run, from its instruction mix.
//!
//! Both predictions stand on the emulation and on [`residency`] (the blocks an SM
//! holds). Above them: [`explain`] runs each variant ([`explain_variant`], side by
//! side), [`render`] prints, [`against_run`] and [`ncu`] set the predictions beside
//! what a run or Nsight Compute measured on a GPU.

pub mod against_run;
pub mod bandwidth;
pub mod emulate;
pub mod launch;
pub mod ncu;
mod options;
pub mod product;
pub mod render;
mod report;
pub mod residency;
mod variant;
mod workers;

pub use emulate::MAX_OCCURRENCES;
pub use options::{EMULATION_BYTES, Options, problem, reference_gpu, sizing_gpu};
pub use report::{DramWindow, ExplainReport, KernelReport};
pub use variant::explain_variant;
pub use workers::ExplainEvent;

use crate::error::{Error, Result};
use crate::experiments::Selection;
use emulate::EmuLaunch;

/// Explains every selected variant, in suite order.
pub fn explain(
    selection: &[Selection],
    opts: &Options,
    mut progress: impl FnMut(ExplainEvent),
) -> Result<ExplainReport> {
    let mut jobs = Vec::new();
    let mut skipped = Vec::new();
    for s in selection {
        let exp = s.experiment;
        let problem = problem(exp, opts)?;
        for variant in exp.variants.iter().filter(|v| s.includes(v.name)) {
            match EmuLaunch::new(exp, variant, problem, &sizing_gpu(opts)) {
                Ok(_) => jobs.push((exp, variant, problem)),
                Err(e @ Error::Unaddressable { .. }) => {
                    skipped.push(format!("{}/{}: {e}", exp.name, variant.name));
                }
                Err(e) => return Err(e),
            }
        }
    }
    let kernels = workers::explain_all(&jobs, opts, &mut progress)?;
    let gpu = sizing_gpu(opts);
    let which = if opts.profile.is_some() {
        gpu.name.as_str()
    } else {
        "an H100"
    };
    let grids = format!("grid-stride grids sized for {} SMs ({which})", gpu.sm_count);
    let size = match opts.size {
        None => format!(
            "each experiment's default size as `coalesce run` picks it on {which} ({} of L2)",
            crate::units::format_bytes(gpu.l2_bytes)
        ),
        Some(bytes) => format!("--size {} per array", crate::units::format_bytes(bytes)),
    };
    let sizes = match opts.shape.as_deref() {
        None => format!("{size}; {grids}"),
        Some(shape) => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            let shape_for = |s: &Selection| s.experiment.shape_rank() == shape.len();
            if selection.iter().all(shape_for) {
                format!("--shape {}; {grids}", dims.join("x"))
            } else {
                format!(
                    "--shape {} where an experiment takes it, elsewhere {size}; {grids}",
                    dims.join("x")
                )
            }
        }
    };
    Ok(ExplainReport {
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        model: opts.model,
        model_about: opts.model.about().to_string(),
        sizes,
        calibration: match &opts.profile {
            Some(p) => format!(
                "predictions for {} from its profile (measured {}, coalesce {}): docs/model.md",
                p.device, p.measured, p.coalesce_version
            ),
            None => uncalibrated(),
        },
        max_occurrences: MAX_OCCURRENCES,
        kernels,
        skipped,
    })
}

/// The calibration line without a profile: the shipped profiles by the names
/// `--profile` takes (`--profile H100`), and what to do on another GPU.
fn uncalibrated() -> String {
    let names: Vec<&str> = crate::profile::SHIPPED.iter().map(|(name, _)| *name).collect();
    // A name's first word with a digit (H100) where it picks that profile alone.
    let short = |name: &'static str| {
        name.split_whitespace()
            .find(|w| w.chars().any(|c| c.is_ascii_digit()))
            .filter(|w| {
                let w = w.to_lowercase();
                names.iter().filter(|n| n.to_lowercase().contains(&w)).count() == 1
            })
            .map_or_else(|| format!("\"{name}\""), str::to_string)
    };
    let shipped: Vec<String> = names.iter().map(|n| format!("--profile {}", short(n))).collect();
    format!(
        "predictions: uncalibrated (no profile: {} predicts for a GPU whose profile ships with coalesce; on another GPU, run `coalesce calibrate` and pass --profile FILE)",
        shipped.join(" or ")
    )
}
