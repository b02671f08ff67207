//! particles: position += velocity x dt for n particles, AoS against SoA.
//! Useful bytes: 24 read + 12 written per particle.

use cust::memory::DeviceBuffer;
use kernels::particles::{BLOCK, step};

use crate::buffers::{download, f32_elements, fill_uniform};
use crate::device::{DeviceInfo, Gpu};
use crate::error::{Error, Result};
use crate::harness::{Case, Experiment, Params, Prepared, Work};
use crate::launch::{Arg, LaunchCfg};
use crate::validate::{Tolerance, Validation, all, close, exact};

pub struct Particles;

/// The time step.
pub const DT: f32 = 0.01;
/// Floats per AoS particle.
pub const FIELDS: usize = 6;
/// fma on both sides rounds alike; the tolerance only admits a twin that does not fuse.
pub const TOL: Tolerance = Tolerance { rel: 1e-6, abs: 1e-6 };

/// Floats in the AoS array.
fn aos_len(n: usize) -> Result<usize> {
    n.checked_mul(FIELDS).ok_or_else(|| Error::TooLarge {
        what: format!("{n} particles"),
        why: "overflows usize".into(),
    })
}

impl Experiment for Particles {
    fn name(&self) -> &'static str {
        "particles"
    }
    fn about(&self) -> &'static str {
        "pos += vel*dt: an array of 24-byte structs against six arrays; layout decides coalescing"
    }
    fn variants(&self) -> Vec<String> {
        vec!["aos".into(), "soa".into()]
    }
    fn kernels(&self) -> Vec<&'static str> {
        vec!["particles_aos", "particles_soa"]
    }
    /// 2^25 particles: `size` is the bytes of one SoA array (4 per particle).
    fn default_size(&self, _: &DeviceInfo) -> u64 {
        (1 << 25) * 4
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        // The AoS array plus the six SoA arrays.
        (p.size / 4).checked_mul(4 * 2 * FIELDS as u64)
    }
    fn launches(&self, p: &Params, _: &DeviceInfo) -> Result<Vec<LaunchCfg>> {
        let n = f32_elements(p.size)?;
        aos_len(n)?;
        Ok(vec![LaunchCfg::one_per_element(n, BLOCK)?; 2])
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let n = f32_elements(p.size)?;
        let cfg = self.launches(p, &gpu.info)?[0];
        let aos_len = aos_len(n)?;
        let work = Work::Bytes(36 * n as u64);
        Ok(Box::new(Prepared2 {
            n,
            aos: gpu.alloc(aos_len)?,
            soa: (0..FIELDS).map(|_| gpu.alloc(n)).collect::<Result<Vec<_>>>()?,
            seed: p.seed,
            case_seed: p.seed,
            cfg,
            cases: vec![
                Case {
                    variant: "aos".into(),
                    kernel: "particles_aos",
                    work,
                },
                Case {
                    variant: "soa".into(),
                    kernel: "particles_soa",
                    work,
                },
            ],
        }))
    }
}

struct Prepared2 {
    n: usize,
    aos: DeviceBuffer<f32>,
    /// x, y, z, vx, vy, vz
    soa: Vec<DeviceBuffer<f32>>,
    seed: u64,
    case_seed: u64,
    cfg: LaunchCfg,
    cases: Vec<Case>,
}

/// SoA array `field` is its own random stream.
fn field_seed(seed: u64, field: usize) -> u64 {
    seed.wrapping_mul(16).wrapping_add(field as u64)
}

impl Prepared for Prepared2 {
    fn cases(&self) -> &[Case] {
        &self.cases
    }
    fn reset(&mut self, gpu: &Gpu, case: usize) -> Result<()> {
        // In-place update: fresh positions and velocities are the input, and the
        // positions' old values are what an unwritten element would keep, so they are
        // checked against the update, which old values never satisfy.
        self.case_seed = self.seed.wrapping_add(case as u64);
        match case {
            0 => fill_uniform(gpu, &self.aos, self.case_seed),
            _ => self
                .soa
                .iter()
                .enumerate()
                .try_for_each(|(f, b)| fill_uniform(gpu, b, field_seed(self.case_seed, f))),
        }
    }
    fn launch_spec(&self, case: usize) -> (LaunchCfg, Vec<Arg>) {
        let mut args: Vec<Arg> = vec![self.n.into(), DT.into()];
        match case {
            0 => args.push(self.aos.as_device_ptr().into()),
            _ => args.extend(self.soa.iter().map(|b| Arg::from(b.as_device_ptr()))),
        }
        (self.cfg, args)
    }
    fn validate(&self, gpu: &Gpu, case: usize) -> Result<Validation> {
        let seed = self.case_seed;
        let u = |s: u64, i: usize| kernels::fill::uniform(s, i as u64);
        if case == 0 {
            let got = download(gpu, &self.aos)?;
            // Positions moved; velocities untouched.
            return Ok(close(
                &got,
                |i| {
                    let (p, f) = (i / FIELDS, i % FIELDS);
                    if f < 3 {
                        step(u(seed, i), u(seed, p * FIELDS + f + 3), DT)
                    } else {
                        u(seed, i)
                    }
                },
                TOL,
            ));
        }
        let checks = (0..3)
            .map(|d| {
                let got = download(gpu, &self.soa[d])?;
                let (ps, vs) = (field_seed(seed, d), field_seed(seed, d + 3));
                Ok(close(&got, |i| step(u(ps, i), u(vs, i), DT), TOL))
            })
            .chain((3..FIELDS).map(|f| {
                let got = download(gpu, &self.soa[f])?;
                Ok(exact(&got, |i| u(field_seed(seed, f), i)))
            }))
            .collect::<Result<Vec<_>>>()?;
        Ok(all(checks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprint_is_aos_plus_soa() {
        // n particles: 24 n bytes AoS + 6 x 4 n bytes SoA.
        assert_eq!(Particles.device_bytes(&Params::sized(400, 0)), Some(100 * 48));
    }

    #[test]
    fn update_moves_along_velocity() {
        assert_eq!(step(1.0, 2.0, 0.5), 2.0);
    }
}
