//! Arithmetic with GPU semantics on both targets.

/// `a * b + c` with one rounding: `fma.rn.f32` on the GPU (what nvcc emits for
/// `a * b + c` by default), `f32::mul_add` on the host, so both round alike.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}
