//! inflight: the same coalesced copy with 1, 2, 4 or 8 elements per thread, f32 or
//! float4. Every variant reads and writes the same bytes in the same fully coalesced
//! pattern; only how many bytes each thread has in flight before its first store
//! changes. Little's law: a GPU needs bandwidth x latency bytes in flight to run at
//! its bandwidth, and one float per thread may not be enough.

use crate::gpu::thread::{block_dim_x, block_idx_x, thread_idx_x};
use crate::gpu::{Element, Float4, Global, GlobalMut};

/// Threads per block.
pub const BLOCK: u32 = 256;

/// Each block copies K consecutive chunks of `BLOCK` elements: thread t loads element
/// t of each chunk (so every warp access is 32 consecutive elements), all K before it
/// stores any, then stores them. Guarded for any n.
#[inline(always)]
unsafe fn copy_k<T: Element + Copy + Default, const K: usize>(n: usize, src: Global<T>, dst: GlobalMut<T>) {
    let block = block_dim_x() as usize;
    let base = block_idx_x() as usize * block * K + thread_idx_x() as usize;
    let mut v = [T::default(); K];
    for (k, x) in v.iter_mut().enumerate() {
        let i = base + k * block;
        if i < n {
            // SAFETY: i < n.
            *x = unsafe { src.read(i) };
        }
    }
    for (k, x) in v.iter().enumerate() {
        let i = base + k * block;
        if i < n {
            // SAFETY: i < n.
            unsafe { dst.write(i, *x) };
        }
    }
}

/// The float4 copies: n / 4 float4s through [`copy_k`], then the last n % 4 floats
/// one each by the first threads of the grid.
#[inline(always)]
unsafe fn copy_v4<const K: usize>(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
    // SAFETY: device allocations are 256-byte aligned, so f32 data is Float4-aligned.
    let (src4, dst4) = unsafe { (src.cast::<Float4>(), dst.cast::<Float4>()) };
    unsafe { copy_k::<Float4, K>(n / 4, src4, dst4) };
    let tail = n / 4 * 4 + crate::gpu::thread::index_1d();
    if tail < n {
        // SAFETY: tail < n.
        unsafe { dst.write(tail, src.read(tail)) };
    }
}

kernel! {
    /// One float per thread: 4 bytes in flight per thread, the copy experiment's f32 kernel.
    pub fn inflight_f32_1(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_k::<f32, 1>(n, src, dst) }
    }
}

kernel! {
    /// Two floats per thread, both loaded before either is stored: 8 bytes in flight.
    pub fn inflight_f32_2(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_k::<f32, 2>(n, src, dst) }
    }
}

kernel! {
    /// Four floats per thread: 16 bytes in flight, in four coalesced loads.
    pub fn inflight_f32_4(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_k::<f32, 4>(n, src, dst) }
    }
}

kernel! {
    /// Eight floats per thread: 32 bytes in flight.
    pub fn inflight_f32_8(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_k::<f32, 8>(n, src, dst) }
    }
}

kernel! {
    /// One float4 per thread: 16 bytes in flight in one 16-byte load.
    pub fn inflight_f32x4_1(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_v4::<1>(n, src, dst) }
    }
}

kernel! {
    /// Two float4s per thread: 32 bytes in flight.
    pub fn inflight_f32x4_2(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_v4::<2>(n, src, dst) }
    }
}

kernel! {
    /// Four float4s per thread: 64 bytes in flight.
    pub fn inflight_f32x4_4(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_v4::<4>(n, src, dst) }
    }
}

kernel! {
    /// Eight float4s per thread: 128 bytes in flight.
    pub fn inflight_f32x4_8(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { copy_v4::<8>(n, src, dst) }
    }
}
