//! Access recording: every global and shared access of an emulated thread, logged
//! with the kernel source line it came from ([`Access`]) when the launch records, and
//! every execution counted ([`Executions`]), recorded or not.

use core::panic::Location;
use std::vec::Vec;

use super::with_thread;

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
}

/// A recorded launch: the accesses logged, and every thread's execution counts.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    pub accesses: Vec<Access>,
    pub executions: Vec<Executions>,
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
