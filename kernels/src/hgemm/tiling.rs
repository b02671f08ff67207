//! The 16-bit Hopper rungs' tilings ([`super::wgmma`]): a block's tile of C, its
//! shared stages and staging, and who does what, as data the kernels and the host's
//! launch rules both read.

/// k per stage: one 128-byte row of 16-bit elements.
pub const BK: usize = 64;
/// n of one of B's boxes (and of C's staged ones): one 128-byte row of 16-bit elements.
pub const B_BOX: usize = 64;
/// Bytes from one of B's boxes to the next: the MN-major tile's 64-wide atoms.
pub(super) const B_ATOM_BYTES: u32 = (BK * B_BOX * 2) as u32;

/// Rows of C a consumer warp stages at a time, and their columns: a band of the
/// warp's 16 rows, two 64 x 16 boxes of the copy engine.
pub const STAGED_ROWS: usize = 16;
pub const STAGED_COLS: usize = 2 * B_BOX;
/// Elements of one of the staged boxes.
pub(super) const STAGED_BOX: usize = B_BOX * STAGED_ROWS;

/// A 16-bit tuning: the block's tile (64 rows of C a consumer warpgroup, `bn`
/// columns: the wgmma's N), its stages, and who does what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HalfTiling {
    /// Consumer warpgroups, 64 rows of C each.
    pub consumers: usize,
    pub bn: usize,
    pub stages: usize,
    /// A producer warpgroup that only copies (warp specialisation).
    pub producer: bool,
    /// C staged in shared memory for the copy engine (else stored from registers).
    pub staged: bool,
    /// Blocks of a cluster along m, sharing B's tile (multicast); 1: no clusters.
    pub cluster: usize,
}

impl HalfTiling {
    /// m per block.
    pub const fn bm(&self) -> usize {
        64 * self.consumers
    }
    /// Elements of A's tile in a stage, before B's boxes.
    pub const fn a_len(&self) -> usize {
        self.bm() * BK
    }
    /// Elements of one stage.
    pub const fn stage_len(&self) -> usize {
        self.a_len() + BK * self.bn
    }
    /// Warps that multiply: each frees a stage.
    pub const fn consumer_warps(&self) -> u32 {
        4 * self.consumers as u32
    }
    /// Elements where the consumer warps stage C: one band of 16 rows each.
    pub const fn staging(&self) -> usize {
        if self.staged {
            self.consumer_warps() as usize * STAGED_ROWS * STAGED_COLS
        } else {
            0
        }
    }
    /// Where the staging tiles start, then the barriers, in elements.
    pub const fn staging_at(&self) -> usize {
        self.stages * self.stage_len()
    }
    /// Dynamic shared memory: the stages, the staging tiles and two barriers a stage,
    /// with room to start the stages on a 1024-byte boundary (the swizzle's).
    pub const fn shared_bytes(&self) -> usize {
        (self.staging_at() + self.staging()) * 2 + self.stages * 16 + 1024
    }
    pub const fn threads(&self) -> usize {
        128 * (self.consumers + self.producer as usize)
    }
    /// C's tiles as a rung walks them for an m x n product: a cluster's row tiles on
    /// the same columns count as one.
    pub const fn cluster_tiles(&self, m: u64, n: u64) -> u64 {
        m.div_ceil((self.cluster * self.bm()) as u64) * n.div_ceil(self.bn as u64)
    }
}

/// `wgmma`: 128 x 256 tiles, 4 stages of 48 KiB, two warpgroups that multiply.
pub const PLAIN: HalfTiling = HalfTiling {
    consumers: 2,
    bn: 256,
    stages: 4,
    producer: false,
    staged: false,
    cluster: 1,
};
/// `wgmma-ws`, `wgmma-cluster`, `persistent`: a producer warpgroup and two consumers.
pub const SPECIALISED: HalfTiling = HalfTiling {
    producer: true,
    ..PLAIN
};
/// `tma-store`: the same, and 4 KiB of staging for each of the 8 consumer warps (227
/// KiB in all, the most a block may have).
pub const STAGED: HalfTiling = HalfTiling {
    staged: true,
    ..SPECIALISED
};
/// `small`: tma-store with 64 x 128 tiles, one consumer: four times the tiles, for
/// products too small to fill the SMs with 128 x 256. A stage's MMAs take a quarter of
/// tma-store's time, so 8 stages (192 KiB) keep as many bytes in flight to cover
/// L2's latency. In clusters of two: without them it ran no faster at 1024³ and
/// fell to 0.96x its twin at 4096³.
pub const SMALL: HalfTiling = HalfTiling {
    consumers: 1,
    bn: 128,
    stages: 8,
    cluster: 2,
    ..STAGED
};
/// `tma-store-192`: tma-store with 192 x 128 tiles, three consumers (208 KiB): at
/// 1536³ and 3072³ these fill 96 and 384 tile slots where 128 x 256 fills 72 and 288,
/// so the last round of 132 SMs is nearly full.
pub const STAGED_192: HalfTiling = HalfTiling {
    consumers: 3,
    bn: 128,
    ..STAGED
};
/// `tma-store-128`: tma-store with 128 x 128 tiles, two consumers, 6 stages (225
/// KiB): at 1280³ these are 100 tiles, one round of 132 SMs, where 64 x 128 tiles
/// are 200 (two rounds) and 128 x 256 are 50 (half the SMs idle). A stage is 32
/// KiB, two thirds of tma-store's, so two more stages keep as many bytes in flight.
pub const STAGED_128: HalfTiling = HalfTiling {
    bn: 128,
    stages: 6,
    ..STAGED
};
/// `stream-k`: tma-store's tiling (128 x 256; `bn: 128` gives 128 x 128 tiles, twice
/// as many, each split fewer ways) in clusters of two, its iterations dealt out by
/// [`super::stream_k`].
pub const STREAM_K: HalfTiling = HalfTiling { cluster: 2, ..STAGED };
