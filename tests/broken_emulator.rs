//! Validation that can fail, shown to fail, on every commit and without a GPU: the
//! deliberately wrong kernels of `tests/broken-kernels` run on the CPU emulator in
//! place of a real kernel, through the experiment's own declaration (launch, buffers,
//! poisoned outputs) and reference, which reject each one while passing the real
//! kernel on the same input.

use broken_kernels::entry as broken;
use coalesce::device::DeviceInfo;
use coalesce::experiment::Problem;
use coalesce::experiments::named;
use coalesce::explain::emulate::{EmuLaunch, validate_with};
use coalesce::validate::Validation;
use kernels::gpu::emu::{Dim3, LaunchConfig, Schedule, launch};
use kernels::handle::KernelInfo;

/// A launch; nothing is passed in (the closures capture what they log).
fn cfg(grid: impl Into<Dim3>, block: impl Into<Dim3>, schedule: Schedule) -> LaunchConfig {
    LaunchConfig {
        grid: grid.into(),
        block: block.into(),
        schedule,
        ..Default::default()
    }
}

/// `variant` of `exp` at `problem` on the emulator exactly as declared (its launch,
/// buffers, poisoned outputs), running `broken` from `tests/broken-kernels` instead
/// of the real kernel when given, judged by the experiment's own reference.
fn validation(
    exp: &str,
    variant: &str,
    problem: Problem,
    broken: Option<&'static KernelInfo>,
    schedule: Schedule,
) -> Validation {
    let e = named(exp).expect("a known experiment");
    let v = e.variant(variant).expect("a known variant");
    let mut run = EmuLaunch::new(e, v, problem, &DeviceInfo::h100()).unwrap();
    if let Some(kernel) = broken {
        run = run.substitute(kernel);
    }
    validate_with(&run, 7, schedule).unwrap()
}

#[test]
fn an_off_by_one_guard_fails_validation() {
    for n in [1, 31, 33, 1029] {
        let p = Problem::Elements { n };
        let good = validation("copy", "f32", p, None, Schedule::Concurrent);
        assert!(good.ok, "copy_f32 n={n}: {}", good.detail);
        let bad = validation(
            "copy",
            "f32",
            p,
            Some(broken::copy_f32_off_by_one.info()),
            Schedule::Concurrent,
        );
        assert!(!bad.ok, "the off-by-one copy passed at n={n}");
        // Exactly the last element is left poisoned.
        assert!(
            bad.detail.starts_with(&format!(
                "dst: exact: 1 of {n} differ; first at [{}]: got NaN",
                n - 1
            )),
            "{}",
            bad.detail
        );
    }
}

/// A 16-bit GEMM that keeps its sum in the 16-bit type, rounding after every k step,
/// fails the bound that allows C one rounding; the real kernel (f32 sum, rounded once)
/// passes on the same inputs.
#[test]
fn a_16_bit_sum_rounded_every_step_fails_validation() {
    let cases = [
        ("gemm-bf16", broken::hgemm_simt_bf16_rounds_every_step.info()),
        ("gemm-f16", broken::hgemm_simt_f16_rounds_every_step.info()),
    ];
    for (exp, wrong) in cases {
        for (m, n, k) in [(33, 65, 17), (70, 45, 37)] {
            let p = Problem::Product { m, n, k };
            let good = validation(exp, "simt", p, None, Schedule::Concurrent);
            assert!(good.ok, "{exp}/simt {m}x{n}x{k}: {}", good.detail);
            let bad = validation(exp, "simt", p, Some(wrong), Schedule::Concurrent);
            assert!(!bad.ok, "{exp}: rounding every k step passed at {m}x{n}x{k}");
            assert!(bad.detail.contains("entries differ"), "{}", bad.detail);
        }
    }
}

#[test]
fn a_transposed_index_fails_validation() {
    let run = |m, n, k, broken| {
        let p = Problem::Product { m, n, k };
        validation("matmul", "remapped", p, broken, Schedule::Concurrent)
    };
    for (m, n, k) in [(33, 65, 17), (17, 33, 40)] {
        let good = run(m, n, k, None);
        assert!(good.ok, "matmul_remapped {m}x{n}x{k}: {}", good.detail);
        let bad = run(m, n, k, Some(broken::matmul_remapped_a_transposed.info()));
        assert!(!bad.ok, "reading A transposed passed at {m}x{n}x{k}");
        assert!(bad.detail.contains("entries differ"), "{}", bad.detail);
    }
    // With one row (or k = 1) A read either way is the same vector: a bug that only
    // non-degenerate shapes expose, which is why `coalesce check` uses awkward ones.
    let degenerate = run(1, 65, 17, Some(broken::matmul_remapped_a_transposed.info()));
    assert!(degenerate.ok, "{}", degenerate.detail);
}

#[test]
fn a_missing_barrier_fails_validation_under_both_serial_schedules() {
    for (rows, cols) in [(32, 32), (33, 65), (64, 17)] {
        let p = Problem::Matrix { rows, cols };
        for schedule in [Schedule::Forward, Schedule::Reverse] {
            let bad = validation(
                "transpose",
                "tiled",
                p,
                Some(broken::transpose_tiled_no_barrier.info()),
                schedule,
            );
            assert!(!bad.ok, "no barrier passed at {p} under {schedule:?}");
            // Reads before the write see the emulator's NaN-filled shared memory.
            assert!(bad.detail.contains("got NaN"), "{}", bad.detail);
        }
    }
}

#[test]
fn the_real_tiled_transposes_pass_under_every_schedule() {
    for (rows, cols) in [(1, 1), (32, 32), (33, 65), (64, 17)] {
        let p = Problem::Matrix { rows, cols };
        for schedule in [Schedule::Concurrent, Schedule::Forward, Schedule::Reverse] {
            for variant in ["tiled", "tiled-padded"] {
                let v = validation("transpose", variant, p, None, schedule);
                assert!(v.ok, "{variant} {p} {schedule:?}: {}", v.detail);
            }
        }
    }
}

#[test]
fn serial_schedules_run_one_thread_at_a_time_in_order() {
    // Each thread appends its rank to a log before and after a barrier: under a serial
    // schedule the log is the order twice over, every time.
    use std::sync::Mutex;
    let log = Mutex::new(Vec::new());
    for (schedule, order) in [
        (Schedule::Forward, (0..8).collect::<Vec<usize>>()),
        (Schedule::Reverse, (0..8).rev().collect()),
    ] {
        log.lock().unwrap().clear();
        launch(&cfg(1, 8, schedule), || {
            let rank = kernels::gpu::thread::thread_rank_in_block();
            log.lock().unwrap().push(rank);
            kernels::gpu::thread::sync_threads();
            log.lock().unwrap().push(rank);
        });
        let want: Vec<usize> = order.iter().chain(order.iter()).copied().collect();
        assert_eq!(*log.lock().unwrap(), want, "{schedule:?}");
    }
}

#[test]
fn a_thread_that_returns_early_does_not_stall_a_serial_block() {
    // Threads 0..4 return before the barrier the others wait at (as exited GPU threads
    // stop counting); the block still finishes.
    use std::sync::atomic::{AtomicUsize, Ordering};
    let after = AtomicUsize::new(0);
    launch(&cfg(1, 8, Schedule::Reverse), || {
        if kernels::gpu::thread::thread_rank_in_block() < 4 {
            return;
        }
        kernels::gpu::thread::sync_threads();
        after.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(after.load(Ordering::Relaxed), 4);
}

#[test]
fn a_copy_engine_wait_on_the_wrong_phase_fails_validation() {
    for n in [1, 4100, 9000] {
        let p = Problem::Elements { n };
        let good = validation("copy", "tma", p, None, Schedule::Concurrent);
        assert!(good.ok, "copy_tma n={n}: {}", good.detail);
        let bad = validation(
            "copy",
            "tma",
            p,
            Some(broken::copy_tma_wrong_phase.info()),
            Schedule::Concurrent,
        );
        assert!(!bad.ok, "waiting on the wrong phase passed at n={n}");
        // The stores read shared memory as the emulator leaves it before a copy lands.
        assert!(bad.detail.contains("got NaN"), "{}", bad.detail);
    }
}

/// A 16-bit Hopper rung whose B descriptor places the tile's 64-wide atoms where the
/// copy engine did not land them: the tensor cores read a swizzled tile in another
/// layout, and the product fails validation (the real rung passes at the same shape).
#[test]
fn a_16_bit_tile_read_in_the_wrong_layout_fails_validation() {
    let p = Problem::Product {
        m: 136,
        n: 264,
        k: 72,
    };
    let good = validation("gemm-bf16", "wgmma", p, None, Schedule::Concurrent);
    assert!(good.ok, "gemm-bf16/wgmma at {p}: {}", good.detail);
    let bad = validation(
        "gemm-bf16",
        "wgmma",
        p,
        Some(broken::hgemm_wgmma_bf16_wrong_atoms.info()),
        Schedule::Concurrent,
    );
    assert!(!bad.ok, "B's misplaced atoms passed: {}", bad.detail);
}
