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
use crate::experiment::Arithmetic;
use crate::prepared::Gemm;

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
    /// Relative rounding of the inputs before they are multiplied: TF32 keeps 10
    /// of FP32's 23 mantissa bits (and may truncate), so up to 2^-10.
    pub fn input_rounding(self) -> f64 {
        match self {
            Math::Fp32 => 0.0,
            Math::Tf32 => 2f64.powi(-10),
        }
    }
    fn mode(self) -> cublasMath_t {
        match self {
            Math::Fp32 => cublasMath_t::CUBLAS_DEFAULT_MATH,
            Math::Tf32 => cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
        }
    }
}

/// The cuBLAS SGEMM mode a kernel of this arithmetic is compared with.
impl From<Arithmetic> for Math {
    fn from(a: Arithmetic) -> Math {
        match a {
            Arithmetic::Fp32 => Math::Fp32,
            Arithmetic::Tf32 => Math::Tf32,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn math_labels() {
        assert_eq!(Math::Fp32.label(), "FP32");
        assert_eq!(Math::Tf32.mode(), cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH);
        assert_eq!(Math::Fp32.input_rounding(), 0.0);
        assert_eq!(Math::Tf32.input_rounding(), 1.0 / 1024.0);
    }
}
