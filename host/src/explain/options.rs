//! What `coalesce explain` is asked (the [`Options`]), and the GPU and problem it
//! sizes each experiment for.

use super::emulate::model::Model;
use crate::device::DeviceInfo;
use crate::error::Result;
use crate::experiment::{Experiment, Problem};

/// What to explain and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Bytes per array, as `coalesce run --size`; `None`: each experiment's default
    /// on the [`reference_gpu`].
    pub size: Option<u64>,
    /// A matrix shape, as `coalesce run --shape` (for the experiments of its rank).
    pub shape: Option<Vec<usize>>,
    pub model: Model,
    /// Blocks to emulate per kernel (the whole grid when it has no more).
    pub blocks: usize,
    /// The GPU to predict times for; `None`: coalescing only, uncalibrated.
    pub profile: Option<crate::profile::Profile>,
    /// The most memory one kernel's emulation may hold; past it, explain refuses.
    pub memory_limit: u64,
}

impl Default for Options {
    /// Each experiment's default size, the sm70 rules, 8 blocks, no profile.
    fn default() -> Options {
        Options {
            size: None,
            shape: None,
            model: Model::Sm70,
            blocks: 8,
            profile: None,
            memory_limit: EMULATION_BYTES,
        }
    }
}

/// Memory one emulation may hold at its peak unless told otherwise
/// ([`Options::memory_limit`]): one block's log and the counts of its window.
pub const EMULATION_BYTES: u64 = 1 << 30;

/// The GPU `coalesce explain` sizes problems and grid-stride grids for when the user
/// gives no size: an H100 80GB HBM3 (132 SMs, 50 MiB L2), the project's reference.
/// Only grid sizes, default sizes and launches sized from its DRAM bandwidth depend
/// on it, never a warp's addresses.
pub fn reference_gpu() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA H100 80GB HBM3 (assumed by coalesce explain)".into(),
        driver_version: 0,
        ..DeviceInfo::h100()
    }
}

/// The GPU whose sizes and grids explain assumes: the profile's, else the reference.
pub fn sizing_gpu(opts: &Options) -> DeviceInfo {
    match &opts.profile {
        Some(p) => DeviceInfo {
            name: format!("{} (from its profile)", p.device),
            sm_count: p.sm_count,
            l2_bytes: p.l2_bytes,
            memory_clock_khz: p.memory_clock_khz,
            bus_width_bits: p.bus_width_bits,
            ..reference_gpu()
        },
        None => reference_gpu(),
    }
}

/// The problem `experiment` runs at under `opts`, as `coalesce run` picks it on the
/// sizing GPU ([`Experiment::requested_problem`]; no shrinking to fit: nothing is
/// allocated).
pub fn problem(experiment: &Experiment, opts: &Options) -> Result<Problem> {
    let (problem, _) = experiment.requested_problem(opts.size, opts.shape.as_deref(), &sizing_gpu(opts))?;
    Ok(problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launch sized from the GPU's bandwidth is sized for the profile's GPU, as
    /// `coalesce run` sizes it there: the shipped profiles record their DRAM, so
    /// transpose/tma-dense-fit gets three blocks per SM on the H100 and four on the H200.
    #[test]
    fn the_profiles_gpu_sizes_launches_from_its_bandwidth() {
        use crate::experiments::transpose::tiles_in_flight_per_sm;
        for (gpu, tiles) in [("H100", 3), ("H200", 4)] {
            let profile = crate::profile::Profile::shipped(gpu).unwrap().unwrap();
            let opts = Options {
                profile: Some(profile),
                ..Options::default()
            };
            assert_eq!(tiles_in_flight_per_sm(&sizing_gpu(&opts)), tiles, "{gpu}");
        }
    }

    /// `run` and `explain` turn `--size` and `--shape` into a problem the same way
    /// (one resolver, [`Experiment::requested_problem`]): on the GPU explain sizes for,
    /// with memory to spare, every experiment gets the same problem from both.
    #[test]
    fn run_and_explain_resolve_size_and_shape_alike() {
        use crate::harness::{RunOptions, choose_problem};
        let cases: [(Option<u64>, Option<Vec<usize>>); 5] = [
            (None, None),
            (Some(1 << 20), None),
            (Some(3 << 20), Some(vec![100, 300])),
            (None, Some(vec![64, 96, 32])),
            (Some(4096), Some(vec![7])),
        ];
        for e in crate::experiments::ALL {
            for (size, shape) in &cases {
                let opts = Options {
                    size: *size,
                    shape: shape.clone(),
                    ..Options::default()
                };
                let run = RunOptions {
                    size: *size,
                    shape: shape.clone(),
                    reps: crate::timing::Reps { warmup: 1, timed: 1 },
                    seed: 1,
                };
                let explained = problem(e, &opts).unwrap();
                let ran = choose_problem(e, &run, &sizing_gpu(&opts), u64::MAX).unwrap();
                assert_eq!(explained, ran, "{} at {size:?} {shape:?}", e.name);
            }
            // A shape of the experiment's rank with a zero is refused by both alike.
            if e.shape_rank() > 0 {
                let zero = Some(vec![0; e.shape_rank()]);
                let opts = Options {
                    shape: zero.clone(),
                    ..Options::default()
                };
                let run = RunOptions {
                    size: None,
                    shape: zero,
                    reps: crate::timing::Reps { warmup: 1, timed: 1 },
                    seed: 1,
                };
                let (a, b) = (
                    problem(e, &opts).unwrap_err().to_string(),
                    choose_problem(e, &run, &sizing_gpu(&opts), u64::MAX)
                        .unwrap_err()
                        .to_string(),
                );
                assert_eq!(a, b);
            }
        }
    }
}
