//! `coalesce compare`: every Rust kernel against its CUDA C++ twin (and matmul
//! against cuBLAS SGEMM), in one process, one context, on the same buffers,
//! validated by the same check and timed by the same harness, interleaved.
//!
//! This module is the data model; [`run`] measures (through the one harness,
//! [`crate::harness::run_experiment`]), [`render`] prints. [`twins`] compiles the C++
//! sources NVRTC ([`nvrtc`]) and loads them, [`cublas`] wraps SGEMM and [`libs`]
//! finds the toolkit's libraries at run time, so a machine without them builds,
//! tests, and still gets the Rust-only table.

pub mod cublas;
pub mod headers;
pub mod layout;
pub mod libs;
pub mod nvrtc;
pub mod render;
pub mod run;
pub mod toolkit;
pub mod twins;

use serde::{Deserialize, Serialize};

use self::cublas::Math;
use self::layout::Layout;
use crate::device::DeviceInfo;
use crate::experiment::Arithmetic;
use crate::harness::{self, Row};
use crate::run_table::{ExperimentBaseline, Run};
use crate::timing::Timing;

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
    /// GFLOP/s over cuBLAS on the same matrices (products only), in the kernel's
    /// precision: FP32, TF32 for a TF32 tensor-core kernel, BF16 or FP16.
    pub pct_of_cublas: Option<f64>,
    pub validated: bool,
    pub check: String,
}

impl Side {
    /// One side of a kernel, from the row the harness made of its timing; `cublas`
    /// (cuBLAS GFLOP/s on the same matrices, in the kernel's arithmetic) gives its %
    /// of cuBLAS.
    fn of(r: &Row, cublas: Option<f64>) -> Side {
        Side {
            timing: r.timing,
            gb_per_s: r.gb_per_s,
            gflop_per_s: r.gflop_per_s,
            pct_of_copy: r.pct_of_copy,
            pct_of_peak: r.pct_of_peak,
            pct_of_cublas: cublas.zip(r.gflop_per_s).map(|(b, g)| 100.0 * g / b),
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
    /// The sides' % of cuBLAS divide by cuBLAS timed in the same rounds as their
    /// launches; false where they divide by the baseline line, cuBLAS timed alone
    /// after the variants (as in results files that predate the interleaving).
    #[serde(default)]
    pub cublas_interleaved: bool,
    /// What the kernel multiplies in, and the cuBLAS mode its % of cuBLAS is of:
    /// `FP32`, `TF32`, `BF16`, `FP16`; empty in files that predate it (read it with
    /// [`CompareRow::precision`]), and then left out when written again.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub precision: String,
    /// How cuBLAS's operands were stored in the call its % of cuBLAS divides by: the
    /// fastest of its layouts. None without cuBLAS, and in files that predate the
    /// layouts (whose cuBLAS ran in NN alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cublas_layout: Option<Layout>,
}

impl CompareRow {
    /// Its precision, as [`Row::precision`] reads a row's.
    pub fn precision(&self) -> &str {
        harness::precision_of(&self.precision, &self.experiment, &self.variant)
    }
}

/// The cuBLAS GFLOP/s a row's % of cuBLAS divides by, and how it was timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CublasRate {
    /// In the same rounds as the row's Rust and C++ launches.
    Interleaved(f64),
    /// Alone, after the variants: the baseline line.
    Alone(f64),
}

impl CublasRate {
    pub fn gflop_per_s(self) -> f64 {
        match self {
            CublasRate::Interleaved(g) | CublasRate::Alone(g) => g,
        }
    }
}

impl CompareRow {
    /// A kernel's row from the harness rows of its Rust side and, where its twin
    /// ran, its C++ side; `cublas` as for [`Side`].
    pub fn new(rust: &Row, cpp: Option<&Row>, cublas: Option<CublasRate>) -> CompareRow {
        let rate = cublas.map(CublasRate::gflop_per_s);
        let (rust_side, cpp) = (Side::of(rust, rate), cpp.map(|c| Side::of(c, rate)));
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
            cublas_interleaved: matches!(cublas, Some(CublasRate::Interleaved(_))),
            precision: rust.precision.clone(),
            cublas_layout: None,
        }
    }
}

/// cuBLAS on an experiment's matrices, in one of its modes ([`Math`]).
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
    /// The fastest of the operand layouts, which the timing is of (the check is of
    /// NN's result). None in files that predate the layouts (cuBLAS ran in NN alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
}

impl CublasRow {
    /// `cuBLAS SGEMM FP32 4096x4096x4096 = 48000 GFLOP/s (median of 20)`; `cuBLAS
    /// GEMM BF16 ...` for a 16-bit product; `..., layout TN, the fastest of 4 (median
    /// of 20)` where the layouts were timed.
    pub fn describe(&self) -> String {
        let layout = self.layout.map_or_else(String::new, |l| {
            format!(", layout {}, the fastest of {}", l.label(), Layout::ALL.len())
        });
        format!(
            "cuBLAS {} {} {}x{}x{} = {:.0} GFLOP/s{layout} (median of {})",
            self.math.routine(),
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
    /// [`crate::run_table::SCHEMA`] when written.
    #[serde(default = "crate::run_table::schema_1")]
    pub schema: u32,
    pub coalesce_version: String,
    /// When the comparison finished, `YYYY-MM-DD HH:MM UTC` (None in files written
    /// before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
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
    pub fn rust_run(&self) -> Run {
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
                precision: r.precision.clone(),
            })
            .collect();
        harness::fill_speedups(&mut rows);
        Run {
            schema: crate::run_table::SCHEMA,
            coalesce_version: self.coalesce_version.clone(),
            date: self.date.clone(),
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

    /// Whether every row's % of cuBLAS divides by cuBLAS timed in the same rounds as
    /// the row (true where no row has one); false where some divide by the cuBLAS
    /// lines, as in results files that predate the interleaving.
    pub fn cublas_shares_in_same_rounds(&self) -> bool {
        self.rows
            .iter()
            .filter(|r| r.rust.pct_of_cublas.is_some())
            .all(|r| r.cublas_interleaved)
    }

    /// `row`'s share of cuBLAS SGEMM FP32 on its matrices as this comparison measured
    /// it: an FP32 kernel's own row where cuBLAS ran in the same rounds (the ladder's
    /// figure), else the row's GFLOP/s over the FP32 line (cuBLAS alone, after the
    /// variants). None without either.
    pub fn fp32_share(&self, row: &Row) -> Option<Share> {
        let line = self.sgemm_fp32(&row.experiment);
        let fp32 = crate::experiments::arithmetic(&row.experiment, &row.variant) == Arithmetic::Fp32;
        let own = self
            .rows
            .iter()
            .find(|x| x.cublas_interleaved && x.experiment == row.experiment && x.variant == row.variant)
            .and_then(|x| x.rust.gflop_per_s.zip(x.rust.pct_of_cublas))
            .filter(|_| fp32);
        if let Some((g, pct)) = own {
            return Some(Share {
                gflop_per_s: g,
                cublas_gflop_per_s: 100.0 * g / pct,
                pct,
                same_rounds: true,
                cublas_validated: line.is_none_or(|l| l.validated),
            });
        }
        let (line, g) = (line?, row.gflop_per_s?);
        Some(Share {
            gflop_per_s: g,
            cublas_gflop_per_s: line.gflop_per_s,
            pct: 100.0 * g / line.gflop_per_s,
            same_rounds: false,
            cublas_validated: line.validated,
        })
    }
}

/// A product's share of cuBLAS SGEMM on its matrices ([`CompareReport::fp32_share`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Share {
    pub gflop_per_s: f64,
    pub cublas_gflop_per_s: f64,
    /// 100 x GFLOP/s over cuBLAS's.
    pub pct: f64,
    /// cuBLAS ran in the same rounds as the kernel; else alone, after the variants.
    pub same_rounds: bool,
    /// cuBLAS's own result matched the reference.
    pub cublas_validated: bool,
}
