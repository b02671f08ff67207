//! stride: out[i] = in[i * s] for s = 1..64. Same useful bytes for every s; only
//! the spread of each warp's loads changes.

use kernels::entry;
use kernels::stride::BLOCK;

use crate::experiments::copy::f32x4_grid_stride;
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Reference, Variant, Work,
};
use crate::launch::Launch;
use crate::twin;

const ARGS: &[Arg] = &[Arg::Dim(Dim::Len), Arg::Param, Arg::Buffer(0), Arg::Buffer(1)];

const fn strided(name: &'static str, s: usize) -> Variant {
    Variant::new(name, &entry::stride_read, ARGS, |p, _| {
        Launch::one_per_element(p.dim(Dim::Len), BLOCK)
    })
    .with_param(s)
}

/// The strides the report singles out: coalesced, and 2, 4 and 32 floats apart.
pub const S1: Variant = strided("1", 1);
pub const S2: Variant = strided("2", 2);
pub const S4: Variant = strided("4", 4);
pub const S32: Variant = strided("32", 32);

pub static EXPERIMENT: Experiment = Experiment {
    name: "stride",
    about: "out[i] = in[i*s]: bandwidth falls as each warp request touches more 32-byte sectors",
    kind: Kind::Elements,
    default_size: DefaultSize::BeyondL2,
    variants: &[
        S1,
        S2,
        S4,
        strided("8", 8),
        strided("16", 16),
        S32,
        strided("64", 64),
        // Stride 1 tuned: four outputs per thread, float4 loads and stores, grid-stride.
        Variant::new("1-f32x4", &entry::stride_read_f32x4, ARGS, f32x4_grid_stride).with_param(1),
    ],
    buffers: |p| {
        let n = p.dim(Dim::Len);
        Some(vec![Buffer::input("src", input_len(n)?), Buffer::output("dst", n)])
    },
    work: |p| Work::Bytes(8 * p.dim(Dim::Len) as u64),
    reference: Reference::Elementwise {
        check: Check::Exact,
        expected: |_, s, input, _, i| input.get(0, i * s),
    },
    twin: twin!("stride.cu"),
};

/// Input elements for `n` outputs read at the largest stride: (n - 1) * 64 + 1, one
/// input shared by every variant.
pub fn input_len(n: usize) -> Option<usize> {
    let max = EXPERIMENT.variants.iter().map(|v| v.param).max()?;
    (n.checked_sub(1)?).checked_mul(max)?.checked_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Problem;

    #[test]
    fn input_covers_the_largest_stride() {
        assert_eq!(input_len(1), Some(1));
        assert_eq!(input_len(100), Some(99 * 64 + 1));
        assert_eq!(input_len(0), None);
        assert_eq!(input_len(usize::MAX), None);
    }

    #[test]
    fn footprint_counts_input_and_output() {
        let p = Problem::Elements { n: 100 };
        assert_eq!(EXPERIMENT.device_bytes(&p), Some(4 * (99 * 64 + 1) + 400));
        let huge = Problem::Elements { n: usize::MAX / 4 };
        assert_eq!(EXPERIMENT.device_bytes(&huge), None);
    }

    #[test]
    fn variant_names_are_their_strides() {
        for v in EXPERIMENT.variants {
            // A tuned variant is named after its stride and its tuning: `1-f32x4`.
            let stride = v.name.split_once('-').map_or(v.name, |(s, _)| s);
            assert_eq!(stride, v.param.to_string());
        }
    }
}
