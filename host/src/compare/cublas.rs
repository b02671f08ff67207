//! cuBLAS through cudarc, on the harness's stream and buffers: the reference a matmul
//! kernel is measured against, in its own precision (SGEMM for FP32 and TF32,
//! `cublasGemmEx` with f32 accumulation for BF16 and FP16).
//!
//! cuBLAS runs in the context current on the thread, which is the primary context
//! cust made current in [`Gpu::open`]: the same one the kernels and their twins use,
//! so device pointers from cust's buffers are valid here as they are.

use std::ffi::{c_int, c_void};

use cudarc::cublas::result as cb;
use cudarc::cublas::sys::{self, cublasComputeType_t, cublasGemmAlgo_t, cublasMath_t, cudaDataType};
use serde::{Deserialize, Serialize};

use super::layout::{Call, Layout};
use super::libs::{self, Found, Lib};
use crate::device::Gpu;
use crate::elem::Elem;
use crate::error::{Error, Result};
use crate::experiment::Arithmetic;
use crate::prepared::Gemm;

const LIB: Lib = Lib {
    label: "cuBLAS",
    stem: "cublas",
    // SAFETY: only tries to open the library.
    present: || unsafe { sys::is_culib_present() },
};

/// How cuBLAS computes a product: the precision of its inputs and multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Math {
    /// Plain FP32 SGEMM (CUBLAS_DEFAULT_MATH): what a matmul kernel computes.
    Fp32,
    /// FP32 SGEMM on TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH): faster, 10-bit
    /// mantissas.
    Tf32,
    /// `cublasGemmEx` on BF16 A, B and C (CUDA_R_16BF), accumulating in f32
    /// (CUBLAS_COMPUTE_32F).
    Bf16,
    /// `cublasGemmEx` on FP16 A, B and C (CUDA_R_16F), accumulating in f32.
    F16,
}

impl Math {
    pub fn label(self) -> &'static str {
        match self {
            Math::Fp32 => "FP32",
            Math::Tf32 => "TF32",
            Math::Bf16 => "BF16",
            Math::F16 => "FP16",
        }
    }
    /// The routine as the tables name it: `SGEMM`, or `GEMM` for the 16-bit ones.
    pub fn routine(self) -> &'static str {
        match self {
            Math::Fp32 | Math::Tf32 => "SGEMM",
            Math::Bf16 | Math::F16 => "GEMM",
        }
    }
    /// Relative rounding of the inputs before they are multiplied: TF32 keeps 10
    /// of FP32's 23 mantissa bits (and may truncate), so up to 2^-10; 16-bit inputs
    /// are multiplied as they are (their output's rounding is C's [`Elem`]).
    pub fn input_rounding(self) -> f64 {
        match self {
            Math::Fp32 | Math::Bf16 | Math::F16 => 0.0,
            Math::Tf32 => 2f64.powi(-10),
        }
    }
    /// The element type of A, B and C it computes on.
    pub fn elem(self) -> Elem {
        match self {
            Math::Fp32 | Math::Tf32 => Elem::F32,
            Math::Bf16 => Elem::Bf16,
            Math::F16 => Elem::F16,
        }
    }
    /// The modes cuBLAS is measured in on a product of `elem` matrices: FP32 and
    /// TF32 on f32 data, the type's own on 16-bit data.
    pub fn on(elem: Elem) -> &'static [Math] {
        match elem {
            Elem::F32 => &[Math::Fp32, Math::Tf32],
            Elem::Bf16 => &[Math::Bf16],
            Elem::F16 => &[Math::F16],
        }
    }
    fn mode(self) -> cublasMath_t {
        match self {
            Math::Tf32 => cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
            Math::Fp32 => cublasMath_t::CUBLAS_DEFAULT_MATH,
            // Every sum in f32, as the kernels keep theirs: without this, cuBLAS may
            // split k and add the parts in the 16-bit output type (at 1001 x 999 x
            // 1003 on an H200, 55 of 4096 sampled entries off by up to 4%).
            Math::Bf16 | Math::F16 => cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION,
        }
    }
}

/// The cuBLAS mode a kernel of this arithmetic is compared with.
impl From<Arithmetic> for Math {
    fn from(a: Arithmetic) -> Math {
        match a {
            Arithmetic::Fp32 => Math::Fp32,
            Arithmetic::Tf32 => Math::Tf32,
            Arithmetic::Bf16 => Math::Bf16,
            Arithmetic::F16 => Math::F16,
        }
    }
}

/// cuBLAS's `cudaDataType` of an element type.
fn data_type(elem: Elem) -> cudaDataType {
    match elem {
        Elem::F32 => cudaDataType::CUDA_R_32F,
        Elem::Bf16 => cudaDataType::CUDA_R_16BF,
        Elem::F16 => cudaDataType::CUDA_R_16F,
    }
}

/// One `cublasGemmEx` call, as [`Cublas::gemm`] makes it for a row-major product:
/// every argument but the handle and the scalars (alpha = 1 and beta = 0, f32, as
/// the f32 compute type takes them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmEx {
    /// The shape, operands and their layout ([`Call::new`]).
    pub call: Call,
    pub a_type: cudaDataType,
    pub b_type: cudaDataType,
    pub c_type: cudaDataType,
    pub compute: cublasComputeType_t,
    pub algo: cublasGemmAlgo_t,
}

impl GemmEx {
    /// Row-major C = A B in `math` (a 16-bit one) on `g`'s buffers, A and B stored
    /// as `layout` says: A, B and C of the type, f32 accumulation, the default
    /// algorithm.
    pub fn new(math: Math, g: &Gemm, layout: Layout) -> Result<GemmEx> {
        let elem = math.elem();
        if math.routine() != "GEMM" || g.input != elem || g.output != elem {
            return Err(Error::Library(format!(
                "cuBLAS {} GEMM asked of {} inputs and a {} output",
                math.label(),
                g.input.label(),
                g.output.label()
            )));
        }
        Ok(GemmEx {
            call: Call::new(g, layout)?,
            a_type: data_type(elem),
            b_type: data_type(elem),
            c_type: data_type(elem),
            compute: cublasComputeType_t::CUBLAS_COMPUTE_32F,
            algo: cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        })
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

    /// Enqueues row-major C = A B on the stream with `math`, A and B stored as
    /// `layout` says: SGEMM for FP32 and TF32, `cublasGemmEx` for the 16-bit types
    /// ([`GemmEx::new`]).
    pub fn gemm(&self, math: Math, g: &Gemm, layout: Layout) -> Result<()> {
        match math {
            Math::Fp32 | Math::Tf32 => self.sgemm(math, g, layout),
            Math::Bf16 | Math::F16 => self.gemm_ex(&GemmEx::new(math, g, layout)?),
        }
    }

    /// Enqueues one `cublasGemmEx` call.
    fn gemm_ex(&self, x: &GemmEx) -> Result<()> {
        let c = &x.call;
        let fail = |what: &str, e: cb::CublasError| Error::Library(format!("cuBLAS {what} failed: {e}"));
        // SAFETY: a live handle; the mode is one cuBLAS defines.
        unsafe { sys::cublasSetMathMode(self.handle, cublasMath_t::CUBLAS_DEFAULT_MATH) }
            .result()
            .map_err(|e| fail("cublasSetMathMode", e))?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the call's pointers are live device buffers of this context holding
        // the matrices its dimensions and leading dimensions describe, of its types
        // ([`GemmEx::new`] from the caller's Gemm); alpha and beta are host f32
        // scalars, as the f32 compute type takes them, read before the call returns.
        unsafe {
            cb::gemm_ex(
                self.handle,
                c.transa,
                c.transb,
                c.m,
                c.n,
                c.k,
                (&alpha as *const f32).cast::<c_void>(),
                c.a as *const c_void,
                x.a_type,
                c.lda,
                c.b as *const c_void,
                x.b_type,
                c.ldb,
                (&beta as *const f32).cast::<c_void>(),
                c.c as *mut c_void,
                x.c_type,
                c.ldc,
                x.compute,
                x.algo,
            )
        }
        .map_err(|e| fail("cublasGemmEx", e))
    }

    /// Enqueues row-major C = A B on f32 matrices with `math` (FP32 or TF32), A and
    /// B stored as `layout` says ([`Call::new`]).
    fn sgemm(&self, math: Math, g: &Gemm, layout: Layout) -> Result<()> {
        if g.input != Elem::F32 || g.output != Elem::F32 {
            return Err(Error::Library(format!(
                "cuBLAS SGEMM asked of {} inputs and a {} output",
                g.input.label(),
                g.output.label()
            )));
        }
        let c = Call::new(g, layout)?;
        let fail = |what: &str, e: cb::CublasError| Error::Library(format!("cuBLAS {what} failed: {e}"));
        // SAFETY: a live handle; the mode is one cuBLAS defines.
        unsafe { sys::cublasSetMathMode(self.handle, math.mode()) }
            .result()
            .map_err(|e| fail("cublasSetMathMode", e))?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the caller's Gemm describes live device buffers of m x k, k x n and
        // m x n floats in this context, which the call reads as its layout says;
        // alpha and beta are host scalars (cuBLAS's default pointer mode) read before
        // the call returns.
        unsafe {
            cb::sgemm(
                self.handle,
                c.transa,
                c.transb,
                c.m,
                c.n,
                c.k,
                &alpha,
                c.a as *const f32,
                c.lda,
                c.b as *const f32,
                c.ldb,
                &beta,
                c.c as *mut f32,
                c.ldc,
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
        assert_eq!(
            Math::Bf16.mode(),
            cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
        );
        assert_eq!(Math::Fp32.input_rounding(), 0.0);
        assert_eq!(Math::Tf32.input_rounding(), 1.0 / 1024.0);
        assert_eq!((Math::Bf16.label(), Math::F16.label()), ("BF16", "FP16"));
        assert_eq!((Math::Bf16.routine(), Math::Tf32.routine()), ("GEMM", "SGEMM"));
        assert_eq!(Math::from(Arithmetic::Bf16), Math::Bf16);
        assert_eq!(Math::from(Arithmetic::F16), Math::F16);
        assert_eq!(Math::on(Elem::F32), [Math::Fp32, Math::Tf32]);
        assert_eq!(Math::on(Elem::F16), [Math::F16]);
        for a in [
            Arithmetic::Fp32,
            Arithmetic::Tf32,
            Arithmetic::Bf16,
            Arithmetic::F16,
        ] {
            assert_eq!(Math::from(a).label(), a.label());
        }
    }

    fn gemm(input: Elem, output: Elem) -> Gemm {
        Gemm {
            m: 300,
            n: 200,
            k: 100,
            a: 0xa000,
            b: 0xb000,
            c: 0xc000,
            input,
            output,
        }
    }

    /// Row-major C (300 x 200) = A (300 x 100) B (100 x 200) in BF16 and FP16, in
    /// every layout: cuBLAS sees column-major C^T = op(B) op(A), B first, with the
    /// types, f32 accumulation and the default algorithm; the natural layout (NN)
    /// takes both as they are, leading dimensions n, k, n.
    #[test]
    fn the_16_bit_call_is_the_row_major_product_in_cublas_terms() {
        use cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
        use cudarc::cublas::sys::cublasOperation_t;
        for (math, ty) in [
            (Math::Bf16, cudaDataType::CUDA_R_16BF),
            (Math::F16, cudaDataType::CUDA_R_16F),
        ] {
            let g = gemm(math.elem(), math.elem());
            for (layout, transa, lda, transb, ldb) in [
                (Layout::NN, N, 200, N, 100),
                (Layout::TN, N, 200, T, 300),
                (Layout::NT, T, 100, N, 100),
                (Layout::TT, T, 100, T, 300),
            ] {
                let x = GemmEx::new(math, &g, layout).unwrap();
                assert_eq!(
                    x,
                    GemmEx {
                        call: Call {
                            transa,
                            transb,
                            m: 200,
                            n: 300,
                            k: 100,
                            a: 0xb000,
                            lda,
                            b: 0xa000,
                            ldb,
                            c: 0xc000,
                            ldc: 200,
                        },
                        a_type: ty,
                        b_type: ty,
                        c_type: ty,
                        compute: cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        algo: cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                    },
                    "{layout:?}"
                );
            }
        }
        assert_eq!(cudaDataType::CUDA_R_16BF as u32, 14);
        assert_eq!(cudaDataType::CUDA_R_16F as u32, 2);
        assert_eq!(cublasComputeType_t::CUBLAS_COMPUTE_32F as u32, 68);
        assert_eq!(cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT as i32, -1);
        assert_eq!((N as u32, T as u32), (0, 1));
        // The element names of the declaration and of cuBLAS's enum agree.
        for e in [Elem::F32, Elem::Bf16, Elem::F16] {
            assert_eq!(format!("{:?}", data_type(e)), e.cuda_data_type());
        }
    }

    #[test]
    fn a_mode_that_does_not_fit_the_buffers_is_refused() {
        for layout in Layout::ALL {
            let e = GemmEx::new(Math::Bf16, &gemm(Elem::F16, Elem::F16), layout).unwrap_err();
            assert!(
                e.to_string().contains("BF16") && e.to_string().contains("f16"),
                "{e}"
            );
            assert!(GemmEx::new(Math::Fp32, &gemm(Elem::F32, Elem::F32), layout).is_err());
            let big = Gemm {
                m: 1 << 31,
                ..gemm(Elem::Bf16, Elem::Bf16)
            };
            assert!(
                GemmEx::new(Math::Bf16, &big, layout)
                    .unwrap_err()
                    .to_string()
                    .contains("32-bit")
            );
        }
    }
}
