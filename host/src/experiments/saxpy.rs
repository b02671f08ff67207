//! saxpy: y = a x + y. Scalar, float4 coalesced, float4 strided.
//! Useful bytes: 12 per element (x and y read, y written).

use kernels::entry;
use kernels::gpu::math::fma;
use kernels::saxpy::BLOCK;

use crate::device::DeviceInfo;
use crate::error::Result;
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant, Work,
};
use crate::launch::Launch;
use crate::twin;
use crate::validate::Tolerance;

/// The scalar a.
pub const A: f32 = 1.5;
pub const TOL: Tolerance = Tolerance { rel: 1e-6, abs: 1e-6 };
/// Blocks per SM for the grid-stride loop: several waves, so each thread does only a
/// few iterations (a grid of one resident wave ran at 93% of cuMemcpyDtoD against 99%
/// for this on the H100; docs/perf-notes.md).
pub const BLOCKS_PER_SM: u32 = 256;

const ARGS: &[Arg] = &[Arg::Dim(Dim::Len), Arg::F32(A), Arg::Buffer(0), Arg::Buffer(1)];

fn one_per_element(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    Launch::one_per_element(p.dim(Dim::Len), BLOCK)
}

fn grid_stride(p: &Problem, d: &DeviceInfo) -> Result<Launch> {
    Ok(Launch::grid_stride(p.dim(Dim::Len) / 4, BLOCK, d.sm_count, BLOCKS_PER_SM))
}

/// Float4 on a coalesced walk, and on a strided one.
pub const F32X4: Variant = Variant::new("f32x4", &entry::saxpy_f32x4, ARGS, grid_stride);
pub const F32X4_STRIDED: Variant = Variant::new("f32x4-strided", &entry::saxpy_f32x4_strided, ARGS, grid_stride);

pub static EXPERIMENT: Experiment = Experiment {
    name: "saxpy",
    about: "y = a*x + y: float4 loads help a coalesced walk and do not rescue a strided one",
    kind: Kind::Elements,
    // 2^26 elements: the strided walk then views them as 4096 x 4096 float4s.
    default_size: DefaultSize::Bytes((1 << 26) * 4),
    variants: &[
        Variant::new("f32", &entry::saxpy_f32, ARGS, one_per_element),
        F32X4,
        F32X4_STRIDED,
    ],
    // y is updated in place: an unwritten y keeps its input value, which differs from a x + y.
    buffers: |p| {
        let n = p.dim(Dim::Len);
        Some(vec![Buffer::input("x", n), Buffer::in_out("y", n)])
    },
    work: |p| Work::Bytes(12 * p.dim(Dim::Len) as u64),
    reference: Reference::Elementwise {
        check: Check::Close(TOL),
        expected: |_, _, input, _, i| fma(A, input.get(0, i), input.get(1, i)),
    },
    twin: twin!("saxpy.cu"),
};
