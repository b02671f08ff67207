//! stride: out[i] = in[i * s]. As s grows, a warp's 32 loads spread over more
//! 32-byte sectors (min(4 s, 32) for f32) and most fetched bytes are thrown away.

use crate::gpu::{Global, GlobalMut, thread};

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
