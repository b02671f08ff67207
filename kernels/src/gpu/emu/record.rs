//! Access recording: every global and shared access of an emulated thread, logged
//! with the kernel source line it came from ([`Access`]) when the launch records, and
//! every execution counted ([`Executions`]), recorded or not.

use core::ops::Range;
use core::panic::Location;
use core::sync::atomic::Ordering;
use std::boxed::Box;
use std::panic::resume_unwind;
use std::vec::Vec;

use super::LogFull;

use super::{SLOT, ThreadCtx, with_thread};

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
    /// Barriers the thread had passed (`sync_threads`, `barrier.cluster`, a completed
    /// wait on a transaction barrier): accesses of one thread with the same epoch lie
    /// between the same two barriers.
    pub epoch: usize,
    pub bytes: usize,
    /// Half of an asynchronous copy (`cp.async`): its global read or its shared
    /// write. The GPU issues both as one `LDGSTS` instruction, not as a load and a
    /// store of its own.
    pub async_copy: bool,
    /// A row of a box the copy engine (TMA) reads or writes: one request of the
    /// issuing thread over the whole row, which the copy engine fetches as whole
    /// sectors without a warp's addresses.
    pub bulk: bool,
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
/// ([`super::LaunchConfig::max_occurrences`]) back to the whole run, site by site.
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
    /// Those executed while the thread had warpgroup MMAs in flight (issued, not yet
    /// retired by a wait): a tile's stores that run beside the tensor cores.
    pub beside_mma: usize,
}

/// A recorded launch: the accesses logged, and every thread's execution counts.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    pub accesses: Vec<Access>,
    pub executions: Vec<Executions>,
    /// FLOPs of the tensor-core instructions (`mma.sync`, `wgmma`) its threads
    /// executed: what the blocks compute, rows of a tile past the matrix's edge too.
    pub tensor_flops: u64,
    /// Threads that executed any of them: a warp-specialised block's consumers, not
    /// its producer, which only issues copies.
    pub tensor_threads: u64,
}

/// The widest access one instruction makes: `ld.global.v4.b32`, 16 bytes.
const MAX_ACCESS: usize = 16;

/// Where one access went: its space, and for shared memory the array (start, symbol).
#[derive(Clone, Copy)]
struct Target {
    space: Space,
    array: (usize, &'static str),
    /// A copy engine row: one access however many bytes.
    bulk: bool,
}

const GLOBAL: Target = Target {
    space: Space::Global,
    array: (0, ""),
    bulk: false,
};

/// One thread's count of one site's executions in one direction and space.
struct Counter {
    site: &'static Location<'static>,
    op: Op,
    space: Space,
    executions: usize,
    recorded: usize,
    beside_mma: usize,
    /// The epoch in which the site's recording reached the cap.
    capped_in: Option<usize>,
}

/// One emulated thread's execution counters, one per site it executed, in the order it
/// first did; a short list, as a kernel has a handful of sites.
#[derive(Default)]
pub(super) struct Counters {
    list: Vec<Counter>,
    /// Where the last access found its counter.
    last: usize,
    /// By a hash of the site's address, direction and space: where its counter was
    /// last found, plus one (0: nowhere yet).
    recent: [u16; RECENT],
}

/// Entries of [`Counters::recent`].
const RECENT: usize = 32;

/// The [`Counters::recent`] entry of an access.
#[inline(always)]
fn recent_slot(site: &'static Location<'static>, op: Op, space: Space) -> usize {
    let at = site as *const Location<'static> as usize;
    ((at >> 3) ^ (at >> 9) ^ ((op as usize) << 1) ^ space as usize) % RECENT
}

impl Counters {
    /// Where `site`'s counter is when the last access, or [`Counters::recent`], found
    /// it there (by address, as [`Counters::find`] looks first).
    #[inline(always)]
    fn hot(&self, site: &'static Location<'static>, op: Op, space: Space) -> Option<usize> {
        let same = |c: &Counter| core::ptr::eq(c.site, site) && c.op == op && c.space == space;
        if self.list.get(self.last).is_some_and(same) {
            return Some(self.last);
        }
        let at = usize::from(self.recent[recent_slot(site, op, space)]).checked_sub(1)?;
        self.list.get(at).is_some_and(same).then_some(at)
    }

    /// The index of the counter of `site` in `space` and direction `op`, a new one if
    /// the thread has none yet. Every access of a recording launch looks its counter
    /// up, most of them after their site stopped being recorded: sites are compared by
    /// address first (one call site's `Location` is one static), by value only where
    /// the address differs (a site inlined into two codegen units may have two).
    fn find(&mut self, site: &'static Location<'static>, op: Op, space: Space) -> usize {
        let i = match self.hot(site, op, space) {
            Some(i) => i,
            None => {
                let same = |c: &Counter| core::ptr::eq(c.site, site) && c.op == op && c.space == space;
                let by_value = |c: &Counter| *c.site == *site && c.op == op && c.space == space;
                match self.list.iter().position(same) {
                    Some(i) => i,
                    None => match self.list.iter().position(by_value) {
                        Some(i) => i,
                        None => {
                            self.list.push(Counter {
                                site,
                                op,
                                space,
                                executions: 0,
                                recorded: 0,
                                beside_mma: 0,
                                capped_in: None,
                            });
                            self.list.len() - 1
                        }
                    },
                }
            }
        };
        if let Ok(entry) = u16::try_from(i + 1) {
            self.recent[recent_slot(site, op, space)] = entry;
        }
        self.last = i;
        i
    }

    /// The counts of thread `thread` of block `block`, as the launch returns them.
    pub(super) fn into_executions(self, block: usize, thread: usize) -> impl Iterator<Item = Executions> {
        self.list.into_iter().map(move |c| Executions {
            block,
            thread,
            site: c.site,
            op: c.op,
            space: c.space,
            executions: c.executions,
            recorded: c.recorded,
            beside_mma: c.beside_mma,
        })
    }
}

/// Whether `bytes` at `addr` lie inside one of `bounds`.
fn in_bounds(bounds: &[Range<usize>], addr: usize, bytes: usize) -> bool {
    bounds
        .iter()
        .any(|r| r.start <= addr && addr.checked_add(bytes).is_some_and(|end| end <= r.end))
}

/// The current emulated thread's context, where SLOT finds one.
#[inline(always)]
fn current() -> Option<&'static mut ThreadCtx<'static>> {
    let slot = SLOT.get();
    if slot.is_null() {
        return None;
    }
    // SAFETY: SLOT points to this OS thread's CURRENT, set before the emulated thread
    // running the caller started. The context is borrowed only for one access's
    // bookkeeping, during which the kernel's code runs nothing else and nothing
    // borrows CURRENT (with_thread is never entered from here).
    unsafe { (*slot).as_mut() }
}

/// [`record`]'s fast path, for an access that is only counted: outside a recording
/// launch, or of a site past its cap (and, in shared memory, outside the epoch it was
/// capped in), found where the last access's counter was, in one piece, in bounds.
/// That is most of a long kernel's accesses. `None` where [`record`] must run.
#[inline(always)]
fn count_only(
    site: &'static Location<'static>,
    addr: usize,
    bytes: usize,
    align: usize,
    op: Op,
    space: Space,
) -> Option<bool> {
    let t = current()?;
    let config = t.config;
    let global = space == Space::Global;
    if global && !config.bounds.is_empty() && !in_bounds(&config.bounds, addr, bytes) {
        return None;
    }
    if !config.record {
        return Some(global && config.addresses_only);
    }
    let max = config.max_occurrences?;
    if bytes > align.clamp(1, MAX_ACCESS) {
        return None;
    }
    let i = t.counters.hot(site, op, space)?;
    let counter = &mut t.counters.list[i];
    // A global-only launch logs no shared access, whatever its count.
    let logged = if global || !config.global_only {
        counter.executions < max || (!global && counter.capped_in == Some(t.epoch))
    } else {
        false
    };
    if logged {
        return None;
    }
    counter.executions += 1;
    counter.beside_mma += usize::from(t.wgmma.in_flight());
    t.counters.last = i;
    Some(global && config.addresses_only)
}

/// Logs one access; returns true when the access must not touch memory
/// ([`LaunchConfig::addresses_only`]).
#[track_caller]
#[inline(always)]
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
    if let Some(skip) = count_only(site, addr, bytes, align, op, space) {
        return skip;
    }
    record_slow(site, to, addr, bytes, align, op, async_copy, copied_from)
}

/// [`record`] in full.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn record_slow(
    site: &'static Location<'static>,
    to: Target,
    addr: usize,
    bytes: usize,
    align: usize,
    op: Op,
    async_copy: bool,
    copied_from: Option<usize>,
) -> bool {
    let space = to.space;
    let Some(t) = current() else {
        // Outside a launch: with_thread says so.
        return with_thread(|_| false);
    };
    {
        let config = t.config;
        if space == Space::Global && !config.bounds.is_empty() && !in_bounds(&config.bounds, addr, bytes) {
            panic!("{site}: {op:?} of {bytes} bytes at {addr:#x} is outside every buffer of the launch");
        }
        if !config.record {
            return space == Space::Global && config.addresses_only;
        }
        // A value wider than one instruction can move (a 24-byte struct of f32s) is as
        // many accesses as the GPU makes: one per aligned piece, each piece a
        // warp-wide instruction of its own.
        let piece = if to.bulk {
            bytes.max(1)
        } else {
            align.clamp(1, MAX_ACCESS).min(bytes.max(1))
        };
        let epoch = t.epoch;
        let beside_mma = usize::from(t.wgmma.in_flight());
        let i = t.counters.find(site, op, space);
        let mut offset = 0;
        while offset < bytes.max(1) {
            let counter = &mut t.counters.list[i];
            let occurrence = counter.executions;
            counter.executions += 1;
            counter.beside_mma += beside_mma;
            // Shared accesses are recorded past the cap up to the next barrier, so the
            // log never cuts a run of them that ptxas may merge into one vector access
            // (coalesce's explain::vectorize). The copy engine's box rows are all
            // recorded: a box is one instruction, and a cap on its rows would log only
            // the first part of each box (explain's spread counts the pages they touch).
            let record = !(config.global_only && space == Space::Shared)
                && match config.max_occurrences {
                    None => true,
                    Some(max) => {
                        occurrence < max
                            || to.bulk
                            || (space == Space::Shared && counter.capped_in == Some(epoch))
                    }
                };
            if config.max_occurrences.is_some_and(|max| occurrence + 1 == max) {
                counter.capped_in = Some(epoch);
            }
            if record {
                counter.recorded += 1;
                if let Some(limit) = config.log_limit {
                    let logged = t.block().logged.fetch_add(1, Ordering::Relaxed) + 1;
                    if logged.saturating_mul(size_of::<Access>()) > limit {
                        resume_unwind(Box::new(LogFull));
                    }
                }
                t.log.push(Access {
                    block: t.linear_block,
                    thread: t.linear_thread,
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
                    bulk: to.bulk,
                    copied_from: copied_from.map(|from| from + offset),
                });
            }
            offset += piece;
        }
        space == Space::Global && config.addresses_only
    }
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
        bulk: false,
    };
    record(to, offset, bytes, bytes, op, false, None);
}

/// Records one row of a box the copy engine reads (`Op::Load`) or writes: one access of
/// the issuing thread over `bytes` consecutive bytes at `addr`.
#[track_caller]
pub(crate) fn record_bulk(addr: usize, bytes: usize, op: Op) -> bool {
    let to = Target { bulk: true, ..GLOBAL };
    record(to, addr, bytes, bytes, op, false, None)
}

/// Panics unless `addr..addr + bytes` lies in the current block's shared memory (its
/// dynamic segment or one of its static arrays): a box must fit where it lands.
#[track_caller]
pub(crate) fn check_shared(addr: usize, bytes: usize) {
    with_thread(|t| {
        let inside = |start: usize, len: usize| start <= addr && addr + bytes <= start + len;
        let (start, len) = t.block().dynamic_segment();
        let statics = t.block().statics.lock().unwrap_or_else(|e| e.into_inner());
        let ok = inside(start, len)
            || statics
                .values()
                .any(|s| inside(s.as_ptr() as usize, s.len() * 16));
        assert!(
            ok,
            "a box of {bytes} bytes at shared address {addr:#x} does not fit in the block's shared memory"
        );
    });
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
        bulk: false,
    };
    record(to, offset, bytes, bytes, Op::Store, true, read);
    skip
}
