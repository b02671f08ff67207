//! pitch: `coalesce calibrate`'s gather down columns. Lane l of a warp reads one float4
//! of row r + l of a view whose rows lie `pitch` float4s apart, so every warp request
//! reads 32 16-byte segments one pitch apart, as a column of a row-major matrix is
//! read (saxpy's f32x4-strided, a transpose's writes). Sweeping the pitch at a fixed
//! span (rows x pitch), and the span at a fixed pitch, separates what a request costs
//! for how far apart its addresses lie (DRAM rows, the pages one request touches) from
//! how much memory the whole launch walks (the pages all requests touch). The three
//! kernels are the three shapes a scattered request takes: a gather, a scatter, and
//! an update (a store to what the same thread just loaded, saxpy's y).
//!
//! Each walks in a grid-stride loop, so the host chooses how many iterations a thread
//! runs: one (a thread per float4) or several, as a grid sized to the GPU runs them.
//! With k iterations a wave's blocks are at k places of the walk at once (saxpy's
//! f32x4-strided runs two), which a read-modify-write stream pays for in DRAM.

use crate::gpu::thread::{grid_size_1d, index_1d};
use crate::gpu::{Float4, Global, GlobalMut};

/// Threads per block.
pub const BLOCK: u32 = 256;

kernel! {
    /// Index g (from the thread's, a grid apart) reads float4 (g mod rows, g / rows)
    /// of the view, element (g mod rows) x pitch + g / rows, for g < rows x cols, and
    /// stores the sum of its four floats at out[g] (a coalesced store, a quarter of
    /// the bytes read). Rows come as log2(rows), so the split of g is a mask and a
    /// shift, not a division.
    pub fn pitch_read(rows_log2: u32, pitch: usize, cols: usize, src: Global<Float4>, out: GlobalMut<f32>) {
        let mut g = index_1d();
        while g >> rows_log2 < cols {
            let (r, c) = (g & ((1 << rows_log2) - 1), g >> rows_log2);
            // SAFETY: r < rows and c < cols <= pitch: inside the host's rows x pitch
            // float4s; out holds rows x cols floats.
            unsafe {
                let v = src.read(r * pitch + c);
                out.write(g, v.x + v.y + v.z + v.w);
            }
            g += grid_size_1d();
        }
    }
}

kernel! {
    /// The same walk, writing: index g stores `value` in all four floats of float4
    /// (g mod rows, g / rows), for g < rows x cols. 16 bytes of a 32-byte sector per
    /// lane, as saxpy's f32x4-strided writes y.
    pub fn pitch_write(rows_log2: u32, pitch: usize, cols: usize, value: f32, dst: GlobalMut<Float4>) {
        let mut g = index_1d();
        while g >> rows_log2 < cols {
            let (r, c) = (g & ((1 << rows_log2) - 1), g >> rows_log2);
            // SAFETY: r < rows and c < cols <= pitch: inside the host's rows x pitch float4s.
            unsafe { dst.write(r * pitch + c, Float4::new(value, value, value, value)) };
            g += grid_size_1d();
        }
    }
}

kernel! {
    /// The same walk, in place: index g loads float4 (g mod rows, g / rows) and stores
    /// 2 v - 1 back to it, for g < rows x cols: a gather and, of the sectors it just
    /// read, a scatter, as saxpy's f32x4-strided updates y. 1.0 is the update's fixed
    /// point, so a later `pitch_read` of `pitch_write`'s 1.0s still sums to 4.
    pub fn pitch_update(rows_log2: u32, pitch: usize, cols: usize, dst: GlobalMut<Float4>) {
        let mut g = index_1d();
        while g >> rows_log2 < cols {
            let (r, c) = (g & ((1 << rows_log2) - 1), g >> rows_log2);
            let at = r * pitch + c;
            // SAFETY: r < rows and c < cols <= pitch: inside the host's rows x pitch float4s.
            unsafe { dst.write(at, dst.read(at).axpy(2.0, Float4::new(-1.0, -1.0, -1.0, -1.0))) };
            g += grid_size_1d();
        }
    }
}
