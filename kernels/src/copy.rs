//! copy: the practical bandwidth ceiling, next to the driver's device-to-device copy.

use crate::gpu::{Float4, Global, GlobalMut, thread};

/// Threads per block for both copies.
pub const BLOCK: u32 = 256;

kernel! {
    /// One f32 per thread: thread i reads in[i] and writes out[i], so a warp touches
    /// 128 consecutive bytes (4 sectors) per access: coalesced. Guarded by i < n.
    pub fn copy_f32(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n.
            unsafe { dst.write(i, src.read(i)) };
        }
    }
}

kernel! {
    /// 16 bytes per access, grid-stride: a warp moves 512 consecutive bytes per
    /// instruction, and a grid sized to the GPU keeps many loads in flight. The last
    /// n % 4 floats are copied one each by the first threads.
    pub fn copy_f32x4(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let n4 = n / 4;
        // SAFETY: device allocations are 256-byte aligned, so f32 data is Float4-aligned.
        let (src4, dst4) = unsafe { (src.cast::<Float4>(), dst.cast::<Float4>()) };
        let mut i = thread::index_1d();
        while i < n4 {
            // SAFETY: i < n / 4.
            unsafe { dst4.write(i, src4.read(i)) };
            i += thread::grid_size_1d();
        }
        let tail = n4 * 4 + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            unsafe { dst.write(tail, src.read(tail)) };
        }
    }
}
