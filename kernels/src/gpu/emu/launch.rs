//! The launch interface: what to run and how ([`LaunchConfig`]), and [`try_record`],
//! which runs it. A kernel's parameters and its entry in the table are
//! [`crate::gpu::param`] and [`crate::handle`].

use core::fmt;
use core::ops::ControlFlow;
use core::ops::Range;
use std::string::{String, ToString};
use std::vec::Vec;

use super::record::{Access, Recording};
use super::run::{Run, Stop, run_blocks};
use super::schedule::Schedule;

/// Grid and block extents, as in CUDA's `dim3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }
    pub const fn count(self) -> usize {
        self.x as usize * self.y as usize * self.z as usize
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self::new(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self::new(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self::new(x, y, z)
    }
}

/// How to run a launch.
#[derive(Clone, Debug, Default)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    pub dynamic_shared_bytes: usize,
    /// Record every access (for `coalesce explain`); off for plain validation runs.
    pub record: bool,
    /// Run only these linear block indices (a sample); `None` runs the whole grid.
    pub blocks: Option<Vec<usize>>,
    /// Record only each thread's first this-many executions of each access site
    /// (a loop's first iterations), to bound the log, and of a shared-memory site
    /// those up to the barrier after that; `None` records them all. Every execution is
    /// counted either way ([`super::Executions`]).
    pub max_occurrences: Option<usize>,
    /// The byte ranges of the launch's buffers: a global access outside all of them
    /// panics (and fails the launch) instead of touching foreign memory. Empty: no check.
    pub bounds: Vec<Range<usize>>,
    /// Global loads read zeros and stores are dropped: only addresses are computed and
    /// recorded, so the buffers may be virtual ranges larger than host memory.
    /// Kernels whose addresses depend on loaded data are not emulated faithfully so.
    pub addresses_only: bool,
    /// Log global accesses only; shared ones are still counted ([`super::Executions`]). A
    /// window kept for its DRAM traffic alone so takes a tiled kernel's memory half.
    pub global_only: bool,
    /// How each block's threads are interleaved (all at once unless set).
    pub schedule: Schedule,
    /// The most bytes of [`Access`]es one block's log may hold: a block that would
    /// record more fails the launch ([`LaunchError::TooLarge`]) before its log grows
    /// past it. `None`: no limit.
    pub log_limit: Option<usize>,
}

/// Why an emulated launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The grid or block has no threads, or a sampled block is outside the grid.
    BadConfig(String),
    /// An emulated thread panicked (the first one, if several did).
    Panicked {
        block: Dim3,
        thread: Dim3,
        message: String,
    },
    /// The OS refused to start an emulated thread.
    Spawn(String),
    /// A block recorded more than [`LaunchConfig::log_limit`] bytes of accesses.
    TooLarge { limit: usize },
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::BadConfig(why) => write!(f, "bad emulated launch: {why}"),
            LaunchError::Panicked {
                block,
                thread,
                message,
            } => write!(
                f,
                "emulated thread ({}, {}, {}) of block ({}, {}, {}) panicked: {message}",
                thread.x, thread.y, thread.z, block.x, block.y, block.z
            ),
            LaunchError::Spawn(why) => write!(f, "cannot start an emulated GPU thread: {why}"),
            LaunchError::TooLarge { limit } => {
                write!(
                    f,
                    "one block recorded more than the {limit} bytes of accesses a block may hold"
                )
            }
        }
    }
}

impl std::error::Error for LaunchError {}

pub(super) fn unflatten(i: usize, d: Dim3) -> Dim3 {
    Dim3::new(
        (i % d.x as usize) as u32,
        (i / d.x as usize % d.y as usize) as u32,
        (i / (d.x as usize * d.y as usize)) as u32,
    )
}

pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

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
        ControlFlow::Continue(())
    })?;
    Ok(all)
}

/// [`try_record`], handing each block's recording to `each` as soon as the block has
/// run, in the order of the blocks, so that memory holds one block's log at a time
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
    let all: Vec<usize>;
    let blocks = match &config.blocks {
        Some(b) => b.as_slice(),
        None => {
            all = (0..grid.count()).collect();
            &all
        }
    };
    if let Some(&b) = blocks.iter().find(|&&b| b >= grid.count()) {
        return Err(LaunchError::BadConfig(std::format!(
            "block {b} is outside the grid of {} blocks",
            grid.count()
        )));
    }
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
    use crate::gpu::emu::{Op, Space};
    use crate::gpu::thread::{block_idx_x, thread_idx_x};
    use crate::gpu::{Global, GlobalMut};

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
}
