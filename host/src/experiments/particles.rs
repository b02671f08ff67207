//! particles: position += velocity x dt for n particles, AoS against SoA.
//! Useful bytes: 24 read + 12 written per particle.

use kernels::entry;
use kernels::particles::{BLOCK, step};

use crate::device::DeviceInfo;
use crate::error::Result;
use crate::experiments::copy::f32x4_grid_stride;
use crate::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant, Work,
};
use crate::launch::Launch;
use crate::twin;
use crate::validate::Tolerance;

/// The time step.
pub const DT: f32 = 0.01;
/// Floats per AoS particle.
pub const FIELDS: usize = 6;
/// fma on both sides rounds alike; the tolerance only admits a twin that does not fuse.
pub const TOL: Tolerance = Tolerance { rel: 1e-6, abs: 1e-6 };

fn launch(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    Launch::one_per_element(p.dim(Dim::Len), BLOCK)
}

const LEN: Arg = Arg::Dim(Dim::Len);
/// The SoA kernels' arguments: n, dt, x, y, z, vx, vy, vz.
const SOA_ARGS: &[Arg] = &[
    LEN,
    Arg::F32(DT),
    Arg::Buffer(1),
    Arg::Buffer(2),
    Arg::Buffer(3),
    Arg::Buffer(4),
    Arg::Buffer(5),
    Arg::Buffer(6),
];

/// An array of structs, and the six arrays of the same particles.
pub const AOS: Variant = Variant::new("aos", &entry::particles_aos, &[LEN, Arg::F32(DT), Arg::Buffer(0)], launch);
pub const SOA: Variant = Variant::new("soa", &entry::particles_soa, SOA_ARGS, launch);

pub static EXPERIMENT: Experiment = Experiment {
    name: "particles",
    about: "pos += vel*dt: an array of 24-byte structs against six arrays; layout decides coalescing",
    kind: Kind::Elements,
    // 2^25 particles: `--size` is the bytes of one SoA array (4 per particle).
    default_size: DefaultSize::Bytes((1 << 25) * 4),
    variants: &[
        AOS,
        SOA,
        // SoA tuned: float4 loads and stores of each array, grid-stride.
        Variant::new("soa-f32x4", &entry::particles_soa_f32x4, SOA_ARGS, f32x4_grid_stride),
    ],
    // The AoS array, then the six SoA arrays x, y, z, vx, vy, vz: positions are
    // updated in place, so their old values are what an unwritten element keeps, and
    // those never equal the update.
    buffers: |p| {
        let n = p.dim(Dim::Len);
        Some(vec![
            Buffer::in_out("particles", n.checked_mul(FIELDS)?),
            Buffer::in_out("x", n),
            Buffer::in_out("y", n),
            Buffer::in_out("z", n),
            Buffer::input("vx", n),
            Buffer::input("vy", n),
            Buffer::input("vz", n),
        ])
    },
    work: |p| Work::Bytes(36 * p.dim(Dim::Len) as u64),
    reference: Reference::Elementwise {
        check: Check::Close(TOL),
        expected: |_, _, input, b, i| match b {
            // AoS: positions moved, velocities untouched.
            0 if i % FIELDS < 3 => step(input.get(0, i), input.get(0, i + 3), DT),
            0 => input.get(0, i),
            _ => step(input.get(b, i), input.get(b + 3, i), DT),
        },
    },
    twin: twin!("particles.cu"),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprint_is_aos_plus_soa() {
        // n particles: 24 n bytes AoS + 6 x 4 n bytes SoA.
        let p = Problem::Elements { n: 100 };
        assert_eq!(EXPERIMENT.device_bytes(&p), Some(100 * 48));
    }

    #[test]
    fn update_moves_along_velocity() {
        assert_eq!(step(1.0, 2.0, 0.5), 2.0);
    }
}
