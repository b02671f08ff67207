//! offset: out[i] = in[i + o] for o = 0..32 elements. Misalignment adds one sector per warp.

use kernels::entry;
use kernels::offset::BLOCK;

use crate::experiments::copy::f32x4_grid_stride;
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Reference, Variant, Work,
};
use crate::launch::Launch;
use crate::twin;

const ARGS: &[Arg] = &[Arg::Dim(Dim::Len), Arg::Param, Arg::Buffer(0), Arg::Buffer(1)];

const fn shifted(name: &'static str, o: usize) -> Variant {
    Variant::new(name, &entry::offset_read, ARGS, |p, _| {
        Launch::one_per_element(p.dim(Dim::Len), BLOCK)
    })
    .with_param(o)
}

/// Aligned, and one float off: the report's contrast.
pub const O0: Variant = shifted("0", 0);
pub const O1: Variant = shifted("1", 1);

pub static EXPERIMENT: Experiment = Experiment {
    name: "offset",
    about: "out[i] = in[i+o]: a misaligned warp touches one extra sector, which costs little",
    kind: Kind::Elements,
    default_size: DefaultSize::BeyondL2,
    variants: &[
        O0,
        O1,
        shifted("2", 2),
        shifted("4", 4),
        shifted("8", 8),
        shifted("16", 16),
        shifted("32", 32),
        // Offset 0 tuned: four outputs per thread, float4 loads and stores, grid-stride.
        Variant::new("0-f32x4", &entry::offset_read_f32x4, ARGS, f32x4_grid_stride).with_param(0),
    ],
    buffers: |p| {
        let n = p.dim(Dim::Len);
        // The input holds n + the largest offset elements, shared by every variant.
        let pad = EXPERIMENT.variants.iter().map(|v| v.param).max()?;
        Some(vec![Buffer::input("src", n.checked_add(pad)?), Buffer::output("dst", n)])
    },
    work: |p| Work::Bytes(8 * p.dim(Dim::Len) as u64),
    reference: Reference::Elementwise {
        check: Check::Exact,
        expected: |_, o, input, _, i| input.get(0, i + o),
    },
    twin: twin!("offset.cu"),
};
