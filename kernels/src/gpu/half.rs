//! 16-bit floating-point elements: [`Bf16`] (bfloat16: f32's 8 exponent bits, 7
//! mantissa bits) and [`F16`] (IEEE binary16: 5 and 10), as CUDA's `__nv_bfloat16`
//! and `half` store them. Conversions from f32 round to nearest, ties to even (as
//! `cvt.rn` does), so the host recomputes exactly what a kernel or a fill stored.
//!
//! Kernels move them through global memory as they are, and the tensor cores read
//! them from shared memory ([`super::wgmma`]); arithmetic on them is done in f32.

use super::mem::Element;

/// A 16-bit float type the tensor cores multiply: [`Bf16`] or [`F16`].
pub trait Half:
    Element + super::shared::SharedWord + Copy + Default + PartialEq + core::fmt::Debug + Send + Sync + 'static
{
    /// The PTX type name (`bf16`, `f16`), as in `wgmma...f32.bf16.bf16`.
    const PTX: &'static str;
    /// Significant bits, the implicit one included: 8 or 11. A value's relative
    /// rounding from f32 is at most 2^-BITS.
    const BITS: u32;
    /// The nearest value to `x` (ties to even); NaN stays NaN, too large is infinite.
    fn from_f32(x: f32) -> Self;
    /// The exact f32 of this value.
    fn to_f32(self) -> f32;
    /// Its bits.
    fn to_bits(self) -> u16;
    /// The value of these bits.
    fn from_bits(bits: u16) -> Self;
    /// `lo` and `hi` rounded to this type and packed into one word, `lo` in the low
    /// half (the order of consecutive elements in memory): one `cvt.rn.{bf16,f16}x2.f32`
    /// on the GPU (sm_80).
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        u32::from(Self::from_f32(lo).to_bits()) | u32::from(Self::from_f32(hi).to_bits()) << 16
    }
}

/// bfloat16: the upper half of an f32.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bf16(u16);

/// IEEE 754 binary16 (`half`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct F16(u16);

impl Bf16 {
    /// The nearest bfloat16 to `x`, ties to even.
    #[inline(always)]
    pub const fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            // A quiet NaN of the same sign.
            return Bf16(((bits >> 16) | 0x40) as u16);
        }
        let even = (bits >> 16) & 1;
        Bf16((bits.wrapping_add(0x7fff + even) >> 16) as u16)
    }
    #[inline(always)]
    pub const fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl F16 {
    /// The nearest binary16 to `x`, ties to even (subnormals included).
    #[inline(always)]
    pub const fn from_f32(x: f32) -> F16 {
        let bits = x.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exp = ((bits >> 23) & 0xff) as i32;
        let man = bits & 0x7f_ffff;
        if exp == 0xff {
            let nan = if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
            return F16(sign | 0x7c00 | nan);
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        // Keep `shift` low bits' worth of rounding: 13 for a normal result, more for a
        // subnormal one (whose unit is 2^-24).
        let (m, shift, base) = if e <= 0 {
            (man | 0x80_0000, (14 - e) as u32, 0)
        } else {
            (man, 13, (e as u32) << 10)
        };
        if shift > 24 {
            // Below half the smallest subnormal.
            return F16(sign);
        }
        let kept = base + (m >> shift);
        let rem = m & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        // A carry out of the mantissa lands in the exponent: the next binade, or infinity.
        let up = (rem > half || (rem == half && kept & 1 == 1)) as u32;
        F16(sign | (kept + up) as u16)
    }
    /// One `cvt.f32.f16` on the GPU.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        let f: f32;
        // SAFETY: a conversion of registers.
        unsafe {
            core::arch::asm!("cvt.f32.f16 {f}, {h};", f = out(reg32) f, h = in(reg16) self.0,
                options(pure, nomem, nostack, preserves_flags));
        }
        f
    }
    /// The exact f32 of this value (the GPU's conversion, in integer steps).
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub const fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let (e, m) = ((h >> 10) & 0x1f, h & 0x3ff);
        let magnitude = match e {
            0 => (m as f32) * (1.0 / (1u32 << 24) as f32),
            0x1f => f32::from_bits(0x7f80_0000 | (m << 13)),
            _ => f32::from_bits(((e + 127 - 15) << 23) | (m << 13)),
        };
        f32::from_bits(magnitude.to_bits() | sign)
    }
}

macro_rules! half {
    ($t:ident, $ptx:literal, $bits:literal) => {
        impl Element for $t {}
        impl Half for $t {
            const PTX: &'static str = $ptx;
            const BITS: u32 = $bits;
            #[inline(always)]
            fn from_f32(x: f32) -> Self {
                $t::from_f32(x)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                $t::to_f32(self)
            }
            #[inline(always)]
            fn to_bits(self) -> u16 {
                self.0
            }
            #[inline(always)]
            fn from_bits(bits: u16) -> Self {
                $t(bits)
            }
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn pack2(lo: f32, hi: f32) -> u32 {
                let d: u32;
                // SAFETY: a conversion of registers; the first source lands in the high half.
                unsafe {
                    core::arch::asm!(concat!("cvt.rn.", $ptx, "x2.f32 {d}, {hi}, {lo};"),
                        d = out(reg32) d, hi = in(reg32) hi, lo = in(reg32) lo,
                        options(pure, nomem, nostack, preserves_flags));
                }
                d
            }
        }
    };
}
half!(Bf16, "bf16", 8);
half!(F16, "f16", 11);

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    /// Every 16-bit pattern that is a number converts to f32 and back to itself, and
    /// f32 values between two neighbours round to the nearer (ties to the even one).
    fn round_trips_and_rounds_to_nearest_even<H: Half>() {
        for bits in 0..=u16::MAX {
            let h = H::from_bits(bits);
            let x = h.to_f32();
            if x.is_nan() {
                assert!(H::from_f32(x).to_f32().is_nan());
                continue;
            }
            assert_eq!(H::from_f32(x).to_bits(), bits, "{bits:#06x} ({x})");
            let next = H::from_bits(bits.wrapping_add(1)).to_f32();
            if !next.is_finite() || !x.is_finite() || (next.abs() < x.abs()) || x == 0.0 && bits != 0 {
                continue;
            }
            // Midpoint between x and its neighbour away from zero: exact in f64, and
            // in f32 too (at most 12 significant bits).
            let mid = ((x as f64 + next as f64) / 2.0) as f32;
            let even = if bits & 1 == 0 { bits } else { bits.wrapping_add(1) };
            assert_eq!(H::from_f32(mid).to_bits(), even, "tie at {mid}");
            let below = f32::from_bits(mid.to_bits() - 1);
            let above = f32::from_bits(mid.to_bits() + 1);
            if mid.abs() > below.abs() {
                assert_eq!(H::from_f32(below).to_bits(), bits, "just below {mid}");
                assert_eq!(
                    H::from_f32(above).to_bits(),
                    bits.wrapping_add(1),
                    "just above {mid}"
                );
            }
        }
    }

    #[test]
    fn pairs_pack_low_first() {
        assert_eq!(Bf16::pack2(1.0, -2.0), 0xc000_3f80);
        assert_eq!(F16::pack2(1.0, -2.0), 0xc000_3c00);
    }

    #[test]
    fn bf16_round_trips_and_rounds_to_nearest_even() {
        round_trips_and_rounds_to_nearest_even::<Bf16>();
        assert_eq!(Bf16::from_f32(1.0).to_bits(), 0x3f80);
        assert_eq!(Bf16::from_f32(f32::MAX).to_f32(), f32::INFINITY);
    }

    #[test]
    fn f16_round_trips_and_rounds_to_nearest_even() {
        round_trips_and_rounds_to_nearest_even::<F16>();
        assert_eq!(F16::from_f32(1.0).to_bits(), 0x3c00);
        assert_eq!(F16::from_f32(65520.0).to_f32(), f32::INFINITY);
        assert_eq!(F16::from_f32(65519.0).to_f32(), 65504.0);
        // The smallest subnormal, and half of it (a tie, to even: zero).
        assert_eq!(F16::from_f32(2f32.powi(-24)).to_bits(), 1);
        assert_eq!(F16::from_f32(2f32.powi(-25)).to_bits(), 0);
        assert_eq!(F16::from_f32(-1.5 * 2f32.powi(-24)).to_bits(), 0x8002);
    }
}
