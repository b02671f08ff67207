//! Criterion benchmarks: one group per experiment in `coalesce::experiments::ALL`,
//! one benchmark per variant (strides and offsets as the parameter), timed on the
//! GPU with CUDA events around the launches, throughput in useful bytes (GB/s) or
//! FLOPs (elements/s = FLOP/s).
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
        Work::Flops { flops, .. } => Throughput::Elements(flops),
    }
}

fn bench_experiment(c: &mut Criterion, gpu: &Gpu, exp: &'static Experiment, opts: &RunOptions) -> Result<()> {
    let (free, _) = gpu.memory()?;
    let problem = harness::choose_problem(exp, opts, &gpu.info, free)?;
    let mut prepared = Prepared::new(gpu, exp, problem, opts.seed)?;
    let size = match harness::baseline_bytes(&problem) {
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
    let mut c = Criterion::default().configure_from_args();
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
