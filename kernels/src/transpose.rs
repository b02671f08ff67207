//! transpose: out (cols x rows) = in (rows x cols)ᵀ, both row-major. The four kernels
//! follow NVIDIA's transpose sample, each one step from the last: a 32 x 32 tile per
//! block of 32 x 8 threads, each thread handling 4 rows of the tile.

use crate::gpu::thread::{block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y};
use crate::gpu::{Global, GlobalMut, SharedArray};

/// Tile edge: one warp spans a tile row.
pub const TILE: usize = 32;
/// Threads per block along y; each thread covers TILE / BLOCK_ROWS rows.
pub const BLOCK_ROWS: usize = 8;

kernel! {
    /// Naive, strided write: a warp reads 32 consecutive floats of an input row
    /// (coalesced) and writes them down an output column, 4·rows bytes apart: 32
    /// sectors per store. Grid over the input: (ceil(cols/32), ceil(rows/32)).
    pub fn transpose_naive_write(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let x = block_idx_x() as usize * TILE + thread_idx_x() as usize;
        let y = block_idx_y() as usize * TILE + thread_idx_y() as usize;
        for k in 0..TILE / BLOCK_ROWS {
            let y = y + k * BLOCK_ROWS;
            if x < cols && y < rows {
                // SAFETY: x < cols and y < rows.
                unsafe { dst.write(x * rows + y, src.read(y * cols + x)) };
            }
        }
    }
}

kernel! {
    /// Naive, strided read: the mirror. A warp writes 32 consecutive floats of an
    /// output row (coalesced) and reads them down an input column (32 sectors).
    /// Grid over the output: (ceil(rows/32), ceil(cols/32)).
    pub fn transpose_naive_read(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let x = block_idx_x() as usize * TILE + thread_idx_x() as usize;
        let y = block_idx_y() as usize * TILE + thread_idx_y() as usize;
        for k in 0..TILE / BLOCK_ROWS {
            let y = y + k * BLOCK_ROWS;
            if x < rows && y < cols {
                // SAFETY: x < rows and y < cols.
                unsafe { dst.write(y * rows + x, src.read(x * cols + y)) };
            }
        }
    }
}

/// Both global accesses coalesced: read a tile row-wise into shared memory, then
/// write it out row-wise from the tile's columns. `pitch` is the tile's row length
/// in shared memory (TILE, or TILE + 1 to spread a column over all 32 banks).
#[inline(always)]
unsafe fn through_tile(
    tile: SharedArray<f32>,
    pitch: usize,
    rows: usize,
    cols: usize,
    src: Global<f32>,
    dst: GlobalMut<f32>,
) {
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let (bx, by) = (block_idx_x() as usize * TILE, block_idx_y() as usize * TILE);
    for k in 0..TILE / BLOCK_ROWS {
        let j = ty + k * BLOCK_ROWS;
        let (x, y) = (bx + tx, by + j);
        if x < cols && y < rows {
            // SAFETY: in bounds of src and of the tile (j < TILE, tx < TILE <= pitch).
            unsafe { tile.write(j * pitch + tx, src.read(y * cols + x)) };
        }
    }
    sync_threads();
    for k in 0..TILE / BLOCK_ROWS {
        let j = ty + k * BLOCK_ROWS;
        let (x, y) = (by + tx, bx + j);
        if x < rows && y < cols {
            // SAFETY: as above; the element was written before the barrier (x < rows, y < cols).
            unsafe { dst.write(y * rows + x, tile.read(tx * pitch + j)) };
        }
    }
}

kernel! {
    /// Tiled: both global accesses coalesced, but the tile's column read puts a warp's
    /// 32 lanes on one shared-memory bank (addresses 32 words apart): 32-way conflict.
    pub fn transpose_tiled(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let tile = shared_array![COALESCE_TRANSPOSE_TILE: [f32; TILE * TILE]];
        // SAFETY: the tile holds TILE x TILE floats at pitch TILE.
        unsafe { through_tile(tile, TILE, rows, cols, src, dst) }
    }
}

kernel! {
    /// Tiled and padded: rows of 33 floats put a tile column's 32 elements in 32
    /// different banks, so the column read is conflict-free.
    pub fn transpose_tiled_padded(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let tile = shared_array![COALESCE_TRANSPOSE_TILE_PADDED: [f32; TILE * (TILE + 1)]];
        // SAFETY: the tile holds TILE x (TILE + 1) floats at pitch TILE + 1.
        unsafe { through_tile(tile, TILE + 1, rows, cols, src, dst) }
    }
}
