//! GPU tests: every kernel of every experiment validated at awkward sizes.
//! Run on a machine with an NVIDIA GPU: `cargo test -- --ignored`.

use coalesce::check::{awkward, render, run_checks};
use coalesce::device::Gpu;
use coalesce::experiments::{ALL, select};

fn gpu() -> Gpu {
    Gpu::open(0).unwrap_or_else(|e| panic!("this test needs an NVIDIA GPU: {e}"))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_kernel_validates_at_awkward_sizes() {
    let gpu = gpu();
    let rows = run_checks(&gpu, &select(&[]).unwrap(), 0xa11ce).unwrap();
    let failures: Vec<_> = rows.iter().filter(|r| !r.validated).collect();
    assert!(failures.is_empty(), "{}", render(&rows));
    // Every kernel of every experiment was checked at every awkward problem.
    for exp in ALL {
        for k in exp.kernels() {
            let n = rows.iter().filter(|r| r.kernel == k).count();
            assert_eq!(n, awkward(exp.shape_rank(), 0).len(), "{k} checked {n} times");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn device_reports_a_peak_and_an_l2() {
    let gpu = gpu();
    assert!(gpu.info.sm_count > 0 && gpu.info.l2_bytes > 0);
    let (free, total) = gpu.memory().unwrap();
    assert!(free > 0 && free <= total);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn device_out_of_range_is_an_error() {
    let e = Gpu::open(1000).err().expect("device 1000 should not exist");
    assert!(e.to_string().contains("out of range"), "{e}");
    assert_eq!(e.exit_code(), 2);
}
