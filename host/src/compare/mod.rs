//! `coalesce compare`: every Rust kernel against its CUDA C++ twin (and matmul
//! against cuBLAS SGEMM), in one process, one context, on the same buffers,
//! validated by the same check and timed by the same harness, interleaved.
//!
//! [`twins`] holds the C++ sources and loads them, [`nvrtc`] compiles them,
//! [`cublas`] wraps SGEMM and [`libs`] finds the toolkit's libraries at run time,
//! so a machine without them builds, tests, and still gets the Rust-only table.

pub mod cublas;
pub mod libs;
pub mod nvrtc;
pub mod twins;

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use self::cublas::{Cublas, Math};
use self::twins::{Twins, Unusable};
use crate::device::{DeviceInfo, Gpu};
use crate::error::{Error, Result};
use crate::experiments::Selection;
use crate::harness::{
    self, Plan, Row, Timing, check_case, check_with, choose_params, launch_case, memcpy_baseline,
    time_interleaved, time_launches,
};
use crate::table::{self, ExperimentBaseline, Report};
use crate::units::format_bytes;
use crate::validate::Validation;

/// One side (Rust or C++) of a comparison row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub timing: Timing,
    pub gb_per_s: f64,
    pub gflop_per_s: Option<f64>,
    pub pct_of_copy: f64,
    /// Effective bandwidth over the theoretical peak.
    #[serde(default)]
    pub pct_of_peak: Option<f64>,
    /// GFLOP/s over cuBLAS SGEMM (FP32) on the same matrices (matmul only).
    pub pct_of_cublas: Option<f64>,
    pub validated: bool,
    pub check: String,
}

impl Side {
    /// One side of a kernel, from the row the harness made of its timing;
    /// `sgemm_fp32` (cuBLAS GFLOP/s on the same matrices) gives its % of cuBLAS.
    fn of(r: &Row, sgemm_fp32: Option<f64>) -> Side {
        Side {
            timing: r.timing,
            gb_per_s: r.gb_per_s,
            gflop_per_s: r.gflop_per_s,
            pct_of_copy: r.pct_of_copy,
            pct_of_peak: r.pct_of_peak,
            pct_of_cublas: sgemm_fp32.zip(r.gflop_per_s).map(|(b, g)| 100.0 * g / b),
            validated: r.validated,
            check: r.check.clone(),
        }
    }

    /// What the table ranks by: GFLOP/s where the work is FLOPs, else GB/s.
    pub fn rate(&self) -> f64 {
        self.gflop_per_s.unwrap_or(self.gb_per_s)
    }
}

/// One kernel, both languages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub experiment: String,
    pub variant: String,
    pub kernel: String,
    /// Bytes per array the experiment ran at.
    pub size_bytes: u64,
    /// The problem size as the experiment describes it (`8192x8192`), if not bytes.
    pub size_label: Option<String>,
    pub useful_bytes: u64,
    pub flops: Option<u64>,
    pub rust: Side,
    /// None where the twins could not run (the report says why).
    pub cpp: Option<Side>,
    /// Rust's rate over C++'s: above 1, Rust is faster.
    pub rust_over_cpp: Option<f64>,
}

impl CompareRow {
    /// A kernel's row from the harness rows of its Rust side and, where its twin
    /// ran, its C++ side; `sgemm_fp32` as for [`Side`].
    pub fn new(rust: &Row, cpp: Option<&Row>, sgemm_fp32: Option<f64>) -> CompareRow {
        let (rust_side, cpp) = (Side::of(rust, sgemm_fp32), cpp.map(|c| Side::of(c, sgemm_fp32)));
        CompareRow {
            experiment: rust.experiment.clone(),
            variant: rust.variant.clone(),
            kernel: rust.kernel.clone(),
            size_bytes: rust.size_bytes,
            size_label: rust.size_label.clone(),
            useful_bytes: rust.useful_bytes,
            flops: rust.flops,
            rust_over_cpp: cpp.as_ref().map(|c| rust_side.rate() / c.rate()),
            rust: rust_side,
            cpp,
        }
    }
}

/// cuBLAS SGEMM on an experiment's matrices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CublasRow {
    pub experiment: String,
    pub math: Math,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub timing: Timing,
    pub gflop_per_s: f64,
    pub validated: bool,
    pub check: String,
}

impl CublasRow {
    /// `cuBLAS SGEMM FP32 4096x4096x4096 = 48000 GFLOP/s (median of 20)`.
    pub fn describe(&self) -> String {
        format!(
            "cuBLAS SGEMM {} {}x{}x{} = {:.0} GFLOP/s (median of {})",
            self.math.label(),
            self.m,
            self.n,
            self.k,
            self.gflop_per_s,
            self.timing.reps
        )
    }
}

/// Everything `coalesce compare` measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    pub coalesce_version: String,
    pub device: DeviceInfo,
    /// The `-C target-cpu` of the Rust PTX.
    pub rust_ptx_arch: String,
    /// One line on the C++ side: the compiler and architecture, or why there is none.
    pub cpp: String,
    pub cpp_available: bool,
    /// Set when a twin is wrong (does not compile, lacks a kernel): a failure.
    pub cpp_broken: bool,
    /// One line on cuBLAS, where an experiment wanted it.
    pub cublas: Option<String>,
    pub baselines: Vec<ExperimentBaseline>,
    pub cublas_rows: Vec<CublasRow>,
    pub rows: Vec<CompareRow>,
}

impl CompareReport {
    /// Rows, cuBLAS lines and broken twins that count as failures.
    pub fn failures(&self) -> usize {
        let rows = self
            .rows
            .iter()
            .filter(|r| !r.rust.validated || r.cpp.as_ref().is_some_and(|c| !c.validated))
            .count();
        rows + self.cublas_rows.iter().filter(|c| !c.validated).count() + usize::from(self.cpp_broken)
    }

    /// The Rust side alone, as `coalesce run` reports it: the same harness made
    /// these numbers, so the report's results table reads them like a plain run.
    pub fn rust_run(&self) -> Report {
        let mut rows: Vec<Row> = self
            .rows
            .iter()
            .map(|r| Row {
                experiment: r.experiment.clone(),
                variant: r.variant.clone(),
                kernel: r.kernel.clone(),
                size_bytes: r.size_bytes,
                size_label: r.size_label.clone(),
                useful_bytes: r.useful_bytes,
                flops: r.flops,
                timing: r.rust.timing,
                gb_per_s: r.rust.gb_per_s,
                gflop_per_s: r.rust.gflop_per_s,
                pct_of_copy: r.rust.pct_of_copy,
                pct_of_peak: r.rust.pct_of_peak,
                speedup_over_slowest: 1.0,
                validated: r.rust.validated,
                check: r.rust.check.clone(),
            })
            .collect();
        harness::fill_speedups(&mut rows);
        Report {
            coalesce_version: self.coalesce_version.clone(),
            device: self.device.clone(),
            ptx_arch: self.rust_ptx_arch.clone(),
            peak_gb_per_s: self.device.peak_gb_per_s(),
            baselines: self.baselines.clone(),
            rows,
        }
    }

    /// The C++ line and, where an experiment wanted cuBLAS, the cuBLAS line: what
    /// was compiled and loaded, or why not.
    pub fn toolkit(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.cpp.as_str()).chain(self.cublas.as_deref())
    }

    /// cuBLAS SGEMM in plain FP32 on `experiment`'s matrices, where it ran.
    pub fn sgemm_fp32(&self, experiment: &str) -> Option<&CublasRow> {
        self.cublas_rows
            .iter()
            .find(|c| c.experiment == experiment && c.math == Math::Fp32)
    }
}

/// The NVRTC and cuBLAS lines of `coalesce info`: found where, or why not.
pub fn toolkit_lines() -> Vec<String> {
    let nvrtc = match nvrtc::Nvrtc::load() {
        Ok(n) => format!("NVRTC: {} ({})", n.version_string(), n.found),
        Err(e) => format!("NVRTC: unavailable: {e}"),
    };
    let cublas_lib = libs::Lib {
        label: "cuBLAS",
        stem: "cublas",
        // SAFETY: only tries to open the library.
        present: || unsafe { cudarc::cublas::sys::is_culib_present() },
    };
    let cublas = match libs::locate(&cublas_lib, &libs::toolkit_dirs()) {
        Ok(found) => format!("cuBLAS: {found}"),
        Err(e) => format!("cuBLAS: unavailable: {e}"),
    };
    vec![nvrtc, cublas]
}

/// Compiles the selected experiments' twins; on failure, the reason, never an error.
fn build_twins(gpu: &Gpu, selection: &[Selection]) -> std::result::Result<Twins, Unusable> {
    let wanted: Vec<(&str, Vec<&str>)> = selection
        .iter()
        .map(|s| (s.experiment.name(), s.experiment.kernels()))
        .collect();
    Twins::build(gpu, &wanted)
}

/// Writes each twin's PTX as `EXPERIMENT.cpp.ptx` and the Rust PTX as
/// `rust-kernels.ptx` into `dir`, for diffing the two compilers' output.
fn dump_ptx(dir: &Path, twins: Option<&Twins>) -> Result<()> {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| Error::Write {
            path: path.display().to_string(),
            source,
        })
    };
    std::fs::create_dir_all(dir).map_err(|source| Error::Write {
        path: dir.display().to_string(),
        source,
    })?;
    write("rust-kernels.ptx", crate::ptx::PTX)?;
    for (twin, ptx) in twins.into_iter().flat_map(Twins::ptx) {
        write(&format!("{}.cpp.ptx", twin.experiment), ptx)?;
    }
    Ok(())
}

/// Runs the comparison. `dump` writes the PTX of both sides first.
pub fn compare(
    gpu: &Gpu,
    selection: &[Selection],
    plan: &Plan,
    dump: Option<&Path>,
    mut progress: impl FnMut(&str),
) -> Result<CompareReport> {
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
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
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
    // Loaded on first use: only matmul needs it, and a handle costs time and memory.
    let mut cublas: Option<std::result::Result<Cublas, String>> = None;
    for s in selection {
        let exp = s.experiment;
        let (free, _) = gpu.memory()?;
        let params = choose_params(exp, plan, &gpu.info, free)?;
        let size = params.size;
        progress(&format!("{}: {} per array", exp.name(), format_bytes(size)));
        let mut p = exp.prepare(gpu, &params)?;
        let label = p.size_label();
        let before = memcpy_baseline(gpu, size, plan.reps)?;
        let mut measured = Vec::new();
        let mut gemm_case = None;
        for i in 0..p.cases().len() {
            let case = p.cases()[i].clone();
            if s.variants.as_ref().is_some_and(|v| !v.contains(&case.variant)) {
                continue;
            }
            progress(&format!("{}/{}", exp.name(), case.variant));
            gemm_case = gemm_case.or(p.gemm(i).map(|_| i));
            let rust = gpu.function(case.kernel)?;
            let rust_check = check_case(gpu, p.as_mut(), i, &rust)?;
            let (timings, cpp_check) = match &twins {
                Ok(t) => {
                    let twin = t.function(case.kernel)?;
                    let cpp_check = check_with(gpu, p.as_mut(), i, &format!("{} (C++)", case.kernel), |p| {
                        launch_case(gpu, p, i, &twin)
                    })?;
                    let p = p.as_ref();
                    let timings = time_interleaved(
                        gpu,
                        plan.reps,
                        &mut [&mut || launch_case(gpu, p, i, &rust), &mut || {
                            launch_case(gpu, p, i, &twin)
                        }],
                    )?;
                    (timings, Some(cpp_check))
                }
                Err(_) => (
                    vec![time_launches(gpu, plan.reps, || {
                        launch_case(gpu, p.as_ref(), i, &rust)
                    })?],
                    None,
                ),
            };
            measured.push((case, timings, rust_check, cpp_check));
        }
        let mut sgemm = Vec::new();
        if let Some(i) = gemm_case {
            let lib = cublas.get_or_insert_with(|| Cublas::load(gpu));
            report.cublas = Some(match lib {
                Ok(c) => format!("cuBLAS {} ({})", c.version_string(), c.found),
                Err(why) => format!("cuBLAS: unavailable: {why}"),
            });
            if let Ok(c) = lib {
                for math in [Math::Fp32, Math::Tf32] {
                    let g = p.gemm(i).expect("gemm_case has operands");
                    // Reset, compute, validate, as check_with does, against the same
                    // reference with the bound widened for TF32's rounded inputs.
                    p.reset(gpu, i)?;
                    c.sgemm(math, &g)?;
                    gpu.sync(&format!("running cuBLAS SGEMM {}", math.label()))?;
                    let check = p.validate_gemm(gpu, i, math.input_rounding())?;
                    let timing = time_launches(gpu, plan.reps, || c.sgemm(math, &g))?;
                    let flops = 2.0 * g.m as f64 * g.n as f64 * g.k as f64;
                    sgemm.push(CublasRow {
                        experiment: exp.name().to_string(),
                        math,
                        m: g.m,
                        n: g.n,
                        k: g.k,
                        timing,
                        gflop_per_s: flops / (timing.median_ms * 1e-3) / 1e9,
                        validated: check.ok,
                        check: check.detail,
                    });
                }
            }
        }
        drop(p);
        let after = memcpy_baseline(gpu, size, plan.reps)?;
        let baseline = if after.gb_per_s > before.gb_per_s {
            after
        } else {
            before
        };
        let fp32 = sgemm.iter().find(|c| c.math == Math::Fp32).map(|c| c.gflop_per_s);
        for (case, timings, rust_check, cpp_check) in measured {
            // Each side as `coalesce run` would report it.
            let row = |t: Timing, check: Validation| {
                let mut r = harness::row(exp.name(), &case, size, t, &baseline, &gpu.info, check);
                r.size_label = label.clone();
                r
            };
            let cpp = cpp_check.map(|c| row(timings[1], c));
            report
                .rows
                .push(CompareRow::new(&row(timings[0], rust_check), cpp.as_ref(), fp32));
        }
        report.cublas_rows.extend(sgemm);
        report.baselines.push(ExperimentBaseline {
            experiment: exp.name().to_string(),
            baseline,
        });
    }
    Ok(report)
}

/// A side's rate with its unit: GFLOP/s where the work is FLOPs, else GB/s.
pub fn rate(s: &Side) -> String {
    match s.gflop_per_s {
        Some(g) => format!("{g:.0} GFLOP/s"),
        None => format!("{:.1} GB/s", s.gb_per_s),
    }
}

/// Aligns cells into columns: the first `left` left-aligned, the rest right-aligned,
/// with a rule under the first row.
fn columns(cells: &[Vec<String>], left: usize) -> String {
    let ncol = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncol)
        .map(|c| {
            cells
                .iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| {
                if c < left {
                    format!("{s:<w$}", w = widths[c])
                } else {
                    format!("{s:>w$}", w = widths[c])
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(
                out,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * (ncol - 1))
            );
        }
    }
    out
}

/// The human table.
pub fn render(report: &CompareReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        table::device_line(&report.device, &report.rust_ptx_arch)
    );
    for line in report.toolkit() {
        let _ = writeln!(out, "{line}");
    }
    for b in &report.baselines {
        let _ = writeln!(
            out,
            "{:<10} baseline: cuMemcpyDtoD of {} = {:.0} GB/s (read + write, median of {})",
            b.experiment,
            format_bytes(b.baseline.bytes),
            b.baseline.gb_per_s,
            b.baseline.timing.reps
        );
    }
    for c in &report.cublas_rows {
        let _ = writeln!(
            out,
            "{:<10} baseline: {}, {}",
            c.experiment,
            c.describe(),
            if c.validated { "validated" } else { "NOT VALIDATED" }
        );
    }
    let with_cublas = report.rows.iter().any(|r| r.rust.pct_of_cublas.is_some());
    let mut header: Vec<String> = [
        "experiment",
        "variant",
        "size",
        "Rust",
        "C++",
        "Rust/C++",
        "Rust % copy",
        "C++ % copy",
    ]
    .map(String::from)
    .to_vec();
    if with_cublas {
        header.extend(["Rust % cuBLAS".to_string(), "C++ % cuBLAS".to_string()]);
    }
    header.push("valid (Rust/C++)".into());
    let dash = || "-".to_string();
    let yes = |ok: bool| if ok { "yes" } else { "NO" };
    let mut cells = vec![header];
    for r in &report.rows {
        let cpp = r.cpp.as_ref();
        let mut row = vec![
            r.experiment.clone(),
            r.variant.clone(),
            r.size_label.clone().unwrap_or_else(|| format_bytes(r.size_bytes)),
            rate(&r.rust),
            cpp.map(rate).unwrap_or_else(dash),
            r.rust_over_cpp.map(|x| format!("{x:.3}")).unwrap_or_else(dash),
            format!("{:.1}", r.rust.pct_of_copy),
            cpp.map(|c| format!("{:.1}", c.pct_of_copy)).unwrap_or_else(dash),
        ];
        if with_cublas {
            let pct = |s: Option<&Side>| {
                s.and_then(|s| s.pct_of_cublas)
                    .map(|p| format!("{p:.1}"))
                    .unwrap_or_else(dash)
            };
            row.push(pct(Some(&r.rust)));
            row.push(pct(cpp));
        }
        row.push(format!(
            "{}/{}",
            yes(r.rust.validated),
            cpp.map(|c| yes(c.validated)).unwrap_or("-")
        ));
        cells.push(row);
    }
    out.push_str(&columns(&cells, 2));
    for r in &report.rows {
        let sides = [("Rust", Some(&r.rust)), ("C++", r.cpp.as_ref())];
        for (lang, side) in sides {
            if let Some(s) = side.filter(|s| !s.validated) {
                let _ = writeln!(
                    out,
                    "NOT VALIDATED {}/{} ({lang} {}): {}",
                    r.experiment, r.variant, r.kernel, s.check
                );
            }
        }
    }
    for c in report.cublas_rows.iter().filter(|c| !c.validated) {
        let _ = writeln!(
            out,
            "NOT VALIDATED {}/cuBLAS SGEMM {}: {}",
            c.experiment,
            c.math.label(),
            c.check
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Baseline, Case, Work};
    use crate::units::gb_per_s;

    fn info() -> DeviceInfo {
        DeviceInfo {
            name: "test".into(),
            ..DeviceInfo::h100()
        }
    }

    fn row(ms: f64, ok: bool) -> Row {
        let case = Case {
            variant: "f32".into(),
            kernel: "copy_f32",
            work: Work::Bytes(2_000_000_000),
        };
        let base = Baseline {
            bytes: 1_000_000_000,
            timing: Timing::from_samples(vec![1.0]),
            gb_per_s: 4000.0,
        };
        let check = Validation {
            ok,
            detail: "exact".into(),
        };
        harness::row(
            "copy",
            &case,
            1 << 30,
            Timing::from_samples(vec![ms]),
            &base,
            &info(),
            check,
        )
    }

    fn side(ms: f64, ok: bool) -> Side {
        Side::of(&row(ms, ok), None)
    }

    /// A one-kernel comparison; `cpp`: the twin's time and check, where it ran.
    fn report(cpp: Option<(f64, bool)>) -> CompareReport {
        let cpp = cpp.map(|(ms, ok)| row(ms, ok));
        CompareReport {
            coalesce_version: "0".into(),
            device: info(),
            rust_ptx_arch: "sm_70".into(),
            cpp: "C++ twins: test".into(),
            cpp_available: cpp.is_some(),
            cpp_broken: false,
            cublas: None,
            baselines: Vec::new(),
            cublas_rows: Vec::new(),
            rows: vec![CompareRow::new(&row(1.0, true), cpp.as_ref(), None)],
        }
    }

    #[test]
    fn sides_share_the_harness_arithmetic() {
        let s = side(1.0, true);
        assert!((s.gb_per_s - gb_per_s(2_000_000_000, 1.0)).abs() < 1e-9);
        assert!((s.pct_of_copy - 50.0).abs() < 1e-9);
    }

    #[test]
    fn table_shows_both_sides_and_the_ratio() {
        let t = render(&report(Some((1.25, true))));
        let row = t.lines().find(|l| l.starts_with("copy")).unwrap();
        for want in ["2000.0 GB/s", "1600.0 GB/s", "1.250", "50.0", "40.0", "yes/yes"] {
            assert!(row.contains(want), "{want:?} missing from {row}");
        }
        assert!(t.contains("C++ twins: test"));
    }

    #[test]
    fn without_twins_the_rust_side_still_shows() {
        let r = report(None);
        let t = render(&r);
        let row = t.lines().find(|l| l.starts_with("copy")).unwrap();
        assert!(row.contains("2000.0 GB/s") && row.ends_with("yes/-"), "{row}");
        assert_eq!(r.failures(), 0);
    }

    #[test]
    fn a_failed_twin_counts_and_is_listed() {
        let r = report(Some((1.0, false)));
        assert_eq!(r.failures(), 1);
        let t = render(&r);
        assert!(t.contains("NOT VALIDATED copy/f32 (C++ copy_f32): exact"), "{t}");
        let broken = CompareReport {
            cpp_broken: true,
            ..report(None)
        };
        assert_eq!(broken.failures(), 1);
    }

    #[test]
    fn the_rust_side_reads_as_a_run() {
        let mut r = report(Some((1.25, true)));
        let mut slow = r.rows[0].clone();
        slow.variant = "slow".into();
        slow.rust = side(2.0, false);
        r.rows.push(slow);
        let run = r.rust_run();
        assert_eq!(run.rows.len(), 2);
        assert_eq!(run.rows[0].gb_per_s, r.rows[0].rust.gb_per_s);
        assert_eq!(run.rows[0].pct_of_peak, r.rows[0].rust.pct_of_peak);
        assert!(run.rows[0].pct_of_peak.is_some());
        assert!((run.rows[0].speedup_over_slowest - 2.0).abs() < 1e-9);
        assert_eq!(run.failures(), 1);
        assert_eq!(run.ptx_arch, "sm_70");
    }

    #[test]
    fn report_round_trips_through_json() {
        let r = report(Some((1.1, true)));
        let back: CompareReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
