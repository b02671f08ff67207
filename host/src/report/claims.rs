//! Published claims about coalescing, each with where it comes from and the GPU its
//! figure was measured on, beside what this GPU measured. One constant list: a claim
//! names the rows it compares, so a claim about an experiment that did not run says
//! "not run", and adding an experiment fills its claims in.

use crate::compare::CompareReport;
use crate::experiments::{matmul, particles, saxpy, stride};
use crate::harness::Row;
use crate::report::variant_of::VariantOf;

/// The figure a claim states, and how the rows of a run give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// `row`'s rate as a percentage of `of`'s.
    PctOf { row: VariantOf, of: VariantOf },
    /// `row`'s GFLOP/s as a percentage of cuBLAS SGEMM (FP32) on the same matrices.
    PctOfCublas { row: VariantOf },
    /// `row`'s effective bandwidth as % of copy and of peak.
    PctOfCopy { row: VariantOf },
    /// How many times faster `fast` runs than `slow`.
    Speedup { fast: VariantOf, slow: VariantOf },
}

/// Where a claim comes from: the text that makes it, and the GPU its figure was
/// measured on (or why there is none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// Markdown: the text's name, linked where it is online.
    pub said_by: &'static str,
    pub measured_on: &'static str,
}

/// The CUDA C++ Best Practices Guide's strided-access section: its fractions are the
/// share of each line a warp uses, arithmetic rather than a measurement.
pub const BEST_PRACTICES: Source = Source {
    said_by: "NVIDIA, [CUDA C++ Best Practices Guide, strided accesses](https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/#strided-accesses)",
    measured_on: "no GPU: the useful share of each 128-byte line",
};

/// The usual structure-of-arrays advice, which gives no figure.
pub const SOA_ADVICE: Source = Source {
    said_by: "the structure-of-arrays rule of CUDA optimisation guides",
    measured_on: "no GPU: no figure given",
};

/// A float4 SAXPY tutorial's two walks over the same float4 loads.
pub const FLOAT4_SAXPY: Source = Source {
    said_by: "a float4 SAXPY tutorial (coalesced against column-major walk)",
    measured_on: "GeForce RTX 4070",
};

/// Simon Boehm's SGEMM worklog, kernels 1 (naive) and 2 (global-memory coalescing).
pub const SIBOEHM: Source = Source {
    said_by: "Simon Boehm, [How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance](https://siboehm.com/articles/22/CUDA-MMM), kernels 1 and 2",
    measured_on: "RTX A6000",
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub claim: &'static str,
    pub source: Source,
    /// What the source says.
    pub says: &'static str,
    pub figure: Figure,
}

pub const CLAIMS: &[Claim] = &[
    Claim {
        claim: "stride 2: a warp uses half of every line it fetches",
        source: BEST_PRACTICES,
        says: "50% of useful bytes",
        figure: Figure::PctOf {
            row: VariantOf::new(&stride::EXPERIMENT, &stride::S2),
            of: VariantOf::new(&stride::EXPERIMENT, &stride::S1),
        },
    },
    Claim {
        claim: "stride 4: a quarter",
        source: BEST_PRACTICES,
        says: "25%",
        figure: Figure::PctOf {
            row: VariantOf::new(&stride::EXPERIMENT, &stride::S4),
            of: VariantOf::new(&stride::EXPERIMENT, &stride::S1),
        },
    },
    Claim {
        claim: "stride 32: one useful f32 per 128-byte line",
        source: BEST_PRACTICES,
        says: "~3%",
        figure: Figure::PctOf {
            row: VariantOf::new(&stride::EXPERIMENT, &stride::S32),
            of: VariantOf::new(&stride::EXPERIMENT, &stride::S1),
        },
    },
    Claim {
        claim: "particles: SoA coalesces where AoS does not",
        source: SOA_ADVICE,
        says: "SoA faster than AoS",
        figure: Figure::Speedup {
            fast: VariantOf::new(&particles::EXPERIMENT, &particles::SOA),
            slow: VariantOf::new(&particles::EXPERIMENT, &particles::AOS),
        },
    },
    Claim {
        claim: "saxpy float4, coalesced grid-stride walk",
        source: FLOAT4_SAXPY,
        says: "91%",
        figure: Figure::PctOfCopy {
            row: VariantOf::new(&saxpy::EXPERIMENT, &saxpy::F32X4),
        },
    },
    Claim {
        claim: "saxpy float4, strided walk: vector loads do not fix a bad pattern",
        source: FLOAT4_SAXPY,
        says: "25%",
        figure: Figure::PctOfCopy {
            row: VariantOf::new(&saxpy::EXPERIMENT, &saxpy::F32X4_STRIDED),
        },
    },
    Claim {
        claim: "matmul naive, % of cuBLAS SGEMM",
        source: SIBOEHM,
        says: "1.3%",
        figure: Figure::PctOfCublas {
            row: VariantOf::new(&matmul::EXPERIMENT, &matmul::NAIVE),
        },
    },
    Claim {
        claim: "matmul remapped, % of cuBLAS SGEMM",
        source: SIBOEHM,
        says: "8.5%",
        figure: Figure::PctOfCublas {
            row: VariantOf::new(&matmul::EXPERIMENT, &matmul::REMAPPED),
        },
    },
    Claim {
        claim: "matmul: the two-line remap over naive",
        source: SIBOEHM,
        says: "6.4x",
        figure: Figure::Speedup {
            fast: VariantOf::new(&matmul::EXPERIMENT, &matmul::REMAPPED),
            slow: VariantOf::new(&matmul::EXPERIMENT, &matmul::NAIVE),
        },
    },
];

/// One line of the claims table.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimLine {
    pub claim: &'static str,
    pub source: Source,
    pub says: &'static str,
    pub measured: String,
}

fn row_of(rows: &[Row], v: VariantOf) -> Option<&Row> {
    rows.iter().find(|r| v.is(&r.experiment, &r.variant))
}

/// GFLOP/s where both rows count FLOPs, else GB/s: what "faster" means for them.
fn rates(a: &Row, b: &Row) -> (f64, f64, &'static str) {
    match (a.gflop_per_s, b.gflop_per_s) {
        (Some(x), Some(y)) => (x, y, "GFLOP/s"),
        _ => (a.gb_per_s, b.gb_per_s, "GB/s"),
    }
}

/// Said by the cuBLAS claims of a report made without the comparison.
pub const NO_COMPARISON: &str = "needs cuBLAS: run `coalesce report` without `--rust-only`";

/// `row`'s share of the cuBLAS SGEMM FP32 that `comparison` measured on its matrices
/// ([`CompareReport::fp32_share`]: timed in the same rounds where it was).
fn pct_of_cublas(row: &Row, comparison: Option<&CompareReport>) -> String {
    let Some(c) = comparison else {
        return NO_COMPARISON.into();
    };
    match c.fp32_share(row) {
        Some(s) => format!(
            "{:.1}% of cuBLAS SGEMM FP32 ({:.0} of {:.0} GFLOP/s{}{})",
            s.pct,
            s.gflop_per_s,
            s.cublas_gflop_per_s,
            if s.same_rounds {
                ", timed in the same rounds"
            } else {
                ""
            },
            if s.cublas_validated {
                ""
            } else {
                ", cuBLAS NOT VALIDATED"
            }
        ),
        None => match &c.cublas {
            Some(line) => format!("no cuBLAS SGEMM: {line}"),
            None => "no cuBLAS SGEMM in the comparison".into(),
        },
    }
}

/// What the rows (and the comparison's cuBLAS baseline, where it ran) say about `claim`.
pub fn figure_of(claim: &Claim, rows: &[Row], comparison: Option<&CompareReport>) -> String {
    const NOT_RUN: &str = "not run";
    match claim.figure {
        Figure::PctOf { row, of } => match (row_of(rows, row), row_of(rows, of)) {
            (Some(r), Some(o)) => {
                let (x, y, _) = rates(r, o);
                let copy = if r.flops.is_none() {
                    format!(" ({:.1}% of copy)", r.pct_of_copy)
                } else {
                    String::new()
                };
                format!("{:.1}% of {} {}{copy}", 100.0 * x / y, o.experiment, o.variant)
            }
            (Some(_), None) => format!("{} {} not run", of.experiment.name, of.variant.name),
            _ => NOT_RUN.into(),
        },
        Figure::PctOfCublas { row } => match row_of(rows, row) {
            Some(r) => pct_of_cublas(r, comparison),
            None => NOT_RUN.into(),
        },
        Figure::PctOfCopy { row } => match row_of(rows, row) {
            Some(r) => match r.pct_of_peak {
                Some(p) => format!("{:.1}% of copy, {p:.1}% of peak", r.pct_of_copy),
                None => format!("{:.1}% of copy", r.pct_of_copy),
            },
            None => NOT_RUN.into(),
        },
        Figure::Speedup { fast, slow } => match (row_of(rows, fast), row_of(rows, slow)) {
            (Some(f), Some(s)) => {
                let (x, y, unit) = rates(f, s);
                format!(
                    "{:.2}x ({} {x:.0} against {} {y:.0} {unit})",
                    x / y,
                    f.variant,
                    s.variant
                )
            }
            _ => NOT_RUN.into(),
        },
    }
}

/// Every claim with what the rows (and the comparison, where it ran) say about it.
pub fn claim_lines(rows: &[Row], comparison: Option<&CompareReport>) -> Vec<ClaimLine> {
    CLAIMS
        .iter()
        .map(|c| ClaimLine {
            claim: c.claim,
            source: c.source,
            says: c.says,
            measured: figure_of(c, rows, comparison),
        })
        .collect()
}
