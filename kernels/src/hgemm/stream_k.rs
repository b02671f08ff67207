//! Rung 7, `stream-k`: the tma-store rung ([`super::wgmma`]) with the work dealt out
//! as k-blocks instead of whole tiles (Osama et al., "Stream-K", PPoPP 2023).
//!
//! A product of T pair tiles (a cluster's two row tiles on the same columns) and K
//! k-blocks of 64 is T x K multiply-accumulate iterations. Whole tiles dealt to G
//! clusters leave the last round part-empty whenever G does not divide T (1536³: 36
//! pair tiles for 66 clusters, the SMs 55% busy). Stream-k gives each cluster a
//! contiguous range of nearly T x K / G iterations, so every SM works to the end; a
//! range that starts or ends inside a tile leaves that tile split between clusters.
//!
//! The schedule is the hybrid (the paper's "data-parallel + two-tile stream-k"):
//! the tiles of all but the last full round are dealt whole (data-parallel), and only
//! the last full round and the partial one after it are split, each cluster's share
//! between one and two tiles' iterations. At 4096³ (256 pair tiles, 3.9 rounds) the
//! splits then touch 1.9 rounds of tiles instead of all 3.9, and a cluster hands on
//! at most one partial tile (128 KiB a block, written once and read once); a product
//! smaller than one round is stream-k throughout.
//! [`HYBRID`]` = false` splits every tile's iterations evenly instead.
//!
//! A split tile is fixed up through f32 workspace in global memory, a slot of the
//! tile's accumulators a block, and one flag a consumer warp ([`crate::gpu::flag`]).
//! The block whose range holds the tile's k-block 0 owns it; it reaches that part last
//! in its range (its range ends inside the tile), so the clusters after it, which
//! start their ranges with the rest of the tile, have usually published by then. Each
//! of those contributors stores its partial accumulators to its own slot and releases
//! its warps' flags; the owner's warps wait for (acquire) them, add the partials,
//! clear the flags for the next launch (no memset between launches), and store the
//! tile as rung 5 does. A range holds at most one contributed part (its first), so a
//! slot a block suffices.
//!
//! Ranges are dealt from the last cluster back: range j is cluster G - 1 - j's, so a
//! tile's owner has a higher index than its contributors and waits only on clusters
//! the GPU started before it (blocks start in index order), never on one that needs
//! its SM. The emulator, which runs the clusters one after another in that order,
//! finds every flag set when a wait begins.

use super::epilogue::store_staged;
use super::tiling::{BK, HalfTiling, STREAM_K};
use super::wgmma::{consume, load_stage, ring, tile};
use crate::gpu::flag::Flags;
use crate::gpu::ring::Ring;
use crate::gpu::thread::{block_idx_x, grid_dim_x, sync_warp, thread_idx_x};
use crate::gpu::tma::{self, TensorMap};
use crate::gpu::wgmma::{self, Accumulator};
use crate::gpu::{Bf16, F16, Float4, Global, GlobalMut, Half};

/// Whether whole tiles go data-parallel before the last two rounds (the hybrid), or
/// every tile's iterations are split evenly.
pub const HYBRID: bool = true;

/// f32 words of one block's workspace slot: its consumer warps' accumulators.
pub const fn slot_words(t: HalfTiling) -> usize {
    t.bm() * t.bn
}

/// Bytes of workspace and flags a launch of `blocks` blocks of tiling `t` needs:
/// a slot a block, then a flag a consumer warp.
pub const fn scratch_bytes(t: HalfTiling, blocks: usize) -> usize {
    blocks * (slot_words(t) * 4 + t.consumer_warps() as usize * 4)
}

/// How a launch deals out a product's iterations: `dp` pair tiles whole, then the
/// `tiles - dp` after them as `ktiles` iterations each, in `clusters` ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deal {
    pub tiles: u32,
    pub ktiles: u32,
    pub clusters: u32,
    /// Tiles dealt whole, round-robin, before the split ones.
    pub dp: u32,
}

/// One piece of a cluster's work: k-blocks `k0..k1` of pair tile `tile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub tile: u32,
    pub k0: u32,
    pub k1: u32,
}

impl Deal {
    /// The deal of `tiles` pair tiles of `ktiles` k-blocks to `clusters` clusters,
    /// hybrid or not.
    pub const fn new(tiles: u32, ktiles: u32, clusters: u32, hybrid: bool) -> Deal {
        let (rounds, left) = (tiles / clusters, tiles % clusters);
        let split = if !hybrid {
            tiles
        } else if left == 0 {
            0
        } else if rounds == 0 {
            tiles
        } else {
            left + clusters
        };
        Deal {
            tiles,
            ktiles,
            clusters,
            dp: tiles - split,
        }
    }

    /// Where range `j` starts, in iterations of the split tiles: the first
    /// `total % clusters` ranges one iteration longer.
    #[inline(always)]
    pub const fn start(self, j: u32) -> u32 {
        let total = (self.tiles - self.dp) * self.ktiles;
        let (each, extra) = (total / self.clusters, total % self.clusters);
        j * each + if j < extra { j } else { extra }
    }

    /// The range of cluster `c` (dealt from the last cluster back).
    #[inline(always)]
    pub const fn range(self, c: u32) -> (u32, u32) {
        let j = self.clusters - 1 - c;
        (self.start(j), self.start(j + 1))
    }

    /// The split unit of cluster `c` at iteration `it` of its range ending at `end`.
    #[inline(always)]
    pub const fn unit_at(self, it: u32, end: u32) -> Unit {
        let (tile, k0) = (it / self.ktiles, it % self.ktiles);
        let k1 = if self.ktiles - k0 < end - it {
            self.ktiles
        } else {
            k0 + end - it
        };
        Unit {
            tile: self.dp + tile,
            k0,
            k1,
        }
    }

    /// The units of cluster `c`, in order: its whole tiles, then its range of split
    /// iterations. (An iterator, not a closure, so the kernel's loop body is its own
    /// and the accumulators stay in registers.)
    #[inline(always)]
    pub fn walk(self, c: u32) -> Walk {
        let (it, end) = self.range(c);
        Walk {
            deal: self,
            tile: c,
            it,
            end,
        }
    }

    /// The clusters after the owner `c` of split `tile` whose ranges add to it, in
    /// range order.
    #[inline(always)]
    pub fn contributors(self, c: u32, tile: u32) -> Contributors {
        Contributors {
            deal: self,
            j: self.clusters - c,
            end: (tile - self.dp + 1) * self.ktiles,
        }
    }
}

/// A cluster's units ([`Deal::walk`]).
pub struct Walk {
    deal: Deal,
    /// The next whole tile, while below `deal.dp`.
    tile: u32,
    /// The next split iteration, and the range's end.
    it: u32,
    end: u32,
}

impl Iterator for Walk {
    type Item = Unit;
    #[inline(always)]
    fn next(&mut self) -> Option<Unit> {
        let d = self.deal;
        if self.tile < d.dp {
            self.tile += d.clusters;
            return Some(Unit {
                tile: self.tile - d.clusters,
                k0: 0,
                k1: d.ktiles,
            });
        }
        if self.it >= self.end {
            return None;
        }
        let u = d.unit_at(self.it, self.end);
        self.it += u.k1 - u.k0;
        Some(u)
    }
}

/// A split tile's contributors ([`Deal::contributors`]).
pub struct Contributors {
    deal: Deal,
    /// The next range, and the iteration that ends the tile.
    j: u32,
    end: u32,
}

impl Iterator for Contributors {
    type Item = u32;
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        let d = self.deal;
        if self.j >= d.clusters || d.start(self.j) >= self.end {
            return None;
        }
        self.j += 1;
        Some(d.clusters - self.j)
    }
}

/// Where a block's consumer warp keeps its partial accumulators in the workspace:
/// Float4 `(w q + i) 32 + lane` of the block's slot holds the lane's accumulators
/// `4 i..4 i + 4` (q of them), so each store of a warp writes 512 bytes in a row.
#[inline(always)]
fn slot<A: Accumulator>(work: GlobalMut<f32>, t: HalfTiling, block: u32, warp: usize) -> GlobalMut<Float4> {
    let at = block as usize * slot_words(t) + warp * 32 * A::N / 2;
    // SAFETY: slots are slot_words(t) apart, a multiple of 4 f32s, from a 256-byte
    // aligned buffer.
    unsafe { work.offset(at).cast::<Float4>() }
}

/// A contributor's warp: stores its accumulators to its block's slot, then sets its
/// flag (lane 0, after the warp's lanes meet: the release covers their stores).
#[inline(always)]
unsafe fn publish<A: Accumulator>(
    acc: &A,
    (work, flags): (GlobalMut<f32>, Flags),
    t: HalfTiling,
    block: u32,
    warp: usize,
    lane: usize,
) {
    let (to, acc) = (slot::<A>(work, t, block, warp), acc.as_slice());
    // SAFETY: the block's own slot, in bounds (scratch_bytes); its flag is clear: the
    // owner cleared it in the launch before, and a block publishes once a launch.
    unsafe {
        unroll!(i < A::N / 8; 32 => {
            to.write(32 * i + lane, Float4::new(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
        });
        sync_warp();
        if lane == 0 {
            flags.release(block as usize * t.consumer_warps() as usize + warp);
        }
    }
}

/// The owner's warp: waits for a contributor block's flag (lane 0, then the lanes
/// meet, ordering their loads after the acquire), clears it, and adds the partials.
#[inline(always)]
unsafe fn gather<A: Accumulator>(
    acc: &mut A,
    (work, flags): (GlobalMut<f32>, Flags),
    t: HalfTiling,
    from: u32,
    warp: usize,
    lane: usize,
) {
    let flag = from as usize * t.consumer_warps() as usize + warp;
    let (part, acc) = (slot::<A>(work, t, from, warp), acc.as_mut_slice());
    // SAFETY: the contributor's slot and flag, in bounds; the contributor sets the
    // flag after its stores, and publishes to this owner alone.
    unsafe {
        if lane == 0 {
            flags.wait(flag);
            flags.reset(flag);
        }
        sync_warp();
        unroll!(i < A::N / 8; 32 => {
            let p = part.read(32 * i + lane);
            acc[4 * i] += p.x;
            acc[4 * i + 1] += p.y;
            acc[4 * i + 2] += p.z;
            acc[4 * i + 3] += p.w;
        });
    }
}

/// Rung 7: rung 5's producer and consumers, walking this cluster's units of the deal.
#[inline(always)]
unsafe fn stream_k<H: Half, A: Accumulator>(
    (m, n, k): (u32, u32, u32),
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: Global<TensorMap>,
    work: GlobalMut<f32>,
) {
    let t = STREAM_K;
    // SAFETY: the host's launch (t's shared memory and threads), in clusters of two,
    // at most one block an SM; `c` maps C in boxes of 16 x 64; `work` holds
    // scratch_bytes(t, grid) bytes, its flags clear.
    unsafe {
        let ring: Ring<H> = ring::<H>(t).with_consumers(t.consumer_warps()).clustered(2);
        let tiles = t.cluster_tiles(m.into(), n.into()) as u32;
        let ktiles = k.div_ceil(BK as u32);
        let deal = Deal::new(tiles, ktiles, grid_dim_x() / 2, HYBRID);
        let (block, cluster) = (block_idx_x(), block_idx_x() / 2);
        let blocks = grid_dim_x() as usize;
        let flags = Flags::new(work.offset(blocks * slot_words(t)).cast::<u32>());
        let tid = thread_idx_x() as usize;
        if tid == 0 {
            ring.init();
        }
        ring.sync();
        if tid < 128 {
            wgmma::shrink_registers::<40>();
            if tid == 0 {
                let mut s = ring.producer_start();
                for u in deal.walk(cluster) {
                    let (m0, n0) = tile(t, ring, u.tile, (m, n));
                    for kt in u.k0..u.k1 {
                        load_stage(t, ring, s, maps, (m0, n0, kt));
                        s.advance();
                    }
                }
            }
        } else {
            wgmma::grow_registers::<232>();
            let (wg, me) = (tid / 128 - 1, tid % 128);
            let (warp, lane) = (4 * wg + me / 32, me % 32);
            let rank = ring.cluster().1;
            let mut s = ring.consumer_start();
            for u in deal.walk(cluster) {
                let mut acc = A::zeroed();
                consume((t, ring), u.k1 - u.k0, (wg, lane), &mut acc, &mut s);
                if u.k0 != 0 {
                    publish(&acc, (work, flags), t, block, warp, lane);
                    continue;
                }
                if u.k1 != ktiles {
                    for from in deal.contributors(cluster, u.tile) {
                        gather(&mut acc, (work, flags), t, 2 * from + rank, warp, lane);
                    }
                }
                store_staged(&acc, ring, t, c, tile(t, ring, u.tile, (m, n)), wg, me);
            }
            // The copy engine has read the staging tiles and written C before the
            // block's shared memory goes.
            if lane == 0 {
                tma::wait_group::<0>();
            }
        }
        ring.tail();
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// stream-k: tma-store with each cluster's share of the product's k-blocks
    /// instead of whole tiles; a split tile is summed through global workspace. Bf16.
    pub fn hgemm_stream_k_bf16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>, work: GlobalMut<f32>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C and its scratch.
        unsafe { stream_k::<Bf16, [f32; STREAM_K.bn / 2]>((m, n, k), (a, b), c, work) }
    }
}

kernel! {
    #[launch_bounds(384, 1)]
    #[requires(sm_90a)]
    #[cluster(2)]
    /// stream-k: tma-store with each cluster's share of the product's k-blocks
    /// instead of whole tiles; a split tile is summed through global workspace. F16.
    pub fn hgemm_stream_k_f16(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: Global<TensorMap>, work: GlobalMut<f32>) {
        // SAFETY: the host launches the rung's grid, block and shared memory with maps of A, B and C and its scratch.
        unsafe { stream_k::<F16, [f32; STREAM_K.bn / 2]>((m, n, k), (a, b), c, work) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn units(d: Deal, c: u32) -> Vec<Unit> {
        d.walk(c).collect()
    }

    /// Every iteration of every tile is some cluster's, once; each cluster's share
    /// is within one iteration (split) or one tile (whole) of the others'.
    fn covers_once(d: Deal) {
        let mut seen = std::vec![0u32; (d.tiles * d.ktiles) as usize];
        let mut work = Vec::new();
        for c in 0..d.clusters {
            let mut mine = 0;
            for u in units(d, c) {
                assert!(
                    u.k0 < u.k1 && u.k1 <= d.ktiles && u.tile < d.tiles,
                    "{d:?} cluster {c}: {u:?}"
                );
                for k in u.k0..u.k1 {
                    seen[(u.tile * d.ktiles + k) as usize] += 1;
                }
                mine += u.k1 - u.k0;
            }
            work.push(mine);
        }
        assert!(seen.iter().all(|&s| s == 1), "{d:?}: {seen:?}");
        let (lo, hi) = (work.iter().min().unwrap(), work.iter().max().unwrap());
        assert!(hi - lo <= d.ktiles, "{d:?}: shares {work:?}");
    }

    #[test]
    fn every_iteration_is_dealt_once_and_evenly() {
        for hybrid in [true, false] {
            for (tiles, ktiles, clusters) in [
                (36, 24, 66),
                (144, 48, 66),
                (256, 64, 66),
                (16, 16, 66),
                (3, 5, 2),
                (7, 1, 3),
                (1, 1, 4),
                (12, 4, 6),
            ] {
                covers_once(Deal::new(tiles, ktiles, clusters, hybrid));
            }
        }
    }

    /// 3072³ in 128 x 256 tiles: 144 pair tiles for 66 clusters. The hybrid deals one
    /// round (66 tiles) whole and splits the last 78; without it, all are split.
    #[test]
    fn the_hybrid_splits_the_last_two_rounds() {
        let d = Deal::new(144, 48, 66, true);
        assert_eq!(d.dp, 66);
        assert_eq!(
            units(d, 0)[0],
            Unit {
                tile: 0,
                k0: 0,
                k1: 48
            }
        );
        assert_eq!(Deal::new(144, 48, 66, false).dp, 0);
        // Whole rounds: nothing split.
        assert_eq!(Deal::new(132, 48, 66, true).dp, 132);
        // Less than a round: all split (1536³: 36 pair tiles).
        assert_eq!(Deal::new(36, 24, 66, true).dp, 0);
    }

    /// A cluster's split units (after its whole tiles).
    fn split(d: Deal, c: u32) -> Vec<Unit> {
        units(d, c).into_iter().filter(|u| u.tile >= d.dp).collect()
    }

    /// A split tile's owner holds its k-block 0 and ends its range there; its
    /// contributors are the clusters before it in index order, each starting its
    /// range with the rest of the tile, and together they cover it.
    #[test]
    fn owners_find_their_contributors() {
        let deals = [
            Deal::new(36, 24, 66, true),
            Deal::new(144, 48, 66, true),
            Deal::new(3, 5, 2, true),
            Deal::new(12, 4, 6, false),
            Deal::new(78, 48, 66, false),
        ];
        let mut owners = 0;
        for d in deals {
            for c in 0..d.clusters {
                let all = split(d, c);
                for (i, u) in all.iter().enumerate() {
                    if u.k0 != 0 {
                        assert_eq!(i, 0, "{d:?}: only a range's first unit continues a tile");
                    }
                    if u.k0 == 0 && u.k1 < d.ktiles {
                        owners += 1;
                        assert_eq!(i, all.len() - 1, "{d:?}: an owner's part ends its range");
                        let mut covered = u.k1;
                        for from in d.contributors(c, u.tile) {
                            assert!(from < c, "{d:?}: contributor {from} of owner {c}");
                            let first = split(d, from)[0];
                            assert_eq!((first.tile, first.k0), (u.tile, covered), "{d:?}");
                            covered = first.k1;
                        }
                        assert_eq!(covered, d.ktiles, "{d:?}: cluster {c}'s tile {}", u.tile);
                    }
                }
            }
        }
        assert!(owners > 50, "the deals split tiles ({owners} owners)");
    }

    #[test]
    fn scratch_holds_a_slot_and_the_flags_a_block() {
        assert_eq!(slot_words(STREAM_K), 128 * 256);
        assert_eq!(scratch_bytes(STREAM_K, 2), 2 * (128 * 256 * 4 + 8 * 4));
    }
}
