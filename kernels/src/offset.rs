//! offset: out[i] = in[i + o]. A misaligned warp touches 5 sectors instead of 4, so
//! on GPUs with 32-byte sectors and an L1 the cost is small.

use crate::gpu::{Global, GlobalMut, thread};

/// Threads per block.
pub const BLOCK: u32 = 256;

/// The offsets (in f32 elements) the experiment sweeps.
pub const OFFSETS: [usize; 7] = [0, 1, 2, 4, 8, 16, 32];

kernel! {
    /// Shifted read, aligned write: `src` holds n + o floats; guarded by i < n.
    pub fn offset_read(n: usize, o: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i + o < n + o, src's length.
            unsafe { dst.write(i, src.read(i + o)) };
        }
    }
}
