//! Kernel bodies tested on every commit without a GPU: the same Rust source run on
//! the CPU emulator (`kernels::gpu::emu`) must equal the CPU reference. Every
//! experiment runs from its one declaration (`coalesce::experiments::ALL`), its
//! kernels the handles `kernel!`'s table generates (`kernels::entry`).

use std::time::{Duration, Instant};

use coalesce::device::DeviceInfo;
use coalesce::error::Error;
use coalesce::experiment::{Problem, fits};
use coalesce::experiments::{ALL, named};
use coalesce::explain::emulate::{self, EmuLaunch};
use kernels::fill::uniform;
use kernels::gpu::emu::{
    Dim3, LaunchConfig, LaunchError, Op, Recording, Space, launch, try_launch, try_record,
};
use kernels::gpu::param::KernelParam;
use kernels::gpu::{Global, GlobalMut, thread};
use kernels::handle::KernelInfo;

fn input(len: usize, seed: u64) -> Vec<f32> {
    (0..len).map(|i| uniform(seed, i as u64)).collect()
}

fn poisoned(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

fn assert_bits_eq(got: &[f32], want: impl Fn(usize) -> f32, what: &str) {
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.to_bits(), want(i).to_bits(), "{what}: element {i}");
    }
}

/// A GPU with no SMs: grid-stride kernels get one block, so their loops iterate.
fn no_sms() -> DeviceInfo {
    DeviceInfo {
        sm_count: 0,
        ..DeviceInfo::h100()
    }
}

#[test]
fn every_declared_kernel_is_in_the_emulator_table_with_the_declared_parameters() {
    for e in ALL {
        for v in e.variants {
            assert!(
                kernels::HOST_KERNELS.contains(&v.kernel),
                "{}/{}: {} is not in kernels::HOST_KERNELS",
                e.name,
                v.name,
                v.kernel.name
            );
            // Checked when the declaration compiled (Variant::new); again here.
            assert_eq!(v.kernel.arity(), v.args.len(), "{}/{}", e.name, v.name);
            for (&arg, &kind) in v.args.iter().zip(v.kernel.params) {
                assert!(
                    fits(arg, kind),
                    "{}/{}: {arg:?} passed as {kind:?}",
                    e.name,
                    v.name
                );
            }
        }
    }
    // The table and the three PTX modules list the same kernels.
    let mut table: Vec<&str> = kernels::HOST_KERNELS.iter().map(|k| k.name).collect();
    let mut ptx = coalesce::ptx::entry_points(coalesce::ptx::PTX);
    ptx.extend(coalesce::ptx::entry_points(coalesce::ptx::PTX_SM80));
    ptx.extend(coalesce::ptx::entry_points(coalesce::ptx::PTX_SM90A));
    table.sort();
    ptx.sort();
    assert_eq!(table, ptx);
}

/// The kernel-body test: every variant of every experiment at every awkward size the
/// emulator runs (not multiples of 4, 32 or a block; non-square matrices), the whole
/// grid, every buffer judged by the experiment's own reference.
#[test]
fn every_kernel_matches_its_reference_at_awkward_sizes() {
    let mut runs = 0;
    for e in ALL {
        for problem in e.kind.awkward().into_iter().filter(Problem::emulated) {
            for v in e.variants {
                let run = match EmuLaunch::new(e, v, problem, &no_sms()) {
                    Ok(run) => run,
                    // The copy engine's kernels where it cannot address the shape
                    // (they run at the awkward shapes it can).
                    Err(Error::Unaddressable { .. }) => continue,
                    Err(why) => panic!("{}/{} at {problem}: {why}", e.name, v.name),
                };
                let check = emulate::validate(&run, 7 + runs).unwrap();
                assert!(
                    check.ok,
                    "{}/{} ({}) at {problem}: {}",
                    e.name, v.name, v.kernel.name, check.detail
                );
                runs += 1;
            }
        }
    }
    assert!(runs >= 50, "{runs} runs");
}

#[test]
fn validation_catches_a_kernel_that_writes_nothing_or_the_wrong_thing() {
    static IDLE: KernelInfo = KernelInfo {
        name: "idle",
        call: |_| {},
        ..*kernels::entry::copy_f32.info()
    };
    // Reads in[i + 1]: wrong values, and the last thread reads past the buffer.
    static SHIFTED: KernelInfo = KernelInfo {
        name: "shifted",
        call: |w| unsafe {
            kernels::offset::offset_read(
                w[0] as usize,
                1,
                KernelParam::from_word(w[1]),
                KernelParam::from_word(w[2]),
            )
        },
        ..*kernels::entry::copy_f32.info()
    };
    let copy = named("copy").unwrap();
    let f32 = copy.variant("f32").unwrap();
    let run = || EmuLaunch::new(copy, f32, Problem::Elements { n: 100 }, &no_sms()).unwrap();
    let v = emulate::validate(&run().substitute(&IDLE), 1).unwrap();
    assert!(!v.ok && v.detail.starts_with("dst:"), "{}", v.detail);
    let e = emulate::validate(&run().substitute(&SHIFTED), 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("outside every buffer") && e.contains("offset.rs"),
        "{e}"
    );
}

#[test]
fn fill_kernel_matches_the_host_function() {
    let n = 100;
    let mut out = poisoned(n);
    let d = out.as_mut_ptr() as usize;
    let cfg = LaunchConfig {
        grid: Dim3::from(2),
        block: Dim3::from(16),
        ..Default::default()
    };
    launch(&cfg, || unsafe {
        kernels::fill::fill_uniform(n, 9, GlobalMut::from_ptr(d as *mut f32))
    });
    assert_bits_eq(&out, |i| uniform(9, i as u64), "fill_uniform");
}

#[test]
fn the_emulator_records_each_access_with_its_source_line() {
    let n = 64;
    let src = input(n, 3);
    let mut dst = poisoned(n);
    let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    let cfg = LaunchConfig {
        grid: Dim3::from(2),
        block: Dim3::from(32),
        record: true,
        ..Default::default()
    };
    let log = launch(&cfg, || unsafe {
        kernels::stride::stride_read(
            n / 2,
            2,
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
    assert_eq!(log.len(), 64, "32 loads + 32 stores");
    assert!(
        log.iter().all(|a| a.site.file().ends_with("stride.rs")),
        "sites point into the kernel source"
    );
    let loads: Vec<_> = log
        .iter()
        .filter(|a| a.op == kernels::gpu::emu::Op::Load)
        .collect();
    assert_eq!(loads.len(), 32);
    for a in &loads {
        let i = a.block * 32 + a.lane();
        assert_eq!(
            a.addr,
            s + 4 * 2 * i,
            "lane {} of block {} reads in[2i]",
            a.lane(),
            a.block
        );
    }
}

/// Runs `f` on another thread and fails the test if it takes longer than `limit`
/// (a deadlocked emulator would otherwise hang the test run).
fn within<R: Send + 'static>(limit: Duration, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).expect("the emulated launch hung")
}

fn block_of(threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(2),
        block: Dim3::from(threads),
        ..Default::default()
    }
}

#[test]
fn a_panicking_thread_fails_the_launch_instead_of_deadlocking_the_barrier() {
    let started = Instant::now();
    let result = within(Duration::from_secs(60), || {
        try_launch(&block_of(64), || {
            if thread::thread_idx_x() == 5 {
                panic!("lane 5 gives up");
            }
            thread::sync_threads();
            thread::sync_threads();
        })
    });
    match result {
        Err(LaunchError::Panicked {
            thread,
            block,
            message,
        }) => {
            assert_eq!((thread.x, block.x), (5, 0));
            assert!(message.contains("lane 5 gives up"), "{message}");
        }
        other => panic!("expected the panic as an error, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn threads_that_return_before_a_barrier_do_not_hold_it() {
    // The common `if i >= n { return; }` before __syncthreads(): exited threads stop
    // counting, as on the GPU.
    let log = within(Duration::from_secs(60), || {
        try_launch(&block_of(64), || {
            if thread::thread_idx_x() >= 40 {
                return;
            }
            thread::sync_threads();
        })
    });
    assert!(log.is_ok(), "{log:?}");
}

#[test]
fn sampled_blocks_outside_the_grid_and_empty_launches_are_errors() {
    let mut cfg = block_of(32);
    cfg.blocks = Some(vec![0, 2]);
    assert!(matches!(try_launch(&cfg, || {}), Err(LaunchError::BadConfig(_))));
    cfg.blocks = None;
    cfg.block = Dim3::from(0);
    assert!(matches!(try_launch(&cfg, || {}), Err(LaunchError::BadConfig(_))));
}

#[test]
fn shared_memory_indices_are_bounds_checked() {
    let r = try_launch(&block_of(32), || {
        // SAFETY: deliberately out of bounds: the emulator must refuse.
        unsafe {
            let s = kernels::gpu::shared::dynamic_shared_array::<f32>(0);
            s.write(thread::thread_idx_x() as usize, 1.0)
        };
    });
    let e = r.unwrap_err().to_string();
    assert!(e.contains("out of bounds"), "{e}");
}

#[test]
fn addresses_only_launches_touch_no_memory_and_record_capped_occurrences() {
    // A grid-stride copy over a buffer that does not exist: only addresses are used.
    let n = 1 << 20;
    let (src, dst) = (1usize << 40, (1usize << 40) + (64 << 20));
    let cfg = LaunchConfig {
        grid: Dim3::from(4),
        block: Dim3::from(64),
        record: true,
        blocks: Some(vec![1, 3]),
        max_occurrences: Some(3),
        bounds: vec![src..src + 4 * n, dst..dst + 4 * n],
        addresses_only: true,
        ..Default::default()
    };
    let log = launch(&cfg, || unsafe {
        kernels::copy::copy_f32x4(
            n,
            Global::from_ptr(src as *const f32),
            GlobalMut::from_ptr(dst as *mut f32),
        )
    });
    // 2 blocks x 64 threads x 3 recorded iterations x (load + store).
    assert_eq!(log.len(), 2 * 64 * 3 * 2);
    assert!(
        log.iter()
            .all(|a| a.occurrence < 3 && (a.block == 1 || a.block == 3))
    );
    let first = log
        .iter()
        .find(|a| a.block == 1 && a.thread == 0 && a.occurrence == 2 && a.op == kernels::gpu::emu::Op::Load)
        .unwrap();
    // Iteration 2 of global thread 64: float4 index 64 + 2 * 256.
    assert_eq!((first.addr, first.bytes), (src + 16 * (64 + 512), 16));
}

#[test]
fn every_execution_is_counted_though_only_the_first_are_recorded() {
    // The grid-stride copy again: 4 blocks of 64 threads over 2^18 float4s make 1024
    // iterations per thread, of which the log keeps 3.
    let n = 1 << 20;
    let (src, dst) = (1usize << 40, (1usize << 40) + (64 << 20));
    let cfg = LaunchConfig {
        grid: Dim3::from(4),
        block: Dim3::from(64),
        record: true,
        blocks: Some(vec![1, 3]),
        max_occurrences: Some(3),
        bounds: vec![src..src + 4 * n, dst..dst + 4 * n],
        addresses_only: true,
        ..Default::default()
    };
    let r = try_record(&cfg, || unsafe {
        kernels::copy::copy_f32x4(
            n,
            Global::from_ptr(src as *const f32),
            GlobalMut::from_ptr(dst as *mut f32),
        )
    })
    .unwrap();
    assert_eq!(r.accesses.len(), 2 * 64 * 3 * 2);
    // One count per thread and site: the load and the store of 128 threads.
    assert_eq!(r.executions.len(), 2 * 64 * 2);
    for e in &r.executions {
        assert_eq!((e.executions, e.recorded), (n / 4 / 256, 3), "{e:?}");
        let logged = r
            .accesses
            .iter()
            .filter(|a| (a.block, a.thread, a.op, a.site) == (e.block, e.thread, e.op, e.site));
        assert_eq!(logged.count(), 3);
    }
    assert_eq!(r.executions.iter().filter(|e| e.op == Op::Load).count(), 128);
}

/// Four rounds of five shared reads and one global read, a barrier after each, in one
/// warp, recorded with a cap of 3.
fn four_rounds(global_only: bool) -> Recording {
    let base = 1usize << 40;
    let cfg = LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(32),
        dynamic_shared_bytes: 64,
        record: true,
        max_occurrences: Some(3),
        bounds: std::iter::once(base..base + 4 * 32).collect(),
        addresses_only: true,
        global_only,
        ..Default::default()
    };
    try_record(&cfg, || unsafe {
        let s = kernels::gpu::shared::dynamic_shared_array::<f32>(16);
        for _ in 0..4 {
            for j in 0..5 {
                s.read(j);
            }
            Global::<f32>::from_ptr(base as *const f32).read(thread::thread_idx_x() as usize);
            thread::sync_threads();
        }
    })
    .unwrap()
}

/// Thread 0's (executions, recorded) of the site in `space`.
fn counted(r: &Recording, space: Space) -> (usize, usize) {
    let e = r
        .executions
        .iter()
        .find(|e| e.thread == 0 && e.space == space)
        .unwrap();
    (e.executions, e.recorded)
}

#[test]
fn shared_accesses_are_recorded_to_the_barrier_after_the_cap() {
    // The cap cuts the global reads at 3, the shared ones at the end of the round in
    // which they reach it (a run ptxas may merge is never cut), with each access's
    // round as its epoch.
    let r = four_rounds(false);
    let shared: Vec<_> = r
        .accesses
        .iter()
        .filter(|a| a.thread == 0 && a.space == Space::Shared)
        .collect();
    assert_eq!(shared.len(), 5);
    assert!(
        shared
            .iter()
            .all(|a| a.epoch == 0 && a.array_name == "coalesce_dynamic_smem")
    );
    let global: Vec<_> = r
        .accesses
        .iter()
        .filter(|a| a.thread == 0 && a.space == Space::Global)
        .collect();
    assert_eq!(global.iter().map(|a| a.epoch).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(
        (counted(&r, Space::Shared), counted(&r, Space::Global)),
        ((20, 5), (4, 3))
    );
}

#[test]
fn a_global_only_recording_logs_the_same_global_accesses_and_counts_the_shared() {
    let (all, global) = (four_rounds(false), four_rounds(true));
    assert!(global.accesses.iter().all(|a| a.space == Space::Global));
    let globals = |r: &Recording| -> Vec<(usize, usize, usize)> {
        r.accesses
            .iter()
            .filter(|a| a.space == Space::Global)
            .map(|a| (a.thread, a.addr, a.epoch))
            .collect()
    };
    assert_eq!(globals(&global), globals(&all));
    assert_eq!(global.accesses.len(), 32 * 3);
    assert_eq!(
        (counted(&global, Space::Shared), counted(&global, Space::Global)),
        ((20, 0), (4, 3))
    );
}

#[test]
fn warps_are_32_consecutive_linear_thread_ids_x_fastest() {
    // A 16 x 4 block: warp 0 is rows y = 0, 1 and warp 1 rows y = 2, 3, not columns.
    let base = 1usize << 40;
    let cfg = LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from((16, 4)),
        record: true,
        bounds: std::iter::once(base..base + 4 * 64).collect(),
        addresses_only: true,
        ..Default::default()
    };
    let log = launch(&cfg, || unsafe {
        let at = thread::thread_idx_y() as usize * 16 + thread::thread_idx_x() as usize;
        Global::<f32>::from_ptr(base as *const f32).read(at);
    });
    assert_eq!(log.len(), 64);
    for a in &log {
        let (x, y) = ((a.addr - base) / 4 % 16, (a.addr - base) / 4 / 16);
        assert_eq!(a.thread, y * 16 + x);
        assert_eq!(
            (a.warp(), a.lane()),
            (y / 2, (y % 2) * 16 + x),
            "thread ({x}, {y})"
        );
    }
}

#[test]
fn addresses_only_blocks_run_thread_after_thread_until_a_barrier_needs_them_at_once() {
    use kernels::gpu::emu::Schedule;
    const BASE: usize = 1 << 40;
    let cfg = |schedule| LaunchConfig {
        grid: Dim3::from(3),
        block: Dim3::from(64),
        record: true,
        bounds: std::iter::once(BASE..BASE + 4 * 256).collect(),
        addresses_only: true,
        schedule,
        ..Default::default()
    };
    let kernel = |barrier: bool| {
        move || unsafe {
            let src = Global::<f32>::from_ptr(BASE as *const f32);
            let i = thread::index_1d();
            src.read(i);
            if barrier {
                thread::sync_threads();
            }
            src.read(255 - i);
        }
    };
    let sorted = |mut log: Vec<kernels::gpu::emu::Access>| {
        log.sort_by_key(|a| (a.block, a.thread, a.addr, a.occurrence));
        log.iter()
            .map(|a| (a.block, a.thread, a.addr, a.occurrence))
            .collect::<Vec<_>>()
    };
    // Without a barrier the threads run one after another; with one, the launch runs
    // again with a thread each: either way the accesses are those of OS threads
    // taking turns (Schedule::Forward).
    for barrier in [false, true] {
        let fast = within(Duration::from_secs(60), move || {
            launch(&cfg(Schedule::Concurrent), kernel(barrier))
        });
        let turns = launch(&cfg(Schedule::Forward), kernel(barrier));
        assert_eq!(fast.len(), 3 * 64 * 2);
        assert_eq!(sorted(fast), sorted(turns), "barrier: {barrier}");
    }
    // A panic in a thread run so is the launch's error, as with OS threads.
    let r = try_launch(&cfg(Schedule::Concurrent), || {
        if thread::index_1d() == 70 {
            panic!("thread 70 gives up");
        }
    });
    match r {
        Err(LaunchError::Panicked { thread, block, .. }) => assert_eq!((thread.x, block.x), (6, 1)),
        other => panic!("expected the panic as an error, got {other:?}"),
    }
}

/// The threads of a block with a barrier run as coroutines on one OS thread: each one
/// past the barrier finds every live thread of its block arrived, a thread that returned
/// before it is not waited for, and a panic past it is the launch's error, not a hang.
#[test]
fn addresses_only_barriers_hold_every_live_thread_of_the_block() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let cfg = LaunchConfig {
        grid: Dim3::from(3),
        block: Dim3::from(64),
        addresses_only: true,
        ..Default::default()
    };
    let (arrived, passed) = (
        std::sync::Arc::new([0, 1, 2].map(|_| AtomicUsize::new(0))),
        std::sync::Arc::new(AtomicUsize::new(0)),
    );
    let (a, p, c) = (arrived.clone(), passed.clone(), cfg.clone());
    within(Duration::from_secs(60), move || {
        launch(&c, || {
            let b = thread::block_idx_x() as usize;
            if thread::thread_idx_x() == 63 {
                return;
            }
            a[b].fetch_add(1, Ordering::SeqCst);
            thread::sync_threads();
            // The one-by-one first try counts block 0's thread 0 once more.
            assert!(a[b].load(Ordering::SeqCst) >= 63, "block {b} went on early");
            p.fetch_add(1, Ordering::SeqCst);
        })
    });
    assert_eq!(passed.load(Ordering::SeqCst), 3 * 63);
    let r = within(Duration::from_secs(60), move || {
        try_launch(&cfg, || {
            thread::sync_threads();
            if thread::index_1d() == 70 {
                panic!("thread 70 gives up");
            }
            thread::sync_threads();
        })
    });
    match r {
        Err(LaunchError::Panicked { thread, block, .. }) => assert_eq!((thread.x, block.x), (6, 1)),
        other => panic!("expected the panic as an error, got {other:?}"),
    }
}
