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
    // Every variant of every experiment was checked at every awkward problem.
    for exp in ALL {
        for v in exp.variants() {
            let n = rows
                .iter()
                .filter(|r| r.experiment == exp.name() && r.variant == v)
                .count();
            assert_eq!(
                n,
                awkward(exp.shape_rank(), 0).len(),
                "{}/{v} checked {n} times",
                exp.name()
            );
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

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn report_writes_markdown_json_and_plots_from_a_real_run() {
    use clap::Parser;
    use coalesce::cli::{Cli, Outcome, execute};
    let dir = std::env::temp_dir().join(format!("coalesce-gpu-report-{}", std::process::id()));
    let out = dir.to_str().unwrap();
    let cli = Cli::parse_from([
        "coalesce", "report", "copy", "stride", "--size", "8M", "--reps", "3", "--quiet", "--out", out,
    ]);
    assert!(
        matches!(execute(cli).unwrap(), Outcome::Ok),
        "every kernel validated"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("| stride | 32 |") && md.contains("% of stride 1"),
        "{md}"
    );
    let results: coalesce::report::Results =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results.run.rows.len(), 2 + 7);
    let stride = std::fs::read_to_string(dir.join("stride.svg")).unwrap();
    assert_eq!(stride.matches("<circle").count(), 7);
    assert!(stride.contains(&results.run.device.name));
    assert!(dir.join("good-vs-bad.svg").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
