//! saxpy: y = a x + y. 16-byte vector loads help a coalesced walk and do not rescue
//! a scattered one.

use crate::gpu::math::fma;
use crate::gpu::{Float4, Global, GlobalMut, thread};

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Threads of the strided variant: one per row of the 4096 x 4096 float4 view.
pub const STRIDED_THREADS: u32 = 4096;

kernel! {
    /// One f32 per thread: consecutive threads, consecutive addresses: coalesced.
    pub fn saxpy_f32(n: usize, a: f32, x: Global<f32>, y: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n.
            unsafe { y.write(i, fma(a, x.read(i), y.read(i))) };
        }
    }
}

/// The scalar tail both vector kernels share: elements past the last whole Float4,
/// one per thread of the first few.
#[inline(always)]
unsafe fn scalar_tail(n: usize, a: f32, x: Global<f32>, y: GlobalMut<f32>) {
    let i = n / 4 * 4 + thread::index_1d();
    if i < n {
        // SAFETY: i < n.
        unsafe { y.write(i, fma(a, x.read(i), y.read(i))) };
    }
}

kernel! {
    /// Float4, grid-stride: a warp's vector load covers 512 consecutive bytes
    /// (16 sectors, all useful) and the loop keeps the grid sized to the GPU.
    pub fn saxpy_f32x4(n: usize, a: f32, x: Global<f32>, y: GlobalMut<f32>) {
        // SAFETY: device allocations are 256-byte aligned.
        let (x4, y4) = unsafe { (x.cast::<Float4>(), y.cast::<Float4>()) };
        let mut i = thread::index_1d();
        while i < n / 4 {
            // SAFETY: i < n / 4.
            unsafe { y4.write(i, x4.read(i).axpy(a, y4.read(i))) };
            i += thread::grid_size_1d();
        }
        // SAFETY: forwards the kernel's arguments.
        unsafe { scalar_tail(n, a, x, y) };
    }
}

kernel! {
    /// Float4, strided: each thread walks its own contiguous chunk (a row of the
    /// 4096 x 4096 float4 view), so a warp's 32 vector loads land 64 KiB apart:
    /// 32 requests' worth of sectors per instruction, half of each sector unused
    /// until the next iteration, by which time it may be gone.
    pub fn saxpy_f32x4_strided(n: usize, a: f32, x: Global<f32>, y: GlobalMut<f32>) {
        // SAFETY: as above.
        let (x4, y4) = unsafe { (x.cast::<Float4>(), y.cast::<Float4>()) };
        let chunk = (n / 4).div_ceil(thread::grid_size_1d());
        let start = thread::index_1d() * chunk;
        let end = (start + chunk).min(n / 4);
        let mut i = start;
        while i < end {
            // SAFETY: i < end <= n / 4.
            unsafe { y4.write(i, x4.read(i).axpy(a, y4.read(i))) };
            i += 1;
        }
        // SAFETY: forwards the kernel's arguments.
        unsafe { scalar_tail(n, a, x, y) };
    }
}
