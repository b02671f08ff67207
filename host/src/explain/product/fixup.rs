//! A stream-k product's fix-up (kernels/src/hgemm/stream_k.rs): the wait of a split
//! tile's owner for its contributors' partial tiles, which the loop's pace does not
//! show.
//!
//! Each cluster walks its units in order: its whole tiles, then its range of split
//! k-blocks. A range that starts inside a tile contributes its first part: the block
//! stores its partial accumulators to its workspace slot and releases its flags (the
//! release waits for those stores). A range that ends inside a tile owns it: after its
//! own part the block waits for each contributor in turn, at the earliest when that
//! contributor has walked up to the end of its part and stored it, then loads and adds
//! that partial. The launch ends with its last cluster: the owner's chain of waits,
//! not the even spread of k-blocks the loop's pace assumes, can set it.
//!
//! Every term is the model's: a k-block at the loop's pace, a partial's bytes at the
//! L2's rates as its SMs share them ([`ChainRates`]).

use kernels::hgemm::stream_k::{Deal, HYBRID, slot_words};
use kernels::hgemm::tiling::{BK, STREAM_K};

use crate::problem::Problem;
use crate::profile::Profile;

/// The kernels that deal a product's k-blocks as stream-k does, and so fix up split
/// tiles through workspace.
pub const STREAM_K_KERNELS: [&str; 2] = ["hgemm_stream_k_bf16", "hgemm_stream_k_f16"];

/// How a launch splits its tiles: the kernel's own deal, and the bytes of a block's
/// partial tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub deal: Deal,
    pub partial_bytes: u64,
}

/// The split of `kernel`'s launch of `blocks` blocks (clusters of two) at `problem`,
/// if it deals its work as stream-k does.
pub fn of_launch(kernel: &str, problem: &Problem, blocks: u64) -> Option<Split> {
    if !STREAM_K_KERNELS.contains(&kernel) {
        return None;
    }
    let Problem::Product { m, n, k } = *problem else {
        return None;
    };
    let t = STREAM_K;
    let clusters = u32::try_from(blocks / 2).ok().filter(|&c| c > 0)?;
    Some(Split {
        deal: Deal::new(
            u32::try_from(t.cluster_tiles(m as u64, n as u64)).ok()?,
            u32::try_from(k.div_ceil(BK)).ok()?,
            clusters,
            HYBRID,
        ),
        partial_bytes: (slot_words(t) * 4) as u64,
    })
}

/// What a step of the chain takes, ns: a k-block at the loop's pace, a partial's
/// store (to the contributor's release), and a partial's load and add by the owner.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainRates {
    pub k_block_ns: f64,
    pub store_ns: f64,
    pub gather_ns: f64,
}

impl Split {
    /// The most k-blocks one cluster walks: what the loop's pace sets the time by.
    pub fn busiest_k_blocks(&self) -> u32 {
        (0..self.deal.clusters)
            .map(|c| self.deal.walk(c).map(|u| u.k1 - u.k0).sum::<u32>())
            .max()
            .unwrap_or(0)
    }

    /// Blocks that store a partial (contributors) and blocks that wait for one
    /// (owners of a tile with contributors): those that share the L2 while they do.
    pub fn storing_and_gathering_blocks(&self) -> (u64, u64) {
        let d = self.deal;
        let (mut storing, mut gathering) = (0, 0);
        for c in 0..d.clusters {
            for u in d.walk(c) {
                if u.k0 != 0 {
                    storing += 2;
                } else if u.k1 < d.ktiles && d.contributors(c, u.tile).next().is_some() {
                    gathering += 2;
                }
            }
        }
        (storing, gathering)
    }

    /// What the chain adds to a loop of `loop_ns` (the busiest cluster's k-blocks at
    /// the loop's pace): a partial's stores take `store_ns(bytes, blocks storing)`,
    /// its loads `bytes / read_rate(blocks loading)` (bytes per ns an SM).
    pub fn added_ns(
        &self,
        loop_ns: f64,
        store_ns: impl Fn(f64, u64) -> f64,
        read_rate: impl Fn(u64) -> f64,
        profile: &Profile,
    ) -> f64 {
        let (storing, gathering) = self.storing_and_gathering_blocks();
        let bytes = self.partial_bytes as f64;
        // A gather is two loads in turn, each a load's latency where the L2 holds the
        // data (the partial was just written): the flag's acquire, then the partial's
        // loads, which wait for it.
        let latency = profile
            .l2_resident
            .as_ref()
            .map_or(profile.idle_latency_ns, |l2| l2.loaded_latency_ns);
        let chain = ChainRates {
            k_block_ns: loop_ns / f64::from(self.busiest_k_blocks().max(1)),
            store_ns: store_ns(bytes, storing),
            gather_ns: 2.0 * latency + bytes / read_rate(gathering),
        };
        (self.finish_ns(chain) - loop_ns).max(0.0)
    }

    /// When the last cluster is done, ns from the launch's start: each walks its
    /// units at the loop's pace; a contributor stores its part before it goes on; an
    /// owner, after its own part, takes each contributor's partial once that is
    /// stored, one after another.
    pub fn finish_ns(&self, r: ChainRates) -> f64 {
        let d = self.deal;
        // Contributors have lower cluster indices than their owners (ranges are dealt
        // from the last cluster back), so walking in index order knows each one's
        // release before its owner needs it.
        let mut released = vec![0.0f64; d.clusters as usize];
        let mut last = 0.0f64;
        for c in 0..d.clusters {
            let mut t = 0.0;
            for u in d.walk(c) {
                t += f64::from(u.k1 - u.k0) * r.k_block_ns;
                if u.k0 != 0 {
                    t += r.store_ns;
                    released[c as usize] = t;
                } else if u.k1 < d.ktiles {
                    for from in d.contributors(c, u.tile) {
                        t = t.max(released[from as usize]) + r.gather_ns;
                    }
                }
            }
            last = last.max(t);
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATES: ChainRates = ChainRates {
        k_block_ns: 100.0,
        store_ns: 30.0,
        gather_ns: 20.0,
    };

    fn split(tiles: u32, ktiles: u32, clusters: u32) -> Split {
        Split {
            deal: Deal::new(tiles, ktiles, clusters, HYBRID),
            partial_bytes: 1,
        }
    }

    /// Whole rounds split nothing: the last cluster ends with its k-blocks.
    #[test]
    fn whole_rounds_wait_for_nothing() {
        let s = split(8, 5, 4);
        assert_eq!(s.storing_and_gathering_blocks(), (0, 0));
        assert_eq!(s.busiest_k_blocks(), 10);
        assert_eq!(s.finish_ns(RATES), 1000.0);
    }

    /// One tile of 8 k-blocks over 4 clusters: cluster 3 owns k-blocks 0..2, and the
    /// others (2, 1, 0) contribute 2..4, 4..6, 6..8. All end their parts together,
    /// so the owner takes the three partials after one store: 2 k-blocks, a store,
    /// three gathers.
    #[test]
    fn an_owner_takes_its_contributors_partials_one_after_another() {
        let s = split(1, 8, 4);
        assert_eq!(s.storing_and_gathering_blocks(), (6, 2));
        assert_eq!(s.busiest_k_blocks(), 2);
        assert_eq!(s.finish_ns(RATES), 2.0 * 100.0 + 30.0 + 3.0 * 20.0);
    }

    /// One tile of 9 k-blocks over 2 clusters: cluster 1 owns k-blocks 0..5, cluster 0
    /// contributes 5..9. The owner takes the partial when both its own part is done
    /// and the contributor's store is: whichever is later.
    #[test]
    fn an_owner_waits_for_the_later_of_its_own_part_and_the_store() {
        let s = split(1, 9, 2);
        let (own_end, stored) = (5.0 * 100.0, 4.0 * 100.0 + 30.0);
        assert_eq!(s.finish_ns(RATES), own_end + 20.0);
        let slow = ChainRates {
            store_ns: 1000.0,
            ..RATES
        };
        assert_eq!(s.finish_ns(slow), 4.0 * 100.0 + 1000.0 + 20.0);
        assert!(stored < own_end);
    }

    #[test]
    fn only_stream_k_kernels_split() {
        let p = Problem::Product {
            m: 1024,
            n: 1024,
            k: 1024,
        };
        assert!(of_launch("hgemm_tma_store_bf16", &p, 132).is_none());
        let s = of_launch("hgemm_stream_k_bf16", &p, 132).unwrap();
        // 1024³ in 256 x 256 pair tiles: 16 tiles of 16 k-blocks for 66 clusters.
        assert_eq!((s.deal.tiles, s.deal.ktiles, s.deal.clusters), (16, 16, 66));
        assert_eq!(s.partial_bytes, 128 * 1024);
    }

    /// The names are those of the stream-k rungs' kernels (a renamed kernel would
    /// otherwise lose its fix-up silently).
    #[test]
    fn the_names_are_the_stream_k_rungs_kernels() {
        use crate::experiments::hgemm::{BF16, F16};
        let kernels = [&BF16, &F16].map(|e| e.variant("stream-k").unwrap().kernel.name);
        assert_eq!(kernels, STREAM_K_KERNELS);
    }
}
