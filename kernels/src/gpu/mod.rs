//! The kernel-side std: what `cuda_std` is to Rust-CUDA kernels, for ours.
//!
//! Names follow `cuda_std` where it has one (`thread::index_1d`,
//! `thread::sync_threads`, `shared_array!`). This module is the only code in the
//! crate that uses `core::arch::nvptx` or inline assembly; on other targets it is
//! backed by [`crate::gpu::emu`], which runs kernels as CPU threads.

pub mod async_copy;
pub mod barrier;
pub mod cluster;
pub mod flag;
pub mod half;
pub mod host_flag;
pub mod math;
pub mod mem;
pub mod mma;
pub mod param;
pub mod ring;
#[macro_use]
pub mod shared;
pub mod tensor_map;
pub mod thread;
pub mod tma;
pub mod vec;
pub mod wgmma;

#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;

pub use half::{Bf16, F16, Half};
pub use mem::{Element, Global, GlobalMut};
pub use shared::SharedArray;
pub use vec::Float4;

/// Declares a kernel.
///
/// On the GPU it becomes an exported `extern "ptx-kernel"` entry point named after
/// the function; on the host it is a plain `unsafe fn` the emulator can call.
/// Parameters must be plain `#[repr(C)]`/pointer-sized values.
///
/// A kernel that needs sm_80 (it uses [`async_copy`] or [`mma`]) opens with `#[requires(sm_80)]`:
/// `host/build.rs` builds two PTX modules from this crate, the baseline for sm_70
/// (every other kernel) and, with the crate's `sm80` feature, one for sm_80 holding
/// only the `#[requires(sm_80)]` kernels. In the module a kernel does not belong to it
/// is still type-checked, as a private function that is never emitted.
///
/// `build.rs` reads every `kernel!` block under `src/` and gives each kernel a handle,
/// [`crate::entry`]`::NAME`, typed with its parameters, which the host launches and
/// the emulator calls. For that the macro also declares, on the host only, a type
/// alias of the kernel's name for its parameter tuple (in the type namespace, beside
/// the function); each parameter type must be a [`param::KernelParam`].
///
/// `#[cluster(N)]`, after `#[requires(sm_90a)]`, is CUDA's `__cluster_dims__(N, 1, 1)`:
/// the kernel runs in clusters of N blocks, which share each other's shared memory
/// ([`cluster`]). `host/build.rs` writes it into the PTX as `.reqnctapercluster` and
/// the host launches the clusters.
///
/// `#[launch_bounds(THREADS, BLOCKS)]`, first in the block, is CUDA's
/// `__launch_bounds__(THREADS, BLOCKS)`: at most THREADS threads per block, and
/// registers capped so BLOCKS blocks fit on one SM. Rust has no attribute for it, so
/// the macro drops it and `host/build.rs` (which reads the `kernel!` blocks) writes it
/// into the PTX as `.maxntid` and `.minnctapersm`.
#[macro_export]
macro_rules! kernel {
    (#[launch_bounds($threads:literal, $blocks:literal)] $($rest:tt)*) => {
        $crate::kernel! { $($rest)* }
    };
    (#[requires(sm_90a)] #[cluster($blocks:literal)] $($rest:tt)*) => {
        $crate::kernel! { #[requires(sm_90a)] $($rest)* }
    };
    (#[requires(sm_90a)] $(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        #[cfg(target_arch = "nvptx64")]
        $crate::__in_sm90a_module! { $(#[$meta])* pub fn $name($($arg: $ty),*) $body }

        $crate::__host_kernel! { $(#[$meta])* pub fn $name($($arg: $ty),*) $body }
    };
    (#[requires(sm_80)] $(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        #[cfg(target_arch = "nvptx64")]
        $crate::__in_sm80_module! { $(#[$meta])* pub fn $name($($arg: $ty),*) $body }

        $crate::__host_kernel! { $(#[$meta])* pub fn $name($($arg: $ty),*) $body }
    };
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        #[cfg(target_arch = "nvptx64")]
        $crate::__in_baseline_module! { $(#[$meta])* pub fn $name($($arg: $ty),*) $body }

        $crate::__host_kernel! { $(#[$meta])* pub fn $name($($arg: $ty),*) $body }
    };
}

/// A kernel on the host: a plain `unsafe fn` the emulator calls, and its parameter
/// tuple as a type alias of the same name, which the kernel's handle is typed with.
#[doc(hidden)]
#[macro_export]
macro_rules! __host_kernel {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),*) $body:block) => {
        $(#[$meta])*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(clippy::missing_safety_doc)]
        pub unsafe fn $name($($arg: $ty),*) $body

        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub type $name = ($($ty,)*);
    };
}

// Which module is being built is this crate's `sm80` or `sm90a` feature, decided here
// once, so that every crate declaring kernels with `kernel!` follows it.

#[cfg(not(any(feature = "sm80", feature = "sm90a")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __in_baseline_module { ($($t:tt)*) => { $crate::__entry_point! { $($t)* } }; }
#[cfg(not(feature = "sm80"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __in_sm80_module { ($($t:tt)*) => { $crate::__not_emitted! { $($t)* } }; }
#[cfg(any(feature = "sm80", feature = "sm90a"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __in_baseline_module { ($($t:tt)*) => { $crate::__not_emitted! { $($t)* } }; }
#[cfg(not(feature = "sm90a"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __in_sm90a_module { ($($t:tt)*) => { $crate::__not_emitted! { $($t)* } }; }
#[cfg(feature = "sm90a")]
#[doc(hidden)]
#[macro_export]
macro_rules! __in_sm90a_module { ($($t:tt)*) => { $crate::__entry_point! { $($t)* } }; }
#[cfg(feature = "sm80")]
#[doc(hidden)]
#[macro_export]
macro_rules! __in_sm80_module { ($($t:tt)*) => { $crate::__entry_point! { $($t)* } }; }

/// A kernel of the PTX module being built: an exported entry point.
#[doc(hidden)]
#[macro_export]
macro_rules! __entry_point {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),*) $body:block) => {
        $(#[$meta])*
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
    };
}

/// A kernel of the other module: compiled (so it is checked in both builds) but
/// private and unused, hence never emitted.
#[doc(hidden)]
#[macro_export]
macro_rules! __not_emitted {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),*) $body:block) => {
        $(#[$meta])*
        #[allow(dead_code)]
        unsafe fn $name($($arg: $ty),*) $body
    };
}
