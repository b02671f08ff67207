//! The tensor pipe's demands: each kind of MMA a warp's iteration issues, over the
//! profile's rate for that kind (`mma.sync` TF32; `wgmma` TF32; 16-bit `wgmma` at the
//! rate of its N, 128 or 256: per FLOP an N = 128 one reads 1.2 x the shared bytes).

use super::step::Step;
use super::{SCHEDULERS_PER_SM, Unit};
use crate::profile::ComputeRates;

/// What the 16-bit wgmmas of N = 128 are priced at where the profile has no rate for
/// them: the N = 256 one, said in the prediction.
pub const NO_N128_RATE: &str = "16-bit wgmma m64n128k16: the profile has no N = 128 rate (calibrated before it was measured), so it runs at the N = 256 rate here: run `coalesce calibrate` again";

/// The ns of one scheduler's quarter of each tensor unit that `step` asks for, each
/// kind of MMA at its own rate (kinds sharing a unit, their times added); a line in
/// `not_modelled` for each kind the profile has no rate for.
pub fn demands(step: &Step, rates: &ComputeRates, not_modelled: &mut Vec<String>) -> Vec<(Unit, f64)> {
    let tf32_wgmma_flops = step.wgmma_flops - step.wgmma_16bit_flops;
    let n128_rate = rates.wgmma_16bit_n128_flops_per_ns_per_sm;
    // Without an N = 128 rate, those wgmmas run with the N = 256 ones.
    let (n256, n128) = match n128_rate {
        Some(_) => (
            step.wgmma_16bit_flops - step.wgmma_16bit_n128_flops,
            step.wgmma_16bit_n128_flops,
        ),
        None => (step.wgmma_16bit_flops, 0.0),
    };
    if n128_rate.is_none()
        && step.wgmma_16bit_n128_flops > 0.0
        && rates.wgmma_16bit_flops_per_ns_per_sm.is_some()
    {
        not_modelled.push(NO_N128_RATE.into());
    }
    let mut units: Vec<(Unit, f64)> = Vec::new();
    for (unit, count, rate, why) in [
        (
            Unit::TensorMma,
            step.mma_sync,
            rates.mma_tf32_per_ns_per_sm,
            "mma.sync: the profile has no TF32 mma rate (a GPU before sm_80)",
        ),
        (
            Unit::TensorWgmma,
            tf32_wgmma_flops,
            rates.wgmma_tf32_flops_per_ns_per_sm,
            "wgmma: the profile has no wgmma rate (a GPU before sm_90)",
        ),
        (
            Unit::TensorWgmma,
            n256,
            rates.wgmma_16bit_flops_per_ns_per_sm,
            "16-bit wgmma: the profile has no BF16/FP16 wgmma rate (calibrated before it was measured, or a GPU before sm_90): run `coalesce calibrate` again",
        ),
        (Unit::TensorWgmma, n128, n128_rate, NO_N128_RATE),
    ] {
        match rate {
            Some(r) if count > 0.0 => {
                let ns = count / (r / SCHEDULERS_PER_SM);
                match units.iter_mut().find(|(u, _)| *u == unit) {
                    Some((_, d)) => *d += ns,
                    None => units.push((unit, ns)),
                }
            }
            None if count > 0.0 => not_modelled.push(why.into()),
            _ => {}
        }
    }
    units
}
