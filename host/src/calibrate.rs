//! `coalesce calibrate`: measures a [`Profile`] on one GPU with microbenchmarks of our
//! own. [`measure`] runs and times them on the GPU; every parameter is then fitted by
//! a pure function of those timings ([`read_granularity`], [`loaded_latency`],
//! [`bytes_in_flight_per_sm`]), tested on synthetic ones without a GPU.
//!
//! What is measured, in order: the driver's device-to-device copy (the ceiling); the
//! `stride` experiment's `stride_read` at strides 1..64 (DRAM read granularity); the
//! `inflight` experiment's copies (Little's law: the loaded latency); a single thread
//! chasing pointers (the idle latency); the copy again (the faster copy is kept, as
//! the harness does, so a slow first copy cannot inflate the fits).

use std::path::PathBuf;
use std::time::SystemTime;

use cust::memory::{AsyncCopyDestination, CopyDestination};

use crate::args;
use crate::device::{DeviceInfo, Gpu};
use crate::error::Result;
use crate::experiment::{Arg, DefaultSize, Experiment, Problem};
use crate::experiments::{inflight, stride};
use crate::harness::{RunOptions, choose_problem};
use crate::launch::Launch;
use crate::prepared::Prepared;
use crate::profile::{PROFILE_SCHEMA, Profile, SweepPoint};
use crate::timing::{Reps, memcpy_baseline, time_launches};
use crate::units::{format_bytes, gb_per_s};

/// Seed of the experiments' random inputs and of the chase's cycle.
pub const SEED: u64 = 0x5eed;

/// The kernel the stride sweep launches, at any stride up to the experiment's largest.
pub const STRIDE_KERNEL: &str = "stride_read";

/// Strides at which every lane of a warp reads a 32-byte sector of its own and no two
/// lanes share a 64-byte segment (f32 lanes 64 and 128 bytes apart): each read costs
/// DRAM exactly its read granularity.
pub const GRANULARITY_STRIDES: [usize; 2] = [16, 32];

/// A copy whose rate is under this share of the copy ceiling is waiting on latency,
/// not on bandwidth: only such points enter the Little's-law fit.
pub const BELOW_CEILING: f64 = 0.9;

/// Elements of the chase buffer between consecutive slots: 128 bytes of `u32`, so
/// every hop lands in a 128-byte line (and so a sector and a DRAM burst) of its own.
pub const CHASE_SPACING: usize = 128 / 4;

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

    /// Progress steps of [`measure`]: two copies, each sweep's setup and points, the chase.
    pub fn steps(self) -> u64 {
        (2 + 1 + self.strides().len() + 1 + inflight::EXPERIMENT.variants.len() + 1) as u64
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
}

/// A calibration: the profile, how it was measured, and the kernels that failed
/// validation (a profile is only written when there are none).
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    pub profile: Profile,
    pub notes: Notes,
    pub failures: Vec<String>,
}

/// The DRAM read granularity as fitted from the stride sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Granularity {
    /// Rounded to whole 32-byte sectors: the profile's value.
    pub bytes: u32,
    /// The raw estimate of DRAM bytes per element read, and the stride it came from.
    pub per_element: f64,
    pub stride: usize,
}

/// The DRAM read granularity from the stride sweep (points x = stride, gb_per_s = the
/// useful rate R = 8 n / t of `stride_read`, which reads n floats and writes n).
///
/// At strides 16 and 32 ([`GRANULARITY_STRIDES`]) every read costs DRAM one whole
/// granule g and the coalesced writes cost 4 bytes each. Running at the copy ceiling C
/// (read + written bytes per second), DRAM moves t C bytes in the kernel's time t, so
///
///   g = (t C - 4 n) / n = 8 C / R - 4
///
/// (n and t cancel). A kernel that runs below the ceiling overstates g, so the
/// smallest estimate of the two strides is kept, rounded to the nearest multiple of 32
/// bytes, at least 32. `None` without a usable point at those strides.
pub fn read_granularity(sweep: &[SweepPoint], copy_gb_per_s: f64) -> Option<Granularity> {
    sweep
        .iter()
        .filter(|p| GRANULARITY_STRIDES.iter().any(|&s| p.x == s as f64))
        .filter(|p| p.gb_per_s.is_finite() && p.gb_per_s > 0.0)
        .map(|p| (8.0 * copy_gb_per_s / p.gb_per_s - 4.0, p.x as usize))
        .filter(|(g, _)| g.is_finite())
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(per_element, stride)| Granularity {
            bytes: ((per_element / 32.0).round().max(1.0) as u32) * 32,
            per_element,
            stride,
        })
}

/// Read bytes one SM keeps in flight in an inflight copy: each thread loads all its
/// `read_bytes / threads` bytes before it stores any (rounded to whole bytes), and an
/// SM holds min(threads / sm_count, max_threads_per_sm) threads at once. Registers or
/// blocks per SM may hold fewer threads than that: then this overstates the bytes in
/// flight, and the latency fitted from it.
pub fn bytes_in_flight_per_sm(read_bytes: u64, threads: u64, sm_count: u32, max_threads_per_sm: u32) -> f64 {
    let per_thread = (read_bytes as f64 / threads.max(1) as f64).round();
    let per_sm = (threads as f64 / f64::from(sm_count.max(1))).min(f64::from(max_threads_per_sm));
    per_thread * per_sm
}

/// The loaded latency as fitted from the inflight sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyFit {
    pub ns: f64,
    /// Points the median is over.
    pub used: usize,
    /// Every copy ran at the ceiling: the latency is at most `ns`.
    pub upper_bound: bool,
}

/// The loaded latency from the inflight sweep (points x = read bytes in flight per SM,
/// gb_per_s = the copy's read + written rate R), by Little's law: bytes in flight =
/// rate x latency. A copy with x read bytes in flight on each of `sm_count` SMs moves
/// 2 x sm_count bytes per latency L (it writes what it reads), so below the ceiling
///
///   L = 2 x sm_count / R   (ns, with R in GB/s = bytes per ns).
///
/// The fit is the median of L over the points under [`BELOW_CEILING`] of the copy
/// ceiling. When every point reaches the ceiling, the point with the fewest bytes in
/// flight is used: its bytes already sufficed, so its L bounds the latency from above.
/// `None` without a usable point.
pub fn loaded_latency(points: &[SweepPoint], sm_count: u32, copy_gb_per_s: f64) -> Option<LatencyFit> {
    let usable: Vec<&SweepPoint> = points
        .iter()
        .filter(|p| p.x > 0.0 && p.gb_per_s.is_finite() && p.gb_per_s > 0.0)
        .collect();
    let latency = |p: &SweepPoint| 2.0 * p.x * f64::from(sm_count) / p.gb_per_s;
    let mut below: Vec<f64> = usable
        .iter()
        .filter(|p| p.gb_per_s < BELOW_CEILING * copy_gb_per_s)
        .map(|p| latency(p))
        .collect();
    if below.is_empty() {
        let fewest = usable.iter().min_by(|a, b| a.x.total_cmp(&b.x))?;
        return Some(LatencyFit {
            ns: latency(fewest),
            used: 1,
            upper_bound: true,
        });
    }
    below.sort_by(f64::total_cmp);
    let mid = below.len() / 2;
    let median = if below.len() % 2 == 1 {
        below[mid]
    } else {
        (below[mid - 1] + below[mid]) / 2.0
    };
    Some(LatencyFit {
        ns: median,
        used: below.len(),
        upper_bound: false,
    })
}

/// SplitMix64: a seeded generator for the chase's cycle (reproducible, no dependency).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        kernels::fill::mix64(self.0)
    }

    /// Uniform in 0..bound (multiply-shift; its bias, under bound / 2^64, is nothing here).
    fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next()) * bound as u128) >> 64) as usize
    }
}

/// The chase's buffer: `slots` slots [`CHASE_SPACING`] elements apart, slot s's first
/// element holding the index of the slot after s in one random cycle through all of
/// them (Sattolo's algorithm, seeded), so a chase from any slot visits every slot,
/// each once, in a random order no prefetcher follows. The other elements are never
/// read. `None` when `slots` is zero or an index would not fit the kernel's `u32`.
pub fn chase_buffer(slots: usize, seed: u64) -> Option<Vec<u32>> {
    let len = slots.checked_mul(CHASE_SPACING)?;
    if slots == 0 || u32::try_from(len).is_err() {
        return None;
    }
    // Sattolo: like Fisher-Yates, but j < i, never j = i, which makes next one cycle.
    let mut next: Vec<usize> = (0..slots).collect();
    let mut rng = SplitMix(seed);
    for i in (1..slots).rev() {
        let j = rng.below(i);
        next.swap(i, j);
    }
    let mut buf = vec![0u32; len];
    for (s, &n) in next.iter().enumerate() {
        buf[s * CHASE_SPACING] = (n * CHASE_SPACING) as u32;
    }
    Some(buf)
}

/// Where `steps` hops of the chase from `start` end: what the kernel must store.
pub fn follow(next: &[u32], start: u32, steps: usize) -> u32 {
    (0..steps).fold(start, |j, _| next[j as usize])
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

/// The index of the `stride_read` variant of stride `s`, if declared.
fn stride_variant(s: usize) -> Option<usize> {
    stride::EXPERIMENT
        .variants
        .iter()
        .position(|v| v.kernel == STRIDE_KERNEL && v.param == s)
}

/// Where a variant's parameter (the stride) sits in its argument words.
fn param_word(exp: &Experiment, i: usize) -> Option<usize> {
    exp.variants[i].args.iter().position(|a| *a == Arg::Param)
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
    let f = gpu.function(STRIDE_KERNEL)?;
    let mut failures = Vec::new();
    for s in GRANULARITY_STRIDES {
        // Declared (a unit test says so); the check also fills the input for the sweep.
        let Some(i) = stride_variant(s) else { continue };
        let v = p.check(gpu, i, &f)?;
        if !v.ok {
            failures.push(format!("stride/{}: {}", exp.variants[i].name, v.detail));
        }
    }
    let base = stride_variant(1).unwrap_or(0);
    let (cfg, mut words) = p.launch_spec(base);
    let slot = param_word(exp, base).unwrap_or(1);
    let work = p.work().bytes();
    let mut points = Vec::new();
    for s in plan.strides() {
        progress(&format!("stride {s}"));
        words[slot] = s as u64;
        let t = time_launches(gpu, plan.reps(), || gpu.launch(&f, cfg, &words))?;
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
        let (cfg, _) = p.launch_spec(i);
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
    let f = gpu.function("chase")?;
    let one = Launch {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        shared_bytes: 0,
    };
    let words = args![steps, next.as_device_ptr(), cursor.as_device_ptr()];
    let t = time_launches(gpu, reps, || gpu.launch(&f, one, &words))?;
    let mut end = [0u32];
    cursor
        .copy_to(&mut end[..])
        .map_err(gpu.cuda_error("reading the chase's end"))?;
    let want = follow(&host, start[0], steps * launches);
    let failure = (end[0] != want).then(|| format!("chase: ended at index {} instead of {want}", end[0]));
    Ok((t.median_ms * 1e6 / steps as f64, bytes, steps, failure))
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
    progress("copy baseline again");
    let after = memcpy_baseline(gpu, copy_bytes, reps)?;
    let copy_gb_per_s = before.gb_per_s.max(after.gb_per_s);
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
        loaded_latency_ns: latency.ns,
        stride_sweep: strided.points,
        inflight_sweep: inflight.points,
    };
    let mut failures = strided.failures;
    failures.extend(inflight.failures);
    failures.extend(chase_failure);
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
                    "an upper bound: all {} inflight copies on {} ran at over {:.0}% of copy; 2 x bytes in flight / rate of the fewest bytes",
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                    100.0 * BELOW_CEILING
                )
            } else {
                format!(
                    "Little's law, 2 x bytes in flight / rate, median of the {} of {} inflight copies on {} under {:.0}% of copy",
                    n.latency.used,
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                    100.0 * BELOW_CEILING
                )
            },
        ),
    ];
    lines
        .iter()
        .map(|(name, value, from)| format!("{name:<22} {value:>11}  {from}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(x: f64, gb_per_s: f64) -> SweepPoint {
        SweepPoint { x, gb_per_s }
    }

    /// The useful rate of stride_read on a GPU at its copy ceiling `copy` whose DRAM
    /// reads `g` bytes per isolated read: DRAM moves (g + 4) n bytes for 8 n useful.
    fn strided_rate(copy: f64, g: f64) -> f64 {
        8.0 * copy / (g + 4.0)
    }

    #[test]
    fn granularity_recovers_the_bytes_dram_reads_per_sector() {
        for g in [32.0, 64.0, 128.0] {
            let sweep = [
                point(1.0, 2800.0),
                point(16.0, strided_rate(3000.0, g)),
                point(32.0, strided_rate(3000.0, g)),
                point(64.0, 1.0),
            ];
            let fit = read_granularity(&sweep, 3000.0).unwrap();
            assert_eq!(fit.bytes, g as u32, "{fit:?}");
            assert!((fit.per_element - g).abs() < 1e-9, "{fit:?}");
        }
    }

    #[test]
    fn granularity_takes_the_faster_stride_and_rounds_to_sectors() {
        // Stride 32 at 80% of the ceiling would say (64 + 4) / 0.8 - 4 = 81 bytes;
        // stride 16 at 95% says 67.6: the smaller is kept and rounds to 64.
        let sweep = [
            point(16.0, 0.95 * strided_rate(3000.0, 64.0)),
            point(32.0, 0.8 * strided_rate(3000.0, 64.0)),
        ];
        let fit = read_granularity(&sweep, 3000.0).unwrap();
        assert_eq!((fit.bytes, fit.stride), (64, 16), "{fit:?}");
        assert!((fit.per_element - 67.578_947).abs() < 1e-3, "{fit:?}");
        // Faster than the copy (an L2 effect) is still one sector; 47 B rounds to 32, 49 to 64.
        let at = |g: f64| read_granularity(&[point(16.0, strided_rate(3000.0, g))], 3000.0).unwrap();
        assert_eq!(at(-2.0).bytes, 32);
        assert_eq!(at(47.0).bytes, 32);
        assert_eq!(at(49.0).bytes, 64);
        // No point at 16 or 32, or no usable one: nothing to fit.
        assert_eq!(read_granularity(&[point(8.0, 300.0)], 3000.0), None);
        assert_eq!(read_granularity(&[point(16.0, 0.0)], 3000.0), None);
    }

    #[test]
    fn loaded_latency_is_littles_law_below_the_ceiling() {
        // A GPU of 100 SMs with a 1000 ns loaded latency and a 3000 GB/s ceiling: the
        // rate is 2 x bytes in flight / latency until it reaches the ceiling.
        let (sms, copy, latency) = (100, 3000.0, 1000.0);
        let points: Vec<SweepPoint> = [4096.0, 8192.0, 16384.0, 32768.0, 65536.0]
            .into_iter()
            .map(|x| point(x, (2.0 * x * sms as f64 / latency).min(copy)))
            .collect();
        // 819 and 1638 GB/s; the rest reach the ceiling, so two points are used.
        let fit = loaded_latency(&points, sms, copy).unwrap();
        assert_eq!(fit.used, 2, "{points:?}");
        assert!((fit.ns - latency).abs() < 1e-9, "{fit:?}");
        assert!(!fit.upper_bound);
        // The median, not the mean: one noisy point does not move it.
        let mut noisy = points.clone();
        noisy.push(point(2048.0, 2.0 * 2048.0 * 100.0 / 5000.0));
        noisy.push(point(3072.0, 2.0 * 3072.0 * 100.0 / 1000.0));
        assert!((loaded_latency(&noisy, sms, copy).unwrap().ns - latency).abs() < 1e-9);
    }

    #[test]
    fn at_the_ceiling_the_fewest_bytes_bound_the_latency() {
        let points = [
            point(65536.0, 2950.0),
            point(16384.0, 2900.0),
            point(32768.0, 2990.0),
        ];
        let fit = loaded_latency(&points, 132, 3000.0).unwrap();
        assert!(fit.upper_bound);
        assert_eq!(fit.used, 1);
        assert!((fit.ns - 2.0 * 16384.0 * 132.0 / 2900.0).abs() < 1e-9, "{fit:?}");
        assert_eq!(loaded_latency(&[], 132, 3000.0), None);
        assert_eq!(loaded_latency(&[point(0.0, 100.0)], 132, 3000.0), None);
    }

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
        // A launch smaller than the GPU: its threads spread over the SMs.
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
        let base = stride_variant(1).unwrap();
        assert_eq!(stride::EXPERIMENT.variants[base].kernel, STRIDE_KERNEL);
        // The stride is the second word: stride_read(n, s, src, dst).
        assert_eq!(param_word(&stride::EXPERIMENT, base), Some(1));
        assert_eq!(Plan { quick: false }.strides().len(), 64);
    }

    #[test]
    fn the_chase_is_one_cycle_through_every_line() {
        let slots = 1000;
        let buf = chase_buffer(slots, 7).unwrap();
        assert_eq!(buf.len(), slots * CHASE_SPACING);
        let mut seen = vec![false; slots];
        let mut j = 0u32;
        for _ in 0..slots {
            assert_eq!(j as usize % CHASE_SPACING, 0, "a hop inside a line");
            assert!(!std::mem::replace(&mut seen[j as usize / CHASE_SPACING], true));
            j = buf[j as usize];
        }
        assert_eq!(j, 0, "back at the start after every slot");
        assert!(seen.iter().all(|&s| s));
        assert_eq!(follow(&buf, 0, slots), 0);
        // Seeded: the same cycle every time, another for another seed; not in order.
        assert_eq!(chase_buffer(slots, 7).unwrap(), buf);
        assert_ne!(chase_buffer(slots, 8).unwrap(), buf);
        assert_ne!(buf[0], CHASE_SPACING as u32);
        assert_eq!(chase_buffer(1, 7).unwrap(), [0u32; CHASE_SPACING]);
        assert_eq!(chase_buffer(0, 7), None);
        assert_eq!(chase_buffer(1 << 27, 7), None, "indices past u32");
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
        assert_eq!(full.steps(), 2 + 1 + 64 + 1 + 8 + 1);
    }

    #[test]
    fn the_summary_has_one_line_per_parameter() {
        let mut p = crate::profile::tests::sample();
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
                ns: 900.0,
                used: 5,
                upper_bound: false,
            },
            chase_bytes: 400 << 20,
            chase_steps: 200_000,
        };
        let text = summary(&p, &notes);
        assert_eq!(text.lines().count(), 6, "{text}");
        for field in [
            "copy_gb_per_s",
            "sm_count",
            "max_threads_per_sm",
            "dram_read_granularity",
            "idle_latency_ns",
            "loaded_latency_ns",
        ] {
            assert!(text.lines().any(|l| l.starts_with(field)), "{field}: {text}");
        }
        assert!(text.contains("70.2 B per read at stride 16"), "{text}");
        assert!(text.contains("strides 1..64"), "{text}");
        assert!(text.contains("median of the 5 of 8 inflight copies"), "{text}");
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
