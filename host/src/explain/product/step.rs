//! What one warp's iteration of a product's hot loop does and asks for ([`Step`]):
//! its instructions as read from the kernel's code ([`Issued`]), and the emulated
//! window's traffic per FLOP ([`Window`]); and the launch's FLOPs ([`LaunchFlops`]).

use serde::Serialize;

use super::fixup::Split;
use super::mix::InstructionMix;
use crate::explain::emulate::SCRATCH;
use crate::explain::emulate::analyse::{Direction, Memory, SiteStats};
use crate::explain::emulate::traffic::Traffic;

/// What one warp's iteration of the hot loop does and asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Step {
    /// FLOPs of the product the iteration computes.
    pub flops: f64,
    /// Warp instructions issued, and of them: FP32 pipe (FFMA, FADD, FMUL),
    /// `mma.sync` (m16n8k8 TF32) and barriers.
    pub instructions: f64,
    pub fp32: f64,
    pub mma_sync: f64,
    pub barriers: f64,
    /// Block barriers in the hot loop itself (not its share of the loop around it), and
    /// its waits for every `wgmma` the warp issued.
    pub block_barriers: f64,
    pub wgmma_waits_all: f64,
    /// FLOPs of the `wgmma`s the warp issues (its quarter of its warpgroup's), of
    /// them those on 16-bit operands (BF16, FP16), and of those the ones whose N is 128.
    pub wgmma_flops: f64,
    pub wgmma_16bit_flops: f64,
    pub wgmma_16bit_n128_flops: f64,
    /// Shared-memory wavefronts, warp requests of global loads and their 128-byte lines,
    /// and lines of global stores (the block's epilogue, its share per iteration).
    pub shared_wavefronts: f64,
    pub load_requests: f64,
    pub load_lines: f64,
    pub store_lines: f64,
    /// Lines the copy engine stores (TMA stores of C staged in shared memory), the
    /// block's share per iteration as for `store_lines`.
    pub bulk_store_lines: f64,
    /// Of those store lines (both kinds), the ones issued while the warp's MMAs were in
    /// flight: stores that run beside the tensor cores, not after the loop.
    pub store_lines_beside_mma: f64,
    /// Bytes the L2 serves (distinct sectors each block reads) and the DRAM moves.
    pub l2_bytes: f64,
    pub dram_bytes: f64,
    /// Of the L2's bytes, those the copy engine (TMA) fetches: served at its own rate.
    pub l2_bulk_bytes: f64,
    /// Of the L2's bytes, those of loads that allocate in the L1 on their way (`ld.global`,
    /// 4-byte `cp.async.ca`): not the copies that bypass it (16-byte `cp.async.cg`, TMA).
    pub l1_miss_bytes: f64,
}

/// What one warp's iteration of the hot loop issues, as read from the kernel's code.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Issued {
    pub flops: f64,
    pub instructions: f64,
    pub fp32: f64,
    pub mma_sync: f64,
    pub wgmma_flops: f64,
    pub wgmma_16bit_flops: f64,
    pub wgmma_16bit_n128_flops: f64,
    pub barriers: f64,
    pub block_barriers: f64,
    pub wgmma_waits_all: f64,
}

/// What the emulated window did: the FLOPs of the product its blocks compute, its
/// sites' requests and its recorded traffic; and the FLOPs the launch's blocks compute
/// at that rate (above the declared ones where tiles on the matrix's edge compute
/// zeros).
#[derive(Clone, Copy, Debug)]
pub struct Window<'a> {
    pub flops: f64,
    pub launch_flops: f64,
    /// The most FLOPs one emulated block computes, where the emulator counts them
    /// (tensor-core instructions): a persistent kernel's first blocks walk a tile more.
    pub busiest_block_flops: Option<f64>,
    /// How a stream-k launch splits its tiles between clusters ([`super::fixup`]).
    pub split: Option<Split>,
    /// The warps of a block that executed tensor-core instructions, where the emulator
    /// counts them: those that run the hot loop ([`LaunchFlops::computing_warps`]).
    pub tensor_warps_per_block: Option<f64>,
    pub sites: &'a [SiteStats],
    pub traffic: &'a Traffic,
}

/// A launch's FLOPs: those its rate is quoted in (2 m n k), those its blocks
/// compute, whole tiles on the edges too, and the most one block computes where known
/// (else every block its even share).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchFlops {
    pub declared: f64,
    pub computed: f64,
    pub busiest_block: Option<f64>,
    /// A stream-k launch's split tiles, whose owners wait for their contributors.
    pub split: Option<Split>,
    /// The warps of a block that run the hot loop, where fewer than all do: a
    /// warp-specialised block's consumers (the warps that issue its tensor-core
    /// instructions), not its producer, whose loop only issues the copies.
    pub computing_warps: Option<f64>,
}

/// A launch whose blocks compute exactly the declared FLOPs.
impl From<f64> for LaunchFlops {
    fn from(flops: f64) -> LaunchFlops {
        LaunchFlops {
            declared: flops,
            computed: flops,
            busiest_block: None,
            split: None,
            computing_warps: None,
        }
    }
}

impl Issued {
    /// What the model takes of a kernel's instruction mix.
    pub fn of(mix: &InstructionMix) -> Issued {
        Issued {
            flops: mix.flops,
            instructions: f64::from(mix.total),
            fp32: f64::from(mix.fp32),
            mma_sync: f64::from(mix.mma_sync),
            wgmma_flops: mix.wgmma_flops,
            wgmma_16bit_flops: mix.wgmma_16bit_flops,
            wgmma_16bit_n128_flops: mix.wgmma_16bit_n128_flops,
            barriers: f64::from(mix.barriers),
            block_barriers: f64::from(mix.block_barriers),
            wgmma_waits_all: f64::from(mix.wgmma_waits_all),
        }
    }

    /// Adds `share` of one trip of the loop around the hot loop (`outer`): its
    /// instructions, not its FLOPs (the hot loop's iteration keeps its own).
    pub fn add_outer(&mut self, outer: &Issued, share: f64) {
        self.instructions += share * outer.instructions;
        self.fp32 += share * outer.fp32;
        self.mma_sync += share * outer.mma_sync;
        self.wgmma_flops += share * outer.wgmma_flops;
        self.wgmma_16bit_flops += share * outer.wgmma_16bit_flops;
        self.wgmma_16bit_n128_flops += share * outer.wgmma_16bit_n128_flops;
        self.barriers += share * outer.barriers;
    }
}

impl Step {
    /// The step of a warp that issues `issued` per iteration in a launch whose emulated
    /// `window` made its sites' requests, and that moves `dram_bytes` in all for
    /// `flops`: the window's counts per FLOP, times the iteration's FLOPs.
    ///
    /// Each site's requests in all are its executions, each with the mean lines,
    /// sectors and wavefronts of its recorded requests. The L2 serves the sectors the
    /// L1 does not keep: of the recorded requests' sectors, the share that are
    /// distinct (a block's re-reads of what it read in the same loop hit the L1). The
    /// copy engine's boxes go from the L2 to shared memory without the L1: each is
    /// served by the L2, however many blocks read the same box.
    pub fn of(issued: Issued, window: &Window, dram_bytes: f64, flops: f64) -> Step {
        let (sites, traffic, window_flops) = (window.sites, window.traffic, window.flops);
        let f = issued.flops;
        let per_iteration = |count: f64| {
            if window_flops > 0.0 {
                f * count / window_flops
            } else {
                0.0
            }
        };
        // A stream-k launch's partial tiles and flags (its scratch) are not the loop's:
        // the fix-up's chain takes them in turn ([`super::fixup`]).
        let fixup = |s: &SiteStats| window.split.is_some() && s.buffer.as_deref() == Some(SCRATCH);
        // Over the executions `times` counts of the sites `which` picks: `per` of a
        // recorded request.
        type Count<'a> = &'a dyn Fn(&SiteStats) -> u64;
        let executed_of = |which: &dyn Fn(&SiteStats) -> bool, times: Count, per: Count| {
            sites
                .iter()
                .filter(|s| which(s) && !fixup(s) && s.requests > 0)
                .map(|s| times(s) as f64 * per(s) as f64 / s.requests as f64)
                .fold(0.0, |sum, x| sum + x)
        };
        let executed =
            |which: &dyn Fn(&SiteStats) -> bool, per: Count| executed_of(which, &|s| s.executions, per);
        let global = |op: Direction| move |s: &SiteStats| s.space == Memory::Global && s.op == op;
        let lsu = |op: Direction| move |s: &SiteStats| global(op)(s) && !s.bulk;
        let shared_wavefronts = executed(&|s| s.space == Memory::Shared, &|s| s.wavefronts);
        let load_lines = executed(&lsu(Direction::Load), &|s| s.lines);
        let load_requests = executed(&lsu(Direction::Load), &|s| s.requests);
        let store_lines = executed(&lsu(Direction::Store), &|s| s.lines);
        let bulk_store_lines = executed(&|s| global(Direction::Store)(s) && s.bulk, &|s| s.lines);
        let store_lines_beside_mma =
            executed_of(&global(Direction::Store), &|s| s.executions_beside_mma, &|s| {
                s.lines
            });
        let load_sectors = executed(&global(Direction::Load), &|s| s.sectors);
        // A 16-byte `cp.async` is `cp.async.cg` (the kernel std's `copy4_async`).
        let through_l1 = |s: &SiteStats| lsu(Direction::Load)(s) && !(s.async_copy && s.lane_bytes >= 16);
        let l1_miss_sectors = executed(&through_l1, &|s| s.sectors);
        let bulk_sectors = executed(&|s| global(Direction::Load)(s) && s.bulk, &|s| s.sectors);
        // The share of the recorded sectors that are distinct is over the whole window:
        // where its blocks read the same tiles (a persistent kernel's blocks walk the
        // whole of A and B), it counts other SMs' reads as hits. The L1 keeps only what
        // its own SM read, and the copy engine's boxes bypass it: they take no share.
        let distinct = if traffic.global_sectors[0] > 0 {
            (traffic.read_segments[0] as f64 / traffic.global_sectors[0] as f64).min(1.0)
        } else {
            1.0
        };
        Step {
            flops: f,
            instructions: issued.instructions,
            fp32: issued.fp32,
            mma_sync: issued.mma_sync,
            barriers: issued.barriers,
            block_barriers: issued.block_barriers,
            wgmma_waits_all: issued.wgmma_waits_all,
            wgmma_flops: issued.wgmma_flops,
            wgmma_16bit_flops: issued.wgmma_16bit_flops,
            wgmma_16bit_n128_flops: issued.wgmma_16bit_n128_flops,
            shared_wavefronts: per_iteration(shared_wavefronts),
            load_requests: per_iteration(load_requests),
            load_lines: per_iteration(load_lines),
            store_lines: per_iteration(store_lines),
            bulk_store_lines: per_iteration(bulk_store_lines),
            store_lines_beside_mma: per_iteration(store_lines_beside_mma),
            l2_bytes: per_iteration(((load_sectors - bulk_sectors) * distinct + bulk_sectors) * 32.0),
            l2_bulk_bytes: per_iteration(bulk_sectors * 32.0),
            dram_bytes: if flops > 0.0 { f * dram_bytes / flops } else { 0.0 },
            l1_miss_bytes: per_iteration(l1_miss_sectors * distinct * 32.0),
        }
    }
}
