//! saxpy: y = a x + y. 16-byte vector loads help a coalesced walk and do not rescue
//! a scattered one.

use crate::gpu::math::fma;
use crate::gpu::{Float4, Global, GlobalMut, thread};

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Rows of the strided variant's column-major view (4096 x 4096 float4s at 2^26 floats).
pub const STRIDED_ROWS: usize = 4096;

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
    /// Float4, strided: the same grid-stride loop as `saxpy_f32x4`, but logical index
    /// j walks the n/4 float4s as a 4096-row matrix stored column by column, so
    /// consecutive threads touch float4s a whole column (n/4/4096 of them, 64 KiB at
    /// the default size) apart: one sector per lane, half of it unused.
    pub fn saxpy_f32x4_strided(n: usize, a: f32, x: Global<f32>, y: GlobalMut<f32>) {
        // SAFETY: as above.
        let (x4, y4) = unsafe { (x.cast::<Float4>(), y.cast::<Float4>()) };
        let n4 = n / 4;
        let cols = n4.div_ceil(STRIDED_ROWS);
        let mut j = thread::index_1d();
        while j < STRIDED_ROWS * cols {
            let i = (j % STRIDED_ROWS) * cols + j / STRIDED_ROWS;
            if i < n4 {
                // SAFETY: i < n / 4.
                unsafe { y4.write(i, x4.read(i).axpy(a, y4.read(i))) };
            }
            j += thread::grid_size_1d();
        }
        // SAFETY: forwards the kernel's arguments.
        unsafe { scalar_tail(n, a, x, y) };
    }
}
