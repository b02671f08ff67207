//! On the GPU, validation that can fail, shown to fail, and faults handled cleanly:
//! the deliberately wrong kernels of `tests/broken-kernels`, compiled to PTX by
//! `host/build.rs` with the `broken-kernels` feature, run through the real harness on
//! the real buffers and launches.
//!
//! Build with `cargo test --features broken-kernels` (scripts/gpu-bundle.sh does);
//! run on a GPU machine with `--include-ignored` (scripts/gpu-run.sh tests, or broken).

mod common;

use common::gpu;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use broken_kernels::entry as broken;
use coalesce::cli::main_with;
use coalesce::device::Gpu;
use coalesce::error::Error;
use coalesce::experiment::{Kind, Problem};
use coalesce::experiments::named;
use coalesce::prepared::Prepared;
use coalesce::ptx::{BROKEN_PTX, BROKEN_PTX_SM90A};
use cust::module::Module;
use kernels::entry;
use kernels::handle::KernelInfo;

fn prepare(gpu: &Gpu, exp: &str, problem: Problem) -> Prepared {
    let e = named(exp).expect("a known experiment");
    Prepared::new(gpu, e, problem, 0xbad).expect("prepare")
}

fn product(m: usize, n: usize, k: usize) -> Problem {
    Problem::Product { m, n, k }
}

/// Validates `variant` of `exp` at `params` with its real kernel and with `wrong`
/// (an entry of the broken PTX) on the same buffers and launch: the real one must
/// pass; returns the wrong one's validation (passed, and its account).
fn real_then_wrong(
    gpu: &Gpu,
    broken: &Module,
    exp: &str,
    variant: &str,
    problem: Problem,
    wrong: &str,
) -> (bool, String) {
    let mut p = prepare(gpu, exp, problem);
    let i = p.position(variant).expect("a known variant");
    let real = gpu.function(p.variants()[i].kernel).unwrap();
    let v = p.check(gpu, i, &real).expect("the real kernel runs");
    assert!(v.ok, "{exp}/{variant} {problem}: {}", v.detail);
    let f = broken.get_function(wrong).expect("the broken PTX has it");
    let v = p.check(gpu, i, &f).expect("the wrong kernel runs");
    println!(
        "{wrong} as {exp}/{variant} at {}: ok={} {}",
        problem.label(),
        v.ok,
        v.detail
    );
    (v.ok, v.detail)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn an_off_by_one_guard_is_reported_not_validated() {
    let gpu = gpu();
    let broken = Module::from_ptx(BROKEN_PTX, &[]).unwrap();
    for problem in Kind::Elements.awkward() {
        let Problem::Elements { n } = problem else {
            unreachable!()
        };
        let (ok, detail) = real_then_wrong(
            &gpu,
            &broken,
            "copy",
            "f32",
            problem,
            broken::copy_f32_off_by_one.name,
        );
        assert!(!ok, "n={n}: {detail}");
        assert!(
            detail.starts_with(&format!("exact: 1 of {n} differ; first at [{}]", n - 1)),
            "{detail}"
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_transposed_index_is_reported_not_validated() {
    let gpu = gpu();
    let broken = Module::from_ptx(BROKEN_PTX, &[]).unwrap();
    for dims in [product(33, 65, 17), product(1000, 17, 33), product(17, 33, 1000)] {
        let (ok, detail) = real_then_wrong(
            &gpu,
            &broken,
            "matmul",
            "remapped",
            dims,
            broken::matmul_remapped_a_transposed.name,
        );
        assert!(!ok, "{dims:?}: {detail}");
        assert!(detail.contains("entries differ"), "{detail}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_missing_barrier_is_reported_not_validated() {
    // On the GPU the race's outcome depends on timing (the emulator test shows it
    // deterministically; racecheck flags it on every run: scripts/gpu-run.sh broken).
    // Over thousands of tiles it shows: at least one of a few launches must fail.
    let gpu = gpu();
    let broken = Module::from_ptx(BROKEN_PTX, &[]).unwrap();
    let params = Problem::Matrix {
        rows: 2048,
        cols: 2048,
    };
    let failed = (0..3)
        .filter(|_| {
            !real_then_wrong(
                &gpu,
                &broken,
                "transpose",
                "tiled",
                params,
                broken::transpose_tiled_no_barrier.name,
            )
            .0
        })
        .count();
    assert!(
        failed > 0,
        "the unsynchronised tile passed validation 3 times out of 3"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_misplaced_atom_in_a_16_bit_descriptor_is_reported_not_validated() {
    // The tensor cores read B's swizzled tile in a layout the copy engine did not land
    // it in: every column past the first 64 of a tile is wrong, at once, on the GPU
    // as on the emulator (tests/broken_emulator.rs).
    let gpu = gpu();
    assert_eq!(
        gpu.info.compute_capability,
        (9, 0),
        "the wgmma kernels need an sm_90 GPU (H100, H200)"
    );
    let broken = Module::from_ptx(BROKEN_PTX_SM90A, &[]).unwrap();
    for dims in [
        product(128, 256, 64),
        product(200, 264, 136),
        product(1024, 1024, 1024),
    ] {
        let (ok, detail) = real_then_wrong(
            &gpu,
            &broken,
            "gemm-bf16",
            "wgmma",
            dims,
            broken::hgemm_wgmma_bf16_wrong_atoms.name,
        );
        assert!(!ok, "{dims:?}: {detail}");
        assert!(detail.contains("entries differ"), "{detail}");
    }
}

/// What racecheck runs in `scripts/gpu-run.sh broken`: one launch of the tile
/// transpose without its barrier, which must run (racecheck then reports the hazard).
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn racecheck_target_the_unsynchronised_tile() {
    let gpu = gpu();
    let broken = Module::from_ptx(BROKEN_PTX, &[]).unwrap();
    let mut p = prepare(&gpu, "transpose", Problem::Matrix { rows: 64, cols: 64 });
    let i = p.position("tiled").unwrap();
    let f = broken
        .get_function(broken::transpose_tiled_no_barrier.name)
        .unwrap();
    p.check(&gpu, i, &f).expect("the launch runs");
}

/// Opens the GPU with `kernel` answered by `replacement` from the broken PTX.
fn substituting(
    kernel: &'static KernelInfo,
    replacement: &'static KernelInfo,
) -> impl Fn(u32) -> coalesce::Result<Gpu> {
    move |device| {
        let mut gpu = Gpu::open(device)?;
        gpu.substitute(kernel, BROKEN_PTX, replacement.name)?;
        Ok(gpu)
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn commands_exit_1_when_a_kernel_fails_validation() {
    // The program's whole path (parse, run, report, exit code) with copy_f32 replaced
    // by its off-by-one twin: `check` and `run` both end with exit code 1.
    let broken = substituting(&entry::copy_f32, &broken::copy_f32_off_by_one);
    let run = [
        "coalesce", "run", "copy/f32", "--size", "4M", "--reps", "2", "--warmup", "0",
    ];
    assert_eq!(main_with(["coalesce", "check", "copy/f32"], &broken), 1);
    assert_eq!(main_with(run, &broken), 1);
    // The same commands with the real kernel pass.
    assert_eq!(main_with(["coalesce", "check", "copy/f32"], &Gpu::open), 0);
    assert_eq!(main_with(run, &Gpu::open), 0);
}

/// The environment variable that makes [`fault_child`] do something.
const CHILD: &str = "COALESCE_FAULT_CHILD";

/// Runs [`fault_child`] in a fresh process (a fault poisons the CUDA context of the
/// process it happens in) and returns its exit code and stderr; fails if it hangs.
fn run_child(mode: &str) -> (Option<i32>, String) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "fault_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, mode)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{mode}: the process hung after the fault");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    println!("{mode}: exit {:?}, stderr:\n{err}", status.code());
    assert!(!err.contains("panicked"), "{mode} panicked:\n{err}");
    (status.code(), err)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_fault_is_an_error_naming_the_kernel_and_the_process_exits_cleanly() {
    // Through the library: the fault is an error, later work is refused, drops are quiet.
    let (code, err) = run_child("library");
    assert_eq!(code, Some(0), "{err}");
    // Through the command line: one line naming the kernel, exit code 1, no hang.
    for args in ["check copy/f32", "run copy/f32 --size 4M --reps 2"] {
        let (code, err) = run_child(args);
        assert_eq!(code, Some(1), "{args}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args}: one line on stderr: {err}");
        assert!(
            lines[0].starts_with("error: CUDA error while running copy_f32: ")
                && lines[0].contains("illegal"),
            "{args}: {}",
            lines[0]
        );
    }
}

/// The child half of the fault test; does nothing unless [`CHILD`] is set.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn fault_child() {
    let Ok(mode) = std::env::var(CHILD) else { return };
    if mode != "library" {
        let opener = substituting(&entry::copy_f32, &broken::copy_f32_wild);
        let args = std::iter::once("coalesce").chain(mode.split_whitespace());
        // Leave as the binary would, with the command's exit code.
        std::process::exit(main_with(args, &opener) as i32);
    }
    let gpu = gpu();
    let broken = Module::from_ptx(BROKEN_PTX, &[]).unwrap();
    let wild = broken.get_function(broken::copy_f32_wild.name).unwrap();
    let real = gpu.function(&entry::copy_f32).unwrap();
    let mut p = prepare(&gpu, "copy", Problem::Elements { n: 4095 });
    let i = p.position("f32").unwrap();
    let e = p.check(&gpu, i, &wild).expect_err("a fault is an error");
    println!("the fault: {e}");
    assert!(
        matches!(&e, Error::Cuda { what, source } if what == "running copy_f32" && coalesce::device::is_sticky(*source)),
        "{e:?}"
    );
    assert!(e.to_string().contains("illegal"), "{e}");
    // Everything after it is refused with the first error, not submitted.
    let later = p.check(&gpu, i, &real).expect_err("the context is unusable");
    assert!(matches!(later, Error::Poisoned { .. }), "{later:?}");
    assert!(later.to_string().contains("running copy_f32"), "{later}");
    assert!(matches!(gpu.memory(), Err(Error::Poisoned { .. })));
    assert!(matches!(gpu.alloc::<f32>(16), Err(Error::Poisoned { .. })));
    assert!(matches!(
        gpu.function(&entry::copy_f32),
        Err(Error::Poisoned { .. })
    ));
    // Buffers, modules, the stream and the context drop without a panic.
    drop(p);
    drop(broken);
    drop(gpu);
}
