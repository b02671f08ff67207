//! Transaction barriers (`mbarrier`, sm_90): the handshake of Hopper's asynchronous
//! copies. A barrier in shared memory counts arrivals and, for its current phase, the
//! bytes that asynchronous copies ([`super::tma`]) still owe it; the phase completes
//! when both reach zero, and threads wait for a phase by its parity.
//!
//! Kernels use them through [`super::ring`], the pipeline of stages the copy engine
//! fills, which keeps each side's stage and phase: use `i` of a stage (the `i`-th time
//! the ring comes round, from 0) waits for parity `i % 2`, as a barrier starts in
//! phase 0 and each completed phase flips it.
//!
//! On the emulator a barrier is a record beside the block's shared memory: arrivals
//! and expected bytes count as on the GPU, and the copies a phase waits for land in
//! shared memory when a thread's wait finds them all issued and the arrivals done, the
//! latest the GPU allows. A thread that reads a stage without waiting, or waits for
//! the wrong parity (which returns at once, as the previous phase completed), reads
//! what the stage held before: the emulator's poison on a first use.

use super::SharedArray;
use super::shared::SharedWord;

/// A transaction barrier: 8 bytes of shared memory.
#[derive(Clone, Copy)]
pub struct Barrier {
    #[cfg(target_arch = "nvptx64")]
    addr: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    ptr: *mut u64,
}

impl<T: SharedWord> SharedArray<T> {
    /// The barrier in the 8 bytes at element `i` (8-byte aligned) of this array.
    ///
    /// # Safety
    /// Elements `i..` cover 8 bytes in bounds, 8-byte aligned, used only as this barrier.
    #[inline(always)]
    pub unsafe fn barrier(self, i: usize) -> Barrier {
        #[cfg(target_arch = "nvptx64")]
        {
            Barrier {
                addr: self.shared_addr() + (i * size_of::<T>()) as u32,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let bytes = i * size_of::<T>();
            assert!(
                bytes.is_multiple_of(8) && bytes + 8 <= self.len() * size_of::<T>(),
                "a barrier at element {i} is misaligned or out of bounds"
            );
            // SAFETY: checked in bounds; the storage is 16-byte aligned.
            Barrier {
                ptr: unsafe { self.host_ptr().cast::<u8>().add(bytes).cast() },
            }
        }
    }
}

/// A barrier of another block of the cluster, as [`Barrier::in_block`] maps it.
#[derive(Clone, Copy)]
pub struct PeerBarrier {
    #[cfg(target_arch = "nvptx64")]
    addr: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    rank: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    ptr: usize,
}

impl PeerBarrier {
    /// One arrival on it (`mbarrier.arrive.shared::cluster`).
    ///
    /// # Safety
    /// As for [`Barrier::arrive`], on that block's barrier; its block is in the cluster.
    #[inline(always)]
    pub unsafe fn arrive(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a cluster address of an initialised barrier (the caller).
        unsafe {
            core::arch::asm!("mbarrier.arrive.shared::cluster.b64 _, [{b}];",
                b = in(reg32) self.addr, options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        super::emu::barrier_arrive_in(self.rank, self.ptr);
    }
}

impl Barrier {
    /// The barrier's address in the shared window (a copy's completion operand).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn shared_addr(self) -> u32 {
        self.addr
    }

    /// The emulator's address of the barrier.
    #[cfg(not(target_arch = "nvptx64"))]
    pub(crate) fn host_addr(self) -> usize {
        self.ptr as usize
    }

    /// `mbarrier.init`: a new barrier expecting `count` arrivals a phase. One thread
    /// initialises it; [`fence_init`] and a block barrier must follow before others use it.
    ///
    /// # Safety
    /// No thread may use the barrier before it is initialised and fenced.
    #[inline(always)]
    pub unsafe fn init(self, count: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a shared address of 8 bytes (the constructor's contract).
        unsafe {
            core::arch::asm!("mbarrier.init.shared::cta.b64 [{b}], {c};",
                b = in(reg32) self.addr, c = in(reg32) count, options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        super::emu::barrier_init(self.ptr as usize, count);
    }

    /// `mbarrier.arrive`: one arrival.
    ///
    /// # Safety
    /// The barrier is initialised, and the phase still expects an arrival.
    #[inline(always)]
    pub unsafe fn arrive(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: an initialised barrier (the caller).
        unsafe {
            core::arch::asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];",
                b = in(reg32) self.addr, options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        super::emu::barrier_arrive(self.ptr as usize, 0);
    }

    /// `mbarrier.arrive.expect_tx`: one arrival, and `bytes` more that asynchronous
    /// copies must complete before the phase can.
    ///
    /// # Safety
    /// As for [`Barrier::arrive`].
    #[inline(always)]
    pub unsafe fn arrive_expect_tx(self, bytes: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: an initialised barrier (the caller).
        unsafe {
            core::arch::asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
                b = in(reg32) self.addr, n = in(reg32) bytes, options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        super::emu::barrier_arrive(self.ptr as usize, bytes);
    }

    /// One arrival on the barrier at the same shared offset in block `rank` of this
    /// block's cluster ([`super::cluster`]): how a consumer tells both blocks of a
    /// cluster that a stage their multicast copies fill is free again.
    ///
    /// # Safety
    /// As for [`Barrier::arrive`], on that block's barrier; `rank` is in the cluster.
    #[inline(always)]
    pub unsafe fn arrive_cluster(self, rank: u32) {
        // SAFETY: the caller's.
        unsafe { self.in_block(rank).arrive() }
    }

    /// The barrier at the same shared offset in block `rank` of this block's cluster
    /// (`mapa`), for arrivals from here ([`PeerBarrier::arrive`]). Worked out apart
    /// from the arrival so that a loop can have it ready before the arrival is due.
    #[inline(always)]
    pub fn in_block(self, rank: u32) -> PeerBarrier {
        #[cfg(target_arch = "nvptx64")]
        {
            let addr: u32;
            // SAFETY: mapa only computes an address. Not `pure`: the compiler keeps it
            // where it is written rather than sinking it next to the arrival.
            unsafe {
                core::arch::asm!("mapa.shared::cluster.u32 {r}, {b}, {k};",
                    r = out(reg32) addr, b = in(reg32) self.addr, k = in(reg32) rank,
                    options(nostack, nomem, preserves_flags));
            }
            PeerBarrier { addr }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        PeerBarrier {
            rank,
            ptr: self.ptr as usize,
        }
    }

    /// `mbarrier.try_wait.parity`: whether the phase of parity `parity` has completed
    /// (the hardware may wait a while before answering no).
    ///
    /// # Safety
    /// The barrier is initialised.
    #[inline(always)]
    pub unsafe fn try_wait(self, parity: u32) -> bool {
        #[cfg(target_arch = "nvptx64")]
        {
            let done: u32;
            // SAFETY: an initialised barrier (the caller). A memory clobber: the stage's
            // reads must not move above the wait that makes the copies visible.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; selp.u32 {d}, 1, 0, p; }}",
                    d = out(reg32) done, b = in(reg32) self.addr, q = in(reg32) parity,
                    options(nostack, preserves_flags));
            }
            done != 0
        }
        #[cfg(not(target_arch = "nvptx64"))]
        super::emu::barrier_try_wait(self.ptr as usize, parity)
    }

    /// Waits until the phase of parity `parity` has completed.
    ///
    /// # Safety
    /// As for [`Barrier::try_wait`], and the phase will complete (else this hangs, as
    /// on the GPU; the emulator reports a deadlock instead).
    ///
    /// The spin is one asm block, as hand-written Hopper kernels write it: the compiler
    /// sees one instruction, not a loop of its own around `try_wait`. As such a loop,
    /// ptxas kept wgmma-ws's producer loop in per-thread registers and the rung trailed
    /// its CUDA C++ twin (docs/perf-notes.md, "the barrier wait as one asm block").
    #[inline(always)]
    // PTX scopes a label to its `{ }` block, so every inlined copy may use the same name.
    #[allow(named_asm_labels)]
    pub unsafe fn wait(self, parity: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: an initialised barrier whose phase will complete (the caller). A memory
        // clobber, as try_wait's.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; LAB_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; @!p bra LAB_WAIT; }}",
                b = in(reg32) self.addr, q = in(reg32) parity, options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: forwarded.
        while !unsafe { self.try_wait(parity) } {}
    }
}

/// `fence.mbarrier_init.release.cluster`: makes barrier initialisations visible to
/// the asynchronous copies and to the other blocks of a cluster.
#[inline(always)]
pub fn fence_init() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!(
            "fence.mbarrier_init.release.cluster;",
            options(nostack, preserves_flags)
        )
    };
}
