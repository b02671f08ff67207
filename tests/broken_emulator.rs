//! Validation that can fail, shown to fail, on every commit and without a GPU: the
//! deliberately wrong kernels of `tests/broken-kernels` run on the CPU emulator with
//! the real kernels' launches and poisoned outputs, and the harness's own comparisons
//! (`coalesce::validate`, `check_product`) reject each one while passing the real
//! kernel on the same input.

use coalesce::experiments::matmul::check_product;
use coalesce::validate::{Validation, exact};
use kernels::fill::uniform;
use kernels::gpu::emu::{Dim3, LaunchConfig, Schedule, launch};
use kernels::gpu::{Global, GlobalMut};

fn input(len: usize, seed: u64) -> Vec<f32> {
    (0..len).map(|i| uniform(seed, i as u64)).collect()
}

/// What the harness's `buffers::poison` writes: a NaN, so an unwritten element never matches.
fn poisoned(len: usize) -> Vec<f32> {
    vec![f32::from_bits(coalesce::buffers::POISON_BITS); len]
}

/// A launch; kernels' pointers travel into it as addresses (raw pointers are not Sync).
fn cfg(grid: impl Into<Dim3>, block: impl Into<Dim3>, schedule: Schedule) -> LaunchConfig {
    LaunchConfig {
        grid: grid.into(),
        block: block.into(),
        schedule,
        ..Default::default()
    }
}

type Copy = unsafe fn(usize, Global<f32>, GlobalMut<f32>);

/// A copy kernel launched as the copy experiment launches `copy_f32` (one thread per
/// element, blocks of `kernels::copy::BLOCK`), checked as the harness checks it.
fn copy_validation(kernel: Copy, n: usize) -> Validation {
    let src = input(n, 7);
    let mut dst = poisoned(n);
    let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    let block = kernels::copy::BLOCK;
    let c = cfg(n.div_ceil(block as usize) as u32, block, Schedule::Concurrent);
    launch(&c, || unsafe {
        kernel(
            n,
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
    exact(&dst, |i| src[i])
}

#[test]
fn an_off_by_one_guard_fails_validation() {
    for n in [1, 31, 33, 1029] {
        let good = copy_validation(kernels::copy::copy_f32, n);
        assert!(good.ok, "copy_f32 n={n}: {}", good.detail);
        let bad = copy_validation(broken_kernels::copy_f32_off_by_one, n);
        assert!(!bad.ok, "the off-by-one copy passed at n={n}");
        // Exactly the last element is left poisoned.
        assert!(
            bad.detail
                .starts_with(&format!("exact: 1 of {n} differ; first at [{}]: got NaN", n - 1)),
            "{}",
            bad.detail
        );
    }
}

type Matmul = unsafe fn(usize, usize, usize, Global<f32>, Global<f32>, GlobalMut<f32>);

/// A kernel launched as the matmul experiment launches `matmul_remapped` (1D blocks
/// of 1024 threads over 32 x 32 tiles of C), checked by the experiment's own
/// `check_product` on every entry.
fn matmul_validation(kernel: Matmul, (m, n, k): (usize, usize, usize)) -> Validation {
    use kernels::matmul::TILE;
    let (a, b) = (input(m * k, 1), input(k * n, 2));
    let mut c = poisoned(m * n);
    let (pa, pb, pc) = (a.as_ptr() as usize, b.as_ptr() as usize, c.as_mut_ptr() as usize);
    let grid = (n.div_ceil(TILE) as u32, m.div_ceil(TILE) as u32);
    launch(
        &cfg(grid, (TILE * TILE) as u32, Schedule::Concurrent),
        || unsafe {
            kernel(
                m,
                n,
                k,
                Global::from_ptr(pa as *const f32),
                Global::from_ptr(pb as *const f32),
                GlobalMut::from_ptr(pc as *mut f32),
            )
        },
    );
    let all: Vec<usize> = (0..m * n).collect();
    check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all)
}

#[test]
fn a_transposed_index_fails_validation() {
    for shape in [(33, 65, 17), (17, 33, 40)] {
        let good = matmul_validation(kernels::matmul::matmul_remapped, shape);
        assert!(good.ok, "matmul_remapped {shape:?}: {}", good.detail);
        let bad = matmul_validation(broken_kernels::matmul_remapped_a_transposed, shape);
        assert!(!bad.ok, "reading A transposed passed at {shape:?}");
        assert!(bad.detail.contains("entries differ"), "{}", bad.detail);
    }
    // With one row (or k = 1) A read either way is the same vector: a bug that only
    // non-degenerate shapes expose, which is why `coalesce check` uses awkward ones.
    let degenerate = matmul_validation(broken_kernels::matmul_remapped_a_transposed, (1, 65, 17));
    assert!(degenerate.ok, "{}", degenerate.detail);
}

type Transpose = unsafe fn(usize, usize, Global<f32>, GlobalMut<f32>);

/// A kernel launched as the transpose experiment launches `transpose_tiled` (a 32 x 8
/// block per 32 x 32 tile of the input), checked exactly.
fn transpose_validation(kernel: Transpose, (rows, cols): (usize, usize), schedule: Schedule) -> Validation {
    use kernels::transpose::{BLOCK_ROWS, TILE};
    let src = input(rows * cols, 3);
    let mut dst = poisoned(rows * cols);
    let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    let grid = (cols.div_ceil(TILE) as u32, rows.div_ceil(TILE) as u32);
    let c = cfg(grid, (TILE as u32, BLOCK_ROWS as u32), schedule);
    launch(&c, || unsafe {
        kernel(
            rows,
            cols,
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
    exact(&dst, |i| src[(i % rows) * cols + i / rows])
}

#[test]
fn a_missing_barrier_fails_validation_under_both_serial_schedules() {
    for shape in [(32, 32), (33, 65), (64, 17)] {
        for schedule in [Schedule::Forward, Schedule::Reverse] {
            let bad = transpose_validation(broken_kernels::transpose_tiled_no_barrier, shape, schedule);
            assert!(!bad.ok, "no barrier passed at {shape:?} under {schedule:?}");
            // Reads before the write see the emulator's NaN-filled shared memory.
            assert!(bad.detail.contains("got NaN"), "{}", bad.detail);
        }
    }
}

#[test]
fn the_real_tiled_transposes_pass_under_every_schedule() {
    use kernels::transpose::{transpose_tiled, transpose_tiled_padded};
    for shape in [(1, 1), (32, 32), (33, 65), (64, 17)] {
        for schedule in [Schedule::Concurrent, Schedule::Forward, Schedule::Reverse] {
            for (name, k) in [
                ("tiled", transpose_tiled as Transpose),
                ("tiled_padded", transpose_tiled_padded),
            ] {
                let v = transpose_validation(k, shape, schedule);
                assert!(v.ok, "{name} {shape:?} {schedule:?}: {}", v.detail);
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
