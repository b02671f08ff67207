//! The host-side backend of [`crate::gpu`]: runs a kernel's threads as CPU threads.
//!
//! A launch runs its blocks one after another (a cluster's blocks together), each with
//! its own shared memory, and `sync_threads()` is a real barrier. A validation launch runs a block's threads as
//! OS threads; an addresses-only launch first runs them one after another on one OS
//! thread, and runs again with them as coroutines if one reaches `sync_threads()`
//! (`run.rs`).
//!
//! - [`mod@launch`]: what a launch is given (the kernel, its words, grid and block, the
//!   [`LaunchConfig`]) and what it returns, or why it failed ([`LaunchError`]).
//! - [`record`]: every global and shared access goes through [`record_global`] /
//!   [`record_shared`], which, when the launch records, log it with the kernel source
//!   line it came from ([`Access`]) and count every execution ([`Executions`]).
//! - [`async_copy`]: asynchronous copies ([`crate::gpu::async_copy`]) are recorded when
//!   issued (a global load and a shared store at the issuing line) and read their
//!   source then, but land in shared memory only when the issuing thread's
//!   `wait_group` covers their group: the latest moment the GPU allows, so a kernel
//!   that reads a stage before waiting for it reads the poison shared memory starts
//!   with ([`queue_async_copy`]).
//! - `warp.rs`: warp-collective instructions (`mma.sync`, `ldmatrix`) exchange words
//!   among a warp's lanes ([`warp_exchange`]).
//! - [`schedule`]: [`LaunchConfig::schedule`] can run a block's threads one at a time
//!   instead, in a fixed order, so a missing barrier shows deterministically.
//!
//! A panic in one emulated thread (a failed bounds check, an assertion) aborts its
//! block: threads waiting at the barrier are released and unwind quietly, and
//! [`try_launch`] returns the first panic as a [`LaunchError`] instead of hanging.
//!
//! This file holds what the others share: each emulated thread's context and its
//! block's state, barriers, and shared-memory storage.

use core::cell::{Cell, RefCell};
use std::boxed::Box;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::vec::Vec;

pub mod async_copy;
pub mod config;
mod flag;
mod hopper;
pub mod launch;
pub mod record;
mod run;
pub mod schedule;
mod tensor;
mod warp;

pub use async_copy::{commit_group, queue_async_copy, wait_group};
pub use config::{Dim3, LaunchConfig, LaunchError};
pub use flag::{release_flag, wait_flag};
pub use hopper::{
    barrier_arrive, barrier_arrive_in, barrier_init, barrier_try_wait, cluster_rank, cluster_sync,
    fence_proxy_async, tma_load, tma_store, wgmma_commit, wgmma_mma_16bit_ss, wgmma_mma_tf32,
    wgmma_mma_tf32_ss, wgmma_wait,
};
pub use launch::{launch, try_launch, try_record, try_record_each};
pub use record::{Access, Executions, Op, Recording, Space, record_async_copy, record_global, record_shared};
pub use schedule::Schedule;
pub use warp::{sync_warpgroup, warp_exchange};

use async_copy::AsyncCopies;
use run::{BlockBarrier, Run};

/// What one emulated thread sees: its coordinates and its block's shared state.
pub struct ThreadCtx<'a> {
    pub thread_idx: Dim3,
    pub block_idx: Dim3,
    pub block_dim: Dim3,
    pub grid_dim: Dim3,
    /// The blocks launched with this one ([`Cluster`]), and this block's rank in it.
    cluster: &'a Cluster,
    rank: usize,
    config: &'a LaunchConfig,
    linear_block: usize,
    linear_thread: usize,
    // Executions so far per site, direction and space.
    counters: record::Counters,
    epoch: usize,
    log: Vec<Access>,
    copies: AsyncCopies,
    wgmma: hopper::Groups,
    /// FLOPs of the tensor-core instructions the thread executed: its share of each.
    tensor_flops: u64,
}

struct BlockState {
    /// How the block's threads share the machine, which decides what a barrier does.
    run: Run,
    barrier: BlockBarrier,
    // Set under a serial schedule: it replaces the barrier.
    turns: Option<schedule::Turns>,
    // Where the lanes of each warp meet for warp-collective instructions, and the
    // threads of each warpgroup for warpgroup MMAs.
    warps: warp::Warps,
    warpgroups: warp::Warps,
    // Transaction barriers and their queued copies.
    hopper: hopper::Barriers,
    // Static arrays by name; u128 backing keeps 16-byte alignment.
    statics: Mutex<HashMap<&'static str, Box<[u128]>>>,
    dynamic: Mutex<Box<[Kib]>>,
    // Accesses the block's threads have logged ([`LaunchConfig::log_limit`]).
    logged: AtomicUsize,
}

impl<'a> ThreadCtx<'a> {
    /// The thread's own block: its rank of its cluster.
    fn block(&self) -> &'a BlockState {
        &self.cluster.blocks[self.rank]
    }
}

/// The blocks of one cluster, which run together: each block's state (its shared
/// memory, barriers and warps), and the barrier every thread of every block meets at
/// `barrier.cluster`. A grid without clusters runs clusters of one block.
struct Cluster {
    blocks: Vec<BlockState>,
    barrier: BlockBarrier,
}

std::thread_local! {
    // Erased lifetime: set only for the duration of one emulated thread's run.
    static CURRENT: RefCell<Option<ThreadCtx<'static>>> = const { RefCell::new(None) };
    // Where this OS thread's CURRENT keeps its context, for the accesses that are only
    // counted ([`record`]'s fast path): set before an emulated thread runs on it.
    static SLOT: Cell<*mut Option<ThreadCtx<'static>>> = const { Cell::new(core::ptr::null_mut()) };
    // Whether the emulated thread running on this OS thread is in an addresses-only
    // launch ([`addresses_only`]).
    static ADDRESSES_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current emulated thread runs in an
/// [addresses-only](LaunchConfig::addresses_only) launch, whose loads read zeros: its
/// arithmetic need not round as the GPU's does ([`crate::gpu::math::fma`]), and a
/// warp-collective instruction's results need not be computed ([`crate::gpu::mma`]).
/// Nothing but addresses comes out of such a launch. False outside a launch.
#[inline(always)]
pub fn addresses_only() -> bool {
    ADDRESSES_ONLY.get()
}

/// Counts `flops` of a tensor-core instruction (`mma.sync`, `wgmma`) as the current
/// thread's share ([`Recording::tensor_flops`]).
pub fn count_tensor_flops(flops: u64) {
    with_thread(|t| t.tensor_flops += flops);
}

/// Runs `f` with the current emulated thread's context.
///
/// # Panics
/// Outside an emulated launch: kernel code only runs inside [`launch()`].
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
        with_thread(|t| (t.block() as *const BlockState, t.linear_thread));
    // SAFETY: see above.
    let block = unsafe { &*block };
    run::barrier(block, rank);
    with_thread(|t| t.epoch += 1);
}

const POISON: u128 = u128::from_ne_bytes([0xff; 16]);

/// 1 KiB of a block's dynamic shared segment, 1 KiB aligned: a kernel that aligns its
/// tiles within the segment ([`SharedArray::aligned`](crate::gpu::SharedArray::aligned),
/// as the copy engine's swizzles need) finds them at the same offset in every block,
/// as on the GPU, where every block's segment starts at the same shared address; the
/// blocks of a cluster reach each other's at the same offsets.
#[repr(C, align(1024))]
#[derive(Clone, Copy)]
struct Kib([u128; 64]);

impl Kib {
    const POISON: Kib = Kib([POISON; 64]);

    /// Enough for `bytes`.
    fn segment(bytes: usize) -> Box<[Kib]> {
        std::vec![Kib::POISON; bytes.div_ceil(1024)].into_boxed_slice()
    }
}

impl BlockState {
    /// Where the dynamic shared segment starts, and its bytes.
    fn dynamic_segment(&self) -> (usize, usize) {
        let dynamic = self.dynamic.lock().unwrap_or_else(|e| e.into_inner());
        (dynamic.as_ptr() as usize, dynamic.len() * 1024)
    }
}

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
        let mut statics = t.block().statics.lock().unwrap_or_else(|e| e.into_inner());
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
        let (start, len) = t.block().dynamic_segment();
        assert!(
            bytes <= len,
            "kernel asked for more dynamic shared memory than the launch provided"
        );
        start as *mut u8
    })
}

/// The unwind payload of a thread released from an aborted barrier.
struct Aborted;

/// The unwind payload of a thread whose access would take its block's log past
/// [`LaunchConfig::log_limit`].
struct LogFull;

/// A thread of `block` waits for another's work (a transaction barrier's phase): the
/// others run first. Threads run one after another cannot wait, which ends the try.
fn pause(block: &BlockState, rank: usize) {
    match block.run {
        Run::OneByOne => std::panic::resume_unwind(Box::new(run::NeedsBarrier)),
        Run::Fibers => run::suspend_fiber(block),
        Run::Threads => {
            if block.barrier.aborted() {
                // A thread of the block (or of its cluster) panicked: what it owed this
                // wait will not come.
                std::panic::resume_unwind(Box::new(Aborted));
            }
            match &block.turns {
                Some(turns) => turns.exchange(rank),
                None => std::thread::yield_now(),
            }
        }
    }
}
