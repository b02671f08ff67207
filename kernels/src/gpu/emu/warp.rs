//! Warp-collective instructions on the emulator: the lanes of a warp exchange words.
//!
//! `mma.sync` and `ldmatrix` are executed by a warp's 32 lanes together: each lane
//! contributes registers (or an address) and receives values other lanes contributed.
//! The emulator runs lanes as OS threads, so such an instruction is a warp-level
//! exchange ([`warp_exchange`]): every lane deposits its words, waits until all
//! 32 have, and reads every lane's words; the instruction's own semantics (which lane
//! gets what) are computed from that in [`crate::gpu`], where the GPU side lives too.
//!
//! Under a concurrent schedule the wait is a per-warp barrier. Under a serial schedule
//! ([`super::schedule`]) a lane ends its turn at the exchange, as at `sync_threads()`:
//! when its next turn comes every other thread has had one, so its warp's lanes have
//! all deposited, provided every warp makes the same warp-collective calls between
//! block barriers (the kernels' warp-uniform tiles do); otherwise the emulator says so
//! instead of computing with missing lanes.

use std::boxed::Box;
use std::panic::resume_unwind;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::vec::Vec;

use super::Aborted;
use super::{BlockState, with_thread};

/// The exchanges of one block: one per warp.
pub(super) struct Warps {
    warps: Vec<Exchange>,
    /// Lanes of a full group: 32 (a warp) or 128 (a warpgroup).
    width: usize,
}

struct Exchange {
    state: Mutex<ExchangeState>,
    done: Condvar,
}

struct ExchangeState {
    /// Lanes of the block in this group (its width but in a partial last one).
    lanes: usize,
    /// Lanes of a full group.
    width: usize,
    /// Completed exchanges.
    generation: u64,
    /// Lanes that deposited into the current one, and their words (lane-major).
    arrived: usize,
    deposits: Vec<u32>,
    /// Every lane's words of the last completed exchange.
    result: Vec<u32>,
    /// Lanes of this warp that returned from the kernel.
    exited: usize,
    aborted: bool,
}

/// Why a lane cannot complete an exchange.
pub(super) enum Stalled {
    /// Another thread of the block panicked: unwind quietly.
    Aborted,
    /// The instruction needs every lane of a full warp: the message says which is missing.
    Incomplete(std::string::String),
}

impl Warps {
    /// The exchanges of a block of `threads`, in groups of `width` lanes.
    pub(super) fn new(threads: usize, width: usize) -> Warps {
        let warps = (0..threads.div_ceil(width))
            .map(|w| Exchange {
                state: Mutex::new(ExchangeState {
                    lanes: (threads - width * w).min(width),
                    width,
                    generation: 0,
                    arrived: 0,
                    deposits: Vec::new(),
                    result: Vec::new(),
                    exited: 0,
                    aborted: false,
                }),
                done: Condvar::new(),
            })
            .collect();
        Warps { warps, width }
    }

    /// Lane `lane` of warp `warp` deposits `words`; returns the generation it joined
    /// and whether it completed it (it was the last lane to arrive).
    pub(super) fn deposit(&self, warp: usize, lane: usize, words: &[u32]) -> Result<(u64, bool), Stalled> {
        let x = &self.warps[warp];
        let mut s = x.lock();
        s.usable(warp)?;
        let n = words.len();
        let width = self.width;
        if s.arrived == 0 {
            s.deposits.clear();
            s.deposits.resize(width * n, 0);
        } else if s.deposits.len() != width * n {
            return Err(Stalled::Incomplete(std::format!(
                "the lanes of warp {warp} passed different numbers of words to one warp-collective instruction"
            )));
        }
        s.deposits[lane * n..(lane + 1) * n].copy_from_slice(words);
        s.arrived += 1;
        let generation = s.generation;
        let complete = s.arrived == width;
        if complete {
            s.result = core::mem::take(&mut s.deposits);
            s.arrived = 0;
            s.generation += 1;
        }
        // Completed, or no lane is left to complete it (one returned): wake the waiters.
        if complete || s.arrived + s.exited == s.lanes {
            x.done.notify_all();
        }
        Ok((generation, complete))
    }

    /// Waits (concurrent schedule) until exchange `generation` of `warp` completes and
    /// returns every lane's words.
    pub(super) fn wait(&self, warp: usize, generation: u64) -> Result<Vec<u32>, Stalled> {
        let x = &self.warps[warp];
        let mut s = x.lock();
        while s.generation == generation {
            s.usable(warp)?;
            if s.arrived + s.exited == s.lanes {
                return Err(Stalled::Incomplete(std::format!(
                    "a lane of warp {warp} returned from the kernel while the others wait for it at a warp-collective instruction"
                )));
            }
            s = x.done.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        Ok(s.result.clone())
    }

    /// The words of exchange `generation` after a serial turn: every lane of the warp
    /// must have deposited during the round.
    pub(super) fn collect(&self, warp: usize, generation: u64) -> Result<Vec<u32>, Stalled> {
        let s = self.warps[warp].lock();
        if s.aborted {
            return Err(Stalled::Aborted);
        }
        if s.generation == generation {
            return Err(Stalled::Incomplete(std::format!(
                "under a serial schedule every warp must make the same warp-collective calls between \
                 barriers, but {} lane(s) of {} {warp} had not reached this one after a full round",
                self.width - s.arrived,
                noun(self.width)
            )));
        }
        Ok(s.result.clone())
    }

    /// A thread returned from the kernel: lanes waiting for it stop waiting.
    pub(super) fn leave(&self, thread: usize) {
        let x = &self.warps[thread / self.width];
        let mut s = x.lock();
        s.exited += 1;
        // Only lanes that deposited wait (a wake is a system call, and every emulated
        // thread leaves).
        if s.arrived > 0 {
            x.done.notify_all();
        }
    }

    pub(super) fn abort(&self) {
        for x in &self.warps {
            x.lock().aborted = true;
            x.done.notify_all();
        }
    }
}

impl Exchange {
    fn lock(&self) -> MutexGuard<'_, ExchangeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ExchangeState {
    fn usable(&self, warp: usize) -> Result<(), Stalled> {
        if self.aborted {
            return Err(Stalled::Aborted);
        }
        if self.lanes < self.width {
            return Err(Stalled::Incomplete(std::format!(
                "a {}-collective instruction needs {} lanes, but {} {warp} of this block has {}",
                noun(self.width),
                self.width,
                noun(self.width),
                self.lanes
            )));
        }
        Ok(())
    }
}

/// A warp-collective exchange: this lane's `words` go to every lane of its warp, and
/// every lane's words come back once all 32 lanes have called it, lane after lane
/// (lane l's at `l * words.len()..`; see this module's opening). The GPU side of such an instruction
/// does this in hardware; its emulated side ([`crate::gpu::mma`], `ldmatrix`) computes
/// what each lane receives from this.
///
/// In an [addresses-only](super::LaunchConfig::addresses_only) launch, whose values are not
/// faithful anyway (loads read zeros), nothing is exchanged: every lane gets its own
/// words back 32 times, and the lanes need not meet, which keeps `coalesce explain` of
/// a tensor-core kernel as fast as of any other.
///
/// # Panics
/// In a warp of fewer than 32 threads, or when a lane of the warp returned from the
/// kernel without making the call (the GPU would hang or fault).
pub fn warp_exchange(words: &[u32]) -> Vec<u32> {
    exchange(words, 32)
}

/// [`warp_exchange`] among the 128 threads of a warpgroup (`wgmma`).
pub(super) fn warpgroup_exchange(words: &[u32]) -> Vec<u32> {
    exchange(words, 128)
}

/// `bar.sync` of a warpgroup's 128 threads: an exchange of nothing.
pub fn sync_warpgroup() {
    exchange(&[], 128);
}

fn exchange(words: &[u32], width: usize) -> Vec<u32> {
    if with_thread(|t| t.config.addresses_only) {
        return words.repeat(width);
    }
    // The block state outlives every thread in it (as in sync_threads).
    let (block, rank): (*const BlockState, usize) =
        with_thread(|t| (t.block() as *const BlockState, t.linear_thread));
    // SAFETY: see above.
    let block = unsafe { &*block };
    let groups = if width == 32 {
        &block.warps
    } else {
        &block.warpgroups
    };
    let (group, lane) = (rank / width, rank % width);
    let (generation, _) = groups.deposit(group, lane, words).unwrap_or_else(stalled);
    match &block.turns {
        Some(turns) => {
            turns.exchange(rank);
            groups.collect(group, generation)
        }
        None => groups.wait(group, generation),
    }
    .unwrap_or_else(stalled)
}

/// A lane that cannot complete a warp exchange: quietly unwinds when the block was
/// aborted by another thread's panic, else panics with the reason.
fn stalled<T>(why: Stalled) -> T {
    match why {
        Stalled::Aborted => resume_unwind(Box::new(Aborted)),
        Stalled::Incomplete(message) => panic!("{message}"),
    }
}

/// What a group of `width` lanes is called.
fn noun(width: usize) -> &'static str {
    if width == 32 { "warp" } else { "warpgroup" }
}
