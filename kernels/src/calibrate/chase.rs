//! chase: one thread following a chain of dependent loads, for `coalesce calibrate`'s
//! idle latency. Each load's address is the value the one before returned, so no two
//! are ever in flight together: the time per step is the latency of one load.

use crate::gpu::{Global, GlobalMut, thread};

kernel! {
    /// Thread 0 starts at `cursor[0]`, follows `j = next[j]` `steps` times and stores
    /// the last `j` back in `cursor[0]`: the store keeps the loads from being optimised
    /// away, and the next launch goes on where this one stopped, so repeated launches
    /// walk new lines instead of ones an earlier launch left in L2. Every other thread
    /// returns. `next` must hold indices into itself (the host writes one cycle).
    pub fn chase(steps: usize, next: Global<u32>, cursor: GlobalMut<u32>) {
        if thread::index_1d() != 0 {
            return;
        }
        // SAFETY: cursor holds at least one element.
        let mut j = unsafe { cursor.read(0) };
        let mut k = 0;
        while k < steps {
            // SAFETY: every value in next, and the cursor, is an index into next.
            j = unsafe { next.read(j as usize) };
            k += 1;
        }
        // SAFETY: as above; only thread 0 gets here.
        unsafe { cursor.write(0, j) };
    }
}
