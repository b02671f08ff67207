//! pipes: `coalesce calibrate`'s microbenchmarks of the rates at which an SM computes:
//! FP32 FMAs, instructions issued when no one pipe is full, tensor-core MMAs
//! (`mma.sync`, sm_80; `wgmma` in TF32 and BF16, the BF16 one at N 256 and 128, sm_90a), loads the L2 serves (to the SMs' loads, and
//! to the copy engine's, sm_90a), one-line requests the
//! L1 takes, and two latencies (a
//! dependent FMA, a dependent shared load). Their data is a few parameters and
//! registers (the L2 kernel's a buffer the L2 holds), so DRAM never sets the time.
//!
//! Every value depends on the parameters and is stored, so nothing can be folded or
//! dropped, and every thread of a throughput kernel computes the same chains, so the
//! host checks each stored value against one CPU computation of the same arithmetic.
//! A round's body is unrolled; besides the instructions it is declared to hold, it
//! has the loop's own 3 (a 32-bit counter's add, a compare, a branch).

use crate::gpu::math::{fma, xor_and};
use crate::gpu::mma::{mma_m16n8k8_tf32, to_tf32};
use crate::gpu::ring::{Ring, Stage};
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{block_idx_x, grid_size_1d, sync_threads, thread_idx_x};
use crate::gpu::tma::{self, TensorMap};
use crate::gpu::wgmma::{self, Accumulator, Descriptor};
use crate::gpu::{Bf16, Float4, Global, GlobalMut, thread};

/// Threads per block of the throughput kernels but the wgmma one.
pub const BLOCK: u32 = 256;
/// Independent FMA chains per thread of [`fma_throughput`] and [`issue_mix`].
pub const CHAINS: usize = 8;
/// FFMA per thread per round of [`fma_throughput`]: 16 steps of the 8 chains.
pub const FMA_PER_ROUND: usize = 16 * CHAINS;

kernel! {
    #[launch_bounds(256, 8)]
    /// 8 independent chains `f = f a + b` per thread, 128 FFMA per round and nothing
    /// else but the loop's 3 instructions: the FP32 pipes' rate. Each thread stores the
    /// chains' sum.
    pub fn fma_throughput(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
        let mut f: [f32; CHAINS] = core::array::from_fn(|j| b + j as f32);
        let mut r = 0u32;
        while r < rounds {
            for _ in 0..FMA_PER_ROUND / CHAINS {
                for x in f.iter_mut() {
                    *x = fma(*x, a, b);
                }
            }
            r += 1;
        }
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(thread::index_1d(), f.iter().sum()) };
    }
}

/// Steps of [`issue_mix`]'s chains per round: each 2 FFMA and 1 LOP3 per chain.
pub const ISSUE_STEPS: usize = 8;
/// FFMA and LOP3 per thread per round of [`issue_mix`].
pub const ISSUE_FMA_PER_ROUND: usize = 2 * ISSUE_STEPS * CHAINS;
pub const ISSUE_LOP3_PER_ROUND: usize = ISSUE_STEPS * CHAINS;

kernel! {
    #[launch_bounds(256, 8)]
    /// 8 chains per thread, each step `f = f a + b` twice, then `x = (x ^ bits(f)) & k`:
    /// 128 FFMA and 64 LOP3 per round (and the loop's 3). An SM's FP32 pipes take an
    /// FFMA from each of its 4 schedulers a clock and its integer pipes a LOP3 every
    /// other clock, so at 2 : 1 neither pipe is full and the rate is the schedulers'
    /// issue rate. Each LOP3 reads a new FFMA result, so ptxas cannot merge two of them.
    pub fn issue_mix(rounds: u32, a: f32, b: f32, k: u32, out: GlobalMut<u32>) {
        let mut f: [f32; CHAINS] = core::array::from_fn(|j| b + j as f32);
        let mut x: [u32; CHAINS] = core::array::from_fn(|j| k ^ j as u32);
        let mut r = 0u32;
        while r < rounds {
            for _ in 0..ISSUE_STEPS {
                for j in 0..CHAINS {
                    f[j] = fma(fma(f[j], a, b), a, b);
                    x[j] = xor_and(x[j], f[j].to_bits(), k);
                }
            }
            r += 1;
        }
        let folded = x.iter().fold(f.iter().sum::<f32>().to_bits(), |s, v| s.wrapping_add(*v));
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(thread::index_1d(), folded) };
    }
}

/// Independent accumulators per warp of [`mma_tf32_throughput`].
pub const MMA_CHAINS: usize = 4;
/// `mma.sync` per warp per round of [`mma_tf32_throughput`]: 4 steps of the 4 chains.
pub const MMA_PER_ROUND: usize = 4 * MMA_CHAINS;

kernel! {
    #[launch_bounds(256, 8)]
    #[requires(sm_80)]
    /// 4 independent accumulators per warp, each `acc = A B + acc` by
    /// `mma.sync.m16n8k8` TF32 (A's fragments a, 2a, 4a, 8a; B's b, 2b in every lane):
    /// 16 per round and the loop's 3 instructions, at full residency (32 registers a
    /// thread). Each thread stores the sum of its accumulators.
    pub fn mma_tf32_throughput(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
        let fa = [a, 2.0 * a, 4.0 * a, 8.0 * a].map(to_tf32);
        let fb = [b, 2.0 * b].map(to_tf32);
        let mut acc: [[f32; 4]; MMA_CHAINS] = core::array::from_fn(|j| [j as f32; 4]);
        let mut r = 0u32;
        while r < rounds {
            for _ in 0..MMA_PER_ROUND / MMA_CHAINS {
                for c in acc.iter_mut() {
                    *c = mma_m16n8k8_tf32(fa, fb, *c);
                }
            }
            r += 1;
        }
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(thread::index_1d(), acc.iter().flatten().sum()) };
    }
}

/// Threads of a [`wgmma_tf32_throughput`] block: one warpgroup.
pub const WGMMA_THREADS: u32 = 128;
/// `wgmma` per warpgroup per round of [`wgmma_tf32_throughput`].
pub const WGMMA_PER_ROUND: usize = 8;
/// The wgmma's N (its tile is 64 x N x 8).
pub const WGMMA_N: usize = 256;
/// Floats of the A tile (64 rows of 128 bytes) and the B tile (256 rows).
const WGMMA_A_FLOATS: usize = 64 * 32;
const WGMMA_B_FLOATS: usize = WGMMA_N * 32;
/// Dynamic shared memory of a block: both tiles, and room to align them to 1024 bytes.
pub const WGMMA_SHARED_BYTES: usize = (WGMMA_A_FLOATS + WGMMA_B_FLOATS) * 4 + 1024;
/// Floats of [`wgmma_tf32_throughput`]'s A tile; its B tile follows.
pub const WGMMA_A_TILE: usize = WGMMA_A_FLOATS;
/// Floats of the B tile.
pub const WGMMA_B_TILE: usize = WGMMA_B_FLOATS;

/// The value at float `i` of [`wgmma_tf32_throughput`]'s tiles (before a or b): 1 plus
/// a hashed 10-bit fraction, so exact in TF32, in [1, 2).
pub fn wgmma_tile_value(i: usize) -> f32 {
    let h = (i as u32).wrapping_mul(0x9e37_79b1) >> 22;
    1.0 + h as f32 / 1024.0
}

kernel! {
    #[requires(sm_90a)]
    /// One warpgroup multiplies a 64 x 32 A tile by a 256 x 32 B tile (K-major, 128-byte
    /// swizzle), both read by the tensor cores from shared memory, into one accumulator
    /// (128 floats a thread): 8 `wgmma.m64n256k8` per round (each k step of the tiles
    /// twice), then a commit and a wait for the round before (so one round is always
    /// queued), with the round's fence: 8 HGMMA, the fence's and the wait's
    /// instruction, the loop's 3, and the NOPs ptxas puts between HGMMAs. The tiles hold
    /// a and b times [`wgmma_tile_value`]: values whose mantissas vary as a product's
    /// data do, since the tensor cores draw more power, and the GPU clocks them lower,
    /// on such data than on constants. Each thread stores the sum of its 128.
    pub fn wgmma_tf32_throughput(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
        // SAFETY: the host launches with WGMMA_SHARED_BYTES of dynamic shared memory.
        let tiles = unsafe { dynamic_shared_array::<f32>(WGMMA_SHARED_BYTES / 4).aligned(1024) };
        let t = thread_idx_x() as usize;
        let mut i = t;
        while i < WGMMA_A_FLOATS + WGMMA_B_FLOATS {
            let scale = if i < WGMMA_A_FLOATS { a } else { b };
            // SAFETY: inside the aligned tiles.
            unsafe { tiles.write(i, scale * wgmma_tile_value(i)) };
            i += WGMMA_THREADS as usize;
        }
        // The tensor cores read shared memory through the async proxy.
        crate::gpu::tma::fence_proxy_async();
        sync_threads();
        // The 4 k steps of a 128-byte row, each 8 floats on: both tiles start on
        // 1024-byte boundaries (A's 8 KiB is a multiple of it).
        let steps: [(Descriptor, Descriptor); 4] = core::array::from_fn(|s| {
            // SAFETY: 1024-byte aligned tiles.
            unsafe {
                (
                    Descriptor::k_major_128b(tiles, 8 * s),
                    Descriptor::k_major_128b(tiles.offset(WGMMA_A_FLOATS), 8 * s),
                )
            }
        });
        let mut acc = [0.0f32; WGMMA_N / 2];
        let mut r = 0u32;
        while r < rounds {
            wgmma::fence();
            // Written out: a loop of asm statements stays rolled, and would keep the
            // accumulators in local memory to index them.
            // SAFETY: the whole warpgroup calls it; the tiles are written once,
            // before, and acc is read only after the last wait.
            unsafe {
                wgmma::mma_tf32_ss(&mut acc, steps[0].0, steps[0].1);
                wgmma::mma_tf32_ss(&mut acc, steps[1].0, steps[1].1);
                wgmma::mma_tf32_ss(&mut acc, steps[2].0, steps[2].1);
                wgmma::mma_tf32_ss(&mut acc, steps[3].0, steps[3].1);
                wgmma::mma_tf32_ss(&mut acc, steps[0].0, steps[0].1);
                wgmma::mma_tf32_ss(&mut acc, steps[1].0, steps[1].1);
                wgmma::mma_tf32_ss(&mut acc, steps[2].0, steps[2].1);
                wgmma::mma_tf32_ss(&mut acc, steps[3].0, steps[3].1);
            }
            wgmma::commit_group();
            wgmma::wait_group::<1, _>(&mut acc);
            r += 1;
        }
        wgmma::wait_group::<0, _>(&mut acc);
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(thread::index_1d(), acc.iter().sum()) };
    }
}

/// The 16-bit wgmma's K (its tile is 64 x N x 16).
pub const WGMMA_16BIT_K: usize = 16;
/// The N of [`wgmma_bf16_n128_throughput`]'s wgmma, half [`WGMMA_N`]: the shape of the
/// Hopper products whose tiles are 128 wide.
pub const WGMMA_N128: usize = 128;
/// Elements of [`wgmma_bf16_throughput`]'s A tile: 64 rows of 64 k (128 bytes each),
/// K-major.
pub const WGMMA_16BIT_A_TILE: usize = 64 * 64;
/// Elements of its B tile, which follows A: MN-major, 4 atoms of 64 n (128 bytes) by
/// the 64 k rows, [`WGMMA_16BIT_ATOM_BYTES`] apart; [`wgmma_bf16_n128_throughput`]'s
/// has 2.
pub const WGMMA_16BIT_B_TILE: usize = 64 * WGMMA_N;
pub const WGMMA_16BIT_ATOM_BYTES: u32 = 64 * 128;
/// Dynamic shared memory of a [`wgmma_bf16_throughput`] block: both tiles, and room to
/// align them to 1024 bytes.
pub const WGMMA_16BIT_SHARED_BYTES: usize = wgmma_16bit_shared_bytes(WGMMA_N);
/// The same of a [`wgmma_bf16_n128_throughput`] block.
pub const WGMMA_16BIT_N128_SHARED_BYTES: usize = wgmma_16bit_shared_bytes(WGMMA_N128);

/// Dynamic shared memory of a BF16 throughput block whose wgmma is 64 x `n` x 16.
const fn wgmma_16bit_shared_bytes(n: usize) -> usize {
    (WGMMA_16BIT_A_TILE + 64 * n) * 2 + 1024
}

/// The value at element `i` of [`wgmma_bf16_throughput`]'s tiles (before a or b): 1
/// plus a hashed 7-bit fraction, so exact in BF16 (and FP16), in [1, 2).
pub fn wgmma_16bit_tile_value(i: usize) -> f32 {
    let h = (i as u32).wrapping_mul(0x9e37_79b1) >> 25;
    1.0 + h as f32 / 128.0
}

/// The BF16 throughput kernels' body, for a wgmma 64 x `A::N` x 16 (the accumulator
/// `A` holds `A::N` / 2 floats a thread): one warpgroup multiplies a 64 x 64 A tile
/// (K-major) by a 64 x N B tile (MN-major, as a row-major B lands), both in the
/// 128-byte swizzle in shared memory, into one f32 accumulator: 8 wgmmas per round
/// (each k16 step of the tiles twice), a commit and a wait for the round before, with
/// the round's fence. The tiles hold a and b times [`wgmma_16bit_tile_value`] (varied
/// mantissas, as a product's data). Each thread stores the sum of its accumulators.
///
/// # Safety
/// Launched with [`wgmma_16bit_shared_bytes`]`(A::N)` of dynamic shared memory, one
/// warpgroup a block, `out` holding a value per thread of the grid.
#[inline(always)]
unsafe fn wgmma_bf16_rounds<A: Accumulator>(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
    let elements = WGMMA_16BIT_A_TILE + 64 * A::N;
    // SAFETY: the caller launches with this much dynamic shared memory.
    let tiles = unsafe { dynamic_shared_array::<Bf16>(wgmma_16bit_shared_bytes(A::N) / 2).aligned(1024) };
    let t = thread_idx_x() as usize;
    let mut i = t;
    while i < elements {
        let scale = if i < WGMMA_16BIT_A_TILE { a } else { b };
        // SAFETY: inside the aligned tiles.
        unsafe { tiles.write(i, Bf16::from_f32(scale * wgmma_16bit_tile_value(i))) };
        i += WGMMA_THREADS as usize;
    }
    crate::gpu::tma::fence_proxy_async();
    sync_threads();
    // The 4 k16 steps: A's 16 elements (32 bytes) on along its rows, B's 16 k rows
    // (2 KiB) on in each atom.
    let steps: [(Descriptor, Descriptor); 4] = core::array::from_fn(|s| {
        // SAFETY: A's 1024-byte groups start on 1024-byte boundaries, and so do B's
        // steps (A's 8 KiB and the 2 KiB steps are multiples of it).
        unsafe {
            (
                Descriptor::k_major_128b(tiles, WGMMA_16BIT_K * s),
                Descriptor::mn_major_128b(
                    tiles,
                    WGMMA_16BIT_A_TILE + WGMMA_16BIT_K * s * 64,
                    WGMMA_16BIT_ATOM_BYTES,
                ),
            )
        }
    });
    let mut acc = A::zeroed();
    let mut r = 0u32;
    while r < rounds {
        wgmma::fence();
        // Written out, as in wgmma_tf32_throughput.
        // SAFETY: the whole warpgroup calls it; the tiles are written once,
        // before, and acc is read only after the last wait.
        unsafe {
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[0].0, steps[0].1);
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[1].0, steps[1].1);
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[2].0, steps[2].1);
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[3].0, steps[3].1);
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[0].0, steps[0].1);
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[1].0, steps[1].1);
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[2].0, steps[2].1);
            wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, steps[3].0, steps[3].1);
        }
        wgmma::commit_group();
        wgmma::wait_group::<1, _>(&mut acc);
        r += 1;
    }
    wgmma::wait_group::<0, _>(&mut acc);
    // SAFETY: out holds one value per thread of the grid (the caller's contract).
    unsafe { out.write(thread::index_1d(), acc.as_slice().iter().sum()) };
}

kernel! {
    #[requires(sm_90a)]
    /// [`wgmma_tf32_throughput`] in BF16 ([`wgmma_bf16_rounds`]): 8
    /// `wgmma.m64n256k16.f32.bf16.bf16` per round, 128 accumulators a thread.
    pub fn wgmma_bf16_throughput(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
        // SAFETY: the host launches with WGMMA_16BIT_SHARED_BYTES of dynamic shared
        // memory, one warpgroup a block, and a value of out per thread.
        unsafe { wgmma_bf16_rounds::<[f32; WGMMA_N / 2]>(rounds, a, b, out) };
    }
}

kernel! {
    #[requires(sm_90a)]
    /// [`wgmma_bf16_throughput`] with half the N: 8 `wgmma.m64n128k16.f32.bf16.bf16`
    /// per round, 64 accumulators a thread. Per FLOP it reads 1.2 x the shared bytes
    /// of the N = 256 one (A's 64 x 16 tile a wgmma, for half the FLOPs): the rate of
    /// the products whose wgmma is 128 wide.
    pub fn wgmma_bf16_n128_throughput(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
        // SAFETY: the host launches with WGMMA_16BIT_N128_SHARED_BYTES of dynamic
        // shared memory, one warpgroup a block, and a value of out per thread.
        unsafe { wgmma_bf16_rounds::<[f32; WGMMA_N128 / 2]>(rounds, a, b, out) };
    }
}

/// Floats of one block's window for [`line_requests`]: the 32 lines of 128 bytes its
/// warps load again and again (4 KiB).
pub const REQUEST_WINDOW: usize = 32 * 32;
/// Loads per thread per round of [`line_requests`].
pub const REQUESTS_PER_ROUND: usize = 16;

kernel! {
    #[launch_bounds(256, 8)]
    /// In round r, lane l of every warp loads float l of lines 16 (r mod 2) to 16 (r
    /// mod 2) + 15 of its block's window, one after another: 32 consecutive floats, one
    /// line per request, as a coalesced warp load of a tile or of a matrix row is;
    /// after the first rounds every one an L1 hit. Each round: 16 loads at constant
    /// offsets from the round's half, 16 FADDs into the sum, the half's and the loop's
    /// few (about 2 instructions a request, so the issue slots, at 4 a clock, leave the
    /// L1 the limit): the rate at which the L1 takes requests of one line each
    /// (`lines_load` times requests of 32). The half changes each round, so no load can
    /// be hoisted out of the loop. Each thread stores its sum.
    pub fn line_requests(rounds: u32, src: Global<f32>, out: GlobalMut<f32>) {
        let lane = thread_idx_x() as usize % 32;
        let base = crate::gpu::thread::block_idx_x() as usize * REQUEST_WINDOW + lane;
        let mut sum = 0.0f32;
        let mut r = 0u32;
        while r < rounds {
            let half = base + 32 * REQUESTS_PER_ROUND * (r as usize & 1);
            let mut j = 0;
            while j < REQUESTS_PER_ROUND {
                // SAFETY: the host gives each block REQUEST_WINDOW floats; half + 32 j
                // is inside them.
                sum += unsafe { src.read(half + 32 * j) };
                j += 1;
            }
            r += 1;
        }
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(thread::index_1d(), sum) };
    }
}

kernel! {
    /// Each round every thread of the grid reads `layers` float4s, one from each
    /// layer of as many float4s as the grid has threads, at its index plus `round x
    /// shift` (mod the layer): each round a block reads other blocks' lines of the
    /// round before, which its SM's L1 does not hold, from a buffer (`layers` x grid
    /// float4s, about a quarter of the L2) that the L2 holds. The rate is the L2's.
    /// Each thread stores the sum of what it read.
    pub fn l2_read(rounds: u32, layers: usize, shift: usize, src: Global<Float4>, out: GlobalMut<f32>) {
        let (g, threads) = (thread::index_1d(), grid_size_1d());
        let mut at = g;
        let mut sum = 0.0f32;
        let mut r = 0u32;
        while r < rounds {
            let mut l = 0;
            while l < layers {
                // SAFETY: at < threads, and src holds layers x threads float4s.
                let v = unsafe { src.read(at + l * threads) };
                sum += v.x;
                sum += v.y;
                sum += v.z;
                sum += v.w;
                l += 1;
            }
            at += shift;
            if at >= threads {
                at -= threads;
            }
            r += 1;
        }
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(g, sum) };
    }
}

/// [`l2_bulk_read`]: floats a box of the copy engine (1 KiB), boxes a stage, and
/// stages a block.
pub const BULK_BOX: usize = 256;
pub const BULK_BOXES: usize = 8;
pub const BULK_STAGES: usize = 4;
/// Floats of one stage (8 KiB): the unit the kernel reads the buffer in.
pub const BULK_STAGE: usize = BULK_BOX * BULK_BOXES;
/// Dynamic shared memory of a block: its stages, then a barrier each.
pub const BULK_SHARED_BYTES: usize = (BULK_STAGES * BULK_STAGE + 2 * BULK_STAGES) * 4;

kernel! {
    #[requires(sm_90a)]
    /// The copy engine reads from the L2, as the Hopper products' tiles come: one
    /// thread a block keeps its stages' boxes in flight (1D TMA loads completing on a
    /// barrier a stage), the `i`-th stage a block reads taking the chunk (a stage's
    /// floats) at block / group + i x shift (mod `chunks`) of a buffer the L2 holds:
    /// `group` blocks, on as many SMs, read each chunk at about the same time, as the
    /// blocks of a product read the tiles they share. The thread adds each box's first
    /// float as its stage lands, then loads the stage again; it stores the sum. The
    /// rate is the L2's to the copy engine, for lines that many SMs read at once.
    pub fn l2_bulk_read(
        rounds: u32,
        chunks: usize,
        shift: usize,
        group: usize,
        src: Global<TensorMap>,
        out: GlobalMut<f32>,
    ) {
        if thread_idx_x() != 0 {
            return;
        }
        // SAFETY: the host launches with BULK_SHARED_BYTES of dynamic shared memory and a
        // map of chunks x BULK_STAGE floats in boxes of BULK_BOX; only this thread
        // touches the stages, each after its barrier's phase completes.
        unsafe {
            let tiles = dynamic_shared_array::<f32>(BULK_STAGES * BULK_STAGE + 2 * BULK_STAGES);
            let ring = Ring::new(tiles, BULK_STAGES, BULK_STAGE);
            ring.init();
            let b = block_idx_x() as usize;
            let total = rounds as usize * BULK_STAGES;
            let issue = |i: usize, s: Stage| {
                let first = ((b / group + i * shift) % chunks) * BULK_STAGE;
                let full = ring.acquire(s);
                for k in 0..BULK_BOXES {
                    let at = ring.stage(s) + k * BULK_BOX;
                    tma::load_1d(src, (first + k * BULK_BOX) as i32, tiles, at, full);
                }
            };
            let mut load = ring.producer_start();
            for i in 0..BULK_STAGES.min(total) {
                issue(i, load);
                load.advance();
            }
            let mut sum = 0.0f32;
            let mut s = ring.consumer_start();
            for i in 0..total {
                ring.wait(s);
                for k in 0..BULK_BOXES {
                    sum += tiles.read(ring.stage(s) + k * BULK_BOX);
                }
                if i + BULK_STAGES < total {
                    // The copy engine writes the stage after this thread's reads of it.
                    tma::fence_proxy_async();
                    issue(i + BULK_STAGES, load);
                    load.advance();
                }
                s.advance();
            }
            out.write(b, sum);
        }
    }
}

/// Dependent FFMAs (or shared loads) per round of the latency kernels.
pub const LATENCY_STEPS: usize = 64;

kernel! {
    /// One warp: `x = x a + b`, each FFMA waiting for the one before, 64 per round:
    /// the FP32 pipe's latency. Each thread stores x.
    pub fn fma_latency(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
        let mut x = b;
        let mut r = 0u32;
        while r < rounds {
            for _ in 0..LATENCY_STEPS {
                x = fma(x, a, b);
            }
            r += 1;
        }
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(thread::index_1d(), x) };
    }
}

/// Threads of [`shared_chase`]: one warp.
pub const CHASE_THREADS: u32 = 32;
/// Words of lane l's ring in [`shared_chase`]: l, l + 32, ..., all in bank l. Odd, so
/// that a launch of 64 hops a round ends elsewhere than it started.
pub const CHASE_RING: usize = 31;

kernel! {
    /// One warp: lane l follows links around its own ring of shared words (bank l,
    /// so each warp load is one wavefront), each load's address the value the one
    /// before returned, 64 per round: the shared-memory load latency. Each thread
    /// stores the index it ended on.
    pub fn shared_chase(rounds: u32, out: GlobalMut<u32>) {
        let ring = shared_array![COALESCE_CALIBRATE_CHASE: [u32; 32 * CHASE_RING]];
        let t = thread_idx_x() as usize;
        let mut i = t;
        while i < 32 * CHASE_RING {
            // SAFETY: i and the next word of its ring are inside the array.
            unsafe { ring.write(i, ring.link((i + 32) % (32 * CHASE_RING))) };
            i += CHASE_THREADS as usize;
        }
        sync_threads();
        let mut at = ring.link(t % 32);
        let mut r = 0u32;
        while r < rounds {
            for _ in 0..LATENCY_STEPS {
                // SAFETY: every word holds a link of the array; it was written before
                // the barrier and not since.
                at = unsafe { ring.follow(at) };
            }
            r += 1;
        }
        // SAFETY: out holds one value per thread of the grid.
        unsafe { out.write(thread::index_1d(), ring.index_of(at) as u32) };
    }
}
