//! GPU tests: every kernel of every experiment validated at awkward sizes.
//! Run on a machine with an NVIDIA GPU: `cargo test -- --ignored`.

mod common;

use common::{coalesce, exit_and_error, fresh_dir, gpu, temp_path};

use coalesce::check::{render, run_checks};
use coalesce::device::Gpu;
use coalesce::experiments::{ALL, select};

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_kernel_validates_at_awkward_sizes() {
    let gpu = gpu();
    let rows = run_checks(&gpu, &select(&[]).unwrap(), 0xa11ce).unwrap();
    let failures: Vec<_> = rows.iter().filter(|r| !r.validated).collect();
    assert!(failures.is_empty(), "{}", render(&rows));
    // Every variant of every experiment was checked at every awkward problem.
    for exp in ALL {
        for v in exp.variants {
            let n = rows
                .iter()
                .filter(|r| r.experiment == exp.name && r.variant == v.name)
                .count();
            // The copy engine's kernels are skipped where it cannot address the shape.
            let addressable = exp
                .kind
                .awkward()
                .iter()
                .filter(|p| exp.addressable(v, p).is_ok())
                .count();
            assert!(
                addressable > 0,
                "{}/{} runs at no awkward shape",
                exp.name,
                v.name
            );
            assert_eq!(n, addressable, "{}/{} checked {n} times", exp.name, v.name);
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

/// The binary's exit code and its one stderr line, printed for the GPU run's log.
fn coalesce_fails(args: &[&str]) -> (i32, String) {
    let (code, err) = exit_and_error(args);
    let err = err.trim_end().to_string();
    println!("coalesce {}: exit {code}: {err}", args.join(" "));
    (code, err)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cli_device_out_of_range() {
    let (code, err) = coalesce_fails(&["run", "copy", "--device", "1000"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: --device 1000 is out of range: this machine has "),
        "{err}"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cli_sizes_beyond_free_memory_say_needed_and_free() {
    // Checked before anything is allocated.
    let (code, err) = coalesce_fails(&["run", "copy", "--size", "16T"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: copy needs 64.0 TiB of device memory at this size but only ")
            && err.ends_with(" is free; pass a smaller --size or --shape"),
        "{err}"
    );
    let (code, err) = coalesce_fails(&["run", "transpose", "--shape", "4000000000x4000000000"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: transpose needs more than 16 EiB of device memory"),
        "{err}"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cli_sizes_beyond_32_bit_thread_indices_are_refused() {
    // 17 GiB per array: on a GPU with room for it (4 x 17 GiB with the baseline, an
    // 80 GB H100 has), refused because one thread per element overflows the kernels'
    // 32-bit index; on a smaller GPU, refused for memory.
    let (free, _) = gpu().memory().unwrap();
    let (code, err) = coalesce_fails(&["run", "copy", "--size", "17G"]);
    if free / 10 * 9 >= 4 * (17 << 30) {
        assert_eq!(code, 2);
        assert_eq!(
            err,
            "error: 4563402752 elements is too large: one thread each is more than the 4294967296 threads the kernels' 32-bit index reaches"
        );
    } else {
        assert_eq!(code, 1);
        assert!(err.contains("of device memory at this size"), "{err}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn report_writes_markdown_json_and_plots_from_a_real_run() {
    use clap::Parser;
    use coalesce::cli::{Cli, Outcome, execute};
    let dir = temp_path("gpu-report");
    // `report --out` wants the folder's parent to exist.
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
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
    let declared = |name: &str| ALL.iter().find(|e| e.name == name).unwrap().variants.len();
    assert_eq!(results.run.rows.len(), declared("copy") + declared("stride"));
    // A GPU whose profile ships gets its predictions without asking.
    let ships = coalesce::profile::SHIPPED
        .iter()
        .any(|(name, _)| *name == results.run.device.name);
    // The stride plot draws the numeric strides only (1-f32x4 is a tuning, not a
    // stride), measured and, with a profile, predicted.
    let stride = std::fs::read_to_string(dir.join("stride.svg")).unwrap();
    assert_eq!(stride.matches("<circle").count(), if ships { 14 } else { 7 });
    assert!(stride.contains(&results.run.device.name));
    assert!(dir.join("good-vs-bad.svg").exists());
    assert_eq!(md.contains("## Predicted beside measured"), ships, "{md}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run --json` and `compare --json` record when they ran, and a report of them
/// says it.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn run_and_compare_files_say_when_they_ran() {
    let dir = fresh_dir("gpu-dated");
    for command in ["run", "compare"] {
        let file = dir.join(format!("{command}.json"));
        let args = [
            command, "copy", "--size", "8M", "--reps", "3", "--quiet", "--json",
        ];
        coalesce().args(args).arg(&file).assert().success();
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let date = saved["date"]
            .as_str()
            .unwrap_or_else(|| panic!("{command}: no date"));
        assert!(date.ends_with(" UTC"), "{command}: {date}");
        let out = dir.join(format!("{command}-report"));
        coalesce()
            .args(["report", "--from"])
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .assert()
            .success();
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains(&format!("- Date: {date}")), "{command}: {md}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A command's experiments take their buffers from one reservation in turn, each
/// buffer on a 2 MiB boundary; one alive beside another, or too large for it,
/// allocates its own (the second gives the reservation back); kernels validate on both.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn experiments_take_their_buffers_from_the_reservation_in_turn() {
    use coalesce::experiment::Problem;
    use coalesce::prepared::Prepared;
    let gpu = gpu();
    let copy = ALL.iter().copied().find(|e| e.name == "copy").unwrap();
    let small = Problem::Elements { n: 4 << 20 };
    assert!(gpu.reserve(64 << 20).unwrap());
    let (base, bytes) = gpu.reserved().unwrap();
    let at = |p: &Prepared, b: usize| p.buffer(b).as_device_ptr().as_raw();
    let i = copy.variants.iter().position(|v| v.name == "f32x4").unwrap();
    let f = gpu.function(copy.variants[i].kernel).unwrap();

    let mut first = Prepared::new(&gpu, copy, small, 1).unwrap();
    assert_eq!(at(&first, 0), base);
    assert_eq!(at(&first, 1), base + (16 << 20));
    let mut second = Prepared::new(&gpu, copy, small, 2).unwrap();
    assert!(!(base..base + bytes).contains(&at(&second, 0)));
    assert!(first.check(&gpu, i, &f).unwrap().ok);
    assert!(second.check(&gpu, i, &f).unwrap().ok);
    drop((first, second));

    let again = Prepared::new(&gpu, copy, small, 3).unwrap();
    assert_eq!(at(&again, 0), base);
    drop(again);
    let mut large = Prepared::new(&gpu, copy, Problem::Elements { n: 12 << 20 }, 4).unwrap();
    assert!(gpu.reserved().is_none());
    assert!(large.check(&gpu, i, &f).unwrap().ok);
}
