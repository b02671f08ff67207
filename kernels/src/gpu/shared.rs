//! Shared memory: static arrays ([`shared_array!`](crate::shared_array)) and the
//! dynamic segment sized at launch ([`dynamic_shared_array`]).
//!
//! On the GPU an array is a 32-bit address in the shared window and every access is
//! one `ld.shared`/`st.shared`, as nvcc emits for `__shared__` arrays (a generic
//! pointer would cost an address-space check per access).

use core::marker::PhantomData;

mod chase;
mod matrix;

/// A block-wide array in shared memory.
pub struct SharedArray<T> {
    #[cfg(target_arch = "nvptx64")]
    addr: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    ptr: *mut T,
    /// The array's PTX symbol, for the emulator's log.
    #[cfg(not(target_arch = "nvptx64"))]
    name: &'static str,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T> Clone for SharedArray<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedArray<T> {}

/// Element types shared memory holds, one `ld.shared`/`st.shared` each: 4-byte words,
/// and the 16-bit floats the tensor cores read ([`super::half`]).
pub trait SharedWord: Copy {
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    unsafe fn ld_shared(addr: u32) -> Self;
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    unsafe fn st_shared(addr: u32, value: Self);
}

#[cfg(target_arch = "nvptx64")]
macro_rules! shared_word {
    ($($t:ty => $ptx:literal),*) => {$(
        impl SharedWord for $t {
            #[inline(always)]
            unsafe fn ld_shared(addr: u32) -> Self {
                let v: $t;
                // SAFETY: the caller passes an in-bounds shared-window address.
                unsafe {
                    core::arch::asm!(concat!("ld.shared.", $ptx, " {v}, [{a}];"),
                        v = out(reg32) v, a = in(reg32) addr, options(readonly, nostack, preserves_flags));
                }
                v
            }
            #[inline(always)]
            unsafe fn st_shared(addr: u32, value: Self) {
                // SAFETY: as above.
                unsafe {
                    core::arch::asm!(concat!("st.shared.", $ptx, " [{a}], {v};"),
                        a = in(reg32) addr, v = in(reg32) value, options(nostack, preserves_flags));
                }
            }
        }
    )*};
}
#[cfg(target_arch = "nvptx64")]
shared_word!(f32 => "f32", u32 => "u32", i32 => "s32");

/// The 16-bit floats move as their bits (`.b16`: no conversion on the way).
#[cfg(target_arch = "nvptx64")]
macro_rules! shared_half {
    ($($t:ty),*) => {$(
        impl SharedWord for $t {
            #[inline(always)]
            unsafe fn ld_shared(addr: u32) -> Self {
                let v: u16;
                // SAFETY: the caller passes an in-bounds shared-window address.
                unsafe {
                    core::arch::asm!("ld.shared.b16 {v}, [{a}];",
                        v = out(reg16) v, a = in(reg32) addr, options(readonly, nostack, preserves_flags));
                }
                <$t as super::Half>::from_bits(v)
            }
            #[inline(always)]
            unsafe fn st_shared(addr: u32, value: Self) {
                let v = <$t as super::Half>::to_bits(value);
                // SAFETY: as above.
                unsafe {
                    core::arch::asm!("st.shared.b16 [{a}], {v};",
                        a = in(reg32) addr, v = in(reg16) v, options(nostack, preserves_flags));
                }
            }
        }
    )*};
}
#[cfg(target_arch = "nvptx64")]
shared_half!(super::Bf16, super::F16);

#[cfg(not(target_arch = "nvptx64"))]
impl SharedWord for super::Bf16 {}
#[cfg(not(target_arch = "nvptx64"))]
impl SharedWord for super::F16 {}
#[cfg(not(target_arch = "nvptx64"))]
impl SharedWord for f32 {}
#[cfg(not(target_arch = "nvptx64"))]
impl SharedWord for u32 {}
#[cfg(not(target_arch = "nvptx64"))]
impl SharedWord for i32 {}

impl<T: SharedWord> SharedArray<T> {
    /// Wraps an address in the shared window. Used by [`shared_array!`](crate::shared_array).
    ///
    /// # Safety
    /// `addr` must be the start of a shared allocation of at least `len` elements.
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn from_shared_addr(addr: u32, len: usize) -> Self {
        Self {
            addr,
            len,
            _elem: PhantomData,
        }
    }

    /// Wraps emulator storage of the array whose PTX symbol is `name`. Used by
    /// [`shared_array!`](crate::shared_array) on the host.
    ///
    /// # Safety
    /// `ptr` must point to at least `len` elements that outlive the block.
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    pub unsafe fn from_host_ptr(ptr: *mut T, name: &'static str, len: usize) -> Self {
        Self {
            ptr,
            name,
            len,
            _elem: PhantomData,
        }
    }

    /// The array's address in the shared window (the GPU's operand of `ld.shared`,
    /// copies and descriptors).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn shared_addr(self) -> u32 {
        self.addr
    }

    /// The emulator's storage of the array.
    #[cfg(not(target_arch = "nvptx64"))]
    pub(crate) fn host_ptr(self) -> *mut T {
        self.ptr
    }

    /// The emulator's address of element `i`, checked in bounds.
    #[cfg(not(target_arch = "nvptx64"))]
    #[track_caller]
    pub(crate) fn element_ptr(self, i: usize) -> usize {
        assert!(
            i <= self.len,
            "shared index {i} out of bounds (length {})",
            self.len
        );
        self.ptr as usize + i * size_of::<T>()
    }

    /// The same memory from the first element whose address is a multiple of `bytes`
    /// (a power of two): where a swizzled tile must start. The launch provides `bytes`
    /// more than the tiles need.
    #[inline(always)]
    pub fn aligned(self, bytes: usize) -> Self {
        #[cfg(target_arch = "nvptx64")]
        let at = self.addr as usize;
        #[cfg(not(target_arch = "nvptx64"))]
        let at = self.ptr as usize;
        let skip = (at.next_multiple_of(bytes) - at) / size_of::<T>();
        Self {
            #[cfg(target_arch = "nvptx64")]
            addr: self.addr + (skip * size_of::<T>()) as u32,
            #[cfg(not(target_arch = "nvptx64"))]
            ptr: self.ptr.wrapping_add(skip),
            #[cfg(not(target_arch = "nvptx64"))]
            name: self.name,
            len: self.len.saturating_sub(skip),
            _elem: PhantomData,
        }
    }

    /// The same memory from element `i` on. Reads at constant offsets from such a
    /// view keep the offsets as constants (`ld.shared [addr + 1024]`), where an index
    /// whose parts have disjoint bits would be joined with `or` before it is scaled.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn offset(self, i: usize) -> Self {
        #[cfg(not(target_arch = "nvptx64"))]
        assert!(
            i <= self.len,
            "shared offset {i} past the end (length {})",
            self.len
        );
        Self {
            #[cfg(target_arch = "nvptx64")]
            addr: self.addr + (i * size_of::<T>()) as u32,
            #[cfg(not(target_arch = "nvptx64"))]
            ptr: self.ptr.wrapping_add(i),
            #[cfg(not(target_arch = "nvptx64"))]
            name: self.name,
            len: self.len.saturating_sub(i),
            _elem: PhantomData,
        }
    }

    /// The same memory as elements of `U` (a region of 16-bit values written as 4-byte
    /// pairs, say): its length in `U`s, rounded down.
    #[inline(always)]
    pub fn cast<U: SharedWord>(self) -> SharedArray<U> {
        SharedArray {
            #[cfg(target_arch = "nvptx64")]
            addr: self.addr,
            #[cfg(not(target_arch = "nvptx64"))]
            ptr: self.ptr.cast(),
            #[cfg(not(target_arch = "nvptx64"))]
            name: self.name,
            len: self.len * size_of::<T>() / size_of::<U>(),
            _elem: PhantomData,
        }
    }

    /// Number of elements.
    #[inline(always)]
    pub fn len(self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// `i < self.len()`, and no other thread writes the element without a barrier between.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, i: usize) -> T {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: in bounds by the caller's promise; the shared window is 32-bit.
        unsafe {
            T::ld_shared(self.addr + (i as u32) * size_of::<T>() as u32)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: checked in bounds (the GPU would read or write a neighbour).
        unsafe {
            assert!(
                i < self.len,
                "shared index {i} out of bounds (length {})",
                self.len
            );
            super::emu::record_shared(
                self.ptr as usize,
                self.name,
                i * size_of::<T>(),
                size_of::<T>(),
                super::emu::Op::Load,
            );
            self.ptr.add(i).read()
        }
    }

    /// Writes `value` to element `i`.
    ///
    /// # Safety
    /// `i < self.len()`, and no other thread accesses the element without a barrier between.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, i: usize, value: T) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: in bounds by the caller's promise.
        unsafe {
            T::st_shared(self.addr + (i as u32) * size_of::<T>() as u32, value)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: checked in bounds (the GPU would read or write a neighbour).
        unsafe {
            assert!(
                i < self.len,
                "shared index {i} out of bounds (length {})",
                self.len
            );
            super::emu::record_shared(
                self.ptr as usize,
                self.name,
                i * size_of::<T>(),
                size_of::<T>(),
                super::emu::Op::Store,
            );
            self.ptr.add(i).write(value)
        }
    }
}

impl<T: SharedWord + super::Element> SharedArray<T> {
    /// `self[i] = src[j]` asynchronously: one 4-byte `cp.async.ca.shared.global` (sm_80
    /// and later; see [`super::async_copy`]), the source read through L1 and written to
    /// shared memory without passing through a register. `None` for `j` writes zero
    /// instead (the copy's source size is 0: nothing is read), which is how a partial
    /// tile is zero-filled without a branch. The element is readable after a
    /// [`wait_group`](super::async_copy::wait_group) covering the copy (and, for other
    /// threads, a barrier).
    ///
    /// # Safety
    /// `i < self.len()`; `j` in bounds of `src`'s allocation; no thread accesses
    /// element `i` between the copy and the wait that covers it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy_async(self, i: usize, src: super::Global<T>, j: Option<usize>) {
        const { assert!(size_of::<T>() == 4) };
        #[cfg(target_arch = "nvptx64")]
        {
            // An invalid element still needs a valid-looking address; nothing is read.
            let (p, bytes) = match j {
                Some(j) => (src.as_ptr().wrapping_add(j), 4u32),
                None => (src.as_ptr(), 0),
            };
            // SAFETY: an in-bounds shared address and global element (caller).
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; cp.async.ca.shared.global [{a}], [g], 4, {n}; }}",
                    a = in(reg32) self.addr + (i as u32) * 4, p = in(reg64) p, n = in(reg32) bytes,
                    options(nostack, preserves_flags));
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: checked in bounds; the source as the caller promises.
        unsafe {
            assert!(
                i < self.len,
                "shared index {i} out of bounds (length {})",
                self.len
            );
            self.emulate_copy_async(i, j.map(|j| src.as_ptr().add(j).cast()), 4);
        }
    }

    /// The emulator's asynchronous copy of `bytes` from `src` (zeros for `None`) into
    /// shared element `i`: the global load is recorded and read now, the shared store
    /// recorded now and landed at the `wait_group` that covers it.
    ///
    /// # Safety
    /// As the copy that calls it; `i` checked in bounds by the caller.
    #[cfg(not(target_arch = "nvptx64"))]
    #[track_caller]
    unsafe fn emulate_copy_async(self, i: usize, src: Option<*const u8>, bytes: usize) {
        let mut data = [0u8; 16];
        let skip = super::emu::record_async_copy(
            src.map(|p| p as usize),
            (self.ptr as usize, self.name),
            i * size_of::<T>(),
            bytes,
        );
        if let Some(p) = src
            && !skip
        {
            // SAFETY: the source as the copy's caller promises.
            unsafe { core::ptr::copy_nonoverlapping(p, data.as_mut_ptr(), bytes) };
        }
        // SAFETY: i is in bounds (checked by the caller).
        unsafe { super::emu::queue_async_copy(self.ptr.add(i).cast(), data, bytes) };
    }
}

impl SharedArray<f32> {
    /// `self[i..i + 4] = src[j..j + 4]` asynchronously: one 16-byte
    /// `cp.async.cg.shared.global` (sm_80 and later), cached in L2 only, no staging
    /// registers. `None` for `j` writes four zeros instead (nothing is read).
    ///
    /// # Safety
    /// `i % 4 == 0`, `i + 4 <= self.len()`; `j % 4 == 0` with `src` 16-byte aligned
    /// (device allocations are) and `j + 4` in bounds of its allocation; no thread
    /// accesses those elements between the copy and the wait that covers it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy4_async(self, i: usize, src: super::Global<f32>, j: Option<usize>) {
        #[cfg(target_arch = "nvptx64")]
        {
            let (p, bytes) = match j {
                Some(j) => (src.as_ptr().wrapping_add(j), 16u32),
                None => (src.as_ptr(), 0),
            };
            // SAFETY: aligned, in-bounds shared and global addresses (caller).
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; cp.async.cg.shared.global [{a}], [g], 16, {n}; }}",
                    a = in(reg32) self.addr + (i as u32) * 4, p = in(reg64) p, n = in(reg32) bytes,
                    options(nostack, preserves_flags));
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: checked aligned and in bounds; the source as the caller promises.
        unsafe {
            self.check4(i);
            let p = j.map(|j| src.as_ptr().add(j));
            if let Some(p) = p {
                assert!(
                    (p as usize).is_multiple_of(16),
                    "a 16-byte asynchronous copy from {p:?}, which is not 16-byte aligned"
                );
            }
            self.emulate_copy_async(i, p.map(|p| p.cast()), 16);
        }
    }

    /// Reads elements `i..i + 4` as one [`Float4`](super::Float4): one 16-byte
    /// `ld.shared.v4.f32`, as a `float4` read of a `__shared__ float[]` in CUDA C++.
    ///
    /// # Safety
    /// `i % 4 == 0` (16-byte aligned: arrays are), `i + 4 <= self.len()`, and no other
    /// thread writes those elements without a barrier between.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read4(self, i: usize) -> super::Float4 {
        #[cfg(target_arch = "nvptx64")]
        {
            let (x, y, z, w): (f32, f32, f32, f32);
            // SAFETY: an aligned, in-bounds shared-window address by the caller's promise.
            unsafe {
                core::arch::asm!(
                    "ld.shared.v4.f32 {{{x}, {y}, {z}, {w}}}, [{a}];",
                    a = in(reg32) self.addr + (i as u32) * 4,
                    x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                    options(readonly, nostack, preserves_flags));
            }
            super::Float4 { x, y, z, w }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: checked aligned and in bounds (the GPU would fault or read a neighbour).
        unsafe {
            self.check4(i);
            super::emu::record_shared(self.ptr as usize, self.name, i * 4, 16, super::emu::Op::Load);
            let p = self.ptr.add(i);
            super::Float4::new(p.read(), p.add(1).read(), p.add(2).read(), p.add(3).read())
        }
    }

    /// Writes `value` to elements `i..i + 4`: one `st.shared.v4.f32`.
    ///
    /// # Safety
    /// As for [`SharedArray::read4`], and no other thread accesses those elements
    /// without a barrier between.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write4(self, i: usize, value: super::Float4) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as for `read4`.
        unsafe {
            core::arch::asm!(
                "st.shared.v4.f32 [{a}], {{{x}, {y}, {z}, {w}}};",
                a = in(reg32) self.addr + (i as u32) * 4,
                x = in(reg32) value.x, y = in(reg32) value.y, z = in(reg32) value.z, w = in(reg32) value.w,
                options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: checked aligned and in bounds.
        unsafe {
            self.check4(i);
            super::emu::record_shared(self.ptr as usize, self.name, i * 4, 16, super::emu::Op::Store);
            let p = self.ptr.add(i);
            p.write(value.x);
            p.add(1).write(value.y);
            p.add(2).write(value.z);
            p.add(3).write(value.w);
        }
    }

    #[cfg(not(target_arch = "nvptx64"))]
    #[track_caller]
    fn check4(self, i: usize) {
        assert!(
            i.is_multiple_of(4) && i + 4 <= self.len,
            "shared float4 at index {i} is misaligned or out of bounds (length {})",
            self.len
        );
    }
}

/// Declares a static shared-memory array and returns it as a [`SharedArray`]:
/// `let tile = shared_array![TILE: [f32; 32 * 33]];`
///
/// The name becomes the PTX symbol, so it must be unique within the crate. The
/// length may use constants of the enclosing module (not locals of the function).
///
/// Every shared array (and the dynamic segment) starts at a 128-byte boundary, so
/// offsets within an array are the GPU's offsets modulo 128: the sectors and
/// 128-byte rows `coalesce explain` counts from them are the hardware's.
#[macro_export]
macro_rules! shared_array {
    ($name:ident : [$t:ty; $n:expr]) => {{
        #[cfg(target_arch = "nvptx64")]
        let array = {
            // global_asm! is an item; a module lets it sit inside the kernel body.
            #[allow(non_snake_case)]
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                core::arch::global_asm!(
                    concat!(".shared .align 128 .b8 ", stringify!($name), "[{bytes}];"),
                    bytes = const core::mem::size_of::<[$t; $n]>(),
                );
            }
            let addr: u32;
            // SAFETY: takes the shared-window address of the array declared above.
            unsafe {
                core::arch::asm!(concat!("mov.u32 {0}, ", stringify!($name), ";"),
                    out(reg32) addr, options(pure, nomem, nostack, preserves_flags));
                $crate::gpu::SharedArray::<$t>::from_shared_addr(addr, $n)
            }
        };
        #[cfg(not(target_arch = "nvptx64"))]
        let array = $crate::gpu::shared::emulated_shared_array::<$t>(stringify!($name), $n);
        array
    }};
}

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 128 .b8 coalesce_dynamic_smem[];");

/// The PTX symbol of the dynamic shared segment (declared just above on the GPU).
#[cfg(not(target_arch = "nvptx64"))]
const DYNAMIC_SYMBOL: &str = "coalesce_dynamic_smem";

/// The dynamic shared-memory segment (sized by the launch) viewed as `len` elements.
///
/// # Safety
/// The launch must provide at least `len * size_of::<T>()` bytes of dynamic shared memory.
#[inline(always)]
pub unsafe fn dynamic_shared_array<T: SharedWord>(len: usize) -> SharedArray<T> {
    #[cfg(target_arch = "nvptx64")]
    {
        let addr: u32;
        // SAFETY: takes the address of the extern segment declared above.
        unsafe {
            core::arch::asm!("mov.u32 {0}, coalesce_dynamic_smem;",
                out(reg32) addr, options(pure, nomem, nostack, preserves_flags));
            SharedArray::from_shared_addr(addr, len)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let ptr = super::emu::dynamic_shared_storage(len * size_of::<T>());
        // SAFETY: the storage holds `len` elements (checked above) and lives as long as the block.
        unsafe { SharedArray::from_host_ptr(ptr.cast(), DYNAMIC_SYMBOL, len) }
    }
}

/// The emulator's half of [`shared_array!`](crate::shared_array): static array `name`
/// of the current emulated block. It lives here rather than in [`super::emu`] so that
/// `emu` needs nothing from this module (the dependency runs one way, shared -> emu).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub fn emulated_shared_array<T: SharedWord>(name: &'static str, len: usize) -> SharedArray<T> {
    let ptr = super::emu::static_shared_storage(name, len * size_of::<T>());
    // SAFETY: the storage holds `len` elements and lives as long as the block.
    unsafe { SharedArray::from_host_ptr(ptr.cast(), name, len) }
}
