//! Running one kernel launch on the CPU emulator, two ways:
//!
//! - [`validate`]: with real host buffers (inputs random, outputs poisoned), the whole
//!   grid, then every buffer compared with the CPU reference: the kernel-body tests.
//! - [`record`]: addresses only, over virtual buffers laid out like device
//!   allocations, on a sample of blocks: what `coalesce explain` analyses. Nothing is
//!   allocated per element, so any size the GPU could run can be explained.

use std::ops::Range;

use kernels::fill::uniform;
use kernels::gpu::emu::{self, Access, Dim3, LaunchConfig};
use kernels::gpu::{Element, Global, GlobalMut};

use crate::buffers::POISON_BITS;
use crate::error::{Error, Result};
use crate::launch::LaunchCfg;
use crate::validate::{self, Tolerance, Validation};

/// How a kernel uses a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read only: filled with random data, must come back unchanged.
    Input,
    /// Written: poisoned with NaN first, so an element the kernel skips fails.
    Output,
    /// Read and written in place: random data, updated.
    InOut,
}

/// One kernel argument buffer, counted in f32 elements (structs are f32s in a row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub name: &'static str,
    pub len: usize,
    pub role: Role,
}

impl Buffer {
    pub fn input(name: &'static str, len: usize) -> Self {
        Buffer {
            name,
            len,
            role: Role::Input,
        }
    }
    pub fn output(name: &'static str, len: usize) -> Self {
        Buffer {
            name,
            len,
            role: Role::Output,
        }
    }
    pub fn in_out(name: &'static str, len: usize) -> Self {
        Buffer {
            name,
            len,
            role: Role::InOut,
        }
    }
}

/// How outputs must match a reference.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// Bit for bit (data movement).
    Exact,
    /// Within a tolerance (arithmetic).
    Close(Tolerance),
}

/// Calls the kernel with the buffers' base addresses, in [`Plan::buffers`] order.
/// (Addresses, not pointers: the closure is shared by every emulated thread.)
pub type Call = Box<dyn Fn(&[usize]) + Sync>;

/// Judges a run: given every buffer's initial and final contents, is the result right?
pub type Verify = Box<dyn Fn(&[Vec<f32>], &[Vec<f32>]) -> Validation + Sync>;

/// A [`Verify`] from a reference that computes every buffer's expected final contents
/// from the initial ones: inputs must come back bit for bit, outputs per `check`.
pub fn expect(
    buffers: &[Buffer],
    reference: impl Fn(&[Vec<f32>]) -> Vec<Vec<f32>> + Sync + 'static,
    check: Check,
) -> Verify {
    let buffers = buffers.to_vec();
    Box::new(move |initial, finals| {
        let want = reference(initial);
        validate::all(buffers.iter().zip(finals).zip(&want).map(|((b, got), want)| {
            let mut v = if got.len() != want.len() {
                Validation {
                    ok: false,
                    detail: format!(
                        "the reference has {} elements, the buffer {}",
                        want.len(),
                        got.len()
                    ),
                }
            } else {
                match (b.role, check) {
                    (Role::Input, _) | (_, Check::Exact) => validate::exact(got, |i| want[i]),
                    (_, Check::Close(tol)) => validate::close(got, |i| want[i], tol),
                }
            };
            v.detail = format!("{}: {}", b.name, v.detail);
            v
        }))
    })
}

/// One launch of one kernel at one problem size, ready to emulate.
pub struct Plan {
    pub kernel: &'static str,
    pub grid: Dim3,
    pub block: Dim3,
    pub dynamic_shared_bytes: usize,
    pub buffers: Vec<Buffer>,
    pub call: Call,
    pub verify: Verify,
}

impl Plan {
    /// A plan with the grid and block of a GPU launch configuration, checked against
    /// a reference (see [`expect`]).
    pub fn new(
        kernel: &'static str,
        cfg: LaunchCfg,
        buffers: Vec<Buffer>,
        call: Call,
        reference: impl Fn(&[Vec<f32>]) -> Vec<Vec<f32>> + Sync + 'static,
        check: Check,
    ) -> Self {
        let verify = expect(&buffers, reference, check);
        Plan::verified(kernel, cfg, buffers, call, verify)
    }

    /// A plan with its own verdict on the result.
    pub fn verified(
        kernel: &'static str,
        cfg: LaunchCfg,
        buffers: Vec<Buffer>,
        call: Call,
        verify: Verify,
    ) -> Self {
        Plan {
            kernel,
            grid: Dim3::from(cfg.grid),
            block: Dim3::from(cfg.block),
            dynamic_shared_bytes: cfg.shared_bytes as usize,
            buffers,
            call,
            verify,
        }
    }
}

/// A read-only kernel argument at `addr` (for [`Call`] closures).
pub fn global<T: Element>(addr: usize) -> Global<T> {
    Global::from_ptr(addr as *const T)
}

/// A writable kernel argument at `addr`.
pub fn global_mut<T: Element>(addr: usize) -> GlobalMut<T> {
    GlobalMut::from_ptr(addr as *mut T)
}

/// 256-byte aligned f32 storage, as `cuMemAlloc` returns, so a host run sees the
/// same alignment (and vector loads the same legality) as the GPU.
#[repr(C, align(256))]
#[derive(Clone, Copy)]
struct Chunk([f32; 64]);

struct HostBuffer {
    chunks: Vec<Chunk>,
    len: usize,
}

impl HostBuffer {
    fn from(data: &[f32]) -> Self {
        let mut chunks = vec![Chunk([0.0; 64]); data.len().div_ceil(64).max(1)];
        for (c, part) in chunks.iter_mut().zip(data.chunks(64)) {
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
    fn to_vec(&self) -> Vec<f32> {
        self.chunks.iter().flat_map(|c| c.0).take(self.len).collect()
    }
}

fn emulation_error(kernel: &str) -> impl FnOnce(emu::LaunchError) -> Error + '_ {
    move |e| Error::Emulation {
        kernel: kernel.to_string(),
        why: e.to_string(),
    }
}

/// The buffers' initial contents: inputs from the shared RNG (one stream per
/// buffer), outputs poisoned.
pub fn initial_contents(plan: &Plan, seed: u64) -> Vec<Vec<f32>> {
    plan.buffers
        .iter()
        .enumerate()
        .map(|(b, buf)| match buf.role {
            Role::Output => vec![f32::from_bits(POISON_BITS); buf.len],
            Role::Input | Role::InOut => {
                let stream = seed.wrapping_add(b as u64);
                (0..buf.len).map(|i| uniform(stream, i as u64)).collect()
            }
        })
        .collect()
}

/// Runs the whole grid on host buffers and compares every buffer with the reference.
/// Any global access outside the buffers fails the launch (an error, not a crash).
pub fn validate(plan: &Plan, seed: u64) -> Result<Validation> {
    let initial = initial_contents(plan, seed);
    let mut memory: Vec<HostBuffer> = initial.iter().map(|d| HostBuffer::from(d)).collect();
    let addrs: Vec<usize> = memory.iter_mut().map(HostBuffer::addr).collect();
    let config = LaunchConfig {
        grid: plan.grid,
        block: plan.block,
        dynamic_shared_bytes: plan.dynamic_shared_bytes,
        bounds: plan
            .buffers
            .iter()
            .zip(&addrs)
            .map(|(b, &a)| a..a + 4 * b.len)
            .collect(),
        ..Default::default()
    };
    emu::try_launch(&config, || (plan.call)(&addrs)).map_err(emulation_error(plan.kernel))?;
    let finals: Vec<Vec<f32>> = memory.iter().map(HostBuffer::to_vec).collect();
    Ok((plan.verify)(&initial, &finals))
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
                .checked_mul(4)
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
/// `want` blocks spread evenly from the first to the last.
pub fn sample_blocks(total: usize, want: usize) -> Option<Vec<usize>> {
    if total <= want {
        return None;
    }
    let want = want.max(1);
    let mut blocks: Vec<usize> = if want == 1 {
        vec![0]
    } else {
        (0..want).map(|j| j * (total - 1) / (want - 1)).collect()
    };
    blocks.dedup();
    Some(blocks)
}

/// An addresses-only recorded run of some blocks.
pub struct Recorded {
    pub accesses: Vec<Access>,
    /// The blocks emulated; `None` means the whole grid.
    pub blocks: Option<Vec<usize>>,
    /// Each buffer's name and virtual byte range.
    pub regions: Vec<(String, Range<usize>)>,
}

/// Emulates `blocks` (all when `None`) recording the first `max_occurrences`
/// executions of each access site by each thread, without touching memory.
pub fn record(plan: &Plan, blocks: Option<Vec<usize>>, max_occurrences: usize) -> Result<Recorded> {
    let addrs = virtual_layout(&plan.buffers)?;
    let regions: Vec<(String, Range<usize>)> = plan
        .buffers
        .iter()
        .zip(&addrs)
        .map(|(b, &a)| (b.name.to_string(), a..a + 4 * b.len))
        .collect();
    let config = LaunchConfig {
        grid: plan.grid,
        block: plan.block,
        dynamic_shared_bytes: plan.dynamic_shared_bytes,
        record: true,
        blocks: blocks.clone(),
        max_occurrences: Some(max_occurrences),
        bounds: regions.iter().map(|r| r.1.clone()).collect(),
        addresses_only: true,
        ..Default::default()
    };
    let accesses = emu::try_launch(&config, || (plan.call)(&addrs)).map_err(emulation_error(plan.kernel))?;
    Ok(Recorded {
        accesses,
        blocks,
        regions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_from_first_to_last() {
        assert_eq!(sample_blocks(8, 8), None);
        assert_eq!(sample_blocks(100, 5), Some(vec![0, 24, 49, 74, 99]));
        assert_eq!(sample_blocks(3, 2), Some(vec![0, 2]));
        assert_eq!(sample_blocks(9, 1), Some(vec![0]));
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
        let data: Vec<f32> = (0..130).map(|i| i as f32).collect();
        let mut h = HostBuffer::from(&data);
        assert_eq!(h.addr() % 256, 0);
        assert_eq!(h.to_vec(), data);
    }
}
