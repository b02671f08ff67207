//! inflight: the same coalesced copy with 1, 2, 4, 8 elements per thread, f32 and
//! float4: coalescing is necessary, not sufficient; the bytes each thread keeps in
//! flight decide whether the memory system is kept busy (Little's law).

use kernels::entry;
use kernels::inflight::BLOCK;

use super::copy;
use crate::device::DeviceInfo;
use crate::error::Result;
use crate::experiment::{
    Arg, DefaultSize, Dim, Experiment, Kind, Problem, Variant,
};
use crate::launch::Launch;
use crate::twin;

const ARGS: &[Arg] = &[Arg::Dim(Dim::Len), Arg::Buffer(0), Arg::Buffer(1)];

/// One thread per `param` elements (f32) or per `param` float4s (the f32x4 variants
/// say so by their kernel, and their launch counts n / 4 items).
fn floats(p: &Problem, _: &DeviceInfo, per_thread: usize) -> Result<Launch> {
    Launch::one_per_element(p.dim(Dim::Len).div_ceil(per_thread), BLOCK)
}

pub static EXPERIMENT: Experiment = Experiment {
    name: "inflight",
    about: "out[i] = in[i] with 4 to 128 bytes in flight per thread: coalesced is not enough without enough bytes in flight",
    kind: Kind::Elements,
    default_size: DefaultSize::BeyondL2,
    variants: &[
        Variant::new("f32-1", &entry::inflight_f32_1, ARGS, |p, d| floats(p, d, 1)),
        Variant::new("f32-2", &entry::inflight_f32_2, ARGS, |p, d| floats(p, d, 2)),
        Variant::new("f32-4", &entry::inflight_f32_4, ARGS, |p, d| floats(p, d, 4)),
        Variant::new("f32-8", &entry::inflight_f32_8, ARGS, |p, d| floats(p, d, 8)),
        // The float4 kernels' tail needs n % 4 threads, which n / (4 K) blocks always have.
        Variant::new("f32x4-1", &entry::inflight_f32x4_1, ARGS, |p, d| floats(p, d, 4)),
        Variant::new("f32x4-2", &entry::inflight_f32x4_2, ARGS, |p, d| floats(p, d, 8)),
        Variant::new("f32x4-4", &entry::inflight_f32x4_4, ARGS, |p, d| floats(p, d, 16)),
        Variant::new("f32x4-8", &entry::inflight_f32x4_8, ARGS, |p, d| floats(p, d, 32)),
    ],
    buffers: copy::buffers,
    work: copy::work,
    reference: copy::COPIED,
    twin: twin!("inflight.cu"),
};
