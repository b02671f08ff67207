//! `coalesce explain`: the kernels' own source, run on the CPU emulator, and every
//! warp's memory requests turned into sectors per request, useful bytes and bank
//! conflicts, per source line. No GPU needed.
//!
//! [`emulate`] runs any declared experiment's kernels (addresses only, a sample of
//! blocks), [`analyse`] groups the access log into warp requests under a
//! [`model::Model`], [`render`] prints, [`ncu`] compares with what Nsight Compute
//! measured on a GPU.

pub mod analyse;
mod coverage;
pub mod emulate;
mod hash;
pub mod measured;
pub mod mix;
pub mod model;
pub mod ncu;
pub mod predict;
pub mod product;
pub mod queue;
pub mod render;
pub mod requests;
pub mod residency;
pub mod sweep;
pub mod traffic;
pub mod vectorize;
mod window;

use serde::Serialize;

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::experiment::{Experiment, Problem, Variant, Work};
use crate::experiments::Selection;
use analyse::{Memory, SiteStats};
use emulate::EmuLaunch;
use model::Model;
use window::What;

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
    /// The GPU to predict times for; `None`: coalescing only, uncalibrated.
    pub profile: Option<crate::profile::Profile>,
    /// The most memory one kernel's emulation may hold; past it, explain refuses.
    pub memory_limit: u64,
}

impl Default for Options {
    /// Each experiment's default size, the sm70 rules, 8 blocks, no profile.
    fn default() -> Options {
        Options {
            size: None,
            shape: None,
            model: Model::Sm70,
            blocks: 8,
            profile: None,
            memory_limit: EMULATION_BYTES,
        }
    }
}

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
    pub prediction: Option<predict::Prediction>,
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

/// The GPU `coalesce explain` sizes problems and grid-stride grids for when the user
/// gives no size: an H100 80GB HBM3 (132 SMs, 50 MiB L2), the project's reference.
/// Only grid sizes, default sizes and launches sized from its DRAM bandwidth depend
/// on it, never a warp's addresses.
pub fn reference_gpu() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA H100 80GB HBM3 (assumed by coalesce explain)".into(),
        driver_version: 0,
        ..DeviceInfo::h100()
    }
}

/// The GPU whose sizes and grids explain assumes: the profile's, else the reference.
pub fn sizing_gpu(opts: &Options) -> DeviceInfo {
    match &opts.profile {
        Some(p) => DeviceInfo {
            name: format!("{} (from its profile)", p.device),
            sm_count: p.sm_count,
            l2_bytes: p.l2_bytes,
            memory_clock_khz: p.memory_clock_khz,
            bus_width_bits: p.bus_width_bits,
            ..reference_gpu()
        },
        None => reference_gpu(),
    }
}

/// The problem `experiment` runs at under `opts`, as `coalesce run` picks it on the
/// sizing GPU ([`Experiment::requested_problem`]; no shrinking to fit: nothing is
/// allocated).
pub fn problem(experiment: &Experiment, opts: &Options) -> Result<Problem> {
    let (problem, _) = experiment.requested_problem(opts.size, opts.shape.as_deref(), &sizing_gpu(opts))?;
    Ok(problem)
}

/// Emulates and analyses one variant at `problem`; `progress` hears `(blocks done,
/// blocks in the window)` as each emulated block ends.
pub fn explain_variant(
    experiment: &'static Experiment,
    variant: &'static Variant,
    problem: Problem,
    opts: &Options,
    progress: &dyn Fn(usize, usize),
) -> Result<KernelReport> {
    let launch = EmuLaunch::new(experiment, variant, problem, &sizing_gpu(opts))?;
    let total = launch.grid.count();
    let sample = emulate::sample_blocks(total, opts.blocks, launch.kernel.cluster as usize);
    let sampled = sample.is_some();
    let (regions, addrs) = emulate::regions(&launch)?;
    // The GPU runs what ptxas made of the source: its vector shared accesses.
    let vectorized = vectorize::of_kernel(launch.kernel);
    let name = format!("{}/{}", experiment.name, variant.name);
    let windows = window::Launch {
        launch: &launch,
        name: &name,
        regions: &regions,
        addrs: &addrs,
        vectorized: &vectorized,
        limit: opts.memory_limit,
        progress,
    };
    let counted = windows.count(sample.clone(), What::Sites(opts.model))?;
    let mut traffic = counted.traffic.traffic();
    let size = residency::LaunchSize {
        blocks: total as u64,
        threads_per_block: launch.block.x * launch.block.y * launch.block.z,
        dynamic_shared_bytes: u32::try_from(launch.dynamic_shared_bytes).unwrap_or(u32::MAX),
    };
    let mut dram_window = None;
    // Only bandwidth-bound kernels: a product's time is set by its arithmetic.
    let prediction = match ((experiment.work)(&problem), &opts.profile) {
        (Work::Bytes(bytes), Some(p)) => {
            let resources = residency::resources(launch.kernel.name, p);
            // The GPU runs a wave of consecutive blocks at once, and the L2 serves a
            // segment they share once: where the sampled blocks, far apart, use a
            // segment only in part, count the traffic over the first wave instead.
            let wave = residency::wave_blocks(size, p, resources.as_ref().ok().copied());
            let first_wave = || Some((0..wave as usize).collect());
            let mut wave_counts = None;
            if sampled && traffic.shares_segments(p.dram_read_granularity) {
                let counts = windows.count(first_wave(), What::Traffic)?.traffic;
                traffic = counts.traffic();
                wave_counts = Some(counts);
                dram_window = Some(DramWindow {
                    first: 0,
                    blocks: wave,
                });
            }
            // How far a wave's requests spread (a profile with a spread sweep): over the
            // first wave, emulated whole if it was not already (its global accesses
            // alone), unless no spread could change the time (another bound sets it even
            // at the least share).
            let prediction = predict::predict(bytes, &traffic, size, p, resources.clone());
            let least = p.spread_sweep.as_deref().map(sweep::least_spread_share);
            match (least, &prediction) {
                (Some(least), Some(unspread)) if unspread.dram_ceiling_matters(least) => {
                    let buffers: Vec<_> = regions.iter().map(|(_, r)| r.clone()).collect();
                    traffic.wave_spread = Some(match wave_counts {
                        Some(counts) => counts.spread(&buffers),
                        None if sampled => windows
                            .count(first_wave(), What::Sectors)?
                            .traffic
                            .spread(&buffers),
                        None => counted.traffic.spread(&buffers),
                    });
                    predict::predict(bytes, &traffic, size, p, resources)
                }
                _ => prediction,
            }
        }
        _ => None,
    };
    let (product, product_unpredicted) = match ((experiment.work)(&problem), &opts.profile) {
        (Work::Flops { flops, bytes }, Some(p)) => {
            let emulated = sample.as_ref().map_or(total, Vec::len);
            let share = emulated as f64 / total.max(1) as f64;
            // What the emulated blocks compute: the tensor cores' FLOPs where they
            // count them (a tile past the matrix's edge computes zeros), else the
            // declared FLOPs' share.
            let window_flops = match counted.tensor_flops {
                0 => flops as f64 * share,
                counted => counted as f64,
            };
            let window = product::Window {
                flops: window_flops,
                launch_flops: window_flops / share,
                sites: counted.sites.as_deref().unwrap_or_default(),
                traffic: &traffic,
            };
            match product::of_kernel(launch.kernel.name, flops, bytes, &window, size, p) {
                Ok(prediction) => (Some(prediction), None),
                Err(why) => (None, Some(why)),
            }
        }
        _ => (None, None),
    };
    Ok(KernelReport {
        experiment: experiment.name.to_string(),
        variant: variant.name.to_string(),
        kernel: variant.kernel.name.to_string(),
        problem,
        size_bytes: crate::harness::baseline_bytes(&problem).unwrap_or(0),
        grid: [launch.grid.x, launch.grid.y, launch.grid.z],
        block: [launch.block.x, launch.block.y, launch.block.z],
        blocks_total: total,
        sampled_blocks: sample,
        sites: counted.sites.unwrap_or_default(),
        traffic,
        dram_window,
        vectorized,
        folded: counted.folded,
        prediction,
        product,
        product_unpredicted,
    })
}

/// One variant to explain, at its problem.
type Job = (&'static Experiment, &'static Variant, Problem);

/// Memory one emulation may hold at its peak unless told otherwise
/// ([`Options::memory_limit`]): one block's log and the counts of its window.
pub const EMULATION_BYTES: u64 = 1 << 30;

/// How many emulations run at once: up to 4, as the machine's cores and, where the OS
/// says (Linux), its available memory allow.
fn workers(jobs: usize, limit: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let memory = available_memory().map_or(usize::MAX, |bytes| (bytes / limit.max(1)) as usize);
    cores.min(memory).min(jobs).clamp(1, 4)
}

/// The memory available to a new process: `MemAvailable` of /proc/meminfo.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What [`explain`] tells its caller as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// `variant` (`EXPERIMENT/VARIANT`) has emulated `done` of the `of` blocks of the
    /// window it counts now (its sample, or a wave), and the rest will take about
    /// `left` at the rate so far.
    Blocks {
        variant: &'a str,
        done: usize,
        of: usize,
        left: std::time::Duration,
    },
    /// `variant` is explained.
    Explained(&'a str),
}

/// What a worker tells the thread that gathers: job `at`'s progress, or its report.
enum Heard {
    Blocks(usize, usize, usize, std::time::Duration),
    Done(usize, Box<Result<KernelReport>>),
}

/// How often a worker reports an emulation's blocks.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Explains `jobs` side by side, each emulation on an OS thread of its own
/// ([`workers`] at once), and returns their reports in `jobs`' order, or the first
/// error in it. `progress` hears of each as it goes.
fn explain_all(jobs: &[Job], opts: &Options, progress: &mut impl FnMut(Step)) -> Result<Vec<KernelReport>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = workers(jobs.len(), opts.memory_limit);
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut reports: Vec<Option<Result<KernelReport>>> = jobs.iter().map(|_| None).collect();
    let names: Vec<String> = jobs
        .iter()
        .map(|(e, v, _)| format!("{}/{}", e.name, v.name))
        .collect();
    std::thread::scope(|s| -> Result<()> {
        // ptxas (for residency, which bandwidth kernels' predictions need) runs beside
        // the first emulations instead of after them.
        if let Some(p) = &opts.profile
            && jobs
                .iter()
                .any(|(e, _, problem)| matches!((e.work)(problem), Work::Bytes(_)))
        {
            s.spawn(|| residency::prefetch(p));
        }
        for _ in 0..workers {
            let (tx, next) = (tx.clone(), &next);
            let work = move || loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(experiment, variant, problem)) = jobs.get(at) else {
                    break;
                };
                let now = std::time::Instant::now;
                // When the window began, and when its blocks were last reported.
                let (began, last) = (std::cell::Cell::new(now()), std::cell::Cell::new(now()));
                let blocks = |done: usize, of: usize| {
                    if done <= 1 {
                        began.set(now());
                    }
                    if done == of || last.get().elapsed() >= PROGRESS_EVERY {
                        last.set(now());
                        let per_block = began.get().elapsed() / done.max(1) as u32;
                        let left = per_block * of.saturating_sub(done) as u32;
                        let _ = tx.send(Heard::Blocks(at, done, of, left));
                    }
                };
                let report = explain_variant(experiment, variant, problem, opts, &blocks);
                if tx.send(Heard::Done(at, Box::new(report))).is_err() {
                    break;
                }
            };
            // The main thread's stack, which one variant at a time had.
            std::thread::Builder::new()
                .stack_size(8 << 20)
                .spawn_scoped(s, work)
                .map_err(|e| Error::Emulation {
                    kernel: "explain".into(),
                    why: format!("cannot start a thread: {e}"),
                })?;
        }
        drop(tx);
        for heard in rx {
            match heard {
                Heard::Blocks(at, done, of, left) => progress(Step::Blocks {
                    variant: &names[at],
                    done,
                    of,
                    left,
                }),
                Heard::Done(at, report) => {
                    progress(Step::Explained(&names[at]));
                    reports[at] = Some(*report);
                }
            }
        }
        Ok(())
    })?;
    reports
        .into_iter()
        .map(|r| r.unwrap_or_else(|| unreachable!("every job is taken and reported")))
        .collect()
}

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
    let kernels = explain_all(&jobs, opts, &mut progress)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A launch sized from the GPU's bandwidth is sized for the profile's GPU, as
    /// `coalesce run` sizes it there: the shipped profiles record their DRAM, so
    /// transpose/tma-dense-fit gets three blocks per SM on the H100 and four on the H200.
    #[test]
    fn the_profiles_gpu_sizes_launches_from_its_bandwidth() {
        use crate::experiments::transpose::tiles_in_flight_per_sm;
        for (gpu, tiles) in [("H100", 3), ("H200", 4)] {
            let profile = crate::profile::Profile::shipped(gpu).unwrap().unwrap();
            let opts = Options {
                profile: Some(profile),
                ..Options::default()
            };
            assert_eq!(tiles_in_flight_per_sm(&sizing_gpu(&opts)), tiles, "{gpu}");
        }
    }

    /// `run` and `explain` turn `--size` and `--shape` into a problem the same way
    /// (one resolver, [`Experiment::requested_problem`]): on the GPU explain sizes for,
    /// with memory to spare, every experiment gets the same problem from both.
    #[test]
    fn run_and_explain_resolve_size_and_shape_alike() {
        use crate::harness::{RunOptions, choose_problem};
        let cases: [(Option<u64>, Option<Vec<usize>>); 5] = [
            (None, None),
            (Some(1 << 20), None),
            (Some(3 << 20), Some(vec![100, 300])),
            (None, Some(vec![64, 96, 32])),
            (Some(4096), Some(vec![7])),
        ];
        for e in crate::experiments::ALL {
            for (size, shape) in &cases {
                let opts = Options {
                    size: *size,
                    shape: shape.clone(),
                    ..Options::default()
                };
                let run = RunOptions {
                    size: *size,
                    shape: shape.clone(),
                    reps: crate::timing::Reps { warmup: 1, timed: 1 },
                    seed: 1,
                };
                let explained = problem(e, &opts).unwrap();
                let ran = choose_problem(e, &run, &sizing_gpu(&opts), u64::MAX).unwrap();
                assert_eq!(explained, ran, "{} at {size:?} {shape:?}", e.name);
            }
            // A shape of the experiment's rank with a zero is refused by both alike.
            if e.shape_rank() > 0 {
                let zero = Some(vec![0; e.shape_rank()]);
                let opts = Options {
                    shape: zero.clone(),
                    ..Options::default()
                };
                let run = RunOptions {
                    size: None,
                    shape: zero,
                    reps: crate::timing::Reps { warmup: 1, timed: 1 },
                    seed: 1,
                };
                let (a, b) = (
                    problem(e, &opts).unwrap_err().to_string(),
                    choose_problem(e, &run, &sizing_gpu(&opts), u64::MAX)
                        .unwrap_err()
                        .to_string(),
                );
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn emulations_at_once_stay_within_the_jobs_cores_and_memory() {
        assert_eq!(workers(0, EMULATION_BYTES), 1);
        assert_eq!(workers(1, EMULATION_BYTES), 1);
        let many = workers(100, EMULATION_BYTES);
        assert!((1..=4).contains(&many), "{many} at once");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(many <= cores.max(1));
        #[cfg(target_os = "linux")]
        {
            let bytes = available_memory().expect("Linux says its available memory");
            assert!(
                many as u64 <= (bytes / EMULATION_BYTES).max(1),
                "{many} at once in {bytes} bytes"
            );
        }
    }
}
