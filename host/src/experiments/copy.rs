//! copy: the practical ceiling. f32 one per thread against f32x4 grid-stride.

use kernels::copy::{BLOCK, TMA_BLOCK_ELEMENTS, TMA_BOX};
use kernels::entry;

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant, Work,
};
use crate::launch::{Launch, MAX_GRID_X, shared_for_blocks_per_sm90};
use crate::tensor_map::MapSpec;
use crate::twin;

/// Blocks per SM for the grid-stride loop: several waves, so each thread does only a
/// few iterations (a grid of one resident wave ran at 93% of cuMemcpyDtoD against 99%
/// for this on the H100; docs/perf-notes.md).
pub const BLOCKS_PER_SM: u32 = 256;

/// The launch of the f32x4 grid-stride kernels (this copy and the tuned variants of
/// stride, offset, particles and complex): one thread per float4 of the n elements,
/// capped at [`BLOCKS_PER_SM`] blocks of [`BLOCK`] threads per SM of this device.
pub fn f32x4_grid_stride(p: &Problem, d: &DeviceInfo) -> Result<Launch> {
    Ok(Launch::grid_stride(p.dim(Dim::Len) / 4, BLOCK, d.sm_count, BLOCKS_PER_SM))
}

const ARGS: &[Arg] = &[Arg::Dim(Dim::Len), Arg::Buffer(0), Arg::Buffer(1)];

/// One input and one output of n floats: every copy's buffers.
pub fn buffers(p: &Problem) -> Option<Vec<Buffer>> {
    let n = p.dim(Dim::Len);
    Some(vec![Buffer::input("src", n), Buffer::output("dst", n)])
}

/// n floats read and n written.
pub fn work(p: &Problem) -> Work {
    Work::Bytes(8 * p.dim(Dim::Len) as u64)
}

/// The output equals the input, bit for bit.
pub const COPIED: Reference = Reference::Elementwise {
    check: Check::Exact,
    expected: |_, _, input, _, i| input.get(0, i),
};

/// One f32 per thread.
pub const F32: Variant = Variant::new("f32", &entry::copy_f32, ARGS, |p, _| {
    Launch::one_per_element(p.dim(Dim::Len), BLOCK)
});
/// Four per access, grid-stride: the ceiling.
pub const F32X4: Variant = Variant::new("f32x4", &entry::copy_f32x4, ARGS, f32x4_grid_stride);

/// The copy engine's view of a copy: both arrays as 1D tensors in boxes of [`TMA_BOX`].
pub const TMA_ARGS: &[Arg] = &[
    Arg::Map(MapSpec::line(0, Dim::Len, TMA_BOX as u32)),
    Arg::Map(MapSpec::line(1, Dim::Len, TMA_BOX as u32)),
];

/// One `tma` block per [`TMA_BLOCK_ELEMENTS`] (a warp, one thread of it working), with
/// the boxes' shared memory and a barrier, three blocks to an SM where the boxes' 16
/// KiB would let thirteen in: on the H100 and the H200 alike, fewer keep the DRAM
/// busier.
pub fn tma_blocks(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    let n = p.dim(Dim::Len);
    let blocks = n.div_ceil(TMA_BLOCK_ELEMENTS).max(1) as u64;
    if blocks > MAX_GRID_X {
        return Err(Error::TooLarge {
            what: format!("{n} elements"),
            why: format!("needs {blocks} blocks, above CUDA's grid limit of {MAX_GRID_X}"),
        });
    }
    Ok(Launch {
        grid: (blocks as u32, 1, 1),
        block: (32, 1, 1),
        shared_bytes: shared_for_blocks_per_sm90(3),
    })
}

/// The copy engine does the addressing (sm_90).
pub const TMA: Variant = Variant::new("tma", &entry::copy_tma, TMA_ARGS, tma_blocks);

pub static EXPERIMENT: Experiment = Experiment {
    name: "copy",
    about: "out[i] = in[i]: the practical bandwidth ceiling, next to the driver's cuMemcpyDtoD",
    kind: Kind::Elements,
    default_size: DefaultSize::BeyondL2,
    variants: &[F32, F32X4, TMA],
    buffers,
    work,
    reference: COPIED,
    twin: twin!("copy.cu"),
};
