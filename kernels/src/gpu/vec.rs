//! 16-byte vector types: one `ld.global.v4`/`st.global.v4` per access.

/// Four `f32`s with CUDA `float4`'s layout and 16-byte alignment.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Float4 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub w: f32,
}

impl Float4 {
    #[inline(always)]
    pub const fn new(x: f32, y: f32, z: f32, w: f32) -> Self {
        Self { x, y, z, w }
    }

    /// `a * self + other`, lane by lane.
    #[inline(always)]
    pub fn axpy(self, a: f32, other: Self) -> Self {
        use super::math::fma;
        Self::new(
            fma(a, self.x, other.x),
            fma(a, self.y, other.y),
            fma(a, self.z, other.z),
            fma(a, self.w, other.w),
        )
    }
}

impl super::mem::Element for Float4 {
    #[inline(always)]
    unsafe fn load(p: *const Self) -> Self {
        // SAFETY: same size and alignment (16) as `Simd<f32, 4>`; the caller
        // guarantees `p` is valid and aligned.
        let v = unsafe { p.cast::<core::simd::f32x4>().read() };
        let [x, y, z, w] = v.to_array();
        Self { x, y, z, w }
    }
    #[inline(always)]
    unsafe fn store(p: *mut Self, value: Self) {
        let v = core::simd::f32x4::from_array([value.x, value.y, value.z, value.w]);
        // SAFETY: as above.
        unsafe { p.cast::<core::simd::f32x4>().write(v) }
    }
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn load_read_only(p: *const Self) -> Self {
        let (x, y, z, w): (f32, f32, f32, f32);
        // SAFETY: p is a valid, 16-byte aligned, read-only global address (caller).
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.v4.f32 {{{x}, {y}, {z}, {w}}}, [g]; }}",
                p = in(reg64) p, x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                options(pure, readonly, nostack, preserves_flags));
        }
        Self { x, y, z, w }
    }
}
