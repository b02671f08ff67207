//! `coalesce explain`: the kernels' own source, run on the CPU emulator, and every
//! warp's memory requests turned into sectors per request, useful bytes and bank
//! conflicts, per source line. No GPU needed.
//!
//! [`registry`] knows how to launch each experiment's kernels, [`emulate`] runs them
//! (addresses only, a sample of blocks), [`analyse`] groups the access log into warp
//! requests under a [`model::Model`], [`render`] prints, [`ncu`] compares with what
//! Nsight Compute measured on a GPU.

pub mod analyse;
pub mod emulate;
pub mod model;
pub mod ncu;
pub mod registry;
pub mod render;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::experiments::Selection;
use crate::harness::{Experiment, Params};
use analyse::{Memory, SiteStats};
use model::Model;
use registry::{Emulation, Shape, reference_gpu};

/// Each thread's first this-many executions of an access site are recorded: loops
/// repeat their pattern, and the log stays small at any problem size.
pub const MAX_OCCURRENCES: usize = 16;

/// What to explain and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Bytes per array, as `coalesce run --size`; `None`: each experiment's default
    /// on the [`reference_gpu`].
    pub size: Option<u64>,
    /// A matrix shape, as `coalesce run --shape` (for the experiments of its rank).
    pub shape: Option<Vec<usize>>,
    pub model: Model,
    /// Blocks to emulate per kernel (the whole grid when it has no more).
    pub blocks: usize,
}

/// The analysis of one variant's kernel launch.
#[derive(Clone, Debug, Serialize)]
pub struct KernelReport {
    pub experiment: String,
    pub variant: String,
    pub kernel: String,
    pub shape: Shape,
    pub size_bytes: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub blocks_total: usize,
    /// The linear indices of the blocks emulated; `None`: the whole grid.
    pub sampled_blocks: Option<Vec<usize>>,
    pub sites: Vec<SiteStats>,
}

impl KernelReport {
    pub fn blocks_emulated(&self) -> usize {
        self.sampled_blocks.as_ref().map_or(self.blocks_total, Vec::len)
    }

    /// Sectors per request over every global site of one direction (what Nsight
    /// Compute's `l1tex__t_sectors_pipe_lsu_mem_global_op_*` over `..._requests_...`
    /// measure), or `None` if the kernel has none.
    pub fn sectors_per_request(&self, op: analyse::Direction) -> Option<f64> {
        let sites = self
            .sites
            .iter()
            .filter(|s| s.space == Memory::Global && s.op == op);
        let (sectors, requests) = sites.fold((0, 0), |(s, r), x| (s + x.sectors, r + x.requests));
        (requests > 0).then(|| sectors as f64 / requests as f64)
    }

    /// Bank-conflict ways per shared request of one direction (Nsight Compute: shared
    /// wavefronts per shared instruction), or `None`.
    pub fn ways_per_request(&self, op: analyse::Direction) -> Option<f64> {
        let sites = self
            .sites
            .iter()
            .filter(|s| s.space == Memory::Shared && s.op == op);
        let (ways, requests) = sites.fold((0, 0), |(w, r), x| (w + x.bank_ways, r + x.requests));
        (requests > 0).then(|| ways as f64 / requests as f64)
    }
}

/// Everything `coalesce explain` found.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainReport {
    pub coalesce_version: String,
    pub model: Model,
    pub model_about: String,
    /// Where the problem sizes and grid-stride grids come from.
    pub sizes: String,
    pub max_occurrences: usize,
    pub kernels: Vec<KernelReport>,
}

/// The problem `experiment` runs at under `opts`, as `coalesce run` would pick it on
/// the reference GPU (no shrinking to fit: nothing is allocated).
pub fn params(experiment: &dyn Experiment, opts: &Options) -> Params {
    Params {
        size: opts
            .size
            .unwrap_or_else(|| experiment.default_size(&reference_gpu())),
        shape: opts
            .shape
            .clone()
            .filter(|s| s.len() == experiment.shape_rank() && experiment.shape_rank() > 0),
        seed: 0,
    }
}

/// Emulates and analyses one variant at `params`.
pub fn explain_variant(
    emulation: &dyn Emulation,
    variant: &str,
    params: &Params,
    opts: &Options,
) -> Result<KernelReport> {
    let shape = emulation.shape(params)?;
    let plan = emulation.plan(variant, shape, reference_gpu().sm_count)?;
    let total = plan.grid.count();
    let sample = emulate::sample_blocks(total, opts.blocks);
    let recorded = emulate::record(&plan, sample, MAX_OCCURRENCES)?;
    Ok(KernelReport {
        experiment: emulation.experiment().to_string(),
        variant: variant.to_string(),
        kernel: plan.kernel.to_string(),
        shape,
        size_bytes: params.size,
        grid: [plan.grid.x, plan.grid.y, plan.grid.z],
        block: [plan.block.x, plan.block.y, plan.block.z],
        blocks_total: total,
        sampled_blocks: recorded.blocks,
        sites: analyse::analyse(&recorded.accesses, opts.model, &recorded.regions),
    })
}

/// Explains every selected variant, in suite order.
pub fn explain(
    selection: &[Selection],
    opts: &Options,
    mut progress: impl FnMut(&str),
) -> Result<ExplainReport> {
    let mut kernels = Vec::new();
    for s in selection {
        let name = s.experiment.name();
        let emulation = registry::find(name).ok_or_else(|| Error::Emulation {
            kernel: name.to_string(),
            why: "no emulator entry for this experiment".into(),
        })?;
        let params = params(s.experiment, opts);
        for variant in emulation.variants() {
            if s.variants.as_ref().is_some_and(|v| !v.contains(&variant)) {
                continue;
            }
            progress(&format!("{name}/{variant}"));
            kernels.push(explain_variant(emulation, &variant, &params, opts)?);
        }
    }
    let gpu = reference_gpu();
    let grids = format!("grid-stride grids sized for {} SMs (an H100)", gpu.sm_count);
    let sizes = match opts.size {
        None => format!(
            "each experiment's default size as `coalesce run` picks it on an H100 ({} of L2); {grids}",
            crate::units::format_bytes(gpu.l2_bytes)
        ),
        Some(bytes) => format!("--size {} per array; {grids}", crate::units::format_bytes(bytes)),
    };
    Ok(ExplainReport {
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        model: opts.model,
        model_about: opts.model.about().to_string(),
        sizes,
        max_occurrences: MAX_OCCURRENCES,
        kernels,
    })
}
