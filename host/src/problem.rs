//! Problems: what an experiment's kernels are run on (an element count, a matrix, a
//! product's dimensions), the awkward ones every kernel is checked at, and default sizes.

use std::fmt;

use serde::Serialize;

use crate::device::DeviceInfo;
use crate::elem::Elem;
use crate::error::{Error, Result};

/// A dimension of a [`Problem`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// Elements per array (an elements problem).
    Len,
    /// A matrix's rows and columns.
    Rows,
    Cols,
    /// C (m x n) = A (m x k) B (k x n).
    M,
    N,
    K,
}

/// What a problem size is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// n elements per array (`--size` bytes per array).
    Elements,
    /// One rows x cols matrix (`--shape RxC`).
    Matrix,
    /// A product m x n x k (`--shape MxNxK`).
    Product,
}

impl Kind {
    /// How many numbers `--shape` takes (0: none).
    pub fn shape_rank(self) -> usize {
        match self {
            Kind::Elements => 0,
            Kind::Matrix => 2,
            Kind::Product => 3,
        }
    }

    /// The problem for `size` bytes per array (per matrix: square) of `elem`
    /// elements, or `shape`.
    pub fn problem(self, size: u64, elem: Elem, shape: Option<&[usize]>) -> Result<Problem> {
        let side = |power: f64| {
            let side = ((size / elem.bytes() as u64) as f64).powf(power).floor() as usize;
            if side == 0 {
                return Err(Error::Zero {
                    what: "--size (one matrix element)",
                });
            }
            Ok(side)
        };
        match (self, shape) {
            (Kind::Elements, _) => Ok(Problem::Elements {
                n: crate::buffers::elements(size, elem)?,
            }),
            (Kind::Matrix, Some(&[rows, cols])) => Ok(Problem::Matrix { rows, cols }),
            (Kind::Matrix, _) => {
                let s = side(0.5)?;
                Ok(Problem::Matrix { rows: s, cols: s })
            }
            (Kind::Product, Some(&[m, n, k])) => Ok(Problem::Product { m, n, k }),
            (Kind::Product, _) => {
                // The largest square matrices of `size` bytes each.
                let s = side(0.5)?;
                Ok(Problem::Product { m: s, n: s, k: s })
            }
        }
    }

    /// Problems that are not multiples of a warp, a block, a vector or a tile, and
    /// not square: where kernels' guards and tails are tested. The one list for the
    /// GPU check and the emulator (which leaves out what [`Problem::emulated`] says is
    /// too large for CPU threads).
    pub fn awkward(self) -> Vec<Problem> {
        match self {
            Kind::Elements => AWKWARD_N.iter().map(|&n| Problem::Elements { n }).collect(),
            Kind::Matrix => AWKWARD_2D
                .iter()
                .map(|&[rows, cols]| Problem::Matrix { rows, cols })
                .collect(),
            Kind::Product => AWKWARD_3D
                .iter()
                .map(|&[m, n, k]| Problem::Product { m, n, k })
                .collect(),
        }
    }
}

/// Element counts that are not multiples of 4, 32 or a block.
pub const AWKWARD_N: [usize; 7] = [1, 31, 33, 255, 1029, 4095, (1 << 20) + 7];
/// Matrices that are neither square nor multiples of a tile. The last has rows
/// of whole 16-byte steps both ways, as the copy engine needs (its partial tiles are
/// its zero fill and clipped stores).
pub const AWKWARD_2D: [[usize; 2]; 5] = [[1, 1], [33, 65], [1000, 17], [17, 1000], [36, 1004]];
/// Products likewise (m x n x k). The last has whole 128 x 128 blocks beside partial
/// ones, with k and n multiples of 8 and 4: the interior rung's unguarded loop runs
/// there, next to its guarded one; it is also one the copy engine can address (k
/// and n multiples of 4), so the Hopper rungs run there.
pub const AWKWARD_3D: [[usize; 3]; 5] = [
    [1, 1, 1],
    [33, 65, 17],
    [1000, 17, 33],
    [17, 33, 1000],
    [260, 136, 40],
];

/// A problem size, as an experiment measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Problem {
    /// n elements per array.
    Elements { n: usize },
    /// A rows x cols matrix.
    Matrix { rows: usize, cols: usize },
    /// C (m x n) = A (m x k) B (k x n).
    Product { m: usize, n: usize, k: usize },
}

impl Problem {
    /// The value of a dimension; a dimension the problem lacks is a declaration bug.
    pub fn dim(&self, d: Dim) -> usize {
        match (*self, d) {
            (Problem::Elements { n }, Dim::Len) => n,
            (Problem::Matrix { rows, .. }, Dim::Rows) => rows,
            (Problem::Matrix { cols, .. }, Dim::Cols) => cols,
            (Problem::Product { m, .. }, Dim::M) => m,
            (Problem::Product { n, .. }, Dim::N) => n,
            (Problem::Product { k, .. }, Dim::K) => k,
            (p, d) => panic!("a {p:?} problem has no {d:?} dimension"),
        }
    }

    /// Elements of the largest array: what the copy baseline moves.
    pub fn largest_array(&self) -> Option<usize> {
        match *self {
            Problem::Elements { n } => Some(n),
            Problem::Matrix { rows, cols } => rows.checked_mul(cols),
            Problem::Product { m, n, k } => m
                .checked_mul(k)?
                .max(k.checked_mul(n)?)
                .max(m.checked_mul(n)?)
                .into(),
        }
    }

    /// How the table and `check` show it: `33x65`, `4095 elements`.
    pub fn label(&self) -> String {
        match *self {
            Problem::Elements { n } => format!("{n} elements"),
            Problem::Matrix { rows, cols } => format!("{rows}x{cols}"),
            Problem::Product { m, n, k } => format!("{m}x{n}x{k}"),
        }
    }

    /// Whether the CPU emulator runs it whole in the tests (a million OS threads is
    /// the GPU's job).
    pub fn emulated(&self) -> bool {
        self.largest_array().is_some_and(|n| n <= 1 << 16)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Problem::Elements { n } => write!(f, "n = {n}"),
            Problem::Matrix { rows, cols } => write!(f, "{rows} x {cols}"),
            Problem::Product { m, n, k } => write!(f, "m = {m}, n = {n}, k = {k}"),
        }
    }
}

/// The default problem: bytes per array (per matrix), or a multiple of the L2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultSize {
    /// 8 x the GPU's L2, at least 256 MiB, so DRAM is measured rather than cache.
    BeyondL2,
    /// A conventional size of the experiment's own (an 8192 x 8192 transpose).
    Bytes(u64),
}

impl DefaultSize {
    pub fn bytes(self, info: &DeviceInfo) -> u64 {
        match self {
            DefaultSize::BeyondL2 => (8 * info.l2_bytes).max(256 << 20).next_multiple_of(1 << 20),
            DefaultSize::Bytes(b) => b,
        }
    }
}
