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
//! side), [`render`] prints, [`measured`] and [`ncu`] set the predictions beside
//! what a run or Nsight Compute measured on a GPU.

pub mod bandwidth;
pub mod emulate;
pub mod measured;
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
pub use workers::Step;

use crate::error::{Error, Result};
use crate::experiments::Selection;
use emulate::EmuLaunch;

/// Explains every selected variant, in suite order.
pub fn explain(
    selection: &[Selection],
    opts: &Options,
    mut progress: impl FnMut(Step),
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
    let sizes = match opts.size {
        None => format!(
            "each experiment's default size as `coalesce run` picks it on {which} ({} of L2); {grids}",
            crate::units::format_bytes(gpu.l2_bytes)
        ),
        Some(bytes) => format!("--size {} per array; {grids}", crate::units::format_bytes(bytes)),
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
            None => "predictions: uncalibrated (no profile: run `coalesce calibrate` on a GPU and pass --profile FILE)".into(),
        },
        max_occurrences: MAX_OCCURRENCES,
        kernels,
        skipped,
    })
}
