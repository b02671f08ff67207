//! Kernel parameters as every backend passes them: one 64-bit word each.
//!
//! Every parameter a kernel takes is at most 8 bytes and travels in the low bytes of
//! a `u64`, which is what the host hands the CUDA driver, so one list of words
//! launches a kernel on the GPU and on the emulator alike. [`KernelParam`] is the one
//! place that says how each parameter type becomes a word and back, and what
//! [`ParamKind`] it is; [`KernelArgs`] does the same for a kernel's whole parameter
//! tuple, which is the type its handle carries (`crate::entry`).

use super::mem::{Element, Global, GlobalMut};

/// What a kernel parameter is, as a declaration sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    Usize,
    U32,
    U64,
    F32,
    /// A read-only pointer to device memory ([`Global`]).
    Global,
    /// A read-write pointer to device memory ([`GlobalMut`]).
    GlobalMut,
}

impl ParamKind {
    /// Whether the parameter is a device pointer.
    pub const fn is_pointer(self) -> bool {
        matches!(self, ParamKind::Global | ParamKind::GlobalMut)
    }
}

/// A type a kernel may take as a parameter.
pub trait KernelParam: Copy {
    const KIND: ParamKind;
    /// The parameter from its word (the emulator's side of a launch).
    fn from_word(w: u64) -> Self;
    /// The word the driver copies (the host's side).
    fn to_word(self) -> u64;
}

// Truncating casts on purpose: the value sits in the word's low bytes.
impl KernelParam for usize {
    const KIND: ParamKind = ParamKind::Usize;
    #[inline]
    fn from_word(w: u64) -> Self {
        w as usize
    }
    #[inline]
    fn to_word(self) -> u64 {
        self as u64
    }
}

impl KernelParam for u32 {
    const KIND: ParamKind = ParamKind::U32;
    #[inline]
    fn from_word(w: u64) -> Self {
        w as u32
    }
    #[inline]
    fn to_word(self) -> u64 {
        u64::from(self)
    }
}

impl KernelParam for u64 {
    const KIND: ParamKind = ParamKind::U64;
    #[inline]
    fn from_word(w: u64) -> Self {
        w
    }
    #[inline]
    fn to_word(self) -> u64 {
        self
    }
}

impl KernelParam for f32 {
    const KIND: ParamKind = ParamKind::F32;
    #[inline]
    fn from_word(w: u64) -> Self {
        f32::from_bits(w as u32)
    }
    #[inline]
    fn to_word(self) -> u64 {
        u64::from(self.to_bits())
    }
}

// A pointer's word is its address. The host makes it from a buffer's address (a
// device pointer, or a host allocation's `as_ptr() as u64` under the emulator, which
// exposed its provenance).
impl<T: Element> KernelParam for Global<T> {
    const KIND: ParamKind = ParamKind::Global;
    #[inline]
    fn from_word(w: u64) -> Self {
        Global::from_ptr(core::ptr::with_exposed_provenance(w as usize))
    }
    #[inline]
    fn to_word(self) -> u64 {
        self.as_ptr().expose_provenance() as u64
    }
}

impl<T: Element> KernelParam for GlobalMut<T> {
    const KIND: ParamKind = ParamKind::GlobalMut;
    #[inline]
    fn from_word(w: u64) -> Self {
        GlobalMut::from_ptr(core::ptr::with_exposed_provenance_mut(w as usize))
    }
    #[inline]
    fn to_word(self) -> u64 {
        self.as_ptr().expose_provenance() as u64
    }
}

/// A kernel's parameters as one tuple: `(usize, Global<f32>, GlobalMut<f32>)`.
pub trait KernelArgs: Copy {
    /// Each parameter's kind, in order.
    const KINDS: &'static [ParamKind];
    /// The words of a launch, one per parameter.
    type Words: AsRef<[u64]> + Copy + Send + Sync + 'static;
    fn words(self) -> Self::Words;
}

macro_rules! kernel_args {
    ($n:literal; $($t:ident $v:ident),*) => {
        impl<$($t: KernelParam),*> KernelArgs for ($($t,)*) {
            const KINDS: &'static [ParamKind] = &[$($t::KIND),*];
            type Words = [u64; $n];
            #[inline]
            #[allow(clippy::unused_unit)]
            fn words(self) -> [u64; $n] {
                let ($($v,)*) = self;
                [$($v.to_word()),*]
            }
        }
    };
}

kernel_args!(0;);
kernel_args!(1; A a);
kernel_args!(2; A a, B b);
kernel_args!(3; A a, B b, C c);
kernel_args!(4; A a, B b, C c, D d);
kernel_args!(5; A a, B b, C c, D d, E e);
kernel_args!(6; A a, B b, C c, D d, E e, F f);
kernel_args!(7; A a, B b, C c, D d, E e, F f, G g);
kernel_args!(8; A a, B b, C c, D d, E e, F f, G g, H h);
kernel_args!(9; A a, B b, C c, D d, E e, F f, G g, H h, I i);
kernel_args!(10; A a, B b, C c, D d, E e, F f, G g, H h, I i, J j);
kernel_args!(11; A a, B b, C c, D d, E e, F f, G g, H h, I i, J j, K k);
kernel_args!(12; A a, B b, C c, D d, E e, F f, G g, H h, I i, J j, K k, L l);
