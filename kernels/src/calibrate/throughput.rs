//! throughput: `coalesce calibrate`'s microbenchmarks of the rates at which an SM's
//! L1 and the L2 handle requests that touch many lines, and shared memory serves
//! bank-conflicted requests. Each warp request here touches 32 different 128-byte
//! lines (or waits on 32 wavefronts of one bank) and its data stays on chip, so the
//! time is set by those rates, never by DRAM.
//!
//! Every kernel takes blocks of [`BLOCK`] threads; the host gives each block its
//! own [`STORE_WINDOW`] floats of the buffer ([`WINDOW`] of them are `lines_load`'s).

use crate::gpu::thread::{block_idx_x, sync_threads, thread_idx_x};
use crate::gpu::{Global, GlobalMut, thread};

/// Threads per block of every kernel here.
pub const BLOCK: u32 = 256;
/// Floats between two lanes' addresses: 32 floats = 128 bytes, so each lane's
/// float lies in a line (and a sector) of its own: 32 lines per warp request.
pub const LANE_STRIDE: usize = 32;
/// Floats of one block's window for [`lines_load`]: the 32 lines its warps touch (4 KiB).
pub const WINDOW: usize = 32 * LANE_STRIDE;
/// Warps of a block.
const WARPS: usize = BLOCK as usize / 32;
/// Floats of one block's window for [`lines_store`]: 32 lines for each of its warps
/// (32 KiB; 33 MiB for the 1056 blocks an H100 or H200 holds, which their L2 keeps).
pub const STORE_WINDOW: usize = WARPS * WINDOW;

kernel! {
    /// Lane l of every warp loads float (r mod 32) of line l of its block's window,
    /// for r = 0..rounds: 32 lines per request, and after the first rounds every one
    /// an L1 hit, so the time is the L1's rate of line lookups. Each thread stores
    /// its sum, so the loads are kept.
    pub fn lines_load(rounds: usize, src: Global<f32>, out: GlobalMut<f32>) {
        let lane = thread_idx_x() as usize % 32;
        let base = block_idx_x() as usize * WINDOW + lane * LANE_STRIDE;
        let mut sum = 0.0f32;
        let mut r = 0;
        while r < rounds {
            // SAFETY: the host gives each block WINDOW floats; base + 31 is in them.
            sum += unsafe { src.read(base + r % LANE_STRIDE) };
            r += 1;
        }
        // SAFETY: out holds one float per thread of the grid.
        unsafe { out.write(thread::index_1d(), sum) };
    }
}

/// The mask the host passes to [`lines_store`]: each warp cycles through 4 floats.
pub const STORE_MASK: usize = 3;

kernel! {
    /// Lane l of warp w stores to line l of the warp's own 32 lines, float r & mask,
    /// for r = 0..rounds, with mask = [`STORE_MASK`]: 32 lines per request, one partial
    /// sector each, and no line written by two warps, as no kernel of the suite writes
    /// one line from many warps at once (the L2 takes such lines slower: 0.46 against
    /// 0.52 lines per ns per SM on the H200, 2026-11-26). The windows stay in L2, so
    /// the time is the rate at which the L1 and L2 take line writes, not the DRAM's.
    /// The mask is a parameter so that the compiler cannot see that a later round
    /// overwrites an earlier one's float and drop the earlier store.
    pub fn lines_store(rounds: usize, mask: usize, dst: GlobalMut<f32>) {
        let t = thread_idx_x() as usize;
        let (lane, warp) = (t % 32, t / 32 % WARPS);
        let base = block_idx_x() as usize * STORE_WINDOW + warp * WINDOW + lane * LANE_STRIDE;
        let mut r = 0;
        while r < rounds {
            // SAFETY: the host passes mask <= 3 and gives each block STORE_WINDOW
            // floats, so base + 3 is in the block's window.
            unsafe { dst.write(base + (r & mask), r as f32) };
            r += 1;
        }
    }
}

kernel! {
    /// Lane l of every warp reads row l, column (r + w) mod 32 of a 32 x 32 shared tile,
    /// for r = 0..rounds: the 32 lanes' words are 32 words apart, all in one bank, so
    /// each request is served in 32 wavefronts, one after another. The tile is filled
    /// first (conflict-free) and each thread stores its sum, so the loads are kept.
    pub fn bank_conflicts(rounds: usize, out: GlobalMut<f32>) {
        let tile = shared_array![COALESCE_CALIBRATE_BANKS: [f32; 32 * 32]];
        let t = thread_idx_x() as usize;
        let (lane, warp) = (t % 32, t / 32);
        let mut i = t;
        while i < 32 * 32 {
            // SAFETY: i < 1024, the tile's length.
            unsafe { tile.write(i, i as f32) };
            i += BLOCK as usize;
        }
        sync_threads();
        let mut sum = 0.0f32;
        let mut r = 0;
        while r < rounds {
            // SAFETY: lane < 32 and the column < 32.
            sum += unsafe { tile.read(lane * 32 + (r + warp) % 32) };
            r += 1;
        }
        // SAFETY: out holds one float per thread of the grid.
        unsafe { out.write(thread::index_1d(), sum) };
    }
}
