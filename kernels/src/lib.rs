//! Kernels for `coalesce`, written against a small kernel-side std ([`gpu`]).
//!
//! On `nvptx64-nvidia-cuda` this crate is compiled to PTX by rustc's own backend
//! (`host/build.rs` does that); on the host target the same kernel source compiles
//! against an emulated [`gpu`] so it can be run and inspected on the CPU.
//! Kernel bodies never touch `core::arch` or raw pointers: [`gpu`] is the only seam.
#![no_std]
#![feature(portable_simd)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_intrinsics),
    allow(internal_features)
)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

#[macro_use]
pub mod gpu;

pub mod fill;

pub mod complex;
pub mod copy;
pub mod matmul;
pub mod offset;
pub mod particles;
pub mod saxpy;
pub mod stride;
pub mod transpose;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // A kernel cannot unwind; trap so the host sees a launch failure instead of a hang.
    // SAFETY: trap has no preconditions; it ends the kernel.
    unsafe { core::arch::nvptx::trap() }
}
