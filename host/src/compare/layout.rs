//! How cuBLAS is handed a row-major product C = A B: each operand stored row-major or
//! column-major ([`Layout`]), and the column-major call that computes it ([`Call`]).
//!
//! cuBLAS's rate on one product moves with how its operands are laid out (it picks
//! other kernels), so `compare` times every layout and sets the kernels beside the
//! fastest: cuBLAS at its best on the same work, types and compute.

use std::ffi::c_int;

use cudarc::cublas::sys::cublasOperation_t;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::prepared::Gemm;

/// How A (m x k) and B (k x n) are stored: per operand, in order A then B, `N`
/// row-major as the product reads it, `T` column-major (its transpose stored
/// row-major). C is row-major in every layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Layout {
    /// Both row-major: the product as the kernels take it.
    NN,
    /// A column-major, B row-major.
    TN,
    /// A row-major, B column-major.
    NT,
    /// Both column-major.
    TT,
}

impl Layout {
    /// Every layout, the kernels' own first.
    pub const ALL: [Layout; 4] = [Layout::NN, Layout::TN, Layout::NT, Layout::TT];

    /// `NN`, `TN`, `NT`, `TT`: A's letter, then B's.
    pub fn label(self) -> &'static str {
        match self {
            Layout::NN => "NN",
            Layout::TN => "TN",
            Layout::NT => "NT",
            Layout::TT => "TT",
        }
    }

    /// A is stored column-major.
    pub fn a_col_major(self) -> bool {
        matches!(self, Layout::TN | Layout::TT)
    }

    /// B is stored column-major.
    pub fn b_col_major(self) -> bool {
        matches!(self, Layout::NT | Layout::TT)
    }
}

/// One column-major cuBLAS GEMM call's shape and operands (the routine's types and
/// scalars aside): C^T (n x m) = op(first) op(second), where a row-major matrix is
/// its column-major transpose, so the first operand is B and the second A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    pub transa: cublasOperation_t,
    pub transb: cublasOperation_t,
    pub m: c_int,
    pub n: c_int,
    pub k: c_int,
    pub a: u64,
    pub lda: c_int,
    pub b: u64,
    pub ldb: c_int,
    pub c: u64,
    pub ldc: c_int,
}

/// The 32-bit dimensions cuBLAS takes, or a clean error.
fn dims(g: &Gemm) -> Result<(c_int, c_int, c_int)> {
    let dim = |v: usize, what: &str| {
        c_int::try_from(v).map_err(|_| Error::TooLarge {
            what: format!("{what} = {v}"),
            why: "cuBLAS takes 32-bit matrix dimensions".into(),
        })
    };
    Ok((dim(g.m, "m")?, dim(g.n, "n")?, dim(g.k, "k")?))
}

impl Call {
    /// Row-major C = A B on `g`'s buffers with A and B stored as `layout` says. The
    /// buffers hold m x k and k x n elements either way; only how they are read
    /// changes. cuBLAS computes C^T = B^T A^T, (n, m, k): row-major B (k x n) is its
    /// column-major n x k transpose, taken as it is (N, ld n); column-major B is
    /// k x n read transposed (T, ld k). Likewise row-major A is k x m (N, ld k) and
    /// column-major A is m x k (T, ld m). C^T is n x m, ld n.
    pub fn new(g: &Gemm, layout: Layout) -> Result<Call> {
        use cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
        let (m, n, k) = dims(g)?;
        let (transa, lda) = if layout.b_col_major() { (T, k) } else { (N, n) };
        let (transb, ldb) = if layout.a_col_major() { (T, m) } else { (N, k) };
        Ok(Call {
            transa,
            transb,
            m: n,
            n: m,
            k,
            a: g.b,
            lda,
            b: g.a,
            ldb,
            c: g.c,
            ldc: n,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elem::Elem;

    fn gemm(m: usize, n: usize, k: usize) -> Gemm {
        Gemm {
            m,
            n,
            k,
            a: 0xa000,
            b: 0xb000,
            c: 0xc000,
            input: Elem::F32,
            output: Elem::F32,
        }
    }

    /// Row-major C (300 x 200) = A (300 x 100) B (100 x 200): B first, its letter
    /// and leading dimension from B's storage, A's from A's, C^T's n.
    #[test]
    fn each_layout_gives_its_transposes_and_leading_dimensions() {
        use cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
        let g = gemm(300, 200, 100);
        let got: Vec<_> = Layout::ALL
            .iter()
            .map(|&l| {
                let c = Call::new(&g, l).unwrap();
                assert_eq!((c.m, c.n, c.k), (200, 300, 100), "{l:?}");
                assert_eq!((c.a, c.b, c.c, c.ldc), (0xb000, 0xa000, 0xc000, 200), "{l:?}");
                (l.label(), c.transa, c.lda, c.transb, c.ldb)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("NN", N, 200, N, 100),
                ("TN", N, 200, T, 300),
                ("NT", T, 100, N, 100),
                ("TT", T, 100, T, 300),
            ]
        );
    }

    /// cuBLAS's definition of GEMM, column-major: C[i + j ldc] = sum over p of
    /// op(A)[i, p] op(B)[p, j], op(X)[r, s] being X[r + s ld] for N, X[s + r ld] for T.
    fn column_major_gemm(call: &Call, memory: &dyn Fn(u64, usize) -> f64) -> Vec<f64> {
        let (m, n, k) = (call.m as usize, call.n as usize, call.k as usize);
        let at = |op: cublasOperation_t, base: u64, ld: c_int, r: usize, s: usize| {
            let ld = ld as usize;
            match op {
                cublasOperation_t::CUBLAS_OP_N => memory(base, r + s * ld),
                _ => memory(base, s + r * ld),
            }
        };
        let mut c = vec![0.0; call.ldc as usize * n];
        for j in 0..n {
            for i in 0..m {
                c[i + j * call.ldc as usize] = (0..k)
                    .map(|p| {
                        at(call.transa, call.a, call.lda, i, p) * at(call.transb, call.b, call.ldb, p, j)
                    })
                    .sum();
            }
        }
        c
    }

    /// On every layout, with A and B stored as it says, the call's column-major result
    /// is the row-major product: the same numbers at the same places in C.
    #[test]
    fn every_layout_computes_the_row_major_product() {
        let (m, n, k) = (5, 3, 4);
        let a = |i: usize, p: usize| (i * 7 + p * 3) as f64 % 11.0 - 5.0;
        let b = |p: usize, j: usize| (p * 5 + j * 2) as f64 % 7.0 - 3.0;
        let want: Vec<f64> = (0..m * n)
            .map(|x| (0..k).map(|p| a(x / n, p) * b(p, x % n)).sum())
            .collect();
        let g = gemm(m, n, k);
        for layout in Layout::ALL {
            // A's element (i, p) at i * k + p row-major, i + p * m column-major.
            let stored_a: Vec<f64> = (0..m * k)
                .map(|x| match layout.a_col_major() {
                    false => a(x / k, x % k),
                    true => a(x % m, x / m),
                })
                .collect();
            let stored_b: Vec<f64> = (0..k * n)
                .map(|x| match layout.b_col_major() {
                    false => b(x / n, x % n),
                    true => b(x % k, x / k),
                })
                .collect();
            let memory = |base: u64, i: usize| match base {
                0xa000 => stored_a[i],
                0xb000 => stored_b[i],
                _ => panic!("read of {base:#x}"),
            };
            let call = Call::new(&g, layout).unwrap();
            assert_eq!(column_major_gemm(&call, &memory), want, "{layout:?}");
        }
    }

    #[test]
    fn labels_and_json_name_a_then_b() {
        assert_eq!(Layout::ALL.map(Layout::label), ["NN", "TN", "NT", "TT"]);
        assert!(Layout::TN.a_col_major() && !Layout::TN.b_col_major());
        assert!(!Layout::NT.a_col_major() && Layout::NT.b_col_major());
        assert_eq!(serde_json::to_string(&Layout::NT).unwrap(), "\"NT\"");
        assert_eq!(serde_json::from_str::<Layout>("\"TT\"").unwrap(), Layout::TT);
    }

    #[test]
    fn dimensions_past_32_bits_are_refused() {
        let e = Call::new(&gemm(1 << 31, 2, 2), Layout::NN).unwrap_err();
        assert!(e.to_string().contains("32-bit"), "{e}");
    }
}
