//! Running a comparison: the twins compiled for the selected experiments, then every
//! experiment through the one harness ([`harness::run_experiment`]) with the twin timed beside
//! each Rust kernel, and cuBLAS on a product's own buffers.

use std::path::Path;

use super::cublas::{Cublas, Math};
use super::twins::{Twins, Unusable};
use super::{CompareReport, CompareRow, CublasRate, CublasRow};
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::experiment::Reference;
use crate::experiments::Selection;
use crate::harness::{self, RunOptions};
use crate::prepared::Prepared;
use crate::ptx::PtxModule;
use crate::run_table::ExperimentBaseline;
use crate::timing::time_launches;
use crate::units::gflop_per_s;

/// Compiles the selected experiments' twins; on failure, the reason, never an error.
fn build_twins(gpu: &Gpu, selection: &[Selection]) -> std::result::Result<Twins, Unusable> {
    let wanted: Vec<_> = selection.iter().map(|s| s.experiment).collect();
    Twins::build(gpu, &wanted)
}

/// Writes each twin's PTX as `EXPERIMENT.cpp.ptx` (`EXPERIMENT.sm80.cpp.ptx`,
/// `EXPERIMENT.sm90a.cpp.ptx` for the newer modules' kernels' twins) and the Rust
/// modules as `rust-kernels.ptx`, `rust-kernels-sm80.ptx` and `rust-kernels-sm90a.ptx`
/// into `dir`, for diffing the two compilers' output.
fn dump_ptx(dir: &Path, twins: Option<&Twins>) -> Result<()> {
    let write = |name: &str, text: &str| crate::output::write_file(&dir.join(name), text);
    crate::output::prepare_dir(dir)?;
    let suffix = |m: PtxModule| m.requires().map(|a| a.replace('_', "")).unwrap_or_default();
    for m in PtxModule::ALL {
        let name = match m.requires() {
            None => "rust-kernels.ptx".to_string(),
            Some(_) => format!("rust-kernels-{}.ptx", suffix(m)),
        };
        write(&name, crate::ptx::text(m))?;
    }
    for (experiment, _, ptx, module) in twins.into_iter().flat_map(Twins::ptx) {
        let dot = if module == PtxModule::Baseline {
            String::new()
        } else {
            format!(".{}", suffix(module))
        };
        write(&format!("{experiment}{dot}.cpp.ptx"), ptx)?;
    }
    Ok(())
}

/// Runs the comparison. `dump` writes the PTX of both sides first.
pub fn compare(
    gpu: &Gpu,
    selection: &[Selection],
    opts: &RunOptions,
    dump: Option<&Path>,
    mut progress: impl FnMut(&str),
) -> Result<CompareReport> {
    harness::reserve_buffers(gpu, selection, opts)?;
    let twins = build_twins(gpu, selection);
    if let Some(dir) = dump {
        dump_ptx(dir, twins.as_ref().ok())?;
    }
    let (cpp, cpp_broken) = match &twins {
        Ok(t) => (t.describe(), false),
        Err(Unusable::Unavailable(why)) => (format!("C++ twins: unavailable, Rust only: {why}"), false),
        Err(Unusable::Broken(why)) => (format!("C++ twins: BROKEN, Rust only: {why}"), true),
    };
    let mut report = CompareReport {
        schema: crate::run_table::SCHEMA,
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        date: None,
        device: gpu.info.clone(),
        rust_ptx_arch: crate::ptx::ARCH.to_string(),
        cpp_available: twins.is_ok(),
        cpp,
        cpp_broken,
        cublas: None,
        baselines: Vec::new(),
        cublas_rows: Vec::new(),
        rows: Vec::new(),
    };
    let lookup = |name: &str| twins.as_ref().map_err(|_| unreachable_twin(name))?.function(name);
    // Loaded on first use: only products need it, and a handle costs time and memory.
    let mut cublas: Option<std::result::Result<Cublas, String>> = None;
    for s in selection {
        let exp = s.experiment;
        let product = matches!(exp.reference, Reference::Product { .. });
        if product {
            let lib = cublas.get_or_insert_with(|| Cublas::load(gpu));
            report.cublas = Some(match lib {
                Ok(c) => format!("cuBLAS {} ({})", c.version_string(), c.found),
                Err(why) => format!("cuBLAS: unavailable: {why}"),
            });
        }
        let lib = cublas.as_ref().and_then(|c| c.as_ref().ok()).filter(|_| product);
        // cuBLAS in each variant's own arithmetic, timed in the same rounds as it.
        let same_work = |p: &Prepared, i: usize| match (lib, p.gemm()) {
            (Some(c), Some(g)) => c.gemm(Math::from(exp.variants[i].arithmetic), &g),
            _ => Ok(()),
        };
        let mut sgemm = Vec::new();
        let measured = harness::run_experiment(
            gpu,
            s,
            opts,
            twins.is_ok().then_some(&lookup as harness::TwinLookup),
            lib.is_some().then_some(&same_work as harness::Beside),
            |p| {
                let (Some(c), Some(g)) = (lib, p.gemm()) else {
                    return Ok(());
                };
                for &math in Math::on(g.input) {
                    // Reset, compute, validate, as every kernel is checked, against the
                    // same reference with the bound widened for TF32's rounded inputs
                    // (and for a 16-bit C's rounding, by C's element type).
                    let what = format!("cuBLAS {} {}", math.routine(), math.label());
                    let check = p.check_with(gpu, 0, &what, math.input_rounding(), |_| c.gemm(math, &g))?;
                    let timing = time_launches(gpu, opts.reps, || c.gemm(math, &g))?;
                    let flops = 2 * (g.m * g.n * g.k) as u64;
                    sgemm.push(CublasRow {
                        experiment: exp.name.to_string(),
                        math,
                        m: g.m,
                        n: g.n,
                        k: g.k,
                        timing,
                        gflop_per_s: gflop_per_s(flops, timing.median_ms),
                        validated: check.ok,
                        check: check.detail,
                    });
                }
                Ok(())
            },
            &mut progress,
        )?;
        // Each kernel beside cuBLAS in its own arithmetic (the TF32 rungs beside TF32),
        // as timed in the same rounds as the kernel.
        let line = |math: Math| sgemm.iter().find(|c| c.math == math).map(|c| c.gflop_per_s);
        for (rust, cpp, beside) in &measured.rows {
            let math = Math::from(crate::experiments::arithmetic(exp.name, &rust.variant));
            let interleaved = beside.zip(rust.flops).map(|(t, f)| gflop_per_s(f, t.median_ms));
            let cublas = interleaved
                .map(CublasRate::Interleaved)
                .or(line(math).map(CublasRate::Alone));
            report.rows.push(CompareRow::new(rust, cpp.as_ref(), cublas));
        }
        report.cublas_rows.extend(sgemm);
        report.baselines.push(ExperimentBaseline {
            experiment: exp.name.to_string(),
            baseline: measured.baseline,
        });
    }
    Ok(report)
}

/// Never reached: the lookup is only handed to the harness when the twins loaded.
fn unreachable_twin(name: &str) -> Error {
    Error::MissingKernel {
        kernel: format!("{name} (C++ twin)"),
    }
}
