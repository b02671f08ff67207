//! One variant explained: its launch emulated over a sample of blocks (and a wave
//! where the sample cannot say what the DRAM moves), and, with a profile, its time
//! predicted: a bandwidth-bound kernel's ([`super::bandwidth`]) or a product's
//! ([`super::product`]).

use super::bandwidth::{self, sweep};
use super::emulate::window::{self, What};
use super::emulate::{self, EmuLaunch, vectorize};
use super::options::{Options, sizing_gpu};
use super::product;
use super::report::{DramWindow, KernelReport};
use super::residency;
use crate::error::Result;
use crate::experiment::{Experiment, Problem, Variant, Work};

/// Emulates and analyses one variant at `problem`; `progress` hears `(blocks done,
/// blocks in the window)` as each emulated block ends.
pub fn explain_variant(
    experiment: &'static Experiment,
    variant: &'static Variant,
    problem: Problem,
    opts: &Options,
    progress: &dyn Fn(usize, usize),
) -> Result<KernelReport> {
    let launch = EmuLaunch::new(experiment, variant, problem, &sizing_gpu(opts))?;
    let total = launch.grid.count();
    let sample = emulate::sample_blocks(total, opts.blocks, launch.kernel.cluster as usize);
    let sampled = sample.is_some();
    let (regions, addrs) = emulate::regions(&launch)?;
    // The GPU runs what ptxas made of the source: its vector shared accesses.
    let vectorized = vectorize::of_kernel(launch.kernel);
    let name = format!("{}/{}", experiment.name, variant.name);
    let windows = window::WindowedLaunch {
        launch: &launch,
        name: &name,
        regions: &regions,
        addrs: &addrs,
        vectorized: &vectorized,
        limit: opts.memory_limit,
        progress,
    };
    let counted = windows.count(sample.clone(), What::Sites(opts.model))?;
    let mut traffic = counted.traffic.traffic();
    let size = residency::LaunchSize {
        blocks: total as u64,
        threads_per_block: launch.block.x * launch.block.y * launch.block.z,
        dynamic_shared_bytes: u32::try_from(launch.dynamic_shared_bytes).unwrap_or(u32::MAX),
        cluster: launch.kernel.cluster.max(1),
    };
    let mut dram_window = None;
    // Only bandwidth-bound kernels: a product's time is set by its arithmetic.
    let prediction = match ((experiment.work)(&problem), &opts.profile) {
        (Work::Bytes(bytes), Some(p)) => {
            let resources = residency::resources(launch.kernel.name, p);
            // The GPU runs a wave of consecutive blocks at once, and the L2 serves a
            // segment they share once: where the sampled blocks, far apart, use a
            // segment only in part, count the traffic over the first wave instead.
            let wave = residency::wave_blocks(size, p, resources.as_ref().ok().copied());
            let first_wave = || Some((0..wave as usize).collect());
            let mut wave_counts = None;
            if sampled && traffic.shares_segments(p.dram_read_granularity) {
                let counts = windows.count(first_wave(), What::Traffic)?.traffic;
                traffic = counts.traffic();
                wave_counts = Some(counts);
                dram_window = Some(DramWindow {
                    first: 0,
                    blocks: wave,
                });
            }
            // How far a wave's requests spread (a profile with a spread sweep): over the
            // first wave, emulated whole if it was not already (its global accesses
            // alone), unless no spread could change the time (another bound sets it even
            // at the least share).
            let prediction = bandwidth::predict(bytes, &traffic, size, p, resources.clone());
            let least = p.spread_sweep.as_deref().map(sweep::least_spread_share);
            match (least, &prediction) {
                (Some(least), Some(unspread)) if unspread.dram_ceiling_matters(least) => {
                    let buffers: Vec<_> = regions.iter().map(|(_, r)| r.clone()).collect();
                    traffic.wave_spread = Some(match wave_counts {
                        Some(counts) => counts.spread(&buffers),
                        None if sampled => windows
                            .count(first_wave(), What::Sectors)?
                            .traffic
                            .spread(&buffers),
                        None => counted.traffic.spread(&buffers),
                    });
                    bandwidth::predict(bytes, &traffic, size, p, resources)
                }
                _ => prediction,
            }
        }
        _ => None,
    };
    let (product, product_unpredicted) = match ((experiment.work)(&problem), &opts.profile) {
        (Work::Flops { flops, bytes }, Some(p)) => {
            let emulated = sample.as_ref().map_or(total, Vec::len);
            let share = emulated as f64 / total.max(1) as f64;
            // What the emulated blocks compute: the tensor cores' FLOPs where they
            // count them (a tile past the matrix's edge computes zeros), else the
            // declared FLOPs' share.
            let window_flops = match counted.tensor_flops {
                0 => flops as f64 * share,
                counted => counted as f64,
            };
            // The most any emulated block computes: a persistent kernel's blocks
            // walk whole tiles, some one more than others.
            let busiest_block_flops =
                (counted.busiest_tensor_flops > 0).then_some(counted.busiest_tensor_flops as f64);
            let window = product::Window {
                flops: window_flops,
                launch_flops: window_flops / share,
                busiest_block_flops,
                split: product::fixup::of_launch(launch.kernel.name, &problem, total as u64),
                tensor_warps_per_block: counted.tensor_warps_per_block,
                sites: counted.sites.as_deref().unwrap_or_default(),
                traffic: &traffic,
            };
            match product::of_kernel(launch.kernel.name, flops, bytes, &window, size, p) {
                Ok(prediction) => (Some(prediction), None),
                Err(why) => (None, Some(why)),
            }
        }
        _ => (None, None),
    };
    Ok(KernelReport {
        experiment: experiment.name.to_string(),
        variant: variant.name.to_string(),
        kernel: variant.kernel.name.to_string(),
        problem,
        size_bytes: crate::harness::baseline_bytes(experiment, &problem).unwrap_or(0),
        grid: [launch.grid.x, launch.grid.y, launch.grid.z],
        block: [launch.block.x, launch.block.y, launch.block.z],
        blocks_total: total,
        sampled_blocks: sample,
        sites: counted.sites.unwrap_or_default(),
        traffic,
        dram_window,
        vectorized,
        folded: counted.folded,
        prediction,
        product,
        product_unpredicted,
    })
}
