//! offset: out[i] = in[i + o]. A misaligned warp touches 5 sectors instead of 4, so
//! on GPUs with 32-byte sectors and an L1 the cost is small.

use crate::gpu::{Float4, Global, GlobalMut, thread};

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

kernel! {
    /// `offset_read` tuned: four outputs per thread stored as one 16-byte Float4 in a
    /// grid-stride loop over a grid sized to the GPU (16 bytes in flight per thread
    /// instead of 4); when o is a multiple of 4 the four inputs are one aligned 16-byte
    /// load too, otherwise four 4-byte loads. The last n % 4 outputs are read one each
    /// by the first threads.
    pub fn offset_read_f32x4(n: usize, o: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let n4 = n / 4;
        // SAFETY: device allocations are 256-byte aligned, so f32 data is Float4-aligned.
        let (src4, dst4) = unsafe { (src.cast::<Float4>(), dst.cast::<Float4>()) };
        let mut i = thread::index_1d();
        while i < n4 {
            let j = 4 * i + o;
            // SAFETY: i < n / 4, so j + 3 < n + o, src's length; when o % 4 == 0 the
            // Float4 j / 4 is src's elements j .. j + 3.
            let v = unsafe {
                if o.is_multiple_of(4) {
                    src4.read(j / 4)
                } else {
                    Float4::new(src.read(j), src.read(j + 1), src.read(j + 2), src.read(j + 3))
                }
            };
            // SAFETY: i < n / 4.
            unsafe { dst4.write(i, v) };
            i += thread::grid_size_1d();
        }
        let tail = n4 * 4 + thread::index_1d();
        if tail < n {
            // SAFETY: tail + o < n + o, src's length.
            unsafe { dst.write(tail, src.read(tail + o)) };
        }
    }
}
