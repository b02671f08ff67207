//! Arithmetic with GPU semantics on both targets.

/// `a * b + c` with one rounding: `fma.rn.f32` on the GPU (what nvcc emits for
/// `a * b + c` by default), `f32::mul_add` on the host, so both round alike. In the
/// emulator's addresses-only launches, which compute no faithful values, a plain
/// `a * b + c`: `f32::mul_add` is a library call where the host's baseline has no FMA,
/// and the matrix products make one per multiply.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if super::emu::addresses_only() {
            a * b + c
        } else {
            a.mul_add(b, c)
        }
    }
}

/// `x`, hidden from the optimizer: LLVM can neither see through it nor rewrite
/// arithmetic on it (a `mov` ptxas removes), so index math on the result stays as
/// written instead of being strength-reduced or hoisted out of a loop.
#[inline(always)]
pub fn opaque(x: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let y: u32;
        // SAFETY: a register move.
        unsafe {
            core::arch::asm!("mov.b32 {y}, {x};", x = in(reg32) x, y = out(reg32) y,
                options(pure, nomem, nostack, preserves_flags));
        }
        y
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x
    }
}
