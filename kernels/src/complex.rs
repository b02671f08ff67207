//! complex: read the real parts of n complex values. Interleaved [re, im] pairs put
//! the wanted floats 8 bytes apart (the stride-2 trap); split arrays keep them packed.

use crate::gpu::{Float4, Global, GlobalMut, thread};

/// Threads per block.
pub const BLOCK: u32 = 256;

kernel! {
    /// Interleaved: lane i reads float 2i, so a warp's load spans 256 bytes (8
    /// sectors) to use 128: half of every sector is imaginary parts nobody asked for.
    pub fn complex_real_interleaved(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: src holds 2n floats.
            unsafe { dst.write(i, src.read(2 * i)) };
        }
    }
}

kernel! {
    /// Split: the real parts are their own array, read at consecutive addresses.
    pub fn complex_real_split(n: usize, re: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n.
            unsafe { dst.write(i, re.read(i)) };
        }
    }
}

kernel! {
    /// Split, tuned: 16-byte loads and stores of the packed real parts in a grid-stride
    /// loop over a grid sized to the GPU, so a warp moves 512 consecutive bytes per
    /// instruction and each thread keeps 16 bytes in flight instead of 4. The last
    /// n % 4 values are read one each by the first threads.
    pub fn complex_real_split_f32x4(n: usize, re: Global<f32>, dst: GlobalMut<f32>) {
        let n4 = n / 4;
        // SAFETY: device allocations are 256-byte aligned, so f32 data is Float4-aligned.
        let (re4, dst4) = unsafe { (re.cast::<Float4>(), dst.cast::<Float4>()) };
        let mut i = thread::index_1d();
        while i < n4 {
            // SAFETY: i < n / 4.
            unsafe { dst4.write(i, re4.read(i)) };
            i += thread::grid_size_1d();
        }
        let tail = n4 * 4 + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            unsafe { dst.write(tail, re.read(tail)) };
        }
    }
}
