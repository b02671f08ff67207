//! GPU tests of `coalesce compare`: every C++ twin against the CPU reference at
//! awkward sizes, cuBLAS SGEMM against an f64 product, and a whole small
//! comparison. They need an NVIDIA GPU and the CUDA toolkit's NVRTC and cuBLAS
//! (`cargo test -- --ignored`, or the bundle's `tests`/`compare` stages).

use cust::memory::CopyDestination;

use coalesce::compare::cublas::{self, Cublas, Math};
use coalesce::compare::twins::Twins;
use coalesce::compare::{CompareReport, compare};
use coalesce::device::Gpu;
use coalesce::experiments::{ALL, select};
use coalesce::harness::{Gemm, Plan, Reps, check_with, launch_case};

/// Element counts that are not multiples of a warp, a block or a vector.
const AWKWARD: [u64; 5] = [1, 31, 33, 4095, (1 << 20) + 7];

fn gpu() -> Gpu {
    Gpu::open(0).unwrap_or_else(|e| panic!("this test needs an NVIDIA GPU: {e}"))
}

fn all_twins(gpu: &Gpu) -> Twins {
    let wanted: Vec<(&str, Vec<&str>)> = ALL.iter().map(|e| (e.name(), e.kernels())).collect();
    Twins::build(gpu, &wanted).unwrap_or_else(|e| panic!("the C++ twins need NVRTC: {e}"))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_twin_validates_at_awkward_sizes() {
    let gpu = gpu();
    let twins = all_twins(&gpu);
    let mut failures = Vec::new();
    let mut checked = 0;
    for exp in ALL {
        for n in AWKWARD {
            let mut p = exp.prepare(&gpu, n * 4, 0xc0ffee + n).unwrap();
            for i in 0..p.cases().len() {
                let kernel = p.cases()[i].kernel;
                let f = twins.function(kernel).unwrap();
                let v = check_with(&gpu, p.as_mut(), i, kernel, |p| launch_case(&gpu, p, i, &f)).unwrap();
                checked += 1;
                if !v.ok {
                    failures.push(format!(
                        "{}/{} n={n} (C++): {}",
                        exp.name(),
                        p.cases()[i].variant,
                        v.detail
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
    assert!(checked >= ALL.len() * AWKWARD.len());
}

/// |got - want| within a bound on the rounding of any summation order:
/// (input rounding + k accumulations) x eps x sum |a_ip b_pj|.
fn sgemm_errors(m: usize, n: usize, k: usize, math: Math, gpu: &Gpu, blas: &Cublas) -> Vec<String> {
    let a: Vec<f32> = (0..m * k).map(|i| kernels::fill::uniform(1, i as u64)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| kernels::fill::uniform(2, i as u64)).collect();
    let want = cublas::reference(m, n, k, &a, &b);
    let abs_a: Vec<f32> = a.iter().map(|x| x.abs()).collect();
    let abs_b: Vec<f32> = b.iter().map(|x| x.abs()).collect();
    let scale = cublas::reference(m, n, k, &abs_a, &abs_b);
    let (mut da, mut db, dc) = (
        gpu.alloc::<f32>(m * k).unwrap(),
        gpu.alloc::<f32>(k * n).unwrap(),
        gpu.alloc::<f32>(m * n).unwrap(),
    );
    da.copy_from(&a[..]).unwrap();
    db.copy_from(&b[..]).unwrap();
    let g = Gemm {
        m,
        n,
        k,
        a: da.as_device_ptr().as_raw(),
        b: db.as_device_ptr().as_raw(),
        c: dc.as_device_ptr().as_raw(),
    };
    blas.sgemm(math, &g).unwrap();
    gpu.sync("sgemm").unwrap();
    let mut got = vec![0f32; m * n];
    dc.copy_to(&mut got[..]).unwrap();
    let input = match math {
        Math::Fp32 => 0.0,
        Math::Tf32 => 2.0 * 2f64.powi(-11),
    };
    let bound = |i: usize| (input + 2.0 * k as f64 * f64::from(f32::EPSILON)) * scale[i] + 1e-30;
    (0..m * n)
        // A NaN error is not within any bound.
        .filter(|&i| {
            let err = (f64::from(got[i]) - want[i]).abs();
            err.is_nan() || err > bound(i)
        })
        .take(3)
        .map(|i| {
            format!(
                "{m}x{n}x{k} {}: C[{i}] = {}, want {} (bound {:e})",
                math.label(),
                got[i],
                want[i],
                bound(i)
            )
        })
        .collect()
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cublas_sgemm_matches_an_f64_reference() {
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
        for math in [Math::Fp32, Math::Tf32] {
            errors.extend(sgemm_errors(m, n, k, math, &gpu, &blas));
        }
    }
    drop(blas);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn compare_validates_every_row_on_both_sides() {
    let gpu = gpu();
    let plan = Plan {
        size: Some(4 * ((1 << 20) + 7)),
        reps: Reps { warmup: 1, timed: 3 },
        seed: 7,
    };
    let dump = std::env::temp_dir().join(format!("coalesce-ptx-{}", std::process::id()));
    let report: CompareReport = compare(&gpu, &select(&[]).unwrap(), &plan, Some(&dump), |_| {}).unwrap();
    assert!(report.cpp_available, "{}", report.cpp);
    let kernels: usize = ALL
        .iter()
        .map(|e| e.prepare(&gpu, 4096, 0).unwrap().cases().len())
        .sum();
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
    for e in ALL {
        let ptx = std::fs::read_to_string(dump.join(format!("{}.cpp.ptx", e.name()))).unwrap();
        assert!(ptx.contains(".entry"), "{}", e.name());
    }
    assert!(dump.join("rust-kernels.ptx").is_file());
    std::fs::remove_dir_all(&dump).unwrap();
}
