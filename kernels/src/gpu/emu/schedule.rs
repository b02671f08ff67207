//! Deterministic schedules for an emulated block: its threads take turns, one at a
//! time, each running until its next `sync_threads()` or its end.
//!
//! Concurrent OS threads make a missing barrier a race that may or may not show. Under
//! a serial schedule it always shows the same way: with [`Schedule::Reverse`] the
//! highest-ranked thread runs first, so a thread that reads shared memory another
//! thread writes, without a barrier between, reads it before it was written (the
//! emulator fills shared memory with NaN bytes). A correct kernel gives the same result
//! under every schedule, because a barrier ends a thread's turn only after every other
//! live thread has had its turn in the same phase.
//!
//! A warp-collective instruction (`warp.rs`) ends a turn too, so a lane resumes
//! after each of its warp's lanes has deposited. Turns line up with barriers only while
//! every thread makes the same sequence of barriers and warp-collective calls; a thread
//! that resumes from a barrier some live thread has not reached says so (a panic that
//! fails the launch) rather than run ahead of it.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::vec::Vec;

/// The order in which an emulated block's threads run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Schedule {
    /// All threads at once, as OS threads: `sync_threads()` is a real barrier.
    #[default]
    Concurrent,
    /// One thread at a time in rank order (x fastest), each until its next barrier.
    Forward,
    /// One thread at a time, highest rank first: a thread reads what lower-ranked
    /// threads write before they run, unless a barrier separates the two.
    Reverse,
}

/// Whose turn it is in one block under a serial schedule.
pub(super) struct Turns {
    /// Thread ranks in the order they take turns, phase after phase.
    order: Vec<usize>,
    state: Mutex<TurnState>,
    /// By rank: where that thread waits for its turn (one each, so a turn wakes one thread).
    wake: Vec<Condvar>,
}

struct TurnState {
    /// Index into `order` of the thread that may run.
    pos: usize,
    /// By rank: the thread has returned (or panicked) and takes no more turns.
    done: Vec<bool>,
    /// By rank: the barriers the thread has reached.
    barriers: Vec<u64>,
    live: usize,
}

impl Turns {
    /// `None` for [`Schedule::Concurrent`].
    pub(super) fn new(schedule: Schedule, threads: usize) -> Option<Turns> {
        let order: Vec<usize> = match schedule {
            Schedule::Concurrent => return None,
            Schedule::Forward => (0..threads).collect(),
            Schedule::Reverse => (0..threads).rev().collect(),
        };
        Some(Turns {
            order,
            state: Mutex::new(TurnState {
                pos: 0,
                done: std::vec![false; threads],
                barriers: std::vec![0; threads],
                live: threads,
            }),
            wake: (0..threads).map(|_| Condvar::new()).collect(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, TurnState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait_for_turn(&self, rank: usize) {
        let mut s = self.lock();
        while self.order[s.pos] != rank {
            s = self.wake[rank].wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Ends the running thread's turn: the next live thread in the order runs.
    fn pass(&self, rank: usize, finished: bool) {
        let mut s = self.lock();
        if finished {
            s.done[rank] = true;
            s.live -= 1;
        }
        if s.live > 0 {
            let n = self.order.len();
            loop {
                s.pos = (s.pos + 1) % n;
                if !s.done[self.order[s.pos]] {
                    break;
                }
            }
            self.wake[self.order[s.pos]].notify_one();
        }
    }

    /// Waits for thread `rank`'s first turn; the guard ends its last one when the
    /// thread returns or panics, so the others never wait for it forever.
    pub(super) fn start(&self, rank: usize) -> LastTurn<'_> {
        self.wait_for_turn(rank);
        LastTurn { turns: self, rank }
    }

    /// `sync_threads()`: every other live thread runs up to its barrier (or its end)
    /// before this one goes on.
    ///
    /// # Panics
    /// When a live thread's turn ended elsewhere (at a warp-collective instruction)
    /// before this barrier: going on would let this thread past a barrier it has not
    /// reached.
    pub(super) fn barrier(&self, rank: usize) {
        let reached = {
            let mut s = self.lock();
            s.barriers[rank] += 1;
            s.barriers[rank]
        };
        self.pass(rank, false);
        self.wait_for_turn(rank);
        let s = self.lock();
        if let Some(behind) = (0..s.done.len()).find(|&r| !s.done[r] && s.barriers[r] < reached) {
            drop(s);
            panic!(
                "under a serial schedule every thread must make the same barrier and warp-collective \
                 calls: thread {rank} reached barrier {reached} while thread {behind} stopped short of it"
            );
        }
    }

    /// A warp-collective instruction: every other live thread takes a turn, up to its
    /// own next one (or a barrier), before this one goes on.
    pub(super) fn exchange(&self, rank: usize) {
        self.pass(rank, false);
        self.wait_for_turn(rank);
    }
}

/// Held by a thread while it runs under a serial schedule.
pub(super) struct LastTurn<'a> {
    turns: &'a Turns,
    rank: usize,
}

impl Drop for LastTurn<'_> {
    fn drop(&mut self) {
        self.turns.pass(self.rank, true);
    }
}
