//! How fast a bandwidth-bound kernel will run, and why: the emulated address stream's
//! counts ([`Traffic`], [`super::emulate::traffic`]), the blocks an SM holds
//! ([`super::residency`]) and a GPU's calibration ([`Profile`]) give the DRAM bytes it moves
//! and the bytes it keeps in flight; Little's law with a latency that rises with the
//! DRAM's load turns those into a rate. docs/model.md states the model in the same words.
//!
//! - **DRAM bytes**: a read fetches whole `dram_read_granularity`-byte segments and a
//!   write whole 32-byte sectors; segments and sectors are counted once over the
//!   emulated window (the L2 serves every later touch), as a ratio to the bytes the
//!   lanes asked for, and that ratio scales the declared useful bytes.
//! - **Bytes in flight** (Little's law): each resident thread keeps the bytes it loads
//!   before its first store in flight; the whole GPU's reads then flow at in-flight
//!   bytes / latency, and writes follow in proportion. The latency rises with the
//!   DRAM's utilisation rho (queueing): L(rho) = L0 + Lq x rho / (1 - rho), so the rate
//!   approaches the copy ceiling without reaching it.
//! - **Waves**: a launch of more blocks than the GPU holds runs in waves; the last,
//!   partial one has fewer bytes in flight, and moves its share of the bytes slower.
//!
//! - **Residency**: blocks per SM = the least that the SM's threads, registers, shared
//!   memory and block slots allow, with the kernel's registers and shared bytes from
//!   ptxas ([`super::residency`]) and the SM's limits from the profile.
//! - **On-chip rates**: the lines that global loads and stores touch and the
//!   shared-memory wavefronts take time at their calibrated rates, and the L1 serves
//!   them one after another, so their times add.
//! - **Scattered requests** (a 64-byte segment per lane): their DRAM bytes at the rate
//!   the pitch sweep's kernel of the same kind moved its own at that pitch and pages
//!   ([`sweep`]), the kernel's other DRAM bytes at the copy ceiling; one DRAM
//!   serves them all, so their times add.
//!
//! The predicted time is the largest of the DRAM's, the L1's and the scattered requests'.
//!
//! What explain sees but the profile has no rate for is named in
//! [`Prediction::not_modelled`].

pub mod sweep;

use serde::Serialize;

use super::emulate::traffic::{GRANULARITIES, Spread, Traffic};
use super::residency::{LaunchSize, Residency, Resources, blocks_per_sm, resident_threads};
use crate::profile::{Profile, RequestKind};

/// Which bound sets the predicted time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// The DRAM bytes at (near) the copy ceiling: a load waits longer in the DRAM's
    /// queue than its base latency ([`bound_at`]).
    DramBytes,
    /// Too few bytes in flight to reach the ceiling: a load's base latency dominates.
    BytesInFlight,
    /// The 128-byte lines global loads touch, at the L1's lookup rate.
    LoadLines,
    /// The lines global stores touch, at the rate the L1 and L2 take line writes.
    StoreLines,
    /// Shared-memory wavefronts (bank conflicts serialise a request into several).
    SharedWavefronts,
    /// The L1 (the SM's load/store pipe): the three above, served one after another.
    L1,
    /// Requests whose lanes each take a DRAM segment of their own, at the pitch sweep's
    /// rates.
    Scattered,
}

impl Bound {
    pub fn describe(self) -> &'static str {
        match self {
            Bound::DramBytes => "DRAM bytes at the copy ceiling",
            Bound::BytesInFlight => "bytes in flight (too few to reach the ceiling)",
            Bound::LoadLines => "lines of global loads (the L1's lookup rate)",
            Bound::StoreLines => "lines of global stores (the L1/L2 line-write rate)",
            Bound::SharedWavefronts => "shared-memory wavefronts (bank conflicts)",
            Bound::L1 => "the L1's lines and wavefronts, one after another",
            Bound::Scattered => {
                "DRAM bytes of scattered requests (a segment per lane), at the pitch sweep's rates"
            }
        }
    }
}

/// One bound's time for the whole launch.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BoundTime {
    pub bound: Bound,
    pub time_ms: f64,
}

/// One group of a launch's scattered requests, its DRAM bytes timed at the pitch
/// sweep's rate (`kind` None: the launch's other DRAM bytes, at the copy ceiling).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ScatteredTime {
    pub kind: Option<RequestKind>,
    pub pitch_bytes: u64,
    /// Warp requests and DRAM bytes over the launch.
    pub requests: f64,
    /// How many of the group's lanes each launched thread runs: above 1 in a
    /// grid-stride loop (the sweep's rate is taken at that many iterations).
    pub iterations: f64,
    pub dram_bytes: f64,
    /// The rate those DRAM bytes move at, GB/s.
    pub dram_gb_per_s: f64,
    pub time_ms: f64,
}

/// A kernel's predicted DRAM traffic, time and bandwidth on one GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The profile's device.
    pub device: String,
    pub dram_read_bytes: f64,
    pub dram_write_bytes: f64,
    /// Of each of those, the bytes of partial writes' sector fills
    /// ([`Traffic::fill_sectors`]).
    pub fill_bytes: f64,
    /// The kernel's registers per thread and static shared bytes per block (ptxas);
    /// `None` when residency counts threads only ([`Prediction::not_modelled`] says why).
    pub resources: Option<Resources>,
    /// Blocks per SM and the limit that sets it.
    pub residency: Residency,
    /// Threads resident on one SM during the launch's full waves (or, in a launch of
    /// less than one wave, as many whole blocks as the grid gives the busiest SM).
    pub resident_threads_per_sm: u32,
    /// DRAM bytes one SM's resident threads keep in flight.
    pub in_flight_bytes_per_sm: f64,
    /// The read + write rate those bytes in flight sustain, GB/s (at most the ceiling).
    pub in_flight_gb_per_s: f64,
    /// Where the bytes come from, launch after launch: the DRAM, or the L2 where it
    /// holds them all ([`Level`]); the rates above are its.
    pub level: Level,
    /// The launch's fixed cost (the profile's `launch_ns`), in `time_ms` beside the
    /// largest bound's time.
    pub launch_ms: f64,
    /// How far the first wave spreads ([`Traffic::wave_spread`]) and the share of
    /// the copy ceiling streams so spread keep ([`sweep::spread_factor`]): the
    /// DRAM-bytes and in-flight rates are over that ceiling. `None` and 1 without a
    /// spread sweep.
    pub spread: Option<Spread>,
    pub spread_share: f64,
    /// The DRAM's utilisation at that rate (rate / that ceiling), and a load's latency
    /// there, ns: L0 + Lq x rho / (1 - rho) (= bytes in flight / rate, Little's law).
    pub dram_utilisation: f64,
    pub latency_ns: f64,
    /// Blocks / (SMs x resident blocks per SM): full waves and the last, partial one.
    pub waves: f64,
    /// The DRAM's time and, where the window has requests the profile has rates for,
    /// the L1's (the sum of `l1_parts`); the larger is the prediction.
    pub bounds: Vec<BoundTime>,
    /// The L1's parts: lines of global loads, lines of global stores and shared
    /// wavefronts, each at its calibrated rate (those the window has).
    pub l1_parts: Vec<BoundTime>,
    /// The scattered requests' groups, whose times add to the `Scattered` bound (none
    /// when the window has none, or the profile no pitch sweep).
    pub scattered_parts: Vec<ScatteredTime>,
    pub time_ms: f64,
    /// Useful bytes over the predicted time, GB/s.
    pub gb_per_s: f64,
    pub pct_of_copy: f64,
    pub bound: Bound,
    /// What the time does not count, one line each: what the window shows that the
    /// profile has no rate for, and residency counted from threads only.
    pub not_modelled: Vec<String>,
}

impl Prediction {
    /// The profile's copy ceiling C, GB/s: GB/s / (% of copy / 100).
    pub fn ceiling_gb_per_s(&self) -> f64 {
        100.0 * self.gb_per_s / self.pct_of_copy
    }
}

/// The read + written rate, GB/s, at which `in_flight` DRAM bytes (over the whole GPU,
/// writes counted with the reads they follow) flow when a load's latency is
/// L(rho) = L0 + Lq x rho / (1 - rho) (the profile's) at utilisation rho = rate / C,
/// against a ceiling C of `ceiling_gb_per_s`: the root in [0, C] of
/// rate = in_flight / L(rate / C),
///
///   rate = C x 2F / (C L0 + F + sqrt((C L0 - F)^2 + 4 C Lq F)),   F = in_flight
///
/// (bytes per ns are GB/s). With Lq = 0 it is min(C, F / L0): the constant latency's
/// hard knee.
pub fn in_flight_rate(in_flight: f64, ceiling_gb_per_s: f64, profile: &Profile) -> f64 {
    rate_at(
        in_flight,
        ceiling_gb_per_s,
        profile.loaded_latency_ns,
        profile.queueing_latency_ns,
    )
}

/// [`in_flight_rate`] with a latency of `l0` + `lq` x rho / (1 - rho): the DRAM's, or
/// the L2's where it holds the working set ([`Level`]).
fn rate_at(in_flight: f64, ceiling_gb_per_s: f64, l0: f64, lq: f64) -> f64 {
    let c = ceiling_gb_per_s;
    if in_flight <= 0.0 {
        return 0.0;
    }
    if !in_flight.is_finite() {
        return c;
    }
    let f = in_flight;
    let root = ((c * l0 - f).powi(2) + 4.0 * c * lq * f).sqrt();
    (c * 2.0 * f / (c * l0 + f + root)).min(c)
}

/// The bound that sets a rate at utilisation `rho`: the DRAM bytes when a load waits
/// longer in the DRAM's queue than its base latency (Lq x rho / (1 - rho) >= L0, i.e.
/// rho >= L0 / (L0 + Lq); with Lq = 0, only at the ceiling), else the bytes in flight.
pub fn bound_at(rho: f64, profile: &Profile) -> Bound {
    bound_with(rho, profile.loaded_latency_ns, profile.queueing_latency_ns)
}

fn bound_with(rho: f64, l0: f64, lq: f64) -> Bound {
    if lq * rho >= l0 * (1.0 - rho) {
        Bound::DramBytes
    } else {
        Bound::BytesInFlight
    }
}

/// The memory a launch's bytes come from, launch after launch: the DRAM, or the L2
/// where they all fit in it (what one launch reads and writes, the next finds there),
/// each with its ceiling and its latency's line.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Level {
    pub from_l2: bool,
    pub ceiling_gb_per_s: f64,
    pub base_latency_ns: f64,
    pub queueing_latency_ns: f64,
}

impl Level {
    /// The level of a launch whose DRAM bytes (read and written, each once) are
    /// `bytes`, on the profile's GPU, with the DRAM's ceiling `dram_ceiling` (the
    /// spread's share of it); and why the L2 is not counted where it would hold them
    /// but the profile has no L2 rates.
    fn of(bytes: f64, dram_ceiling: f64, profile: &Profile) -> (Level, Option<String>) {
        let fits = bytes <= profile.l2_bytes as f64;
        match (&profile.l2_resident, fits) {
            (Some(l2), true) => (
                Level {
                    from_l2: true,
                    ceiling_gb_per_s: l2.copy_gb_per_s,
                    base_latency_ns: l2.loaded_latency_ns,
                    queueing_latency_ns: l2.queueing_latency_ns,
                },
                None,
            ),
            (l2, _) => (
                Level {
                    from_l2: false,
                    ceiling_gb_per_s: dram_ceiling,
                    base_latency_ns: profile.loaded_latency_ns,
                    queueing_latency_ns: profile.queueing_latency_ns,
                },
                (l2.is_none() && fits).then(|| {
                    format!(
                        "L2 residency: the launch's {:.1} MiB fit in the L2, but the profile (schema {}) has no L2-resident rates: timed at the DRAM's; recalibrate",
                        bytes / (1u64 << 20) as f64,
                        profile.schema
                    )
                }),
            ),
        }
    }
}

/// Predicts a launch that moves `useful_bytes` (the declared work) with the window's
/// `traffic`, on the profile's GPU, the kernel using `resources` (or, as `Err`, why
/// they are unknown). None when the window moved nothing.
pub fn predict(
    useful_bytes: u64,
    traffic: &Traffic,
    launch: LaunchSize,
    profile: &Profile,
    resources: std::result::Result<Resources, String>,
) -> Option<Prediction> {
    let asked = traffic.useful_read + traffic.useful_write;
    if asked == 0 || useful_bytes == 0 {
        return None;
    }
    let g = profile.dram_read_granularity;
    // The nearest counted granularity at or below the profile's (it is a multiple of 32).
    let at = GRANULARITIES.iter().rposition(|&c| c <= g).unwrap_or(0);
    let read_ratio = ratio(
        traffic.read_segments[at] * u64::from(GRANULARITIES[at]),
        traffic.useful_read,
    );
    let write_ratio = ratio(traffic.write_sectors * 32, traffic.useful_write);
    // The declared useful bytes split between reads and writes as the window's are.
    let read_share = traffic.useful_read as f64 / asked as f64;
    // A partial write's sector fills: read from DRAM, and written back with the rest.
    let fills = useful_bytes as f64 * (traffic.fill_sectors * 32) as f64 / asked as f64;
    // The loads' reads, which the threads wait for; the fills come with the stores.
    let loaded = useful_bytes as f64 * read_share * read_ratio;
    let dram_read = loaded + fills;
    let dram_write = useful_bytes as f64 * (1.0 - read_share) * write_ratio + fills;
    let dram = dram_read + dram_write;
    // Registers and shared memory count only with the SM's limits to weigh them.
    let known = resources.as_ref().ok().copied().filter(|_| profile.sm.is_some());
    // Streams whose waves spread over many pages keep a share of the ceiling: the DRAM
    // bytes' rates are over it.
    let spread = traffic.wave_spread.filter(|_| profile.spread_sweep.is_some());
    let spread_share = match (&profile.spread_sweep, spread) {
        (Some(sweep), Some(s)) => sweep::spread_factor(sweep, s.read, s.write),
        _ => 1.0,
    };
    let (level, unresident) = Level::of(dram, profile.copy_gb_per_s * spread_share, profile);
    let ceiling = level.ceiling_gb_per_s;
    let (l0, lq) = (level.base_latency_ns, level.queueing_latency_ns);

    // Little's law over the GPU: reads flow at (bytes in flight) / latency; writes keep
    // their proportion to reads. `threads` is the mean resident per SM.
    let sms = f64::from(profile.sm_count.max(1));
    let per_thread = traffic.in_flight_per_thread * read_ratio;
    // (rate, in-flight bytes over the GPU) with `threads` resident per SM.
    let rate_with = |threads: f64| {
        if loaded > 0.0 {
            let in_flight = threads * per_thread * sms * (dram / loaded);
            (rate_at(in_flight, ceiling, l0, lq), in_flight)
        } else {
            (ceiling, 0.0)
        }
    };
    // Waves: full ones at the SMs' full residency, then the rest of the blocks divided
    // among the SMs. Each moves its blocks' share of the DRAM bytes.
    let per_block = launch.threads_per_block.max(1);
    let blocks = launch.blocks.max(1);
    let residency = blocks_per_sm(launch, profile, known);
    let per_sm = residency.blocks;
    let capacity = u64::from(per_sm) * u64::from(profile.sm_count.max(1));
    let (full, rest) = (blocks / capacity, blocks % capacity);
    let full_threads = f64::from(per_sm * per_block);
    let rest_threads = rest as f64 * f64::from(per_block) / sms;
    let (full_rate, rest_rate) = (rate_with(full_threads), rate_with(rest_threads));
    let share = |b: u64| dram * b as f64 / blocks as f64;
    let full_s = if full > 0 {
        share(full * capacity) / (full_rate.0 * 1e9)
    } else {
        0.0
    };
    let rest_s = if rest > 0 {
        share(rest) / (rest_rate.0 * 1e9)
    } else {
        0.0
    };
    let dram_s = full_s + rest_s;
    // The wave that takes longer speaks for the launch.
    let (rate, in_flight) = if full_s >= rest_s { full_rate } else { rest_rate };
    let rho = (rate / ceiling).min(1.0);
    // Little's law again: the latency those bytes in flight see at that rate (at the
    // ceiling of a constant latency, the queue absorbs what exceeds L0).
    let latency_ns = if in_flight > 0.0 { in_flight / rate } else { l0 };

    // The on-chip bounds: the window's counts scaled to the launch as its useful
    // bytes are, over the busy SMs at the profile's per-SM rates.
    let scale = useful_bytes as f64 / asked as f64;
    let busy = sms.min(blocks as f64);
    let on_chip = [
        (
            Bound::LoadLines,
            traffic.global_lines[0],
            profile.load_lines_per_ns_per_sm,
        ),
        (
            Bound::StoreLines,
            traffic.global_lines[1],
            profile.store_lines_per_ns_per_sm,
        ),
        (
            Bound::SharedWavefronts,
            traffic.shared_wavefronts[0] + traffic.shared_wavefronts[1],
            profile.shared_wavefronts_per_ns_per_sm,
        ),
    ];
    let mut bounds = vec![BoundTime {
        bound: bound_with(rho, l0, lq),
        time_ms: dram_s * 1e3,
    }];
    let mut l1_parts = Vec::new();
    for (bound, count, per_sm_ns) in on_chip {
        if let (Some(r), true) = (per_sm_ns, count > 0) {
            l1_parts.push(BoundTime {
                bound,
                time_ms: count as f64 * scale / (busy * r) / 1e6,
            });
        }
    }
    // One pipe serves them all: each rate was measured with the L1 doing nothing
    // else, and a kernel's requests of each kind queue behind the others'.
    if !l1_parts.is_empty() {
        bounds.push(BoundTime {
            bound: Bound::L1,
            time_ms: l1_parts.iter().map(|b| b.time_ms).sum(),
        });
    }
    // Scattered requests' DRAM bytes at the sweep's rates, the rest at the ceiling:
    // one DRAM serves them one after another.
    let mut scattered_parts = Vec::new();
    if let Some(sweep) = &profile.pitch_sweep {
        let c = profile.copy_gb_per_s;
        let threads = (blocks * u64::from(per_block)) as f64;
        for s in &traffic.scattered {
            let pages = traffic.scattered_pages;
            // The launch's lanes of the group per launched thread.
            let iterations = s.lanes as f64 * scale / threads;
            let rate = sweep::dram_gb_per_s(sweep, s.kind, s.pitch_bytes, pages, iterations, c);
            if let Some(rate) = rate {
                let bytes = s.dram_bytes as f64 * scale;
                scattered_parts.push(ScatteredTime {
                    kind: Some(s.kind),
                    pitch_bytes: s.pitch_bytes,
                    requests: s.requests as f64 * scale,
                    iterations,
                    dram_bytes: bytes,
                    dram_gb_per_s: rate,
                    time_ms: bytes / rate / 1e6,
                });
            }
        }
        let rest = dram - scattered_parts.iter().map(|s| s.dram_bytes).sum::<f64>();
        if !scattered_parts.is_empty() && rest > 0.0 {
            scattered_parts.push(ScatteredTime {
                kind: None,
                pitch_bytes: 0,
                requests: 0.0,
                iterations: 0.0,
                dram_bytes: rest,
                dram_gb_per_s: c,
                time_ms: rest / c / 1e6,
            });
        }
    }
    if !scattered_parts.is_empty() {
        bounds.push(BoundTime {
            bound: Bound::Scattered,
            time_ms: scattered_parts.iter().map(|s| s.time_ms).sum(),
        });
    }
    // The largest time sets the prediction; the DRAM names it if they are equal.
    let top = bounds
        .iter()
        .copied()
        .reduce(|a, b| if b.time_ms > a.time_ms { b } else { a })
        .unwrap_or(bounds[0]);
    // Every launch costs its fixed time besides its work.
    let launch_ms = profile.launch_ns.unwrap_or(0.0) * 1e-6;
    let time_ms = top.time_ms + launch_ms;
    let gb_per_s = useful_bytes as f64 / (time_ms / 1e3) / 1e9;
    let resident = resident_threads(launch, profile, known);
    let mut caveats = not_modelled(traffic, profile);
    caveats.extend(unresident);
    if profile.launch_ns.is_none() {
        caveats.push(format!(
            "the launch's fixed cost: the profile (schema {}) has no launch_ns; recalibrate",
            profile.schema
        ));
    }
    match (&profile.sm, &resources) {
        (None, _) => caveats.push(format!(
            "residency counts threads only: the profile (schema {}) has no register or shared-memory limits; recalibrate",
            profile.schema
        )),
        (Some(_), Err(why)) => caveats.push(format!("residency counts threads only: {why}")),
        _ => {}
    }
    Some(Prediction {
        device: profile.device.clone(),
        dram_read_bytes: dram_read,
        dram_write_bytes: dram_write,
        fill_bytes: fills,
        resources: known,
        residency,
        resident_threads_per_sm: resident,
        in_flight_bytes_per_sm: f64::from(resident) * per_thread,
        in_flight_gb_per_s: rate,
        level,
        launch_ms,
        spread,
        spread_share,
        dram_utilisation: rho,
        latency_ns,
        waves: blocks as f64 / capacity as f64,
        bounds,
        l1_parts,
        scattered_parts,
        time_ms,
        gb_per_s,
        pct_of_copy: 100.0 * gb_per_s / profile.copy_gb_per_s,
        bound: top.bound,
        not_modelled: caveats,
    })
}

impl Prediction {
    /// Whether a lower DRAM ceiling, down to `least` of it, could change the predicted
    /// time: the DRAM-bytes time over `least` (a rate falls by at most the ceiling's
    /// factor) against the largest other bound's.
    pub fn dram_ceiling_matters(&self, least: f64) -> bool {
        let others = self.bounds[1..].iter().map(|b| b.time_ms).fold(0.0, f64::max);
        self.bounds[0].time_ms / least.max(f64::MIN_POSITIVE) > others
    }
}

/// A request fetching this many times the sectors its useful bytes fill is flagged
/// when the profile has no rate for the lines it touches.
const SCATTERED: f64 = 4.0;

/// What the window shows that the profile has no rate for (a schema-2 profile: bank
/// conflicts, requests of many sectors; schema 3: scattered requests).
pub fn not_modelled(t: &Traffic, profile: &Profile) -> Vec<String> {
    let mut out = Vec::new();
    let uncalibrated = |field: &str| format!("not calibrated: the profile has no {field}; recalibrate");
    if profile.pitch_sweep.is_none() && !t.scattered.is_empty() {
        out.push(format!(
            "{} scattered requests, a DRAM segment per lane ({})",
            t.scattered.iter().map(|s| s.requests).sum::<u64>(),
            uncalibrated("pitch_sweep")
        ));
    }
    for (d, op) in ["load", "store"].into_iter().enumerate() {
        let requests = t.shared_requests[d];
        if requests > 0
            && t.shared_wavefronts[d] > requests
            && profile.shared_wavefronts_per_ns_per_sm.is_none()
        {
            out.push(format!(
                "shared-memory bank conflicts, {:.1} wavefronts per shared {op} ({})",
                t.shared_wavefronts[d] as f64 / requests as f64,
                uncalibrated("shared_wavefronts_per_ns_per_sm")
            ));
        }
        let useful = [t.useful_read, t.useful_write][d];
        let rate = [
            profile.load_lines_per_ns_per_sm,
            profile.store_lines_per_ns_per_sm,
        ][d];
        let field = ["load_lines_per_ns_per_sm", "store_lines_per_ns_per_sm"][d];
        let (requests, sectors) = (t.global_requests[d], t.global_sectors[d]);
        if rate.is_none() && requests > 0 && useful > 0 && (sectors * 32) as f64 > SCATTERED * useful as f64 {
            out.push(format!(
                "{:.1} sectors per global {op} request, {:.0}x the bytes used ({})",
                sectors as f64 / requests as f64,
                (sectors * 32) as f64 / useful as f64,
                uncalibrated(field)
            ));
        }
    }
    out
}

fn ratio(dram: u64, useful: u64) -> f64 {
    if useful == 0 {
        0.0
    } else {
        dram as f64 / useful as f64
    }
}

#[cfg(test)]
mod tests;
