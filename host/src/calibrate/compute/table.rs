//! The compute microbenchmarks as data: one entry per kernel of
//! kernels/src/calibrate/pipes.rs, saying how it is launched, how long it loops, what
//! work a launch does, how its output is checked and which energies its power runs
//! price. `calibrate` runs every entry the same way ([`Microbenchmark::run`]); no
//! code asks a kernel's name what to do.

use kernels::calibrate::pipes::{
    self, BLOCK, BULK_SHARED_BYTES, BULK_STAGE, BULK_STAGES, CHASE_THREADS, FMA_PER_ROUND,
    ISSUE_FMA_PER_ROUND, ISSUE_LOP3_PER_ROUND, LATENCY_STEPS, MMA_PER_ROUND, REQUESTS_PER_ROUND,
    WGMMA_16BIT_K, WGMMA_16BIT_N128_SHARED_BYTES, WGMMA_16BIT_SHARED_BYTES, WGMMA_N, WGMMA_N128,
    WGMMA_PER_ROUND, WGMMA_SHARED_BYTES, WGMMA_THREADS,
};
use kernels::entry;
use kernels::gpu::GlobalMut;
use kernels::handle::{Kernel, KernelInfo};

use super::expected::{
    FMA_A, FMA_B, MMA_A, MMA_B, WGMMA_B, check_wgmma_16bit_blocks, check_wgmma_16bit_n128_blocks,
    check_wgmma_blocks, fma_chain, fma_chains, mma_sum,
};
use crate::calibrate::per_sm_rate;
use crate::profile::power::Energy;

/// One compute microbenchmark.
#[derive(Clone, Copy, Debug)]
pub struct Microbenchmark {
    /// Its kernel, with the buffers its arguments need and the check of its output.
    pub setup: Setup,
    /// Threads a block.
    pub threads: u32,
    pub blocks: Blocks,
    /// Dynamic shared memory a block.
    pub shared_bytes: u32,
    pub rounds: Rounds,
    /// The units of work one launch does, what its rate counts (warp instructions,
    /// FLOPs, bytes, steps of a chain); the loop's own instructions are not counted.
    pub units: fn(Work) -> u64,
    pub rate: Rate,
    /// The energies its power runs price (most price none).
    pub energy: &'static [Energy],
}

/// A microbenchmark's kernel (its typed handle, so a launch with other arguments does
/// not compile), with what its arguments need and how its output is checked.
#[derive(Clone, Copy, Debug)]
pub enum Setup {
    /// `(rounds, a, b, out)`: chains of FMAs or MMAs on a and b; `check` compares what
    /// the threads stored with the CPU's arithmetic (None where all agree).
    Chains {
        kernel: &'static Kernel<(u32, f32, f32, GlobalMut<f32>)>,
        a: f32,
        b: f32,
        check: fn(&[f32], usize, f32, f32) -> Option<String>,
    },
    /// `issue_mix`: every thread's chains of FFMAs and LOP3s.
    IssueMix(&'static Kernel<pipes::issue_mix>),
    /// `line_requests`: a window of lines a block, summed by every thread.
    LineRequests(&'static Kernel<pipes::line_requests>),
    /// `shared_chase`: where each lane's chase through shared memory ends.
    SharedChase(&'static Kernel<pipes::shared_chase>),
    /// `l2_read`: float4s from a buffer of a quarter of the span ([`super::l2_shape`]).
    L2Read(&'static Kernel<pipes::l2_read>),
    /// `l2_bulk_read`: the copy engine's reads from a buffer of a quarter of the span
    /// ([`super::bulk_shape`]); its rates measured with each chunk read by one block,
    /// and by `sharers` at once (`l2_bulk_shared_gb_per_s`).
    BulkRead {
        kernel: &'static Kernel<pipes::l2_bulk_read>,
        sharers: usize,
    },
}

impl Setup {
    /// The kernel's untyped part: its name, module and launch bounds.
    pub fn kernel(&self) -> &'static KernelInfo {
        match *self {
            Setup::Chains { kernel, .. } => kernel.info(),
            Setup::IssueMix(k) => k.info(),
            Setup::LineRequests(k) => k.info(),
            Setup::SharedChase(k) => k.info(),
            Setup::L2Read(k) => k.info(),
            Setup::BulkRead { kernel, .. } => kernel.info(),
        }
    }
}

/// How many blocks a microbenchmark runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocks {
    /// As many as the driver's occupancy calculator fits on every SM: a rate.
    Fill,
    /// One: a latency, with nothing else in the way.
    One,
}

/// Rounds of a microbenchmark's loop; an eighth of them when quick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounds {
    /// This many.
    Fixed(usize),
    /// As many as move this many bytes a launch (at least one), whatever the buffer.
    Bytes(u64),
}

impl Rounds {
    /// The rounds of a launch whose single round does `per_round` units of work (bytes,
    /// where it matters).
    pub fn count(self, quick: bool, per_round: u64) -> usize {
        let eighth = |n: u64| if quick { n / 8 } else { n };
        match self {
            Rounds::Fixed(n) => eighth(n as u64) as usize,
            Rounds::Bytes(bytes) => (eighth(bytes) / per_round.max(1)).max(1) as usize,
        }
    }
}

/// What a microbenchmark's units and time make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// Units per ns per SM.
    PerSm,
    /// Units per ns over the GPU: bytes per ns are GB/s.
    Gpu,
    /// ns per unit: one chain's latency.
    Latency,
}

impl Rate {
    /// The rate of `units` in `ms` on `sm_count` SMs; None unless a positive number.
    pub fn of(self, units: u64, ms: f64, sm_count: u32) -> Option<f64> {
        let ns = ms * 1e6;
        match self {
            Rate::PerSm => per_sm_rate(units, ms, sm_count),
            Rate::Gpu => Some(units as f64 / ns),
            Rate::Latency => Some(ns / units as f64),
        }
        .filter(|r| r.is_finite() && *r > 0.0)
    }
}

/// One launch's work, to count in a microbenchmark's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    pub blocks: u64,
    /// Threads of the grid.
    pub threads: u64,
    pub rounds: u64,
    /// Float4s each thread of `l2_read` reads a round (1 for the others).
    pub layers: u64,
}

impl Work {
    fn warps(self) -> u64 {
        self.threads / 32
    }
}

/// Each thread stores `want`: the first that did not, or None.
fn each_thread(got: &[f32], want: f32) -> Option<String> {
    super::first_wrong(got, |_| want)
}

/// FLOPs of one `wgmma` m64n256k8: 2 x 64 x 256 x 8.
const WGMMA_FLOPS: u64 = 2 * 64 * WGMMA_N as u64 * 8;
/// FLOPs of one 16-bit `wgmma` m64n256k16: 2 x 64 x 256 x 16.
const WGMMA_16BIT_FLOPS: u64 = 2 * 64 * WGMMA_N as u64 * WGMMA_16BIT_K as u64;
/// And of one m64n128k16: half that.
const WGMMA_16BIT_N128_FLOPS: u64 = 2 * 64 * WGMMA_N128 as u64 * WGMMA_16BIT_K as u64;

/// 8 GB a launch: about 2 ms at 4 TB/s.
const L2_BYTES_A_LAUNCH: Rounds = Rounds::Bytes(8 << 30);

/// The compute microbenchmarks, in the order of [`crate::profile::ComputeRates::named`].
/// Fixed rounds make about 2 ms a launch on an H100 (at 4 FFMA or 4 instructions a
/// clock per SM, about one m16n8k8 or 1/128 of an m64n256k8 a clock per SM, 4 clocks
/// an FFMA and some 30 a shared load; a 16-bit m64n256k16, twice the FLOPs at twice the
/// rate, about as long as a TF32 m64n256k8, and an m64n128k16 half as long, so twice the
/// rounds).
pub static COMPUTE: [Microbenchmark; 11] = [
    Microbenchmark {
        setup: Setup::Chains {
            kernel: &entry::fma_throughput,
            a: FMA_A,
            b: FMA_B,
            check: |got, rounds, a, b| each_thread(got, fma_chains(rounds, a, b)),
        },
        threads: BLOCK,
        blocks: Blocks::Fill,
        shared_bytes: 0,
        rounds: Rounds::Fixed(2048),
        units: |w| w.warps() * w.rounds * FMA_PER_ROUND as u64,
        rate: Rate::PerSm,
        energy: &[Energy::Ffma],
    },
    Microbenchmark {
        setup: Setup::IssueMix(&entry::issue_mix),
        threads: BLOCK,
        blocks: Blocks::Fill,
        shared_bytes: 0,
        rounds: Rounds::Fixed(1024),
        units: |w| w.warps() * w.rounds * (ISSUE_FMA_PER_ROUND + ISSUE_LOP3_PER_ROUND) as u64,
        rate: Rate::PerSm,
        energy: &[],
    },
    Microbenchmark {
        setup: Setup::Chains {
            kernel: &entry::mma_tf32_throughput,
            a: MMA_A,
            b: MMA_B,
            check: |got, rounds, a, b| each_thread(got, mma_sum(rounds, a, b)),
        },
        threads: BLOCK,
        blocks: Blocks::Fill,
        shared_bytes: 0,
        rounds: Rounds::Fixed(2048),
        units: |w| w.warps() * w.rounds * MMA_PER_ROUND as u64,
        rate: Rate::PerSm,
        energy: &[Energy::MmaTf32],
    },
    Microbenchmark {
        setup: Setup::Chains {
            kernel: &entry::wgmma_tf32_throughput,
            a: MMA_A,
            b: WGMMA_B,
            check: check_wgmma_blocks,
        },
        threads: WGMMA_THREADS,
        blocks: Blocks::Fill,
        shared_bytes: WGMMA_SHARED_BYTES as u32,
        rounds: Rounds::Fixed(1024),
        units: |w| w.threads / u64::from(WGMMA_THREADS) * w.rounds * WGMMA_PER_ROUND as u64 * WGMMA_FLOPS,
        rate: Rate::PerSm,
        energy: &[Energy::WgmmaTf32],
    },
    Microbenchmark {
        setup: Setup::Chains {
            kernel: &entry::wgmma_bf16_throughput,
            a: MMA_A,
            b: WGMMA_B,
            check: check_wgmma_16bit_blocks,
        },
        threads: WGMMA_THREADS,
        blocks: Blocks::Fill,
        shared_bytes: WGMMA_16BIT_SHARED_BYTES as u32,
        rounds: Rounds::Fixed(1024),
        units: |w| {
            w.threads / u64::from(WGMMA_THREADS) * w.rounds * WGMMA_PER_ROUND as u64 * WGMMA_16BIT_FLOPS
        },
        rate: Rate::PerSm,
        energy: &[Energy::Wgmma16Bit],
    },
    Microbenchmark {
        setup: Setup::Chains {
            kernel: &entry::wgmma_bf16_n128_throughput,
            a: MMA_A,
            b: WGMMA_B,
            check: check_wgmma_16bit_n128_blocks,
        },
        threads: WGMMA_THREADS,
        blocks: Blocks::Fill,
        shared_bytes: WGMMA_16BIT_N128_SHARED_BYTES as u32,
        rounds: Rounds::Fixed(2048),
        units: |w| {
            w.threads / u64::from(WGMMA_THREADS) * w.rounds * WGMMA_PER_ROUND as u64 * WGMMA_16BIT_N128_FLOPS
        },
        rate: Rate::PerSm,
        // The N = 256 run prices the 16-bit FLOP.
        energy: &[],
    },
    Microbenchmark {
        setup: Setup::L2Read(&entry::l2_read),
        threads: BLOCK,
        blocks: Blocks::Fill,
        shared_bytes: 0,
        rounds: L2_BYTES_A_LAUNCH,
        units: |w| w.threads * w.rounds * w.layers * 16,
        rate: Rate::Gpu,
        // L2-resident, and over 8 x the L2 (from DRAM).
        energy: &[Energy::L2, Energy::Dram],
    },
    Microbenchmark {
        setup: Setup::Chains {
            kernel: &entry::fma_latency,
            a: FMA_A,
            b: FMA_B,
            check: |got, rounds, a, b| each_thread(got, fma_chain(rounds, a, b)),
        },
        threads: CHASE_THREADS,
        blocks: Blocks::One,
        shared_bytes: 0,
        rounds: Rounds::Fixed(16384),
        units: |w| w.rounds * LATENCY_STEPS as u64,
        rate: Rate::Latency,
        energy: &[Energy::Base],
    },
    Microbenchmark {
        setup: Setup::SharedChase(&entry::shared_chase),
        threads: CHASE_THREADS,
        blocks: Blocks::One,
        shared_bytes: 0,
        rounds: Rounds::Fixed(2048),
        units: |w| w.rounds * LATENCY_STEPS as u64,
        rate: Rate::Latency,
        energy: &[],
    },
    Microbenchmark {
        setup: Setup::LineRequests(&entry::line_requests),
        threads: BLOCK,
        blocks: Blocks::Fill,
        shared_bytes: 0,
        rounds: Rounds::Fixed(2048),
        units: |w| w.warps() * w.rounds * REQUESTS_PER_ROUND as u64,
        rate: Rate::PerSm,
        energy: &[],
    },
    Microbenchmark {
        setup: Setup::BulkRead {
            kernel: &entry::l2_bulk_read,
            sharers: BULK_SHARERS,
        },
        // One thread a block issues the copies; the block is one warp.
        threads: CHASE_THREADS,
        blocks: Blocks::Fill,
        shared_bytes: BULK_SHARED_BYTES as u32,
        rounds: L2_BYTES_A_LAUNCH,
        units: |w| w.blocks * w.rounds * (BULK_STAGES * BULK_STAGE * 4) as u64,
        rate: Rate::Gpu,
        energy: &[Energy::L2Bulk],
    },
];

/// Blocks of `l2_bulk_read` that read each chunk at once, for the rate of lines many SMs
/// share: a product's tile is read by every block of its row or column of tiles, and
/// from about 4 sharers on, each SM's own port to the L2 sets the rate.
pub const BULK_SHARERS: usize = 8;

/// Each power run with the microbenchmark that makes it, in [`Energy::ALL`]'s order.
pub fn power_runs() -> Vec<(Energy, &'static Microbenchmark)> {
    Energy::ALL
        .into_iter()
        .flat_map(|e| {
            COMPUTE
                .iter()
                .filter(move |b| b.energy.contains(&e))
                .map(move |b| (e, b))
        })
        .collect()
}
