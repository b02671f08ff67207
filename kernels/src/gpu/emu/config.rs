//! What to run and how: a launch's grid and block ([`Dim3`]), its options
//! ([`LaunchConfig`]) and how it can fail ([`LaunchError`]).

use core::fmt;
use core::ops::Range;
use std::string::{String, ToString};
use std::vec::Vec;

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
    /// Blocks a cluster along x (`#[cluster(N)]`), which run together, each with its
    /// own shared memory, reaching each other's through the cluster's operations; 0
    /// or 1: no clusters. The grid's x extent is a multiple of it, as on the GPU.
    pub cluster: u32,
}

impl LaunchConfig {
    /// Blocks that run together: a cluster's, or one.
    pub fn cluster_size(&self) -> usize {
        self.cluster.max(1) as usize
    }
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
