//! pipes: `coalesce calibrate`'s microbenchmarks of the rates at which an SM computes:
//! FP32 FMAs, instructions issued when no one pipe is full, tensor-core MMAs
//! (`mma.sync`, sm_80; `wgmma`, sm_90a), loads the L2 serves, and two latencies (a
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
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{grid_size_1d, sync_threads, thread_idx_x};
use crate::gpu::wgmma::{self, Descriptor};
use crate::gpu::{Float4, Global, GlobalMut, thread};

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

kernel! {
    #[requires(sm_90a)]
    /// One warpgroup multiplies a 64 x 8 A tile (every value a) by an 8 x 256 B tile
    /// (every value b), both read by the tensor cores from shared memory, into one
    /// accumulator (128 floats a thread): 8 `wgmma.m64n256k8` per round, then a commit
    /// and a wait for the round before (so one round is always queued), with the
    /// round's fence: 8 HGMMA, the fence's and the wait's instruction, the loop's 3,
    /// and the NOPs ptxas puts between HGMMAs. Each element of the
    /// accumulator gains 8 a b per wgmma; each thread stores the sum of its 128.
    pub fn wgmma_tf32_throughput(rounds: u32, a: f32, b: f32, out: GlobalMut<f32>) {
        // SAFETY: the host launches with WGMMA_SHARED_BYTES of dynamic shared memory.
        let tiles = unsafe { dynamic_shared_array::<f32>(WGMMA_SHARED_BYTES / 4).aligned(1024) };
        let t = thread_idx_x() as usize;
        let mut i = t;
        while i < WGMMA_A_FLOATS + WGMMA_B_FLOATS {
            // SAFETY: inside the aligned tiles; every value of a tile is the same, so
            // the swizzle needs no care.
            unsafe { tiles.write(i, if i < WGMMA_A_FLOATS { a } else { b }) };
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
