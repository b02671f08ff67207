//! Global-memory accessors: the only way kernels read and write device memory.
//!
//! [`Global`] and [`GlobalMut`] are `#[repr(transparent)]` pointers, so a kernel
//! takes them as parameters and the host passes plain device pointers. On the GPU
//! `read`/`write` compile to a single `ld.global`/`st.global`; on the host they
//! also report the access to the emulator, tagged with the kernel's source line.

use core::marker::PhantomData;

/// A type kernels move through global memory in one access.
///
/// Implementors are plain data (numbers, and `#[repr(C)]` structs of them): every bit
/// pattern, all zeros included, is a value. Device memory holds whatever was last
/// written there, and the emulator's addresses-only mode reads zeros.
///
/// `load`/`store` default to a plain read/write; [`Float4`](super::Float4) overrides
/// them with a 4-lane vector so LLVM emits one `ld.global.v4.f32` instead of splitting
/// the 16-byte struct copy into two 8-byte loads.
pub trait Element: Copy {
    /// # Safety
    /// `p` must be valid and aligned for a read of `Self`.
    #[inline(always)]
    unsafe fn load(p: *const Self) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe { p.read() }
    }
    /// # Safety
    /// `p` must be valid and aligned for a write of `Self`.
    #[inline(always)]
    unsafe fn store(p: *mut Self, value: Self) {
        // SAFETY: forwarded from the caller.
        unsafe { p.write(value) }
    }
    /// A load from memory no thread writes during the kernel: [`Global::read`].
    /// Defaults to [`Element::load`]; the 4- and 16-byte types override it on the GPU
    /// with `ld.global.nc` (the read-only data path nvcc uses for `const __restrict__`).
    ///
    /// # Safety
    /// As for `load`, and nothing writes `*p` while the kernel runs.
    #[inline(always)]
    unsafe fn load_read_only(p: *const Self) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe { Self::load(p) }
    }
}

/// `ld.global.nc` of one 4-byte word; the generic address is converted first, as
/// LLVM does for its own global loads.
#[cfg(target_arch = "nvptx64")]
macro_rules! read_only_word {
    ($($t:ty => $ptx:literal),*) => {$(
        impl Element for $t {
            #[inline(always)]
            unsafe fn load_read_only(p: *const Self) -> Self {
                let v: $t;
                // SAFETY: the caller guarantees p is a valid, aligned, read-only global address.
                unsafe {
                    core::arch::asm!(
                        concat!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.", $ptx, " {v}, [g]; }}"),
                        p = in(reg64) p, v = out(reg32) v, options(pure, readonly, nostack, preserves_flags));
                }
                v
            }
        }
    )*};
}
#[cfg(target_arch = "nvptx64")]
read_only_word!(f32 => "f32", u32 => "u32", i32 => "s32");
#[cfg(not(target_arch = "nvptx64"))]
impl Element for f32 {}
#[cfg(not(target_arch = "nvptx64"))]
impl Element for u32 {}
#[cfg(not(target_arch = "nvptx64"))]
impl Element for i32 {}
impl Element for f64 {}
impl Element for u64 {}
// Bytes: how the host holds a buffer of any element type (cast with `global_as`).
impl Element for u8 {}

/// A read-only pointer to device (global) memory: like a shared borrow `&[T]`, the
/// data must not change while the kernel runs (no thread writes it, no `GlobalMut`
/// aliases it), which is what lets its loads take the GPU's read-only data path.
#[repr(transparent)]
pub struct Global<T> {
    ptr: *const T,
    _elem: PhantomData<T>,
}

/// A read-write pointer to device (global) memory.
#[repr(transparent)]
pub struct GlobalMut<T> {
    ptr: *mut T,
    _elem: PhantomData<T>,
}

// Manual impls: derive would demand `T: Clone`.
impl<T> Clone for Global<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Global<T> {}
impl<T> Clone for GlobalMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalMut<T> {}

/// Element `i` of `base` through `load`, reported to the emulator on the host.
///
/// # Safety
/// `i` in bounds; `load`'s own contract holds for the element.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn load_at<T: Element>(base: *const T, i: usize, load: unsafe fn(*const T) -> T) -> T {
    // SAFETY: the caller guarantees `i` is in bounds.
    let p = unsafe { base.add(i) };
    #[cfg(not(target_arch = "nvptx64"))]
    if super::emu::record_global(p as usize, size_of::<T>(), align_of::<T>(), super::emu::Op::Load) {
        // SAFETY: all-zero bytes are a value of every Element (see the trait).
        return unsafe { core::mem::zeroed() };
    }
    // SAFETY: as above; device allocations are aligned for any T we use.
    unsafe { load(p) }
}

impl<T: Element> Global<T> {
    /// Wraps a raw device pointer (the host side of a launch does this implicitly).
    pub const fn from_ptr(ptr: *const T) -> Self {
        Self {
            ptr,
            _elem: PhantomData,
        }
    }

    /// The raw pointer, for code outside kernel bodies (the emulator, tests).
    pub const fn as_ptr(self) -> *const T {
        self.ptr
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// `i` must be in bounds of the allocation this pointer was made from.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, i: usize) -> T {
        // SAFETY: the caller guarantees `i` is in bounds; a Global is read-only.
        unsafe { load_at(self.ptr, i, T::load_read_only) }
    }

    /// Reinterprets the pointer as pointing to `U` (e.g. `f32` to [`Float4`](super::Float4)).
    ///
    /// # Safety
    /// The pointer must be aligned for `U` (device allocations are 256-byte aligned).
    #[inline(always)]
    pub unsafe fn cast<U: Element>(self) -> Global<U> {
        Global::from_ptr(self.ptr.cast())
    }

    /// The pointer `i` elements further. A loop that steps it, as C steps a pointer,
    /// lets LLVM keep one 64-bit address per stream with immediate offsets, where
    /// `read(index)` with a 32-bit index rebuilds and widens each address
    /// (docs/perf-notes.md, "matmul: pointers that step"). Safe: the result may lie
    /// anywhere (a loop's last step may pass the end); reading it is what needs bounds.
    #[inline(always)]
    pub fn offset(self, i: usize) -> Self {
        Self::from_ptr(self.ptr.wrapping_add(i))
    }
}

impl<T: Element> GlobalMut<T> {
    /// Wraps a raw device pointer.
    pub const fn from_ptr(ptr: *mut T) -> Self {
        Self {
            ptr,
            _elem: PhantomData,
        }
    }

    /// The raw pointer, for code outside kernel bodies.
    pub const fn as_ptr(self) -> *mut T {
        self.ptr
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// `i` must be in bounds of the allocation.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, i: usize) -> T {
        // SAFETY: the caller guarantees `i` is in bounds. A plain (coherent) load:
        // this buffer may be written during the kernel.
        unsafe { load_at(self.ptr.cast_const(), i, T::load) }
    }

    /// Writes `value` to element `i`.
    ///
    /// # Safety
    /// `i` must be in bounds of the allocation and no other thread may access
    /// the element concurrently.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, i: usize, value: T) {
        // SAFETY: the caller guarantees `i` is in bounds.
        let p = unsafe { self.ptr.add(i) };
        #[cfg(not(target_arch = "nvptx64"))]
        if super::emu::record_global(p as usize, size_of::<T>(), align_of::<T>(), super::emu::Op::Store) {
            return;
        }
        // SAFETY: as above.
        unsafe { T::store(p, value) }
    }

    /// Reinterprets the pointer as pointing to `U`.
    ///
    /// # Safety
    /// The pointer must be aligned for `U`.
    #[inline(always)]
    pub unsafe fn cast<U: Element>(self) -> GlobalMut<U> {
        GlobalMut::from_ptr(self.ptr.cast())
    }

    /// The pointer `i` elements further (as [`Global::offset`]): one buffer holding
    /// several arrays, each from its own offset.
    #[inline(always)]
    pub fn offset(self, i: usize) -> Self {
        Self::from_ptr(self.ptr.wrapping_add(i))
    }
}
