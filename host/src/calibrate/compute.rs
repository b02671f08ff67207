//! The compute rates (kernels/src/pipes.rs): FFMAs, instructions issued, tensor-core
//! MMAs, L2 reads (the SMs' and the copy engine's), and the latencies of a dependent
//! FFMA and a dependent shared load.
//! Each rate is one declared count of work per launch ([`compute_units`]) over the
//! median launch (and the SMs, where per SM); each kernel's output is checked against
//! a CPU computation of the same arithmetic before its time is used.

use cust::function::BlockSize;
use cust::memory::CopyDestination;
use kernels::entry;
use kernels::gpu::tma::TensorMap;
use kernels::gpu::{Float4, Global, GlobalMut};
use kernels::handle::{Kernel, KernelInfo};
use kernels::pipes::{
    BLOCK, BULK_SHARED_BYTES, BULK_STAGE, BULK_STAGES, CHASE_THREADS, FMA_PER_ROUND, ISSUE_FMA_PER_ROUND,
    ISSUE_LOP3_PER_ROUND, LATENCY_STEPS, MMA_PER_ROUND, REQUEST_WINDOW, REQUESTS_PER_ROUND, WGMMA_N,
    WGMMA_PER_ROUND, WGMMA_SHARED_BYTES, WGMMA_THREADS,
};

use super::{Effort, per_sm_rate};

mod expected;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::launch::{DeviceArg, Launch};
use crate::problem::{Dim, Problem};
use crate::profile::ComputeRates;
use crate::tensor_map::MapSpec;
use crate::timing::time_launches;
pub use expected::{
    FMA_A, FMA_B, ISSUE_K, MMA_A, MMA_B, WGMMA_B, bulk_sum, chase_end, check_wgmma_blocks, fma_chain,
    fma_chains, issue_chains, l2_sums, l2_value, line_sum, line_value, mma_sum, wgmma_block_total,
};

/// The compute microbenchmarks, in the order of [`ComputeRates::named`].
pub static COMPUTE: [&KernelInfo; 9] = [
    entry::fma_throughput.info(),
    entry::issue_mix.info(),
    entry::mma_tf32_throughput.info(),
    entry::wgmma_tf32_throughput.info(),
    entry::l2_read.info(),
    entry::fma_latency.info(),
    entry::shared_chase.info(),
    entry::line_requests.info(),
    entry::l2_bulk_read.info(),
];

/// Threads per block of a compute kernel.
pub fn block_threads(kernel: &KernelInfo) -> u32 {
    if kernel == entry::wgmma_tf32_throughput.info() {
        WGMMA_THREADS
    } else if [
        entry::fma_latency.info(),
        entry::shared_chase.info(),
        entry::l2_bulk_read.info(),
    ]
    .contains(&kernel)
    {
        CHASE_THREADS
    } else {
        BLOCK
    }
}

/// Dynamic shared memory of a compute kernel's block.
pub fn shared_bytes(kernel: &KernelInfo) -> u32 {
    if kernel == entry::wgmma_tf32_throughput.info() {
        WGMMA_SHARED_BYTES as u32
    } else if kernel == entry::l2_bulk_read.info() {
        BULK_SHARED_BYTES as u32
    } else {
        0
    }
}

/// `kernel`'s launch with as many blocks of [`block_threads`] as the driver says fit
/// on every SM, or `blocks` when given.
pub fn full_launch(gpu: &Gpu, kernel: &KernelInfo, blocks: Option<u32>) -> Result<Launch> {
    let (threads, shared) = (block_threads(kernel), shared_bytes(kernel));
    let blocks = match blocks {
        Some(b) => b,
        None => {
            let per_sm = gpu
                .function(kernel)?
                .max_active_blocks_per_multiprocessor(BlockSize::x(threads), shared as usize)
                .map_err(gpu.cuda_error("asking the driver's occupancy calculator"))?;
            gpu.info.sm_count.max(1) * per_sm.max(1)
        }
    };
    Ok(Launch {
        grid: (blocks, 1, 1),
        block: (threads, 1, 1),
        shared_bytes: shared,
    })
}

/// Rounds of each kernel's loop: about 2 ms a launch on an H100 (at 4 FFMA or 4
/// instructions a clock per SM, about one m16n8k8 or 1/128 of an m64n256k8 a clock
/// per SM, 4 clocks an FFMA and some 30 a shared load), an eighth of it when quick.
/// [`l2_rounds`] sizes `l2_read`'s.
pub fn compute_rounds(kernel: &KernelInfo, quick: bool) -> usize {
    let full = match kernel.name {
        "fma_throughput" | "mma_tf32_throughput" | "shared_chase" | "line_requests" => 2048,
        "issue_mix" | "wgmma_tf32_throughput" => 1024,
        "fma_latency" => 16384,
        _ => 0,
    };
    if quick { full / 8 } else { full }
}

/// Units each of [`COMPUTE`]'s kernels does in a launch of `blocks` blocks of
/// [`block_threads`] threads and `rounds` rounds (`l2_read` reads `layers` float4s a
/// thread a round; the others take 1): warp FFMAs (`fma_throughput`), warp FFMAs and
/// LOP3s (`issue_mix`), warp `mma.sync`s, wgmma FLOPs, bytes read from L2, dependent
/// FFMAs and dependent shared loads (one warp: the chain's length). The loops' own
/// instructions are not counted.
pub fn compute_units(kernel: &KernelInfo, blocks: u32, rounds: usize, layers: usize) -> u64 {
    let threads = u64::from(blocks) * u64::from(block_threads(kernel));
    let (warps, rounds) = (threads / 32, rounds as u64);
    match kernel.name {
        "fma_throughput" => warps * rounds * FMA_PER_ROUND as u64,
        "issue_mix" => warps * rounds * (ISSUE_FMA_PER_ROUND + ISSUE_LOP3_PER_ROUND) as u64,
        "mma_tf32_throughput" => warps * rounds * MMA_PER_ROUND as u64,
        "wgmma_tf32_throughput" => {
            let flops = 2 * 64 * WGMMA_N as u64 * 8;
            (threads / u64::from(WGMMA_THREADS)) * rounds * WGMMA_PER_ROUND as u64 * flops
        }
        "l2_read" => threads * rounds * layers as u64 * 16,
        "l2_bulk_read" => u64::from(blocks) * rounds * (BULK_STAGES * BULK_STAGE * 4) as u64,
        "fma_latency" | "shared_chase" => rounds * LATENCY_STEPS as u64,
        "line_requests" => warps * rounds * REQUESTS_PER_ROUND as u64,
        _ => 0,
    }
}

/// `l2_read`'s buffer for a grid of `threads` threads on an L2 of `l2_bytes`: layers of
/// one float4 a thread, as many as make about a quarter of the L2 (at least one), and
/// the shift between rounds, in threads: about 0.382 of the grid's blocks (the golden
/// section, so that an SM's blocks meet their own lines of a few rounds before only
/// rarely), a whole number of blocks so each warp's reads stay whole lines.
pub fn l2_shape(threads: u64, l2_bytes: u64) -> (usize, usize) {
    let layer = threads * 16;
    let layers = ((l2_bytes / 4 + layer / 2) / layer.max(1)).max(1);
    let blocks = threads / u64::from(BLOCK);
    let shift = ((blocks as f64 * 0.382).round() as u64).clamp(1, blocks.saturating_sub(1).max(1));
    (layers as usize, (shift * u64::from(BLOCK)) as usize)
}

/// `l2_read`'s rounds: 8 GB read a launch (about 2 ms at 4 TB/s), an eighth when quick.
pub fn l2_rounds(threads: u64, layers: usize, quick: bool) -> usize {
    let bytes: u64 = if quick { 1 << 30 } else { 8 << 30 };
    (bytes / (threads * layers as u64 * 16).max(1)).max(1) as usize
}

/// `l2_bulk_read`'s buffer on an L2 of `l2_bytes`: chunks of a stage's floats, as many
/// as make about a quarter of the L2 (at least one), and the shift between a block's
/// stages, in chunks: about 0.382 of them (the golden section), so the blocks' reads
/// spread over the buffer.
pub fn bulk_shape(l2_bytes: u64) -> (usize, usize) {
    let chunk = (BULK_STAGE * 4) as u64;
    let chunks = ((l2_bytes / 4 + chunk / 2) / chunk).max(1);
    let shift = ((chunks as f64 * 0.382).round() as u64).max(1);
    (chunks as usize, shift as usize)
}

/// `l2_bulk_read`'s rounds (a stage each of its stages): 8 GB read a launch, an eighth
/// when quick.
pub fn bulk_rounds(blocks: u64, quick: bool) -> usize {
    let bytes: u64 = if quick { 1 << 30 } else { 8 << 30 };
    (bytes / (blocks * (BULK_STAGES * BULK_STAGE * 4) as u64).max(1)).max(1) as usize
}

/// Blocks of `l2_bulk_read` that read each chunk at once, for the rate of lines many SMs
/// share: a product's tile is read by every block of its row or column of tiles, and
/// from about 4 sharers on, each SM's own port to the L2 sets the rate.
pub const BULK_SHARERS: usize = 8;

/// `l2_read`'s buffers on a GPU for `n` threads reading `span` / 4 bytes
/// ([`l2_shape`], [`l2_rounds`]): the source and the threads' sums.
pub struct L2Read {
    pub rounds: usize,
    pub layers: usize,
    shift: usize,
    src: cust::memory::DeviceBuffer<f32>,
    out: cust::memory::DeviceBuffer<f32>,
}

impl L2Read {
    pub fn new(gpu: &Gpu, n: usize, span: u64, quick: bool) -> Result<L2Read> {
        let (layers, shift) = l2_shape(n as u64, span);
        let host: Vec<f32> = (0..4 * n * layers).map(|i| l2_value(i) as f32).collect();
        Ok(L2Read {
            rounds: l2_rounds(n as u64, layers, quick),
            layers,
            shift,
            src: gpu.upload(&host)?,
            out: gpu.alloc::<f32>(n)?,
        })
    }

    /// The kernel's arguments.
    pub fn args(&self) -> (u32, usize, usize, Global<Float4>, GlobalMut<f32>) {
        let (src, out) = (self.src.global_as(), self.out.global_mut());
        (self.rounds as u32, self.layers, self.shift, src, out)
    }

    /// The first thread whose sum is not [`l2_sums`]'s, or None; `run` names the run.
    pub fn check(&self, gpu: &Gpu, run: &str) -> Result<Option<String>> {
        let got = read(gpu, &self.out)?;
        let want = l2_sums(got.len(), self.layers, self.shift, self.rounds);
        Ok(check(run, &got, |i| want[i] as f32))
    }
}

/// The kernels of (rounds, a, b, out) whose every thread stores one float, with their
/// constants and their check.
pub struct Chains {
    pub kernel: &'static Kernel<(u32, f32, f32, GlobalMut<f32>)>,
    rounds: usize,
    a: f32,
    b: f32,
    out: cust::memory::DeviceBuffer<f32>,
}

impl Chains {
    /// `fma_throughput`, `mma_tf32_throughput`, `wgmma_tf32_throughput` or
    /// `fma_latency` (any other name) for `n` threads and `rounds` rounds.
    pub fn new(gpu: &Gpu, name: &str, n: usize, rounds: usize) -> Result<Chains> {
        let (kernel, a, b) = match name {
            "fma_throughput" => (&entry::fma_throughput, FMA_A, FMA_B),
            "mma_tf32_throughput" => (&entry::mma_tf32_throughput, MMA_A, MMA_B),
            "wgmma_tf32_throughput" => (&entry::wgmma_tf32_throughput, MMA_A, WGMMA_B),
            _ => (&entry::fma_latency, FMA_A, FMA_B),
        };
        Ok(Chains {
            kernel,
            rounds,
            a,
            b,
            out: gpu.alloc::<f32>(n)?,
        })
    }

    /// The kernel's arguments.
    pub fn args(&self) -> (u32, f32, f32, GlobalMut<f32>) {
        (self.rounds as u32, self.a, self.b, self.out.global_mut())
    }

    /// The first thread (or wgmma block) that stored other than the CPU's arithmetic,
    /// or None.
    pub fn check(&self, gpu: &Gpu) -> Result<Option<String>> {
        let got = read(gpu, &self.out)?;
        let (name, rounds, a, b) = (self.kernel.info().name, self.rounds, self.a, self.b);
        let want = match name {
            "wgmma_tf32_throughput" => return Ok(check_wgmma_blocks(&got, rounds, a, b)),
            "fma_throughput" => fma_chains(rounds, a, b),
            "mma_tf32_throughput" => mma_sum(rounds, a, b),
            _ => fma_chain(rounds, a, b),
        };
        Ok(check(name, &got, |_| want))
    }
}

/// `l2_bulk_read`'s buffers on a GPU: the source, its tensor map and the blocks' sums.
pub struct BulkRead {
    pub rounds: usize,
    chunks: usize,
    shift: usize,
    _src: cust::memory::DeviceBuffer<f32>,
    map: cust::memory::DeviceBuffer<u64>,
    out: cust::memory::DeviceBuffer<f32>,
}

impl BulkRead {
    /// The buffers for a launch of `blocks` blocks ([`bulk_shape`], [`bulk_rounds`]).
    pub fn new(gpu: &Gpu, blocks: u32, quick: bool) -> Result<BulkRead> {
        let (chunks, shift) = bulk_shape(gpu.info.l2_bytes);
        let host: Vec<f32> = (0..chunks * BULK_STAGE).map(|i| l2_value(i) as f32).collect();
        let src = gpu.upload(&host)?;
        let map = MapSpec::line(0, Dim::Len, kernels::pipes::BULK_BOX as u32)
            .for_gpu(&Problem::Elements { n: host.len() }, src.as_device_ptr().as_raw())?;
        Ok(BulkRead {
            rounds: bulk_rounds(u64::from(blocks), quick),
            chunks,
            shift,
            map: gpu.upload(&map.words)?,
            out: gpu.alloc::<f32>(blocks as usize)?,
            _src: src,
        })
    }

    /// The kernel's arguments, `group` blocks reading each chunk at once.
    pub fn args(&self, group: usize) -> (u32, usize, usize, usize, Global<TensorMap>, GlobalMut<f32>) {
        let (map, out) = (self.map.global_as(), self.out.global_mut());
        (self.rounds as u32, self.chunks, self.shift, group, map, out)
    }

    /// The first block whose sum is not [`bulk_sum`]'s for a launch of `group`, or None.
    pub fn check(&self, gpu: &Gpu, group: usize) -> Result<Option<String>> {
        let got = read(gpu, &self.out)?;
        let sum = |b| bulk_sum(b, group, self.chunks, self.shift, self.rounds);
        Ok(check("l2_bulk_read", &got, sum))
    }
}

/// How each rate was measured, for the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct ComputeRun {
    pub kernel: &'static str,
    pub blocks: u32,
    pub threads: u32,
    pub rounds: usize,
    /// Why the kernel did not run on this GPU (its rate is null).
    pub skipped: Option<String>,
}

/// A first failure among a kernel's stored values, or None.
fn check<T: PartialEq + std::fmt::Debug>(
    kernel: &str,
    got: &[T],
    want: impl Fn(usize) -> T,
) -> Option<String> {
    got.iter()
        .enumerate()
        .find(|(i, v)| **v != want(*i))
        .map(|(i, v)| format!("{kernel}: thread {i} stored {v:?} instead of {:?}", want(i)))
}

/// Runs and times the compute kernels: each at full residency (as many blocks as the
/// driver says fit, on every SM), the latency ones as one warp. Returns the rates, how
/// each was run and the validation failures.
pub fn compute_rates(
    gpu: &Gpu,
    effort: Effort,
    progress: &mut impl FnMut(&str),
) -> Result<(ComputeRates, Vec<ComputeRun>, Vec<String>)> {
    let (info, reps, quick) = (&gpu.info, effort.reps(), effort.quick);
    let mut runs = Vec::new();
    let mut failures = Vec::new();
    let mut rates: [Option<f64>; 9] = [None; 9];
    let mut bulk_shared = None;
    for (i, &kernel) in COMPUTE.iter().enumerate() {
        progress(kernel.name);
        if !kernel.module.loads_on(info.compute_capability) {
            let (major, minor) = info.compute_capability;
            runs.push(ComputeRun {
                kernel: kernel.name,
                blocks: 0,
                threads: 0,
                rounds: 0,
                skipped: Some(format!(
                    "needs {} (this GPU is {major}.{minor})",
                    kernel.module.requires().unwrap_or("?")
                )),
            });
            continue;
        }
        // The latency kernels run one warp.
        let one = ["fma_latency", "shared_chase"].contains(&kernel.name);
        let cfg = full_launch(gpu, kernel, one.then_some(1))?;
        let (blocks, threads) = (cfg.grid.0, cfg.block.0);
        let n = (blocks * threads) as usize;
        let (mut rounds, mut layers) = (compute_rounds(kernel, quick), 1);
        let (time, failure) = match kernel.name {
            "l2_read" => {
                let l2 = L2Read::new(gpu, n, info.l2_bytes, quick)?;
                (rounds, layers) = (l2.rounds, l2.layers);
                let k = gpu.load(&entry::l2_read)?;
                let t = time_launches(gpu, reps, || k.launch(cfg, l2.args()))?;
                (t, l2.check(gpu, kernel.name)?)
            }
            "l2_bulk_read" => {
                let k = gpu.load(&entry::l2_bulk_read)?;
                let bulk = BulkRead::new(gpu, blocks, quick)?;
                rounds = bulk.rounds;
                // Lines BULK_SHARERS SMs read at once, then lines one SM reads (the rate).
                let t = time_launches(gpu, reps, || k.launch(cfg, bulk.args(BULK_SHARERS)))?;
                failures.extend(bulk.check(gpu, BULK_SHARERS)?);
                let units = compute_units(kernel, blocks, rounds, 1);
                bulk_shared = Some(units as f64 / (t.median_ms * 1e6)).filter(|r| r.is_finite() && *r > 0.0);
                let t = time_launches(gpu, reps, || k.launch(cfg, bulk.args(1)))?;
                (t, bulk.check(gpu, 1)?)
            }
            "issue_mix" => {
                let out = gpu.alloc::<u32>(n)?;
                let k = gpu.load(&entry::issue_mix)?;
                let args = (rounds as u32, FMA_A, FMA_B, ISSUE_K, out.global_mut());
                let t = time_launches(gpu, reps, || k.launch(cfg, args))?;
                let want = issue_chains(rounds, FMA_A, FMA_B, ISSUE_K);
                (t, check(kernel.name, &read(gpu, &out)?, |_| want))
            }
            "line_requests" => {
                let host: Vec<f32> = (0..blocks as usize * REQUEST_WINDOW).map(line_value).collect();
                let src = gpu.upload(&host)?;
                let out = gpu.alloc::<f32>(n)?;
                let k = gpu.load(&entry::line_requests)?;
                let args = (rounds as u32, src.global_as(), out.global_mut());
                let t = time_launches(gpu, reps, || k.launch(cfg, args))?;
                let per = threads as usize;
                (
                    t,
                    check(kernel.name, &read(gpu, &out)?, |i| {
                        line_sum(i / per, i % per, rounds)
                    }),
                )
            }
            "shared_chase" => {
                let out = gpu.alloc::<u32>(n)?;
                let k = gpu.load(&entry::shared_chase)?;
                let t = time_launches(gpu, reps, || k.launch(cfg, (rounds as u32, out.global_mut())))?;
                (t, check(kernel.name, &read(gpu, &out)?, |i| chase_end(i, rounds)))
            }
            _ => {
                let chains = Chains::new(gpu, kernel.name, n, rounds)?;
                let k = gpu.load(chains.kernel)?;
                let t = time_launches(gpu, reps, || k.launch(cfg, chains.args()))?;
                (t, chains.check(gpu)?)
            }
        };
        failures.extend(failure);
        let units = compute_units(kernel, blocks, rounds, layers);
        let ns = time.median_ms * 1e6;
        rates[i] = match kernel.name {
            "l2_read" | "l2_bulk_read" => Some(units as f64 / ns),
            "fma_latency" | "shared_chase" => Some(ns / units as f64),
            _ => per_sm_rate(units, time.median_ms, info.sm_count),
        }
        .filter(|r| r.is_finite() && *r > 0.0);
        if rates[i].is_none() {
            return Err(Error::BadProfile {
                path: "calibrate".into(),
                why: format!("{} took {} ms: no rate", kernel.name, time.median_ms),
            });
        }
        runs.push(ComputeRun {
            kernel: kernel.name,
            blocks,
            threads,
            rounds,
            skipped: None,
        });
    }
    let [
        fma,
        issue,
        mma,
        wgmma,
        l2,
        fma_latency,
        shared_latency,
        requests,
        bulk,
    ] = rates;
    let rates = ComputeRates {
        fma_per_ns_per_sm: fma.unwrap_or_default(),
        issue_per_ns_per_sm: issue.unwrap_or_default(),
        mma_tf32_per_ns_per_sm: mma,
        wgmma_tf32_flops_per_ns_per_sm: wgmma,
        l2_read_gb_per_s: l2.unwrap_or_default(),
        fma_latency_ns: fma_latency.unwrap_or_default(),
        shared_latency_ns: shared_latency.unwrap_or_default(),
        l1_requests_per_ns_per_sm: requests.unwrap_or_default(),
        l2_bulk_read_gb_per_s: bulk,
        l2_bulk_shared_gb_per_s: bulk_shared,
    };
    Ok((rates, runs, failures))
}

/// A kernel's output, back on the host.
pub(super) fn read<T: cust::memory::DeviceCopy + Default + Clone>(
    gpu: &Gpu,
    buf: &cust::memory::DeviceBuffer<T>,
) -> Result<Vec<T>> {
    gpu.sync("running a compute microbenchmark")?;
    let mut host = vec![T::default(); buf.len()];
    buf.copy_to(&mut host[..])
        .map_err(gpu.cuda_error("reading a compute microbenchmark's output"))?;
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_units_count_what_each_launch_does() {
        // 1056 blocks of 256 threads (8 warps), 2048 rounds.
        let warps = 1056 * 8 * 2048;
        assert_eq!(compute_units(&entry::fma_throughput, 1056, 2048, 1), warps * 128);
        assert_eq!(
            compute_units(&entry::issue_mix, 1056, 2048, 1),
            warps * (128 + 64)
        );
        assert_eq!(
            compute_units(&entry::mma_tf32_throughput, 1056, 2048, 1),
            warps * 16
        );
        // 396 warpgroups, 1024 rounds of 8 m64n256k8: 2 x 64 x 256 x 8 FLOPs each.
        assert_eq!(
            compute_units(&entry::wgmma_tf32_throughput, 396, 1024, 1),
            396 * 1024 * 8 * 262_144
        );
        // A float4 a layer a thread a round.
        assert_eq!(
            compute_units(&entry::l2_read, 1056, 600, 3),
            1056 * 256 * 600 * 3 * 16
        );
        // One warp's chain.
        assert_eq!(compute_units(&entry::fma_latency, 1, 16384, 1), 16384 * 64);
        assert_eq!(compute_units(&entry::shared_chase, 1, 2048, 1), 2048 * 64);
        assert_eq!(compute_units(&entry::copy_f32, 1056, 2048, 1), 0);
        // Every kernel has its rounds, but l2_read, whose rounds come from its bytes.
        for k in COMPUTE {
            let full = compute_rounds(k, false);
            assert_eq!(full == 0, k.name.starts_with("l2_"), "{}", k.name);
            assert_eq!(compute_rounds(k, true), full / 8);
        }
    }

    #[test]
    fn the_l2_buffer_is_a_quarter_of_the_l2_and_each_round_moves_on() {
        // An H100: 1056 blocks of 256 threads, 50 MiB of L2: 3 layers of 4.1 MiB.
        let threads = 1056 * 256;
        let (layers, shift) = l2_shape(threads, 50 << 20);
        assert_eq!(layers, 3);
        assert_eq!(shift, 403 * 256);
        assert_eq!(shift % 256, 0);
        let rounds = l2_rounds(threads, layers, false);
        assert_eq!(rounds, 661);
        assert!(l2_rounds(threads, layers, true) < rounds);
        // A small grid on a large L2 takes more layers; a huge one at least one.
        assert_eq!(l2_shape(1024, 1 << 20), (16, 2 * 256));
        assert_eq!(l2_shape(1 << 24, 1 << 20).0, 1);
        // Sums: thread g reads place g, then g + shift, each place's layers.
        let sums = l2_sums(8, 2, 3, 2);
        let place = |p: usize| -> u32 {
            (0..2)
                .flat_map(|l| (0..4).map(move |c| l2_value(4 * (p + 8 * l) + c)))
                .sum()
        };
        assert_eq!(sums[0], place(0) + place(3));
        assert_eq!(sums[6], place(6) + place(1));
    }

    #[test]
    fn the_kernels_run_one_warp_or_full_blocks() {
        assert_eq!(block_threads(&entry::shared_chase), 32);
        assert_eq!(block_threads(&entry::fma_latency), 32);
        assert_eq!(block_threads(&entry::wgmma_tf32_throughput), 128);
        assert_eq!(block_threads(&entry::issue_mix), 256);
        // Each kernel's rate in order; l2_bulk_read's shared rate last, besides.
        let named = crate::profile::compute::tests::sample().named();
        assert_eq!(named[9].0, "l2_bulk_shared_gb_per_s");
        assert_eq!(
            COMPUTE.map(|k| k.name).to_vec(),
            named[..9]
                .iter()
                .map(|&(name, _)| match name {
                    "fma_per_ns_per_sm" => "fma_throughput",
                    "issue_per_ns_per_sm" => "issue_mix",
                    "mma_tf32_per_ns_per_sm" => "mma_tf32_throughput",
                    "wgmma_tf32_flops_per_ns_per_sm" => "wgmma_tf32_throughput",
                    "l2_read_gb_per_s" => "l2_read",
                    "fma_latency_ns" => "fma_latency",
                    "shared_latency_ns" => "shared_chase",
                    "l1_requests_per_ns_per_sm" => "line_requests",
                    _ => "l2_bulk_read",
                })
                .collect::<Vec<_>>()
        );
    }
}
