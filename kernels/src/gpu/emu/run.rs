//! How a launch runs the threads of each block, and what `sync_threads()` does in
//! each way ([`Run`]): one after another, as coroutines on one OS thread, or each on
//! an OS thread of its own, reused from block to block ([`Crew`]).

use core::cell::RefCell;
use core::ops::ControlFlow;
use std::boxed::Box;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::string::ToString;
use std::sync::atomic::AtomicUsize;
use std::sync::{Condvar, Mutex};
use std::vec::Vec;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::async_copy::AsyncCopies;
use super::config::{LaunchConfig, LaunchError, panic_message, unflatten};
use super::record::{Access, Executions, Recording};
use super::{
    ADDRESSES_ONLY, Aborted, BlockState, CURRENT, Cluster, Kib, LogFull, SLOT, ThreadCtx, schedule, warp,
};

/// `__syncthreads()` for one emulated block.
///
/// Unlike `std::sync::Barrier` it can be aborted (a panicking thread releases the
/// others instead of leaving them waiting forever), and a thread that returns from the
/// kernel stops counting, as exited threads do on the GPU, so an early `return`
/// before a barrier does not deadlock the emulator.
pub(super) struct BlockBarrier {
    state: Mutex<BarrierState>,
    released: Condvar,
}

struct BarrierState {
    live: usize,
    arrived: usize,
    generation: u64,
    aborted: bool,
}

/// How the threads of each block run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Run {
    /// One after another on this OS thread (an addresses-only launch's first try): a
    /// barrier cannot be honoured, and ends the try.
    OneByOne,
    /// As coroutines on this OS thread (an addresses-only launch with barriers): each
    /// runs to the barrier in turn, and all go on when every live one has reached it.
    Fibers,
    /// Each on an OS thread of its own (validation, so a kernel's races can show).
    Threads,
}

/// The unwind payload of a thread that reached a barrier while its block's threads ran
/// one after another: the launch must run them so that they can meet there.
pub(super) struct NeedsBarrier;

impl BlockBarrier {
    pub(super) fn new(threads: usize) -> Self {
        BlockBarrier {
            state: Mutex::new(BarrierState {
                live: threads,
                arrived: 0,
                generation: 0,
                aborted: false,
            }),
            released: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BarrierState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for every live thread of the block; `Err` if the block was aborted.
    fn wait(&self) -> Result<(), Aborted> {
        let mut s = self.lock();
        if s.aborted {
            return Err(Aborted);
        }
        s.arrived += 1;
        if s.arrived >= s.live {
            s.arrived = 0;
            s.generation += 1;
            self.released.notify_all();
            return Ok(());
        }
        let generation = s.generation;
        while s.generation == generation && !s.aborted {
            s = self.released.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.generation == generation {
            return Err(Aborted);
        }
        Ok(())
    }

    /// A thread has returned from the kernel: the barrier stops waiting for it.
    pub(super) fn leave(&self) {
        let mut s = self.lock();
        s.live -= 1;
        if s.arrived > 0 && s.arrived >= s.live {
            s.arrived = 0;
            s.generation += 1;
            self.released.notify_all();
        }
    }

    pub(super) fn abort(&self) {
        self.lock().aborted = true;
        self.released.notify_all();
    }

    pub(super) fn aborted(&self) -> bool {
        self.lock().aborted
    }

    /// A fiber's arrival, without waiting: the generation it must see pass.
    fn arrive(&self) -> u64 {
        let mut s = self.lock();
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived >= s.live {
            s.arrived = 0;
            s.generation += 1;
        }
        generation
    }

    fn passed(&self, generation: u64) -> bool {
        self.lock().generation != generation
    }
}

/// Suspends the running fiber until its scheduler resumes it, its context with it.
pub(super) fn suspend_fiber(block: &BlockState) {
    let yielder = YIELDER.get();
    let ctx = CURRENT.with(|c| c.borrow_mut().take());
    // SAFETY: set by this fiber's body, whose yielder outlives its run.
    unsafe { &*yielder }.suspend(());
    YIELDER.set(yielder);
    CURRENT.with(|c| *c.borrow_mut() = ctx);
    if block.barrier.aborted() {
        resume_unwind(Box::new(Aborted));
    }
}

std::thread_local! {
    // The running fiber's way back to its block's scheduler ([`Run::Fibers`]).
    static YIELDER: core::cell::Cell<*const Yielder<(), ()>> = const { core::cell::Cell::new(core::ptr::null()) };
}

/// `sync_threads()` for thread `rank` of `block`, as the block's threads run.
pub(super) fn barrier(block: &BlockState, rank: usize) {
    match block.run {
        Run::OneByOne => resume_unwind(Box::new(NeedsBarrier)),
        Run::Fibers => {
            // Back to the scheduler until every live thread of the block is here (a
            // fiber may also give way while it waits on a transaction barrier, so the
            // arrivals are counted, not assumed from the order of turns).
            let generation = block.barrier.arrive();
            while !block.barrier.passed(generation) {
                suspend_fiber(block);
            }
        }
        Run::Threads => match &block.turns {
            Some(turns) => turns.barrier(rank),
            None => {
                if block.barrier.wait().is_err() {
                    // Another thread of the block panicked: unwind without a second message.
                    resume_unwind(Box::new(Aborted));
                }
            }
        },
    }
}

/// `barrier.cluster` for thread `rank` of `block`: every live thread of every block of
/// `cluster` meets there, as the blocks' threads run.
pub(super) fn cluster_barrier(cluster: &Cluster, block: &BlockState, rank: usize) {
    match block.run {
        Run::OneByOne => resume_unwind(Box::new(NeedsBarrier)),
        Run::Fibers => {
            let generation = cluster.barrier.arrive();
            while !cluster.barrier.passed(generation) {
                suspend_fiber(block);
            }
        }
        Run::Threads => match &block.turns {
            // One thread of each block runs at a time: the others of this block take
            // their turns while this one waits for the other blocks.
            Some(turns) => {
                let generation = cluster.barrier.arrive();
                while !cluster.barrier.passed(generation) {
                    if cluster.barrier.aborted() {
                        resume_unwind(Box::new(Aborted));
                    }
                    turns.exchange(rank);
                }
            }
            None => {
                if cluster.barrier.wait().is_err() {
                    resume_unwind(Box::new(Aborted));
                }
            }
        },
    }
}

/// Why [`run_blocks`] stopped early.
pub(super) enum Stop {
    Failed(LaunchError),
    /// A thread reached a barrier while its block's threads ran one after another;
    /// the blocks before its block (`done` of them) ran and were handed on.
    NeedsBarrier {
        done: usize,
    },
}

/// The stack of an emulated thread, an OS thread's or a fiber's: kernels keep little
/// on theirs.
const THREAD_STACK_BYTES: usize = 256 * 1024;

/// What receives each block's recording as the block ends (to read, or take from);
/// `Break` ends the launch there.
pub(super) type Each<'a> = &'a mut dyn FnMut(&mut Recording) -> ControlFlow<()>;

/// Where a block's threads put their logs: the block's recording, and the emptied
/// logs of threads that have returned, for the next threads to fill (a block's logs
/// take as much again the next block, and growing them anew each time cost more than
/// keeping them).
#[derive(Default)]
struct Logs {
    block: Mutex<Recording>,
    spare: Mutex<Vec<Vec<Access>>>,
}

impl Logs {
    fn spare(&self) -> Vec<Access> {
        self.spare
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default()
    }

    /// Appends a returned thread's log and counts to the block's, keeping its storage.
    fn append(&self, mut log: Vec<Access>, executions: impl Iterator<Item = Executions>, tensor_flops: u64) {
        let mut block = self.block.lock().unwrap_or_else(|p| p.into_inner());
        block.accesses.append(&mut log);
        block.executions.extend(executions);
        block.tensor_flops += tensor_flops;
        block.tensor_threads += u64::from(tensor_flops > 0);
        drop(block);
        self.spare.lock().unwrap_or_else(|p| p.into_inner()).push(log);
    }
}

/// Runs `blocks`, each block's threads as `run` says, a cluster's blocks together
/// (`blocks` holds whole clusters, each in order), and hands each cluster's recording
/// to `each` as soon as its blocks have run, in order.
pub(super) fn run_blocks(
    config: &LaunchConfig,
    blocks: &[usize],
    kernel: &(impl Fn() + Sync),
    run: Run,
    each: Each,
) -> Result<(), Stop> {
    let block = config.block;
    let (threads, size) = (block.count(), config.cluster_size());
    let log = Logs::default();
    let failure: Mutex<Option<Stop>> = Mutex::new(None);
    let fail = |e: Stop| {
        failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
    };
    let new_state = || BlockState {
        run,
        barrier: BlockBarrier::new(threads),
        turns: schedule::Turns::new(config.schedule, threads),
        warps: warp::Warps::new(threads, 32),
        warpgroups: warp::Warps::new(threads, 128),
        hopper: Default::default(),
        statics: Mutex::new(HashMap::new()),
        dynamic: Mutex::new(Kib::segment(config.dynamic_shared_bytes)),
        logged: AtomicUsize::new(0),
    };
    let new_cluster = || Cluster {
        blocks: (0..size).map(|_| new_state()).collect(),
        barrier: BlockBarrier::new(size * threads),
    };
    let failed = || failure.lock().unwrap_or_else(|p| p.into_inner()).is_some();
    // After each cluster: its recording goes on, unless a thread failed; whether to stop.
    let mut done = 0;
    let mut hand_on = || {
        let mut recording = log.block.lock().unwrap_or_else(|p| p.into_inner());
        let mut failure = failure.lock().unwrap_or_else(|p| p.into_inner());
        let stop = match failure.as_mut() {
            Some(Stop::NeedsBarrier { done: at }) => {
                *at = done;
                true
            }
            Some(Stop::Failed(_)) => true,
            None => {
                done += size;
                each(&mut recording).is_break()
            }
        };
        recording.accesses.clear();
        recording.executions.clear();
        recording.tensor_flops = 0;
        recording.tensor_threads = 0;
        stop
    };
    // Member i of a cluster's crew is thread i % threads of its block i / threads.
    let member = |first: usize, cluster: &Cluster, i: usize| {
        run_thread(
            config,
            cluster,
            i / threads,
            kernel,
            first + i / threads,
            i % threads,
            &log,
            &fail,
        )
    };
    match run {
        Run::OneByOne => {
            for unit in blocks.chunks(size) {
                let cluster = new_cluster();
                for i in 0..size * threads {
                    member(unit[0], &cluster, i);
                    if failed() {
                        break;
                    }
                }
                if hand_on() {
                    break;
                }
            }
        }
        Run::Fibers => {
            // The stacks, made once for the launch.
            let mut stacks = Vec::with_capacity(size * threads);
            for _ in 0..size * threads {
                match DefaultStack::new(THREAD_STACK_BYTES) {
                    Ok(stack) => stacks.push(stack),
                    Err(e) => return Err(Stop::Failed(LaunchError::Spawn(e.to_string()))),
                }
            }
            for unit in blocks.chunks(size) {
                let cluster = new_cluster();
                stacks = run_fibers(stacks, |i| member(unit[0], &cluster, i));
                if hand_on() {
                    break;
                }
            }
        }
        Run::Threads => {
            // One OS thread for each thread of a cluster, reused from cluster to
            // cluster: spawning them afresh for every block cost more than most
            // blocks' work.
            let crew = Crew::new(size * threads);
            let (crew, member) = (&crew, &member);
            std::thread::scope(|s| {
                for i in 0..size * threads {
                    let run = move |first: usize, cluster: &Cluster| member(first, cluster, i);
                    let spawned = std::thread::Builder::new()
                        .stack_size(THREAD_STACK_BYTES)
                        .spawn_scoped(s, move || crew.work(run));
                    if let Err(e) = spawned {
                        // Those already started are waiting for a block: send them home.
                        fail(Stop::Failed(LaunchError::Spawn(e.to_string())));
                        crew.dismiss();
                        return;
                    }
                }
                for unit in blocks.chunks(size) {
                    crew.run_block(unit[0], new_cluster());
                    if hand_on() {
                        break;
                    }
                }
                crew.dismiss();
            });
        }
    }
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(stop) => Err(stop),
        None => Ok(()),
    }
}

/// Runs `thread(t)` for each thread `t` of a block as a coroutine on this OS thread,
/// one on each of `stacks`, and gives the stacks back. Each runs until it returns or
/// reaches a barrier; once every one that has not returned waits at the barrier, they
/// all go on, in the same order.
fn run_fibers(stacks: Vec<DefaultStack>, thread: impl Fn(usize)) -> Vec<DefaultStack> {
    let thread = &thread;
    let mut fibers: Vec<Coroutine<(), (), (), DefaultStack>> = stacks
        .into_iter()
        .enumerate()
        .map(|(t, stack)| {
            let body = move |yielder: &Yielder<(), ()>, ()| {
                YIELDER.set(yielder);
                thread(t);
            };
            // SAFETY: every fiber is driven to its end below, while `thread` and what
            // it borrows live.
            unsafe { Coroutine::with_stack_unchecked(stack, body) }
        })
        .collect();
    loop {
        let mut waiting = false;
        for fiber in fibers.iter_mut().filter(|f| !f.done()) {
            waiting |= matches!(fiber.resume(()), CoroutineResult::Yield(()));
        }
        if !waiting {
            break;
        }
    }
    fibers.into_iter().map(Coroutine::into_stack).collect()
}

/// The OS threads of a threaded launch, one for each thread of a cluster's blocks,
/// handed one cluster after another.
struct Crew {
    shift: Mutex<Shift>,
    /// A block is posted, or the crew is dismissed.
    posted: Condvar,
    /// The last thread of the posted block has returned.
    finished: Condvar,
    threads: usize,
}

struct Shift {
    /// Counts the posts, so a thread takes each block once.
    post: u64,
    /// The first block of the cluster to run and the cluster's state; `None` once the
    /// crew is dismissed.
    block: Option<(usize, std::sync::Arc<Cluster>)>,
    /// Threads of the posted block that have returned.
    done: usize,
}

impl Crew {
    fn new(threads: usize) -> Self {
        Crew {
            shift: Mutex::new(Shift {
                post: 0,
                block: None,
                done: 0,
            }),
            posted: Condvar::new(),
            finished: Condvar::new(),
            threads,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shift> {
        self.shift.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One OS thread's loop: runs its thread of each posted block until dismissed.
    fn work(&self, run: impl Fn(usize, &Cluster)) {
        let mut seen = 0;
        loop {
            let (b, state) = {
                let mut shift = self.lock();
                while shift.post == seen {
                    shift = self.posted.wait(shift).unwrap_or_else(|e| e.into_inner());
                }
                seen = shift.post;
                match &shift.block {
                    Some((b, state)) => (*b, std::sync::Arc::clone(state)),
                    None => return,
                }
            };
            run(b, &state);
            drop(state);
            let mut shift = self.lock();
            shift.done += 1;
            if shift.done == self.threads {
                self.finished.notify_one();
            }
        }
    }

    /// Posts the cluster whose first block is `b` to every thread of the crew and waits
    /// until all have returned.
    fn run_block(&self, b: usize, state: Cluster) {
        let mut shift = self.lock();
        shift.block = Some((b, std::sync::Arc::new(state)));
        shift.done = 0;
        shift.post += 1;
        self.posted.notify_all();
        while shift.done < self.threads {
            shift = self.finished.wait(shift).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Sends every thread of the crew home.
    fn dismiss(&self) {
        let mut shift = self.lock();
        shift.block = None;
        shift.post += 1;
        self.posted.notify_all();
    }
}

/// Runs emulated thread `t` of block `b`, rank `rank` of `cluster`, on the current OS
/// thread and appends its log.
#[allow(clippy::too_many_arguments)]
fn run_thread(
    config: &LaunchConfig,
    cluster: &Cluster,
    rank: usize,
    kernel: &(impl Fn() + Sync),
    b: usize,
    t: usize,
    log: &Logs,
    fail: &impl Fn(Stop),
) {
    let (grid, block) = (config.grid, config.block);
    let (block_idx, thread_idx) = (unflatten(b, grid), unflatten(t, block));
    let state = &cluster.blocks[rank];
    let ctx = ThreadCtx {
        thread_idx,
        block_idx,
        block_dim: block,
        grid_dim: grid,
        cluster,
        rank,
        config,
        linear_block: b,
        linear_thread: t,
        counters: Default::default(),
        epoch: 0,
        log: log.spare(),
        copies: AsyncCopies::default(),
        wgmma: Default::default(),
        tensor_flops: 0,
    };
    // SAFETY: the context is removed below, before `cluster` and `config` go out of
    // scope; nothing else keeps it.
    let ctx: ThreadCtx<'static> = unsafe { core::mem::transmute(ctx) };
    CURRENT.with(|c| *c.borrow_mut() = Some(ctx));
    SLOT.set(CURRENT.with(RefCell::as_ptr));
    ADDRESSES_ONLY.set(config.addresses_only);
    let turn = state.turns.as_ref().map(|turns| turns.start(t));
    let outcome = catch_unwind(AssertUnwindSafe(kernel));
    drop(turn);
    let ctx = CURRENT.with(|c| c.borrow_mut().take());
    ADDRESSES_ONLY.set(false);
    match outcome {
        Err(payload) if payload.is::<NeedsBarrier>() => fail(Stop::NeedsBarrier { done: 0 }),
        Err(payload) if !payload.is::<Aborted>() => {
            fail(Stop::Failed(if payload.is::<LogFull>() {
                LaunchError::TooLarge {
                    limit: config.log_limit.unwrap_or(0),
                }
            } else {
                LaunchError::Panicked {
                    block: block_idx,
                    thread: thread_idx,
                    message: panic_message(payload.as_ref()),
                }
            }));
            // The whole cluster stops: its other blocks may be waiting on this one.
            for state in &cluster.blocks {
                state.barrier.abort();
                state.warps.abort();
                state.warpgroups.abort();
            }
            cluster.barrier.abort();
        }
        _ => {}
    }
    state.barrier.leave();
    cluster.barrier.leave();
    state.warps.leave(t);
    state.warpgroups.leave(t);
    if let Some(ctx) = ctx {
        log.append(ctx.log, ctx.counters.into_executions(b, t), ctx.tensor_flops);
    }
}
