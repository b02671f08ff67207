//! complex: read the real parts of n complex values, interleaved [re, im] pairs
//! against a split array of real parts. Useful bytes: n read + n written.

use kernels::entry;
use kernels::complex::BLOCK;

use crate::experiments::copy::f32x4_grid_stride;
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Reference, Variant, Work,
};
use crate::launch::Launch;
use crate::twin;

const ARGS: &[Arg] = &[Arg::Dim(Dim::Len), Arg::Buffer(0), Arg::Buffer(1)];

fn launch(p: &crate::experiment::Problem, _: &crate::device::DeviceInfo) -> crate::Result<Launch> {
    Launch::one_per_element(p.dim(Dim::Len), BLOCK)
}

/// The parameter is where value i's real part sits: 2i in [re, im] pairs, i in a
/// split array (the split kernel reads the buffer's first n floats).
pub const INTERLEAVED: Variant = Variant::new("interleaved", &entry::complex_real_interleaved, ARGS, launch).with_param(2);
pub const SPLIT: Variant = Variant::new("split", &entry::complex_real_split, ARGS, launch).with_param(1);

pub static EXPERIMENT: Experiment = Experiment {
    name: "complex",
    about: "real parts of complex values: interleaved [re, im] wastes half of every sector; split arrays do not",
    kind: Kind::Elements,
    // 2^26 values: `--size` is the bytes of the real parts (4 per value).
    default_size: DefaultSize::Bytes((1 << 26) * 4),
    variants: &[
        INTERLEAVED,
        SPLIT,
        // Split tuned: float4 loads and stores, grid-stride.
        Variant::new("split-f32x4", &entry::complex_real_split_f32x4, ARGS, f32x4_grid_stride).with_param(1),
    ],
    buffers: |p| {
        let n = p.dim(Dim::Len);
        Some(vec![Buffer::input("src", n.checked_mul(2)?), Buffer::output("dst", n)])
    },
    work: |p| Work::Bytes(8 * p.dim(Dim::Len) as u64),
    reference: Reference::Elementwise {
        check: Check::Exact,
        expected: |_, at, input, _, i| input.get(0, at * i),
    },
    twin: twin!("complex.cu"),
};
