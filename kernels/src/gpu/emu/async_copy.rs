//! The asynchronous-copy queue (`cp.async`): each thread's copies in flight, grouped by
//! `commit_group` and landed in shared memory by the `wait_group` that covers them.

use std::collections::VecDeque;
use std::vec::Vec;

use super::with_thread;

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
pub(super) struct AsyncCopies {
    open: Vec<PendingCopy>,
    groups: VecDeque<Vec<PendingCopy>>,
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
