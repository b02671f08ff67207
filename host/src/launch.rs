//! Launching a kernel: its grid, and its arguments, typed by the kernel's handle.
//!
//! `gpu.launch(&entry::copy_f32, cfg, (n, src.global(), dst.global_mut()))`: the
//! arguments are a tuple that must be the kernel's parameter types
//! ([`kernels::entry`]), so a wrong kernel, a missing argument or a buffer of the
//! wrong element type does not compile. Declared experiments pass their arguments as
//! words built from the declaration ([`crate::experiment::Experiment::words`]), which
//! is checked against the kernel's parameter kinds when it is compiled.

use std::ffi::c_void;
use std::marker::PhantomData;

use cust::function::Function;
use cust::memory::{DeviceCopy, DeviceSlice};
use kernels::gpu::param::{KernelArgs, KernelParam};
use kernels::gpu::{Element, Global, GlobalMut};
use kernels::handle::Kernel;

use crate::device::Gpu;
use crate::error::{Error, Result};

/// A device buffer (or slice) as a kernel argument: `buf.global()` where the kernel
/// takes a `Global<T>`, `buf.global_mut()` where it takes a `GlobalMut<T>`.
/// Where a kernel reads a buffer's bytes as another type (a u32 buffer as f32 words,
/// f32s as float4s), `global_as::<U>()` says so. Device allocations are 256-byte
/// aligned, so any element type's alignment holds at the start.
pub trait AsGlobal<T: Element> {
    fn global(&self) -> Global<T>;
    fn global_mut(&self) -> GlobalMut<T>;
    fn global_as<U: Element>(&self) -> Global<U>;
    fn global_mut_as<U: Element>(&self) -> GlobalMut<U>;
}

impl<T: Element + DeviceCopy> AsGlobal<T> for DeviceSlice<T> {
    fn global(&self) -> Global<T> {
        self.global_as()
    }
    fn global_mut(&self) -> GlobalMut<T> {
        self.global_mut_as()
    }
    fn global_as<U: Element>(&self) -> Global<U> {
        Global::from_word(self.as_device_ptr().as_raw())
    }
    fn global_mut_as<U: Element>(&self) -> GlobalMut<U> {
        GlobalMut::from_word(self.as_device_ptr().as_raw())
    }
}

/// A kernel loaded on one GPU, with its parameter types: what a timing loop launches
/// again and again without looking the function up each time.
pub struct Loaded<'g, P> {
    gpu: &'g Gpu,
    function: Function<'g>,
    /// Blocks a cluster, as the kernel asks (`#[cluster(N)]`).
    cluster: u32,
    params: PhantomData<fn(P)>,
}

impl<P: KernelArgs> Loaded<'_, P> {
    /// Enqueues one launch with `args`.
    pub fn launch(&self, cfg: Launch, args: P) -> Result<()> {
        self.gpu
            .launch_words(&self.function, cfg, args.words().as_ref(), self.cluster)
    }

    /// The driver's function, for its attributes.
    pub fn function(&self) -> &Function<'_> {
        &self.function
    }
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

/// Dynamic shared memory a block may use without opting in: above it, CUDA requires
/// the kernel's `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` first.
pub const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

/// Shared memory of one sm_90 SM.
pub const SHARED_PER_SM90: u32 = 228 * 1024;

/// Dynamic shared memory that lets `blocks` blocks (2 to 6), and no more, share an
/// sm_90 SM: its 228 KiB over the blocks, less the 1 KiB reserved per block and 1 KiB
/// to spare. How the copy engine's kernels (`copy/tma`, `transpose/tma-dense-fit`) keep
/// fewer boxes in flight, which keeps the DRAM busier (docs/perf-notes.md).
pub const fn shared_for_blocks_per_sm90(blocks: u32) -> u32 {
    SHARED_PER_SM90 / blocks - 2 * 1024
}

/// CUDA's limit on gridDim.x.
pub const MAX_GRID_X: u64 = (1 << 31) - 1;
/// CUDA's limit on gridDim.y and gridDim.z.
pub const MAX_GRID_YZ: u64 = 65_535;
/// Threads along x one launch may have: `thread::index_1d` computes the global index
/// in 32 bits (as nvcc does for `int` indices), so every index must fit in a u32.
pub const MAX_THREADS_X: u64 = 1 << 32;

impl Launch {
    /// One thread per element: ceil(n / block) blocks of `block` threads.
    pub fn one_per_element(n: usize, block: u32) -> Result<Launch> {
        let blocks = (n as u64).div_ceil(block as u64);
        if blocks.saturating_mul(block as u64) > MAX_THREADS_X {
            return Err(Error::TooLarge {
                what: format!("{n} elements"),
                why: format!(
                    "one thread each is more than the {MAX_THREADS_X} threads the kernels' 32-bit index reaches"
                ),
            });
        }
        if blocks > MAX_GRID_X {
            return Err(Error::TooLarge {
                what: format!("{n} elements"),
                why: format!(
                    "one thread each needs {blocks} blocks of {block}, above CUDA's grid limit of {MAX_GRID_X}"
                ),
            });
        }
        Ok(Launch {
            grid: (blocks.max(1) as u32, 1, 1),
            block: (block, 1, 1),
            shared_bytes: 0,
        })
    }

    /// A 2D grid of blocks of `block` threads, each covering `span` = (rows, cols) of
    /// a `rows` x `cols` `what` (a matrix, a product's C), x along cols, within CUDA's
    /// grid limits.
    pub fn tiles(
        what: &str,
        (rows, cols): (usize, usize),
        span: (usize, usize),
        block: (u32, u32, u32),
    ) -> Result<Launch> {
        let (gx, gy) = (
            cols.div_ceil(span.1).max(1) as u64,
            rows.div_ceil(span.0).max(1) as u64,
        );
        if gx > MAX_GRID_X || gy > MAX_GRID_YZ {
            return Err(Error::TooLarge {
                what: format!("a {rows} x {cols} {what}"),
                why: format!(
                    "needs a {gx} x {gy} grid of {} x {} tiles; CUDA allows {MAX_GRID_X} x {MAX_GRID_YZ}",
                    span.0, span.1
                ),
            });
        }
        Ok(Launch {
            grid: (gx as u32, gy as u32, 1),
            block,
            shared_bytes: 0,
        })
    }

    /// A grid-stride launch: enough blocks to fill every SM `blocks_per_sm` times,
    /// but no more than the work needs.
    pub fn grid_stride(work_items: usize, block: u32, sm_count: u32, blocks_per_sm: u32) -> Launch {
        let needed = (work_items as u64).div_ceil(block as u64).max(1);
        let full = sm_count as u64 * blocks_per_sm as u64;
        Launch {
            grid: (needed.min(full).max(1) as u32, 1, 1),
            block: (block, 1, 1),
            shared_bytes: 0,
        }
    }
}

impl Gpu {
    /// Loads `kernel` (from the module its handle names, or its substitute) for
    /// launches with its own parameter types.
    pub fn load<P: KernelArgs>(&self, kernel: &Kernel<P>) -> Result<Loaded<'_, P>> {
        Ok(Loaded {
            gpu: self,
            function: self.function(kernel)?,
            cluster: kernel.cluster,
            params: PhantomData,
        })
    }

    /// Enqueues one launch of `kernel` with `args`, its parameters. Errors at launch
    /// (bad configuration) come back here; faults while running come back from the
    /// next [`Gpu::sync`]. A loop launching one kernel many times loads it once
    /// ([`Gpu::load`]).
    pub fn launch<P: KernelArgs>(&self, kernel: &Kernel<P>, cfg: Launch, args: P) -> Result<()> {
        self.load(kernel)?.launch(cfg, args)
    }

    /// Enqueues `f` with argument words: a declared variant's ([`crate::prepared`]),
    /// run by its Rust kernel or by a function with the same parameters (its C++ twin),
    /// in clusters of `cluster` blocks where its kernel asks for them.
    pub(crate) fn launch_words(
        &self,
        f: &Function<'_>,
        cfg: Launch,
        words: &[u64],
        cluster: u32,
    ) -> Result<()> {
        self.usable()?;
        if cfg.shared_bytes > DEFAULT_DYNAMIC_SHARED {
            self.allow_shared(f, cfg.shared_bytes)?;
        }
        let params: Vec<*mut c_void> = words.iter().map(|w| w as *const u64 as *mut c_void).collect();
        if cluster > 1 {
            return self.launch_clusters(f, cfg, &params, cluster);
        }
        // SAFETY: each pointer refers to an 8-byte value alive for the call; the driver
        // copies the parameters before cuLaunchKernel returns. `Stream::launch` is what
        // cust's own `launch!` macro expands to.
        let result = unsafe {
            self.stream
                .launch(f, cfg.grid, cfg.block, cfg.shared_bytes, &params)
        };
        result.map_err(self.cuda_error("launching a kernel"))
    }

    /// `cuLaunchKernelEx` with the cluster-dimension attribute: blocks launched in
    /// clusters of `cluster` along x, as a `__cluster_dims__` kernel is in CUDA C++.
    fn launch_clusters(
        &self,
        f: &Function<'_>,
        cfg: Launch,
        params: &[*mut c_void],
        cluster: u32,
    ) -> Result<()> {
        let mut attribute = CuLaunchAttribute {
            id: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value: [0; 8],
        };
        attribute.value[0] = u64::from(cluster) | (1 << 32);
        attribute.value[1] = 1;
        let config = CuLaunchConfig {
            grid: [cfg.grid.0, cfg.grid.1, cfg.grid.2],
            block: [cfg.block.0, cfg.block.1, cfg.block.2],
            shared_bytes: cfg.shared_bytes,
            stream: self.stream.as_inner().cast(),
            attributes: &mut attribute,
            count: 1,
        };
        // SAFETY: a valid function of this context and stream; `params` as for
        // cuLaunchKernel; the config and its one attribute outlive the call.
        let status = unsafe {
            cuLaunchKernelEx(
                &config,
                f.to_raw().cast(),
                params.as_ptr().cast_mut(),
                std::ptr::null_mut(),
            )
        };
        if status == 0 {
            return Ok(());
        }
        Err(self.cuda_error(format!(
            "launching a kernel in clusters of {cluster} blocks"
        ))(cust::error::CudaError::UnknownError))
    }

    /// Opts `f` in to `bytes` of dynamic shared memory per block, as
    /// `cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)`
    /// does in CUDA C++ (cust 0.3.2 has no call for it). Cheap, so every such launch
    /// does it rather than remember which functions did.
    fn allow_shared(&self, f: &Function<'_>, bytes: u32) -> Result<()> {
        use cust::error::CudaError;
        use cust::sys::{CUfunction_attribute, cudaError_enum};
        // SAFETY: a valid function handle of this context; the attribute takes an int.
        let status = unsafe {
            cust::sys::cuFuncSetAttribute(
                f.to_raw(),
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        };
        let source = match status {
            cudaError_enum::CUDA_SUCCESS => return Ok(()),
            cudaError_enum::CUDA_ERROR_INVALID_VALUE => CudaError::InvalidValue,
            cudaError_enum::CUDA_ERROR_INVALID_HANDLE => CudaError::InvalidHandle,
            _ => CudaError::UnknownError,
        };
        Err(self.cuda_error(format!(
            "allowing a kernel {} KiB of shared memory per block (more than this GPU has?)",
            bytes / 1024
        ))(source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_pack_into_low_bytes() {
        let a = (
            3usize,
            1.5f32,
            7u32,
            GlobalMut::<f32>::from_word(0x7000_0000_1000),
        )
            .words();
        assert_eq!(a, [3, u64::from(1.5f32.to_bits()), 7, 0x7000_0000_1000]);
    }

    #[test]
    fn shared_for_blocks_per_sm90_lets_exactly_that_many_in() {
        for blocks in 2..=6 {
            let per_block = shared_for_blocks_per_sm90(blocks) + 1024;
            assert_eq!(SHARED_PER_SM90 / per_block, blocks, "{blocks} blocks");
        }
    }

    #[test]
    fn one_per_element_covers_n() {
        let c = Launch::one_per_element(1000, 256).unwrap();
        assert_eq!(c.grid.0, 4);
        assert_eq!(Launch::one_per_element(1, 256).unwrap().grid.0, 1);
        assert!(Launch::one_per_element(usize::MAX / 2, 32).is_err());
    }

    #[test]
    fn one_per_element_stays_within_32_bit_thread_indices() {
        // 2^32 elements: the last thread's index is u32::MAX, still representable.
        let c = Launch::one_per_element(1 << 32, 256).unwrap();
        assert_eq!(c.grid.0 as u64 * 256, MAX_THREADS_X);
        // One more element would need index 2^32, which wraps to 0 in the kernel.
        let e = Launch::one_per_element((1 << 32) + 1, 256).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "4294967297 elements is too large: one thread each is more than the 4294967296 threads the kernels' 32-bit index reaches"
        );
    }

    #[test]
    fn grid_stride_caps_at_the_gpu() {
        assert_eq!(Launch::grid_stride(1 << 30, 256, 132, 8).grid.0, 1056);
        assert_eq!(Launch::grid_stride(100, 256, 132, 8).grid.0, 1);
    }
}

/// cuda.h's `CUlaunchConfig`.
#[repr(C)]
struct CuLaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: *mut c_void,
    attributes: *mut CuLaunchAttribute,
    count: u32,
}

/// cuda.h's `CUlaunchAttribute`: an id, then a 64-byte union (`clusterDim` is its
/// first three words).
#[repr(C)]
struct CuLaunchAttribute {
    id: u32,
    pad: [u8; 4],
    value: [u64; 8],
}

const CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;

// Not in cust's bindings (CUDA 12); resolved at run time like every driver entry
// point (host/cuda-stub/symbols.txt).
unsafe extern "C" {
    fn cuLaunchKernelEx(
        config: *const CuLaunchConfig,
        f: *mut c_void,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> u32;
}
