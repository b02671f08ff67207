//! stride: out[i] = in[i * s]. As s grows, a warp's 32 loads spread over more
//! 32-byte sectors (min(4 s, 32) for f32) and most fetched bytes are thrown away.

use crate::gpu::{Float4, Global, GlobalMut, thread};

/// Threads per block.
pub const BLOCK: u32 = 256;

/// The strides the experiment sweeps.
pub const STRIDES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

kernel! {
    /// Strided read, coalesced write: lanes read addresses 4 s bytes apart, so one
    /// warp request touches min(4 s, 32) sectors. `src` holds at least (n - 1) s + 1 floats.
    pub fn stride_read(n: usize, s: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n and src has (n - 1) s + 1 elements.
            unsafe { dst.write(i, src.read(i * s)) };
        }
    }
}

kernel! {
    /// `stride_read` tuned: four outputs per thread stored as one 16-byte Float4 in a
    /// grid-stride loop over a grid sized to the GPU, so each thread keeps 16 bytes in
    /// flight instead of 4; at s = 1 the four inputs are one 16-byte load too (a warp
    /// reads 512 consecutive bytes), otherwise four gathers 4 s bytes apart. The last
    /// n % 4 outputs are read one each by the first threads.
    pub fn stride_read_f32x4(n: usize, s: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let n4 = n / 4;
        // SAFETY: device allocations are 256-byte aligned, so f32 data is Float4-aligned.
        let (src4, dst4) = unsafe { (src.cast::<Float4>(), dst.cast::<Float4>()) };
        let mut i = thread::index_1d();
        while i < n4 {
            let j = 4 * i * s;
            // SAFETY: i < n / 4, so 4 i + 3 < n and (4 i + 3) s <= (n - 1) s < src's length;
            // at s = 1 the Float4 i is src's elements 4 i .. 4 i + 3.
            let v = unsafe {
                if s == 1 {
                    src4.read(i)
                } else {
                    Float4::new(src.read(j), src.read(j + s), src.read(j + 2 * s), src.read(j + 3 * s))
                }
            };
            // SAFETY: i < n / 4.
            unsafe { dst4.write(i, v) };
            i += thread::grid_size_1d();
        }
        let tail = n4 * 4 + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n and src has (n - 1) s + 1 elements.
            unsafe { dst.write(tail, src.read(tail * s)) };
        }
    }
}
