//! How fast a matrix product will run, and what bounds it: the hot loop's instruction
//! mix ([`mix`]: read from the kernel's SASS, or its PTX), the emulated window's
//! shared wavefronts, lines and sectors ([`super::emulate::traffic`]), the warps an SM holds
//! ([`super::residency`]) and a GPU's calibrated rates ([`Profile`]). docs/model.md
//! ("Products") states the same model in the same words.
//!
//! - **Demands**: one warp's iteration of the hot loop asks each unit of its
//!   scheduler's quarter of the SM for time: the issue slots its instructions take,
//!   the FP32 pipe its FFMAs, the tensor pipe its `mma.sync`s or its `wgmma` FLOPs (TF32
//!   and 16-bit ones each at their own rate, their times added), the
//!   L1 its shared wavefronts and global load lines (served one after another, as for
//!   the bandwidth kernels) and the bytes its loads' misses bring into it, the L2 its
//!   sectors (the copy engine's at the rates the L2 serves it: its re-reads of tiles
//!   at the rate for lines several SMs read at once) and the DRAM its share of the
//!   bytes the product must move once. Each is the count over the calibrated rate.
//! - **Delay**: after each barrier of the iteration, a warp's first shared load waits
//!   its whole latency with nothing of its own to overlap.
//! - **Warps hide latency**: the warps each scheduler holds take turns (those that run
//!   the hot loop: a warp-specialised block's consumers, not its producer): a warp issues
//!   a request, then waits for the unit to serve it while the others issue theirs. The
//!   units work in parallel, so each unit with the issue slots is a closed queueing
//!   network of its own, solved by mean value analysis ([`queue`]); the slowest
//!   of them sets the iterations per ns. Few warps leave a unit idle while each waits;
//!   many run at that unit's own pace. The FP32 pipe takes FFMAs as they issue (it
//!   caps the pace, no warp waits on it); a block that drains its `wgmma`s at a block
//!   barrier each iteration is one customer of the tensor pipe ([`pace`]).
//! - **Tiles on the edge**: the iterations are those of the FLOPs the blocks compute
//!   (the emulator's count of their tensor-core instructions, whole tiles), the rate
//!   quoted in the declared FLOPs ([`LaunchFlops`]).
//! - **Waves**: the busiest SM runs its ceil(blocks / SMs) blocks, as many at once as
//!   residency allows, the last round with fewer warps.
//! - **Epilogue**: a block stores its tile of C after its loop (its threads, or the
//!   copy engine); the blocks of a round store theirs together, their lines through
//!   the SM's port to the L2 with no loop to overlap, the busy SMs sharing the L2's
//!   write rate (each up to its port) where a round leaves SMs idle.
//! - **Launch**: launch after launch, the next launch's setup may hide under this
//!   one's work: a kernel that outlasts it pays the calibrated gap between kernels, a
//!   shorter one the whole launch ([`super::launch`]).
//!
//! - **Power**: the launch's counted work (FFMAs, MMAs, `wgmma` FLOPs, L2 and DRAM
//!   bytes) takes the profile's energy per unit; if spending it at that pace would draw
//!   more than the board's limit above its base, the GPU lowers its clock (and with it
//!   its voltage) until it does not: power goes as the clock's cube
//!   ([`clock_under_limit`]), and the time grows as the clock falls.
//!
//! The bound is the unit whose network is slowest, or the warps ("latency") when they
//! keep that unit busy less than [`BUSY_ENOUGH`] of the time (a "drain" where that is
//! the tensor pipe of a block that empties it at a barrier each iteration), or the
//! power limit where it slows the launch more than that unit's idle time does.

pub mod fixup;
pub mod mix;
pub mod queue;
mod step;
pub mod tensor;
pub mod waves;

use serde::Serialize;

use super::emulate::analyse::{Direction, Memory};
use super::residency::{LaunchSize, Residency, Resources, blocks_per_sm};
use crate::profile::{ComputeRates, PowerRates, Profile};
use mix::{MixSource, instruction_mix};

pub use step::{Issued, LaunchFlops, Step, Window};
pub use waves::Waves;

/// Warp schedulers (SM sub-partitions) per SM: four on every GPU from sm_70 to sm_90.
/// Each issues for its own warps and has a quarter of the SM's pipes.
pub const SCHEDULERS_PER_SM: f64 = 4.0;

/// Bytes of a global line: what a store line moves through an SM's port.
const LINE_BYTES: f64 = 128.0;

/// Below this share of the time busy, the busiest unit is not what bounds a kernel:
/// its warps are too few to keep it fed.
pub const BUSY_ENOUGH: f64 = 0.8;

/// `kernel`'s prediction for a launch of `flops` FLOPs that must move `bytes`: its hot
/// loop's instruction mix ([`mix`]), the emulated `window`'s traffic per FLOP,
/// its residency ([`super::residency`]), on the profile's GPU.
pub fn of_kernel(
    kernel: &str,
    flops: u64,
    bytes: u64,
    window: &Window,
    size: LaunchSize,
    profile: &Profile,
) -> Result<ProductPrediction, String> {
    let mix = instruction_mix(kernel, profile)?;
    let mut issued = Issued::of(&mix);
    // Where the hot loop is the inner k loop, the loop around it (the k tile's loads,
    // stores and barriers) runs once per some of its iterations: as many times as the
    // window's requests of a kind over the loop's instructions of that kind.
    if let Some(outer) = &mix.outer {
        let executions = |space: Memory, op: Direction| {
            window
                .sites
                .iter()
                .filter(|s| s.space == space && s.op == op && !s.bulk)
                .fold(0.0, |sum, s| sum + s.executions as f64)
        };
        let trips = if outer.shared_stores > 0 {
            executions(Memory::Shared, Direction::Store) / f64::from(outer.shared_stores)
        } else if outer.global_loads > 0 {
            executions(Memory::Global, Direction::Load) / f64::from(outer.global_loads)
        } else {
            0.0
        };
        let iterations = window.flops / mix.flops;
        if trips > 0.0 && iterations > 0.0 {
            issued.add_outer(&Issued::of(outer), trips / iterations);
        }
    }
    let step = Step::of(issued, window, bytes as f64, flops as f64);
    let resources = super::residency::resources(kernel, profile).ok();
    let source = match mix.source {
        MixSource::Sass => "SASS",
        MixSource::Ptx => "PTX",
    };
    predict(
        LaunchFlops {
            declared: flops as f64,
            computed: window.launch_flops,
            busiest_block: window.busiest_block_flops,
            split: window.split,
            computing_warps: window.tensor_warps_per_block,
        },
        step,
        source,
        size,
        profile,
        resources,
    )
}

/// A unit of the SM that an iteration waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    IssueSlots,
    Fp32Pipe,
    TensorMma,
    TensorWgmma,
    /// Shared wavefronts and global lines, one after another.
    L1,
    L2,
    Dram,
}

impl Unit {
    pub fn describe(self) -> &'static str {
        match self {
            Unit::IssueSlots => "issue slots",
            Unit::Fp32Pipe => "the FP32 pipe (FFMA)",
            Unit::TensorMma => "the tensor pipe (mma.sync)",
            Unit::TensorWgmma => "the tensor pipe (wgmma)",
            Unit::L1 => "the L1: shared wavefronts, global lines and misses",
            Unit::L2 => "L2 bytes",
            Unit::Dram => "DRAM bytes",
        }
    }
}

/// What sets a product's time (in JSON: the unit's name, as [`Unit`]'s, or "latency").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductBound {
    Unit(Unit),
    /// Too few warps to keep the busiest unit busy.
    Latency,
    /// The tensor pipe drains each iteration: the block waits for its last `wgmma` and
    /// meets at a barrier before it issues the next.
    Drain,
    /// The board's power limit: the work at the units' pace would draw more.
    Power,
}

impl Serialize for ProductBound {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProductBound::Unit(u) => u.serialize(serializer),
            ProductBound::Latency => serializer.serialize_str("latency"),
            ProductBound::Drain => serializer.serialize_str("drain"),
            ProductBound::Power => serializer.serialize_str("power"),
        }
    }
}

impl ProductBound {
    pub fn describe(self) -> String {
        match self {
            ProductBound::Unit(u) => u.describe().to_string(),
            ProductBound::Latency => "latency: too few warps to keep any unit busy".to_string(),
            ProductBound::Drain => {
                "drain: the tensor pipe empties at a block barrier each k step".to_string()
            }
            ProductBound::Power => "power: the board's limit lowers the clock".to_string(),
        }
    }
}

/// One unit's demand per warp iteration and how busy the full rounds keep it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UnitLoad {
    pub unit: Unit,
    pub demand_ns: f64,
    pub busy: f64,
}

/// A product's predicted time and rate on one GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProductPrediction {
    pub device: String,
    /// Which code the instruction mix was read from: "SASS" or "PTX".
    pub mix_source: String,
    pub step: Step,
    pub resources: Option<Resources>,
    pub residency: Residency,
    /// Warps per scheduler that run the hot loop, in the full rounds.
    pub warps_per_scheduler: f64,
    /// How the blocks run: the busiest SM's blocks and rounds, the SMs busy.
    pub waves: Waves,
    pub delay_ns: f64,
    /// A block's stores after its loop (its threads' and the copy engine's lines), at
    /// the calibrated clock, in the full rounds: each round adds its blocks'
    /// ([`predict`]).
    pub epilogue_ns: f64,
    /// What a stream-k launch's owners of split tiles wait for their contributors'
    /// partial tiles beyond the loop's even pace, at the calibrated clock ([`fixup`]).
    pub fixup_ns: f64,
    /// The rounds' waits for their first tiles, and what the launch adds to the
    /// kernel's work launch after launch ([`super::launch::interval_ns`]): in the
    /// time beside the rounds'.
    pub fill_ns: f64,
    pub launch_ns: f64,
    /// Every unit the iteration asks for, busiest first.
    pub units: Vec<UnitLoad>,
    pub time_ms: f64,
    /// GFLOP/s of the declared FLOPs (2 m n k).
    pub gflop_per_s: f64,
    /// The FLOPs the blocks compute over the declared ones: above 1 where tiles on the
    /// matrix's edge compute zeros.
    pub computed_share: f64,
    pub bound: ProductBound,
    /// Watts the board would draw at the units' pace while the most blocks run at once,
    /// and the limit it enforces (None without the profile's power).
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    /// The clock as a share of the one the rates were measured at: below 1 where the
    /// power limit lowers it.
    pub clock_share: f64,
    /// What the time does not count, one line each.
    pub not_modelled: Vec<String>,
}

/// Predicts a launch of `work` whose warps' iterations are `step`, or says why it
/// cannot (a profile without compute rates).
pub fn predict(
    work: impl Into<LaunchFlops>,
    step: Step,
    mix_source: &str,
    launch: LaunchSize,
    profile: &Profile,
    resources: Option<Resources>,
) -> Result<ProductPrediction, String> {
    let rates = profile.compute.as_ref().ok_or_else(|| {
        format!(
            "the profile of {} has no compute rates (written before schema 6): run `coalesce calibrate` again to predict products",
            profile.device
        )
    })?;
    let work = work.into();
    let flops = work.computed;
    if !(flops > 0.0 && work.declared > 0.0 && step.flops > 0.0) {
        return Err("the hot loop does no arithmetic the model counts".into());
    }
    let sms = f64::from(profile.sm_count.max(1));
    let quarter = |per_sm: f64| per_sm / SCHEDULERS_PER_SM;
    let mut not_modelled = Vec::new();
    let mut units = vec![
        (
            Unit::IssueSlots,
            step.instructions / quarter(rates.issue_per_ns_per_sm),
        ),
        (Unit::Fp32Pipe, step.fp32 / quarter(rates.fma_per_ns_per_sm)),
    ];
    // TF32 and 16-bit wgmmas share the tensor pipe, each at its own rate.
    units.extend(tensor::demands(&step, rates, &mut not_modelled));
    let mut l1 = 0.0;
    for (count, rate, what) in [
        (
            step.shared_wavefronts,
            profile.shared_wavefronts_per_ns_per_sm,
            "shared wavefronts",
        ),
        (
            step.load_lines,
            profile.load_lines_per_ns_per_sm,
            "lines of global loads",
        ),
    ] {
        match rate {
            Some(r) => l1 += count / quarter(r),
            None if count > 0.0 => not_modelled.push(format!("{what}: not calibrated")),
            None => {}
        }
    }
    // A load takes the L1 at least one request's time: loads of one line each run at
    // the request rate, not the (faster) line rate of many-line requests.
    if let Some(lines) = profile.load_lines_per_ns_per_sm {
        let by_lines = step.load_lines / quarter(lines);
        let by_requests = step.load_requests / quarter(rates.l1_requests_per_ns_per_sm);
        l1 += (by_requests - by_lines).max(0.0);
    }
    // The L2 and the DRAM serve the whole GPU: each busy SM takes its share of their
    // rate, and no more than the most one SM's port to the L2 was measured to take
    // (a launch that leaves SMs idle gives the others more).
    let port = l2_port_gb_per_s(rates) / sms;
    let share_of = |gb_per_s: f64, busy: u64| quarter((gb_per_s / busy.max(1) as f64).min(port));
    // The copy engine's bytes at the rates the L2 serves it, where measured: what the
    // product must read once (its DRAM bytes) at the rate of lines one SM reads, and
    // its re-reads (a tile read by every block of its row or column of tiles, the
    // blocks at about the same step) at the rate of lines several SMs read at once.
    let bulk_rate = rates.l2_bulk_read_gb_per_s.unwrap_or(rates.l2_read_gb_per_s);
    let shared_rate = rates.l2_bulk_shared_gb_per_s.unwrap_or(bulk_rate);
    let once = step.dram_bytes.min(step.l2_bulk_bytes);
    let lsu_bytes = step.l2_bytes - step.l2_bulk_bytes;
    let units_with = |busy: u64| {
        let bulk =
            once / share_of(bulk_rate, busy) + (step.l2_bulk_bytes - once) / share_of(shared_rate, busy);
        let mut all = units.clone();
        // The L1 takes its misses at the rate the L2 fills them, in turn with its
        // wavefronts and lines (docs/model.md: the cost Nsight Compute shows as the
        // L1's queue backing up): each busy SM's share of the L2's read rate, up to
        // its port, as the L2's own demand below.
        all.push((
            Unit::L1,
            l1 + step.l1_miss_bytes / share_of(rates.l2_read_gb_per_s, busy),
        ));
        // Stores issued beside the MMAs take the L2 in the loop's time, at the rate
        // the SMs store at.
        let beside = profile.store_lines_per_ns_per_sm.map_or(0.0, |r| {
            step.store_lines_beside_mma * LINE_BYTES / share_of(r * LINE_BYTES * sms, busy)
        });
        all.push((
            Unit::L2,
            lsu_bytes / share_of(rates.l2_read_gb_per_s, busy) + bulk + beside,
        ));
        all.push((
            Unit::Dram,
            step.dram_bytes / share_of(profile.copy_gb_per_s, busy),
        ));
        all.retain(|(_, d)| *d > 0.0);
        all
    };
    let delay_ns = step.barriers * rates.shared_latency_ns;

    let known = resources.filter(|_| profile.sm.is_some());
    let residency = blocks_per_sm(launch, profile, known);
    let blocks = launch.blocks.max(1);
    // The warps that run the hot loop: a warp-specialised block's consumers, where its
    // producer's loop only issues copies; every warp elsewhere.
    let all_warps = f64::from(launch.threads_per_block.div_ceil(32).max(1));
    let warps_per_block = work
        .computing_warps
        .map_or(all_warps, |w| w.clamp(1.0, all_warps));
    // A block's iterations: its even share of the launch's, or the busiest block's
    // where some compute more (a persistent kernel's blocks walk whole tiles).
    let even = flops / step.flops / blocks as f64;
    let per_block_iterations = work.busiest_block.map_or(even, |b| (b / step.flops).max(even));
    let waves = Waves::of(launch, residency.blocks, profile.sm_count);
    let per_sm = waves.per_sm;
    let busiest = waves.busiest;
    let (full, last) = waves.full_and_last();
    // One round of `n` blocks on an SM: each scheduler runs its quarter of their warps'
    // iterations at the rate its quarter of their warps sustains.
    let per_scheduler = warps_per_block / SCHEDULERS_PER_SM;
    // Where every warp waits for all its wgmmas and then meets the block's others at a
    // barrier, the tensor pipe drains each iteration and no warp of the block issues
    // the next until all have done the rest: for the tensor pipe, the block moves as
    // one.
    let drains = step.block_barriers > 0.0 && step.wgmma_waits_all > 0.0;
    let together = drains.then_some(per_scheduler);
    let rate = |n: u64, busy: u64| pace(&units_with(busy), delay_ns, n as f64 * per_scheduler, together);
    // A block stores its tile of C after its loop, its threads' lines or the copy
    // engine's: the blocks of a round store theirs together, through their SM's port
    // to the L2, with no loop of theirs left to overlap (but the lines it stores
    // while its MMAs run, which the loop's L2 demand holds). The calibrated rate is each
    // SM's share with every SM storing: in a round that leaves SMs idle the busy ones
    // share the same L2 write rate, each up to its port (as their loads do).
    let epilogue_lines = (step.store_lines + step.bulk_store_lines - step.store_lines_beside_mma).max(0.0)
        * per_block_iterations;
    if profile.store_lines_per_ns_per_sm.is_none() && epilogue_lines > 0.0 {
        not_modelled.push("lines of global stores: not calibrated".into());
    }
    let store_ns = |lines: f64, busy: u64| match profile.store_lines_per_ns_per_sm {
        Some(r) => lines / (r * sms / busy.max(1) as f64).min((port / LINE_BYTES).max(r)),
        None => 0.0,
    };
    let epilogue_at = |busy: u64| store_ns(epilogue_lines, busy);
    let epilogue_ns = epilogue_at(waves.busy_sms);
    let round_ns = |n: u64, busy: u64| {
        let (x, _) = rate(n, busy);
        n as f64 * per_block_iterations / SCHEDULERS_PER_SM / x + n as f64 * epilogue_at(busy)
    };
    // A stream-k launch's split tiles: what the owners' waits for their contributors'
    // partials add to the loop's even pace ([`fixup`]), its k-blocks at the pace of the
    // round they run in.
    let fixup_ns = work.split.map_or(0.0, |s| {
        let (n, busy) = if full > 0 {
            (per_sm, waves.busy_sms)
        } else {
            (last, waves.last_busy_sms)
        };
        let (x, _) = rate(n, busy);
        let loop_ns = n as f64 * per_block_iterations / SCHEDULERS_PER_SM / x;
        let read_rate = |busy: u64| (rates.l2_read_gb_per_s / busy.max(1) as f64).min(port);
        s.added_ns(
            loop_ns,
            |bytes, busy| store_ns(bytes / LINE_BYTES, busy),
            read_rate,
            profile,
        )
    });
    let time_ns = full as f64 * round_ns(per_sm, waves.busy_sms)
        + if last > 0 {
            round_ns(last, waves.last_busy_sms)
        } else {
            0.0
        }
        + fixup_ns;
    let warps_per_scheduler = per_sm.min(busiest) as f64 * warps_per_block / SCHEDULERS_PER_SM;
    let (x, pacing) = rate(per_sm.min(busiest), waves.busy_sms);
    let units = units_with(waves.busy_sms);
    let mut loads: Vec<UnitLoad> = units
        .iter()
        .map(|&(unit, demand_ns)| UnitLoad {
            unit,
            demand_ns,
            busy: queue::utilisation(demand_ns, x),
        })
        .collect();
    loads.sort_by(|a, b| b.busy.total_cmp(&a.busy));
    // The slowest network's busier member: the unit, or the issue slots it shares.
    let (unit, busy) = units
        .iter()
        .filter(|u| u.0 == pacing || u.0 == Unit::IssueSlots)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or((pacing, 0.0), |u| (u.0, queue::utilisation(u.1, x)));
    let mut bound = if busy >= BUSY_ENOUGH {
        ProductBound::Unit(unit)
    } else if together.is_some() && pacing == Unit::TensorWgmma {
        ProductBound::Drain
    } else {
        ProductBound::Latency
    };
    // The power while the most blocks run at once (a full round on every SM, or the
    // whole grid if it is smaller): the clock the limit sets then stays through a last,
    // partial round.
    let at_once = blocks.min(per_sm * u64::from(profile.sm_count.max(1)));
    let busiest_round_ns = round_ns(per_sm.min(busiest), waves.busy_sms);
    let power = profile.power.as_ref().map(|p| {
        let joules = energy_j(flops, &step, p) * at_once as f64 / blocks as f64;
        (p, joules / (busiest_round_ns * 1e-9))
    });
    let power_w = power.map(|(p, drawn)| p.base_w + drawn);
    let clock_share = match power {
        Some((p, drawn)) if p.base_w + drawn > p.limit_w => {
            let clock = clock_under_limit(drawn, p.limit_w - p.base_w);
            // The larger loss names the bound: the clock's, or the busiest unit's idle
            // share (its warps too few, or a drain).
            if clock < busy {
                bound = ProductBound::Power;
            }
            clock
        }
        _ => 1.0,
    };
    // Each round's blocks wait for their first tiles before any arithmetic, with
    // nothing of theirs to overlap: one load's latency a round (the L2's where it holds
    // the operands launch after launch, else an idle DRAM load's).
    let product_bytes = step.dram_bytes * flops / step.flops;
    let fill_latency_ns = match &profile.l2_resident {
        Some(l2) if product_bytes <= profile.l2_bytes as f64 => l2.loaded_latency_ns,
        _ => profile.idle_latency_ns,
    };
    let fill_ns = waves.rounds as f64 * fill_latency_ns;
    // `run` times launch after launch: the next one's setup may hide under this
    // one's work, and what is left of the launch is its gap, or the launch's floor.
    let work_ns = time_ns / clock_share + fill_ns;
    let time_ns = super::launch::interval_ns(work_ns, profile, &mut not_modelled);
    let launch_ns = time_ns - work_ns;
    if power.is_none() {
        not_modelled.push("power: the profile has no power limit or energies (schema 7)".into());
    } else if step.wgmma_16bit_flops > 0.0 && power.is_some_and(|(p, _)| p.wgmma_16bit_pj_per_flop.is_none())
    {
        not_modelled
            .push("power: the profile has no energy of a 16-bit wgmma FLOP; its draw is left out".into());
    }
    if known.is_none() {
        not_modelled.push("registers and shared memory: residency counts threads only".into());
    }
    Ok(ProductPrediction {
        device: profile.device.clone(),
        mix_source: mix_source.to_string(),
        step,
        resources: known,
        residency,
        warps_per_scheduler,
        waves,
        delay_ns,
        epilogue_ns,
        fixup_ns,
        fill_ns,
        launch_ns,
        units: loads,
        time_ms: time_ns * 1e-6,
        gflop_per_s: work.declared / time_ns,
        computed_share: work.computed / work.declared,
        bound,
        power_w,
        power_limit_w: profile.power.as_ref().map(|p| p.limit_w),
        clock_share,
        not_modelled,
    })
}

/// The clock, as a share of the one the rates were measured at, at which work that
/// draws `drawn` watts above the base at that clock draws `allowed`: dynamic power is
/// the clock times the square of the voltage, and over the range a GPU's clock moves
/// its voltage moves in proportion, so the power goes as the clock's cube.
pub fn clock_under_limit(drawn: f64, allowed: f64) -> f64 {
    (allowed / drawn).cbrt().min(1.0)
}

/// Joules a launch of `flops` FLOPs whose warps' iterations are `step` takes above the
/// board's base: each counted unit of work at the profile's energy.
pub fn energy_j(flops: f64, step: &Step, power: &PowerRates) -> f64 {
    let iterations = flops / step.flops;
    let pj = step.fp32 * power.ffma_pj
        + step.mma_sync * power.mma_tf32_pj.unwrap_or(0.0)
        + (step.wgmma_flops - step.wgmma_16bit_flops) * power.wgmma_tf32_pj_per_flop.unwrap_or(0.0)
        + step.wgmma_16bit_flops * power.wgmma_16bit_pj_per_flop.unwrap_or(0.0)
        + (step.l2_bytes - step.l2_bulk_bytes) * power.l2_pj_per_byte
        + step.l2_bulk_bytes * power.l2_bulk_pj_per_byte.unwrap_or(power.l2_pj_per_byte)
        + step.dram_bytes * power.dram_pj_per_byte;
    iterations * pj * 1e-12
}

/// Iterations per ns one scheduler's `warps` complete, and the unit that sets it.
///
/// The units work in parallel, each on other warps' requests, and a warp waits on
/// one of them at a time after issuing its request: so each unit with the issue slots
/// is a closed network of its own ([`queue::throughput`]), and the slowest network
/// sets the pace. Two units are not waited on that way:
/// - the FP32 pipe takes a warp's FFMAs as it issues them (the warp waits on it only
///   for a result, which no rung's independent chains do): it caps the pace at its
///   rate and adds no wait;
/// - the tensor pipe's `wgmma`s, where a block's warps drain it and meet at a barrier
///   each iteration (`together`: the scheduler's warps of one block): the customers
///   are the blocks, each asking for its warps' demands in turn.
fn pace(units: &[(Unit, f64)], delay_ns: f64, warps: f64, together: Option<f64>) -> (f64, Unit) {
    let issue = units
        .iter()
        .find(|u| u.0 == Unit::IssueSlots)
        .map_or(0.0, |u| u.1);
    units
        .iter()
        .map(|&(unit, demand)| {
            let x = match (unit, together) {
                (Unit::IssueSlots, _) => queue::throughput(&[issue], delay_ns, warps),
                (Unit::Fp32Pipe, _) => queue::throughput(&[issue], delay_ns, warps).min(1.0 / demand),
                (Unit::TensorWgmma, Some(g)) => {
                    g * queue::throughput(&[g * issue, g * demand], delay_ns, warps / g)
                }
                _ => queue::throughput(&[issue, demand], delay_ns, warps),
            };
            (x, unit)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap_or((0.0, Unit::IssueSlots))
}

/// The most the whole GPU's L2 was measured to serve, GB/s (the fastest of its read
/// rates): divided among the SMs, the most one SM's port takes.
pub(crate) fn l2_port_gb_per_s(rates: &ComputeRates) -> f64 {
    [
        Some(rates.l2_read_gb_per_s),
        rates.l2_bulk_read_gb_per_s,
        rates.l2_bulk_shared_gb_per_s,
    ]
    .into_iter()
    .flatten()
    .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests;
