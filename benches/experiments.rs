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
use coalesce::experiments::ALL;
use coalesce::harness::{self, Experiment, Plan, Prepared, Reps, Work};
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

fn bench_experiment(c: &mut Criterion, gpu: &Gpu, exp: &dyn Experiment, plan: &Plan) -> Result<()> {
    let (free, _) = gpu.memory()?;
    let params = harness::choose_params(exp, plan, &gpu.info, free)?;
    let mut prepared: Box<dyn Prepared + '_> = exp.prepare(gpu, &params)?;
    let size = prepared
        .size_label()
        .unwrap_or_else(|| format!("{} per array", format_bytes(params.size)));
    eprintln!("{}: {size}", exp.name());
    let cases = prepared.cases().to_vec();
    let mut group = c.benchmark_group(exp.name());
    if cases.iter().any(|c| c.work.flops().is_some()) {
        // Compute-bound launches can take a large fraction of a second: fewer,
        // equal samples keep a run within minutes.
        group.sample_size(10).sampling_mode(SamplingMode::Flat);
    }
    for (i, case) in cases.iter().enumerate() {
        let f = gpu.function(case.kernel)?;
        let name = format!("{}/{}", exp.name(), case.variant);
        let mut checked = false;
        group.throughput(throughput(case.work));
        // Criterion calls this only for benchmarks its filter selects, so only
        // those are validated and timed.
        group.bench_function(id(case.kernel, &case.variant), |b| {
            if !checked {
                match harness::check_case(gpu, prepared.as_mut(), i, &f) {
                    Ok(v) if v.ok => {}
                    Ok(v) => fail(&format!("{name} did not validate"), v.detail),
                    Err(e) => fail(&name, e),
                }
                for _ in 0..plan.reps.warmup {
                    harness::launch_case(gpu, prepared.as_ref(), i, &f).unwrap_or_else(|e| fail(&name, e));
                }
                checked = true;
            }
            let p = prepared.as_ref();
            b.iter_custom(|iters| {
                let ms = harness::time_batch(gpu, iters, || harness::launch_case(gpu, p, i, &f))
                    .unwrap_or_else(|e| fail(&name, e));
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
    let plan = Plan {
        size,
        shape: None,
        reps: Reps::default(),
        seed: 0x5eed,
    };
    for exp in ALL {
        if let Err(e) = bench_experiment(&mut c, &gpu, *exp, &plan) {
            fail(exp.name(), e);
        }
    }
    c.final_summary();
    ExitCode::SUCCESS
}
