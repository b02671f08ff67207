//! Criterion benchmarks: one group per experiment in `coalesce::experiments::ALL`,
//! one benchmark per variant (strides and offsets as the parameter), timed on the
//! GPU with CUDA events around the launches, throughput in useful bytes (GB/s, as the
//! table prints it) or, for the products, FLOPs (GFLOP/s, TFLOP/s: [`GpuTime`]).
//!
//! ```sh
//! cargo bench                                     # every experiment, default size
//! COALESCE_BENCH_SIZE=64M cargo bench -- stride   # smaller arrays, stride only
//! ```

use std::process::ExitCode;
use std::time::Duration;

use coalesce::device::Gpu;
use coalesce::error::Result;
use coalesce::experiment::{Experiment, Work};
use coalesce::experiments::ALL;
use coalesce::harness::{self, RunOptions};
use coalesce::prepared::Prepared;
use coalesce::timing::{Reps, time_batch};
use coalesce::units::{format_bytes, parse_size};
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

/// Bytes per array; unset means the harness's default (8 x L2, at least 256 MiB).
const SIZE_VAR: &str = "COALESCE_BENCH_SIZE";

/// A bench of a kernel that failed, or of a wrong kernel, is worthless: stop loudly.
fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("error: {what}: {e}");
    std::process::exit(1)
}

/// Criterion's id for a variant: numeric variants (strides, offsets) become the
/// parameter of their kernel, so criterion plots them as a series.
fn id(kernel: &str, variant: &str) -> BenchmarkId {
    match variant.parse::<u64>() {
        Ok(n) => BenchmarkId::new(kernel, n),
        Err(_) => BenchmarkId::from_parameter(variant),
    }
}

fn throughput(work: Work) -> Throughput {
    match work {
        // Decimal, so criterion's GB/s is the table's GB/s.
        Work::Bytes(b) => Throughput::BytesDecimal(b),
        // Criterion has no FLOPs: one "element" is one FLOP, which [`Units`] names.
        Work::Flops { flops, .. } => Throughput::Elements(flops),
    }
}

/// Criterion's measurement for these benches: the time each sample's launches took
/// on the GPU (CUDA events, through `iter_custom`), in [`Units`].
struct GpuTime;

/// Times as criterion shows them; throughputs in decimal units, the elements of
/// [`throughput`] named as what they are, FLOPs (criterion's own formatter would say
/// `Gelem/s`).
struct Units;

impl Measurement for GpuTime {
    type Intermediate = std::time::Instant;
    type Value = Duration;

    // Only `iter_custom` runs here, which measures on the GPU; these two are what
    // criterion's wall clock does, for completeness.
    fn start(&self) -> Self::Intermediate {
        std::time::Instant::now()
    }
    fn end(&self, i: Self::Intermediate) -> Self::Value {
        i.elapsed()
    }
    fn add(&self, v1: &Self::Value, v2: &Self::Value) -> Self::Value {
        *v1 + *v2
    }
    fn zero(&self) -> Self::Value {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Self::Value) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Units
    }
}

impl ValueFormatter for Units {
    fn scale_values(&self, ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match ns {
            ns if ns < 1.0 => (1e3, "ps"),
            ns if ns < 1e3 => (1.0, "ns"),
            ns if ns < 1e6 => (1e-3, "µs"),
            ns if ns < 1e9 => (1e-6, "ms"),
            _ => (1e-9, "s"),
        };
        for v in values {
            *v *= factor;
        }
        unit
    }

    fn scale_throughputs(
        &self,
        typical_ns: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        const FLOPS: [&str; 5] = ["FLOP/s", "KFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s"];
        const BYTES: [&str; 5] = ["B/s", "KB/s", "MB/s", "GB/s", "TB/s"];
        const BITS: [&str; 5] = ["b/s", "Kb/s", "Mb/s", "Gb/s", "Tb/s"];
        let (amount, units) = match *throughput {
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => (n, FLOPS),
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => (n, BYTES),
            Throughput::Bits(n) => (n, BITS),
        };
        let per_second = |ns: f64| amount as f64 * 1e9 / ns;
        let mut step = 0;
        while step + 1 < units.len() && per_second(typical_ns) >= 1000f64.powi(step as i32 + 1) {
            step += 1;
        }
        for v in values {
            *v = per_second(*v) / 1000f64.powi(step as i32);
        }
        units[step]
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

fn bench_experiment(
    c: &mut Criterion<GpuTime>,
    gpu: &Gpu,
    exp: &'static Experiment,
    opts: &RunOptions,
) -> Result<()> {
    let (free, _) = gpu.memory()?;
    let problem = harness::choose_problem(exp, opts, &gpu.info, free)?;
    let mut prepared = Prepared::new(gpu, exp, problem, opts.seed)?;
    let size = match harness::baseline_bytes(exp, &problem) {
        Some(b) if problem.label().ends_with("elements") => format!("{} per array", format_bytes(b)),
        _ => problem.label(),
    };
    eprintln!("{}: {size}", exp.name);
    let work = prepared.work();
    let mut group = c.benchmark_group(exp.name);
    if work.flops().is_some() {
        // Compute-bound launches can take a large fraction of a second: fewer,
        // equal samples keep a run within minutes.
        group.sample_size(10).sampling_mode(SamplingMode::Flat);
    }
    for (i, v) in exp.variants.iter().enumerate() {
        if let Err(why) = gpu.supports(v.kernel) {
            eprintln!("{}/{}: {why}", exp.name, v.name);
            continue;
        }
        let f = gpu.function(v.kernel)?;
        let name = format!("{}/{}", exp.name, v.name);
        let mut checked = false;
        group.throughput(throughput(work));
        // Criterion calls this only for benchmarks its filter selects, so only
        // those are validated and timed.
        group.bench_function(id(v.kernel.name, v.name), |b| {
            if !checked {
                match prepared.check(gpu, i, &f) {
                    Ok(check) if check.ok => {}
                    Ok(check) => fail(&format!("{name} did not validate"), check.detail),
                    Err(e) => fail(&name, e),
                }
                for _ in 0..opts.reps.warmup {
                    prepared.launch(gpu, i, &f).unwrap_or_else(|e| fail(&name, e));
                }
                checked = true;
            }
            let p = &prepared;
            b.iter_custom(|iters| {
                let ms = time_batch(gpu, iters, || p.launch(gpu, i, &f)).unwrap_or_else(|e| fail(&name, e));
                Duration::from_secs_f64(ms * 1e-3)
            });
        });
    }
    group.finish();
    Ok(())
}

fn main() -> ExitCode {
    let size = match std::env::var(SIZE_VAR) {
        Ok(s) => match parse_size(&s) {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("error: {SIZE_VAR}: {e}");
                return ExitCode::from(2);
            }
        },
        Err(_) => None,
    };
    let help = std::env::args().any(|a| a == "--help" || a == "-h");
    // Before criterion starts (it prints about its plotting backend), so that a
    // machine without a GPU gets one line; criterion's --help needs no GPU.
    let gpu = match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(_) if help => None,
        Err(e) => {
            eprintln!("coalesce benches: nothing to measure: {e}");
            return ExitCode::SUCCESS;
        }
    };
    let mut c = Criterion::default()
        .with_measurement(GpuTime)
        .configure_from_args();
    let Some(gpu) = gpu else {
        return ExitCode::SUCCESS;
    };
    let opts = RunOptions {
        size,
        shape: None,
        reps: Reps::default(),
        seed: 0x5eed,
    };
    for exp in ALL {
        if let Err(e) = bench_experiment(&mut c, &gpu, exp, &opts) {
            fail(exp.name, e);
        }
    }
    c.final_summary();
    ExitCode::SUCCESS
}
