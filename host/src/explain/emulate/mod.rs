//! The emulation: a kernel's launch run on the CPU emulator, and what its warps'
//! accesses cost the memory system, before any GPU's parameters.
//!
//! This module runs one kernel launch on the CPU emulator, two ways:
//!
//! - [`validate`]: with real host buffers (inputs random, outputs poisoned), the whole
//!   grid, then every buffer compared with the CPU reference: the kernel-body tests.
//! - [`record_each`]: addresses only, over virtual buffers laid out like device
//!   allocations ([`regions`]), on a sample of blocks, each block's recording handed
//!   on as it ends: what `coalesce explain` analyses. Nothing is
//!   allocated per element, so any size the GPU could run can be explained.
//!
//! `window` emulates a window of a launch's blocks (a sample, or a wave) block by
//! block; [`requests`] groups a block's log into warp requests, [`analyse`] sums them
//! per access site under a [`model::Model`] (sectors, wavefronts, bank conflicts,
//! useful bytes), [`traffic`] into what the DRAM and L2 see (`coverage`: the bytes
//! of a line a window touches), and [`vectorize`] merges scalar shared accesses as
//! ptxas does.

pub mod analyse;
mod coverage;
mod hash;
pub mod model;
pub mod requests;
pub mod traffic;
pub mod vectorize;
pub(super) mod window;

use std::ops::Range;

use kernels::gpu::emu::{self, Dim3, LaunchConfig};
use kernels::gpu::tma::TensorMap;
use kernels::handle::KernelInfo;

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::experiment::{Buffer, Experiment, Inputs, Problem, Role, Variant};
use crate::reference::{Scope, judge};
use crate::validate::Validation;

/// The name of a variant's scratch buffer (workspace and flags it keeps from launch
/// to launch) among the emulated launch's buffers.
pub const SCRATCH: &str = "scratch";

/// Each thread's first this-many executions of an access site are recorded: loops
/// repeat their pattern, and the log stays small at any problem size.
pub const MAX_OCCURRENCES: usize = 16;

/// One launch of one declared variant at one problem size, ready to emulate: the
/// grid and block of its GPU launch rule, the experiment's buffers, and the Rust
/// kernel its declaration names (a handle of the table `kernel!` generates).
pub struct EmuLaunch {
    pub experiment: &'static Experiment,
    pub variant: &'static Variant,
    pub problem: Problem,
    /// The host function that runs; the variant's own kernel unless substituted.
    pub kernel: &'static KernelInfo,
    pub grid: Dim3,
    pub block: Dim3,
    pub dynamic_shared_bytes: usize,
    pub buffers: Vec<Buffer>,
    /// Bytes of the variant's scratch buffer at this launch (0 without one).
    pub scratch: usize,
}

impl EmuLaunch {
    /// `variant` of `experiment` at `problem`, launched as on a GPU like `info`
    /// (its SM count sizes grid-stride grids; 0 gives them a single block, so their
    /// loops run many iterations).
    pub fn new(
        experiment: &'static Experiment,
        variant: &'static Variant,
        problem: Problem,
        info: &DeviceInfo,
    ) -> Result<EmuLaunch> {
        let launch = (variant.launch)(&problem, info)?;
        let scratch =
            usize::try_from(variant.scratch_bytes(&problem, &launch)).map_err(|_| Error::TooLarge {
                what: format!("{}/{} at {problem}", experiment.name, variant.name),
                why: "its scratch buffer's size overflows usize".into(),
            })?;
        // The argument words exist at this problem (its u32 dimensions fit, the copy
        // engine can address its tensors).
        experiment.addressable(variant, &problem)?;
        let buffers = experiment.buffers_for(variant, &problem)?;
        Ok(EmuLaunch {
            experiment,
            variant,
            problem,
            kernel: variant.kernel,
            grid: Dim3::from(launch.grid),
            block: Dim3::from(launch.block),
            dynamic_shared_bytes: launch.shared_bytes as usize,
            buffers,
            scratch,
        })
    }

    /// The buffers the kernel is given: the experiment's, then its scratch (as f32
    /// words, zeroed) if it takes one.
    fn laid_out(&self) -> Vec<Buffer> {
        let mut all = self.buffers.clone();
        if self.scratch > 0 {
            all.push(Buffer::in_out(SCRATCH, self.scratch.div_ceil(4)));
        }
        all
    }

    /// The same launch running another kernel with the same parameters (a
    /// deliberately broken one, in the tests).
    pub fn substitute(self, kernel: &'static KernelInfo) -> EmuLaunch {
        EmuLaunch { kernel, ..self }
    }

    /// Runs the kernel in the current emulated thread with buffer i at `addresses[i]`
    /// and its scratch after them ([`EmuLaunch::laid_out`]). The words were checked when
    /// the launch was made ([`EmuLaunch::new`]).
    fn call(&self, addresses: &[usize]) {
        let scratch = addresses.get(self.buffers.len()).map_or(0, |&a| a as u64);
        let addresses: Vec<u64> = addresses.iter().map(|&a| a as u64).collect();
        // Each tensor map as the emulator reads it, alive until the kernel returns.
        let mut maps: Vec<Box<TensorMap>> = Vec::new();
        let words = self
            .experiment
            .words(self.variant, &self.problem, &addresses, scratch, &mut |spec| {
                let elem = self.buffers[spec.buffer].elem;
                let map = Box::new(spec.for_emulator(&self.problem, elem, addresses[spec.buffer])?);
                let at = &*map as *const TensorMap as u64;
                maps.push(map);
                Ok(at)
            })
            .expect("checked by EmuLaunch::new");
        // SAFETY: the words are the declared arguments, with every buffer either a
        // live host allocation of its declared length or (addresses only) a virtual
        // range the emulator never dereferences; the emulator's bounds fail any
        // access outside them.
        unsafe { (self.kernel.call)(&words) }
    }
}

/// 256-byte aligned storage, as `cuMemAlloc` returns, so a host run sees the same
/// alignment (and vector loads the same legality) as the GPU.
#[repr(C, align(256))]
#[derive(Clone, Copy)]
struct Chunk([u8; 256]);

/// A buffer's bytes on the host.
struct HostBuffer {
    chunks: Vec<Chunk>,
    len: usize,
}

impl HostBuffer {
    fn from(data: &[u8]) -> Self {
        let mut chunks = vec![Chunk([0; 256]); data.len().div_ceil(256).max(1)];
        for (c, part) in chunks.iter_mut().zip(data.chunks(256)) {
            c.0[..part.len()].copy_from_slice(part);
        }
        HostBuffer {
            chunks,
            len: data.len(),
        }
    }
    fn addr(&mut self) -> usize {
        self.chunks.as_mut_ptr() as usize
    }
    fn to_bytes(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|c| c.0).take(self.len).collect()
    }
}

pub(super) fn emulation_error(kernel: &str) -> impl FnOnce(emu::LaunchError) -> Error + '_ {
    move |e| Error::Emulation {
        kernel: kernel.to_string(),
        why: e.to_string(),
    }
}

/// The buffers' initial contents, as bytes of their elements: what the GPU's reset
/// fills ([`Inputs`]) for the buffers the kernel reads, poison for those it only writes
/// and for every padded row's padding.
pub fn initial_contents(launch: &EmuLaunch, inputs: &Inputs) -> Vec<Vec<u8>> {
    launch
        .buffers
        .iter()
        .enumerate()
        .map(|(b, buf)| match buf.role {
            Role::Output => buf.elem.poisoned(buf.len),
            Role::Input | Role::InOut => {
                let poison = buf.elem.poison_value();
                let values: Vec<f32> = (0..buf.len)
                    .map(|i| {
                        if buf.is_padding(i) {
                            poison
                        } else {
                            inputs.get(b, i)
                        }
                    })
                    .collect();
                buf.elem.encode(&values)
            }
        })
        .collect()
}

/// Runs the whole grid on host buffers and judges every buffer the kernel is passed
/// by the experiment's reference. Any global access outside the buffers fails the
/// launch (an error, not a crash).
pub fn validate(launch: &EmuLaunch, seed: u64) -> Result<Validation> {
    validate_with(launch, seed, emu::Schedule::default())
}

/// [`validate`] with the emulated threads of a block run in `schedule`'s order.
pub fn validate_with(launch: &EmuLaunch, seed: u64, schedule: emu::Schedule) -> Result<Validation> {
    let inputs = Inputs { seed };
    let finals = run_whole(launch, &inputs, schedule)?;
    judge(
        launch.experiment,
        launch.variant,
        &launch.problem,
        &inputs,
        |b| Ok(finals[b].clone()),
        Scope::Everything,
        0.0,
    )
}

/// Runs the whole grid on host buffers that start as `inputs` (and poison) say, and
/// returns every buffer's elements afterwards, as exact values.
pub fn run_whole(launch: &EmuLaunch, inputs: &Inputs, schedule: emu::Schedule) -> Result<Vec<Vec<f32>>> {
    run_whole_on(launch, inputs, schedule, &mut vec![0; launch.scratch])
}

/// [`run_whole`] with the scratch buffer starting as `scratch` (the launch's bytes of
/// it), which holds what the kernel left there afterwards: a second launch on it
/// starts where a GPU's next launch would.
pub fn run_whole_on(
    launch: &EmuLaunch,
    inputs: &Inputs,
    schedule: emu::Schedule,
    scratch: &mut [u8],
) -> Result<Vec<Vec<f32>>> {
    assert_eq!(scratch.len(), launch.scratch, "the launch's scratch bytes");
    let mut initial = initial_contents(launch, inputs);
    if launch.scratch > 0 {
        initial.push(scratch.to_vec());
    }
    let mut memory: Vec<HostBuffer> = initial.iter().map(|d| HostBuffer::from(d)).collect();
    let addrs: Vec<usize> = memory.iter_mut().map(HostBuffer::addr).collect();
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
        dynamic_shared_bytes: launch.dynamic_shared_bytes,
        cluster: launch.kernel.cluster,
        bounds: launch
            .laid_out()
            .iter()
            .zip(&addrs)
            .map(|(b, &a)| a..a + b.elem.bytes() * b.len)
            .collect(),
        schedule,
        ..Default::default()
    };
    emu::try_launch(&config, || launch.call(&addrs)).map_err(emulation_error(launch.kernel.name))?;
    if launch.scratch > 0 {
        scratch.copy_from_slice(&memory[launch.buffers.len()].to_bytes()[..launch.scratch]);
    }
    Ok(memory
        .iter()
        .zip(&launch.buffers)
        .map(|(m, b)| b.elem.decode(&m.to_bytes()))
        .collect())
}

/// Where virtual buffers start: far from anything, never dereferenced.
const VIRTUAL_BASE: usize = 1 << 40;
/// Virtual buffers are aligned like large device allocations.
const VIRTUAL_ALIGN: usize = 2 << 20;

/// The base address of each buffer in a virtual device address space.
pub fn virtual_layout(buffers: &[Buffer]) -> Result<Vec<usize>> {
    let mut next = VIRTUAL_BASE;
    buffers
        .iter()
        .map(|b| {
            let at = next;
            next = b
                .len
                .checked_mul(b.elem.bytes())
                .and_then(|bytes| at.checked_add(bytes))
                .and_then(|end| end.checked_next_multiple_of(VIRTUAL_ALIGN))
                .ok_or_else(|| Error::TooLarge {
                    what: format!("buffer {} ({} elements)", b.name, b.len),
                    why: "does not fit in the emulator's address space".into(),
                })?;
            Ok(at)
        })
        .collect()
}

/// Which blocks to emulate: all of them when the grid has at most `want`, else
/// `want` blocks spread evenly from the first to the last; in a grid of clusters of
/// `cluster` blocks, whole clusters (`want / cluster` of them, at least one), as a
/// cluster's blocks run together.
pub fn sample_blocks(total: usize, want: usize, cluster: usize) -> Option<Vec<usize>> {
    let c = cluster.max(1);
    let (clusters, want) = (total / c, (want / c).max(1));
    if clusters <= want {
        return None;
    }
    let mut picked: Vec<usize> = if want == 1 {
        vec![0]
    } else {
        (0..want).map(|j| j * (clusters - 1) / (want - 1)).collect()
    };
    picked.dedup();
    Some(picked.into_iter().flat_map(|k| k * c..(k + 1) * c).collect())
}

/// Each buffer's name and virtual byte range in an addresses-only run.
pub type Regions = Vec<(String, Range<usize>)>;

/// The regions of [`record_each`]'s virtual buffers, and their base addresses.
pub fn regions(launch: &EmuLaunch) -> Result<(Regions, Vec<usize>)> {
    let all = launch.laid_out();
    let addrs = virtual_layout(&all)?;
    let regions = all
        .iter()
        .zip(&addrs)
        .map(|(b, &a)| (b.name.to_string(), a..a + b.elem.bytes() * b.len))
        .collect();
    Ok((regions, addrs))
}

/// Emulates `blocks` (all when `None`) with the buffers at `addrs` ([`regions`]),
/// recording the first `max_occurrences` executions of each access site by each
/// thread, without touching memory, and hands each block's recording to `each` as the
/// block ends (`Break` stops the launch there). A block that would record more than
/// `log_limit` bytes fails the launch ([`emu::LaunchError::TooLarge`]).
pub fn record_each(
    launch: &EmuLaunch,
    addrs: &[usize],
    blocks: Option<Vec<usize>>,
    max_occurrences: usize,
    global_only: bool,
    log_limit: usize,
    each: impl FnMut(&mut emu::Recording) -> std::ops::ControlFlow<()>,
) -> std::result::Result<(), emu::LaunchError> {
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
        dynamic_shared_bytes: launch.dynamic_shared_bytes,
        cluster: launch.kernel.cluster,
        record: true,
        blocks,
        max_occurrences: Some(max_occurrences),
        bounds: launch
            .laid_out()
            .iter()
            .zip(addrs)
            .map(|(b, &a)| a..a + b.elem.bytes() * b.len)
            .collect(),
        addresses_only: true,
        global_only,
        log_limit: Some(log_limit),
        ..Default::default()
    };
    emu::try_record_each(&config, || launch.call(addrs), each)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_from_first_to_last() {
        assert_eq!(sample_blocks(8, 8, 1), None);
        assert_eq!(sample_blocks(100, 5, 1), Some(vec![0, 24, 49, 74, 99]));
        assert_eq!(sample_blocks(3, 2, 1), Some(vec![0, 2]));
        assert_eq!(sample_blocks(9, 1, 1), Some(vec![0]));
        // Whole clusters of two: 3 of 50, the first and last among them.
        assert_eq!(sample_blocks(100, 6, 2), Some(vec![0, 1, 48, 49, 98, 99]));
        assert_eq!(sample_blocks(100, 1, 2), Some(vec![0, 1]));
        assert_eq!(sample_blocks(8, 8, 2), None);
    }

    #[test]
    fn virtual_buffers_are_aligned_and_disjoint() {
        let b = [Buffer::input("a", 1000), Buffer::output("b", 1 << 30)];
        let at = virtual_layout(&b).unwrap();
        assert!(at.iter().all(|a| a % VIRTUAL_ALIGN == 0));
        assert!(at[1] >= at[0] + 4000);
        assert!(virtual_layout(&[Buffer::input("huge", usize::MAX / 2)]).is_err());
    }

    #[test]
    fn host_buffers_round_trip_and_are_aligned() {
        let data: Vec<u8> = (0..1030).map(|i| i as u8).collect();
        let mut h = HostBuffer::from(&data);
        assert_eq!(h.addr() % 256, 0);
        assert_eq!(h.to_bytes(), data);
    }

    #[test]
    fn virtual_buffers_are_sized_by_their_elements() {
        use crate::elem::Elem;
        let b = [Buffer::input("a", 3 << 20).of(Elem::Bf16), Buffer::output("b", 1)];
        let at = virtual_layout(&b).unwrap();
        // 6 MiB of bf16: the next buffer at the next 2 MiB boundary after it.
        assert_eq!(at[1] - at[0], 6 << 20);
    }
}
