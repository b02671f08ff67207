//! The ring of stages that the copy engine ([`super::tma`]) fills and a block's
//! consumers drain: one pipeline for every kernel fed by asynchronous copies, written
//! after CUTLASS's `PipelineTmaAsync` and ThunderKittens' load-compute-finish ring.
//!
//! A [`Ring`] is `S` stages of shared memory and, per stage, a `full` barrier (the
//! producer's one arrival, armed with the stage's bytes, which the copies complete)
//! and optionally an `empty` barrier (the consumers' arrivals that free the stage). A
//! [`Stage`] is a place in the ring: an index and the parity of the round, which
//! [`Stage::advance`] flips when the index wraps. Producer and consumer each keep
//! their own:
//!
//! ```text
//! producer:  let mut p = ring.producer_start();
//!            loop { let full = ring.acquire(p); tma::load_2d(.., ring.stage(p), full); p.advance(); }
//! consumer:  let mut c = ring.consumer_start();
//!            loop { ring.wait(c); compute on ring.stage(c); ring.release(c); c.advance(); }
//! ```
//!
//! The producer starts a round ahead, at parity 1: a new barrier is in phase 0, and a
//! wait for parity 1 passes at once as if the phase before had completed, so the
//! first round's `acquire`s find every stage empty without a branch of their own
//! (CUTLASS's `make_producer_start_state`; the emulator's wait answers the same).
//! Committing is the copy engine's: the copies complete the bytes `acquire` announced.
//!
//! Options: without `empty` barriers ([`Ring::with_consumers`] not called) the kernel
//! frees stages by other means (a block barrier, or one thread that both fills and
//! reads); with [`Ring::clustered`] the stages of the blocks of a cluster fill
//! together (multicast copies, [`super::tma::load_2d_multicast`]) and a release frees
//! the stage in every block of the cluster.
//!
//! This module and [`super::barrier`] are the only code that knows a barrier's phase.

use super::barrier::{Barrier, PeerBarrier, fence_init};
use super::shared::SharedWord;
use super::{SharedArray, cluster, thread};

/// A place in a ring: which stage, and the parity of the round the ring is in there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    index: u32,
    phase: u32,
    stages: u32,
}

impl Stage {
    /// The stage's index in the ring, `0..S`.
    #[inline(always)]
    pub fn index(self) -> usize {
        self.index as usize
    }

    /// On to the next stage; past the last, back to the first in the next round.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.index += 1;
        if self.index == self.stages {
            self.index = 0;
            self.phase ^= 1;
        }
    }

    /// The stage after this one.
    #[inline(always)]
    pub fn next(mut self) -> Stage {
        self.advance();
        self
    }
}

/// A stage's `empty` barriers, this block's and the cluster's others', ready for one
/// consumer arrival ([`Ring::releaser`]).
#[derive(Clone, Copy)]
pub struct Release<T = f32> {
    ring: Ring<T>,
    empty: Barrier,
    /// The next block's barrier, mapped ahead (with a cluster).
    peer: Option<PeerBarrier>,
}

impl<T: SharedWord> Release<T> {
    /// One arrival on each: the stage is free in every block.
    ///
    /// # Safety
    /// As for [`Ring::release`].
    #[inline(always)]
    pub unsafe fn arrive(self) {
        let ring = self.ring;
        if ring.arrivals == 0 {
            return;
        }
        // SAFETY: the caller's; every block of the cluster has the barrier at the same
        // offset.
        unsafe {
            self.empty.arrive();
            if let Some(peer) = self.peer {
                peer.arrive();
            }
            for d in 2..ring.blocks {
                self.empty.arrive_cluster(ring.rank ^ d);
            }
        }
    }
}

/// `S` stages of elements `T` (f32 by default, or 16-bit floats) in shared memory and
/// the barriers that hand them over.
#[derive(Clone, Copy)]
pub struct Ring<T = f32> {
    tiles: SharedArray<T>,
    stages: u32,
    stage_len: usize,
    /// The element of `full[0]`; `full[s]` is s barriers (8 bytes each) on, `empty[s]`
    /// S + s.
    barriers: usize,
    /// A block's consumer arrivals that free a stage; 0: no `empty` barriers.
    arrivals: u32,
    /// Blocks of the cluster that share the stages (1: none), and this block's rank.
    blocks: u32,
    rank: u32,
}

impl<T: SharedWord> Ring<T> {
    /// `stages` stages of `stage_len` elements each, from element 0 of `tiles`, each
    /// filled by copies of all its bytes; the barriers follow the stages (8 bytes per
    /// stage and barrier kind).
    #[inline(always)]
    pub fn new(tiles: SharedArray<T>, stages: usize, stage_len: usize) -> Ring<T> {
        Ring {
            tiles,
            stages: stages as u32,
            stage_len,
            barriers: stages * stage_len,
            arrivals: 0,
            blocks: 1,
            rank: 0,
        }
    }

    /// The barriers from element `i` of the tiles instead (8-byte aligned), where
    /// other data follow the stages.
    #[inline(always)]
    pub fn with_barriers_at(self, i: usize) -> Ring<T> {
        Ring { barriers: i, ..self }
    }

    /// Consumers free each stage through an `empty` barrier, `arrivals` of them from
    /// each block ([`Ring::release`]), and the producer waits for it ([`Ring::acquire`]).
    #[inline(always)]
    pub fn with_consumers(self, arrivals: u32) -> Ring<T> {
        Ring { arrivals, ..self }
    }

    /// The `blocks` blocks of this block's cluster (a power of two) fill their stages
    /// together, and a release frees the stage in each of them.
    #[inline(always)]
    pub fn clustered(self, blocks: u32) -> Ring<T> {
        Ring {
            blocks,
            rank: cluster::rank(),
            ..self
        }
    }

    /// The shared array the stages are in.
    #[inline(always)]
    pub fn tiles(self) -> SharedArray<T> {
        self.tiles
    }

    /// Where stage `s` starts in [`Ring::tiles`], in elements.
    #[inline(always)]
    pub fn stage(self, s: Stage) -> usize {
        s.index() * self.stage_len
    }

    /// The bytes the copies of one stage bring.
    #[inline(always)]
    pub fn stage_bytes(self) -> u32 {
        (self.stage_len * size_of::<T>()) as u32
    }

    /// Elements of `T` a barrier takes.
    const BARRIER: usize = 8 / size_of::<T>();

    /// Blocks that share the stages, and this one's rank among them.
    #[inline(always)]
    pub fn cluster(self) -> (u32, u32) {
        (self.blocks, self.rank)
    }

    /// The mask of the cluster's blocks, for a copy multicast to all of them.
    #[inline(always)]
    pub fn multicast_mask(self) -> u16 {
        ((1u32 << self.blocks) - 1) as u16
    }

    #[inline(always)]
    fn full(self, s: usize) -> Barrier {
        // SAFETY: the ring's constructor's caller keeps the barriers' bytes for them.
        unsafe { self.tiles.barrier(self.barriers + Self::BARRIER * s) }
    }

    #[inline(always)]
    fn empty(self, s: usize) -> Barrier {
        // SAFETY: as in `full`.
        unsafe {
            self.tiles
                .barrier(self.barriers + Self::BARRIER * (self.stages as usize + s))
        }
    }

    /// Where the producer starts: stage 0, a round ahead of the consumers.
    #[inline(always)]
    pub fn producer_start(self) -> Stage {
        Stage {
            index: 0,
            phase: 1,
            stages: self.stages,
        }
    }

    /// Where the consumers start: stage 0, the first round.
    #[inline(always)]
    pub fn consumer_start(self) -> Stage {
        Stage {
            index: 0,
            phase: 0,
            stages: self.stages,
        }
    }

    /// One thread sets up every stage's barriers (`full` for the producer's one
    /// arrival; `empty` for every block's consumers) and makes them visible to the
    /// copy engine and the cluster. [`Ring::sync`] must follow before others use them.
    ///
    /// # Safety
    /// One thread, before any use of the ring, over shared memory that holds the
    /// stages and their barriers.
    #[inline(always)]
    pub unsafe fn init(self) {
        // SAFETY: the caller's.
        unsafe {
            for s in 0..self.stages as usize {
                self.full(s).init(1);
                if self.arrivals > 0 {
                    self.empty(s).init(self.arrivals * self.blocks);
                }
            }
        }
        fence_init();
    }

    /// Every thread that uses the ring meets after [`Ring::init`]: the block's, and
    /// with a cluster, the cluster's (whose copies and arrivals reach this block).
    #[inline(always)]
    pub fn sync(self) {
        if self.blocks > 1 {
            cluster::sync();
        } else {
            thread::sync_threads();
        }
    }

    /// Producer (one thread): waits until the consumers have freed stage `s` (with
    /// `empty` barriers), then announces the stage's bytes on its `full` barrier,
    /// which it returns for the copies to complete.
    ///
    /// # Safety
    /// The ring is initialised; one producer thread; its copies into the stage bring
    /// [`Ring::stage_bytes`] in all (each block's, with a cluster).
    #[inline(always)]
    pub unsafe fn acquire(self, s: Stage) -> Barrier {
        let full = self.full(s.index());
        // SAFETY: the caller's.
        unsafe {
            if self.arrivals > 0 {
                self.empty(s.index()).wait(s.phase);
            }
            full.arrive_expect_tx(self.stage_bytes());
        }
        full
    }

    /// Consumer: waits until stage `s` has landed.
    ///
    /// # Safety
    /// The ring is initialised, and the producer fills the stage.
    #[inline(always)]
    pub unsafe fn wait(self, s: Stage) {
        // SAFETY: the caller's.
        unsafe { self.full(s.index()).wait(s.phase) }
    }

    /// Consumer: one arrival freeing stage `s`, on each block's `empty` barrier with
    /// a cluster. Nothing without `empty` barriers.
    ///
    /// # Safety
    /// The ring is initialised; the caller is one of the arrivals the ring was built
    /// for, done with the stage (its reads issued and completed).
    #[inline(always)]
    pub unsafe fn release(self, s: Stage) {
        // SAFETY: the caller's.
        unsafe { self.releaser(s).arrive() }
    }

    /// The barriers a [`Ring::release`] of stage `s` arrives on, worked out ahead
    /// (the other blocks' through `mapa`), so that a consumer can have them ready
    /// before its last reads of the stage complete and arrive at once after.
    #[inline(always)]
    pub fn releaser(self, s: Stage) -> Release<T> {
        let empty = self.empty(s.index());
        Release {
            ring: self,
            empty,
            peer: (self.arrivals > 0 && self.blocks > 1).then(|| empty.in_block(self.rank ^ 1)),
        }
    }

    /// Every thread, before the block leaves: with a cluster, no block leaves while
    /// another may still copy into its stages or arrive on its barriers.
    #[inline(always)]
    pub fn tail(self) {
        if self.blocks > 1 {
            cluster::sync();
        }
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::gpu::emu::{Dim3, LaunchConfig, launch};
    use crate::gpu::shared::dynamic_shared_array;
    use crate::gpu::thread::thread_idx_x;
    use crate::gpu::tma::{self, Swizzle, TensorMap, TileMap};
    use crate::gpu::{Global, GlobalMut};
    use std::vec;
    use std::vec::Vec;

    /// Floats of a stage, stages of the ring, and the ring's floats with its barriers.
    const STAGE: usize = 64;
    const STAGES: usize = 3;
    const SHARED: usize = STAGES * STAGE + 4 * STAGES;

    #[test]
    fn a_stage_flips_its_phase_each_time_the_index_wraps() {
        // SAFETY: never accessed: only the stages' arithmetic is under test.
        let tiles: SharedArray<f32> = unsafe { SharedArray::from_host_ptr(core::ptr::null_mut(), "t", 0) };
        let ring = Ring::new(tiles, STAGES, STAGE);
        let (mut p, mut c) = (ring.producer_start(), ring.consumer_start());
        assert_eq!((p.index(), p.phase, c.index(), c.phase), (0, 1, 0, 0));
        for i in 1..=2 * STAGES + 1 {
            p.advance();
            c = c.next();
            assert_eq!(c.index(), i % STAGES);
            assert_eq!(c.phase, (i / STAGES) as u32 & 1, "the consumer's phase after {i}");
            assert_eq!(p.phase, c.phase ^ 1, "the producer stays a round ahead");
            assert_eq!(ring.stage(c), (i % STAGES) * STAGE);
        }
    }

    /// `tiles` rows of STAGE floats (i + 0.5), as a tensor map of boxes of `box_`
    /// floats of one row.
    fn rows(tiles: usize, box_: usize) -> (Vec<f32>, TensorMap) {
        let src: Vec<f32> = (0..tiles * STAGE).map(|i| i as f32 + 0.5).collect();
        let map = TileMap {
            base: src.as_ptr() as u64,
            dims: [STAGE as u64, tiles as u64],
            pitch: (STAGE * 4) as u64,
            boxes: [box_ as u32, 1],
            swizzle: Swizzle::None,
        };
        (src, map.encode())
    }

    /// Warp 0's thread 0 fills the ring with `tiles` rows of the map; warp 1 copies
    /// each stage out to `out` and frees it (every thread arrives). The consumers start
    /// at `start` (the producer's state, to show a wrong phase), `clustered` blocks of a
    /// cluster each copy half a row into all of them, and write their own output.
    fn run(tiles: usize, clustered: u32, start: fn(Ring) -> Stage) -> Vec<f32> {
        let blocks = clustered.max(1) as usize;
        let (_src, map) = rows(tiles, STAGE / blocks);
        let mut out = vec![0.0f32; blocks * tiles * STAGE];
        let (m, o) = (&map as *const TensorMap as usize, out.as_mut_ptr() as usize);
        let cfg = LaunchConfig {
            grid: Dim3::from(blocks as u32),
            block: Dim3::from(64),
            dynamic_shared_bytes: SHARED * 4,
            cluster: clustered,
            ..Default::default()
        };
        launch(&cfg, || {
            let tid = thread_idx_x() as usize;
            // SAFETY: the launch's dynamic shared memory holds the ring; one producer
            // thread, whose copies bring each stage's bytes (in halves from each block
            // of a cluster); 32 consumers that each arrive once a stage.
            unsafe {
                let mut ring =
                    Ring::new(dynamic_shared_array::<f32>(SHARED), STAGES, STAGE).with_consumers(32);
                if clustered > 1 {
                    ring = ring.clustered(clustered);
                }
                let (blocks, rank) = ring.cluster();
                let part = STAGE / blocks as usize;
                if tid == 0 {
                    ring.init();
                }
                ring.sync();
                if tid == 0 {
                    let map = Global::from_ptr(m as *const TensorMap);
                    let mut p = ring.producer_start();
                    for i in 0..tiles {
                        let full = ring.acquire(p);
                        let (at, dst) = (rank as usize * part, ring.stage(p) + rank as usize * part);
                        if blocks > 1 {
                            let mask = ring.multicast_mask();
                            tma::load_2d_multicast(map, [at as i32, i as i32], ring.tiles(), dst, full, mask);
                        } else {
                            tma::load_2d(map, [at as i32, i as i32], ring.tiles(), dst, full);
                        }
                        p.advance();
                    }
                } else if tid >= 32 {
                    let out = GlobalMut::from_ptr(o as *mut f32);
                    let first = rank as usize * tiles * STAGE;
                    let mut c = start(ring);
                    for i in 0..tiles {
                        ring.wait(c);
                        for j in (tid - 32..STAGE).step_by(32) {
                            out.write(first + i * STAGE + j, ring.tiles().read(ring.stage(c) + j));
                        }
                        ring.release(c);
                        c.advance();
                    }
                }
                ring.tail();
            }
        });
        out
    }

    #[test]
    fn every_round_of_the_ring_lands_in_its_stage() {
        // Two rounds and a part: each stage is reused after its consumers free it.
        let out = run(2 * STAGES + 1, 1, Ring::consumer_start);
        for (i, &v) in out.iter().enumerate() {
            assert_eq!(v, i as f32 + 0.5, "element {i}");
        }
    }

    #[test]
    fn a_consumer_waiting_for_the_wrong_phase_reads_poison() {
        // The producer's state waits for parity 1: on a new barrier that answers at
        // once, before any copy has landed.
        let out = run(STAGES, 1, Ring::producer_start);
        assert!(out.iter().all(|v| v.is_nan()), "{:?}", &out[..4]);
    }

    #[test]
    fn a_cluster_fills_every_blocks_stages_and_frees_them_in_each() {
        let out = run(2 * STAGES + 1, 2, Ring::consumer_start);
        let per_block = (2 * STAGES + 1) * STAGE;
        for (i, &v) in out.iter().enumerate() {
            assert_eq!(
                v,
                (i % per_block) as f32 + 0.5,
                "block {}, element {}",
                i / per_block,
                i % per_block
            );
        }
    }
}
