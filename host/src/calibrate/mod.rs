//! `coalesce calibrate`: measures a [`Profile`] on one GPU with microbenchmarks of our
//! own. [`measure`] runs and times them on the GPU; every parameter is then fitted by
//! a pure function of those timings ([`read_granularity`], [`loaded_latency`],
//! [`bytes_in_flight_per_sm`]), tested on synthetic ones without a GPU.
//!
//! What is measured, in order: the driver's device-to-device copy (the ceiling); the
//! `stride` experiment's `stride_read` at strides 1..64 (DRAM read granularity); the
//! `inflight` experiment's copies (Little's law: the loaded latency and how it rises
//! with load); a single thread
//! chasing pointers (the idle latency); the SM's residency limits (device attributes,
//! and the register allocation unit that agrees with the driver's occupancy
//! calculator on every kernel); the on-chip rates (kernels/src/throughput.rs: lines of
//! global loads and stores, shared-memory wavefronts); the pitch sweep
//! (kernels/src/pitch.rs: a scatter, an update and a gather down columns at pitches
//! and spans: the rates of scattered requests); the copy again (the faster copy is kept, as the harness
//! does, so a slow first copy cannot inflate the fits).

use std::path::PathBuf;
use std::time::SystemTime;

use cust::memory::{AsyncCopyDestination, CopyDestination};
use kernels::entry;
use kernels::handle::{KernelInfo, PtxModule};

pub mod fit;
pub mod occupancy;
pub mod pitch;
pub mod spread;

pub use fit::{
    BELOW_CEILING, CHASE_SPACING, GRANULARITY_STRIDES, Granularity, LatencyFit, bytes_in_flight_per_sm,
    chase_buffer, follow, latency_points, loaded_latency, per_sm_rate, read_granularity,
};

use self::occupancy::{ALLOCATION_UNITS, OccupancySample, register_allocation_unit};
use self::pitch::pitch_sweep;
pub use self::pitch::{PAGE_BYTES, PitchPoint, pitch_grid, pitch_read_bytes, pitch_table};
use self::spread::{spread_sweep, spread_table};
use crate::device::{DeviceInfo, Gpu};
use crate::error::Result;
use crate::experiment::{DefaultSize, Experiment, Problem};
use crate::experiments::{inflight, stride};
use crate::harness::{RunOptions, choose_problem};
use crate::launch::{DeviceArg, Launch};
use crate::prepared::Prepared;
use crate::profile::{PROFILE_SCHEMA, Profile, SmLimits, SweepPoint};
use crate::timing::{Reps, memcpy_baseline, time_launches};
use crate::units::{format_bytes, gb_per_s};

/// Seed of the experiments' random inputs and of the chase's cycle.
pub const SEED: u64 = 0x5eed;

/// How thoroughly to measure: the full calibration, or `--quick` for a smoke test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub quick: bool,
}

impl Plan {
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

    /// Progress steps of [`measure`]: two copies, each sweep's setup and points, the
    /// chase, the residency limits, the three on-chip rates, the pitch sweep's setup and
    /// points (each at every iteration count), the spread sweep's setup and points.
    pub fn steps(self) -> u64 {
        (2 + 1
            + self.strides().len()
            + 1
            + inflight::EXPERIMENT.variants.len()
            + 1
            + 1
            + ON_CHIP.len()
            + 1
            + pitch_grid(self.quick).len() * pitch::ITERATIONS.len()
            + 1
            + 2 * spread::apart(self.quick).len()) as u64
    }
}

/// What [`measure`] did besides the profile, for the summary.
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
fn problem_for(gpu: &Gpu, exp: &Experiment, plan: Plan) -> Result<Problem> {
    let (free, _) = gpu.memory()?;
    let opts = RunOptions {
        size: plan.quick.then(|| plan.size(&gpu.info)),
        shape: None,
        reps: plan.reps(),
        seed: SEED,
    };
    choose_problem(exp, &opts, &gpu.info, free)
}

/// The index of the `stride_read` variant of stride `s`, if declared: the kernel the
/// sweep launches at any stride up to the experiment's largest.
fn stride_variant(s: usize) -> Option<usize> {
    stride::EXPERIMENT
        .variants
        .iter()
        .position(|v| v.kernel == entry::stride_read.info() && v.param == s)
}

/// Threads of a launch.
fn threads(l: &Launch) -> u64 {
    let count = |(x, y, z): (u32, u32, u32)| u64::from(x) * u64::from(y) * u64::from(z);
    count(l.grid) * count(l.block)
}

/// A sweep's points, its bytes per array and its validation failures.
struct Sweep {
    points: Vec<SweepPoint>,
    bytes: u64,
    failures: Vec<String>,
}

/// `stride_read` at every stride of the plan on the stride experiment's buffers (the
/// input covers stride 64), each the median of the plan's reps; the strides the fit
/// uses are first validated through their declared variants.
fn stride_sweep(gpu: &Gpu, plan: Plan, progress: &mut impl FnMut(&str)) -> Result<Sweep> {
    let exp = &stride::EXPERIMENT;
    let problem = problem_for(gpu, exp, plan)?;
    let bytes = 4 * problem.dim(crate::experiment::Dim::Len) as u64;
    progress(&format!("stride: {} per array", format_bytes(bytes)));
    let mut p = Prepared::new(gpu, exp, problem, SEED)?;
    let stride_read = gpu.load(&entry::stride_read)?;
    let mut failures = Vec::new();
    for s in GRANULARITY_STRIDES {
        // Declared (a unit test says so); the check also fills the input for the sweep.
        let Some(i) = stride_variant(s) else { continue };
        let v = p.check(gpu, i, stride_read.function())?;
        if !v.ok {
            failures.push(format!("stride/{}: {}", exp.variants[i].name, v.detail));
        }
    }
    let base = stride_variant(1).unwrap_or(0);
    let (cfg, _) = p.launch_spec(base)?;
    // The declaration's buffers: the input covers the largest stride.
    let n = problem.dim(crate::experiment::Dim::Len);
    let (src, dst) = (p.buffer(0).global(), p.buffer(1).global_mut());
    let work = p.work().bytes();
    let mut points = Vec::new();
    for s in plan.strides() {
        progress(&format!("stride {s}"));
        let t = time_launches(gpu, plan.reps(), || stride_read.launch(cfg, (n, s, src, dst)))?;
        points.push(SweepPoint {
            x: s as f64,
            gb_per_s: gb_per_s(work, t.median_ms),
        });
    }
    Ok(Sweep {
        points,
        bytes,
        failures,
    })
}

/// Every inflight variant, validated, then timed: x = read bytes in flight per SM,
/// from its launch, and its read + written rate.
fn inflight_sweep(gpu: &Gpu, plan: Plan, progress: &mut impl FnMut(&str)) -> Result<Sweep> {
    let exp = &inflight::EXPERIMENT;
    let problem = problem_for(gpu, exp, plan)?;
    let bytes = 4 * problem.dim(crate::experiment::Dim::Len) as u64;
    progress(&format!("inflight: {} per array", format_bytes(bytes)));
    let mut p = Prepared::new(gpu, exp, problem, SEED)?;
    let moved = p.work().bytes();
    let mut points = Vec::new();
    let mut failures = Vec::new();
    for (i, v) in exp.variants.iter().enumerate() {
        progress(&format!("inflight/{}", v.name));
        let f = gpu.function(v.kernel)?;
        let check = p.check(gpu, i, &f)?;
        if !check.ok {
            failures.push(format!("inflight/{}: {}", v.name, check.detail));
        }
        let t = time_launches(gpu, plan.reps(), || p.launch(gpu, i, &f))?;
        let (cfg, _) = p.launch_spec(i)?;
        points.push(SweepPoint {
            // A copy reads half the bytes it moves.
            x: bytes_in_flight_per_sm(
                moved / 2,
                threads(&cfg),
                gpu.info.sm_count,
                gpu.info.max_threads_per_sm,
            ),
            gb_per_s: gb_per_s(moved, t.median_ms),
        });
    }
    Ok(Sweep {
        points,
        bytes,
        failures,
    })
}

/// The idle latency: one thread, `chase_steps` dependent loads per launch through a
/// random cycle over 8 x L2 (at least 256 MiB), so every hop misses L2; ns per hop.
/// Returns it, the buffer's bytes and the hops per launch, and a failure if the
/// chase did not end where the host's walk of the same cycle does.
fn idle_latency(
    gpu: &Gpu,
    plan: Plan,
    progress: &mut impl FnMut(&str),
) -> Result<(f64, u64, usize, Option<String>)> {
    let bytes = DefaultSize::BeyondL2.bytes(&gpu.info);
    let slots = (bytes / 128) as usize;
    progress(&format!("chase: {} cycle", format_bytes(bytes)));
    let reps = plan.chase_reps();
    let launches = reps.warmup + reps.timed.max(1);
    // Launches go on from one another: with no more hops than slots in all of them,
    // none revisits a line a launch before it brought into L2.
    let steps = plan.chase_steps().min(slots / launches).max(1);
    let host = chase_buffer(slots, SEED).ok_or_else(|| crate::Error::TooLarge {
        what: format!("a {} pointer chase", format_bytes(bytes)),
        why: "its indices do not fit the kernel's 32-bit words".into(),
    })?;
    let mut next = gpu.alloc::<u32>(host.len())?;
    let mut cursor = gpu.alloc::<u32>(1)?;
    let start = [0u32];
    // Stream-ordered uploads: a synchronous copy from pageable memory may return
    // before its DMA is done, and the stream does not wait for the default one.
    // SAFETY: both host slices outlive the sync below.
    unsafe {
        next.async_copy_from(&host[..], &gpu.stream)
            .map_err(gpu.cuda_error("uploading the chase's cycle"))?;
        cursor
            .async_copy_from(&start[..], &gpu.stream)
            .map_err(gpu.cuda_error("uploading the chase's start"))?;
    }
    // The upload leaves the buffer's last lines in L2: overwrite L2 with twice its
    // size of something else.
    let mut flush = gpu.alloc::<u32>((2 * gpu.info.l2_bytes / 4).max(1) as usize)?;
    // SAFETY: the buffer lives until the sync below.
    unsafe { flush.set_32_async(0, &gpu.stream) }.map_err(gpu.cuda_error("flushing L2"))?;
    gpu.sync("uploading the chase")?;
    drop(flush);
    let chase = gpu.load(&entry::chase)?;
    let one = Launch {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        shared_bytes: 0,
    };
    let args = (steps, next.global(), cursor.global_mut());
    let t = time_launches(gpu, reps, || chase.launch(one, args))?;
    let mut end = [0u32];
    cursor
        .copy_to(&mut end[..])
        .map_err(gpu.cuda_error("reading the chase's end"))?;
    let want = follow(&host, start[0], steps * launches);
    let failure = (end[0] != want).then(|| format!("chase: ended at index {} instead of {want}", end[0]));
    Ok((t.median_ms * 1e6 / steps as f64, bytes, steps, failure))
}

/// A device attribute cust 0.3.2 has no name for, read from the driver directly.
fn raw_attribute(gpu: &Gpu, attribute: cust::sys::CUdevice_attribute) -> Result<u32> {
    let device =
        cust::device::Device::get_device(gpu.info.ordinal).map_err(gpu.cuda_error("opening the device"))?;
    let mut value = 0i32;
    // SAFETY: a plain query into a local; the device handle is valid.
    let status = unsafe { cust::sys::cuDeviceGetAttribute(&mut value, attribute, device.as_raw()) };
    if status != cust::sys::cudaError_enum::CUDA_SUCCESS {
        return Err(crate::Error::BadProfile {
            path: "calibrate".into(),
            why: format!("the driver did not give device attribute {attribute:?} ({status:?})"),
        });
    }
    Ok(value.max(0) as u32)
}

/// The SM's residency limits: device attributes, and the register allocation unit that
/// agrees with the driver's occupancy calculator (cuOccupancyMaxActiveBlocksPerMultiprocessor)
/// for the most of the embedded kernels, each at 128, 256 and 1024 threads per block
/// where it allows them. Returns the limits and (samples, agreeing).
fn sm_limits(gpu: &Gpu, progress: &mut impl FnMut(&str)) -> Result<(SmLimits, usize, usize)> {
    use cust::device::DeviceAttribute as A;
    use cust::function::{BlockSize, FunctionAttribute as F};
    use cust::sys::CUdevice_attribute as Raw;
    progress("residency limits");
    let device =
        cust::device::Device::get_device(gpu.info.ordinal).map_err(gpu.cuda_error("opening the device"))?;
    let attr = |a: A| -> Result<u32> {
        Ok(device
            .get_attribute(a)
            .map_err(gpu.cuda_error("reading device attributes"))?
            .max(0) as u32)
    };
    let (major, minor) = gpu.info.compute_capability;
    let mut limits = SmLimits {
        compute_capability: [major.max(0) as u32, minor.max(0) as u32],
        registers_per_sm: attr(A::MaxRegistersPerMultiprocessor)?,
        register_allocation_unit: ALLOCATION_UNITS[0],
        shared_bytes_per_sm: attr(A::MaxSharedMemoryPerMultiprocessor)?,
        reserved_shared_bytes_per_block: raw_attribute(
            gpu,
            Raw::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
        )?,
        max_blocks_per_sm: raw_attribute(gpu, Raw::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
    };
    let mut samples = Vec::new();
    // The baseline module's kernels, in its (the PTX's) order.
    let mut baseline: Vec<&KernelInfo> = kernels::HOST_KERNELS
        .iter()
        .copied()
        .filter(|k| k.module == PtxModule::Baseline)
        .collect();
    baseline.sort_by_key(|k| k.name);
    for kernel in baseline {
        let f = gpu.function(kernel)?;
        let get = |a: F| {
            f.get_attribute(a)
                .map_err(gpu.cuda_error("reading a kernel's attributes"))
        };
        let (registers, shared, most) = (
            get(F::NumRegisters)?,
            get(F::SharedMemorySizeBytes)?,
            get(F::MaxThreadsPerBlock)?,
        );
        for threads in [128u32, 256, 1024].into_iter().filter(|&t| t as i32 <= most) {
            let blocks = f
                .max_active_blocks_per_multiprocessor(BlockSize::x(threads), 0)
                .map_err(gpu.cuda_error("asking the driver's occupancy calculator"))?;
            samples.push(OccupancySample {
                kernel: kernel.name.to_string(),
                threads_per_block: threads,
                registers: registers.max(0) as u32,
                shared_bytes: shared.max(0) as u32,
                driver_blocks: blocks,
            });
        }
    }
    let (unit, agreeing) = register_allocation_unit(&samples, gpu.info.max_threads_per_sm, &limits)
        .unwrap_or((ALLOCATION_UNITS[0], 0));
    limits.register_allocation_unit = unit;
    Ok((limits, samples.len(), agreeing))
}

/// The on-chip microbenchmarks (kernels/src/throughput.rs): kernel, and the units
/// (lines or wavefronts) one warp handles per round.
pub static ON_CHIP: [(&KernelInfo, u64); 3] = [
    (entry::lines_load.info(), 32),
    (entry::lines_store.info(), 32),
    (entry::bank_conflicts.info(), 32),
];

/// Units each of [`ON_CHIP`]'s kernels handles in a launch of `blocks` blocks of
/// `rounds` rounds: 32 per warp per round; `bank_conflicts` also fills its tile (32
/// conflict-free store requests per block, a wavefront each).
pub fn on_chip_units(kernel: &KernelInfo, blocks: u32, rounds: usize) -> u64 {
    let warps = u64::from(blocks) * u64::from(kernels::throughput::BLOCK / 32);
    let per_round = ON_CHIP.iter().find(|(k, _)| *k == kernel).map_or(0, |(_, u)| *u);
    let fill = if kernel == entry::bank_conflicts.info() {
        u64::from(blocks) * (32 * 32 / 32)
    } else {
        0
    };
    warps * rounds as u64 * per_round + fill
}

/// What `lines_store` writes, for the summary: each warp's own lines, and whether the
/// windows of `blocks` blocks fit the L2 (where they do not, the DRAM may set the rate).
fn store_windows(blocks: u32, l2_bytes: u64) -> String {
    let bytes = u64::from(blocks) * (4 * kernels::throughput::STORE_WINDOW) as u64;
    let fit = if bytes <= l2_bytes {
        "L2-resident".to_string()
    } else {
        format!(
            "{} of windows, more than the {} L2 holds: the DRAM may limit this rate",
            format_bytes(bytes),
            format_bytes(l2_bytes)
        )
    };
    format!("32 lines per warp store, one partial sector each, each warp its own lines, {fit}")
}

/// Times the three on-chip kernels at full residency (max threads per SM / 256 blocks
/// per SM) and returns their per-SM rates, in [`ON_CHIP`]'s order, and the blocks.
fn on_chip_rates(gpu: &Gpu, plan: Plan, progress: &mut impl FnMut(&str)) -> Result<([f64; 3], u32)> {
    use kernels::throughput::{BLOCK, STORE_WINDOW};
    let blocks = gpu.info.sm_count.max(1) * (gpu.info.max_threads_per_sm / BLOCK).max(1);
    let mut window = gpu.alloc::<f32>(blocks as usize * STORE_WINDOW)?;
    let out = gpu.alloc::<f32>((blocks * BLOCK) as usize)?;
    // SAFETY: the buffer lives until the sync below.
    unsafe { window.set_32_async(0, &gpu.stream) }.map_err(gpu.cuda_error("clearing the windows"))?;
    gpu.sync("clearing the windows")?;
    let cfg = Launch {
        grid: (blocks, 1, 1),
        block: (BLOCK, 1, 1),
        shared_bytes: 0,
    };
    let rounds = plan.rounds();
    let (load, store, banks) = (
        gpu.load(&entry::lines_load)?,
        gpu.load(&entry::lines_store)?,
        gpu.load(&entry::bank_conflicts)?,
    );
    let (window_in, window_out, out) = (window.global(), window.global_mut(), out.global_mut());
    // In ON_CHIP's order.
    let launches: [&mut dyn FnMut() -> Result<()>; 3] = [
        &mut || load.launch(cfg, (rounds, window_in, out)),
        &mut || store.launch(cfg, (rounds, kernels::throughput::STORE_MASK, window_out)),
        &mut || banks.launch(cfg, (rounds, out)),
    ];
    let mut rates = [0.0; 3];
    for ((rate, (kernel, _)), launch) in rates.iter_mut().zip(&ON_CHIP).zip(launches) {
        progress(kernel.name);
        let t = time_launches(gpu, plan.reps(), launch)?;
        *rate = per_sm_rate(
            on_chip_units(kernel, blocks, rounds),
            t.median_ms,
            gpu.info.sm_count,
        )
        .ok_or_else(|| crate::Error::BadProfile {
            path: "calibrate".into(),
            why: format!("{} took {} ms: no rate", kernel.name, t.median_ms),
        })?;
    }
    Ok((rates, blocks))
}

/// Runs every microbenchmark on `gpu` and fits the profile; `progress` hears of each
/// step ([`Plan::steps`] in all).
pub fn measure(gpu: &Gpu, plan: Plan, mut progress: impl FnMut(&str)) -> Result<Calibration> {
    let info = &gpu.info;
    let reps = plan.reps();
    let copy_bytes = plan.size(info);
    progress("copy baseline");
    let before = memcpy_baseline(gpu, copy_bytes, reps)?;
    let strided = stride_sweep(gpu, plan, &mut progress)?;
    let inflight = inflight_sweep(gpu, plan, &mut progress)?;
    let (idle_ns, chase_bytes, chase_steps, chase_failure) = idle_latency(gpu, plan, &mut progress)?;
    let (sm, occupancy_samples, occupancy_agreeing) = sm_limits(gpu, &mut progress)?;
    let (rates, on_chip_blocks) = on_chip_rates(gpu, plan, &mut progress)?;
    let wave = u64::from(info.sm_count) * u64::from(info.max_threads_per_sm);
    let (pitch_points, pitch_failures) = pitch_sweep(gpu, plan.quick, plan.reps(), wave, &mut progress)?;
    // The spread kernels' blocks, as many as the SMs' threads hold.
    let wave_blocks = wave / u64::from(kernels::spread::BLOCK);
    let (spread_points, spread_failures) =
        spread_sweep(gpu, plan.quick, plan.reps(), wave_blocks, &mut progress)?;
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
        measured: crate::report::utc_date(SystemTime::now()),
        sm_count: info.sm_count,
        l2_bytes: info.l2_bytes,
        max_threads_per_sm: info.max_threads_per_sm,
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
        stride_sweep: strided.points,
        inflight_sweep: inflight.points,
    };
    let mut failures = strided.failures;
    failures.extend(inflight.failures);
    failures.extend(chase_failure);
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
            on_chip_rounds: plan.rounds(),
        },
        failures,
    })
}

/// The human summary: each parameter on one line, with what it was measured from.
pub fn summary(p: &Profile, n: &Notes) -> String {
    let strides = |sweep: &[SweepPoint]| match (sweep.first(), sweep.last()) {
        (Some(a), Some(b)) => format!("{}..{}", a.x, b.x),
        _ => "none".into(),
    };
    let reps = format!("median of {}", n.reps.timed);
    let lines = [
        (
            "copy_gb_per_s",
            format!("{:.1} GB/s", p.copy_gb_per_s),
            format!(
                "cuMemcpyDtoD of {} (read + written), {reps}, faster of a copy before and after the sweeps",
                format_bytes(n.copy_bytes)
            ),
        ),
        ("sm_count", p.sm_count.to_string(), "device attribute".into()),
        (
            "max_threads_per_sm",
            p.max_threads_per_sm.to_string(),
            "device attribute MAX_THREADS_PER_MULTIPROCESSOR".into(),
        ),
        (
            "dram_read_granularity",
            format!("{} B", p.dram_read_granularity),
            format!(
                "stride_read at strides {} on {} per array: 8 x copy / rate - 4 = {:.1} B per read at stride {}",
                strides(&p.stride_sweep),
                format_bytes(n.stride_bytes),
                n.granularity.per_element,
                n.granularity.stride
            ),
        ),
        (
            "idle_latency_ns",
            format!("{:.0} ns", p.idle_latency_ns),
            format!(
                "one thread, {} dependent loads per launch through a random {} cycle",
                n.chase_steps,
                format_bytes(n.chase_bytes)
            ),
        ),
        (
            "loaded_latency_ns",
            format!("{:.0} ns", p.loaded_latency_ns),
            if n.latency.upper_bound {
                format!(
                    "an upper bound: none of the {} inflight copies on {} was latency-bound; 2 x bytes in flight / rate of the fewest bytes",
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                )
            } else if n.latency.used < 2 || p.queueing_latency_ns == 0.0 {
                format!(
                    "Little's law, 2 x bytes in flight / rate, median of the {} latency-bound inflight copies of {} on {} (under {:.0}% of copy, rate rising with bytes in flight); constant",
                    n.latency.used,
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                    100.0 * BELOW_CEILING
                )
            } else {
                format!(
                    "L = L0 + Lq x rho / (1 - rho): the line through the Little's-law latencies (2 x bytes in flight / rate) of the {} latency-bound inflight copies of {} on {} (under {:.0}% of copy, rate rising with bytes in flight)",
                    n.latency.used,
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                    100.0 * BELOW_CEILING
                )
            },
        ),
        (
            "queueing_latency_ns",
            format!("{:.1} ns", p.queueing_latency_ns),
            "Lq of the same line: the latency at 50% of copy is L0 + Lq, at 90% L0 + 9 Lq".into(),
        ),
    ];
    let mut lines = lines.to_vec();
    if let Some(sm) = &p.sm {
        let attribute = |name: &str| format!("device attribute {name}");
        lines.extend([
            (
                "compute_capability",
                format!("{}.{}", sm.compute_capability[0], sm.compute_capability[1]),
                attribute("COMPUTE_CAPABILITY_MAJOR/MINOR (explain's ptxas -arch)"),
            ),
            ("registers_per_sm", sm.registers_per_sm.to_string(), attribute("MAX_REGISTERS_PER_MULTIPROCESSOR")),
            (
                "register_allocation_unit",
                sm.register_allocation_unit.to_string(),
                format!(
                    "registers per warp are allocated in multiples of it: the residency formula agrees with cuOccupancyMaxActiveBlocksPerMultiprocessor for {} of {} kernel x block sizes",
                    n.occupancy_agreeing, n.occupancy_samples
                ),
            ),
            (
                "shared_bytes_per_sm",
                sm.shared_bytes_per_sm.to_string(),
                attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
            ),
            (
                "reserved_shared_bytes_per_block",
                sm.reserved_shared_bytes_per_block.to_string(),
                attribute("RESERVED_SHARED_MEMORY_PER_BLOCK"),
            ),
            ("max_blocks_per_sm", sm.max_blocks_per_sm.to_string(), attribute("MAX_BLOCKS_PER_MULTIPROCESSOR")),
        ]);
    }
    let on_chip = |kernel: &str, what: &str| {
        format!(
            "{kernel}: {what}; {} blocks of 256 threads, {} rounds, {reps}; units / time / SMs",
            n.on_chip_blocks, n.on_chip_rounds
        )
    };
    for (name, rate, from) in [
        (
            "load_lines_per_ns_per_sm",
            p.load_lines_per_ns_per_sm,
            on_chip("lines_load", "32 lines per warp load, L1 hits"),
        ),
        (
            "store_lines_per_ns_per_sm",
            p.store_lines_per_ns_per_sm,
            on_chip("lines_store", &store_windows(n.on_chip_blocks, p.l2_bytes)),
        ),
        (
            "shared_wavefronts_per_ns_per_sm",
            p.shared_wavefronts_per_ns_per_sm,
            on_chip(
                "bank_conflicts",
                "32-way bank conflicts, 32 wavefronts per warp load",
            ),
        ),
    ] {
        if let Some(rate) = rate {
            lines.push((name, format!("{rate:.3}"), from));
        }
    }
    let mut text: String = lines
        .iter()
        .map(|(name, value, from)| format!("{name:<31} {value:>11}  {from}\n"))
        .collect();
    text.push_str(&pitch_table(
        p.pitch_sweep.as_deref().unwrap_or_default(),
        p.copy_gb_per_s,
    ));
    text.push_str(&spread_table(
        p.spread_sweep.as_deref().unwrap_or_default(),
        p.copy_gb_per_s,
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Arg;

    fn point(x: f64, gb_per_s: f64) -> SweepPoint {
        SweepPoint { x, gb_per_s }
    }

    /// The useful rate of stride_read on a GPU at its copy ceiling `copy` whose DRAM
    /// reads `g` bytes per isolated read: DRAM moves (g + 4) n bytes for 8 n useful.
    #[test]
    fn bytes_in_flight_come_from_the_inflight_launches() {
        // At the default size on an H100 every variant has more threads than the SMs
        // hold, so x = 2048 x bytes per thread, from the launch rule alone.
        let info = DeviceInfo::h100();
        let n = (DefaultSize::BeyondL2.bytes(&info) / 4) as usize;
        let launches = inflight::EXPERIMENT
            .launches(&Problem::Elements { n }, &info)
            .unwrap();
        let per_thread: Vec<f64> = launches
            .iter()
            .map(|l| bytes_in_flight_per_sm(4 * n as u64, threads(l), 132, 2048) / 2048.0)
            .collect();
        assert_eq!(per_thread, [4.0, 8.0, 16.0, 32.0, 16.0, 32.0, 64.0, 128.0]);
        // A launch smaller than the GPU: its threads divided among the SMs.
        assert_eq!(bytes_in_flight_per_sm(4 * 13_200, 13_200, 132, 2048), 400.0);
        assert_eq!(bytes_in_flight_per_sm(4, 0, 0, 2048), 0.0);
    }

    #[test]
    fn the_stride_sweep_launches_a_declared_kernel_within_its_input() {
        let max = stride::EXPERIMENT.variants.iter().map(|v| v.param).max().unwrap();
        for quick in [false, true] {
            let strides = Plan { quick }.strides();
            assert!(strides.iter().all(|&s| (1..=max).contains(&s)), "{strides:?}");
            for s in GRANULARITY_STRIDES {
                assert!(strides.contains(&s));
                assert!(stride_variant(s).is_some(), "stride {s} is not declared");
            }
        }
        let base = &stride::EXPERIMENT.variants[stride_variant(1).unwrap()];
        // The sweep passes (n, s, src, dst) as the declaration does.
        assert_eq!(base.kernel, entry::stride_read.info());
        assert_eq!(
            base.args,
            [
                Arg::Dim(crate::experiment::Dim::Len),
                Arg::Param,
                Arg::Buffer(0),
                Arg::Buffer(1)
            ]
        );
        assert_eq!(Plan { quick: false }.strides().len(), 64);
    }

    #[test]
    fn the_chase_never_revisits_a_line_across_its_launches() {
        let info = DeviceInfo::h100();
        for quick in [false, true] {
            let plan = Plan { quick };
            let slots = (DefaultSize::BeyondL2.bytes(&info) / 128) as usize;
            let r = plan.chase_reps();
            assert!((r.warmup + r.timed) * plan.chase_steps() <= slots);
            // Every L2 line of 8 x L2 is 8 x more than L2 holds.
            assert!(slots as u64 * 128 >= 8 * info.l2_bytes);
        }
    }

    #[test]
    fn the_store_windows_say_when_the_l2_cannot_hold_them() {
        // An H100's or H200's 1056 blocks write 33 MiB of windows: their L2 holds them.
        assert!(store_windows(1056, 50 << 20).ends_with("each warp its own lines, L2-resident"));
        let small = store_windows(1056, 6 << 20);
        assert!(
            small.contains("33.0 MiB of windows, more than the 6.0 MiB L2 holds"),
            "{small}"
        );
    }

    #[test]
    fn on_chip_units_count_32_per_warp_and_round() {
        // 1056 blocks of 8 warps, 2048 rounds, 32 lines or wavefronts each.
        let per = 1056 * 8 * 2048 * 32;
        assert_eq!(on_chip_units(&entry::lines_load, 1056, 2048), per);
        assert_eq!(on_chip_units(&entry::lines_store, 1056, 2048), per);
        // The tile's fill: 32 conflict-free store requests per block.
        assert_eq!(on_chip_units(&entry::bank_conflicts, 1056, 2048), per + 1056 * 32);
        assert_eq!(on_chip_units(&entry::copy_f32, 1056, 2048), 0);
    }

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
        let (full, quick) = (Plan { quick: false }, Plan { quick: true });
        assert_eq!(full.size(&info), 400 << 20);
        assert_eq!(quick.size(&info), 100 << 20);
        assert!(quick.reps().timed < full.reps().timed);
        assert_eq!(full.reps(), Reps::default());
        // ... the pitch sweep's 31 points at 3 iteration counts, the spread sweep's 8
        // distances of 2 kernels.
        assert_eq!(
            full.steps(),
            2 + 1 + 64 + 1 + 8 + 1 + 1 + 3 + 1 + 31 * 3 + 1 + 8 * 2
        );
        assert!(quick.rounds() < full.rounds());
    }

    #[test]
    fn the_summary_has_one_line_per_parameter() {
        let mut p = crate::profile::tests::sample();
        p.queueing_latency_ns = 50.0;
        p.stride_sweep = vec![point(1.0, 2800.0), point(64.0, 190.0)];
        p.inflight_sweep = vec![point(8192.0, 2000.0); 8];
        let notes = Notes {
            copy_bytes: 400 << 20,
            reps: Reps::default(),
            stride_bytes: 400 << 20,
            granularity: Granularity {
                bytes: 64,
                per_element: 70.2,
                stride: 16,
            },
            inflight_bytes: 400 << 20,
            latency: LatencyFit {
                base_ns: 700.0,
                queue_ns: 50.0,
                used: 2,
                upper_bound: false,
            },
            chase_bytes: 400 << 20,
            chase_steps: 200_000,
            occupancy_samples: 120,
            occupancy_agreeing: 118,
            on_chip_blocks: 1056,
            on_chip_rounds: 2048,
        };
        let text = summary(&p, &notes);
        // 16 parameters, then each sweep: a blank line, its title, its header and one
        // line per point.
        assert_eq!(text.lines().count(), 16 + 3 + 1 + 3 + 1, "{text}");
        assert!(text.contains("\npitch sweep (32 lanes one pitch apart"), "{text}");
        assert!(text.contains("\nspread sweep (a copy"), "{text}");
        for field in [
            "copy_gb_per_s",
            "sm_count",
            "max_threads_per_sm",
            "dram_read_granularity",
            "idle_latency_ns",
            "loaded_latency_ns",
            "queueing_latency_ns",
            "compute_capability",
            "registers_per_sm",
            "register_allocation_unit",
            "shared_bytes_per_sm",
            "reserved_shared_bytes_per_block",
            "max_blocks_per_sm",
            "load_lines_per_ns_per_sm",
            "store_lines_per_ns_per_sm",
            "shared_wavefronts_per_ns_per_sm",
        ] {
            assert!(text.lines().any(|l| l.starts_with(field)), "{field}: {text}");
        }
        assert!(text.contains("70.2 B per read at stride 16"), "{text}");
        assert!(text.contains("for 118 of 120 kernel x block sizes"), "{text}");
        // A schema-2 profile has none of schema 3's lines.
        let old = summary(&crate::profile::tests::schema_2(), &notes);
        assert_eq!(old.lines().count(), 7, "{old}");
        assert!(text.contains("strides 1..64"), "{text}");
        assert!(
            text.contains("the line through the Little's-law latencies"),
            "{text}"
        );
        assert!(
            text.contains("of the 2 latency-bound inflight copies of 8"),
            "{text}"
        );
        let bound = summary(
            &p,
            &Notes {
                latency: LatencyFit {
                    upper_bound: true,
                    ..notes.latency
                },
                ..notes
            },
        );
        assert!(bound.contains("an upper bound"), "{bound}");
    }
}
