//! The compute rates (kernels/src/calibrate/pipes.rs): FFMAs, instructions issued,
//! tensor-core MMAs, L2 reads (the SMs' and the copy engine's), and the latencies of a
//! dependent FFMA and a dependent shared load.
//! Each rate is one declared count of work per launch ([`Microbenchmark::units`]) over
//! the median launch (and the SMs, where per SM); each kernel's output is checked
//! against a CPU computation of the same arithmetic before its time is used.

use cust::memory::CopyDestination;

use super::Effort;

mod expected;
mod run;
mod table;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::profile::ComputeRates;
use crate::timing::time_launches;
pub use expected::{
    FMA_A, FMA_B, ISSUE_K, MMA_A, MMA_B, WGMMA_B, bulk_sum, chase_end, check_wgmma_16bit_blocks,
    check_wgmma_16bit_n128_blocks, check_wgmma_blocks, fma_chain, fma_chains, issue_chains, l2_sums,
    l2_value, line_sum, line_value, mma_sum, wgmma_16bit_block_total, wgmma_block_total,
};
pub use run::{Inputs, Ran, bulk_shape, l2_shape};
pub use table::{BULK_SHARERS, Blocks, COMPUTE, Microbenchmark, Rate, Rounds, Setup, Work, power_runs};

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

/// The first value of `got` that is not `want(i)`, or None.
fn first_wrong<T: PartialEq + std::fmt::Debug>(got: &[T], want: impl Fn(usize) -> T) -> Option<String> {
    got.iter()
        .enumerate()
        .find(|(i, v)| **v != want(*i))
        .map(|(i, v)| format!("thread {i} stored {v:?} instead of {:?}", want(i)))
}

/// Runs and times the compute kernels: each at full residency (as many blocks as the
/// driver says fit, on every SM), the latency ones as one warp. Returns the rates, how
/// each was run and the validation failures.
pub fn compute_rates(
    gpu: &Gpu,
    effort: Effort,
    progress: &mut impl FnMut(&str),
) -> Result<(ComputeRates, Vec<ComputeRun>, Vec<String>)> {
    let (info, reps) = (&gpu.info, effort.reps());
    let mut runs = Vec::new();
    let mut failures = Vec::new();
    let mut rates: [Option<f64>; 11] = [None; 11];
    let mut bulk_shared = None;
    for (i, bench) in COMPUTE.iter().enumerate() {
        let kernel = bench.kernel();
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
        let cfg = bench.launch(gpu, None)?;
        let inputs = |group| Inputs {
            quick: effort.quick,
            span: info.l2_bytes,
            group,
        };
        let time = |launch: &mut dyn FnMut() -> Result<()>| time_launches(gpu, reps, launch);
        // Lines that many SMs read at once first, then (below) lines one SM reads.
        if let Setup::BulkRead { sharers, .. } = bench.setup {
            let shared = bench.run(gpu, cfg, inputs(sharers), time)?;
            failures.extend(shared.failure);
            bulk_shared = bench
                .rate
                .of(shared.units, shared.measured.median_ms, info.sm_count);
        }
        let ran = bench.run(gpu, cfg, inputs(1), time)?;
        failures.extend(ran.failure);
        let ms = ran.measured.median_ms;
        rates[i] = bench.rate.of(ran.units, ms, info.sm_count);
        if rates[i].is_none() {
            return Err(Error::BadProfile {
                path: "calibrate".into(),
                why: format!("{} took {ms} ms: no rate", kernel.name),
            });
        }
        runs.push(ComputeRun {
            kernel: kernel.name,
            blocks: cfg.grid.0,
            threads: cfg.block.0,
            rounds: ran.rounds,
            skipped: None,
        });
    }
    let [
        fma,
        issue,
        mma,
        wgmma,
        wgmma_16bit,
        wgmma_16bit_n128,
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
        wgmma_16bit_flops_per_ns_per_sm: wgmma_16bit,
        wgmma_16bit_n128_flops_per_ns_per_sm: wgmma_16bit_n128,
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
    use crate::profile::power::Energy;
    use kernels::entry;
    use kernels::handle::KernelInfo;

    /// The table's entry of `kernel`.
    fn bench(kernel: &KernelInfo) -> &'static Microbenchmark {
        COMPUTE
            .iter()
            .find(|b| b.kernel() == kernel)
            .unwrap_or_else(|| panic!("{} is not a compute microbenchmark", kernel.name))
    }

    /// `kernel`'s units of work in a launch of `blocks` blocks of its threads.
    fn units(kernel: &KernelInfo, blocks: u64, rounds: u64, layers: u64) -> u64 {
        let b = bench(kernel);
        (b.units)(Work {
            blocks,
            threads: blocks * u64::from(b.threads),
            rounds,
            layers,
        })
    }

    #[test]
    fn each_microbenchmark_counts_what_a_launch_does() {
        // 1056 blocks of 256 threads (8 warps), 2048 rounds.
        let warps = 1056 * 8 * 2048;
        assert_eq!(units(&entry::fma_throughput, 1056, 2048, 1), warps * 128);
        assert_eq!(units(&entry::issue_mix, 1056, 2048, 1), warps * (128 + 64));
        assert_eq!(units(&entry::mma_tf32_throughput, 1056, 2048, 1), warps * 16);
        // 396 warpgroups, 1024 rounds of 8 m64n256k8: 2 x 64 x 256 x 8 FLOPs each.
        assert_eq!(
            units(&entry::wgmma_tf32_throughput, 396, 1024, 1),
            396 * 1024 * 8 * 262_144
        );
        // The same of m64n256k16: twice the FLOPs a wgmma.
        assert_eq!(
            units(&entry::wgmma_bf16_throughput, 396, 1024, 1),
            396 * 1024 * 8 * 524_288
        );
        // And of m64n128k16: half that a wgmma.
        assert_eq!(
            units(&entry::wgmma_bf16_n128_throughput, 396, 1024, 1),
            396 * 1024 * 8 * 262_144
        );
        // A float4 a layer a thread a round.
        assert_eq!(units(&entry::l2_read, 1056, 600, 3), 1056 * 256 * 600 * 3 * 16);
        // A stage of each of 4 stages a block a round: 4 x 8 KiB.
        assert_eq!(units(&entry::l2_bulk_read, 132, 10, 1), 132 * 10 * 4 * 8192);
        // One warp's chain.
        assert_eq!(units(&entry::fma_latency, 1, 16384, 1), 16384 * 64);
        assert_eq!(units(&entry::shared_chase, 1, 2048, 1), 2048 * 64);
        assert_eq!(units(&entry::line_requests, 1056, 2048, 1), warps * 16);
    }

    #[test]
    fn the_l2_buffer_is_a_quarter_of_the_l2_and_each_round_moves_on() {
        // An H100: 1056 blocks of 256 threads, 50 MiB of L2: 3 layers of 4.1 MiB.
        let threads = 1056 * 256;
        let (layers, shift) = l2_shape(threads, 50 << 20);
        assert_eq!(layers, 3);
        assert_eq!(shift, 403 * 256);
        assert_eq!(shift % 256, 0);
        // 8 GiB a launch, in rounds of every thread's 3 float4s.
        let l2 = bench(&entry::l2_read);
        let per_round = units(&entry::l2_read, 1056, 1, layers as u64);
        let rounds = l2.rounds.count(false, per_round);
        assert_eq!(rounds, 661);
        assert_eq!(l2.rounds.count(true, per_round), 82);
        // However large a round, one.
        assert_eq!(l2.rounds.count(true, u64::MAX), 1);
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
    fn the_table_is_in_the_order_of_the_rates() {
        // Each kernel's rate in order; l2_bulk_read's shared rate last, besides.
        let named = crate::profile::compute::tests::sample().named();
        let kernels = [
            ("fma_per_ns_per_sm", entry::fma_throughput.info()),
            ("issue_per_ns_per_sm", entry::issue_mix.info()),
            ("mma_tf32_per_ns_per_sm", entry::mma_tf32_throughput.info()),
            (
                "wgmma_tf32_flops_per_ns_per_sm",
                entry::wgmma_tf32_throughput.info(),
            ),
            (
                "wgmma_16bit_flops_per_ns_per_sm",
                entry::wgmma_bf16_throughput.info(),
            ),
            (
                "wgmma_16bit_n128_flops_per_ns_per_sm",
                entry::wgmma_bf16_n128_throughput.info(),
            ),
            ("l2_read_gb_per_s", entry::l2_read.info()),
            ("fma_latency_ns", entry::fma_latency.info()),
            ("shared_latency_ns", entry::shared_chase.info()),
            ("l1_requests_per_ns_per_sm", entry::line_requests.info()),
            ("l2_bulk_read_gb_per_s", entry::l2_bulk_read.info()),
        ];
        assert_eq!(named.len(), COMPUTE.len() + 1);
        assert_eq!(named[11].0, "l2_bulk_shared_gb_per_s");
        for ((bench, (rate, _)), (want_rate, want_kernel)) in COMPUTE.iter().zip(named).zip(kernels) {
            assert_eq!((rate, bench.kernel().name), (want_rate, want_kernel.name));
        }
    }

    /// Every entry can be run as the table says: something a new or edited entry can
    /// get wrong, caught without a GPU.
    #[test]
    fn every_entry_is_well_formed() {
        for b in &COMPUTE {
            let k = b.kernel();
            let name = k.name;
            assert_eq!(
                COMPUTE.iter().filter(|o| o.kernel() == k).count(),
                1,
                "{name}: one entry a kernel"
            );
            assert!(
                b.threads % 32 == 0 && (32..=1024).contains(&b.threads),
                "{name}: whole warps"
            );
            if let Some(bounds) = k.launch_bounds {
                assert!(b.threads <= bounds.threads, "{name}: within its launch bounds");
            }
            assert!(
                b.shared_bytes <= 227 * 1024,
                "{name}: more shared memory than a block has"
            );
            // A latency is one warp alone; a rate fills the GPU.
            assert_eq!(
                b.rate == Rate::Latency,
                b.blocks == Blocks::One && b.threads == 32,
                "{name}: latencies run one warp"
            );
            // Byte rates read a fixed number of bytes a launch, whatever their buffer.
            match b.rounds {
                Rounds::Fixed(n) => {
                    assert!(
                        n >= 8 && n % 8 == 0,
                        "{name}: quick is an exact eighth, at least one round"
                    );
                    assert_ne!(b.rate, Rate::Gpu, "{name}: a byte rate sizes its rounds by bytes");
                }
                Rounds::Bytes(bytes) => {
                    assert!(bytes >= 8 << 20, "{name}: a launch long enough to time");
                    assert_eq!(b.rate, Rate::Gpu, "{name}: rounds by bytes are a byte rate's");
                }
            }
            // Some work, as much again each round: the rate is units over time.
            let work = |rounds| Work {
                blocks: 3,
                threads: 3 * u64::from(b.threads),
                rounds,
                layers: 2,
            };
            let one = (b.units)(work(1));
            assert!(one > 0, "{name}: a round does some work");
            assert_eq!(
                (b.units)(work(5)),
                5 * one,
                "{name}: work in proportion to the rounds"
            );
        }
        // Each energy of the power fit priced by exactly one entry, in the fit's order.
        let priced: Vec<Energy> = power_runs().into_iter().map(|(e, _)| e).collect();
        assert_eq!(priced, Energy::ALL);
    }
}
