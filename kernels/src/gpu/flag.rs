//! Flags in global memory by which one block hands data to another block of the same
//! launch (a stream-k product's partial tiles): the writer stores its data, then
//! *releases* a flag; the reader *acquires* it, waiting until it is set, then reads
//! the data.
//!
//! Memory order (PTX ISA, "Memory Consistency Model"): `st.release.gpu` makes every
//! write the releasing thread has *observed* (its own, and those of threads that
//! synchronised with it first, through `bar.warp.sync` or a block barrier: release is
//! cumulative) visible at GPU scope before the flag; `ld.acquire.gpu` that reads the
//! value orders the reader's later loads after it. Together they synchronise: what the
//! writer's warp stored before [`Flags::release`] is what the reader's warp loads
//! after [`Flags::wait`] (its lanes meeting at `bar.warp.sync` after the wait, which
//! orders their loads after the lane that acquired). Both are `.gpu` scope: the two
//! blocks run on different SMs, whose L1s are not coherent, so the data must be
//! written and read at L2, which a plain store is and an `ld.acquire.gpu` makes the
//! loads after it (no stale L1 line survives an acquire).
//!
//! A flag reads 0 at launch; whoever consumes it puts 0 back ([`Flags::reset`]), so the
//! next launch finds it clear with no memset between.
//!
//! On the emulator the flags are host atomics with the same orderings; a wait lets the
//! block's other threads run, and one that no block answers is reported as a deadlock
//! (the emulator's `wait_flag`) instead of hanging, as the GPU would.

use super::GlobalMut;

/// An array of `u32` flags in global memory, each 0 (clear) or 1 (set).
#[derive(Clone, Copy)]
pub struct Flags(GlobalMut<u32>);

impl Flags {
    pub const fn new(words: GlobalMut<u32>) -> Self {
        Flags(words)
    }

    /// Sets flag `i` with release semantics: the calling thread's writes, and those
    /// ordered before them, are visible to a thread that acquires it.
    ///
    /// # Safety
    /// `i` is in bounds, and no other thread sets or clears the flag concurrently.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn release(self, i: usize) {
        // SAFETY: in bounds (the caller's).
        let p = unsafe { self.0.as_ptr().add(i) };
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a valid, aligned global word (generic addressing reaches it).
        unsafe {
            core::arch::asm!("st.release.gpu.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) 1u32,
                options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: as above.
        unsafe {
            super::emu::release_flag(p, 1)
        };
    }

    /// Waits until flag `i` is set, with acquire semantics: the releasing thread's
    /// writes are visible to this thread's loads after it.
    ///
    /// # Safety
    /// `i` is in bounds, and some thread of the launch sets it (or this one spins
    /// forever on the GPU; the emulator reports the deadlock).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn wait(self, i: usize) {
        // SAFETY: in bounds (the caller's).
        let p = unsafe { self.0.as_ptr().add(i) };
        #[cfg(target_arch = "nvptx64")]
        loop {
            let v: u32;
            // SAFETY: a valid, aligned global word.
            unsafe {
                core::arch::asm!("ld.acquire.gpu.u32 {v}, [{p}];", p = in(reg64) p, v = out(reg32) v,
                    options(nostack, preserves_flags));
            }
            if v != 0 {
                break;
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: as above.
        unsafe {
            super::emu::wait_flag(p)
        };
    }

    /// Clears flag `i` for the next launch: a plain store, as nothing in this launch
    /// reads it again and the launch's end orders it before the next one.
    ///
    /// # Safety
    /// `i` is in bounds; the flag was set and this thread's [`Flags::wait`] saw it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn reset(self, i: usize) {
        // SAFETY: the caller's.
        unsafe { self.0.write(i, 0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::emu::{Dim3, LaunchConfig, try_launch};
    use crate::gpu::thread::{block_idx_x, sync_warp, thread_idx_x};
    use std::string::ToString;

    fn two_blocks() -> LaunchConfig {
        LaunchConfig {
            grid: Dim3::from(2),
            block: Dim3::from(32),
            ..Default::default()
        }
    }

    /// Block `from`'s warp stores 32 words and lane 0 releases the flag; block `to`'s
    /// lane 0 waits for it and clears it, and its warp copies the words on.
    fn hand_over((words, flag): (usize, usize), (from, to): (u32, u32)) -> impl Fn() + Sync {
        move || {
            let (b, lane) = (block_idx_x(), thread_idx_x() as usize);
            let words = GlobalMut::<u32>::from_ptr(core::ptr::with_exposed_provenance_mut(words));
            let flag = Flags::new(GlobalMut::from_ptr(core::ptr::with_exposed_provenance_mut(flag)));
            // SAFETY: 96 words and a flag, each written by one thread.
            unsafe {
                if b == from {
                    words.write(lane, 100 + lane as u32);
                    sync_warp();
                    if lane == 0 {
                        flag.release(0);
                    }
                } else if b == to {
                    if lane == 0 {
                        flag.wait(0);
                        flag.reset(0);
                    }
                    sync_warp();
                    words.write(32 + lane, words.read(lane) + 1);
                }
            }
        }
    }

    #[test]
    fn a_released_flag_hands_a_warps_words_to_a_later_block_and_is_cleared() {
        let (mut words, mut flag) = (std::vec![0u32; 64], 0u32);
        let at = (
            words.as_mut_ptr().expose_provenance(),
            (&raw mut flag).expose_provenance(),
        );
        try_launch(&two_blocks(), hand_over(at, (0, 1))).unwrap();
        assert!((0..32).all(|i| words[32 + i] == 101 + i as u32), "{words:?}");
        assert_eq!(flag, 0, "cleared for the next launch");
    }

    /// The emulator runs block 0 before block 1: a wait on a flag only a later block
    /// sets (or that no block sets) can never end, and fails the launch.
    #[test]
    fn a_wait_no_block_can_answer_is_a_deadlock_not_a_hang() {
        let (mut words, mut flag) = (std::vec![0u32; 64], 0u32);
        let at = (
            words.as_mut_ptr().expose_provenance(),
            (&raw mut flag).expose_provenance(),
        );
        let e = try_launch(&two_blocks(), hand_over(at, (1, 0))).unwrap_err();
        assert!(e.to_string().contains("deadlock"), "{e}");
    }
}
