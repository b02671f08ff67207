//! transpose: out (cols x rows) = in (rows x cols)ᵀ, four kernels from naive to
//! tiled and padded, then tuned padded tiles that keep more bytes in flight.
//! Useful bytes: 2 x rows x cols x 4.

use kernels::entry;
use kernels::gpu::tma::Swizzle;
use kernels::transpose::{BLOCK_ROWS, TILE, TILE64, TMA_TILE, TMA_TILE_FLOATS, VEC_THREADS_X, VEC_THREADS_Y};

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant, Work,
};
use crate::launch::{Launch, MAX_GRID_X, shared_for_blocks_per_sm90};
use crate::tensor_map::MapSpec;
use crate::twin;

const ARGS: &[Arg] = &[
    Arg::Dim(Dim::Rows),
    Arg::Dim(Dim::Cols),
    Arg::Buffer(0),
    Arg::Buffer(1),
];

/// Tiles over the input: x along its columns.
fn over_input(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    tiles(p.dim(Dim::Rows), p.dim(Dim::Cols))
}

/// Tiles over the output (cols x rows): the naive kernel that reads down columns.
fn over_output(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    tiles(p.dim(Dim::Cols), p.dim(Dim::Rows))
}

/// 64 x 64 tiles of 32 x 8 threads.
fn tiles_64(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    let block = (TILE as u32, BLOCK_ROWS as u32, 1);
    grid_of(p.dim(Dim::Rows), p.dim(Dim::Cols), (TILE64, TILE64), block)
}

/// 64 x 64 tiles of 32 x 8 threads, the grid in column order (x along the rows of tiles).
fn tiles_64_cols(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    let block = (TILE as u32, BLOCK_ROWS as u32, 1);
    grid_of(p.dim(Dim::Cols), p.dim(Dim::Rows), (TILE64, TILE64), block)
}

/// 64 x 64 tiles of 8 x 32 threads (a float4 each per row pass).
fn tiles_64_f32x4(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    let block = (VEC_THREADS_X as u32, VEC_THREADS_Y as u32, 1);
    grid_of(p.dim(Dim::Rows), p.dim(Dim::Cols), (TILE64, TILE64), block)
}

/// The copy engine's view: the input and the output in 32 x 32 boxes, swizzled.
const TMA_ARGS: &[Arg] = &[
    Arg::Dim(Dim::Rows),
    Arg::Map(MapSpec::matrix(0, (Dim::Rows, Dim::Cols), [32, 32], Swizzle::B128)),
    Arg::Map(MapSpec::matrix(1, (Dim::Cols, Dim::Rows), [32, 32], Swizzle::B128)),
];

/// One block of 4 warps per 64 x 64 tile, in column order (the kernel maps the block
/// index), with both tiles' shared memory, a 1024-byte boundary in it and a barrier:
/// six blocks to an SM.
fn tma_tiles(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    let (rows, cols) = (p.dim(Dim::Rows), p.dim(Dim::Cols));
    let tiles = (rows.div_ceil(TMA_TILE) as u64).saturating_mul(cols.div_ceil(TMA_TILE) as u64);
    if tiles > MAX_GRID_X {
        return Err(Error::TooLarge {
            what: format!("a {rows} x {cols} matrix"),
            why: format!("needs {tiles} blocks of one 64 x 64 tile; CUDA allows {MAX_GRID_X}"),
        });
    }
    Ok(Launch {
        grid: (tiles.max(1) as u32, 1, 1),
        block: (128, 1, 1),
        shared_bytes: ((2 * TMA_TILE_FLOATS + 258) * 4) as u32,
    })
}

/// [`tma_tiles`], as many to an SM as [`tiles_in_flight_per_sm`] asks, where their 33
/// KiB of shared memory let six in. The kernel uses the first 33 KiB.
fn tma_tiles_fit(p: &Problem, d: &DeviceInfo) -> Result<Launch> {
    Ok(Launch {
        shared_bytes: shared_for_blocks_per_sm90(tiles_in_flight_per_sm(d)),
        ..tma_tiles(p, d)?
    })
}

/// Tiles a TMA transpose keeps in flight per SM (2 to 6): Little's law, bytes in flight
/// = bandwidth x latency, scaled from an H100's three (two starve it, more crowd its
/// DRAM) by the GPU's DRAM bandwidth per SM over the H100's. An H200 moves 1.44x the
/// H100's bytes per SM, so four. Three where the driver does not report the bandwidth.
pub fn tiles_in_flight_per_sm(d: &DeviceInfo) -> u32 {
    let per_sm = |d: &DeviceInfo| d.peak_gb_per_s().map(|gb| gb / f64::from(d.sm_count.max(1)));
    match (per_sm(d), per_sm(&DeviceInfo::h100())) {
        (Some(gpu), Some(h100)) => ((3.0 * gpu / h100).round() as u32).clamp(2, 6),
        _ => 3,
    }
}

/// The copy engine's view for `tma-dense`: one unswizzled 64 x 64 box each way.
const DENSE_ARGS: &[Arg] = &[
    Arg::Dim(Dim::Rows),
    Arg::Map(MapSpec::matrix(0, (Dim::Rows, Dim::Cols), [TMA_TILE as u32; 2], Swizzle::None)),
    Arg::Map(MapSpec::matrix(1, (Dim::Cols, Dim::Rows), [TMA_TILE as u32; 2], Swizzle::None)),
];

/// The report's contrast: strided writes against the padded tile.
pub const NAIVE_WRITE: Variant = Variant::new("naive-write", &entry::transpose_naive_write, ARGS, over_input);
pub const TILED_PADDED: Variant = Variant::new("tiled-padded", &entry::transpose_tiled_padded, ARGS, over_input);

pub static EXPERIMENT: Experiment = Experiment {
    name: "transpose",
    about: "out = inᵀ: coalescing both ways needs a shared-memory tile; padding removes its bank conflicts",
    kind: Kind::Matrix,
    default_size: DefaultSize::Bytes(8192 * 8192 * 4),
    variants: &[
        NAIVE_WRITE,
        Variant::new("naive-read", &entry::transpose_naive_read, ARGS, over_output),
        Variant::new("tiled", &entry::transpose_tiled, ARGS, over_input),
        TILED_PADDED,
        // Tuned for the copy ceiling: 64 x 64 tiles, 16 elements in flight per thread.
        Variant::new("padded-64", &entry::transpose_padded_64, ARGS, tiles_64),
        // The same kernel, the blocks in column order: the resident ones write whole
        // output rows, as a copy writes.
        Variant::new("padded-64-cols", &entry::transpose_padded_64_cols, ARGS, tiles_64_cols),
        Variant::new("padded-64-f32x4", &entry::transpose_padded_64_f32x4, ARGS, tiles_64_f32x4),
        // The copy engine moves the tiles (sm_90), in boxes it swizzles.
        Variant::new("tma", &entry::transpose_tma, TMA_ARGS, tma_tiles),
        // One unswizzled 64 x 64 box each way: half as many box rows, each 256 bytes.
        Variant::new("tma-dense", &entry::transpose_tma_dense, DENSE_ARGS, tma_tiles),
        // The same kernel, as few tiles in flight as the GPU's bandwidth needs: three
        // blocks to an H100's SM, four to an H200's, instead of six (docs/perf-notes.md).
        Variant::new("tma-dense-fit", &entry::transpose_tma_dense, DENSE_ARGS, tma_tiles_fit),
    ],
    buffers: |p| {
        let len = p.dim(Dim::Rows).checked_mul(p.dim(Dim::Cols))?;
        Some(vec![Buffer::input("src", len), Buffer::output("dst", len)])
    },
    work: |p| Work::Bytes(8 * p.dim(Dim::Rows) as u64 * p.dim(Dim::Cols) as u64),
    reference: Reference::Elementwise {
        check: Check::Exact,
        // out[c][r] = in[r][c]
        expected: |p, _, input, _, i| {
            let (rows, cols) = (p.dim(Dim::Rows), p.dim(Dim::Cols));
            input.get(0, (i % rows) * cols + i / rows)
        },
    },
    twin: twin!("transpose.cu"),
};

/// A 2D grid of 32 x 32 tiles over a matrix of `rows` x `cols` (x along cols).
pub fn tiles(rows: usize, cols: usize) -> Result<Launch> {
    grid_of(rows, cols, (TILE, TILE), (TILE as u32, BLOCK_ROWS as u32, 1))
}

/// A 2D grid of blocks of `block` threads, each covering `span` = (rows, cols) of a
/// `rows` x `cols` matrix (x along cols).
pub fn grid_of(rows: usize, cols: usize, span: (usize, usize), block: (u32, u32, u32)) -> Result<Launch> {
    Launch::tiles("matrix", (rows, cols), span, block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::SHARED_PER_SM90;

    #[test]
    fn footprint_is_two_matrices() {
        let p = Problem::Matrix { rows: 33, cols: 65 };
        assert_eq!(EXPERIMENT.device_bytes(&p), Some(33 * 65 * 8));
    }

    #[test]
    fn grids_cover_every_tile() {
        let g = tiles(33, 65).unwrap();
        assert_eq!((g.grid.0, g.grid.1), (3, 2));
        assert_eq!(g.block, (32, 8, 1));
        assert!(tiles(usize::MAX / 2, 1).is_err());
        let info = DeviceInfo::h100();
        let p = Problem::Matrix { rows: 33, cols: 257 };
        let grid = |f: fn(&Problem, &DeviceInfo) -> Result<Launch>| f(&p, &info).unwrap().grid;
        assert_eq!(grid(tiles_64), (5, 1, 1));
        assert_eq!(grid(tiles_64_f32x4), (5, 1, 1));
        assert_eq!(grid(tiles_64_cols), (1, 5, 1));
        assert_eq!(tiles_64_f32x4(&p, &info).unwrap().block, (8, 32, 1));
    }

    #[test]
    fn tiles_in_flight_grow_with_bandwidth_per_sm() {
        let h100 = DeviceInfo::h100();
        // What an H200 reports: 2 x 3.201 GHz x 6016 bit / 8 = 4814 GB/s over 132 SMs.
        let h200 = DeviceInfo {
            memory_clock_khz: 3_201_000,
            bus_width_bits: 6016,
            ..h100.clone()
        };
        let unknown = DeviceInfo {
            memory_clock_khz: 0,
            ..h100.clone()
        };
        let fewer_sms = DeviceInfo { sm_count: 40, ..h100.clone() };
        assert_eq!(tiles_in_flight_per_sm(&h100), 3);
        assert_eq!(tiles_in_flight_per_sm(&h200), 4);
        assert_eq!(tiles_in_flight_per_sm(&unknown), 3);
        assert_eq!(tiles_in_flight_per_sm(&fewer_sms), 6);
        let p = Problem::Matrix { rows: 8192, cols: 8192 };
        for (gpu, blocks) in [(&h100, 3), (&h200, 4)] {
            let l = tma_tiles_fit(&p, gpu).unwrap();
            assert_eq!(SHARED_PER_SM90 / (l.shared_bytes + 1024), blocks);
            assert_eq!(l.grid, tma_tiles(&p, gpu).unwrap().grid);
        }
    }

    /// The awkward sizes take the float4 path of `padded-64-f32x4` on one side at most
    /// (no awkward shape has both sides a multiple of 4); these take it on both, with
    /// partial tiles, under the concurrent and both serial schedules (a missing or
    /// misplaced barrier shows under one of them).
    #[test]
    fn tuned_tiles_match_at_aligned_and_partial_sizes() {
        use crate::explain::emulate::{EmuLaunch, validate_with};
        use kernels::gpu::emu::Schedule;
        for (rows, cols) in [(64, 64), (100, 36), (36, 260), (4, 132), (65, 129), (600, 136)] {
            let p = Problem::Matrix { rows, cols };
            for name in ["padded-64", "padded-64-cols", "padded-64-f32x4"] {
                let v = EXPERIMENT.variant(name).unwrap();
                let run = EmuLaunch::new(&EXPERIMENT, v, p, &DeviceInfo::h100()).unwrap();
                for schedule in [Schedule::Concurrent, Schedule::Forward, Schedule::Reverse] {
                    let check = validate_with(&run, 11, schedule).unwrap();
                    assert!(check.ok, "{name} at {p} under {schedule:?}: {}", check.detail);
                }
            }
        }
    }
}
