//! The one harness: every experiment declares its cases and the useful work of
//! each (bytes that must move, or FLOPs) once; this module validates, times and
//! turns that declaration into every number in the table.

use cust::event::{Event, EventFlags};
use cust::function::Function;
use cust::memory::AsyncCopyDestination;
use serde::{Deserialize, Serialize};

use crate::device::{DeviceInfo, Gpu};
use crate::error::{Error, Result};
use crate::launch::{Arg, LaunchCfg};
use crate::units::{format_bytes, gb_per_s};
use crate::validate::Validation;

/// The useful work one launch of a case does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Work {
    /// Bytes the algorithm must move: each input read once plus each output written once.
    Bytes(u64),
    /// Floating-point operations, and the bytes the algorithm must move.
    Flops { flops: u64, bytes: u64 },
}

impl Work {
    pub fn bytes(self) -> u64 {
        match self {
            Work::Bytes(b) | Work::Flops { bytes: b, .. } => b,
        }
    }
    pub fn flops(self) -> Option<u64> {
        match self {
            Work::Bytes(_) => None,
            Work::Flops { flops, .. } => Some(flops),
        }
    }
}

/// One variant of an experiment as prepared for a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Name within the experiment (`f32x4`, `4`, ...), used by `EXPERIMENT/VARIANT`.
    pub variant: String,
    /// The PTX entry point it launches.
    pub kernel: &'static str,
    pub work: Work,
}

/// An experiment with its buffers allocated at one size: the interface the table,
/// the benches and later tools drive.
pub trait Prepared {
    fn cases(&self) -> &[Case];
    /// Fills the case's inputs with fresh random data and poisons its outputs, so
    /// an element the kernel never writes fails validation.
    fn reset(&mut self, gpu: &Gpu, case: usize) -> Result<()>;
    /// Grid, block, dynamic shared memory and arguments of one launch of the case.
    /// The harness launches it, so any function with the same signature (a CUDA C++
    /// twin, a deliberately broken kernel in a test) can run on the same buffers.
    fn launch_spec(&self, case: usize) -> (LaunchCfg, Vec<Arg>);
    /// Copies the output back and compares it with the CPU reference.
    fn validate(&self, gpu: &Gpu, case: usize) -> Result<Validation>;
    /// How the table shows the problem size (e.g. `8192x8192`); bytes per array if None.
    fn size_label(&self) -> Option<String> {
        None
    }
    /// The operands when the case computes a row-major SGEMM C = A B (matmul), so
    /// a library (cuBLAS) can compute the same product on the same buffers.
    fn gemm(&self, _case: usize) -> Option<Gemm> {
        None
    }
    /// [`Prepared::validate`] for a product whose inputs were rounded to relative
    /// precision `input_rounding` before multiplying (TF32 tensor cores: 2^-10);
    /// with 0 it is `validate`. Experiments with [`Prepared::gemm`] operands widen
    /// their error bound by it; others have no product to widen.
    fn validate_gemm(&self, gpu: &Gpu, case: usize, input_rounding: f64) -> Result<Validation> {
        let _ = input_rounding;
        self.validate(gpu, case)
    }
}

/// Row-major C (m x n) = A (m x k) B (k x n), f32, on device buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: u64,
    pub b: u64,
    pub c: u64,
}

/// What one experiment runs at: bytes per array, or a matrix shape, and the seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Bytes per array (for matrix experiments without a shape: per matrix, square).
    pub size: u64,
    /// `--shape`: rows x cols for transpose, m x n x k for matmul.
    pub shape: Option<Vec<usize>>,
    pub seed: u64,
}

impl Params {
    pub fn sized(size: u64, seed: u64) -> Params {
        Params {
            size,
            shape: None,
            seed,
        }
    }
}

/// Enqueues one launch of `case` of `p`, running `f` (its kernel, or a twin of it).
pub fn launch_case(gpu: &Gpu, p: &dyn Prepared, case: usize, f: &Function<'_>) -> Result<()> {
    let (cfg, args) = p.launch_spec(case);
    gpu.launch(f, cfg, &args)
}

/// Resets, launches once, waits and validates: the check every measured launch gets.
pub fn check_case(gpu: &Gpu, p: &mut dyn Prepared, case: usize, f: &Function<'_>) -> Result<Validation> {
    let kernel = p.cases()[case].kernel;
    check_with(gpu, p, case, kernel, |p| launch_case(gpu, p, case, f))
}

/// [`check_case`] for any way of computing the case's output (a kernel, a twin,
/// a library call such as cuBLAS): reset, `launch`, wait, validate.
pub fn check_with(
    gpu: &Gpu,
    p: &mut dyn Prepared,
    case: usize,
    what: &str,
    launch: impl FnOnce(&dyn Prepared) -> Result<()>,
) -> Result<Validation> {
    p.reset(gpu, case)?;
    launch(p)?;
    gpu.sync(&format!("running {what}"))?;
    p.validate(gpu, case)
}

/// An experiment: a family of kernels doing the same work with different access patterns.
pub trait Experiment: Sync {
    fn name(&self) -> &'static str;
    /// One sentence: what it shows.
    fn about(&self) -> &'static str;
    /// Variant names, in table order.
    fn variants(&self) -> Vec<String>;
    /// The PTX entry points it launches.
    fn kernels(&self) -> Vec<&'static str>;
    /// Bytes per array when the user gives no `--size` (8 x L2 unless the
    /// experiment has a conventional size of its own, like a 8192 x 8192 transpose).
    fn default_size(&self, info: &DeviceInfo) -> u64 {
        default_size(info)
    }
    /// How many dimensions `--shape` takes (0: the experiment has no shape).
    fn shape_rank(&self) -> usize {
        0
    }
    /// Device memory needed for `p` (None if it overflows).
    fn device_bytes(&self, p: &Params) -> Option<u64>;
    /// The launch of each case at `p`, in case order, checked without a GPU: CUDA's
    /// grid limits, the kernels' 32-bit thread index, lengths that overflow usize.
    /// `prepare` launches exactly these, so it fails the same way.
    fn launches(&self, p: &Params, info: &DeviceInfo) -> Result<Vec<LaunchCfg>>;
    /// Allocates and fills buffers for a run.
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>>;
}

/// Median, min and max of repeated timings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub reps: usize,
}

impl Timing {
    pub fn from_samples(mut ms: Vec<f64>) -> Timing {
        assert!(!ms.is_empty(), "at least one timing sample");
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let median = if n % 2 == 1 {
            ms[n / 2]
        } else {
            (ms[n / 2 - 1] + ms[n / 2]) / 2.0
        };
        Timing {
            median_ms: median,
            min_ms: ms[0],
            max_ms: ms[n - 1],
            reps: n,
        }
    }
}

/// How many launches to time, after how many untimed ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reps {
    pub warmup: usize,
    pub timed: usize,
}

impl Default for Reps {
    fn default() -> Self {
        Reps { warmup: 3, timed: 20 }
    }
}

/// Times `launch` with CUDA events: the warm-up launches keep the GPU busy while
/// the timed ones are enqueued, so each event interval holds exactly one launch and
/// no host gap.
pub fn time_launches(gpu: &Gpu, reps: Reps, mut launch: impl FnMut() -> Result<()>) -> Result<Timing> {
    let mut timings = time_interleaved(gpu, reps, &mut [&mut launch])?;
    Ok(timings.remove(0))
}

/// Times several launches that do the same work (a kernel and its twin) in one
/// stream, interleaved: each timed round runs every launch once, in alternating
/// order (A B, then B A), so clock and thermal drift fall on all of them alike.
/// Returns one timing per launch, each from `reps.timed` samples.
pub fn time_interleaved(
    gpu: &Gpu,
    reps: Reps,
    launches: &mut [&mut dyn FnMut() -> Result<()>],
) -> Result<Vec<Timing>> {
    let count = launches.len();
    if count == 0 {
        return Ok(Vec::new());
    }
    let timed = reps.timed.max(1);
    let events = (0..=timed * count)
        .map(|_| Event::new(EventFlags::DEFAULT))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::cuda("creating timing events"))?;
    for _ in 0..reps.warmup {
        for launch in launches.iter_mut() {
            launch()?;
        }
    }
    events[0]
        .record(&gpu.stream)
        .map_err(Error::cuda("recording an event"))?;
    // owner[e] = which launch ran between events e and e + 1.
    let mut owner = Vec::with_capacity(timed * count);
    for round in 0..timed {
        for j in 0..count {
            let which = interleaved(round, j, count);
            launches[which]()?;
            events[owner.len() + 1]
                .record(&gpu.stream)
                .map_err(Error::cuda("recording an event"))?;
            owner.push(which);
        }
    }
    gpu.sync("running the timed launches")?;
    let mut samples = vec![Vec::with_capacity(timed); count];
    for (e, &which) in owner.iter().enumerate() {
        let ms = events[e + 1]
            .elapsed_time_f32(&events[e])
            .map_err(Error::cuda("reading event times"))?;
        samples[which].push(f64::from(ms));
    }
    Ok(samples.into_iter().map(Timing::from_samples).collect())
}

/// The launch that runs `j`th in timed round `round` of `count` launches:
/// forward in even rounds, backward in odd ones.
fn interleaved(round: usize, j: usize, count: usize) -> usize {
    if round.is_multiple_of(2) { j } else { count - 1 - j }
}

/// GPU time of `launches` back-to-back launches, in milliseconds: one event before
/// the first and one after the last, so the host's enqueueing is not timed (what
/// criterion's `iter_custom` needs: the total time of a batch). The caller warms up.
pub fn time_batch(gpu: &Gpu, launches: u64, mut launch: impl FnMut() -> Result<()>) -> Result<f64> {
    let start = Event::new(EventFlags::DEFAULT).map_err(Error::cuda("creating timing events"))?;
    let end = Event::new(EventFlags::DEFAULT).map_err(Error::cuda("creating timing events"))?;
    start
        .record(&gpu.stream)
        .map_err(Error::cuda("recording an event"))?;
    for _ in 0..launches {
        launch()?;
    }
    end.record(&gpu.stream)
        .map_err(Error::cuda("recording an event"))?;
    gpu.sync("running the timed launches")?;
    let ms = end
        .elapsed_time_f32(&start)
        .map_err(Error::cuda("reading event times"))?;
    Ok(f64::from(ms))
}

/// The driver's device-to-device copy of `bytes`, timed like a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub bytes: u64,
    pub timing: Timing,
    /// Read + written bytes per second.
    pub gb_per_s: f64,
}

pub fn memcpy_baseline(gpu: &Gpu, bytes: u64, reps: Reps) -> Result<Baseline> {
    let n = (bytes / 4) as usize;
    let src = gpu.alloc::<f32>(n)?;
    let mut dst = gpu.alloc::<f32>(n)?;
    let timing = time_launches(gpu, reps, || {
        // SAFETY: both buffers hold n f32s and live until after the sync inside time_launches.
        unsafe { dst.async_copy_from(&src, &gpu.stream) }.map_err(Error::cuda("copying device to device"))
    })?;
    let moved = 2 * n as u64 * 4;
    Ok(Baseline {
        bytes: n as u64 * 4,
        timing,
        gb_per_s: gb_per_s(moved, timing.median_ms),
    })
}

/// One line of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub experiment: String,
    pub variant: String,
    pub kernel: String,
    /// Bytes per array the experiment ran at.
    pub size_bytes: u64,
    /// The problem size as the experiment describes it (`8192x8192`), if not bytes.
    #[serde(default)]
    pub size_label: Option<String>,
    /// Useful bytes moved per launch.
    pub useful_bytes: u64,
    pub flops: Option<u64>,
    pub timing: Timing,
    pub gb_per_s: f64,
    pub gflop_per_s: Option<f64>,
    /// Effective bandwidth over the copy baseline of the same run.
    pub pct_of_copy: f64,
    /// Effective bandwidth over the theoretical peak.
    pub pct_of_peak: Option<f64>,
    /// This variant's bandwidth (or FLOP rate) over the slowest variant of its experiment.
    pub speedup_over_slowest: f64,
    pub validated: bool,
    pub check: String,
}

/// Turns a case's declared work and its timing into a row (speed-up filled in later).
pub fn row(
    experiment: &str,
    case: &Case,
    size_bytes: u64,
    timing: Timing,
    baseline: &Baseline,
    info: &DeviceInfo,
    check: Validation,
) -> Row {
    let bytes = case.work.bytes();
    let gbs = gb_per_s(bytes, timing.median_ms);
    Row {
        experiment: experiment.to_string(),
        variant: case.variant.clone(),
        kernel: case.kernel.to_string(),
        size_bytes,
        size_label: None,
        useful_bytes: bytes,
        flops: case.work.flops(),
        timing,
        gb_per_s: gbs,
        gflop_per_s: case
            .work
            .flops()
            .map(|f| f as f64 / (timing.median_ms * 1e-3) / 1e9),
        pct_of_copy: 100.0 * gbs / baseline.gb_per_s,
        pct_of_peak: info.peak_gb_per_s().map(|p| 100.0 * gbs / p),
        speedup_over_slowest: 1.0,
        validated: check.ok,
        check: check.detail,
    }
}

/// Fills in each row's speed-up over the slowest row of its experiment.
pub fn fill_speedups(rows: &mut [Row]) {
    let rate = |r: &Row| r.gflop_per_s.unwrap_or(r.gb_per_s);
    let names: Vec<String> = rows.iter().map(|r| r.experiment.clone()).collect();
    for name in names {
        let slowest = rows
            .iter()
            .filter(|r| r.experiment == name)
            .map(rate)
            .fold(f64::INFINITY, f64::min);
        for r in rows.iter_mut().filter(|r| r.experiment == name) {
            r.speedup_over_slowest = if slowest > 0.0 { rate(r) / slowest } else { 1.0 };
        }
    }
}

/// What to run and how.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Bytes per array; `None` picks the experiment's default (shrunk to fit if needed).
    pub size: Option<u64>,
    /// A matrix shape for the experiments whose [`Experiment::shape_rank`] matches its length.
    pub shape: Option<Vec<usize>>,
    pub reps: Reps,
    pub seed: u64,
}

/// Default bytes per array: 8 x L2 (so DRAM, not cache, is measured), at least 256 MiB.
pub fn default_size(info: &DeviceInfo) -> u64 {
    (8 * info.l2_bytes).max(256 << 20).next_multiple_of(1 << 20)
}

/// What one experiment runs at: the user's shape or size (which must fit), or the
/// default size (halved until the experiment and the copy baseline fit in 90% of
/// free memory).
pub fn choose_params(exp: &dyn Experiment, plan: &Plan, info: &DeviceInfo, free: u64) -> Result<Params> {
    // The experiment's buffers plus the copy baseline's two arrays.
    let needs = |p: &Params| {
        exp.device_bytes(p)
            .and_then(|b| b.checked_add(p.size.checked_mul(2)?))
    };
    let budget = free / 10 * 9;
    let oom = |needed: Option<u64>| Error::OutOfMemory {
        experiment: exp.name().to_string(),
        needed: needed
            .map(format_bytes)
            .unwrap_or_else(|| "more than 16 EiB".into()),
        free: format_bytes(free),
    };
    let shape = plan.shape.clone().filter(|s| s.len() == exp.shape_rank());
    if let Some(dims) = &shape
        && dims.contains(&0)
    {
        return Err(Error::Zero {
            what: "every --shape dimension",
        });
    }
    let explicit = plan.size.is_some() || shape.is_some();
    let mut p = Params {
        size: plan.size.unwrap_or_else(|| exp.default_size(info)),
        shape,
        seed: plan.seed,
    };
    if let Some(dims) = &p.shape {
        // The baseline copies as many bytes as the largest matrix.
        p.size = shape_bytes(dims).ok_or_else(|| oom(None))?;
    }
    if !explicit {
        while needs(&p).is_none_or(|n| n > budget) && p.size > (1 << 20) {
            p.size /= 2;
        }
    }
    match needs(&p) {
        Some(n) if n <= budget => {
            // Refuse what cannot be launched before anything is allocated.
            exp.launches(&p, info)?;
            Ok(p)
        }
        other => Err(oom(other)),
    }
}

/// Bytes of the largest matrix of a shape: rows x cols, or the largest of the three
/// products of m x n x k.
fn shape_bytes(dims: &[usize]) -> Option<u64> {
    let d: Vec<u64> = dims.iter().map(|&x| x as u64).collect();
    let elems = match d.as_slice() {
        [r, c] => r.checked_mul(*c)?,
        [m, n, k] => m.checked_mul(*k)?.max(k.checked_mul(*n)?).max(m.checked_mul(*n)?),
        _ => return None,
    };
    elems.checked_mul(4)
}

/// Runs the selected variants of one experiment: baseline copy, then for each case
/// reset, launch, validate, then time.
pub fn run_experiment(
    gpu: &Gpu,
    exp: &dyn Experiment,
    variants: Option<&[String]>,
    plan: &Plan,
    mut progress: impl FnMut(&str),
) -> Result<(Baseline, Vec<Row>)> {
    let (free, _) = gpu.memory()?;
    let params = choose_params(exp, plan, &gpu.info, free)?;
    let size = params.size;
    progress(&format!("{}: {} per array", exp.name(), format_bytes(size)));
    let mut prepared = exp.prepare(gpu, &params)?;
    let label = prepared.size_label();
    // Timed beside the experiment's own buffers, before and after its cases; the
    // faster is kept, so background driver work (freeing a previous experiment's
    // memory) cannot make the baseline look slow and the kernels look good.
    let before = memcpy_baseline(gpu, size, plan.reps)?;
    let mut rows = Vec::new();
    for i in 0..prepared.cases().len() {
        let case = prepared.cases()[i].clone();
        if variants.is_some_and(|v| !v.contains(&case.variant)) {
            continue;
        }
        progress(&format!("{}/{}", exp.name(), case.variant));
        let f = gpu.function(case.kernel)?;
        let check = check_case(gpu, prepared.as_mut(), i, &f)?;
        let timing = time_launches(gpu, plan.reps, || launch_case(gpu, prepared.as_ref(), i, &f))?;
        rows.push((case, timing, check));
    }
    drop(prepared);
    let after = memcpy_baseline(gpu, size, plan.reps)?;
    let baseline = if after.gb_per_s > before.gb_per_s {
        after
    } else {
        before
    };
    let mut rows: Vec<Row> = rows
        .into_iter()
        .map(|(case, timing, check)| {
            let mut r = row(exp.name(), &case, size, timing, &baseline, &gpu.info, check);
            r.size_label = label.clone();
            r
        })
        .collect();
    fill_speedups(&mut rows);
    Ok((baseline, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let t = Timing::from_samples(vec![3.0, 1.0, 2.0]);
        assert_eq!((t.median_ms, t.min_ms, t.max_ms, t.reps), (2.0, 1.0, 3.0, 3));
        assert_eq!(Timing::from_samples(vec![4.0, 1.0, 2.0, 3.0]).median_ms, 2.5);
    }

    fn info() -> DeviceInfo {
        DeviceInfo {
            name: "test".into(),
            ..DeviceInfo::h100()
        }
    }

    #[test]
    fn row_arithmetic() {
        let case = Case {
            variant: "v".into(),
            kernel: "k",
            work: Work::Bytes(2_000_000_000),
        };
        let t = Timing {
            median_ms: 1.0,
            min_ms: 1.0,
            max_ms: 1.0,
            reps: 1,
        };
        let base = Baseline {
            bytes: 0,
            timing: t,
            gb_per_s: 4000.0,
        };
        let r = row(
            "e",
            &case,
            1,
            t,
            &base,
            &info(),
            Validation {
                ok: true,
                detail: String::new(),
            },
        );
        assert!((r.gb_per_s - 2000.0).abs() < 1e-9);
        assert!((r.pct_of_copy - 50.0).abs() < 1e-9);
        assert!((r.pct_of_peak.unwrap() - 100.0 * 2000.0 / 3352.32).abs() < 1e-6);
    }

    #[test]
    fn speedups_are_relative_to_the_slowest_variant() {
        let case = Case {
            variant: "v".into(),
            kernel: "k",
            work: Work::Bytes(1_000_000),
        };
        let base = Baseline {
            bytes: 0,
            timing: Timing::from_samples(vec![1.0]),
            gb_per_s: 1.0,
        };
        let ok = Validation {
            ok: true,
            detail: String::new(),
        };
        let mut rows: Vec<Row> = [1.0, 4.0, 2.0]
            .into_iter()
            .map(|ms| {
                row(
                    "e",
                    &case,
                    1,
                    Timing::from_samples(vec![ms]),
                    &base,
                    &info(),
                    ok.clone(),
                )
            })
            .collect();
        fill_speedups(&mut rows);
        let s: Vec<f64> = rows.iter().map(|r| r.speedup_over_slowest).collect();
        assert_eq!(s, [4.0, 1.0, 2.0]);
    }

    #[test]
    fn interleaving_alternates_the_order() {
        let rounds: Vec<Vec<usize>> = (0..3)
            .map(|r| (0..2).map(|j| interleaved(r, j, 2)).collect())
            .collect();
        assert_eq!(rounds, [[0, 1], [1, 0], [0, 1]]);
        // Every launch runs once per round.
        let mut three: Vec<usize> = (0..3).map(|j| interleaved(1, j, 3)).collect();
        assert_eq!(three, [2, 1, 0]);
        three.sort();
        assert_eq!(three, [0, 1, 2]);
    }

    #[test]
    fn default_size_is_beyond_l2() {
        assert_eq!(default_size(&info()), 400 << 20);
        assert_eq!(
            default_size(&DeviceInfo {
                l2_bytes: 4 << 20,
                ..info()
            }),
            256 << 20
        );
    }
}
