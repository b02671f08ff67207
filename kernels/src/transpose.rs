//! transpose: out (cols x rows) = in (rows x cols)ᵀ, both row-major. The four kernels
//! follow NVIDIA's transpose sample, each one step from the last: a 32 x 32 tile per
//! block of 32 x 8 threads, each thread handling 4 rows of the tile.

use crate::gpu::ring::Ring;
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y};
use crate::gpu::tma::{self, TensorMap, swizzled_128};
use crate::gpu::{Float4, Global, GlobalMut, SharedArray};

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

// Tuned for the copy ceiling: the padded tile of
// `transpose_tiled_padded`, with more bytes in flight per thread and per block.

/// Edge of the large tile of [`transpose_padded_64`] and [`transpose_padded_64_f32x4`].
pub const TILE64: usize = 64;
/// Threads along x of [`transpose_padded_64_f32x4`]: 8 float4s span 32 floats, so a
/// warp covers 4 rows of 128 bytes.
pub const VEC_THREADS_X: usize = 8;
/// Threads along y of [`transpose_padded_64_f32x4`].
pub const VEC_THREADS_Y: usize = 32;

/// The 64 x 64 padded tile whose input corner is (`by`, `bx`) (row, column), through 32
/// x 8 threads: each thread loads 16 elements (two columns 32 apart, eight rows) before
/// the barrier, so 64 bytes per thread and 16 KiB per block are in flight, 4x the 32 x
/// 32 tile's. A warp still reads and writes 128 consecutive bytes per access; a tile
/// column's 32 lanes fall in 32 banks.
#[inline(always)]
unsafe fn padded_64(
    tile: SharedArray<f32>,
    (bx, by): (usize, usize),
    rows: usize,
    cols: usize,
    src: Global<f32>,
    dst: GlobalMut<f32>,
) {
    const PITCH: usize = TILE64 + 1;
    const K: usize = TILE64 / BLOCK_ROWS;
    const C: usize = TILE64 / TILE;
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    // Every load first, then every shared store: 16 loads in flight per thread.
    let mut v = [[0.0f32; C]; K];
    for (k, row) in v.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            let (x, y) = (bx + tx + c * TILE, by + ty + k * BLOCK_ROWS);
            if x < cols && y < rows {
                // SAFETY: x < cols and y < rows.
                *v = unsafe { src.read(y * cols + x) };
            }
        }
    }
    for (k, row) in v.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            // SAFETY: row ty + 8 k < 64, column tx + 32 c < 64 < PITCH: in the tile.
            unsafe { tile.write((ty + k * BLOCK_ROWS) * PITCH + tx + c * TILE, v) };
        }
    }
    sync_threads();
    for k in 0..K {
        for c in 0..C {
            let (i, j) = (tx + c * TILE, ty + k * BLOCK_ROWS);
            let (x, y) = (by + i, bx + j);
            if x < rows && y < cols {
                // SAFETY: in bounds of dst and of the tile; written before the barrier.
                unsafe { dst.write(y * rows + x, tile.read(i * PITCH + j)) };
            }
        }
    }
}

kernel! {
    /// Padded 64 x 64 tile (pitch 65), 32 x 8 threads, 16 elements in flight per thread
    /// (see `padded_64`); blocks in row order: x along the input's columns of tiles.
    /// Grid: (ceil(cols/64), ceil(rows/64)).
    pub fn transpose_padded_64(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let tile = shared_array![COALESCE_TRANSPOSE_PADDED_64: [f32; TILE64 * (TILE64 + 1)]];
        let origin = (block_idx_x() as usize * TILE64, block_idx_y() as usize * TILE64);
        // SAFETY: the tile holds 64 x 65 floats.
        unsafe { padded_64(tile, origin, rows, cols, src, dst) }
    }
}

kernel! {
    /// padded-64 with the blocks in column order: x along the input's rows of tiles.
    /// The blocks resident at once then cover a few whole columns of tiles, so they
    /// write each output row from start to end, as a copy writes, and read 256-byte
    /// pieces of many input rows (row order is the other way round).
    /// Grid: (ceil(rows/64), ceil(cols/64)).
    pub fn transpose_padded_64_cols(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let tile = shared_array![COALESCE_TRANSPOSE_PADDED_64_COLS: [f32; TILE64 * (TILE64 + 1)]];
        let origin = (block_idx_y() as usize * TILE64, block_idx_x() as usize * TILE64);
        // SAFETY: the tile holds 64 x 65 floats.
        unsafe { padded_64(tile, origin, rows, cols, src, dst) }
    }
}

kernel! {
    /// Padded 64 x 64 tile (pitch 65), 8 x 32 threads, 16-byte global accesses: each
    /// thread loads 4 Float4s (16 elements, all before the barrier) and stores 4, so a
    /// warp reads 4 rows x 128 consecutive bytes per instruction with a quarter of the
    /// instructions; 8 float4s x 4 rows per warp keeps shared stores and column reads
    /// conflict-free. Float4 loads need cols % 4 == 0 and stores rows % 4 == 0 (16-byte
    /// aligned rows); otherwise that side takes four 4-byte accesses.
    /// Grid: (ceil(cols/64), ceil(rows/64)).
    pub fn transpose_padded_64_f32x4(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        const PITCH: usize = TILE64 + 1;
        // Float4s per tile row, and passes of VEC_THREADS_Y rows x 8 float4s.
        const ROW4: usize = TILE64 / 4;
        const PASSES: usize = TILE64 * ROW4 / (VEC_THREADS_X * VEC_THREADS_Y);
        let tile = shared_array![COALESCE_TRANSPOSE_PADDED_64_F32X4: [f32; TILE64 * (TILE64 + 1)]];
        let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
        let (bx, by) = (block_idx_x() as usize * TILE64, block_idx_y() as usize * TILE64);
        // SAFETY: device allocations are 256-byte aligned; only used where rows are
        // 16-byte aligned (cols % 4 == 0 for src, rows % 4 == 0 for dst).
        let (src4, dst4) = unsafe { (src.cast::<Float4>(), dst.cast::<Float4>()) };
        // Pass p covers tile rows (p / 2) * 32 + ty, float4 columns (p % 2) * 8 + tx.
        let at = |p: usize| ((p / 2) * VEC_THREADS_Y + ty, (p % 2) * VEC_THREADS_X + tx);
        let mut v = [Float4::default(); PASSES];
        for (p, v) in v.iter_mut().enumerate() {
            let (j, c) = at(p);
            let (x, y) = (bx + 4 * c, by + j);
            if y < rows && x < cols {
                if cols.is_multiple_of(4) {
                    // SAFETY: x is a multiple of 4 below cols, a multiple of 4: x + 3 < cols.
                    *v = unsafe { src4.read((y * cols + x) / 4) };
                } else {
                    let e = |q: usize| if x + q < cols {
                        // SAFETY: x + q < cols and y < rows.
                        unsafe { src.read(y * cols + x + q) }
                    } else {
                        0.0
                    };
                    *v = Float4::new(e(0), e(1), e(2), e(3));
                }
            }
        }
        for (p, v) in v.iter().enumerate() {
            let (j, c) = at(p);
            let base = j * PITCH + 4 * c;
            // SAFETY: j < 64 and 4 c + 3 < 64 < PITCH: in the tile.
            unsafe {
                tile.write(base, v.x);
                tile.write(base + 1, v.y);
                tile.write(base + 2, v.z);
                tile.write(base + 3, v.w);
            }
        }
        sync_threads();
        // Pass p: output row r (input column bx + r), float4 c of it (input rows by + 4c ..).
        for p in 0..PASSES {
            let (r, c) = at(p);
            let (x, y) = (by + 4 * c, bx + r);
            if y < cols && x < rows {
                // SAFETY: 4 c + 3 < 64 and r < 64 < PITCH: in the tile, written before the barrier.
                let t = |q: usize| unsafe { tile.read((4 * c + q) * PITCH + r) };
                if rows.is_multiple_of(4) {
                    // SAFETY: x is a multiple of 4 below rows, a multiple of 4: x + 3 < rows.
                    unsafe { dst4.write((y * rows + x) / 4, Float4::new(t(0), t(1), t(2), t(3))) };
                } else {
                    for q in 0..4 {
                        if x + q < rows {
                            // SAFETY: x + q < rows and y < cols.
                            unsafe { dst.write(y * rows + x + q, t(q)) };
                        }
                    }
                }
            }
        }
    }
}

/// `tma`: a block's tile edge (four 32 x 32 boxes of the copy engine).
pub const TMA_TILE: usize = 64;
/// Floats of one tile in shared memory: the loaded tile, then the transposed one.
pub const TMA_TILE_FLOATS: usize = TMA_TILE * TMA_TILE;

/// A TMA transpose's block: a ring of one stage, the loaded tile (the transposed tile
/// follows it, then the barrier), and the corner (row, column) of its input tile.
/// Blocks go down the columns of tiles.
///
/// # Safety
/// The launch has 2 TMA_TILE_FLOATS + 258 floats of dynamic shared memory (the tiles
/// from a 1024-byte boundary inside, and the barrier).
#[inline(always)]
unsafe fn tma_tile(rows: usize) -> (Ring, (usize, usize)) {
    // SAFETY: the caller's.
    let tiles = unsafe { dynamic_shared_array::<f32>(2 * TMA_TILE_FLOATS + 258).aligned(1024) };
    let ring = Ring::new(tiles, 1, TMA_TILE_FLOATS).with_barriers_at(2 * TMA_TILE_FLOATS);
    let tile_rows = rows.div_ceil(TMA_TILE);
    let t = block_idx_x() as usize;
    (ring, ((t % tile_rows) * TMA_TILE, (t / tile_rows) * TMA_TILE))
}

kernel! {
    #[requires(sm_90a)]
    /// The copy engine loads and stores the tiles: one thread names four 32 x 32 boxes
    /// (a 64 x 64 tile) and the hardware reads their 128-byte rows as whole lines,
    /// swizzled so that each warp reads a box by rows and writes its transpose by rows
    /// with no bank conflict; then one thread stores the transposed boxes. Blocks go
    /// down the columns of tiles, so the blocks resident at once write whole output
    /// rows. Boxes past the edges are zero-filled on load and dropped on store.
    pub fn transpose_tma(rows: usize, src: Global<TensorMap>, dst: Global<TensorMap>) {
        // SAFETY: the host launches 128 threads with tma_tile's shared memory, maps of
        // the rows x cols input and the cols x rows output in swizzled 32 x 32 boxes,
        // and a block per tile.
        unsafe {
            let (ring, (r0, c0)) = tma_tile(rows);
            let tiles = ring.tiles();
            let tid = thread_idx_x() as usize;
            if tid == 0 {
                ring.init();
                let full = ring.acquire(ring.producer_start());
                for b in 0..4 {
                    let at = [(c0 + 32 * (b % 2)) as i32, (r0 + 32 * (b / 2)) as i32];
                    tma::load_2d(src, at, tiles, 1024 * b, full);
                }
            }
            ring.sync();
            ring.wait(ring.consumer_start());
            // Warp w transposes box (w / 2, w % 2) into box (w % 2, w / 2).
            let (w, lane) = (tid / 32, tid % 32);
            let (from, to) = (1024 * w, TMA_TILE_FLOATS + 1024 * (2 * (w % 2) + w / 2));
            for q in 0..8 {
                let v = tiles.read4(from + swizzled_128(lane, 4 * q));
                tiles.write(to + swizzled_128(4 * q, lane), v.x);
                tiles.write(to + swizzled_128(4 * q + 1, lane), v.y);
                tiles.write(to + swizzled_128(4 * q + 2, lane), v.z);
                tiles.write(to + swizzled_128(4 * q + 3, lane), v.w);
            }
            // The copy engine reads what the threads wrote.
            tma::fence_proxy_async();
            sync_threads();
            if tid == 0 {
                for b in 0..4 {
                    let at = [(r0 + 32 * (b % 2)) as i32, (c0 + 32 * (b / 2)) as i32];
                    tma::store_2d(dst, at, tiles, TMA_TILE_FLOATS + 1024 * b);
                }
                tma::commit_group();
                tma::wait_group_read::<0>();
            }
        }
    }
}

kernel! {
    #[requires(sm_90a)]
    /// `tma` with one 64 x 64 box each way and no swizzle: the copy engine moves the
    /// tile in 64 rows of 256 bytes each way, half as many rows as four swizzled 32 x 32
    /// boxes. The threads do the swizzle's work: lane l reads tile row l's float4s in
    /// an order rotated by l, so each quarter-warp touches eight different 16-byte bank
    /// groups, and writes element k of float4 c to output row 4c + k at column l: bank
    /// l. Blocks go down the columns of tiles, as in `tma`.
    pub fn transpose_tma_dense(rows: usize, src: Global<TensorMap>, dst: Global<TensorMap>) {
        // SAFETY: the host launches 128 threads with tma_tile's shared memory (the
        // 1024-byte boundary unused), maps of the rows x cols input and the cols x rows
        // output in unswizzled 64 x 64 boxes, and a block per tile.
        unsafe {
            let (ring, (r0, c0)) = tma_tile(rows);
            let tiles = ring.tiles();
            let tid = thread_idx_x() as usize;
            if tid == 0 {
                ring.init();
            }
            // Initialised before the block barrier, armed after it: in one branch with the
            // load, ptxas runs it as warp-wide uniform instructions, and racecheck reports
            // the initialisation and the arrival as a race inside warp 0.
            ring.sync();
            if tid == 0 {
                let full = ring.acquire(ring.producer_start());
                tma::load_2d(src, [c0 as i32, r0 as i32], tiles, 0, full);
            }
            ring.wait(ring.consumer_start());
            // Warp w: tile rows 32 (w / 2) + lane, float4 columns 8 (w % 2) .. + 8.
            let (w, lane) = (tid / 32, tid % 32);
            let r = 32 * (w / 2) + lane;
            for i in 0..8 {
                let c = (8 * (w % 2) + i + lane) % 16;
                let v = tiles.read4(r * TMA_TILE + 4 * c);
                let to = TMA_TILE_FLOATS + 4 * c * TMA_TILE + r;
                tiles.write(to, v.x);
                tiles.write(to + TMA_TILE, v.y);
                tiles.write(to + 2 * TMA_TILE, v.z);
                tiles.write(to + 3 * TMA_TILE, v.w);
            }
            tma::fence_proxy_async();
            sync_threads();
            if tid == 0 {
                tma::store_2d(dst, [r0 as i32, c0 as i32], tiles, TMA_TILE_FLOATS);
                tma::commit_group();
                tma::wait_group_read::<0>();
            }
        }
    }
}
