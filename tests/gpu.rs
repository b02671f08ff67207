//! GPU tests: every kernel of every experiment validated at awkward sizes.
//! Run on a machine with an NVIDIA GPU: `cargo test -- --ignored`.

use coalesce::device::Gpu;
use coalesce::experiments::ALL;
use coalesce::harness::{Params, check_case};

/// Element counts that are not multiples of a warp, a block or a vector.
const AWKWARD: [u64; 5] = [1, 31, 33, 4095, (1 << 20) + 7];
/// Matrices that are not square and not multiples of a tile.
const AWKWARD_2D: [[usize; 2]; 4] = [[1, 1], [33, 65], [1000, 17], [17, 1000]];
/// Products likewise.
const AWKWARD_3D: [[usize; 3]; 4] = [[1, 1, 1], [33, 65, 17], [1000, 17, 33], [17, 33, 1000]];

/// The awkward problems of an experiment: shapes for matrix experiments, sizes otherwise.
fn awkward(rank: usize, seed: u64) -> Vec<Params> {
    let shaped = |d: &[usize]| Params {
        size: 4,
        shape: Some(d.to_vec()),
        seed,
    };
    match rank {
        2 => AWKWARD_2D.iter().map(|d| shaped(d)).collect(),
        3 => AWKWARD_3D.iter().map(|d| shaped(d)).collect(),
        _ => AWKWARD.iter().map(|&n| Params::sized(n * 4, seed + n)).collect(),
    }
}

fn gpu() -> Gpu {
    Gpu::open(0).unwrap_or_else(|e| panic!("this test needs an NVIDIA GPU: {e}"))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_kernel_validates_at_awkward_sizes() {
    let gpu = gpu();
    let mut failures = Vec::new();
    let mut checked = 0;
    for exp in ALL {
        for params in awkward(exp.shape_rank(), 0xa11ce) {
            let mut p = exp.prepare(&gpu, &params).unwrap();
            for i in 0..p.cases().len() {
                let f = gpu.function(p.cases()[i].kernel).unwrap();
                let v = check_case(&gpu, p.as_mut(), i, &f).unwrap();
                checked += 1;
                if !v.ok {
                    let at = params
                        .shape
                        .as_ref()
                        .map(|s| format!("{s:?}"))
                        .unwrap_or(params.size.to_string());
                    failures.push(format!(
                        "{}/{} at {at}: {}",
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
    assert!(checked >= ALL.len() * 4);
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
