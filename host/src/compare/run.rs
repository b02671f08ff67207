//! Running a comparison: the twins compiled for the selected experiments, then every
//! experiment through the one harness ([`harness::run_experiment`]) with the twin timed beside
//! each Rust kernel, and cuBLAS on a product's own buffers.

use std::path::Path;

use super::cublas::{Cublas, Math};
use super::layout::Layout;
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
use crate::timing::{Timing, time_interleaved};
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
        // cuBLAS in each variant's own arithmetic, in every operand layout, each timed
        // in the same rounds as the variant.
        let in_layout = |layout: Layout| {
            move |p: &Prepared, i: usize| match (lib, p.gemm()) {
                (Some(c), Some(g)) => c.gemm(Math::from(exp.variants[i].arithmetic), &g, layout),
                _ => Ok(()),
            }
        };
        let layouts = Layout::ALL.map(in_layout);
        let beside: Vec<harness::Beside> = match lib {
            Some(_) => layouts.iter().map(|f| f as harness::Beside).collect(),
            None => Vec::new(),
        };
        let mut sgemm = Vec::new();
        let measured = harness::run_experiment(
            gpu,
            s,
            opts,
            twins.is_ok().then_some(&lookup as harness::TwinLookup),
            &beside,
            |p| {
                let (Some(c), Some(g)) = (lib, p.gemm()) else {
                    return Ok(());
                };
                for &math in Math::on(g.input) {
                    // Reset, compute, validate, as every kernel is checked, against the
                    // same reference with the bound widened for TF32's rounded inputs
                    // (and for a 16-bit C's rounding, by C's element type). The other
                    // layouts read the same buffers transposed: a product of other
                    // numbers, the same work.
                    let what = format!("cuBLAS {} {}", math.routine(), math.label());
                    let check = p.check_with(gpu, 0, &what, math.input_rounding(), |_| {
                        c.gemm(math, &g, Layout::NN)
                    })?;
                    let mut calls: Vec<_> = Layout::ALL.map(|l| move || c.gemm(math, &g, l)).into();
                    let mut launches: Vec<&mut dyn FnMut() -> Result<()>> = calls
                        .iter_mut()
                        .map(|f| f as &mut dyn FnMut() -> Result<()>)
                        .collect();
                    let (layout, timing) = fastest(&time_interleaved(gpu, opts.reps, &mut launches)?);
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
                        layout: Some(layout),
                    });
                }
                Ok(())
            },
            &mut progress,
        )?;
        // Each kernel beside cuBLAS in its own arithmetic (the TF32 rungs beside TF32)
        // at its fastest layout, as timed in the same rounds as the kernel.
        let line = |math: Math| sgemm.iter().find(|c| c.math == math);
        for (rust, cpp, beside) in &measured.rows {
            let math = Math::from(crate::experiments::arithmetic(exp.name, &rust.variant));
            let best = (!beside.is_empty()).then(|| fastest(beside));
            let (cublas, layout) = match (best, rust.flops, line(math)) {
                (Some((layout, t)), Some(f), _) => (
                    Some(CublasRate::Interleaved(gflop_per_s(f, t.median_ms))),
                    Some(layout),
                ),
                (_, _, Some(l)) => (Some(CublasRate::Alone(l.gflop_per_s)), l.layout),
                _ => (None, None),
            };
            let mut row = CompareRow::new(rust, cpp.as_ref(), cublas);
            row.cublas_layout = layout;
            report.rows.push(row);
        }
        report.cublas_rows.extend(sgemm);
        report.baselines.push(ExperimentBaseline {
            experiment: exp.name.to_string(),
            baseline: measured.baseline,
        });
    }
    Ok(report)
}

/// The fastest of cuBLAS's timings, one per layout in [`Layout::ALL`] order, by
/// median (the first on a tie).
fn fastest(timings: &[Timing]) -> (Layout, Timing) {
    let mut best = (Layout::ALL[0], timings[0]);
    for (&layout, &t) in Layout::ALL.iter().zip(timings).skip(1) {
        if t.median_ms < best.1.median_ms {
            best = (layout, t);
        }
    }
    best
}

/// Never reached: the lookup is only handed to the harness when the twins loaded.
fn unreachable_twin(name: &str) -> Error {
    Error::MissingKernel {
        kernel: format!("{name} (C++ twin)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_layout_is_the_lowest_median_and_the_first_on_a_tie() {
        let t = |ms: f64| Timing::from_samples(vec![ms, ms + 1.0, ms - 0.5]);
        let (layout, timing) = fastest(&[t(2.0), t(1.5), t(3.0), t(1.5)]);
        assert_eq!((layout, timing.median_ms), (Layout::TN, 1.5));
        assert_eq!(fastest(&[t(1.0); 4]).0, Layout::NN);
        assert_eq!(fastest(&[t(4.0), t(4.0), t(4.0), t(0.5)]).0, Layout::TT);
    }
}
