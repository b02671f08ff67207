//! cuBLAS SGEMM through cudarc, on the harness's stream and buffers: the reference
//! a matmul kernel is measured against.
//!
//! cuBLAS runs in the context current on the thread, which is the primary context
//! cust made current in [`Gpu::open`]: the same one the kernels and their twins use,
//! so device pointers from cust's buffers are valid here as they are.

use std::ffi::c_int;

use cudarc::cublas::result as cb;
use cudarc::cublas::sys::{self, cublasMath_t, cublasOperation_t};
use serde::{Deserialize, Serialize};

use super::libs::{self, Found, Lib};
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::harness::Gemm;

const LIB: Lib = Lib {
    label: "cuBLAS",
    stem: "cublas",
    // SAFETY: only tries to open the library.
    present: || unsafe { sys::is_culib_present() },
};

/// How cuBLAS may compute an FP32 product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Math {
    /// Plain FP32 (CUBLAS_DEFAULT_MATH): what a matmul kernel computes.
    Fp32,
    /// TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH): faster, 10-bit mantissas.
    Tf32,
}

impl Math {
    pub fn label(self) -> &'static str {
        match self {
            Math::Fp32 => "FP32",
            Math::Tf32 => "TF32",
        }
    }
    fn mode(self) -> cublasMath_t {
        match self {
            Math::Fp32 => cublasMath_t::CUBLAS_DEFAULT_MATH,
            Math::Tf32 => cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
        }
    }
}

/// A cuBLAS handle bound to one [`Gpu`]'s stream. Drop it before the `Gpu`.
pub struct Cublas {
    handle: sys::cublasHandle_t,
    pub found: Found,
    /// major * 10000 + minor * 100 + patch, as cuBLAS reports it.
    pub version: i32,
}

impl Cublas {
    /// Finds cuBLAS, makes a handle in the current (primary) context and binds it
    /// to `gpu`'s stream. The error is one line for the user.
    pub fn load(gpu: &Gpu) -> std::result::Result<Cublas, String> {
        let found = libs::locate(&LIB, &libs::toolkit_dirs()).map_err(|e| e.to_string())?;
        let handle = libs::guarded("cuBLAS", "cublasCreate", cb::create_handle)?.map_err(|e| {
            format!("cuBLAS ({found}) could not create a handle: {e} (is the driver older than the toolkit?)")
        })?;
        let mut cublas = Cublas {
            handle,
            found,
            version: 0,
        };
        let stream = gpu.stream.as_inner() as sys::cudaStream_t;
        // SAFETY: a live handle and a live stream of the current context.
        unsafe { cb::set_stream(cublas.handle, stream) }
            .map_err(|e| format!("cuBLAS could not use the harness's stream: {e}"))?;
        let mut version: c_int = 0;
        let status = libs::guarded("cuBLAS", "cublasGetVersion", || {
            // SAFETY: a live handle and a valid out-pointer.
            unsafe { sys::cublasGetVersion_v2(cublas.handle, &mut version) }
        })?;
        status
            .result()
            .map_err(|e| format!("cuBLAS could not report its version: {e}"))?;
        cublas.version = version;
        Ok(cublas)
    }

    /// `13.0.2` from 130002.
    pub fn version_string(&self) -> String {
        let v = self.version;
        format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    }

    /// Enqueues row-major C = A B on the stream with `math`.
    ///
    /// cuBLAS is column-major: a row-major m x n matrix is its n x m transpose, so
    /// it computes C^T = B^T A^T, that is sgemm(n, m, k, B, A) with no transposes.
    pub fn sgemm(&self, math: Math, g: &Gemm) -> Result<()> {
        let dim = |v: usize, what: &str| {
            c_int::try_from(v).map_err(|_| Error::TooLarge {
                what: format!("{what} = {v}"),
                why: "cuBLAS takes 32-bit matrix dimensions".into(),
            })
        };
        let (m, n, k) = (dim(g.m, "m")?, dim(g.n, "n")?, dim(g.k, "k")?);
        let fail = |what: &str, e: cb::CublasError| Error::Library(format!("cuBLAS {what} failed: {e}"));
        // SAFETY: a live handle; the mode is one cuBLAS defines.
        unsafe { sys::cublasSetMathMode(self.handle, math.mode()) }
            .result()
            .map_err(|e| fail("cublasSetMathMode", e))?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the caller's Gemm describes live device buffers of m x k, k x n and
        // m x n floats in this context; alpha and beta are host scalars (cuBLAS's
        // default pointer mode) read before the call returns.
        unsafe {
            cb::sgemm(
                self.handle,
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha,
                g.b as *const f32,
                n,
                g.a as *const f32,
                k,
                &beta,
                g.c as *mut f32,
                n,
            )
        }
        .map_err(|e| fail("cublasSgemm", e))
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: created in `load`, destroyed once.
        let _ = unsafe { cb::destroy_handle(self.handle) };
    }
}

/// Row-major C = A B in f64, the reference the tests hold cuBLAS to.
pub fn reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let aip = f64::from(a[i * k + p]);
            for j in 0..n {
                c[i * n + j] += aip * f64::from(b[p * n + j]);
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_multiplies_row_major() {
        // [1 2; 3 4; 5 6] (3x2) times [1 0 2; 0 1 3] (2x3).
        let c = reference(3, 3, 2, &[1., 2., 3., 4., 5., 6.], &[1., 0., 2., 0., 1., 3.]);
        assert_eq!(c, [1., 2., 8., 3., 4., 18., 5., 6., 28.]);
    }

    #[test]
    fn math_labels() {
        assert_eq!(Math::Fp32.label(), "FP32");
        assert_eq!(Math::Tf32.mode(), cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH);
    }
}
