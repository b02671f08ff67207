//! Random inputs made on the device, reproducible on the host.
//!
//! [`uniform`] is a pure function of (seed, index), so the GPU fills a buffer of any
//! size without a host copy, and a CPU reference recomputes any element it needs.

use crate::gpu::{Bf16, F16, GlobalMut, Half, thread};

/// Threads per block for the fill kernel.
pub const BLOCK: u32 = 256;

/// SplitMix64's output function: a bijective mix of 64 bits.
#[inline(always)]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Element `i` of the stream `seed`: uniform in [-1, 1), 24 random bits, never NaN.
#[inline(always)]
pub fn uniform(seed: u64, i: u64) -> f32 {
    let bits = mix64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i) >> 40;
    (bits as f32) * (2.0 / (1u64 << 24) as f32) - 1.0
}

kernel! {
    /// Fills `out[0..n]` with `uniform(seed, i)`: grid-stride, so any grid covers any n.
    pub fn fill_uniform(n: usize, seed: u64, out: GlobalMut<f32>) {
        let mut i = thread::index_1d();
        while i < n {
            // SAFETY: i < n, the buffer's length.
            unsafe { out.write(i, uniform(seed, i as u64)) };
            i += thread::grid_size_1d();
        }
    }
}

/// `out[i] = H::from_f32(uniform(seed, i))` for i < n, grid-stride: the 16-bit fills
/// store the nearest value of the type (ties to even), which the host recomputes.
#[inline(always)]
unsafe fn fill_half<H: Half>(n: usize, seed: u64, out: GlobalMut<H>) {
    let mut i = thread::index_1d();
    while i < n {
        // SAFETY: i < n, the buffer's length (the caller's contract).
        unsafe { out.write(i, H::from_f32(uniform(seed, i as u64))) };
        i += thread::grid_size_1d();
    }
}

kernel! {
    /// Fills `out[0..n]` with `uniform(seed, i)` rounded to bfloat16.
    pub fn fill_uniform_bf16(n: usize, seed: u64, out: GlobalMut<Bf16>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { fill_half(n, seed, out) }
    }
}

kernel! {
    /// Fills `out[0..n]` with `uniform(seed, i)` rounded to binary16.
    pub fn fill_uniform_f16(n: usize, seed: u64, out: GlobalMut<F16>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { fill_half(n, seed, out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_in_range_and_not_constant() {
        let v: std::vec::Vec<f32> = (0..10_000).map(|i| uniform(7, i)).collect();
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = v.iter().sum::<f32>() / v.len() as f32;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert_ne!(uniform(1, 5), uniform(2, 5), "seeds give different streams");
    }
}
