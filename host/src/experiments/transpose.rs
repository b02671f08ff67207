//! transpose: out (cols x rows) = in (rows x cols)ᵀ, four kernels from naive to
//! tiled and padded. Useful bytes: 2 x rows x cols x 4.

use kernels::transpose::{BLOCK_ROWS, TILE};

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant, Work,
};
use crate::launch::{Launch, MAX_GRID_X, MAX_GRID_YZ};
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

pub static EXPERIMENT: Experiment = Experiment {
    name: "transpose",
    about: "out = inᵀ: coalescing both ways needs a shared-memory tile; padding removes its bank conflicts",
    kind: Kind::Matrix,
    default_size: DefaultSize::Bytes(8192 * 8192 * 4),
    variants: &[
        Variant::new("naive-write", "transpose_naive_write", ARGS, over_input),
        Variant::new("naive-read", "transpose_naive_read", ARGS, over_output),
        Variant::new("tiled", "transpose_tiled", ARGS, over_input),
        Variant::new("tiled-padded", "transpose_tiled_padded", ARGS, over_input),
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
    let (gx, gy) = (cols.div_ceil(TILE) as u64, rows.div_ceil(TILE) as u64);
    if gx > MAX_GRID_X || gy > MAX_GRID_YZ {
        return Err(Error::TooLarge {
            what: format!("a {rows} x {cols} matrix"),
            why: format!("needs a {gx} x {gy} grid of tiles; CUDA allows {MAX_GRID_X} x {MAX_GRID_YZ}"),
        });
    }
    Ok(Launch {
        grid: (gx as u32, gy as u32, 1),
        block: (TILE as u32, BLOCK_ROWS as u32, 1),
        shared_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
