//! What `coalesce explain` found: each variant's [`KernelReport`], and the
//! [`ExplainReport`] of them all.

use serde::Serialize;

use super::bandwidth;
use super::emulate::analyse::{self, Memory, SiteStats};
use super::emulate::model::Model;
use super::emulate::{traffic, vectorize};
use super::product;
use crate::experiment::Problem;

/// The analysis of one variant's kernel launch.
#[derive(Clone, Debug, Serialize)]
pub struct KernelReport {
    pub experiment: String,
    pub variant: String,
    pub kernel: String,
    #[serde(rename = "shape")]
    pub problem: Problem,
    pub size_bytes: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub blocks_total: usize,
    /// The linear indices of the blocks emulated; `None`: the whole grid.
    pub sampled_blocks: Option<Vec<usize>>,
    pub sites: Vec<SiteStats>,
    /// What the emulated window moved, before any GPU's parameters: the sampled
    /// blocks', or the [`KernelReport::dram_window`]'s where one was emulated.
    pub traffic: traffic::Traffic,
    /// With a profile, the run of consecutive blocks the prediction counted traffic
    /// over instead of the sampled blocks: one wave, `blocks` from `first`, emulated
    /// when the sample uses some segments or sectors only in part. `None`: the sample.
    pub dram_window: Option<DramWindow>,
    /// The runs of scalar shared accesses ptxas merges into vector ones (from the PTX).
    pub vectorized: vectorize::Vectorized,
    /// Recorded scalar shared accesses folded into those vector accesses.
    pub folded: usize,
    /// Time and bandwidth on the profile's GPU (bandwidth-bound kernels, with a profile).
    pub prediction: Option<bandwidth::Prediction>,
    /// Time and GFLOP/s on the profile's GPU (products, with a profile).
    pub product: Option<product::ProductPrediction>,
    /// Why a product with a profile has no prediction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_unpredicted: Option<String>,
}

impl KernelReport {
    pub fn blocks_emulated(&self) -> usize {
        self.sampled_blocks.as_ref().map_or(self.blocks_total, Vec::len)
    }

    /// `per_request` of each site `which` picks, averaged over every request the
    /// emulated blocks made (each site weighed by its executions, not by the requests
    /// recorded of it), or `None` if the kernel has no such site.
    fn over_executions(
        &self,
        which: impl Fn(&SiteStats) -> bool,
        per_request: impl Fn(&SiteStats) -> f64,
    ) -> Option<f64> {
        let sites = self.sites.iter().filter(|s| which(s));
        let (sum, executions) = sites.fold((0.0, 0), |(sum, n), s| {
            (sum + per_request(s) * s.executions as f64, n + s.executions)
        });
        (executions > 0).then(|| sum / executions as f64)
    }

    /// Sectors per request over every global site of one direction (what Nsight
    /// Compute's `l1tex__t_sectors_pipe_lsu_mem_global_op_*` over `..._requests_...`
    /// measure: its loads include the global reads of `cp.async`, not the copy
    /// engine's, which bypass the LSU pipe), or `None` if the kernel has none.
    pub fn sectors_per_request(&self, op: analyse::Direction) -> Option<f64> {
        self.over_executions(
            |s| s.space == Memory::Global && s.op == op && !s.bulk,
            SiteStats::sectors_per_request,
        )
    }

    /// Sectors per request over every global site of one direction as Nsight Compute
    /// counts them (`l1tex__t_sectors_pipe_lsu_mem_global_op_*`): as
    /// [`KernelReport::sectors_per_request`], except that a 16-byte `cp.async`
    /// (`cp.async.cg`, `LDGSTS.BYPASS`: L2 straight to shared memory) counts the 32-byte
    /// sectors of shared memory it writes, its site's shared half (a 4-byte one,
    /// `cp.async.ca`, through L1, counts the global sectors it reads). On the H100 the
    /// TF32 rungs' A tile, rows of 128 bytes 144 apart in shared memory, counts 18
    /// sectors per copy (two of its four rows start 16 bytes into a sector) where it
    /// reads 16: docs/explain.md.
    pub fn ncu_sectors_per_request(&self, op: analyse::Direction) -> Option<f64> {
        let sectors = |s: &SiteStats| {
            let write = s
                .is_l2_copy()
                .then(|| self.copy_half(s, Memory::Shared))
                .flatten();
            write.unwrap_or(s).sectors_per_request()
        };
        self.over_executions(|s| s.space == Memory::Global && s.op == op && !s.bulk, sectors)
    }

    /// Wavefronts per shared load or store request (Nsight Compute: shared wavefronts
    /// per shared instruction), or `None`. The shared writes of `cp.async` are not
    /// shared stores: see [`KernelReport::async_copy_wavefronts_per_request`].
    pub fn wavefronts_per_request(&self, op: analyse::Direction) -> Option<f64> {
        self.over_executions(
            |s| s.space == Memory::Shared && s.op == op && !s.async_copy,
            SiteStats::wavefronts_per_request,
        )
    }

    /// The half in `space` of the `cp.async` at `s`'s source location: its global read
    /// or its shared write (one `LDGSTS` on the GPU, two sites here).
    fn copy_half(&self, s: &SiteStats, space: Memory) -> Option<&SiteStats> {
        self.sites.iter().find(|h| {
            h.async_copy && h.space == space && (&h.file, h.line, h.column) == (&s.file, s.line, s.column)
        })
    }

    /// Wavefronts per request of the shared writes of `cp.async` (Nsight Compute:
    /// shared wavefronts of `LDGSTS` per `LDGSTS` instruction), or `None`. A copy's
    /// shared writes happen as its global lines arrive, each line in wavefronts of its
    /// own:
    /// - a 4-byte copy (`cp.async.ca`, `LDGSTS.E`, through L1) takes the larger of its
    ///   banks' wavefronts and the lines it reads: the FP32 rungs' transposed copies of
    ///   A, one bank wavefront over four lines, take 4;
    /// - a 16-byte copy (`cp.async.cg`, `LDGSTS.E.BYPASS.128`, from L2) takes one per
    ///   line and 128-byte shared row that line lands in ([`model::line_rows`]): the
    ///   FP32 rungs' 512 contiguous bytes of B into an aligned row take 4, the TF32
    ///   rungs' B rows 544 bytes apart 8 where a row starts off a 128-byte boundary, 7
    ///   on average.
    ///
    /// Nsight Compute counts as these rules do for the FP32 rungs' copies and the TF32
    /// rungs' B copies; the TF32 A copies' count depends on their place in the
    /// schedule, which no address rule sees: docs/explain.md.
    ///
    /// [`model::line_rows`]: super::emulate::model::line_rows
    pub fn async_copy_wavefronts_per_request(&self) -> Option<f64> {
        let lines = |w: &SiteStats| {
            self.copy_half(w, Memory::Global)
                .map_or(0.0, SiteStats::lines_per_request)
        };
        self.over_executions(
            |s| s.space == Memory::Shared && s.async_copy,
            |s| {
                if s.is_l2_copy() {
                    s.line_rows_per_request()
                } else {
                    s.wavefronts_per_request().max(lines(s))
                }
            },
        )
    }
}

/// A run of consecutive blocks of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DramWindow {
    pub first: u64,
    pub blocks: u64,
}

/// Everything `coalesce explain` found.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainReport {
    pub coalesce_version: String,
    pub model: Model,
    pub model_about: String,
    /// Where the problem sizes and grid-stride grids come from.
    pub sizes: String,
    /// Which GPU's profile the predictions use, or why there are none.
    pub calibration: String,
    pub max_occurrences: usize,
    pub kernels: Vec<KernelReport>,
    /// Variants not explained, each with the reason (a shape the copy engine cannot
    /// address).
    pub skipped: Vec<String>,
}
