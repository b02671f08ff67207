//! The launch interface: what to run and how ([`LaunchConfig`]), and [`try_record`],
//! which runs it. A kernel's parameters and its entry in the table are
//! [`crate::gpu::param`] and [`crate::handle`].

use core::ops::ControlFlow;
use std::vec::Vec;

use super::config::{LaunchConfig, LaunchError};
use super::record::{Access, Recording};
use super::run::{Run, Stop, run_blocks};
use super::schedule::Schedule;

/// Like [`try_launch`], for tests: panics with the launch's error.
pub fn launch(config: &LaunchConfig, kernel: impl Fn() + Sync) -> Vec<Access> {
    try_launch(config, kernel).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `kernel` on every thread of the grid (or the sampled blocks) and returns
/// the recorded accesses (empty unless `config.record`).
///
/// `kernel` is a closure that calls the kernel with its arguments; the emulated
/// indices are visible to it through [`crate::gpu::thread`].
pub fn try_launch(config: &LaunchConfig, kernel: impl Fn() + Sync) -> Result<Vec<Access>, LaunchError> {
    try_record(config, kernel).map(|r| r.accesses)
}

/// [`try_launch`], also returning how often each thread executed each site (empty
/// unless `config.record`).
pub fn try_record(config: &LaunchConfig, kernel: impl Fn() + Sync) -> Result<Recording, LaunchError> {
    let mut all = Recording::default();
    try_record_each(config, kernel, |block| {
        all.accesses.append(&mut block.accesses);
        all.executions.append(&mut block.executions);
        all.tensor_flops += block.tensor_flops;
        all.tensor_threads += block.tensor_threads;
        ControlFlow::Continue(())
    })?;
    Ok(all)
}

/// [`try_record`], handing each block's recording to `each` as soon as the block has
/// run (a cluster's blocks together, [`LaunchConfig::cluster`]), in the order of the blocks, so that memory holds one block's log at a time
/// however many blocks run (`each` may take from it: it is emptied after). `each` may end the launch early with `Break`: then the
/// blocks after that one do not run, and the launch returns `Ok`.
pub fn try_record_each(
    config: &LaunchConfig,
    kernel: impl Fn() + Sync,
    mut each: impl FnMut(&mut Recording) -> ControlFlow<()>,
) -> Result<(), LaunchError> {
    let (grid, block) = (config.grid, config.block);
    if grid.count() == 0 || block.count() == 0 {
        return Err(LaunchError::BadConfig(std::format!(
            "empty launch: grid {grid:?} block {block:?}"
        )));
    }
    let size = config.cluster_size();
    if !(grid.x as usize).is_multiple_of(size) {
        return Err(LaunchError::BadConfig(std::format!(
            "a grid of {} blocks along x is not whole clusters of {size}",
            grid.x
        )));
    }
    let requested: Vec<usize> = match &config.blocks {
        Some(b) => b.clone(),
        None => (0..grid.count()).collect(),
    };
    if let Some(&b) = requested.iter().find(|&&b| b >= grid.count()) {
        return Err(LaunchError::BadConfig(std::format!(
            "block {b} is outside the grid of {} blocks",
            grid.count()
        )));
    }
    // A sampled block brings the rest of its cluster, which it needs to run: each
    // cluster once, its blocks in order, where its first sampled block was.
    let mut blocks = Vec::with_capacity(requested.len());
    let mut seen = std::collections::HashSet::new();
    for b in requested {
        let first = b - b % size;
        if size == 1 || seen.insert(first) {
            blocks.extend(first..first + size);
        }
    }
    let blocks = blocks.as_slice();
    // Addresses only, the threads of a block need not run at once unless they meet
    // at a barrier: run them one after another on this OS thread (an OS thread per
    // emulated thread would be most of a block's cost), and from the first block in
    // which one reaches `sync_threads()` on, as coroutines on this thread (a block
    // without barriers runs the same either way). Validation keeps OS threads, so a
    // kernel's races can show. A warp exchange needs no meeting in such a launch
    // ([`warp_exchange`](super::warp_exchange)).
    let (run, from) = if config.addresses_only && config.schedule == Schedule::Concurrent {
        match run_blocks(config, blocks, &kernel, Run::OneByOne, &mut each) {
            Err(Stop::NeedsBarrier { done }) => (Run::Fibers, done),
            Err(Stop::Failed(e)) => return Err(e),
            Ok(()) => return Ok(()),
        }
    } else {
        (Run::Threads, 0)
    };
    run_blocks(config, &blocks[from..], &kernel, run, &mut each).map_err(|stop| match stop {
        Stop::Failed(e) => e,
        // Only a one-by-one run stops so.
        Stop::NeedsBarrier { .. } => {
            LaunchError::BadConfig("a barrier stopped a block whose threads meet there".into())
        }
    })
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use super::*;
    use crate::gpu::emu::{Dim3, Op, Space};
    use crate::gpu::thread::{block_idx_x, thread_idx_x};
    use crate::gpu::{Global, GlobalMut};
    use std::string::ToString;

    /// 64 threads a block, each loading `loads` floats a grid of threads apart and
    /// storing one, at virtual addresses (addresses only).
    fn strided_loads(config: &LaunchConfig, loads: usize) -> impl Fn() + Sync + '_ {
        move || {
            let (b, t) = (block_idx_x() as usize, thread_idx_x() as usize);
            let threads = config.grid.count() * config.block.count();
            let i = b * config.block.count() + t;
            let (src, dst) = (
                Global::from_ptr((1usize << 40) as *const f32),
                GlobalMut::from_ptr((1usize << 41) as *mut f32),
            );
            let mut sum = 0.0;
            for k in 0..loads {
                // SAFETY: addresses only: nothing is dereferenced.
                sum += unsafe { src.read(i + k * threads) };
            }
            // SAFETY: as above.
            unsafe { dst.write(i, sum) };
        }
    }

    fn recording(blocks: u32) -> LaunchConfig {
        LaunchConfig {
            grid: Dim3::from(blocks),
            block: Dim3::from(64),
            record: true,
            max_occurrences: Some(4),
            addresses_only: true,
            bounds: std::vec![(1 << 40)..(1 << 40) + (1 << 30), (1 << 41)..(1 << 41) + (1 << 30)],
            ..Default::default()
        }
    }

    #[test]
    fn each_block_is_handed_on_in_order_and_adds_up_to_the_whole_recording() {
        let config = recording(5);
        let whole = try_record(&config, strided_loads(&config, 10)).unwrap();
        let mut blocks = Vec::new();
        let mut seen = Recording::default();
        try_record_each(&config, strided_loads(&config, 10), |r| {
            blocks.push(r.accesses[0].block);
            assert!(
                r.accesses.iter().all(|a| a.block == r.accesses[0].block),
                "one block at a time"
            );
            seen.accesses.extend(r.accesses.iter().copied());
            seen.executions.extend(r.executions.iter().copied());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(blocks, [0, 1, 2, 3, 4]);
        let key = |a: &Access| (a.block, a.thread, a.occurrence, a.op, a.addr);
        assert_eq!(
            seen.accesses.iter().map(key).collect::<Vec<_>>(),
            whole.accesses.iter().map(key).collect::<Vec<_>>()
        );
        assert_eq!(seen.executions, whole.executions);
        // Four of each thread's ten loads logged, every one counted.
        let loads = |r: &Recording| {
            r.accesses
                .iter()
                .filter(|a| a.op == Op::Load && a.space == Space::Global)
                .count()
        };
        assert_eq!(loads(&whole), 5 * 64 * 4);
        assert!(
            whole
                .executions
                .iter()
                .filter(|e| e.op == Op::Load)
                .all(|e| (e.executions, e.recorded) == (10, 4))
        );
    }

    #[test]
    fn breaking_off_runs_no_more_blocks() {
        let config = recording(6);
        let mut handed = 0;
        try_record_each(&config, strided_loads(&config, 1), |_| {
            handed += 1;
            if handed == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(handed, 2);
    }

    #[test]
    fn a_block_that_would_log_past_the_limit_fails_the_launch_before_it_does() {
        // 64 threads x (4 loads + 1 store) = 320 accesses a block.
        let limit = 100 * size_of::<Access>();
        let config = LaunchConfig {
            log_limit: Some(limit),
            ..recording(3)
        };
        let mut handed = 0;
        let e = try_record_each(&config, strided_loads(&config, 8), |_| {
            handed += 1;
            ControlFlow::Continue(())
        })
        .unwrap_err();
        assert_eq!(e, LaunchError::TooLarge { limit });
        assert_eq!(handed, 0, "the first block already passes it");
        assert!(e.to_string().contains(&std::format!("{limit} bytes")), "{e}");
        // Room for a block's 320: every block runs.
        let config = LaunchConfig {
            log_limit: Some(320 * size_of::<Access>()),
            ..recording(3)
        };
        assert_eq!(
            try_record(&config, strided_loads(&config, 8))
                .unwrap()
                .accesses
                .len(),
            3 * 320
        );
    }

    /// Clusters of two blocks of 64 threads, as a cluster kernel meets its partner:
    /// thread 0 of each block sets up a barrier for one arrival, the cluster meets,
    /// thread 0 of rank 0 arrives on rank 1's barrier, the cluster meets again; then
    /// each thread writes 10 x its rank, plus 1 on thread 0 if its barrier's phase 0
    /// is complete (rank 1's only).
    fn partners(config: &LaunchConfig, out: usize) -> impl Fn() + Sync + '_ {
        use crate::gpu::barrier::fence_init;
        use crate::gpu::cluster;
        use crate::gpu::shared::dynamic_shared_array;
        move || {
            let (b, t) = (block_idx_x() as usize, thread_idx_x() as usize);
            // SAFETY: 64 bytes of dynamic shared memory (the configs below); the
            // barrier is set up before the cluster meets and used after.
            unsafe {
                let bar = dynamic_shared_array::<f32>(16).barrier(0);
                if t == 0 {
                    bar.init(1);
                    fence_init();
                }
                cluster::sync();
                if t == 0 && cluster::rank() == 0 {
                    bar.arrive_cluster(1);
                }
                cluster::sync();
                let complete = t == 0 && bar.try_wait(0);
                let out = GlobalMut::<u32>::from_ptr(core::ptr::with_exposed_provenance_mut(out));
                out.write(
                    b * config.block.count() + t,
                    10 * cluster::rank() + u32::from(complete),
                );
            }
        }
    }

    fn clusters_of_two(blocks: u32, schedule: Schedule) -> LaunchConfig {
        LaunchConfig {
            grid: Dim3::from(blocks),
            block: Dim3::from(64),
            dynamic_shared_bytes: 64,
            cluster: 2,
            schedule,
            ..Default::default()
        }
    }

    #[test]
    fn a_clusters_blocks_run_together_and_one_arrives_on_the_others_barrier() {
        for schedule in [Schedule::Concurrent, Schedule::Forward, Schedule::Reverse] {
            let config = clusters_of_two(4, schedule);
            let mut out = std::vec![0u32; 4 * 64];
            let dst = out.as_mut_ptr().expose_provenance();
            try_launch(&config, partners(&config, dst)).unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
            for (i, &got) in out.iter().enumerate() {
                let rank = (i / 64 % 2) as u32;
                let want = 10 * rank + u32::from(rank == 1 && i % 64 == 0);
                assert_eq!(got, want, "{schedule:?}: thread {i}");
            }
        }
    }

    #[test]
    fn a_sampled_block_runs_with_its_cluster_whose_waits_begin_epochs_and_a_partial_cluster_is_refused() {
        let config = LaunchConfig {
            record: true,
            addresses_only: true,
            blocks: Some(std::vec![3, 2, 5]),
            ..clusters_of_two(6, Schedule::Concurrent)
        };
        let dst = 1usize << 40;
        let mut order = Vec::new();
        try_record_each(&config, partners(&config, dst), |r| {
            // Two cluster barriers before each store, and on rank 1's thread 0 the
            // completed wait too: each begins an epoch of the recording.
            for a in &r.accesses {
                let waited = a.block % 2 == 1 && a.thread == 0;
                assert_eq!(
                    a.epoch,
                    2 + usize::from(waited),
                    "block {} thread {}",
                    a.block,
                    a.thread
                );
            }
            let mut blocks: Vec<usize> = r.accesses.iter().map(|a| a.block).collect();
            blocks.sort_unstable();
            blocks.dedup();
            order.push(blocks);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(
            order,
            [std::vec![2, 3], std::vec![4, 5]],
            "each cluster once, whole"
        );
        let e = try_launch(&clusters_of_two(3, Schedule::Concurrent), || {}).unwrap_err();
        assert!(e.to_string().contains("not whole clusters of 2"), "{e}");
    }
}
