//! The timing harness's hold: one thread that keeps the GPU busy until the host
//! sets a flag, so every launch the host queues behind it runs back to back and an
//! event interval holds one launch's GPU time, not the host's time to queue it (a
//! short kernel, or a library call with a long host path, would otherwise be timed
//! at the host's pace).

use crate::gpu::Global;
use crate::gpu::host_flag::{self, HostFlag};

kernel! {
    /// Spins until `flag` (pinned host memory) is set, or `limit_ns` have passed, so
    /// a host that never sets it does not hang the GPU.
    pub fn hold(flag: Global<u32>, limit_ns: u64) {
        let (flag, start) = (HostFlag::new(flag), host_flag::now_ns());
        // SAFETY: the host keeps the flag's pinned word allocated until the launch ends.
        while !unsafe { flag.is_set() } && host_flag::now_ns().wrapping_sub(start) < limit_ns {}
    }
}
