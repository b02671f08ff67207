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

/// `(a ^ b) & c` in one integer logic instruction (`lop3.b32`, LUT 0x28), opaque to
/// LLVM so that a chain of them is neither folded nor reassociated. Its three inputs
/// are all used, so ptxas cannot merge two dependent ones whose four inputs differ
/// into one `LOP3`: each call stays one instruction on the integer pipe.
#[inline(always)]
pub fn xor_and(a: u32, b: u32, c: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: u32;
        // SAFETY: registers only.
        unsafe {
            core::arch::asm!("lop3.b32 {d}, {a}, {b}, {c}, 0x28;",
                d = out(reg32) d, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c,
                options(pure, nomem, nostack, preserves_flags));
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        (a ^ b) & c
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    #[test]
    fn xor_and_is_the_lut_it_names() {
        // LUT 0x28 = (0xf0 ^ 0xcc) & 0xaa: the truth table of (a ^ b) & c.
        assert_eq!(super::xor_and(0xf0, 0xcc, 0xaa), 0x28);
        assert_eq!(super::xor_and(0xffff_0000, 0x0f0f_0f0f, 0x00ff_ff00), 0x00f0_0f00);
    }
}
