//! Kernel handles: what the host knows of each kernel, generated from the table of
//! `kernel!` blocks (see [`crate::entry`]).
//!
//! A [`Kernel<P>`] names one PTX entry point and carries its parameter types `P` (a
//! tuple, e.g. `(usize, Global<f32>, GlobalMut<f32>)`), so a launch with the wrong
//! kernel or wrong arguments does not compile. Its [`KernelInfo`] is what every
//! backend needs untyped: the name, the parameters' kinds, the PTX module, the launch
//! bounds, and the emulator's entry.

use core::marker::PhantomData;

use crate::gpu::param::ParamKind;

/// The PTX modules `host/build.rs` builds from a kernel crate: the baseline every GPU
/// loads, and one per newer architecture that some kernels require
/// (`kernel! { #[requires(sm_80)] ... }`), loaded only where the GPU has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PtxModule {
    /// Every kernel without a requirement (built for sm_70 unless configured).
    Baseline,
    /// The `#[requires(sm_80)]` kernels: `cp.async`, `mma.sync`.
    Sm80,
    /// The `#[requires(sm_90a)]` kernels: TMA, transaction barriers, clusters, `wgmma`.
    Sm90a,
}

impl PtxModule {
    /// Every module, baseline first.
    pub const ALL: [PtxModule; 3] = [PtxModule::Baseline, PtxModule::Sm80, PtxModule::Sm90a];

    /// The architecture its kernels require (`sm_80`), None for the baseline.
    pub const fn requires(self) -> Option<&'static str> {
        match self {
            PtxModule::Baseline => None,
            PtxModule::Sm80 => Some("sm_80"),
            PtxModule::Sm90a => Some("sm_90a"),
        }
    }

    /// The compute capability a GPU needs to load it (the baseline's sm_70 is every
    /// GPU this tool runs on).
    pub const fn compute_capability(self) -> (i32, i32) {
        match self {
            PtxModule::Baseline => (7, 0),
            PtxModule::Sm80 => (8, 0),
            PtxModule::Sm90a => (9, 0),
        }
    }

    /// Whether a GPU of compute capability `cc` loads it: that one or newer, but
    /// exactly 9.0 for sm_90a, whose instructions later GPUs do not have.
    pub const fn loads_on(self, cc: (i32, i32)) -> bool {
        let need = self.compute_capability();
        match self {
            PtxModule::Sm90a => cc.0 == need.0 && cc.1 == need.1,
            _ => cc.0 > need.0 || (cc.0 == need.0 && cc.1 >= need.1),
        }
    }
}

/// `#[launch_bounds(THREADS, BLOCKS)]`: CUDA's `__launch_bounds__(THREADS, BLOCKS)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    /// The most threads per block.
    pub threads: u32,
    /// Blocks that must fit on one SM (registers are capped for it).
    pub blocks: u32,
}

/// One kernel, untyped: what every backend needs.
#[derive(Clone, Copy, Debug)]
pub struct KernelInfo {
    /// The PTX entry point's name.
    pub name: &'static str,
    /// Each parameter's kind, from its type.
    pub params: &'static [ParamKind],
    /// The PTX module that has it.
    pub module: PtxModule,
    pub launch_bounds: Option<LaunchBounds>,
    /// Blocks a thread-block cluster along x (`#[cluster(N)]`, CUDA's
    /// `__cluster_dims__`): 1 for a kernel that asks for none. The launch makes
    /// clusters of it, and the grid must be a multiple of it.
    pub cluster: u32,
    /// Converts `words[i]` to parameter `i` ([`crate::gpu::param::KernelParam`]) and
    /// calls the kernel's host function. Panics, naming the kernel, unless
    /// `words.len() == params.len()`.
    ///
    /// # Safety
    /// As for the kernel itself: call it inside an emulated launch
    /// ([`crate::gpu::emu::launch`]), with the words a GPU launch would get, i.e.
    /// addresses of live host buffers large enough for the kernel's accesses (or an
    /// addresses-only launch).
    pub call: unsafe fn(&[u64]),
}

impl KernelInfo {
    /// How many parameters (words) it takes.
    pub const fn arity(&self) -> usize {
        self.params.len()
    }
}

impl PartialEq for KernelInfo {
    /// One entry point per name (the table refuses duplicates).
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for KernelInfo {}

/// A kernel with its parameter types `P`: a launch must pass exactly a `P`.
pub struct Kernel<P> {
    info: KernelInfo,
    params: PhantomData<fn(P)>,
}

impl<P> Kernel<P> {
    pub const fn new(info: KernelInfo) -> Self {
        Kernel {
            info,
            params: PhantomData,
        }
    }

    /// The untyped part, for declarations and backends that hold many kernels.
    pub const fn info(&'static self) -> &'static KernelInfo {
        &self.info
    }
}

impl<P: crate::gpu::param::KernelArgs> Kernel<P> {
    /// The kernel with `args`, as a closure an emulated launch runs on every thread:
    /// `emu::launch(&cfg, unsafe { entry::chase.bind((steps, next, cursor)) })`. The
    /// arguments are words already, so the closure is `Sync` whatever they point to.
    ///
    /// # Safety
    /// Running the closure is calling the kernel ([`KernelInfo::call`]'s contract):
    /// inside an emulated launch, with pointers to live host buffers large enough for
    /// the kernel's accesses (or an addresses-only launch).
    pub unsafe fn bind(&self, args: P) -> impl Fn() + Sync + 'static {
        let (call, words) = (self.info.call, args.words());
        // SAFETY: the caller of `bind` took on the kernel's contract.
        move || unsafe { call(words.as_ref()) }
    }
}

impl<P> core::ops::Deref for Kernel<P> {
    type Target = KernelInfo;
    fn deref(&self) -> &KernelInfo {
        &self.info
    }
}

impl<P> core::fmt::Debug for Kernel<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Kernel").field(&self.info.name).finish()
    }
}
