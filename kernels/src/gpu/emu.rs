//! The host-side backend of [`crate::gpu`]: runs a kernel's threads as CPU threads.
//!
//! A launch runs its blocks one after another, each with its own shared memory, and
//! `sync_threads()` is a real barrier. A validation launch runs a block's threads as
//! OS threads; an addresses-only launch first runs them one after another on one OS
//! thread, and runs again with them as coroutines if one reaches `sync_threads()`
//! ([`run`]).
//! Every global and shared access goes through [`record_global`]/[`record_shared`],
//! which, when the launch records, log it with the kernel source line it came from.
//!
//! A panic in one emulated thread (a failed bounds check, an assertion) aborts its
//! block: threads waiting at the barrier are released and unwind quietly, and
//! [`try_launch`] returns the first panic as a [`LaunchError`] instead of hanging.
//!
//! [`LaunchConfig::schedule`] can run a block's threads one at a time instead, in a
//! fixed order, so a missing barrier shows deterministically ([`schedule`]).
//!
//! Asynchronous copies ([`crate::gpu::async_copy`]) are recorded when issued (a global
//! load and a shared store at the issuing line) and read their source then, but land
//! in shared memory only when the issuing thread's `wait_group` covers their group:
//! the latest moment the GPU allows, so a kernel that reads a stage before waiting
//! for it reads the poison shared memory starts with ([`queue_async_copy`]).
//!
//! Warp-collective instructions (`mma.sync`, `ldmatrix`) exchange words among a warp's
//! lanes ([`warp_exchange`], see [`warp`]).

use core::fmt;
use core::ops::Range;
use core::panic::Location;
use std::boxed::Box;
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::resume_unwind;
use std::string::{String, ToString};
use std::sync::Mutex;
use std::vec::Vec;

mod run;
pub mod schedule;
pub use schedule::Schedule;
mod warp;

use run::{Aborted, BlockBarrier, Run, Stop, run_blocks};

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
    /// How many times this thread executed this site (in this direction and space)
    /// before: the loop iteration, for an access in a loop. Lanes of a warp with the
    /// same occurrence form one request.
    pub occurrence: usize,
    pub op: Op,
    pub space: Space,
    /// Byte address (global), or byte offset within its shared array (shared).
    pub addr: usize,
    /// Start of the shared array (0 for global), so offsets of different arrays differ.
    pub array: usize,
    /// The shared array's PTX symbol ("" for global).
    pub array_name: &'static str,
    /// Barriers (`sync_threads`) the thread had passed: accesses of one thread with the
    /// same epoch lie between the same two barriers.
    pub epoch: usize,
    pub bytes: usize,
    /// Half of an asynchronous copy (`cp.async`): its global read or its shared
    /// write. The GPU issues both as one `LDGSTS` instruction, not as a load and a
    /// store of its own.
    pub async_copy: bool,
    /// The shared write of an asynchronous copy: the global address its bytes come
    /// from (None where the copy zero-fills, and for every other access). Where they
    /// land against where they came from is what its shared wavefronts depend on.
    pub copied_from: Option<usize>,
}

impl Access {
    pub fn warp(&self) -> usize {
        self.thread / 32
    }
    pub fn lane(&self) -> usize {
        self.thread % 32
    }
}

/// How often one emulated thread executed one access site (one direction, one space)
/// in all, and how many of those executions the log holds: what scales a capped log
/// ([`LaunchConfig::max_occurrences`]) back to the whole run, site by site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Executions {
    pub block: usize,
    pub thread: usize,
    pub site: &'static Location<'static>,
    pub op: Op,
    pub space: Space,
    /// Every execution (each piece of a value wider than one instruction counts).
    pub executions: usize,
    /// Those recorded in the log.
    pub recorded: usize,
}

/// A recorded launch: the accesses logged, and every thread's execution counts.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    pub accesses: Vec<Access>,
    pub executions: Vec<Executions>,
}

/// What one emulated thread sees: its coordinates and its block's shared state.
pub struct ThreadCtx<'a> {
    pub thread_idx: Dim3,
    pub block_idx: Dim3,
    pub block_dim: Dim3,
    pub grid_dim: Dim3,
    block: &'a BlockState,
    config: &'a LaunchConfig,
    linear_block: usize,
    linear_thread: usize,
    // Executions so far per site, direction and space; a short list, as a kernel has a
    // handful of sites. With each, the epoch in which its recording reached the cap.
    counters: Vec<(Executions, Option<usize>)>,
    epoch: usize,
    log: Vec<Access>,
    copies: AsyncCopies,
}

/// One asynchronous copy in flight: the bytes read when it was issued, and where in
/// the block's shared memory they land.
struct PendingCopy {
    dst: *mut u8,
    data: [u8; 16],
    len: usize,
}

/// A thread's asynchronous copies: those issued since its last `commit_group`, and
/// the committed groups not yet waited for, oldest first.
#[derive(Default)]
struct AsyncCopies {
    open: Vec<PendingCopy>,
    groups: std::collections::VecDeque<Vec<PendingCopy>>,
}

struct BlockState {
    /// How the block's threads share the machine, which decides what a barrier does.
    run: Run,
    barrier: BlockBarrier,
    // Set under a serial schedule: it replaces the barrier.
    turns: Option<schedule::Turns>,
    // Where the lanes of each warp meet for warp-collective instructions.
    warps: warp::Warps,
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
    run::barrier(block, rank);
    with_thread(|t| t.epoch += 1);
}

const POISON: u128 = u128::from_ne_bytes([0xff; 16]);

fn words_for(bytes: usize) -> usize {
    bytes.div_ceil(16)
}

/// The storage of the current block's static shared array `name`: at least `bytes`
/// bytes, 16-byte aligned, created (filled with NaN bytes) on first use and kept for
/// the whole block. Untyped so that this module needs nothing from
/// [`crate::gpu::shared`], which builds its `SharedArray`s on top of it.
#[doc(hidden)]
pub fn static_shared_storage(name: &'static str, bytes: usize) -> *mut u8 {
    with_thread(|t| {
        let mut statics = t.block.statics.lock().unwrap_or_else(|e| e.into_inner());
        let storage = statics
            .entry(name)
            .or_insert_with(|| std::vec![POISON; words_for(bytes)].into_boxed_slice());
        // Names are PTX symbols, unique per crate, with a constant length; a longer
        // second request means two arrays share a name, and would index past the storage.
        assert!(
            bytes <= storage.len() * 16,
            "shared array {name} requested with two different sizes"
        );
        storage.as_mut_ptr().cast()
    })
}

/// The storage of the current block's dynamic shared segment, checked to hold `bytes`.
#[doc(hidden)]
pub fn dynamic_shared_storage(bytes: usize) -> *mut u8 {
    with_thread(|t| {
        let mut dynamic = t.block.dynamic.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            bytes <= dynamic.len() * 16,
            "kernel asked for more dynamic shared memory than the launch provided"
        );
        dynamic.as_mut_ptr().cast()
    })
}

/// A warp-collective exchange: this lane's `words` go to every lane of its warp, and
/// every lane's words come back once all 32 lanes have called it, lane after lane
/// (lane l's at `l * words.len()..`; see [`warp`]). The GPU side of such an instruction
/// does this in hardware; its emulated side ([`crate::gpu::mma`], `ldmatrix`) computes
/// what each lane receives from this.
///
/// In an [addresses-only](LaunchConfig::addresses_only) launch, whose values are not
/// faithful anyway (loads read zeros), nothing is exchanged: every lane gets its own
/// words back 32 times, and the lanes need not meet, which keeps `coalesce explain` of
/// a tensor-core kernel as fast as of any other.
///
/// # Panics
/// In a warp of fewer than 32 threads, or when a lane of the warp returned from the
/// kernel without making the call (the GPU would hang or fault).
pub fn warp_exchange(words: &[u32]) -> Vec<u32> {
    if with_thread(|t| t.config.addresses_only) {
        return words.repeat(32);
    }
    // The block state outlives every thread in it (as in sync_threads).
    let (block, rank): (*const BlockState, usize) =
        with_thread(|t| (t.block as *const BlockState, t.linear_thread));
    // SAFETY: see above.
    let block = unsafe { &*block };
    let (warp, lane) = (rank / 32, rank % 32);
    let (generation, _) = block.warps.deposit(warp, lane, words).unwrap_or_else(stalled);
    match &block.turns {
        Some(turns) => {
            turns.exchange(rank);
            block.warps.collect(warp, generation)
        }
        None => block.warps.wait(warp, generation),
    }
    .unwrap_or_else(stalled)
}

/// A lane that cannot complete a warp exchange: quietly unwinds when the block was
/// aborted by another thread's panic, else panics with the reason.
fn stalled<T>(why: warp::Stalled) -> T {
    match why {
        warp::Stalled::Aborted => resume_unwind(Box::new(Aborted)),
        warp::Stalled::Incomplete(message) => panic!("{message}"),
    }
}

/// The widest access one instruction makes: `ld.global.v4.b32`, 16 bytes.
const MAX_ACCESS: usize = 16;

/// Where one access went: its space, and for shared memory the array (start, symbol).
#[derive(Clone, Copy)]
struct Target {
    space: Space,
    array: (usize, &'static str),
}

const GLOBAL: Target = Target {
    space: Space::Global,
    array: (0, ""),
};

/// Logs one access; returns true when the access must not touch memory
/// ([`LaunchConfig::addresses_only`]).
#[track_caller]
fn record(
    to: Target,
    addr: usize,
    bytes: usize,
    align: usize,
    op: Op,
    async_copy: bool,
    copied_from: Option<usize>,
) -> bool {
    let site = Location::caller();
    let space = to.space;
    with_thread(|t| {
        let config = t.config;
        if space == Space::Global
            && !config.bounds.is_empty()
            && !config
                .bounds
                .iter()
                .any(|r| r.start <= addr && addr.checked_add(bytes).is_some_and(|end| end <= r.end))
        {
            panic!("{site}: {op:?} of {bytes} bytes at {addr:#x} is outside every buffer of the launch");
        }
        if config.record {
            // A value wider than one instruction can move (a 24-byte struct of f32s)
            // is as many accesses as the GPU makes: one per aligned piece, each piece a
            // warp-wide instruction of its own.
            let piece = align.clamp(1, MAX_ACCESS).min(bytes.max(1));
            let (block, thread, epoch) = (t.linear_block, t.linear_thread, t.epoch);
            for offset in (0..bytes.max(1)).step_by(piece) {
                let i = match t
                    .counters
                    .iter()
                    .position(|(c, _)| c.site == site && c.op == op && c.space == space)
                {
                    Some(i) => i,
                    None => {
                        let fresh = Executions {
                            block,
                            thread,
                            site,
                            op,
                            space,
                            executions: 0,
                            recorded: 0,
                        };
                        t.counters.push((fresh, None));
                        t.counters.len() - 1
                    }
                };
                let (counter, capped_in) = &mut t.counters[i];
                let occurrence = counter.executions;
                counter.executions += 1;
                // Shared accesses are recorded past the cap up to the next barrier, so
                // the log never cuts a run of them that ptxas may merge into one vector
                // access (coalesce's explain::vectorize).
                let record = !(config.global_only && space == Space::Shared)
                    && match config.max_occurrences {
                        None => true,
                        Some(max) => {
                            occurrence < max || (space == Space::Shared && *capped_in == Some(epoch))
                        }
                    };
                if config.max_occurrences.is_some_and(|max| occurrence + 1 == max) {
                    *capped_in = Some(epoch);
                }
                if record {
                    counter.recorded += 1;
                    t.log.push(Access {
                        block,
                        thread,
                        site,
                        occurrence,
                        op,
                        space,
                        addr: addr + offset,
                        array: to.array.0,
                        array_name: to.array.1,
                        epoch,
                        bytes: piece.min(bytes),
                        async_copy,
                        copied_from: copied_from.map(|from| from + offset),
                    });
                }
            }
        }
        space == Space::Global && config.addresses_only
    })
}

/// Called by [`crate::gpu::Global`] accessors for every global access of a value of
/// `bytes` bytes aligned to `align`. Returns true when the launch is addresses-only:
/// the accessor must then not touch `addr`.
#[track_caller]
pub fn record_global(addr: usize, bytes: usize, align: usize, op: Op) -> bool {
    record(GLOBAL, addr, bytes, align, op, false, None)
}

/// Called by [`crate::gpu::SharedArray`] accessors for every shared access, of the
/// array starting at `array` whose PTX symbol is `name`.
#[track_caller]
pub fn record_shared(array: usize, name: &'static str, offset: usize, bytes: usize, op: Op) {
    let to = Target {
        space: Space::Shared,
        array: (array, name),
    };
    record(to, offset, bytes, bytes, op, false, None);
}

/// Called by [`crate::gpu::SharedArray`]'s asynchronous copies for the `bytes` they
/// read at `addr` (when they read: a zero-filling copy reads nothing) and write at
/// `offset` of the shared array `array` (start, PTX symbol). Returns as
/// [`record_global`].
#[track_caller]
pub fn record_async_copy(
    read: Option<usize>,
    array: (usize, &'static str),
    offset: usize,
    bytes: usize,
) -> bool {
    // No closure here: it would not pass the caller's location on.
    let mut skip = false;
    if let Some(addr) = read {
        skip = record(GLOBAL, addr, bytes, bytes, Op::Load, true, None);
    }
    let to = Target {
        space: Space::Shared,
        array,
    };
    record(to, offset, bytes, bytes, Op::Store, true, read);
    skip
}

/// Queues an asynchronous copy of `data[..len]` to `dst` for the current thread: it
/// joins the thread's open group and lands when a [`wait_group`] covers that group.
/// The caller ([`crate::gpu::SharedArray`]) has checked `dst` and recorded the accesses.
///
/// # Safety
/// `dst` must point to `len` bytes of the current block's shared memory.
pub unsafe fn queue_async_copy(dst: *mut u8, data: [u8; 16], len: usize) {
    assert!(len <= 16, "an asynchronous copy moves at most 16 bytes");
    with_thread(|t| t.copies.open.push(PendingCopy { dst, data, len }));
}

/// `cp.async.commit_group`: the copies issued since the last commit become one group
/// (an empty one if there were none, as on the GPU).
pub fn commit_group() {
    with_thread(|t| {
        let open = core::mem::take(&mut t.copies.open);
        t.copies.groups.push_back(open);
    });
}

/// `cp.async.wait_group n`: lands every committed group but the newest `n`. Copies
/// not yet committed are in no group and stay in flight, as on the GPU.
pub fn wait_group(n: usize) {
    let done: Vec<PendingCopy> = with_thread(|t| {
        let groups = &mut t.copies.groups;
        let finished = groups.len().saturating_sub(n);
        groups.drain(..finished).flatten().collect()
    });
    for c in done {
        // SAFETY: queue_async_copy's caller promised `dst` holds `len` bytes of this
        // block's shared memory, which lives as long as the block.
        unsafe { core::ptr::copy_nonoverlapping(c.data.as_ptr(), c.dst, c.len) };
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
    /// counted either way ([`Executions`]).
    pub max_occurrences: Option<usize>,
    /// The byte ranges of the launch's buffers: a global access outside all of them
    /// panics (and fails the launch) instead of touching foreign memory. Empty: no check.
    pub bounds: Vec<Range<usize>>,
    /// Global loads read zeros and stores are dropped: only addresses are computed and
    /// recorded, so the buffers may be virtual ranges larger than host memory.
    /// Kernels whose addresses depend on loaded data are not emulated faithfully so.
    pub addresses_only: bool,
    /// Log global accesses only; shared ones are still counted ([`Executions`]). A
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

fn unflatten(i: usize, d: Dim3) -> Dim3 {
    Dim3::new(
        (i % d.x as usize) as u32,
        (i / d.x as usize % d.y as usize) as u32,
        (i / (d.x as usize * d.y as usize)) as u32,
    )
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
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
