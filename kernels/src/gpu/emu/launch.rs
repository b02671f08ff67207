//! The launch interface: what to run and how ([`LaunchConfig`]), and [`try_record`],
//! which runs it. A kernel's parameters and its entry in the table are
//! [`crate::gpu::param`] and [`crate::handle`].

use core::fmt;
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
    // at a barrier: try them one after another on this OS thread (an OS thread per
    // emulated thread would be most of a block's cost), and run the launch again with
    // them as coroutines on this thread if one reaches `sync_threads()`. Validation
    // keeps OS threads, so a kernel's races can show. A warp exchange needs no meeting
    // in such a launch ([`warp_exchange`]).
    let run = if config.addresses_only && config.schedule == Schedule::Concurrent {
        match run_blocks(config, blocks, &kernel, Run::OneByOne) {
            Err(Stop::NeedsBarrier) => Run::Fibers,
            Err(Stop::Failed(e)) => return Err(e),
            Ok(log) => return Ok(log),
        }
    } else {
        Run::Threads
    };
    run_blocks(config, blocks, &kernel, run).map_err(|stop| match stop {
        Stop::Failed(e) => e,
        // Only a one-by-one run stops so.
        Stop::NeedsBarrier => {
            LaunchError::BadConfig("a barrier stopped a block whose threads meet there".into())
        }
    })
}
