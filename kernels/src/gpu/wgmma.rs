//! Warpgroup matrix multiply-accumulate (`wgmma.mma_async`, sm_90a): the four warps of
//! a warpgroup (128 threads, the first warp's index a multiple of 4) multiply a 64 x 8
//! TF32 A tile by an 8 x N B tile into 64 x N f32 accumulators spread over their
//! registers, asynchronously: the instruction returns at once, and the accumulators
//! may be read only after a [`wait_group`] covering it.
//!
//! B is read by the tensor cores straight from shared memory, described by a
//! [`Descriptor`]; A comes from registers, each thread holding 4 values in the layout
//! of [`mma_m16n8k8_tf32`](super::mma::mma_m16n8k8_tf32)'s A fragment, warp `w` of the
//! group for rows `16 w..16 w + 16`. The accumulators follow the same rows: thread
//! lane `l` (g = l / 4, t = l % 4) of warp `w` holds `acc[4 j + 2 h + e]` = D[16 w + g +
//! 8 h][8 j + 2 t + e].
//!
//! TF32 operands in shared memory must be K-major (k contiguous, 128-byte rows of 32
//! values in the [`Swizzle::B128`](super::tma::Swizzle::B128) layout the copy engine
//! writes): the instruction has no transposed form for 32-bit types.
//!
//! The order of a k step:
//!
//! ```text
//! load this step's A fragments (registers);  fence();
//! mma_tf32(&mut acc, a, b) ...;  commit_group();
//! ... (other work: the tensor cores run) ...
//! wait_group::<0>(&mut acc);   // acc is valid again; A's registers and B's tile are free
//! ```
//!
//! ptxas serialises the group (every instruction waits for the one before) if an
//! instruction other than a wgmma writes a register that a wgmma between a [`fence`]
//! and the wait retiring it reads: load the next fragments into registers the pending
//! group does not read.
//!
//! On the emulator the warpgroup's 128 threads exchange their A fragments when they
//! issue the instruction, and each computes its accumulators when its [`wait_group`]
//! retires the group, reading B from shared memory then, as late as the GPU may: a
//! kernel that reads the accumulators before waiting, or overwrites B's stage before
//! the wait, computes with stale values.

use super::mma::Tf32;
use super::shared::SharedWord;
use super::{Half, SharedArray};

/// A shared-memory matrix descriptor: where the tensor cores find an operand tile.
#[derive(Clone, Copy, Debug)]
pub struct Descriptor {
    #[cfg(target_arch = "nvptx64")]
    bits: u64,
    /// The emulator's: the tile's first element, and the bytes between its 64-wide
    /// atoms along M or N (an MN-major tile's leading offset).
    #[cfg(not(target_arch = "nvptx64"))]
    addr: usize,
    #[cfg(not(target_arch = "nvptx64"))]
    leading: usize,
}

impl Descriptor {
    /// A 128-byte-swizzled tile from element `i` of `tile`: the start address, the
    /// leading and stride byte offsets (each >> 4) and the swizzle mode.
    #[inline(always)]
    fn swizzled_128<T: SharedWord>(tile: SharedArray<T>, i: usize, leading: u32) -> Descriptor {
        #[cfg(target_arch = "nvptx64")]
        {
            let addr = u64::from(tile.shared_addr() + (i * size_of::<T>()) as u32);
            // The stride offset is the 1024 bytes between groups of 8 rows of 128 bytes.
            Descriptor {
                bits: ((addr & 0x3ffff) >> 4) | (u64::from(leading >> 4) << 16) | (64 << 32) | (1 << 62),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        Descriptor {
            addr: tile.element_ptr(i),
            leading: leading as usize,
        }
    }

    /// A K-major tile of 128-byte rows swizzled by [`Swizzle::B128`](super::tma::Swizzle::B128),
    /// whose 8-row groups are 1024 bytes apart, starting at element `i` of `tile` (the
    /// k offset of a step within the row: 0, 8, 16 or 24 for TF32; 0, 16, 32 or 48
    /// for 16-bit elements).
    ///
    /// # Safety
    /// The 1024-byte group that holds element `i` starts on a 1024-byte boundary.
    #[inline(always)]
    pub unsafe fn k_major_128b<T: SharedWord>(tile: SharedArray<T>, i: usize) -> Descriptor {
        // The leading offset is unused for a swizzled K-major tile (1, by convention).
        Descriptor::swizzled_128(tile, i, 16)
    }

    /// An MN-major tile of 16-bit elements (`n` contiguous, as a row-major B lands):
    /// atoms of 64 elements of N (128 bytes, swizzled by
    /// [`Swizzle::B128`](super::tma::Swizzle::B128)) by the k rows of the stage,
    /// `atom_bytes` apart; within an atom, k row `r` is 128 bytes on from row `r - 1`.
    /// Element `i` of `tile` is (k, n) = (first k row of the step, 0).
    ///
    /// # Safety
    /// Element `i` starts a 1024-byte boundary, and `atom_bytes` is a multiple of 1024.
    #[inline(always)]
    pub unsafe fn mn_major_128b<T: SharedWord>(
        tile: SharedArray<T>,
        i: usize,
        atom_bytes: u32,
    ) -> Descriptor {
        Descriptor::swizzled_128(tile, i, atom_bytes)
    }
}

/// `wgmma.fence`: orders this warpgroup's register writes (A fragments, accumulators)
/// before the wgmmas that follow.
#[inline(always)]
pub fn fence() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: warpgroup-collective; no operands.
    unsafe {
        core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack, preserves_flags))
    };
}

/// [`fence`] after this thread wrote `acc` (zeroed it for a new tile while other
/// groups run): the writes land before the fence, as `wgmma.fence` requires, where
/// the compiler could otherwise sink them past it (it sees no use of the registers
/// in the fence).
#[inline(always)]
pub fn fence_after<A: Accumulator>(acc: &mut A) {
    #[cfg(target_arch = "nvptx64")]
    acc.fence_operands();
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = acc;
    fence();
}

/// `wgmma.commit_group`: the wgmmas this warpgroup issued since the last commit
/// become a group.
#[inline(always)]
pub fn commit_group() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: warpgroup-collective; no operands.
    unsafe {
        core::arch::asm!(
            "wgmma.commit_group.sync.aligned;",
            options(nostack, preserves_flags)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::wgmma_commit();
}

/// Accumulator arrays of the warpgroup shapes `m64nNk8` (N / 2 floats a thread).
pub trait Accumulator {
    /// N, the tile's width.
    const N: usize;
    /// All zeros.
    fn zeroed() -> Self;
    #[doc(hidden)]
    fn as_mut_slice(&mut self) -> &mut [f32];
    /// The accumulators, in the order the module docs give.
    fn as_slice(&self) -> &[f32];
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn mma_tf32(&mut self, a: [u32; 4], b: u64);
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn mma_tf32_ss(&mut self, a: u64, b: u64);
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn mma_bf16_ss(&mut self, a: u64, b: u64);
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn mma_f16_ss(&mut self, a: u64, b: u64);
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    fn fence_operands(&mut self);
}

/// The asm of one shape: every accumulator an in-out operand, in order.
#[cfg(target_arch = "nvptx64")]
macro_rules! accumulator {
    ($n:literal, $len:literal; $first:literal $($i:literal)*) => {
        impl Accumulator for [f32; $len] {
            const N: usize = $n;
            #[inline(always)]
            fn zeroed() -> Self {
                [0.0; $len]
            }
            #[inline(always)]
            fn as_mut_slice(&mut self) -> &mut [f32] {
                self
            }
            #[inline(always)]
            fn as_slice(&self) -> &[f32] {
                self
            }
            #[inline(always)]
            unsafe fn mma_tf32(&mut self, a: [u32; 4], b: u64) {
                // SAFETY: warpgroup-collective (the caller's contract); registers and a
                // descriptor the caller made for an initialised tile.
                unsafe {
                    core::arch::asm!(
                        concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k8.f32.tf32.tf32 {{",
                            "{", stringify!($first), "}", $(", {", stringify!($i), "}",)*
                            "}}, {{{a0}, {a1}, {a2}, {a3}}}, {b}, 1, 1, 1;"),
                        inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                        b = in(reg64) b, options(nostack, preserves_flags));
                }
            }
            #[inline(always)]
            unsafe fn mma_tf32_ss(&mut self, a: u64, b: u64) {
                // SAFETY: as above, with both tiles described.
                unsafe {
                    core::arch::asm!(
                        concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k8.f32.tf32.tf32 {{",
                            "{", stringify!($first), "}", $(", {", stringify!($i), "}",)*
                            "}}, {a}, {b}, 1, 1, 1;"),
                        inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                        a = in(reg64) a, b = in(reg64) b, options(nostack, preserves_flags));
                }
            }
            #[inline(always)]
            unsafe fn mma_bf16_ss(&mut self, a: u64, b: u64) {
                // SAFETY: as above; A K-major, B MN-major (the last immediate: B transposed).
                unsafe {
                    core::arch::asm!(
                        concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{",
                            "{", stringify!($first), "}", $(", {", stringify!($i), "}",)*
                            "}}, {a}, {b}, 1, 1, 1, 0, 1;"),
                        inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                        a = in(reg64) a, b = in(reg64) b, options(nostack, preserves_flags));
                }
            }
            #[inline(always)]
            unsafe fn mma_f16_ss(&mut self, a: u64, b: u64) {
                // SAFETY: as above.
                unsafe {
                    core::arch::asm!(
                        concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.f16.f16 {{",
                            "{", stringify!($first), "}", $(", {", stringify!($i), "}",)*
                            "}}, {a}, {b}, 1, 1, 1, 0, 1;"),
                        inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                        a = in(reg64) a, b = in(reg64) b, options(nostack, preserves_flags));
                }
            }
            #[inline(always)]
            fn fence_operands(&mut self) {
                // SAFETY: no instruction: the registers are only marked read and written
                // here, so the compiler keeps every use of them after this point.
                unsafe {
                    core::arch::asm!(concat!("// accumulators {", stringify!($first), "}", $(" {", stringify!($i), "}",)*),
                        inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                        options(nomem, nostack, preserves_flags));
                }
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
accumulator!(64, 32; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
#[cfg(target_arch = "nvptx64")]
accumulator!(128, 64; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
#[cfg(target_arch = "nvptx64")]
accumulator!(192, 96; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95);
#[cfg(target_arch = "nvptx64")]
accumulator!(256, 128; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);

#[cfg(not(target_arch = "nvptx64"))]
macro_rules! accumulator {
    ($($n:literal, $len:literal);*) => {$(
        impl Accumulator for [f32; $len] {
            const N: usize = $n;
            fn zeroed() -> Self {
                [0.0; $len]
            }
            fn as_mut_slice(&mut self) -> &mut [f32] {
                self
            }
            fn as_slice(&self) -> &[f32] {
                self
            }
        }
    )*};
}
#[cfg(not(target_arch = "nvptx64"))]
accumulator!(64, 32; 128, 64; 192, 96; 256, 128);

/// `wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32` with A from registers:
/// `acc += A B`, warpgroup-wide, asynchronously (see the [module docs](self)).
///
/// # Safety
/// Every thread of the warpgroup makes the call with the same `b`; `b` describes an
/// initialised tile that nothing writes until the [`wait_group`] retiring this call;
/// `acc` is not read until then, and `a`'s registers are this step's own.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_tf32<A: Accumulator>(acc: &mut A, a: [Tf32; 4], b: Descriptor) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        acc.mma_tf32(a.map(Tf32::bits), b.bits)
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::wgmma_mma_tf32(acc.as_mut_slice(), a.map(Tf32::bits), b.addr, A::N);
}

/// `wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32` with both operands from
/// shared memory: `acc += A B`, A's 64 x 8 tile described by `a` (K-major, as B's),
/// warpgroup-wide, asynchronously. No register holds an operand, so the instruction
/// runs at the tensor cores' own rate.
///
/// # Safety
/// As for [`mma_tf32`], with `a` an initialised tile too.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_tf32_ss<A: Accumulator>(acc: &mut A, a: Descriptor, b: Descriptor) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        acc.mma_tf32_ss(a.bits, b.bits)
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::wgmma_mma_tf32_ss(acc.as_mut_slice(), a.addr, b.addr, A::N);
}

/// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}` with both operands from
/// shared memory: `acc += A B`, A's 64 x 16 tile K-major ([`Descriptor::k_major_128b`]),
/// B's 16 x N tile MN-major ([`Descriptor::mn_major_128b`]: a row-major B as the copy
/// engine lands it, which the instruction transposes as it reads), products of
/// 16-bit values accumulated in f32; warpgroup-wide, asynchronously.
///
/// # Safety
/// As for [`mma_tf32_ss`], with tiles of `H`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_16bit_ss<H: Half, A: Accumulator>(acc: &mut A, a: Descriptor, b: Descriptor) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract; H::BITS picks the instruction's type at compile time.
    unsafe {
        if H::BITS == 8 {
            acc.mma_bf16_ss(a.bits, b.bits)
        } else {
            acc.mma_f16_ss(a.bits, b.bits)
        }
    };
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::wgmma_mma_16bit_ss(acc.as_mut_slice(), a.addr, (b.addr, b.leading), A::N, H::BITS);
}

/// `wgmma.wait_group N`: waits until at most `N` of this warpgroup's groups are
/// pending; `acc`, the accumulators they write, is valid for the groups retired (the
/// compiler keeps every use of them after this call).
#[inline(always)]
pub fn wait_group<const N: u32, A: Accumulator>(acc: &mut A) {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: warpgroup-collective; no operands.
        unsafe {
            core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack, preserves_flags))
        };
        acc.fence_operands();
    }
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::wgmma_wait(&mut [acc.as_mut_slice()], N as usize);
}

/// [`wait_group`] for a warpgroup whose groups write two sets of accumulators (a tile's
/// two halves, each its own chain of groups): both stay valid for the groups retired.
#[inline(always)]
pub fn wait_group_pair<const N: u32, A: Accumulator>(first: &mut A, second: &mut A) {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: warpgroup-collective; no operands.
        unsafe {
            core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack, preserves_flags))
        };
        first.fence_operands();
        second.fence_operands();
    }
    #[cfg(not(target_arch = "nvptx64"))]
    super::emu::wgmma_wait(&mut [first.as_mut_slice(), second.as_mut_slice()], N as usize);
}

/// `setmaxnreg.inc`: this warpgroup takes registers up to `R` a thread (a consumer
/// of a warp-specialised kernel, after the producer released its share). Needs the
/// kernel's register count fixed at entry: `#[launch_bounds(THREADS, 1)]`.
#[inline(always)]
pub fn grow_registers<const R: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: warpgroup-collective; changes only this warpgroup's register allocation.
    unsafe {
        core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {r};", r = const R, options(nostack, preserves_flags))
    };
}

/// `setmaxnreg.dec`: this warpgroup gives registers back, down to `R` a thread.
#[inline(always)]
pub fn shrink_registers<const R: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as above.
    unsafe {
        core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {r};", r = const R, options(nostack, preserves_flags))
    };
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests;
