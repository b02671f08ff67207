//! How the GPU runs a launch's blocks ([`Waves`]): whole waves of as many blocks as the
//! SMs hold, the last one partial, with clusters placed as the hardware places them.

use serde::Serialize;

use crate::explain::residency::LaunchSize;

/// The schedule of a launch's blocks on the GPU's SMs.
///
/// A cluster of c blocks runs on c SMs of one GPC at once, so the model treats the SMs
/// in groups of c (floor(SMs / c) groups; an SM left over runs none of them). Each
/// group holds `per_sm` clusters at once (one block of each on every SM of the group),
/// and the block scheduler hands a finished group the next cluster: the busiest group
/// runs ceil(clusters / groups) clusters, so each of its SMs runs that many blocks, in
/// rounds of `per_sm`; the last round holds what is left. Without clusters, c = 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Waves {
    /// Blocks one SM runs at once (residency).
    pub per_sm: u64,
    /// Blocks the busiest SM runs in all.
    pub busiest: u64,
    /// Rounds the busiest SM runs them in, the last possibly partial.
    pub rounds: u64,
    /// Blocks the busiest SM runs in its last round (`per_sm` when it is full).
    pub last_round_blocks: u64,
    /// SMs with blocks in the full rounds and in the last one: the GPU-wide units (the
    /// L2, the DRAM) serve only those.
    pub busy_sms: u64,
    pub last_busy_sms: u64,
}

impl Waves {
    /// The schedule of `launch` on `sms` SMs that hold `per_sm` of its blocks each.
    pub fn of(launch: LaunchSize, per_sm: u32, sms: u32) -> Waves {
        let c = u64::from(launch.cluster.max(1));
        let per_sm = u64::from(per_sm.max(1));
        let groups = (u64::from(sms) / c).max(1);
        let clusters = launch.blocks.max(1).div_ceil(c);
        let busiest = clusters.div_ceil(groups);
        let rounds = busiest.div_ceil(per_sm);
        let last_round_blocks = busiest - (rounds - 1) * per_sm;
        // The clusters left for the last round, spread over the groups.
        let before_last = (rounds - 1) * per_sm * groups;
        let last_clusters = clusters - before_last.min(clusters);
        let busy_groups = if rounds > 1 { groups } else { clusters.min(groups) };
        Waves {
            per_sm,
            busiest,
            rounds,
            last_round_blocks,
            busy_sms: busy_groups * c,
            last_busy_sms: last_clusters.min(groups) * c,
        }
    }

    /// Full rounds before the last one, and the last one's blocks per SM: a last round
    /// as full as the others counts with them.
    pub fn full_and_last(&self) -> (u64, u64) {
        if self.last_round_blocks == self.per_sm {
            (self.rounds, 0)
        } else {
            (self.rounds - 1, self.last_round_blocks)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(blocks: u64, cluster: u32) -> LaunchSize {
        LaunchSize {
            blocks,
            threads_per_block: 384,
            dynamic_shared_bytes: 0,
            cluster,
        }
    }

    #[test]
    fn one_block_more_than_a_full_wave_is_a_second_round() {
        let full = Waves::of(launch(132 * 2, 1), 2, 132);
        assert_eq!((full.rounds, full.last_round_blocks, full.busy_sms), (1, 2, 132));
        assert_eq!(full.full_and_last(), (1, 0));
        let more = Waves::of(launch(132 * 2 + 1, 1), 2, 132);
        assert_eq!((more.busiest, more.rounds, more.last_round_blocks), (3, 2, 1));
        assert_eq!(more.full_and_last(), (1, 1));
        // One SM runs the block left over.
        assert_eq!((more.busy_sms, more.last_busy_sms), (132, 1));
    }

    #[test]
    fn a_grid_smaller_than_the_gpu_leaves_sms_idle() {
        let w = Waves::of(launch(32, 1), 1, 132);
        assert_eq!((w.busiest, w.rounds, w.busy_sms, w.last_busy_sms), (1, 1, 32, 32));
    }

    #[test]
    fn clusters_of_two_take_pairs_of_sms() {
        // 133 SMs make 66 pairs: 67 clusters need a second round, as 134 blocks
        // without clusters would not (133 SMs hold 133 of them).
        let paired = Waves::of(launch(134, 2), 1, 133);
        assert_eq!((paired.busiest, paired.rounds), (2, 2));
        assert_eq!((paired.busy_sms, paired.last_busy_sms), (132, 2));
        let single = Waves::of(launch(133, 1), 1, 133);
        assert_eq!(single.rounds, 1);
        // 132 SMs: 66 pairs hold 66 clusters in one round.
        assert_eq!(Waves::of(launch(132, 2), 1, 132).rounds, 1);
    }
}
