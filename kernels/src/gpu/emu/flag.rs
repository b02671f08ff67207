//! Global flags ([`crate::gpu::flag`]) on the emulator: host atomics with the GPU's
//! orderings, and a wait that lets the block's other threads run.
//!
//! The emulator runs a cluster's blocks together and the clusters one after another,
//! in block order. A flag a block waits for must be set by a block of its own cluster
//! or of one that ran before it; a kernel whose waits need a later cluster would hang
//! here, and might on a GPU that cannot hold every block at once. So a wait that goes
//! unanswered for [`FLAG_DEADLOCK`] is reported as a deadlock (the launch fails)
//! rather than left to spin.

use core::sync::atomic::{AtomicU32, Ordering};

use super::{Op, record_global, with_thread};

/// How long a flag may stay clear under a waiting thread before the launch fails.
const FLAG_DEADLOCK: std::time::Duration = std::time::Duration::from_secs(5);

/// `st.release.gpu` of `value` to the flag at `p`.
///
/// # Safety
/// `p` is a valid, aligned word of a launch's buffer (or a virtual one, addresses only).
#[track_caller]
pub unsafe fn release_flag(p: *mut u32, value: u32) {
    if record_global(p as usize, 4, 4, Op::Store) {
        return;
    }
    // SAFETY: valid and aligned (the caller's); every concurrent access is atomic.
    unsafe { AtomicU32::from_ptr(p) }.store(value, Ordering::Release);
}

/// Spins until the flag at `p` reads non-zero (`ld.acquire.gpu`, once a turn), letting
/// the block's other threads run between reads. An addresses-only launch, whose loads
/// read zeros, records one load and goes on.
///
/// # Safety
/// As for [`release_flag`].
///
/// # Panics
/// When the flag stays clear for [`FLAG_DEADLOCK`]: no block that can still run sets it.
#[track_caller]
pub unsafe fn wait_flag(p: *mut u32) {
    if record_global(p as usize, 4, 4, Op::Load) {
        return;
    }
    // SAFETY: as for release_flag.
    let flag = unsafe { AtomicU32::from_ptr(p) };
    let start = std::time::Instant::now();
    while flag.load(Ordering::Acquire) == 0 {
        assert!(
            start.elapsed() < FLAG_DEADLOCK,
            "deadlock: a thread waited {} s on a global flag (at {p:p}) that no block set: a release \
             missing, a flag never cleared for this launch's waits to mean anything, or a wait on a \
             block that runs later (the emulator runs clusters in block order)",
            FLAG_DEADLOCK.as_secs()
        );
        let (block, rank) = with_thread(|t| (t.block() as *const super::BlockState, t.linear_thread));
        // SAFETY: the block state outlives its threads.
        super::pause(unsafe { &*block }, rank);
    }
    // What the thread reads after the wait is another block's: a new epoch.
    with_thread(|t| t.epoch += 1);
}
