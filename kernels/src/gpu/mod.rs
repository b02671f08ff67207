//! The kernel-side std: what `cuda_std` is to Rust-CUDA kernels, for ours.
//!
//! Names follow `cuda_std` where it has one (`thread::index_1d`,
//! `thread::sync_threads`, `shared_array!`). This module is the only code in the
//! crate that uses `core::arch::nvptx` or inline assembly; on other targets it is
//! backed by [`crate::gpu::emu`], which runs kernels as CPU threads.

pub mod math;
pub mod mem;
#[macro_use]
pub mod shared;
pub mod thread;
pub mod vec;

#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;

pub use mem::{Element, Global, GlobalMut};
pub use shared::SharedArray;
pub use vec::Float4;

/// Declares a kernel.
///
/// On the GPU it becomes an exported `extern "ptx-kernel"` entry point named after
/// the function; on the host it is a plain `unsafe fn` the emulator can call.
/// Parameters must be plain `#[repr(C)]`/pointer-sized values.
///
/// `build.rs` lists every `kernel!` block of a top-level module file in
/// [`HOST_KERNELS`](crate::HOST_KERNELS), so the host can run it on the emulator by
/// name; each parameter type needs an [`emu::FromWord`] impl for that table to compile.
#[macro_export]
macro_rules! kernel {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body

        $(#[$meta])*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(clippy::missing_safety_doc)]
        pub unsafe fn $name($($arg: $ty),*) $body
    };
}
