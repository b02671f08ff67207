//! One window of a launch (a sample of blocks, or a wave), emulated block by block:
//! each block's log is merged as ptxas merges shared accesses ([`super::vectorize`]),
//! summed per site ([`super::analyse::Sites`]) and into the traffic
//! ([`super::traffic::Counter`]), and dropped. Memory holds one block's log and the
//! counts, both within a limit one emulation may hold, checked as they grow.

use std::ops::ControlFlow;

use kernels::gpu::emu::LaunchError;

use super::MAX_OCCURRENCES;
use super::analyse::{SiteStats, Sites};
use super::model::Model;
use super::requests::Requests;
use super::traffic::Counter;
use super::vectorize::{self, Vectorized};
use super::{self as emulate, EmuLaunch, Regions};
use crate::error::{Error, Result};
use crate::units::format_bytes;

/// A launch ready to be counted over windows of its blocks.
pub struct WindowedLaunch<'a> {
    pub launch: &'a EmuLaunch,
    /// `EXPERIMENT/VARIANT`, as the user names it.
    pub name: &'a str,
    pub regions: &'a Regions,
    pub addrs: &'a [usize],
    pub vectorized: &'a Vectorized,
    /// The most memory one emulation may hold: half for one block's log, half for the
    /// counts.
    pub limit: u64,
    /// Hears `(blocks done, blocks in the window)` as each block ends.
    pub progress: &'a dyn Fn(usize, usize),
}

/// What to count over a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// Per-site statistics under a model, and the traffic (a sample).
    Sites(Model),
    /// The traffic (a wave).
    Traffic,
    /// The sectors global accesses touch, for their spread alone (a wave).
    Sectors,
}

/// What a window's blocks did.
pub struct Counted {
    pub traffic: Counter,
    /// Per site, where asked for.
    pub sites: Option<Vec<SiteStats>>,
    /// Recorded scalar shared accesses folded into vector ones.
    pub folded: usize,
    /// FLOPs of the tensor-core instructions the blocks executed (none for FFMA kernels),
    /// and the most one block executed.
    pub tensor_flops: u64,
    pub busiest_tensor_flops: u64,
    /// Warps a block has that executed tensor-core instructions, over the window's
    /// blocks (None for FFMA kernels): a warp-specialised block's consumers.
    pub tensor_warps_per_block: Option<f64>,
}

impl WindowedLaunch<'_> {
    /// Emulates `blocks` (the whole grid when `None`) and counts what `what` asks for.
    pub fn count(&self, blocks: Option<Vec<usize>>, what: What) -> Result<Counted> {
        let total = blocks.as_ref().map_or(self.launch.grid.count(), Vec::len);
        let half = usize::try_from(self.limit / 2).unwrap_or(usize::MAX);
        let block_threads = self.launch.block.count() as u64;
        let (mut counter, sites, global_only) = match what {
            What::Sites(model) => (Counter::of_blocks_of(block_threads), Some(model), false),
            What::Traffic => (Counter::of_blocks_of(block_threads), None, false),
            What::Sectors => (Counter::sectors_only(), None, true),
        };
        let mut per_site = sites.map(|m| Sites::new(m, self.regions));
        let (mut folded, mut done, mut full) = (0, 0, false);
        let mut tensor_flops = 0;
        let mut busiest_tensor_flops = 0;
        let mut tensor_threads = 0;
        let cluster = u64::from(self.launch.kernel.cluster.max(1));
        let ran = emulate::record_each(
            self.launch,
            self.addrs,
            blocks,
            MAX_OCCURRENCES,
            global_only,
            half,
            |block| {
                // The GPU runs what ptxas made of the source: its vector shared accesses.
                folded += vectorize::merge(&mut block.accesses, self.vectorized);
                tensor_flops += block.tensor_flops;
                tensor_threads += block.tensor_threads;
                // A cluster's blocks come together: each its share.
                busiest_tensor_flops = busiest_tensor_flops.max(block.tensor_flops / cluster);
                if global_only {
                    counter.add(&block.accesses);
                } else {
                    let requests = Requests::of(&block.accesses);
                    if let Some(s) = &mut per_site {
                        s.add_requests(&block.accesses, &requests, &block.executions);
                    }
                    counter.add_requests(&block.accesses, &requests);
                }
                // A cluster's blocks are handed on together.
                done += self.launch.kernel.cluster.max(1) as usize;
                (self.progress)(done, total);
                full = counter.bytes() > half;
                if full {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        match ran {
            Err(LaunchError::TooLarge { .. }) => {
                return Err(self.too_large(format!(
                    "one block records more than {}",
                    format_bytes(half as u64)
                )));
            }
            Err(e) => return Err(emulate::emulation_error(self.launch.kernel.name)(e)),
            Ok(()) if full => {
                return Err(self.too_large(format!(
                    "what its blocks touch passes {} after {done} of {total} blocks",
                    format_bytes(half as u64)
                )));
            }
            Ok(()) => {}
        }
        Ok(Counted {
            traffic: counter,
            sites: per_site.map(Sites::finish),
            folded,
            tensor_flops,
            busiest_tensor_flops,
            // Blocks of a cluster are counted together, `done` each.
            tensor_warps_per_block: (tensor_threads > 0 && done > 0)
                .then(|| tensor_threads as f64 / 32.0 / done as f64),
        })
    }

    /// The refusal of a window that needs more than the limit.
    fn too_large(&self, why: String) -> Error {
        Error::TooLarge {
            what: format!("emulating {} ({})", self.name, self.launch.kernel.name),
            why: format!(
                "{why}, and one kernel's emulation may hold {}; pass a smaller --blocks, --size or --shape",
                format_bytes(self.limit)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ops::ControlFlow;

    use kernels::gpu::emu::Recording;

    use super::*;
    use crate::explain::emulate::analyse;
    use crate::explain::emulate::traffic::spread_of;
    use crate::explain::reference_gpu;

    /// Counting a window block by block, as explain does, gives what counting its
    /// whole log at once gives: per site, the traffic and the spread.
    #[test]
    fn counting_block_by_block_gives_what_the_whole_log_gives() {
        for (word, shape) in [
            ("transpose/tiled", vec![200, 300]),
            ("sgemm/async-128x128x8", vec![300, 260, 70]),
            ("particles/aos", vec![]),
            ("stride/64", vec![]),
        ] {
            let (name, variant) = word.split_once('/').unwrap();
            let exp = crate::experiments::named(name).unwrap();
            let variant = exp.variant(variant).unwrap();
            let (problem, _) = exp
                .requested_problem(Some(1 << 20), Some(&shape), &reference_gpu())
                .unwrap();
            let launch = EmuLaunch::new(exp, variant, problem, &reference_gpu()).unwrap();
            let (regions, addrs) = emulate::regions(&launch).unwrap();
            let buffers: Vec<_> = regions.iter().map(|(_, r)| r.clone()).collect();
            let vectorized = vectorize::of_kernel(launch.kernel);
            let total = launch.grid.count();
            let blocks: Vec<usize> = [0, 1, total / 2, total - 1]
                .into_iter()
                .filter(|&b| b < total)
                .collect();
            let mut blocks = blocks;
            blocks.dedup();
            let mut all = Recording::default();
            emulate::record_each(
                &launch,
                &addrs,
                Some(blocks.clone()),
                16,
                false,
                usize::MAX,
                |r| {
                    all.accesses.append(&mut r.accesses);
                    all.executions.append(&mut r.executions);
                    ControlFlow::Continue(())
                },
            )
            .unwrap();
            let folded = vectorize::merge(&mut all.accesses, &vectorized);
            let windows = WindowedLaunch {
                launch: &launch,
                name: word,
                regions: &regions,
                addrs: &addrs,
                vectorized: &vectorized,
                limit: u64::MAX,
                progress: &|_, _| {},
            };
            let counted = windows
                .count(Some(blocks.clone()), What::Sites(Model::Sm70))
                .unwrap();
            let sites = analyse::analyse(&all.accesses, &all.executions, Model::Sm70, &regions);
            assert!(!sites.is_empty(), "{word}");
            assert_eq!(counted.sites.as_ref(), Some(&sites), "{word}");
            assert_eq!(counted.folded, folded, "{word}");
            let mut whole = Counter::of_blocks_of(launch.block.count() as u64);
            whole.add(&all.accesses);
            assert_eq!(counted.traffic.traffic(), whole.traffic(), "{word}");
            let spread = spread_of(&all.accesses, &buffers);
            assert_eq!(counted.traffic.spread(&buffers), spread, "{word}");
            let sectors = windows.count(Some(blocks), What::Sectors).unwrap();
            assert_eq!(sectors.traffic.spread(&buffers), spread, "{word}");
        }
    }
}
