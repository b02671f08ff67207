//! Asynchronous global-to-shared copies (`cp.async`, sm_80 and later): the copy
//! goes from global memory straight into shared memory, without staging registers,
//! while the thread goes on; groups of copies are committed and waited for.
//!
//! The copies themselves are [`SharedArray::copy_async`](super::SharedArray::copy_async)
//! (4 bytes, `cp.async.ca`, through L1) and
//! [`SharedArray::copy4_async`](super::SharedArray::copy4_async) (16 bytes,
//! `cp.async.cg`, L2 only). A thread sees its own copies only after a
//! [`wait_group`] covering them; other threads, after that wait and a
//! [`sync_threads`](super::thread::sync_threads). The usual `S`-stage loop:
//!
//! ```text
//! for s in 0..S - 1 { issue copies of tile s; commit_group(); }
//! for each tile t {
//!     wait_group::<{ S - 2 }>(); sync_threads();   // tile t has landed, for everyone
//!     issue copies of tile t + S - 1 into the stage tile t - 1 used; commit_group();
//!     compute on tile t;
//! }
//! ```
//!
//! `cp.async` needs sm_80: only kernels declared `kernel! { #[requires(sm_80)] ... }`
//! may use these (host/build.rs puts them in a second PTX module built for sm_80; the
//! sm_70 baseline module must not contain `cp.async`, which tests/ptx.rs checks).
//!
//! On the emulator a copy reads its source and is recorded (a global load and a
//! shared store, at the line that issued it) when issued, and lands in shared memory
//! when a `wait_group` of the issuing thread covers its group (see [`super::emu`]).

/// `cp.async.commit_group`: the copies this thread issued since its last commit
/// become one group. Every thread commits, even one that issued no copy (an empty
/// group), so that group counts stay uniform across the block.
#[inline(always)]
pub fn commit_group() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; orders nothing but this thread's copies.
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::commit_group();
}

/// `cp.async.wait_group N`: waits until at most the `N` most recent committed groups
/// of this thread are still in flight; every older copy has landed. A barrier must
/// follow before other threads read what this thread copied.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; a memory clobber, so shared reads are not hoisted above it.
    unsafe {
        core::arch::asm!("cp.async.wait_group {n};", n = const N, options(nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::wait_group(N as usize);
}

/// `cp.async.wait_all`: commits the open copies and waits for every group.
#[inline(always)]
pub fn wait_all() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as for wait_group.
    unsafe {
        core::arch::asm!("cp.async.wait_all;", options(nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        super::emu::commit_group();
        super::emu::wait_group(0);
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::gpu::emu::{Dim3, LaunchConfig, Op, Space, launch};
    use crate::gpu::thread::thread_idx_x;
    use crate::gpu::{Global, SharedArray};
    use crate::shared_array;
    use std::sync::Mutex;
    use std::vec::Vec;

    /// Each of 32 threads copies src[t] and src[32 + t] in two groups and looks at its
    /// shared elements before any wait, after `wait_group::<1>` and after
    /// `wait_group::<0>`: a copy lands exactly when a wait covers its group.
    #[test]
    fn a_copy_lands_at_the_wait_that_covers_its_group() {
        let src: Vec<f32> = (0..64).map(|i| i as f32 + 0.5).collect();
        let addr = src.as_ptr() as usize;
        let seen = Mutex::new(Vec::new());
        let cfg = LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(32),
            record: true,
            ..Default::default()
        };
        let log = launch(&cfg, || {
            let t = thread_idx_x() as usize;
            let g = Global::from_ptr(addr as *const f32);
            let s: SharedArray<f32> = shared_array![ASYNC_COPY_TEST: [f32; 64]];
            // SAFETY: in bounds of both; each thread touches only its own elements.
            unsafe {
                s.copy_async(t, g, Some(t));
                commit_group();
                s.copy_async(32 + t, g, Some(32 + t));
                commit_group();
                let before = s.read(t);
                wait_group::<1>();
                let (first, second) = (s.read(t), s.read(32 + t));
                wait_group::<0>();
                let after = s.read(32 + t);
                seen.lock().unwrap().push((t, [before, first, second, after]));
            }
        });
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 32);
        for (t, [before, first, second, after]) in seen {
            assert!(before.is_nan(), "thread {t} saw its copy before waiting");
            assert_eq!(first, t as f32 + 0.5, "thread {t}: the older group landed");
            assert!(second.is_nan(), "thread {t}: the newer group is still in flight");
            assert_eq!(after, (32 + t) as f32 + 0.5);
        }
        // Each copy is a 4-byte global load and a 4-byte shared store at its line.
        let copies: Vec<_> = log
            .iter()
            .filter(|a| a.op == Op::Load && a.space == Space::Global)
            .collect();
        assert_eq!(copies.len(), 64);
        assert!(copies.iter().all(|a| a.bytes == 4));
        let stores = log
            .iter()
            .filter(|a| a.op == Op::Store && a.space == Space::Shared)
            .count();
        assert_eq!(stores, 64);
    }

    /// A 16-byte copy moves four floats in one recorded access; `None` zero-fills
    /// without reading; uncommitted copies are in no group, and `wait_all` lands them.
    #[test]
    fn sixteen_byte_copies_zero_fill_and_wait_all() {
        // 16-byte copies need a 16-byte aligned source, as device allocations are.
        #[repr(C, align(16))]
        struct Aligned([f32; 8]);
        let src = Aligned([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        let addr = src.0.as_ptr() as usize;
        let seen = Mutex::new(Vec::new());
        let cfg = LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(1),
            record: true,
            ..Default::default()
        };
        let log = launch(&cfg, || {
            let g = Global::from_ptr(addr as *const f32);
            let s: SharedArray<f32> = shared_array![ASYNC_COPY_TEST_16: [f32; 8]];
            // SAFETY: aligned and in bounds.
            unsafe {
                s.copy4_async(0, g, Some(4));
                s.copy4_async(4, g, None);
                wait_group::<0>();
                let pending = s.read(0);
                wait_all();
                seen.lock().unwrap().push((pending, s.read4(0), s.read4(4)));
            }
        });
        let (pending, copied, zeros) = seen.into_inner().unwrap()[0];
        assert!(pending.is_nan(), "an uncommitted copy is in no group");
        assert_eq!(copied, crate::gpu::Float4::new(4.0, 5.0, 6.0, 7.0));
        assert_eq!(zeros, crate::gpu::Float4::default());
        let loads: Vec<_> = log.iter().filter(|a| a.space == Space::Global).collect();
        assert_eq!(loads.len(), 1, "the zero-fill reads nothing");
        assert_eq!((loads[0].addr, loads[0].bytes), (addr + 16, 16));
    }
}
