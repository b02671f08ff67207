//! GPU tests of `coalesce compare`: every C++ twin against the CPU reference at
//! awkward sizes, cuBLAS (SGEMM, and GEMM in BF16 and FP16) against an f64 product,
//! and a whole small comparison. They need an NVIDIA GPU and the CUDA toolkit's NVRTC and cuBLAS
//! (`cargo test -- --ignored`, or the bundle's `tests`/`compare` stages).

mod common;

use common::{gpu, temp_path};

use cust::memory::CopyDestination;

use coalesce::compare::CompareReport;
use coalesce::compare::cublas::{Cublas, Math};
use coalesce::compare::layout::Layout;
use coalesce::compare::run::compare;
use coalesce::compare::twins::Twins;
use coalesce::device::Gpu;
use coalesce::elem::Elem;
use coalesce::experiments::{ALL, select};
use coalesce::harness::RunOptions;
use coalesce::prepared::{Gemm, Prepared};
use coalesce::report::Results;
use coalesce::timing::Reps;
use coalesce::validate::{ProductBound, check_product_bound, check_rounded_product};

fn all_twins(gpu: &Gpu) -> Twins {
    Twins::build(gpu, ALL).unwrap_or_else(|e| panic!("the C++ twins need NVRTC: {e}"))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_twin_validates_at_awkward_sizes() {
    let gpu = gpu();
    let twins = all_twins(&gpu);
    let mut failures = Vec::new();
    let mut checked = 0;
    for exp in ALL {
        for problem in exp.kind.awkward() {
            let mut p = Prepared::new(&gpu, exp, problem, 0xc0ffee).unwrap();
            for (i, v) in exp.variants.iter().enumerate() {
                if p.applicable(i).is_err() {
                    // A shape the copy engine cannot address: skipped, as for the Rust kernel.
                    continue;
                }
                let f = twins.function(v.twin).unwrap();
                let check = p
                    .check_with(&gpu, i, v.twin, 0.0, |p| p.launch(&gpu, i, &f))
                    .unwrap();
                checked += 1;
                if !check.ok {
                    failures.push(format!(
                        "{}/{} at {} (C++): {}",
                        exp.name,
                        v.name,
                        problem.label(),
                        check.detail
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= ALL.len() * 4);
}

/// A row-major `rows` x `cols` matrix as `layout` stores it: as it is, or column-major.
fn stored(x: &[f32], rows: usize, cols: usize, col_major: bool) -> Vec<f32> {
    match col_major {
        false => x.to_vec(),
        true => (0..rows * cols)
            .map(|i| x[(i % rows) * cols + i / rows])
            .collect(),
    }
}

/// cuBLAS's C = A B for one shape, A and B stored as `layout` says, checked against
/// the f64 reference the matmul experiment uses, with its bound widened for TF32's
/// rounded inputs.
fn sgemm_check(
    (m, n, k): (usize, usize, usize),
    math: Math,
    layout: Layout,
    gpu: &Gpu,
    blas: &Cublas,
) -> Option<String> {
    let a: Vec<f32> = (0..m * k).map(|i| kernels::fill::uniform(1, i as u64)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| kernels::fill::uniform(2, i as u64)).collect();
    let (mut da, mut db, dc) = (
        gpu.alloc::<f32>(m * k).unwrap(),
        gpu.alloc::<f32>(k * n).unwrap(),
        gpu.alloc::<f32>(m * n).unwrap(),
    );
    da.copy_from(&stored(&a, m, k, layout.a_col_major())[..]).unwrap();
    db.copy_from(&stored(&b, k, n, layout.b_col_major())[..]).unwrap();
    let g = Gemm {
        m,
        n,
        k,
        a: da.as_device_ptr().as_raw(),
        b: db.as_device_ptr().as_raw(),
        c: dc.as_device_ptr().as_raw(),
        input: Elem::F32,
        output: Elem::F32,
    };
    blas.gemm(math, &g, layout).unwrap();
    gpu.sync("sgemm").unwrap();
    let mut got = vec![0f32; m * n];
    dc.copy_to(&mut got[..]).unwrap();
    let all: Vec<usize> = (0..m * n).collect();
    let v = check_rounded_product(&got, (m, n, k), |i| a[i], |i| b[i], &all, math.input_rounding());
    (!v.ok).then(|| format!("{m}x{n}x{k} {} {}: {}", math.label(), layout.label(), v.detail))
}

/// cuBLAS in `maths` and every operand layout, each checked by `check` at one
/// element, awkward shapes and a long k: every shape within its bound.
fn cublas_matches_an_f64_reference(maths: [Math; 2], check: GemmCheck) {
    let gpu = gpu();
    let blas = Cublas::load(&gpu).unwrap_or_else(|e| panic!("{e}"));
    let mut errors = Vec::new();
    for (m, n, k) in [
        (1, 1, 1),
        (33, 65, 17),
        (1000, 17, 33),
        (17, 1000, 129),
        (64, 48, 4096),
    ] {
        for math in maths {
            for layout in Layout::ALL {
                errors.extend(check((m, n, k), math, layout, &gpu, &blas));
            }
        }
    }
    drop(blas);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// One shape's check of cuBLAS in one layout: None, or what differs.
type GemmCheck = fn((usize, usize, usize), Math, Layout, &Gpu, &Cublas) -> Option<String>;

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cublas_sgemm_matches_an_f64_reference() {
    cublas_matches_an_f64_reference([Math::Fp32, Math::Tf32], sgemm_check);
}

/// cuBLAS's BF16 and FP16 C = A B (`cublasGemmEx`, f32 accumulation) for one shape,
/// A and B stored as `layout` says, against the f64 product of the inputs' exact
/// values within the 16-bit bound.
fn gemm_16_check(
    (m, n, k): (usize, usize, usize),
    math: Math,
    layout: Layout,
    gpu: &Gpu,
    blas: &Cublas,
) -> Option<String> {
    let elem = math.elem();
    let a: Vec<f32> = (0..m * k)
        .map(|i| elem.round(kernels::fill::uniform(1, i as u64)))
        .collect();
    let b: Vec<f32> = (0..k * n)
        .map(|i| elem.round(kernels::fill::uniform(2, i as u64)))
        .collect();
    let (mut da, mut db, dc) = (
        gpu.alloc::<u8>(m * k * 2).unwrap(),
        gpu.alloc::<u8>(k * n * 2).unwrap(),
        gpu.alloc::<u8>(m * n * 2).unwrap(),
    );
    da.copy_from(&elem.encode(&stored(&a, m, k, layout.a_col_major()))[..])
        .unwrap();
    db.copy_from(&elem.encode(&stored(&b, k, n, layout.b_col_major()))[..])
        .unwrap();
    let g = Gemm {
        m,
        n,
        k,
        a: da.as_device_ptr().as_raw(),
        b: db.as_device_ptr().as_raw(),
        c: dc.as_device_ptr().as_raw(),
        input: elem,
        output: elem,
    };
    blas.gemm(math, &g, layout).unwrap();
    gpu.sync("gemm").unwrap();
    let mut bytes = vec![0u8; m * n * 2];
    dc.copy_to(&mut bytes[..]).unwrap();
    let got = elem.decode(&bytes);
    let all: Vec<usize> = (0..m * n).collect();
    let bound = ProductBound {
        input: 0.0,
        output: elem,
    };
    let v = check_product_bound(&got, (m, n, k), |i| a[i], |i| b[i], &all, bound);
    (!v.ok).then(|| format!("{m}x{n}x{k} {} {}: {}", math.label(), layout.label(), v.detail))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cublas_16_bit_gemm_matches_an_f64_reference() {
    cublas_matches_an_f64_reference([Math::Bf16, Math::F16], gemm_16_check);
}

/// The 16-bit experiments through `compare`: each simt kernel and its twin validated
/// at an awkward shape, beside cuBLAS in the same precision (validated too), with
/// every row and line naming its precision.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_16_bit_gemms_run_validated_beside_cublas() {
    let gpu = gpu();
    let plan = RunOptions {
        size: None,
        shape: Some(vec![1000, 136, 77]),
        reps: Reps { warmup: 1, timed: 3 },
        seed: 11,
    };
    let words = ["gemm-bf16/simt".to_string(), "gemm-f16/simt".to_string()];
    let report = compare(&gpu, &select(&words).unwrap(), &plan, None, |_| {}).unwrap();
    assert_eq!(report.failures(), 0, "{report:#?}");
    let rows: Vec<(&str, &str)> = report
        .rows
        .iter()
        .map(|r| (r.experiment.as_str(), r.precision()))
        .collect();
    assert_eq!(rows, [("gemm-bf16", "BF16"), ("gemm-f16", "FP16")]);
    for r in &report.rows {
        assert!(
            r.rust.validated && r.cpp.as_ref().is_some_and(|c| c.validated),
            "{r:#?}"
        );
        assert!(r.rust.pct_of_cublas.is_some_and(|p| p > 0.0), "{r:#?}");
        assert!(r.cublas_interleaved);
        // Of cuBLAS at its fastest layout, which the row names.
        assert!(r.cublas_layout.is_some(), "{r:#?}");
    }
    assert!(report.cublas_rows.iter().all(|c| c.layout.is_some()));
    let lines: Vec<(&str, Math, bool)> = report
        .cublas_rows
        .iter()
        .map(|c| (c.experiment.as_str(), c.math, c.validated))
        .collect();
    assert_eq!(
        lines,
        [("gemm-bf16", Math::Bf16, true), ("gemm-f16", Math::F16, true)]
    );
    assert!(
        report.cublas_rows[0]
            .describe()
            .starts_with("cuBLAS GEMM BF16 1000x136x77 = ")
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn compare_validates_every_row_on_both_sides() {
    let gpu = gpu();
    let plan = RunOptions {
        size: Some(4 * ((1 << 20) + 7)),
        shape: None,
        reps: Reps { warmup: 1, timed: 3 },
        seed: 7,
    };
    let dump = temp_path("compare-ptx");
    let report: CompareReport = compare(&gpu, &select(&[]).unwrap(), &plan, Some(&dump), |_| {}).unwrap();
    assert!(report.cpp_available, "{}", report.cpp);
    let kernels: usize = ALL.iter().map(|e| e.variants.len()).sum();
    assert_eq!(report.rows.len(), kernels, "one row per case");
    for r in &report.rows {
        let cpp = r
            .cpp
            .as_ref()
            .unwrap_or_else(|| panic!("{}/{} has no C++ side", r.experiment, r.variant));
        assert!(
            r.rust.validated,
            "{}/{} Rust: {}",
            r.experiment, r.variant, r.rust.check
        );
        assert!(cpp.validated, "{}/{} C++: {}", r.experiment, r.variant, cpp.check);
        assert!(r.rust_over_cpp.is_some_and(|x| x.is_finite() && x > 0.0));
    }
    assert_eq!(report.failures(), 0);
    // Every product experiment brings cuBLAS in: both maths ran on its matrices.
    let ran: Vec<(&str, Math)> = report
        .cublas_rows
        .iter()
        .map(|c| (c.experiment.as_str(), c.math))
        .collect();
    let products = ALL
        .iter()
        .filter(|e| e.kind == coalesce::experiment::Kind::Product);
    let expected: Vec<(&str, Math)> = products
        .flat_map(|e| Math::on(e.elem()).iter().map(|&m| (e.name, m)))
        .collect();
    assert!(
        expected.len() >= 6,
        "matmul, sgemm and the 16-bit GEMMs are products"
    );
    assert_eq!(ran, expected, "{:?}", report.cublas);
    assert!(
        report
            .rows
            .iter()
            .filter(|r| r.experiment == "matmul")
            .all(|r| r.rust.pct_of_cublas.is_some())
    );
    for e in ALL {
        let ptx = std::fs::read_to_string(dump.join(format!("{}.cpp.ptx", e.name))).unwrap();
        assert!(ptx.contains(".entry"), "{}", e.name);
    }
    assert!(dump.join("rust-kernels.ptx").is_file());
    std::fs::remove_dir_all(&dump).unwrap();

    // The report made from it: the comparison's table and plot, the cuBLAS claims filled.
    let dir = temp_path("compare-report");
    let results = Results::of_comparison(0.0, report);
    let files = coalesce::report::write(&dir, &results).unwrap();
    assert!(files.iter().any(|f| f.ends_with("rust-vs-cpp.svg")), "{files:?}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Rust against CUDA C++"), "{md}");
    // The two matmul claims and the ladder's best rung are filled from cuBLAS.
    let filled = |l: &&str| l.contains("of cuBLAS SGEMM FP32 (");
    let claims = md
        .lines()
        .filter(|l| l.starts_with("| matmul"))
        .filter(filled)
        .count();
    assert_eq!(claims, 2, "{md}");
    assert!(
        md.lines().any(|l| l.starts_with("Best Rust rung:") && filled(&l)),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
