//! The one harness: picks each experiment's problem size, runs its declared
//! variants on the GPU (and, for `compare`, each beside its C++ twin), validates
//! every one, times it, and turns the declared useful work into every number in
//! the table. `run`, `compare`, `report` and the benches all go through [`run_experiment`].

use cust::function::Function;
use serde::{Deserialize, Serialize};

use crate::device::{DeviceInfo, Gpu};
use crate::elem::Elem;
use crate::error::{Error, Result};
use crate::experiment::{Experiment, Problem, Variant, Work};
use crate::experiments::Selection;
use crate::prepared::Prepared;
use crate::timing::{Baseline, Reps, Timing, memcpy_baseline, time_interleaved, time_launches};
use crate::units::{format_bytes, gb_per_s, gflop_per_s};
use crate::validate::Validation;

/// What to run and how: the user's `--size`, `--shape`, `--reps`, `--warmup`, `--seed`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Bytes per array; `None` picks the experiment's default (shrunk to fit if needed).
    pub size: Option<u64>,
    /// A matrix shape for the experiments whose [`Experiment::shape_rank`] matches its length.
    pub shape: Option<Vec<usize>>,
    pub reps: Reps,
    pub seed: u64,
}

/// Bytes of the arrays the copy baseline moves for `exp` at `p`: as many as its
/// largest array, of its elements ([`Experiment::elem`]).
pub fn baseline_bytes(exp: &Experiment, p: &Problem) -> Option<u64> {
    exp.elem().bytes_of(p.largest_array()?)
}

/// The problem one experiment runs at: the user's shape or size (which must fit), or
/// the default size (halved until the experiment and the copy baseline fit in 90% of
/// free memory). What cannot be launched is refused before anything is allocated.
pub fn choose_problem(exp: &Experiment, opts: &RunOptions, info: &DeviceInfo, free: u64) -> Result<Problem> {
    // The experiment's buffers plus the copy baseline's two arrays.
    let needs = |p: &Problem| {
        exp.device_bytes(p)
            .and_then(|b| b.checked_add(baseline_bytes(exp, p)?.checked_mul(2)?))
    };
    let budget = free / 10 * 9;
    let oom = |needed: Option<u64>| Error::OutOfMemory {
        experiment: exp.name.to_string(),
        needed: needed
            .map(format_bytes)
            .unwrap_or_else(|| "more than 16 EiB".into()),
        free: format_bytes(free),
    };
    let (mut problem, explicit) = exp.requested_problem(opts.size, opts.shape.as_deref(), info)?;
    if !explicit {
        let mut size = exp.default_size.bytes(info);
        while needs(&problem).is_none_or(|n| n > budget) && size > (1 << 20) {
            size /= 2;
            problem = exp.kind.problem(size, exp.elem(), None)?;
        }
    }
    match needs(&problem) {
        Some(n) if n <= budget => {
            exp.launches(&problem, info)?;
            Ok(problem)
        }
        other => Err(oom(other)),
    }
}

/// Reserves one allocation that each selected experiment's buffers fit in, in turn
/// ([`crate::arena`]), so each runs on the same memory whatever ran before it.
pub fn reserve_buffers(gpu: &Gpu, selection: &[Selection], opts: &RunOptions) -> Result<()> {
    let (free, _) = gpu.memory()?;
    if let Some(bytes) = reservation(selection, opts, &gpu.info, free) {
        gpu.reserve(bytes)?;
    }
    Ok(())
}

/// The bytes [`reserve_buffers`] reserves with `free` bytes free: the most any one
/// selected experiment's buffers need at the problem [`choose_problem`] picks, each
/// on an [`ALIGN`](crate::arena::ALIGN) boundary. `None` where that would not fit
/// beside the largest copy baseline in the memory [`choose_problem`] allows: each
/// experiment then allocates its own, as it would alone.
pub fn reservation(selection: &[Selection], opts: &RunOptions, info: &DeviceInfo, free: u64) -> Option<u64> {
    let (mut buffers, mut baseline) = (0u64, 0u64);
    for s in selection {
        // An experiment that cannot run says so when its turn comes.
        let Ok(p) = choose_problem(s.experiment, opts, info, free) else {
            continue;
        };
        let sizes: Vec<u64> = s
            .experiment
            .allocations_at(&p)
            .ok()?
            .iter()
            .map(|b| b.bytes())
            .collect::<Option<_>>()?;
        buffers = buffers.max(crate::arena::bytes_for(&sizes)?);
        baseline = baseline.max(baseline_bytes(s.experiment, &p)?.checked_mul(2)?);
    }
    (buffers > 0 && buffers.checked_add(baseline)? <= free / 10 * 9).then_some(buffers)
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
    /// What the kernel multiplies in: `FP32`, `TF32`, `BF16`, `FP16`
    /// ([`crate::experiment::Arithmetic::label`]); empty in files that predate it
    /// (read it with [`Row::precision`]), and then left out when written again.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub precision: String,
}

impl Row {
    /// Its precision: as recorded, or for a file that predates the field, its
    /// variant's as this build declares it ([`precision_of`]).
    pub fn precision(&self) -> &str {
        precision_of(&self.precision, &self.experiment, &self.variant)
    }
}

/// `recorded`, or where it is empty (a file that predates it) the precision this
/// build declares for `experiment`/`variant` (FP32 for one it does not know).
pub fn precision_of<'a>(recorded: &'a str, experiment: &str, variant: &str) -> &'a str {
    if recorded.is_empty() {
        crate::experiments::arithmetic(experiment, variant).label()
    } else {
        recorded
    }
}

/// What a row is of: the kernel, its problem and its declared work.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub experiment: String,
    pub variant: String,
    pub kernel: String,
    pub problem: Problem,
    pub work: Work,
}

impl Case {
    pub fn of(exp: &Experiment, v: &Variant, problem: Problem) -> Case {
        Case {
            experiment: exp.name.to_string(),
            variant: v.name.to_string(),
            kernel: v.kernel.name.to_string(),
            problem,
            work: (exp.work)(&problem),
        }
    }
}

/// Turns a case's declared work and its timing into a row (speed-up filled in later).
pub fn row(case: &Case, timing: Timing, baseline: &Baseline, info: &DeviceInfo, check: Validation) -> Row {
    let bytes = case.work.bytes();
    let gbs = gb_per_s(bytes, timing.median_ms);
    let exp = crate::experiments::named(&case.experiment);
    Row {
        experiment: case.experiment.clone(),
        variant: case.variant.clone(),
        kernel: case.kernel.clone(),
        // f32 for an experiment this build does not declare (a test's own).
        size_bytes: (case.problem.largest_array())
            .and_then(|n| exp.map_or(Elem::F32, Experiment::elem).bytes_of(n))
            .unwrap_or(0),
        size_label: match case.problem {
            Problem::Elements { .. } => None,
            p => Some(p.label()),
        },
        useful_bytes: bytes,
        flops: case.work.flops(),
        timing,
        gb_per_s: gbs,
        gflop_per_s: case.work.flops().map(|f| gflop_per_s(f, timing.median_ms)),
        pct_of_copy: 100.0 * gbs / baseline.gb_per_s,
        pct_of_peak: info.peak_gb_per_s().map(|p| 100.0 * gbs / p),
        speedup_over_slowest: 1.0,
        validated: check.ok,
        check: check.detail,
        precision: crate::experiments::arithmetic(&case.experiment, &case.variant)
            .label()
            .to_string(),
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

/// Looks up a C++ twin's function by its entry-point name.
pub type TwinLookup<'a, 'm> = &'a dyn Fn(&str) -> Result<Function<'m>>;

/// A library's call doing variant `i`'s work on the same buffers (cuBLAS for a
/// product, in one of its operand layouts), timed interleaved with the variant's own
/// launches.
pub type Beside<'a> = &'a dyn Fn(&Prepared, usize) -> Result<()>;

/// One experiment as measured: its baseline, and a row per selected variant with
/// the twin's row beside it where a twin ran, and the timing of each library call
/// given, interleaved with it, in the order given.
pub struct Measured {
    pub baseline: Baseline,
    pub rows: Vec<(Row, Option<Row>, Vec<Timing>)>,
}

/// Runs the selected variants of one experiment: baseline copy, then for each
/// variant reset, launch, validate, time (interleaved with its twin when `twin` is
/// given, and with each call of `beside`: under a power limit a launch's clock depends
/// on what ran before it, so what is compared is timed in the same rounds);
/// `library` runs last on the same buffers (cuBLAS for a product, validated).
pub fn run_experiment(
    gpu: &Gpu,
    selection: &Selection,
    opts: &RunOptions,
    twin: Option<TwinLookup<'_, '_>>,
    beside: &[Beside<'_>],
    mut library: impl FnMut(&mut Prepared) -> Result<()>,
    mut progress: impl FnMut(&str),
) -> Result<Measured> {
    let exp = selection.experiment;
    let problem = choose_problem(exp, opts, &gpu.info, gpu.free_for_buffers()?)?;
    let size = baseline_bytes(exp, &problem).unwrap_or(0);
    progress(&format!("{}: {} per array", exp.name, format_bytes(size)));
    let mut p = Prepared::new(gpu, exp, problem, opts.seed)?;
    // Timed beside the experiment's own buffers, before and after its cases; the
    // faster is kept, so background driver work (freeing a previous experiment's
    // memory) cannot make the baseline look slow and the kernels look good.
    let before = memcpy_baseline(gpu, size, opts.reps)?;
    let mut measured = Vec::new();
    for (i, v) in exp.variants.iter().enumerate() {
        if !selection.includes(v.name) {
            continue;
        }
        progress(&format!("{}/{}", exp.name, v.name));
        // A kernel this GPU cannot run (sm_80 on an older one): one line, no row.
        if let Err(why) = gpu.supports(v.kernel) {
            eprintln!("{}/{}: {why}", exp.name, v.name);
            continue;
        }
        // A shape the copy engine cannot address: one line, no row.
        if let Err(why) = p.applicable(i) {
            eprintln!("{}/{}: {why}", exp.name, v.name);
            continue;
        }
        let rust = gpu.function(v.kernel)?;
        let rust_check = p.check(gpu, i, &rust)?;
        let (cpp, cpp_check) = match twin {
            Some(lookup) => {
                let f = lookup(v.twin)?;
                let what = format!("{} (C++)", v.twin);
                let cpp_check = p.check_with(gpu, i, &what, 0.0, |p| p.launch(gpu, i, &f))?;
                (Some(f), Some(cpp_check))
            }
            None => (None, None),
        };
        let p = &p;
        // Rust's launches, then the twin's and the library's where they run: timings
        // in that order.
        let mut rust_launch = || p.launch(gpu, i, &rust);
        let mut cpp_launch = cpp.as_ref().map(|f| move || p.launch(gpu, i, f));
        let mut lib_launches: Vec<_> = beside.iter().map(|b| move || b(p, i)).collect();
        let timings = if cpp_launch.is_none() && lib_launches.is_empty() {
            vec![time_launches(gpu, opts.reps, rust_launch)?]
        } else {
            let mut launches: Vec<&mut dyn FnMut() -> Result<()>> = vec![&mut rust_launch];
            if let Some(c) = cpp_launch.as_mut() {
                launches.push(c);
            }
            for l in lib_launches.iter_mut() {
                launches.push(l);
            }
            time_interleaved(gpu, opts.reps, &mut launches)?
        };
        let lib_timing = timings[timings.len() - beside.len()..].to_vec();
        measured.push((
            Case::of(exp, v, problem),
            timings,
            rust_check,
            cpp_check,
            lib_timing,
        ));
    }
    library(&mut p)?;
    drop(p);
    let after = memcpy_baseline(gpu, size, opts.reps)?;
    let baseline = before.faster(after);
    let mut rust_rows = Vec::new();
    let mut others = Vec::new();
    for (case, timings, rust_check, cpp_check, lib_timing) in measured {
        rust_rows.push(row(&case, timings[0], &baseline, &gpu.info, rust_check));
        let cpp_row = cpp_check.map(|c| row(&case, timings[1], &baseline, &gpu.info, c));
        others.push((cpp_row, lib_timing));
    }
    fill_speedups(&mut rust_rows);
    Ok(Measured {
        baseline,
        rows: rust_rows
            .into_iter()
            .zip(others)
            .map(|(r, (c, l))| (r, c, l))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::DefaultSize;

    fn info() -> DeviceInfo {
        DeviceInfo {
            name: "test".into(),
            ..DeviceInfo::h100()
        }
    }

    fn case(bytes: u64) -> Case {
        Case {
            experiment: "e".into(),
            variant: "v".into(),
            kernel: "k".into(),
            problem: Problem::Elements { n: 1 },
            work: Work::Bytes(bytes),
        }
    }

    #[test]
    fn row_arithmetic() {
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
        let ok = Validation {
            ok: true,
            detail: String::new(),
        };
        let r = row(&case(2_000_000_000), t, &base, &info(), ok);
        assert!((r.gb_per_s - 2000.0).abs() < 1e-9);
        assert!((r.pct_of_copy - 50.0).abs() < 1e-9);
        assert!((r.pct_of_peak.unwrap() - 100.0 * 2000.0 / 3352.32).abs() < 1e-6);
        assert_eq!((r.size_bytes, r.size_label), (4, None));
    }

    #[test]
    fn speedups_are_relative_to_the_slowest_variant() {
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
                    &case(1_000_000),
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

    /// The whole suite on an H100: the largest experiment's buffers (stride 64 reads 64
    /// times its 400 MiB output), reserved only where they fit beside a copy baseline.
    #[test]
    fn the_reservation_holds_the_largest_experiment() {
        let all = crate::experiments::select(&[]).unwrap();
        let opts = RunOptions {
            size: None,
            shape: None,
            reps: Default::default(),
            seed: 1,
        };
        let stride = 400u64 << 20;
        let want = crate::arena::bytes_for(&[64 * stride, stride]).unwrap();
        let gib = 1u64 << 30;
        assert_eq!(reservation(&all, &opts, &info(), 80 * gib), Some(want));
        // Less memory: stride halves its arrays (as its run would), and the reservation with it.
        let fewer = reservation(&all, &opts, &info(), 20 * gib).unwrap();
        assert!(fewer < want && fewer + 2 * stride <= 18 * gib, "{fewer}");
        // A size no experiment fits at: nothing is reserved (and the run says why).
        let copy = crate::experiments::select(&["copy".to_string()]).unwrap();
        let big = RunOptions {
            size: Some(3 * gib),
            ..opts
        };
        assert_eq!(reservation(&copy, &big, &info(), 10 * gib), None);
        assert_eq!(
            reservation(&copy, &big, &info(), 20 * gib),
            Some(crate::arena::bytes_for(&[3 << 30; 2]).unwrap())
        );
    }

    #[test]
    fn default_size_is_beyond_l2() {
        assert_eq!(DefaultSize::BeyondL2.bytes(&info()), 400 << 20);
        let small = DeviceInfo {
            l2_bytes: 4 << 20,
            ..info()
        };
        assert_eq!(DefaultSize::BeyondL2.bytes(&small), 256 << 20);
    }
}
