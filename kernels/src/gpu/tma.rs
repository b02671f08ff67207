//! The Tensor Memory Accelerator (`cp.async.bulk.tensor`, sm_90): one thread names a
//! box of a tensor in global memory, and the hardware generates every address, reads
//! the box's rows as whole lines, and writes it into shared memory (or back out),
//! completing the bytes on a [`Barrier`]. Coalescing, done in silicon.
//!
//! A [`TensorMap`] describes the tensor (base address, extents, row pitch), the box
//! and the shared-memory layout (`swizzle`); the host makes it with the driver
//! (`cuTensorMapEncodeTiled`) and passes it to the kernel in global memory. Boxes may
//! overhang the tensor: loads fill the outside with zeros and stores drop it, which is
//! how a tile loop handles any size without guards. The hardware needs the tensor's
//! base and row pitch in multiples of 16 bytes.
//!
//! Swizzle: with [`Swizzle::B128`] a box whose rows are 128 bytes lands with the 16-byte
//! chunk `c` of row `r` at chunk `c ^ (r % 8)`, in 1024-byte groups of 8 rows, so a
//! warp reading a column of the box touches every bank once; the shared tile must
//! start on a 1024-byte boundary ([`SharedArray::aligned`]). Readers index it with
//! [`swizzled_128`], and the tensor cores read it as such ([`super::wgmma`]).
//!
//! On the emulator a map is the host's plain description of the same tensor
//! ([`TileMap`]); a load reads the box (recording each row's global access) when it is
//! issued and lands it, swizzled as the hardware would, when a wait on its barrier
//! completes the phase ([`super::barrier`]); a store reads shared memory and writes
//! the tensor when issued.

use super::barrier::Barrier;
use super::shared::SharedWord;
use super::{Global, SharedArray};

#[cfg(not(target_arch = "nvptx64"))]
pub use super::tensor_map::TileMap;
pub use super::tensor_map::{Swizzle, TensorMap, swizzled_128};

impl super::Element for TensorMap {}

/// Loads the box at element (`c0`) of a 1D map into `dst` from element `i`, completing
/// its bytes on `bar`.
///
/// # Safety
/// `map` is a map of this launch, `dst[i..]` holds the box (16-byte aligned; 1024 for a
/// swizzled box), no thread touches it until `bar`'s phase completes, and the phase
/// expects the bytes ([`Barrier::arrive_expect_tx`]).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_1d<T: SharedWord>(
    map: Global<TensorMap>,
    c0: i32,
    dst: SharedArray<T>,
    i: usize,
    bar: Barrier,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}}}], [{b}];",
            d = in(reg32) dst.shared_addr() + (i * size_of::<T>()) as u32, m = in(reg64) map.as_ptr(),
            b = in(reg32) bar.shared_addr(), c0 = in(reg32) c0, options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's contract (a map the host made for this launch).
    unsafe {
        super::emu::tma_load(map.as_ptr(), [c0, 0], dst.element_ptr(i), bar.host_addr(), 0)
    };
}

/// Loads the box at (`c0`, `c1`) (column, row) of a 2D map into `dst` from element
/// `i`, completing its bytes on `bar`.
///
/// # Safety
/// As for [`load_1d`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_2d<T: SharedWord>(
    map: Global<TensorMap>,
    [c0, c1]: [i32; 2],
    dst: SharedArray<T>,
    i: usize,
    bar: Barrier,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}}}], [{b}];",
            d = in(reg32) dst.shared_addr() + (i * size_of::<T>()) as u32, m = in(reg64) map.as_ptr(),
            b = in(reg32) bar.shared_addr(), c0 = in(reg32) c0, c1 = in(reg32) c1, options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's contract (a map the host made for this launch).
    unsafe {
        super::emu::tma_load(map.as_ptr(), [c0, c1], dst.element_ptr(i), bar.host_addr(), 0)
    };
}

/// [`load_2d`] into the same place of every block of the cluster in `ctas` (a mask of
/// cluster ranks), each block's barrier at the same offset receiving the bytes.
///
/// # Safety
/// As for [`load_2d`], in every block of the mask.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_2d_multicast<T: SharedWord>(
    map: Global<TensorMap>,
    [c0, c1]: [i32; 2],
    dst: SharedArray<T>,
    i: usize,
    bar: Barrier,
    ctas: u16,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{c0}, {c1}}}], [{b}], {k};",
            d = in(reg32) dst.shared_addr() + (i * size_of::<T>()) as u32, m = in(reg64) map.as_ptr(),
            b = in(reg32) bar.shared_addr(), c0 = in(reg32) c0, c1 = in(reg32) c1, k = in(reg16) ctas,
            options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's contract (a map the host made for this launch).
    unsafe {
        super::emu::tma_load(map.as_ptr(), [c0, c1], dst.element_ptr(i), bar.host_addr(), ctas)
    };
}

/// Stores the box at element `c0` of a 1D map from `src` at element `i`; the part
/// outside the tensor is dropped. Shared memory written by the block's threads needs
/// [`fence_proxy_async`] and a barrier first; `src` may be reused after
/// [`wait_group_read`].
///
/// # Safety
/// `map` is a map of this launch and `src[i..]` holds the box.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store_1d<T: SharedWord>(map: Global<TensorMap>, c0: i32, src: SharedArray<T>, i: usize) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [{m}, {{{c0}}}], [{s}];",
            m = in(reg64) map.as_ptr(), s = in(reg32) src.shared_addr() + (i * size_of::<T>()) as u32, c0 = in(reg32) c0,
            options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's contract (a map the host made for this launch).
    unsafe {
        super::emu::tma_store(map.as_ptr(), [c0, 0], src.element_ptr(i))
    };
}

/// Stores the box at (`c0`, `c1`) of a 2D map from `src` at element `i`, as [`store_1d`].
///
/// # Safety
/// As for [`store_1d`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store_2d<T: SharedWord>(
    map: Global<TensorMap>,
    [c0, c1]: [i32; 2],
    src: SharedArray<T>,
    i: usize,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{c0}, {c1}}}], [{s}];",
            m = in(reg64) map.as_ptr(), s = in(reg32) src.shared_addr() + (i * size_of::<T>()) as u32,
            c0 = in(reg32) c0, c1 = in(reg32) c1, options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's contract (a map the host made for this launch).
    unsafe {
        super::emu::tma_store(map.as_ptr(), [c0, c1], src.element_ptr(i))
    };
}

/// `prefetch.tensormap`: starts fetching `map`'s 128 bytes into the copy engine's
/// descriptor cache, so the first copy through it does not wait for them.
///
/// # Safety
/// `map` points to a tensor map the host made for this launch.
#[inline(always)]
pub unsafe fn prefetch(map: Global<TensorMap>) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract; a prefetch changes no memory.
    unsafe {
        core::arch::asm!("prefetch.tensormap [{m}];", m = in(reg64) map.as_ptr(), options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = map;
}

/// `cp.async.bulk.commit_group`: this thread's stores since the last commit become a group.
#[inline(always)]
pub fn commit_group() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands.
    unsafe {
        core::arch::asm!("cp.async.bulk.commit_group;", options(nostack, preserves_flags))
    };
}

/// `cp.async.bulk.wait_group.read N`: this thread's store groups but the newest `N`
/// have finished reading shared memory, which may then be overwritten.
#[inline(always)]
pub fn wait_group_read<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; a memory clobber keeps later shared writes after it.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack, preserves_flags))
    };
}

/// `cp.async.bulk.wait_group N`: as [`wait_group_read`], and the writes are done.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as above.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack, preserves_flags))
    };
}

/// `fence.proxy.async.shared::cta`: this thread's ordinary shared-memory writes become
/// visible to the asynchronous proxy (the copy engine, the tensor cores), once a
/// barrier has also ordered them.
#[inline(always)]
pub fn fence_proxy_async() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!(
            "fence.proxy.async.shared::cta;",
            options(nostack, preserves_flags)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::fence_proxy_async();
}
