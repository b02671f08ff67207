//! The `coalesce` binary's command line and error paths: one line on stderr, the
//! documented exit code, never a panic. These need no GPU.

mod common;

use common::{coalesce, fails, fresh_dir, temp_path};

use predicates::prelude::*;

#[test]
fn list_needs_no_gpu() {
    coalesce()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("stride").and(predicate::str::contains("1, 2, 4, 8, 16, 32, 64")));
}

/// Each product says what its variants multiply in; data movement says nothing.
#[test]
fn list_names_each_products_precision() {
    let out = coalesce().arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let after = |name: &str| {
        let mut lines = text.lines().skip_while(|l| !l.starts_with(&format!("{name} ")));
        lines.nth(2).unwrap_or_default().trim().to_string()
    };
    assert_eq!(after("gemm-bf16"), "precision: BF16", "{text}");
    assert_eq!(after("gemm-f16"), "precision: FP16", "{text}");
    assert_eq!(after("matmul"), "precision: FP32", "{text}");
    assert!(
        after("sgemm").starts_with("precision: FP32; TF32: tf32-128x128x32, tf32-128x256x32, wgmma,"),
        "{text}"
    );
    assert_eq!(text.matches("precision:").count(), 4, "{text}");
}

#[test]
fn unknown_experiment_lists_the_known_ones() {
    let err = fails(&["run", "nonsense"], 2);
    assert!(
        err.contains(&format!("known experiments: {}", coalesce::experiments::known())),
        "{err}"
    );
}

#[test]
fn unknown_variant_lists_its_variants() {
    let err = fails(&["run", "copy/f64"], 2);
    assert!(err.contains("f32, f32x4"), "{err}");
}

#[test]
fn zero_and_malformed_sizes_are_usage_errors() {
    assert!(fails(&["run", "--size", "0"], 2).contains("greater than zero"));
    assert!(fails(&["--size", "12Q"], 2).contains("unknown unit"));
    assert!(fails(&["--reps", "0"], 2).contains("--reps"));
    assert!(fails(&["--bogus-flag"], 2).contains("--bogus-flag"));
}

/// Where no GPU can be opened (CI), running says so in one line with exit code 1.
#[test]
fn no_gpu_is_one_clear_line() {
    if coalesce::device::Gpu::open(0).is_ok() {
        return; // A GPU machine: covered by the GPU tests instead.
    }
    let err = fails(&["run", "copy"], 1);
    assert!(err.contains("no NVIDIA GPU available"), "{err}");
    let err = fails(&["--device", "3"], 1);
    assert!(err.contains("no NVIDIA GPU available"), "{err}");
    let err = fails(&["compare", "copy"], 1);
    assert!(err.contains("no NVIDIA GPU available"), "{err}");
}

#[test]
fn compare_checks_its_arguments_before_the_gpu() {
    let err = fails(&["compare", "nonsense"], 2);
    assert!(err.contains("known experiments"), "{err}");
    assert!(fails(&["compare", "--size", "0"], 2).contains("greater than zero"));
}

/// NVRTC and cuBLAS are loaded at run time: `info` says where they are or, on a
/// machine without the toolkit (CI), why not, in one line each, never a panic.
#[test]
fn info_reports_nvrtc_and_cublas_without_panicking() {
    let out = coalesce().arg("info").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    for lib in ["NVRTC: ", "cuBLAS: "] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(lib))
            .unwrap_or_else(|| panic!("no {lib} line in {stdout}"));
        if line.contains("unavailable") {
            assert!(line.contains("LD_LIBRARY_PATH"), "{line}");
        }
    }
    // The headers the 16-bit twins include: their folder, or where they were looked for.
    let headers = stdout
        .lines()
        .find(|l| l.starts_with("CUDA headers"))
        .unwrap_or_else(|| panic!("no CUDA headers line in {stdout}"));
    if headers.contains("unavailable") {
        assert!(headers.contains("CUDA_HOME"), "{headers}");
    }
}

#[test]
fn info_shows_the_ptx_even_without_a_gpu() {
    let out = coalesce().arg("info").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("entry points: ") && stdout.contains("copy_f32x4"),
        "{stdout}"
    );
}

#[test]
fn list_names_gives_one_experiment_variant_per_line() {
    let out = coalesce().args(["list", "--names"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"copy/f32x4") && lines.contains(&"stride/64"),
        "{text}"
    );
    assert!(lines.iter().all(|l| l.split('/').count() == 2), "{text}");
}

#[test]
fn explain_needs_no_gpu_and_names_the_source_lines() {
    let dir = fresh_dir("cli-explain");
    let json = dir.join("explain.json");
    let out = coalesce()
        .args(["explain", "stride/8", "copy/f32", "--size", "64M", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("model sm70"), "{stdout}");
    assert!(stdout.contains("8 of 65536 blocks emulated"), "{stdout}");
    let load = stdout
        .lines()
        .find(|l| l.contains("stride.rs:") && l.contains("load"))
        .unwrap_or_else(|| panic!("no stride load line in\n{stdout}"));
    assert!(load.contains("32.00") && load.contains("scattered"), "{load}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["model"], "sm70");
    assert_eq!(v["kernels"].as_array().unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn explain_rejects_bad_arguments_in_one_line() {
    assert!(fails(&["explain", "--model", "cc2.0"], 2).contains("cc2.0"));
    assert!(fails(&["explain", "strid"], 2).contains("known experiments"));
    assert!(fails(&["explain", "--blocks", "0"], 2).contains("--blocks"));
    assert!(fails(&["explain", "--against-ncu", "/no/such/dir"], 1).contains("cannot read /no/such/dir"));
}

/// ncu's CSV for one launch of `kernel` with `sectors` over `requests` global loads.
fn ncu_csv(kernel: &str, sectors: u64, requests: u64) -> String {
    let row = |metric: &str, value: u64| {
        format!(
            "\"3\",\"99\",\"coalesce\",\"localhost\",\"{kernel}\",\"1\",\"7\",\"(256, 1, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"{metric}\",\"\",\"{value}\"\n"
        )
    };
    format!(
        "==PROF== Connected to process 99\n\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n{}{}",
        row("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", sectors),
        row("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", requests),
    )
}

#[test]
fn against_ncu_sets_predictions_beside_measurements() {
    let dir = fresh_dir("cli-ncu");
    // stride 8 really costs 32 sectors per load; pretend copy/f32 measured 6.
    std::fs::write(dir.join("stride.8.csv"), ncu_csv("stride_read", 32 * 1000, 1000)).unwrap();
    std::fs::write(dir.join("copy.f32.csv"), ncu_csv("copy_f32", 6 * 1000, 1000)).unwrap();
    // A failed profile (no counters) is reported, not fatal.
    std::fs::write(dir.join("stride.2.csv"), "==ERROR== ERR_NVGPUCTRPERM\n").unwrap();
    let out = coalesce()
        .args(["explain", "--size", "4M", "--against-ncu"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |variant: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(variant) && l.contains("global load"))
            .unwrap_or_else(|| panic!("no {variant} line in\n{stdout}"))
            .to_string()
    };
    assert!(
        line("stride/8").contains("32.00") && line("stride/8").ends_with("ok"),
        "{stdout}"
    );
    assert!(
        line("copy/f32").contains("-33.3%") && line("copy/f32").ends_with("MISS"),
        "{stdout}"
    );
    assert!(stdout.contains("1 of 2 within 5%"), "{stdout}");
    assert!(
        stdout.contains("skipped") && stdout.contains("stride.2.csv"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shapes_parse_and_bad_shapes_are_usage_errors() {
    // Parsing succeeds (no panic) and gets as far as needing a GPU, or runs.
    let out = coalesce()
        .args(["run", "transpose", "--shape", "33x65", "--reps", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.status.code() == Some(0) || err.contains("no NVIDIA GPU available"),
        "{err}"
    );
    assert!(fails(&["run", "transpose", "--shape", "33"], 2).contains("ROWSxCOLS"));
    assert!(fails(&["run", "transpose", "--shape", "0x5"], 2).contains("greater than zero"));
    assert!(fails(&["run", "copy", "--shape", "4x4"], 2).contains("no selected experiment takes a shape"));
}

#[test]
fn json_to_an_unwritable_path_fails_before_the_run() {
    // Checked before the GPU is opened, so it needs none; nothing is left behind.
    let err = fails(&["run", "copy", "--json", "/nonexistent-dir/r.json"], 1);
    assert_eq!(
        err.trim_end(),
        "error: cannot write /nonexistent-dir/r.json: the folder /nonexistent-dir does not exist"
    );
}

/// Sizes and shapes far beyond any GPU: parsed without a panic and refused in one
/// line (here without a GPU; on a GPU machine, by the memory and grid checks).
#[test]
fn extreme_sizes_and_shapes_never_panic() {
    for args in [
        &["run", "copy", "--size", "16T"][..],
        &["run", "copy", "--size", "17G"],
        &["run", "--size", "16777215T"],
        &["run", "transpose", "--shape", "4000000000x4000000000"],
        &["run", "transpose", "--shape", "1x8589934592"],
        &["run", "matmul", "--shape", "4000000000x4000000000x4000000000"],
        &["run", "matmul", "--shape", "18446744073709551615x2x2"],
    ] {
        let out = coalesce().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}

#[test]
fn report_checks_its_arguments_before_the_gpu() {
    let err = fails(&["report", "nonsense"], 2);
    assert!(err.contains("unknown experiment \"nonsense\""), "{err}");
    // An --out that cannot be written fails at once, not after the suite has run.
    let err = fails(&["report", "copy", "--out", "/proc/coalesce-report"], 1);
    assert!(err.contains("cannot write /proc/coalesce-report"), "{err}");
}

#[test]
fn report_without_a_gpu_is_one_clear_line() {
    if coalesce::device::Gpu::open(0).is_ok() {
        return; // A GPU machine: `coalesce report` runs for real there (scripts/gpu-run.sh report).
    }
    let dir = temp_path("cli-report");
    for extra in [&[][..], &["--rust-only"]] {
        let mut args = vec!["report", "stride", "--out", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        let err = fails(&args, 1);
        assert!(err.contains("no NVIDIA GPU available"), "{err}");
        assert!(!dir.exists(), "a command that fails early leaves nothing behind");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_help_names_its_options() {
    coalesce().args(["report", "--help"]).assert().success().stdout(
        predicate::str::contains("--out <DIR>")
            .and(predicate::str::contains("--size"))
            .and(predicate::str::contains("--reps"))
            .and(predicate::str::contains("--quiet"))
            .and(predicate::str::contains("--rust-only")),
    );
}

/// The binary starts without a driver (it loads libcuda at run time, never links
/// it): what works without a GPU works, and the GPU commands say what does.
#[test]
fn without_a_driver_the_binary_starts_and_says_what_works() {
    if coalesce::device::driver().is_ok() {
        return; // A machine with a driver: scripts/gpu-run.sh checks the GPU side.
    }
    coalesce()
        .args(["explain", "copy/f32", "--size", "1M", "--quiet"])
        .assert()
        .success();
    for args in [&["run", "copy"][..], &["compare"], &["check"], &["info"]] {
        let err = fails(args, 1);
        assert!(
            err.contains("no NVIDIA driver on this machine"),
            "{args:?}: {err}"
        );
        assert!(err.contains("`coalesce report --from FILE` still work"), "{err}");
        // The system loader's own words, copied when it said them: `info` looks for
        // NVRTC and cuBLAS first, whose failed look-ups reuse the loader's buffer.
        assert!(err.contains("(libcuda.so.1: "), "{args:?}: {err}");
    }
}

#[test]
fn clap_hints_survive_the_one_line_error() {
    let err = fails(&["explain", "--model", "sm80"], 2);
    assert!(err.contains("[possible values: sm70, cc1.2, cc1.0]"), "{err}");
    let err = fails(&["run", "--sise", "4"], 2);
    assert!(err.contains("tip: a similar argument exists: '--size'"), "{err}");
    let err = fails(&["lsit"], 2);
    assert!(err.contains("did you mean the command `list`?"), "{err}");
    let err = fails(&["run", "--size", "0.1"], 2);
    assert!(err.contains("less than one byte"), "{err}");
    let err = fails(&["run", "--shape", "1234567890123456789012345x2"], 2);
    assert!(err.contains("larger than any dimension"), "{err}");
    let err = fails(&["run", "--device", "0,zero"], 2);
    assert!(err.contains("use 0, 0,1 or all"), "{err}");
}

/// Each mistake gets a line that names it, not the parser's generic words.
#[test]
fn messages_name_the_real_problem() {
    let err = fails(&["explain", "--against-run", "run.json"], 2);
    assert!(
        err.contains("were not provided: --profile <FILE|GPU> (see --help)"),
        "{err}"
    );
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/nvidia-h200.json");
    let err = fails(&["report", "--from", profile], 2);
    assert!(
        err.contains("a GPU's profile (from `coalesce calibrate`), not the results of a run"),
        "{err}"
    );
    let results = fixture_dir("messages").join("h100.json");
    let err = fails(&["explain", "copy", "--profile", results.to_str().unwrap()], 2);
    assert!(err.contains("the results of a run, not a GPU's profile"), "{err}");
    for args in [&["run", "--size", "-1"][..], &["explain", "--size", "-1M"]] {
        let err = fails(args, 2);
        assert!(err.contains("a size cannot be negative"), "{args:?}: {err}");
    }
    let err = fails(&["run", "--reps", "-3"], 2);
    assert!(err.contains("-3 is not in 1..=100000"), "{err}");
    let err = fails(&["run", "--device", "-1"], 2);
    assert!(err.contains("\"-1\" is not a device ordinal"), "{err}");
    let err = fails(&["refit"], 2);
    assert!(err.contains("were not provided: <FILE>..."), "{err}");
}

/// `coalesce refit` (for maintainers): every file refitted or none, each rewritten
/// as `calibrate` writes it.
#[test]
fn refit_rewrites_profiles_from_their_sweeps_or_none() {
    let dir = fresh_dir("cli-refit");
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/nvidia-h100-80gb-hbm3.json");
    let current = std::fs::read_to_string(shipped).unwrap();
    let (good, old) = (dir.join("h100.json"), dir.join("old.json"));
    std::fs::write(&good, &current).unwrap();
    // A schema-1 file of the same GPU, with its fits out of date.
    let mut v: serde_json::Value = serde_json::from_str(&current).unwrap();
    for field in [
        "queueing_latency_ns",
        "sm",
        "load_lines_per_ns_per_sm",
        "store_lines_per_ns_per_sm",
    ] {
        v.as_object_mut().unwrap().remove(field);
    }
    for field in [
        "shared_wavefronts_per_ns_per_sm",
        "pitch_sweep",
        "spread_sweep",
        "compute",
        "power",
    ] {
        v.as_object_mut().unwrap().remove(field);
    }
    v["schema"] = 1.into();
    v["loaded_latency_ns"] = 1234.0.into();
    std::fs::write(&old, v.to_string()).unwrap();
    // A bad file among them: nothing is rewritten.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let args = |files: &[&std::path::Path]| {
        let mut a = vec!["refit".to_string()];
        a.extend(files.iter().map(|f| f.display().to_string()));
        a
    };
    let out = coalesce().args(args(&[&old, &bad])).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&old).unwrap(), v.to_string());
    let out = coalesce().args(args(&[&good, &old])).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        std::fs::read_to_string(&good).unwrap(),
        current,
        "a current profile is as it was"
    );
    assert!(text.lines().next().unwrap().ends_with("(unchanged)"), "{text}");
    let refitted: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&old).unwrap()).unwrap();
    let shipped: serde_json::Value = serde_json::from_str(&current).unwrap();
    assert_eq!(refitted["schema"], 2);
    assert_eq!(
        refitted["loaded_latency_ns"], shipped["loaded_latency_ns"],
        "{text}"
    );
    assert_eq!(
        refitted["queueing_latency_ns"], shipped["queueing_latency_ns"],
        "{text}"
    );
    assert!(text.contains("loaded_latency_ns 1234.000 -> "), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn output_paths_are_checked_before_any_work_and_nothing_is_made() {
    let err = fails(&["explain", "copy", "--json", "/nonexistent-dir/x.json"], 1);
    assert!(err.contains("cannot write /nonexistent-dir/x.json"), "{err}");
    let from = fixture_dir("paths").join("h100.json");
    let err = fails(
        &["report", "--from", from.to_str().unwrap(), "--out", "/proc/r"],
        1,
    );
    assert!(err.contains("cannot write /proc/r"), "{err}");
    // One rule for files and folders: the output itself may be new, the folder it
    // goes in must exist.
    let missing = temp_path("cli-missing-folder");
    let (file, dir) = (missing.join("x.json"), missing.join("r"));
    let err = fails(&["explain", "copy", "--json", file.to_str().unwrap()], 1);
    let why = format!("the folder {} does not exist", missing.display());
    assert!(err.ends_with(&format!("{why}\n")), "{err}");
    let err = fails(
        &[
            "report",
            "--from",
            from.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ],
        1,
    );
    assert!(err.ends_with(&format!("{why}\n")), "{err}");
    assert!(!missing.exists());
    let fresh = temp_path("cli-new-report");
    coalesce()
        .args([
            "report",
            "--from",
            from.to_str().unwrap(),
            "--out",
            fresh.to_str().unwrap(),
        ])
        .assert()
        .success();
    assert!(fresh.join("report.md").is_file());
}

/// One GPU's run as `run --json` writes it, its copy at `copy` GB/s, from before the
/// PCI address was recorded unless `pci` is given.
fn saved_run(name: &str, ordinal: u32, pci: Option<&str>, copy: f64) -> serde_json::Value {
    let mut run = serde_json::json!({
        "schema": 2,
        "coalesce_version": "0.1.0",
        "device": {
            "name": name, "ordinal": ordinal, "compute_capability": [9, 0], "sm_count": 132,
            "l2_bytes": 52428800u64, "total_memory_bytes": 85899345920u64,
            "memory_clock_khz": 2619000, "bus_width_bits": 5120, "driver_version": 13000
        },
        "ptx_arch": "sm_70",
        "peak_gb_per_s": 3352.3,
        "baselines": [{"experiment": "copy", "baseline": {"bytes": 419430400u64,
            "timing": {"median_ms": 0.28, "min_ms": 0.27, "max_ms": 0.29, "reps": 20}, "gb_per_s": copy}}],
        "rows": [{"experiment": "copy", "variant": "f32x4", "kernel": "copy_f32x4", "size_bytes": 419430400u64,
            "size_label": null, "useful_bytes": 838860800u64, "flops": null,
            "timing": {"median_ms": 0.29, "min_ms": 0.28, "max_ms": 0.3, "reps": 20},
            "gb_per_s": copy * 0.98, "gflop_per_s": null, "pct_of_copy": 98.0, "pct_of_peak": 88.0,
            "speedup_over_slowest": 1.0, "validated": true, "check": "exact: all match"}]
    });
    if let Some(pci) = pci {
        run["device"]["pci_bus_id"] = pci.into();
    }
    run
}

/// A folder of saved results: `h100.json` and `h200.json` as `run --json` writes
/// them, made from the report tests' fixture with two device names.
fn fixture_dir(test: &str) -> std::path::PathBuf {
    // One folder per test: tests run in parallel in one process.
    let dir = fresh_dir(&format!("cli-{test}"));
    for (file, name, copy) in [
        ("h100.json", "NVIDIA H100 80GB HBM3", 2990.0),
        ("h200.json", "NVIDIA H200", 4200.0),
    ] {
        let run = saved_run(name, 0, None, copy);
        std::fs::write(dir.join(file), serde_json::to_string_pretty(&run).unwrap()).unwrap();
    }
    dir
}

/// `run --device all --json` on a host with two GPUs of one model: the report names
/// each by its ordinal and PCI address, and gives each its own folder.
#[test]
fn gpus_of_one_model_are_kept_apart() {
    let dir = fresh_dir("cli-two-h100");
    let h100 = "NVIDIA H100 80GB HBM3";
    let both = serde_json::json!({
        "schema": 2,
        "coalesce_version": "0.1.0",
        "runs": [
            saved_run(h100, 0, Some("0000:18:00.0"), 2990.0),
            saved_run(h100, 1, Some("0000:2a:00.0"), 2980.0),
        ],
    });
    let all = dir.join("all.json");
    std::fs::write(&all, serde_json::to_string_pretty(&both).unwrap()).unwrap();
    let out = dir.join("report");
    coalesce()
        .args([
            "report",
            "--from",
            all.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .assert()
        .success();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let (first, second) = (
        "NVIDIA H100 80GB HBM3 (GPU 0, PCI 0000:18:00.0)",
        "NVIDIA H100 80GB HBM3 (GPU 1, PCI 0000:2a:00.0)",
    );
    assert!(
        md.contains(&format!("| {first}: % of copy | {second}: % of copy |")),
        "{md}"
    );
    for (name, folder, copy) in [
        (first, "nvidia-h100-80gb-hbm3-gpu-0-pci-0000-18-00-0", "2990"),
        (second, "nvidia-h100-80gb-hbm3-gpu-1-pci-0000-2a-00-0", "2980"),
    ] {
        assert!(md.contains(&format!("- {name}: ")), "{md}");
        assert!(md.contains(&format!("]({folder}/report.md)")), "{md}");
        let own = std::fs::read_to_string(out.join(folder).join("report.md")).unwrap();
        assert!(own.contains(copy), "{folder}: {own}");
    }
    // Apart from each other, a GPU keeps its plain name.
    let h200 = dir.join("h200.json");
    std::fs::write(&h200, saved_run("NVIDIA H200", 0, None, 4200.0).to_string()).unwrap();
    let one = dir.join("one.json");
    std::fs::write(&one, saved_run(h100, 1, Some("0000:2a:00.0"), 2980.0).to_string()).unwrap();
    let mixed = dir.join("mixed");
    coalesce()
        .args([
            "report",
            "--from",
            one.to_str().unwrap(),
            "--from",
            h200.to_str().unwrap(),
        ])
        .args(["--out", mixed.to_str().unwrap()])
        .assert()
        .success();
    assert!(mixed.join("nvidia-h100-80gb-hbm3/report.md").is_file());
    assert!(mixed.join("nvidia-h200/report.md").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run's file says when it ran; one from before that was recorded still reads.
#[test]
fn reports_say_when_each_run_was_measured() {
    let dir = fresh_dir("cli-dated");
    let mut dated = saved_run("NVIDIA H100 80GB HBM3", 0, None, 2990.0);
    dated["date"] = "2026-11-27 10:00 UTC".into();
    let undated = saved_run("NVIDIA H200", 0, None, 4200.0);
    let (h100, h200) = (dir.join("h100.json"), dir.join("h200.json"));
    std::fs::write(&h100, dated.to_string()).unwrap();
    std::fs::write(&h200, undated.to_string()).unwrap();
    let out = dir.join("report");
    coalesce()
        .args([
            "report",
            "--from",
            h100.to_str().unwrap(),
            "--from",
            h200.to_str().unwrap(),
        ])
        .args(["--out", out.to_str().unwrap()])
        .assert()
        .success();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("- NVIDIA H100 80GB HBM3: measured 2026-11-27 10:00 UTC,"),
        "{md}"
    );
    assert!(
        md.contains("- NVIDIA H200: measured not recorded in the results file,"),
        "{md}"
    );
    let own = std::fs::read_to_string(out.join("nvidia-h100-80gb-hbm3/report.md")).unwrap();
    assert!(own.contains("- Date: 2026-11-27 10:00 UTC"), "{own}");
    // The results.json written beside it keeps the date, once.
    let json = std::fs::read_to_string(out.join("nvidia-h100-80gb-hbm3/results.json")).unwrap();
    assert_eq!(json.matches("\"date\"").count(), 1, "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_from_saved_results_needs_no_gpu_and_compares_gpus() {
    let dir = fixture_dir("from");
    let (h100, h200) = (dir.join("h100.json"), dir.join("h200.json"));
    let out = dir.join("report");
    coalesce()
        .args([
            "report",
            "--from",
            h100.to_str().unwrap(),
            "--from",
            h200.to_str().unwrap(),
        ])
        .args(["--out", out.to_str().unwrap()])
        .assert()
        .success();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("# coalesce report: 2 GPUs"), "{md}");
    assert!(
        md.contains("| copy | f32x4 | 98.0 (2930 GB/s) | 98.0 (4116 GB/s) |"),
        "{md}"
    );
    assert!(out.join("summary.svg").is_file());
    assert!(out.join("nvidia-h100-80gb-hbm3/report.md").is_file());
    assert!(out.join("nvidia-h200/report.md").is_file());

    // One GPU's kernels at one size twice, something else, a newer schema: one line
    // each, exit 2, and no report folder made.
    let bad_out = dir.join("not-made");
    let o = bad_out.to_str().unwrap();
    let err = fails(
        &[
            "report",
            "--from",
            h100.to_str().unwrap(),
            "--from",
            h100.to_str().unwrap(),
            "--out",
            o,
        ],
        2,
    );
    assert!(
        err.contains(&format!(
            "as {} does: give each size of a GPU once",
            h100.display()
        )),
        "{err}"
    );
    let other = dir.join("other.json");
    std::fs::write(&other, "{\"rows\": []}").unwrap();
    let err = fails(&["report", "--from", other.to_str().unwrap(), "--out", o], 2);
    assert!(err.contains("not coalesce results"), "{err}");
    let newer = dir.join("newer.json");
    let text = std::fs::read_to_string(&h100)
        .unwrap()
        .replace("\"schema\": 2", "\"schema\": 99");
    std::fs::write(&newer, text).unwrap();
    let err = fails(&["report", "--from", newer.to_str().unwrap(), "--out", o], 2);
    assert!(err.contains("written by a newer coalesce (schema 99"), "{err}");
    let err = fails(
        &["report", "copy", "--from", h100.to_str().unwrap(), "--out", o],
        2,
    );
    assert!(err.contains("takes no experiments"), "{err}");
    assert!(!bad_out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_predicts_with_a_profile_and_refuses_a_bad_one() {
    let dir = fresh_dir("cli-profile");
    let good = dir.join("gpu.json");
    std::fs::write(
        &good,
        r#"{"schema":1,"coalesce_version":"test","device":"Test GPU","measured":"now","sm_count":132,
            "l2_bytes":52428800,"max_threads_per_sm":2048,"copy_gb_per_s":3000,"dram_read_granularity":64,
            "idle_latency_ns":700,"loaded_latency_ns":900,"stride_sweep":[],"inflight_sweep":[]}"#,
    )
    .unwrap();
    let out = coalesce()
        .args([
            "explain",
            "copy/f32",
            "stride/16",
            "--quiet",
            "--profile",
            good.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("predictions for Test GPU from its profile"),
        "{text}"
    );
    assert!(text.contains("bound: bytes in flight"), "{text}");
    assert!(text.contains("bound: DRAM bytes at the copy ceiling"), "{text}");
    // An old profile: residency from threads, and stride 16's many-line loads untimed.
    assert!(
        text.contains("residency counts threads only: the profile (schema 2)"),
        "{text}"
    );
    assert!(
        text.contains("not calibrated: the profile has no load_lines_per_ns_per_sm"),
        "{text}"
    );
    // Without a profile the output says it is uncalibrated.
    let out = coalesce()
        .args(["explain", "copy/f32", "--quiet"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("predictions: uncalibrated"));
    // A missing field, a newer schema, a name that is neither a file nor a shipped GPU.
    let missing = dir.join("missing.json");
    std::fs::write(
        &missing,
        std::fs::read_to_string(&good)
            .unwrap()
            .replace("\"loaded_latency_ns\":900,", ""),
    )
    .unwrap();
    let err = fails(&["explain", "copy", "--profile", missing.to_str().unwrap()], 2);
    assert!(err.contains("missing field `loaded_latency_ns`"), "{err}");
    let newer = dir.join("newer.json");
    std::fs::write(
        &newer,
        std::fs::read_to_string(&good)
            .unwrap()
            .replace("\"schema\":1", "\"schema\":9"),
    )
    .unwrap();
    let err = fails(&["explain", "copy", "--profile", newer.to_str().unwrap()], 2);
    assert!(err.contains("newer coalesce (profile schema 9"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // Schema 3 needs its residency limits and on-chip rates.
    let partial = dir.join("partial.json");
    std::fs::write(
        &partial,
        std::fs::read_to_string(&good)
            .unwrap()
            .replace("\"schema\":1", "\"schema\":3,\"queueing_latency_ns\":0"),
    )
    .unwrap();
    let err = fails(&["explain", "copy", "--profile", partial.to_str().unwrap()], 2);
    assert!(err.contains("missing field `sm`"), "{err}");
    let err = fails(&["explain", "copy", "--profile", "NVIDIA B300"], 2);
    assert!(err.contains("no profile ships for a GPU of that name"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_sets_predictions_beside_measurements_with_a_profile_of_that_gpu() {
    let dir = fixture_dir("predicted");
    let profile = |device: &str| {
        format!(
            r#"{{"schema":1,"coalesce_version":"test","device":"{device}","measured":"now","sm_count":132,
            "l2_bytes":52428800,"max_threads_per_sm":2048,"copy_gb_per_s":3100,"dram_read_granularity":64,
            "idle_latency_ns":700,"loaded_latency_ns":900,"stride_sweep":[],"inflight_sweep":[]}}"#
        )
    };
    let h100 = dir.join("h100-profile.json");
    std::fs::write(&h100, profile("NVIDIA H100 80GB HBM3")).unwrap();
    let out = dir.join("predicted");
    coalesce()
        .args(["report", "--from", dir.join("h100.json").to_str().unwrap()])
        .args([
            "--profile",
            h100.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .assert()
        .success();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Predicted beside measured"), "{md}");
    // GB/s against GB/s over the profile's ceiling (2930.2 of 3100 GB/s measured, the
    // prediction at the ceiling), the run's own % of copy (98.0, over its baseline) beside.
    assert!(
        md.contains("| copy | f32x4 | 94.5 | 100.0 | +5.8% | 98.0 | DRAM bytes at the copy ceiling |"),
        "{md}"
    );
    // Another GPU's profile is refused, and nothing is written.
    let other = dir.join("other-profile.json");
    std::fs::write(&other, profile("NVIDIA B300")).unwrap();
    let not_made = dir.join("not-made-either");
    let err = fails(
        &[
            "report",
            "--from",
            dir.join("h100.json").to_str().unwrap(),
            "--profile",
            other.to_str().unwrap(),
            "--out",
            not_made.to_str().unwrap(),
        ],
        2,
    );
    assert!(
        err.contains("measured on NVIDIA B300, not on NVIDIA H100 80GB HBM3"),
        "{err}"
    );
    assert!(!not_made.exists());

    // Two GPUs, one shipped profile each (repeated --profile): each GPU's report gets
    // its own GPU's predictions; a profile of neither GPU is refused.
    let (h100, h200) = (dir.join("h100.json"), dir.join("h200.json"));
    let both = dir.join("both");
    coalesce()
        .args([
            "report",
            "--from",
            h100.to_str().unwrap(),
            "--from",
            h200.to_str().unwrap(),
        ])
        .args([
            "--profile",
            "H100",
            "--profile",
            "H200",
            "--out",
            both.to_str().unwrap(),
        ])
        .assert()
        .success();
    for gpu in ["nvidia-h100-80gb-hbm3", "nvidia-h200"] {
        let md = std::fs::read_to_string(both.join(gpu).join("report.md")).unwrap();
        assert!(md.contains("## Predicted beside measured"), "{gpu}: {md}");
    }
    let err = fails(
        &[
            "report",
            "--from",
            h100.to_str().unwrap(),
            "--from",
            h200.to_str().unwrap(),
            "--profile",
            other.to_str().unwrap(),
            "--out",
            not_made.to_str().unwrap(),
        ],
        2,
    );
    assert!(
        err.contains("measured on NVIDIA B300, which none of the results come from"),
        "{err}"
    );
    assert!(!not_made.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `calibrate` checks where its profile goes before it opens the GPU, so a bad
/// `--out` fails at once, with or without one.
#[test]
fn calibrate_refuses_an_unwritable_file_before_any_work() {
    let err = fails(&["calibrate", "--out", "/proc/x.json"], 1);
    assert!(err.contains("cannot write /proc/x.json"), "{err}");
    let err = fails(&["calibrate", "--quick", "--out", "/no/such/folder/"], 1);
    assert!(
        err.contains("cannot write /no/such/folder/: the folder /no/such/folder/ does not exist"),
        "{err}"
    );
    assert!(fails(&["calibrate", "--device", "x"], 2).contains("--device"));
}

/// `calibrate --out DIR` writes DIR/<gpu>.json (`--out host/profiles/` names a new
/// GPU's profile as the shipped ones are named), and `--out -` standard output: both
/// pass the output checks and get as far as the GPU.
#[test]
fn calibrate_takes_a_folder_or_standard_output() {
    if coalesce::device::driver().is_ok() {
        return; // A machine with a driver: scripts/gpu-run.sh calibrate runs it.
    }
    let dir = fresh_dir("cli-calibrate-folder");
    for out in [dir.to_str().unwrap(), "-"] {
        let err = fails(&["calibrate", "--quick", "--out", out], 1);
        assert!(err.contains("no NVIDIA GPU available"), "{out}: {err}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without a driver, `calibrate` is the one-line no-GPU error, and leaves no file in
/// the folder it would have written to.
#[test]
fn calibrate_without_a_gpu_is_one_line_and_writes_nothing() {
    if coalesce::device::driver().is_ok() {
        return; // A machine with a driver: scripts/gpu-run.sh calibrate runs it.
    }
    let dir = fresh_dir("cli-calibrate");
    for args in [&["calibrate"][..], &["calibrate", "--quick", "--device", "1"]] {
        let out = coalesce().args(args).current_dir(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: no NVIDIA GPU available: no NVIDIA driver on this machine"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "calibrate left {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A product's blocks compute whole tiles: where the shape is not a multiple of the
/// tile (192 rows into 4096), the prediction counts the tensor cores' FLOPs the
/// emulated blocks issue, not the declared 2 m n k; elsewhere the two agree, for
/// `wgmma` and `mma.sync` alike. The warps that issue them are the ones that run the
/// hot loop.
#[test]
fn tiles_on_the_edge_count_the_work_the_tensor_cores_do() {
    let dir = std::env::temp_dir().join(format!("coalesce-edge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("explain.json");
    let out = coalesce()
        .args([
            "explain",
            "sgemm/wgmma-ws-192",
            "sgemm/wgmma-ws",
            "sgemm/tf32-128x128x32",
            "--profile",
            "H100",
            "--shape",
            "4096x4096x4096",
            "--blocks",
            "2",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let share = |variant: &str| {
        report["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["variant"] == variant)
            .and_then(|k| k["product"]["computed_share"].as_f64())
            .unwrap_or_else(|| panic!("no {variant} in {report}"))
    };
    // 22 rows of 192 x 128 tiles (4224 rows) by 32 columns, over 4096 x 4096.
    assert_eq!(share("wgmma-ws-192"), 22.0 * 192.0 / 4096.0);
    assert_eq!(share("wgmma-ws"), 1.0);
    assert_eq!(share("tf32-128x128x32"), 1.0);
    // The warps that run the hot loop: wgmma-ws's two consumer warpgroups (8 of its 12
    // warps, one block an SM), not its producer; every warp of the mma.sync rung.
    let field = |variant: &str, name: &str| {
        report["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["variant"] == variant)
            .and_then(|k| k["product"][name].as_f64())
            .unwrap_or_else(|| panic!("no {name} of {variant} in {report}"))
    };
    assert_eq!(field("wgmma-ws", "warps_per_scheduler"), 2.0);
    let tf32_blocks = report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["variant"] == "tf32-128x128x32")
        .and_then(|k| k["product"]["residency"]["blocks"].as_f64())
        .unwrap();
    assert_eq!(field("tf32-128x128x32", "warps_per_scheduler"), tf32_blocks);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the blocks compute 3.1% more than 2 m n k"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `explain --against-run` sets a product's predicted GFLOP/s beside the run's, and
/// refuses a run measured at another shape than the one predicted, naming it.
#[test]
fn products_are_predicted_beside_a_run_at_its_shape() {
    let results = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/sample-report/nvidia-h100-80gb-hbm3/results.json"
    );
    let args = |shape: &'static str| {
        [
            "explain",
            "sgemm/interior",
            "--profile",
            "H100",
            "--against-run",
            results,
            "--shape",
            shape,
            "--blocks",
            "1",
        ]
    };
    let out = coalesce()
        .args(args("4096x4096x4096"))
        .arg("--quiet")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("products: predicted (coalesce explain --profile) against measured"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("sgemm/interior"))
        .unwrap_or_default();
    // The measured column is the sample run's own figure.
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
    let measured = run["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["experiment"] == "sgemm" && r["variant"] == "interior")
        .and_then(|r| r["gflop_per_s"].as_f64())
        .unwrap();
    assert!(
        row.contains(&format!(" {measured:.0} ")) && row.contains('%'),
        "{measured:.0} not in {text}"
    );
    assert!(text.contains("of 1 within 15% (relative)"), "{text}");
    let err = fails(&args("1024x1024x1024"), 2);
    assert!(
        err.contains("measured sgemm/interior at 4096x4096x4096, but explain predicted it at 1024x1024x1024: give --shape 4096x4096x4096"),
        "{err}"
    );
}

/// `mkfifo PATH`: a FIFO, which an output must never replace (nor block on).
fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn is_link(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// `--json -` (or `/dev/stdout`) writes the JSON alone to standard output, so it can
/// be piped; the text that would have gone there goes to standard error.
#[test]
fn json_to_standard_output_leaves_the_text_to_stderr() {
    for target in ["-", "/dev/stdout"] {
        let out = coalesce()
            .args(["explain", "copy/f32", "--size", "1M", "--quiet", "--json", target])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{target}: {stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{target}: stdout is not JSON alone ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        assert_eq!(v["kernels"][0]["variant"], "f32", "{target}");
        assert!(
            stderr.contains("model sm70") && stderr.contains("copy.rs:"),
            "{target}: {stderr}"
        );
    }
    // Without it, the text is on stdout as before.
    let out = coalesce()
        .args(["explain", "copy/f32", "--size", "1M", "--quiet"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("model sm70"));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A `--json` link is written through to its target, and stays a link.
#[test]
fn json_is_written_through_a_link() {
    let dir = fresh_dir("cli-json-link");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::fs::write(dir.join("real/explain.json"), "old").unwrap();
    let link = dir.join("explain.json");
    std::os::unix::fs::symlink("real/explain.json", &link).unwrap();
    coalesce()
        .args(["explain", "copy/f32", "--size", "1M", "--quiet", "--json"])
        .arg(&link)
        .assert()
        .success();
    assert!(is_link(&link), "the link was replaced");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("real/explain.json")).unwrap()).unwrap();
    assert_eq!(v["model"], "sm70");
    let mut left: Vec<_> = std::fs::read_dir(dir.join("real"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["explain.json"], "no temporary file left");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A device or a FIFO as `--json` gets one line and exit 1 and is left as it is, and
/// for the GPU commands that happens before the GPU is opened (so here, without one,
/// it is that line and not "no NVIDIA GPU available").
#[test]
fn json_to_a_device_or_fifo_is_refused_before_any_work() {
    let dir = fresh_dir("cli-json-special");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    for (command, target, kind) in [
        (
            &["explain", "copy/f32", "--size", "1M"][..],
            "/dev/full",
            "a character device",
        ),
        (&["explain", "copy/f32", "--size", "1M"], fifo, "a FIFO"),
        (&["run", "copy"], "/dev/full", "a character device"),
        (&["run", "copy"], fifo, "a FIFO"),
        (&["compare", "copy"], "/dev/null", "a character device"),
        (&["--size", "1M"], "/dev/null", "a character device"),
    ] {
        let mut args = command.to_vec();
        args.extend(["--json", target]);
        let err = fails(&args, 1);
        assert_eq!(
            err.trim_end(),
            format!(
                "error: cannot write {target}: {kind}, not a regular file; it is left as it is (give - to write to standard output)"
            ),
            "{args:?}"
        );
    }
    let fifo = std::path::Path::new(fifo);
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &std::fs::metadata(fifo).unwrap().file_type()
    ));
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(
        &std::fs::metadata("/dev/full").unwrap().file_type()
    ));
    let err = fails(&["calibrate", "--out", "/dev/full"], 1);
    assert!(
        err.contains("cannot write /dev/full: a character device"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `report --out` follows the same rule: through a link to the folder it names, never
/// onto a device or a FIFO, and never standard output.
#[test]
fn a_report_folder_follows_links_and_refuses_devices() {
    let dir = fixture_dir("out-targets");
    let from = dir.join("h100.json");
    let from = from.to_str().unwrap();
    // A link to a folder, and a link to a folder not made yet.
    std::fs::create_dir(dir.join("real")).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink("real", &link).unwrap();
    let later = dir.join("later");
    std::os::unix::fs::symlink("made-later", &later).unwrap();
    for (out, real) in [(&link, dir.join("real")), (&later, dir.join("made-later"))] {
        coalesce()
            .args(["report", "--from", from, "--out"])
            .arg(out)
            .assert()
            .success();
        assert!(is_link(out), "{} was replaced", out.display());
        assert!(real.join("report.md").is_file() && real.join("results.json").is_file());
    }
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    for (out, kind) in [
        ("/dev/null", "a character device"),
        (fifo.to_str().unwrap(), "a FIFO"),
    ] {
        let err = fails(&["report", "--from", from, "--out", out], 1);
        assert_eq!(
            err.trim_end(),
            format!("error: cannot write {out}: {kind}, not a folder; it is left as it is")
        );
    }
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &std::fs::metadata(&fifo).unwrap().file_type()
    ));
    let err = fails(&["report", "--from", from, "--out", "-"], 2);
    assert!(err.contains("a report is a folder of files"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One exit-code rule: 1 for a file that cannot be read, 2 for one that is there but
/// malformed, or for a bad argument.
#[test]
fn unreadable_inputs_exit_1_and_malformed_ones_2() {
    let dir = fresh_dir("cli-inputs");
    let missing = dir.join("missing.json");
    let missing = missing.to_str().unwrap();
    for args in [
        &["report", "--from", missing][..],
        &["explain", "copy", "--profile", missing],
        &["explain", "copy", "--profile", "H100", "--against-run", missing],
        &["refit", missing],
    ] {
        let err = fails(args, 1);
        assert!(err.contains(&format!("cannot read {missing}")), "{args:?}: {err}");
    }
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    let binary = dir.join("binary.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x80]).unwrap();
    for file in [&garbage, &binary] {
        let file = file.to_str().unwrap();
        for args in [
            &["report", "--from", file][..],
            &["explain", "copy", "--profile", file],
            &["explain", "copy", "--profile", "H100", "--against-run", file],
            &["refit", file],
        ] {
            fails(args, 2);
        }
    }
    // A folder with no Nsight Compute output in it is malformed input.
    let err = fails(&["explain", "--against-ncu", dir.to_str().unwrap()], 2);
    assert!(err.contains("not Nsight Compute CSV output"), "{err}");
    // Nothing was written next to the inputs.
    let mut left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["binary.json", "garbage.json"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without a profile, explain names the ones that ship; with `--shape`, its sizes
/// line says what the shape set.
#[test]
fn explain_names_the_shipped_profiles_and_the_shape_it_used() {
    let out = coalesce()
        .args(["explain", "copy/f32", "--size", "1M", "--quiet"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("predictions: uncalibrated (no profile: --profile H100 or --profile H200 predicts for a GPU whose profile ships with coalesce; on another GPU, run `coalesce calibrate` and pass --profile FILE)"),
        "{text}"
    );
    // Each shipped name it gives picks its profile.
    for name in ["H100", "H200"] {
        coalesce()
            .args([
                "explain",
                "copy/f32",
                "--size",
                "1M",
                "--quiet",
                "--blocks",
                "1",
                "--profile",
                name,
            ])
            .assert()
            .success();
    }
    let sizes = |args: &[&str]| {
        let out = coalesce().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .find(|l| l.starts_with("sizes: "))
            .unwrap_or_else(|| panic!("no sizes line in {text}"))
            .to_string()
    };
    let only = sizes(&["explain", "transpose/tiled", "--shape", "64x96", "--quiet"]);
    assert!(
        only.starts_with("sizes: --shape 64x96; grid-stride grids"),
        "{only}"
    );
    let mixed = sizes(&[
        "explain",
        "transpose/tiled",
        "copy/f32",
        "--shape",
        "64x96",
        "--size",
        "1M",
        "--quiet",
    ]);
    assert!(
        mixed.starts_with(
            "sizes: --shape 64x96 where an experiment takes it, elsewhere --size 1.0 MiB per array;"
        ),
        "{mixed}"
    );
    let default = sizes(&[
        "explain",
        "transpose/tiled",
        "copy/f32",
        "--shape",
        "64x96",
        "--quiet",
        "--blocks",
        "1",
    ]);
    assert!(
        default.contains("where an experiment takes it, elsewhere each experiment's default size"),
        "{default}"
    );
}

/// `explain --html FILE` writes the annotated page without a GPU: a card per kernel
/// explained, its sites on its lines; through the output rule, so a path that cannot
/// be written fails first, in one line, and leaves nothing.
#[test]
fn explain_writes_the_annotated_page() {
    let page = temp_path("explain-page.html");
    coalesce()
        .args([
            "explain",
            "transpose/naive-write",
            "transpose/tiled",
            "--shape",
            "256x256",
            "--quiet",
        ])
        .arg("--html")
        .arg(&page)
        .assert()
        .success()
        .stdout(predicate::str::contains("transpose/naive-write"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80]);
    assert_eq!(html.matches("<article class=\"kernel\"").count(), 2);
    assert!(html.contains("data-sectors-per-request=\"32\""));
    assert!(html.contains("What changed from transpose/naive-write"));
    // Its SASS where ptxas and nvdisasm run, else a line that says why not.
    if common::ptxas().is_some() && common::nvdisasm().is_some() {
        assert!(html.contains("Its SASS for sm_90,"), "no SASS");
    } else {
        assert!(
            html.contains("SASS: not shown ("),
            "no reason for the missing SASS"
        );
    }

    let missing = temp_path("explain-page-missing");
    let target = missing.join("page.html");
    let err = fails(&["explain", "copy/f32", "--html", target.to_str().unwrap()], 1);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists());
    // Standard output holds one of the JSON and the page, not both.
    let err = fails(&["explain", "copy/f32", "--json", "-", "--html", "-"], 2);
    assert!(err.contains("--json and --html"), "{err}");
}
