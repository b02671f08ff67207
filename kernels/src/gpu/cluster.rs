//! Thread-block clusters (sm_90): blocks launched together on neighbouring SMs, which
//! may write each other's shared memory (multicast copies,
//! [`load_2d_multicast`](super::tma::load_2d_multicast)) and arrive on each other's
//! barriers ([`Barrier::arrive_cluster`](super::barrier::Barrier::arrive_cluster)). A
//! kernel asks for its cluster shape in its launch (the host's `Launch::cluster`).
//!
//! On the emulator the blocks of a cluster run together, each with its own shared
//! memory, as on the GPU.

/// This block's rank in its cluster (`%cluster_ctarank`).
#[inline(always)]
pub fn rank() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r,
                options(pure, nomem, nostack, preserves_flags))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::cluster_rank()
}

/// `barrier.cluster.arrive` + `wait`: every thread of every block of the cluster meets
/// here (release and acquire: shared-memory writes before it are visible after it).
/// Blocks meet before using each other's barriers, and before any leaves while
/// another may still write its shared memory.
#[inline(always)]
pub fn sync() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: every thread of the cluster calls it from uniform control flow.
    unsafe {
        core::arch::asm!(
            "barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;",
            options(nostack, preserves_flags)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::cluster_sync();
}
