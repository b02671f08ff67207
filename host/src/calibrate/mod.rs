//! `coalesce calibrate`: measures a [`Profile`] on one GPU with microbenchmarks of our
//! own. [`calibrate`] runs and times them on the GPU; every parameter is then fitted by
//! a pure function of those timings ([`fit`]; [`crate::profile::fit`] for the sweeps
//! a profile keeps), tested on synthetic ones without a GPU.
//!
//! What is measured, in order, each sweep in its own module: the driver's
//! device-to-device copy (the ceiling); [`stride`]: the `stride` experiment's
//! `stride_read` at strides 1..64 (DRAM read granularity); [`inflight`]: the
//! `inflight` experiment's copies (Little's law: the loaded latency and how it rises
//! with load); [`chase`]: a single thread chasing pointers (the idle latency);
//! [`occupancy`]: the SM's residency limits (device attributes, and the register
//! allocation unit that agrees with the driver's occupancy calculator on every
//! kernel); [`on_chip`]: the on-chip rates (lines of global loads and stores,
//! shared-memory wavefronts); [`compute`]: the compute rates (FFMAs, instructions
//! issued, tensor-core MMAs, L2 reads, an FFMA's and a shared load's latency);
//! [`power`]: the board's power while those kernels run for a second or more each
//! (the energy of each kind of work, and the limit); [`pitch`]: a scatter, an update and a gather down
//! columns at pitches and spans (the rates of scattered requests); [`spread`]: copies
//! whose waves spread over many pages; the copy again (the faster copy is kept, as
//! the harness does, so a slow first copy cannot inflate the fits). [`summary`] prints
//! what was measured; [`refit`](mod@crate::profile::refit) fits a profile again from
//! the sweeps it keeps.

use std::path::PathBuf;
use std::time::SystemTime;

pub mod chase;
pub mod compute;
pub mod fit;
pub mod inflight;
pub mod launch;
pub mod occupancy;
pub mod on_chip;
pub mod pitch;
pub mod power;
pub mod resident;
pub mod spread;
pub mod stride;
pub mod summary;

pub use crate::profile::fit::{
    BELOW_CEILING, GRANULARITY_STRIDES, Granularity, LatencyFit, latency_points, loaded_latency,
    read_granularity,
};
pub use compute::{COMPUTE, ComputeRun};
pub use fit::{CHASE_SPACING, bytes_in_flight_per_sm, chase_buffer, follow, per_sm_rate};
pub use on_chip::{ON_CHIP, on_chip_units};
pub use pitch::{PAGE_BYTES, PitchPoint, pitch_grid, pitch_read_bytes, pitch_table};
pub use summary::summary;

use crate::device::{DeviceInfo, Gpu};
use crate::error::Result;
use crate::experiment::{DefaultSize, Experiment, Problem};
use crate::experiments::inflight as inflight_experiment;
use crate::harness::{RunOptions, choose_problem};
use crate::profile::{PROFILE_SCHEMA, Profile, SweepPoint};
use crate::timing::{Reps, memcpy_baseline};

/// Seed of the experiments' random inputs and of the chase's cycle.
pub const SEED: u64 = 0x5eed;

/// How thoroughly to measure: the full calibration, or `--quick` for a smoke test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effort {
    pub quick: bool,
}

impl Effort {
    /// Launches per timing (the median of the timed ones is kept): the usual 3 + 20.
    pub fn reps(self) -> Reps {
        if self.quick {
            Reps { warmup: 1, timed: 3 }
        } else {
            Reps::default()
        }
    }

    /// Bytes per array of the copy, stride and inflight runs: the default size (8 x L2,
    /// at least 256 MiB, so DRAM is measured); a quarter of it when quick.
    pub fn size(self, info: &DeviceInfo) -> u64 {
        let full = DefaultSize::BeyondL2.bytes(info);
        if self.quick {
            (full / 4).next_multiple_of(1 << 20)
        } else {
            full
        }
    }

    /// The strides swept: every one from 1 to 64, or the experiment's own when quick.
    pub fn strides(self) -> Vec<usize> {
        if self.quick {
            kernels::stride::STRIDES.to_vec()
        } else {
            (1..=64).collect()
        }
    }

    /// Dependent loads per chase launch: a few hundred thousand make launch overhead
    /// negligible (well under 0.1% of ~100 ms).
    pub fn chase_steps(self) -> usize {
        if self.quick { 20_000 } else { 200_000 }
    }

    /// Chase launches (the median is kept): each is long, so few are needed.
    pub fn chase_reps(self) -> Reps {
        Reps {
            warmup: 1,
            timed: if self.quick { 3 } else { 5 },
        }
    }

    /// Rounds of each on-chip microbenchmark's loop: at about 2 lines per ns per SM and
    /// 64 warps per SM, 2048 rounds of 32 lines take about 2 ms a launch.
    pub fn rounds(self) -> usize {
        if self.quick { 256 } else { 2048 }
    }

    /// Progress steps of [`calibrate`]: two copies, each sweep's setup and points, the
    /// launch, the L2-resident copy and its inflight sweep, the chase, the residency limits, the three on-chip rates, the compute kernels (each
    /// one, run or skipped), the pitch sweep's setup and
    /// points (each at every iteration count), the spread sweep's setup and points.
    pub fn steps(self) -> u64 {
        (2 + 1
            + self.strides().len()
            + 1
            + inflight_experiment::EXPERIMENT.variants.len()
            + 1
            + 2
            + inflight_experiment::EXPERIMENT.variants.len()
            + 1
            + 1
            + ON_CHIP.len()
            + COMPUTE.len()
            + compute::power_runs().len()
            + 1
            + pitch_grid(self.quick).len() * pitch::ITERATIONS.len()
            + 1
            + 2 * spread::apart(self.quick).len()) as u64
    }
}

/// What [`calibrate`] did besides the profile, for the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Notes {
    /// Bytes per array of the copy baseline.
    pub copy_bytes: u64,
    pub reps: Reps,
    /// Output bytes of the stride sweep (its input is 64 times as large).
    pub stride_bytes: u64,
    pub granularity: Granularity,
    /// Bytes per array of the inflight copies.
    pub inflight_bytes: u64,
    pub latency: LatencyFit,
    /// Bytes of the chase buffer and the hops each launch timed.
    pub chase_bytes: u64,
    pub chase_steps: usize,
    /// Kernels x block sizes whose driver occupancy the residency formula was checked
    /// against, and how many agreed with the chosen register allocation unit.
    pub occupancy_samples: usize,
    pub occupancy_agreeing: usize,
    /// Blocks and rounds of the on-chip microbenchmarks.
    pub on_chip_blocks: u32,
    pub on_chip_rounds: usize,
    /// How each compute rate was measured, in [`COMPUTE`]'s order.
    pub compute_runs: Vec<ComputeRun>,
    /// Why the profile has no power (no NVML, a run that drew too little), or None.
    pub no_power: Option<String>,
}

/// A calibration: the profile, how it was measured, and the kernels that failed
/// validation (a profile is only written when there are none).
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    pub profile: Profile,
    pub notes: Notes,
    pub failures: Vec<String>,
}

/// The profile's file when no `--out` is given: in the current folder.
pub fn default_path(device: &str) -> PathBuf {
    PathBuf::from(format!("coalesce-profile-{}.json", crate::device::slug(device)))
}

/// The problem an experiment runs at: the default size (halved until it fits, as
/// `coalesce run` does), or the quick size.
fn problem_for(gpu: &Gpu, exp: &Experiment, effort: Effort) -> Result<Problem> {
    let (free, _) = gpu.memory()?;
    let opts = RunOptions {
        size: effort.quick.then(|| effort.size(&gpu.info)),
        shape: None,
        reps: effort.reps(),
        seed: SEED,
    };
    choose_problem(exp, &opts, &gpu.info, free)
}

/// A sweep's points, its bytes per array and its validation failures.
struct Sweep {
    points: Vec<SweepPoint>,
    bytes: u64,
    failures: Vec<String>,
}

/// Runs every microbenchmark on `gpu` and fits the profile; `progress` hears of each
/// step ([`Effort::steps`] in all).
pub fn calibrate(gpu: &Gpu, effort: Effort, mut progress: impl FnMut(&str)) -> Result<Calibration> {
    let info = &gpu.info;
    let reps = effort.reps();
    let copy_bytes = effort.size(info);
    progress("copy baseline");
    let before = memcpy_baseline(gpu, copy_bytes, reps)?;
    let strided = stride::stride_sweep(gpu, effort, &mut progress)?;
    let inflight = inflight::inflight_sweep(gpu, effort, &mut progress)?;
    let launch = launch::launch_costs(gpu, effort, &mut progress)?;
    let launch_ns = launch.launch_ns;
    let (l2_resident, l2_failures) = resident::l2_resident(gpu, effort, launch_ns, &mut progress)?;
    let (idle_ns, chase_bytes, chase_steps, chase_failure) = chase::idle_latency(gpu, effort, &mut progress)?;
    let (sm, occupancy_samples, occupancy_agreeing) = occupancy::sm_limits(gpu, &mut progress)?;
    let (rates, on_chip_blocks) = on_chip::on_chip_rates(gpu, effort, &mut progress)?;
    let (compute, compute_runs, compute_failures) = compute::compute_rates(gpu, effort, &mut progress)?;
    let (power, power_failures) = power::power_rates(gpu, effort, &mut progress)?;
    let wave = u64::from(info.sm_count) * u64::from(info.max_threads_per_sm);
    let (pitch_points, pitch_failures) =
        pitch::pitch_sweep(gpu, effort.quick, effort.reps(), wave, &mut progress)?;
    // The spread kernels' blocks, as many as the SMs' threads hold.
    let wave_blocks = wave / u64::from(kernels::calibrate::spread::BLOCK);
    let (spread_points, spread_failures) =
        spread::spread_sweep(gpu, effort.quick, effort.reps(), wave_blocks, &mut progress)?;
    progress("copy baseline again");
    let after = memcpy_baseline(gpu, copy_bytes, reps)?;
    let copy_gb_per_s = before.faster(after).gb_per_s;
    let unfit = |what: &str| crate::Error::BadProfile {
        path: "calibrate".into(),
        why: format!("no usable measurement to fit {what} (the timings were zero or not finite)"),
    };
    let granularity =
        read_granularity(&strided.points, copy_gb_per_s).ok_or_else(|| unfit("dram_read_granularity"))?;
    let latency = loaded_latency(&inflight.points, info.sm_count, copy_gb_per_s)
        .ok_or_else(|| unfit("loaded_latency_ns"))?;
    let profile = Profile {
        schema: PROFILE_SCHEMA,
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        device: info.name.clone(),
        measured: crate::date::utc_date(SystemTime::now()),
        sm_count: info.sm_count,
        l2_bytes: info.l2_bytes,
        max_threads_per_sm: info.max_threads_per_sm,
        memory_clock_khz: info.memory_clock_khz,
        bus_width_bits: info.bus_width_bits,
        copy_gb_per_s,
        dram_read_granularity: granularity.bytes,
        idle_latency_ns: idle_ns,
        loaded_latency_ns: latency.base_ns,
        queueing_latency_ns: latency.queue_ns,
        sm: Some(sm),
        load_lines_per_ns_per_sm: Some(rates[0]),
        store_lines_per_ns_per_sm: Some(rates[1]),
        shared_wavefronts_per_ns_per_sm: Some(rates[2]),
        pitch_sweep: Some(pitch_points),
        spread_sweep: Some(spread_points),
        compute: Some(compute),
        power: power.as_ref().ok().cloned(),
        launch_ns: Some(launch_ns),
        launch_gap_ns: launch.gap_ns,
        l2_resident,
        stride_sweep: strided.points,
        inflight_sweep: inflight.points,
    };
    let mut failures = strided.failures;
    failures.extend(inflight.failures);
    failures.extend(l2_failures);
    failures.extend(chase_failure);
    failures.extend(compute_failures);
    failures.extend(power_failures);
    failures.extend(pitch_failures);
    failures.extend(spread_failures);
    Ok(Calibration {
        profile,
        notes: Notes {
            copy_bytes,
            reps,
            stride_bytes: strided.bytes,
            granularity,
            inflight_bytes: inflight.bytes,
            latency,
            chase_bytes,
            chase_steps,
            occupancy_samples,
            occupancy_agreeing,
            on_chip_blocks,
            on_chip_rounds: effort.rounds(),
            compute_runs,
            no_power: power.err(),
        },
        failures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceInfo;

    #[test]
    fn default_file_is_named_after_the_device() {
        assert_eq!(
            default_path("NVIDIA H100 80GB HBM3"),
            PathBuf::from("coalesce-profile-nvidia-h100-80gb-hbm3.json")
        );
        assert_eq!(crate::device::slug(" NVIDIA  H200 (NVL) "), "nvidia-h200-nvl");
        assert_eq!(crate::device::slug("???"), "gpu");
    }

    #[test]
    fn quick_is_smaller_and_steps_count_every_progress_call() {
        let info = DeviceInfo::h100();
        let (full, quick) = (Effort { quick: false }, Effort { quick: true });
        assert_eq!(full.size(&info), 400 << 20);
        assert_eq!(quick.size(&info), 100 << 20);
        assert!(quick.reps().timed < full.reps().timed);
        assert_eq!(full.reps(), Reps::default());
        // ... the pitch sweep's 31 points at 3 iteration counts, the spread sweep's 8
        // distances of 2 kernels.
        assert_eq!(
            full.steps(),
            2 + 1 + 64 + 1 + 8 + 1 + 2 + 8 + 1 + 1 + 3 + 11 + 8 + 1 + 31 * 3 + 1 + 8 * 2
        );
        assert!(quick.rounds() < full.rounds());
    }

    /// A kernel added to kernels/src/calibrate/ without its place in calibrate (a table
    /// entry, or a sweep that launches it) fails here, not on the first GPU it meets.
    #[test]
    fn calibrate_runs_every_kernel_of_kernels_src_calibrate() {
        use kernels::entry;
        use kernels::handle::KernelInfo;
        use std::collections::BTreeMap;
        let names = |ks: &[&KernelInfo]| -> Vec<String> {
            let mut v: Vec<String> = ks.iter().map(|k| k.name.to_string()).collect();
            v.sort();
            v
        };
        let compute: Vec<&KernelInfo> = COMPUTE.iter().map(|b| b.kernel()).collect();
        let on_chip: Vec<&KernelInfo> = ON_CHIP.iter().map(|(k, _)| *k).collect();
        let pitch = [
            entry::pitch_read.info(),
            entry::pitch_write.info(),
            entry::pitch_update.info(),
        ];
        let spread = [crate::profile::Stream::Reads, crate::profile::Stream::Writes]
            .map(|s| spread::kernel_of(s).info());
        let launched = BTreeMap::from([
            ("chase".to_string(), names(&[entry::chase.info()])),
            ("pipes".to_string(), names(&compute)),
            ("pitch".to_string(), names(&pitch)),
            ("spread".to_string(), names(&spread)),
            ("throughput".to_string(), names(&on_chip)),
        ]);
        // The kernels of each file there: its `pub fn`s named as entry points (kernel
        // names are unique).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/src/calibrate");
        let mut declared: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let module = path.file_stem().unwrap().to_string_lossy().to_string();
            if module == "mod" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let found: Vec<String> = text
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("pub fn "))
                .map(|l| {
                    l.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap()
                })
                .filter(|name| kernels::HOST_KERNELS.iter().any(|k| k.name == *name))
                .map(str::to_string)
                .collect();
            declared.insert(module, found);
        }
        declared.values_mut().for_each(|ks| ks.sort());
        assert_eq!(declared, launched);
    }
}
