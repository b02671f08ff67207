//! matmul: C = A B (f32, row-major), naive / accidental / remapped. Reported in
//! GFLOP/s (2 m n k per launch) and validated against an f64 CPU reference
//! ([`crate::validate::product`]).

use kernels::entry;
use kernels::matmul::TILE;

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::experiment::{
    Arg, Buffer, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant, Work,
};
use crate::launch::{Launch, MAX_GRID_X};
use crate::twin;

/// `(m, n, k, a, b, c)`: every matmul and SGEMM kernel's parameters.
pub const ARGS: &[Arg] = &[
    Arg::Dim(Dim::M),
    Arg::Dim(Dim::N),
    Arg::Dim(Dim::K),
    Arg::Buffer(0),
    Arg::Buffer(1),
    Arg::Buffer(2),
];

/// One thread per element of C in 32 x 32 blocks.
fn square(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    tiles(p, (TILE, TILE), (TILE as u32, TILE as u32, 1))
}

/// The same tiles with 1D blocks of 1024 threads.
fn flat(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    tiles(p, (TILE, TILE), ((TILE * TILE) as u32, 1, 1))
}

/// A, B and C of a product: what every matmul and SGEMM kernel takes.
pub fn buffers(p: &Problem) -> Option<Vec<Buffer>> {
    let (m, n, k) = (p.dim(Dim::M), p.dim(Dim::N), p.dim(Dim::K));
    Some(vec![
        Buffer::input("a", m.checked_mul(k)?),
        Buffer::input("b", k.checked_mul(n)?),
        Buffer::output("c", m.checked_mul(n)?),
    ])
}

/// 2 m n k FLOPs, and A and B read and C written once.
pub fn work(p: &Problem) -> Work {
    let (m, n, k) = (p.dim(Dim::M) as u64, p.dim(Dim::N) as u64, p.dim(Dim::K) as u64);
    Work::Flops {
        flops: 2 * m * n * k,
        bytes: 4 * (m * k + k * n + m * n),
    }
}

/// Thread x on rows (uncoalesced), and the two-line remap.
pub const NAIVE: Variant = Variant::new("naive", &entry::matmul_naive, ARGS, square);
pub const REMAPPED: Variant = Variant::new("remapped", &entry::matmul_remapped, ARGS, flat);

pub static EXPERIMENT: Experiment = Experiment {
    name: "matmul",
    about: "C = A B: which index threadIdx.x drives decides coalescing; a two-line remap fixes it",
    kind: Kind::Product,
    // 4096 x 4096 x 4096.
    default_size: DefaultSize::Bytes(4096 * 4096 * 4),
    variants: &[
        NAIVE,
        Variant::new("accidental", &entry::matmul_accidental, ARGS, square),
        REMAPPED,
    ],
    buffers,
    work,
    reference: Reference::Product { a: 0, b: 1, c: 2 },
    twin: twin!("matmul.cu"),
};

/// The largest element index the kernels' 32-bit arithmetic may form: the C++ twins
/// index with `int`, the Rust kernels with `u32`; both fit below 2^31.
pub const MAX_INDEX: u64 = i32::MAX as u64;

/// Refuses a product whose dimensions, or whose matrices' element counts (the largest
/// index the kernels form, `row * k + kk` and the like), do not fit 32-bit indices.
pub fn within_32_bit_indices(p: &Problem) -> Result<()> {
    let (m, n, k) = (p.dim(Dim::M) as u64, p.dim(Dim::N) as u64, p.dim(Dim::K) as u64);
    let largest = [m, n, k, m.saturating_mul(k), k.saturating_mul(n), m.saturating_mul(n)]
        .into_iter()
        .max()
        .unwrap_or(0);
    if largest > MAX_INDEX {
        return Err(Error::TooLarge {
            what: format!("a {m} x {n} x {k} product"),
            why: format!(
                "a matrix of {largest} elements is beyond the kernels' 32-bit indices (at most {MAX_INDEX})"
            ),
        });
    }
    Ok(())
}

/// A grid of `bm` x `bn` tiles of C, `block` threads each, within CUDA's grid limits
/// and the kernels' 32-bit indices: the launch rule of every product kernel.
pub fn tiles(p: &Problem, (bm, bn): (usize, usize), block: (u32, u32, u32)) -> Result<Launch> {
    within_32_bit_indices(p)?;
    Launch::tiles("product", (p.dim(Dim::M), p.dim(Dim::N)), (bm, bn), block)
}

/// A one-dimensional grid of `blocks` blocks of `threads`, each with `shared_bytes`
/// of dynamic shared memory: the Hopper rungs', whose kernels order the tiles
/// themselves. Refused in one line beyond CUDA's grid.
pub fn blocks_1d(p: &Problem, blocks: u64, threads: usize, shared_bytes: usize) -> Result<Launch> {
    if blocks > MAX_GRID_X {
        return Err(Error::TooLarge {
            what: format!("a product of {p}"),
            why: format!("needs {blocks} blocks; CUDA allows {MAX_GRID_X}"),
        });
    }
    Ok(Launch {
        grid: (blocks as u32, 1, 1),
        block: (threads as u32, 1, 1),
        shared_bytes: shared_bytes as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_and_footprint() {
        let p = Problem::Product { m: 33, n: 65, k: 17 };
        assert_eq!(EXPERIMENT.device_bytes(&p), Some(4 * (33 * 17 + 17 * 65 + 33 * 65)));
        assert_eq!(
            (EXPERIMENT.work)(&p),
            Work::Flops {
                flops: 2 * 33 * 65 * 17,
                bytes: 4 * (33 * 17 + 17 * 65 + 33 * 65)
            }
        );
    }

    #[test]
    fn grids_cover_c() {
        let p = Problem::Product { m: 33, n: 65, k: 17 };
        let l = EXPERIMENT.launches(&p, &DeviceInfo::h100()).unwrap();
        assert_eq!(l[0].unwrap().grid, (3, 2, 1));
        assert_eq!(l[2].unwrap().block, (1024, 1, 1));
    }

    #[test]
    fn products_beyond_32_bit_indices_are_refused() {
        // 46341^2 > 2^31: A alone has more elements than an int index reaches.
        let p = Problem::Product { m: 46341, n: 1, k: 46341 };
        let e = EXPERIMENT.launches(&p, &DeviceInfo::h100()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "a 46341 x 1 x 46341 product is too large: a matrix of 2147488281 elements is beyond the kernels' 32-bit indices (at most 2147483647)"
        );
        // The largest that fits.
        let p = Problem::Product { m: 46340, n: 46340, k: 46340 };
        assert!(EXPERIMENT.launches(&p, &DeviceInfo::h100()).is_ok());
        let p = Problem::Product { m: 1, n: 1, k: 1 << 31 };
        assert!(EXPERIMENT.launches(&p, &DeviceInfo::h100()).is_err());
    }
}
