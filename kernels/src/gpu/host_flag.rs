//! A word of pinned host memory that the host sets while a kernel watches it, and the
//! GPU's nanosecond clock to bound the watch: what the timing harness's hold kernel
//! ([`crate::hold`]) needs to keep the GPU busy until the host has queued its launches.
//!
//! The load is `ld.relaxed.sys`: at system scope, so each one reaches the host's word
//! instead of a cached copy, and relaxed, since no data is handed over with the flag.

use super::Global;

/// A `u32` in pinned host memory, 0 until the host sets it.
#[derive(Clone, Copy)]
pub struct HostFlag(Global<u32>);

impl HostFlag {
    /// `word` is a device pointer to pinned host memory (unified addressing maps it).
    pub const fn new(word: Global<u32>) -> Self {
        HostFlag(word)
    }

    /// Whether the host has set the flag: a fresh read of the host's word.
    ///
    /// # Safety
    /// The word is pinned host memory that stays allocated while the kernel runs.
    #[inline(always)]
    pub unsafe fn is_set(self) -> bool {
        let p = self.0.as_ptr();
        #[cfg(target_arch = "nvptx64")]
        {
            let v: u32;
            // SAFETY: a valid, aligned word of host memory the device can address.
            unsafe {
                core::arch::asm!("ld.relaxed.sys.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) p,
                    options(nostack, preserves_flags, readonly));
            }
            v != 0
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: as above; the host may write it concurrently, hence volatile.
        unsafe {
            core::ptr::read_volatile(p) != 0
        }
    }
}

/// The GPU's global clock in nanoseconds (`%globaltimer`; on the host, the system
/// clock).
#[inline(always)]
pub fn now_ns() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let t: u64;
        // SAFETY: reading a special register has no preconditions.
        unsafe {
            core::arch::asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nostack, preserves_flags, nomem));
        }
        t
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        since.map_or(0, |d| d.as_nanos() as u64)
    }
}
