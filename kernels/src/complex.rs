//! complex: read the real parts of n complex values. Interleaved [re, im] pairs put
//! the wanted floats 8 bytes apart (the stride-2 trap); split arrays keep them packed.

use crate::gpu::{Global, GlobalMut, thread};

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
