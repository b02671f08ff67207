//! The host-side backend of [`crate::gpu`]: runs a kernel's threads as CPU threads.
//!
//! A launch runs its blocks one after another; the threads of a block run as OS
//! threads, so `sync_threads()` is a real barrier and shared memory is per block.
//! Every global and shared access goes through [`record_global`]/[`record_shared`],
//! which, when the launch records, log it with the kernel source line it came from.
//! [`LaunchConfig::schedule`] can run a block's threads one at a time instead, in a
//! fixed order, so a missing barrier shows deterministically ([`schedule`]).

use core::panic::Location;
use std::boxed::Box;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Barrier, Mutex};
use std::vec::Vec;

pub mod schedule;
pub use schedule::Schedule;

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

/// Load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Load,
    Store,
}

/// Which memory an access went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Global,
    Shared,
}

/// One memory access by one emulated thread.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    /// Linear block index in the grid (x fastest).
    pub block: usize,
    /// Linear thread index in the block (x fastest); `warp = thread / 32`.
    pub thread: usize,
    /// The kernel source line that made the access.
    pub site: &'static Location<'static>,
    /// How many accesses this thread made at this site before this one.
    pub occurrence: usize,
    pub op: Op,
    pub space: Space,
    /// Byte address (global), or byte offset within its shared array (shared).
    pub addr: usize,
    /// Start of the shared array (0 for global), so offsets of different arrays differ.
    pub array: usize,
    pub bytes: usize,
}

impl Access {
    pub fn warp(&self) -> usize {
        self.thread / 32
    }
    pub fn lane(&self) -> usize {
        self.thread % 32
    }
}

/// What one emulated thread sees: its coordinates and its block's shared state.
pub struct ThreadCtx<'a> {
    pub thread_idx: Dim3,
    pub block_idx: Dim3,
    pub block_dim: Dim3,
    pub grid_dim: Dim3,
    block: &'a BlockState,
    linear_block: usize,
    linear_thread: usize,
    recording: bool,
    occurrences: HashMap<(usize, u32, u32), usize>,
    log: Vec<Access>,
}

struct BlockState {
    barrier: Barrier,
    // Set under a serial schedule: it replaces the barrier.
    turns: Option<schedule::Turns>,
    // Static arrays by name; u128 backing keeps 16-byte alignment.
    statics: Mutex<HashMap<&'static str, Box<[u128]>>>,
    dynamic: Mutex<Box<[u128]>>,
}

std::thread_local! {
    // Erased lifetime: set only for the duration of one emulated thread's run.
    static CURRENT: RefCell<Option<ThreadCtx<'static>>> = const { RefCell::new(None) };
}

/// Runs `f` with the current emulated thread's context.
///
/// # Panics
/// Outside an emulated launch: kernel code only runs inside [`launch`].
pub fn with_thread<R>(f: impl FnOnce(&mut ThreadCtx<'static>) -> R) -> R {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        let ctx = c
            .as_mut()
            .expect("kernel code called outside an emulated launch (use gpu::emu::launch)");
        f(ctx)
    })
}

pub fn sync_threads() {
    // The block state lives as long as the block, which outlives every thread in it.
    let (block, rank): (*const BlockState, usize) =
        with_thread(|t| (t.block as *const BlockState, t.linear_thread));
    // SAFETY: see above.
    let block = unsafe { &*block };
    match &block.turns {
        Some(turns) => turns.barrier(rank),
        None => {
            block.barrier.wait();
        }
    }
}

const POISON: u128 = u128::from_ne_bytes([0xff; 16]);

fn words_for(bytes: usize) -> usize {
    bytes.div_ceil(16)
}

/// Shared array `name` of the current block, created (filled with NaN bytes) on first use.
pub fn shared_array<T: crate::gpu::shared::SharedWord>(
    name: &'static str,
    len: usize,
) -> crate::gpu::SharedArray<T> {
    with_thread(|t| {
        let mut statics = t.block.statics.lock().unwrap_or_else(|e| e.into_inner());
        let storage = statics
            .entry(name)
            .or_insert_with(|| std::vec![POISON; words_for(len * size_of::<T>())].into_boxed_slice());
        // SAFETY: the storage lives in the block state for the whole block.
        unsafe { crate::gpu::SharedArray::from_host_ptr(storage.as_mut_ptr().cast(), len) }
    })
}

/// The dynamic shared segment of the current block.
pub fn dynamic_shared_array<T: crate::gpu::shared::SharedWord>(len: usize) -> crate::gpu::SharedArray<T> {
    with_thread(|t| {
        let mut dynamic = t.block.dynamic.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            len * size_of::<T>() <= dynamic.len() * 16,
            "kernel asked for more dynamic shared memory than the launch provided"
        );
        // SAFETY: as for static arrays.
        unsafe { crate::gpu::SharedArray::from_host_ptr(dynamic.as_mut_ptr().cast(), len) }
    })
}

#[track_caller]
fn record(space: Space, array: usize, addr: usize, bytes: usize, op: Op) {
    let site = Location::caller();
    with_thread(|t| {
        if !t.recording {
            return;
        }
        let key = (site.file().as_ptr() as usize, site.line(), site.column());
        let n = t.occurrences.entry(key).or_insert(0);
        let occurrence = *n;
        *n += 1;
        let access = Access {
            block: t.linear_block,
            thread: t.linear_thread,
            site,
            occurrence,
            op,
            space,
            addr,
            array,
            bytes,
        };
        t.log.push(access);
    })
}

/// Called by [`crate::gpu::Global`] accessors for every global access.
#[track_caller]
pub fn record_global(addr: usize, bytes: usize, op: Op) {
    record(Space::Global, 0, addr, bytes, op)
}

/// Called by [`crate::gpu::SharedArray`] accessors for every shared access.
#[track_caller]
pub fn record_shared(array: usize, offset: usize, bytes: usize, op: Op) {
    record(Space::Shared, array, offset, bytes, op)
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
    /// How each block's threads are interleaved (all at once unless set).
    pub schedule: Schedule,
}

/// Runs `kernel` on every thread of the grid (or the sampled blocks) and returns
/// the recorded accesses (empty unless `config.record`).
///
/// `kernel` is a closure that calls the kernel with its arguments; the emulated
/// indices are visible to it through [`crate::gpu::thread`].
pub fn launch(config: &LaunchConfig, kernel: impl Fn() + Sync) -> Vec<Access> {
    let (grid, block) = (config.grid, config.block);
    assert!(
        grid.count() > 0 && block.count() > 0,
        "empty launch: grid {grid:?} block {block:?}"
    );
    let all: Vec<usize>;
    let blocks = match &config.blocks {
        Some(b) => b.as_slice(),
        None => {
            all = (0..grid.count()).collect();
            &all
        }
    };
    let log = Mutex::new(Vec::new());
    for &b in blocks {
        let block_idx = Dim3::new(
            (b % grid.x as usize) as u32,
            (b / grid.x as usize % grid.y as usize) as u32,
            (b / (grid.x as usize * grid.y as usize)) as u32,
        );
        let state = BlockState {
            barrier: Barrier::new(block.count()),
            turns: schedule::Turns::new(config.schedule, block.count()),
            statics: Mutex::new(HashMap::new()),
            dynamic: Mutex::new(std::vec![POISON; words_for(config.dynamic_shared_bytes)].into_boxed_slice()),
        };
        std::thread::scope(|s| {
            for t in 0..block.count() {
                let (state, kernel, log) = (&state, &kernel, &log);
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(s, move || {
                        let thread_idx = Dim3::new(
                            (t % block.x as usize) as u32,
                            (t / block.x as usize % block.y as usize) as u32,
                            (t / (block.x as usize * block.y as usize)) as u32,
                        );
                        let ctx = ThreadCtx {
                            thread_idx,
                            block_idx,
                            block_dim: block,
                            grid_dim: grid,
                            block: state,
                            linear_block: b,
                            linear_thread: t,
                            recording: config.record,
                            occurrences: HashMap::new(),
                            log: Vec::new(),
                        };
                        // SAFETY: the context is removed below, before `state` is dropped.
                        let ctx: ThreadCtx<'static> = unsafe { core::mem::transmute(ctx) };
                        CURRENT.with(|c| *c.borrow_mut() = Some(ctx));
                        let turn = state.turns.as_ref().map(|turns| turns.start(t));
                        kernel();
                        drop(turn);
                        let ctx = CURRENT.with(|c| c.borrow_mut().take());
                        if let Some(ctx) = ctx {
                            log.lock().unwrap_or_else(|e| e.into_inner()).extend(ctx.log);
                        }
                    })
                    .expect("spawn an emulated GPU thread");
            }
        });
    }
    log.into_inner().unwrap_or_else(|e| e.into_inner())
}
