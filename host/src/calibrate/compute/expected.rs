//! What each compute microbenchmark must store, computed on the CPU with the same
//! arithmetic: `calibrate` checks every launch against it before its time is used.

use kernels::calibrate::pipes::{
    BULK_STAGE, BULK_STAGES, CHAINS, CHASE_RING, FMA_PER_ROUND, ISSUE_STEPS, LATENCY_STEPS, MMA_CHAINS,
    MMA_PER_ROUND, REQUEST_WINDOW, REQUESTS_PER_ROUND, WGMMA_N, WGMMA_N128, WGMMA_THREADS,
};

/// The FMA chains' parameters: `f = f A + B` tends to B / (1 - A) = 512, so the
/// values stay normal floats however long the chain.
pub const FMA_A: f32 = 1.0 - 1.0 / 1024.0;
pub const FMA_B: f32 = 0.5;
/// [`kernels::calibrate::pipes::issue_mix`]'s mask.
pub const ISSUE_K: u32 = 0x5bd1_e995;
/// The MMAs' operands: every product a power of two, so every sum the tensor cores
/// make is exact, whatever their order of additions (an m16n8k8 adds 36 A B or 72 A B
/// to each element; an m64n256k8 adds 8 A B = 1).
pub const MMA_A: f32 = 1.0;
pub const MMA_B: f32 = 1.0 / 128.0;
pub const WGMMA_B: f32 = 1.0 / 8.0;

/// What block `b` of `l2_bulk_read` stores: the first float of each box of every stage
/// it read, stage `i` from chunk (b / group + i x shift) mod chunks.
pub fn bulk_sum(b: usize, group: usize, chunks: usize, shift: usize, rounds: usize) -> f32 {
    let b = b / group.max(1);
    use kernels::calibrate::pipes::{BULK_BOX, BULK_BOXES};
    (0..rounds * BULK_STAGES)
        .map(|i| {
            let first = ((b + i * shift) % chunks) * BULK_STAGE;
            (0..BULK_BOXES)
                .map(|k| l2_value(first + k * BULK_BOX) as f32)
                .sum::<f32>()
        })
        .sum()
}

/// The value `l2_read` reads at float `i` of its buffer (small integers: every sum a
/// thread makes is exact).
pub fn l2_value(i: usize) -> u32 {
    (i % 7) as u32
}

/// What each of `threads` threads of `l2_read` stores: the sum of the float4s at its
/// place `at` (g, then + shift mod threads each round) in every layer.
pub fn l2_sums(threads: usize, layers: usize, shift: usize, rounds: usize) -> Vec<u32> {
    use rayon::prelude::*;
    // The sum of the `layers` float4s at each place.
    let at: Vec<u32> = (0..threads)
        .into_par_iter()
        .map(|p| {
            (0..layers)
                .flat_map(|l| (0..4).map(move |c| l2_value(4 * (p + l * threads) + c)))
                .sum()
        })
        .collect();
    (0..threads)
        .into_par_iter()
        .map(|g| {
            let (mut p, mut sum) = (g, 0u32);
            for _ in 0..rounds {
                sum += at[p];
                p = (p + shift) % threads;
            }
            sum
        })
        .collect()
}

/// The value `line_requests` reads at float `i` of its buffer (small integers: every
/// sum a thread makes is exact).
pub fn line_value(i: usize) -> f32 {
    (i % 5) as f32
}

/// What thread `t` of block `block` of `line_requests` stores after `rounds` rounds:
/// the 16 floats of its lane in the round's half of the window, each round.
pub fn line_sum(block: usize, t: usize, rounds: usize) -> f32 {
    let base = block * REQUEST_WINDOW + t % 32;
    // Each half's 16 values, summed; the rounds alternate halves, starting with the
    // first. Every value and sum is a small integer, exact in f32 in any order, so
    // the closed form is what the kernel's running sum reaches (not a loop over the
    // rounds for each of the launch's threads).
    let half = |h: usize| -> f32 {
        (0..REQUESTS_PER_ROUND)
            .map(|j| line_value(base + 32 * REQUESTS_PER_ROUND * h + 32 * j))
            .sum()
    };
    rounds.div_ceil(2) as f32 * half(0) + (rounds / 2) as f32 * half(1)
}

/// What every thread of `fma_throughput` stores: its 8 chains' sum.
pub fn fma_chains(rounds: usize, a: f32, b: f32) -> f32 {
    let mut f: [f32; CHAINS] = core::array::from_fn(|j| b + j as f32);
    for _ in 0..rounds * (FMA_PER_ROUND / CHAINS) {
        for x in f.iter_mut() {
            *x = x.mul_add(a, b);
        }
    }
    f.iter().sum()
}

/// What every thread of `issue_mix` stores.
pub fn issue_chains(rounds: usize, a: f32, b: f32, k: u32) -> u32 {
    let mut f: [f32; CHAINS] = core::array::from_fn(|j| b + j as f32);
    let mut x: [u32; CHAINS] = core::array::from_fn(|j| k ^ j as u32);
    for _ in 0..rounds * ISSUE_STEPS {
        for j in 0..CHAINS {
            f[j] = f[j].mul_add(a, b).mul_add(a, b);
            x[j] = (x[j] ^ f[j].to_bits()) & k;
        }
    }
    x.iter()
        .fold(f.iter().sum::<f32>().to_bits(), |s, v| s.wrapping_add(*v))
}

/// What every thread of `mma_tf32_throughput` stores: each m16n8k8 adds 36 a b to its
/// accumulators of row g and 72 a b to those of row g + 8 (A's fragments a, 2a, 4a, 8a
/// times B's b, 2b, over k 0..4 and 4..8).
pub fn mma_sum(rounds: usize, a: f32, b: f32) -> f32 {
    let mut acc: [[f32; 4]; MMA_CHAINS] = core::array::from_fn(|j| [j as f32; 4]);
    let add = [36.0 * a * b, 36.0 * a * b, 72.0 * a * b, 72.0 * a * b];
    for _ in 0..rounds * (MMA_PER_ROUND / MMA_CHAINS) {
        for c in acc.iter_mut() {
            for (v, d) in c.iter_mut().zip(add) {
                *v += d;
            }
        }
    }
    acc.iter().flatten().sum()
}

/// What the 128 threads of one `wgmma_tf32_throughput` block store in all: each round
/// uses every k of the 32 twice, so rounds x 2 x sum over k of (A's column k summed)
/// (B's column k summed), with each float's (row, k) read through the 128-byte
/// swizzle (16-byte chunk c of row r holds the row's chunk c xor r mod 8).
pub fn wgmma_block_total(rounds: usize, a: f32, b: f32) -> f64 {
    use kernels::calibrate::pipes::{WGMMA_A_TILE, WGMMA_B_TILE, wgmma_tile_value};
    // Column k of a tile starting at float `base` of `rows` rows, summed.
    let column = |base: usize, rows: usize, k: usize| -> f64 {
        (0..rows)
            .map(|r| {
                let at = r * 32 + (((k / 4) ^ (r % 8)) * 4) + k % 4;
                f64::from(wgmma_tile_value(base + at))
            })
            .sum()
    };
    let per_round: f64 = (0..32)
        .map(|k| column(0, WGMMA_A_TILE / 32, k) * column(WGMMA_A_TILE, WGMMA_B_TILE / 32, k))
        .sum();
    rounds as f64 * 2.0 * f64::from(a) * f64::from(b) * per_round
}

/// What the 128 threads of one block of a BF16 throughput kernel whose wgmma is 64 x
/// `n` x 16 (`wgmma_bf16_throughput`, N 256; `wgmma_bf16_n128_throughput`, 128) store
/// in all: each round uses every k of the 64 twice, so rounds x 2 x sum over k of (A's
/// column k summed) (B's row k summed), each element read through the 128-byte swizzle
/// (16-byte chunk c of a 128-byte row r holds the row's chunk c xor r mod 8): A's rows
/// are its m, B's are its k rows of each 64-wide atom of n.
pub fn wgmma_16bit_block_total(n: usize, rounds: usize, a: f32, b: f32) -> f64 {
    use kernels::calibrate::pipes::{WGMMA_16BIT_A_TILE, wgmma_16bit_tile_value};
    // Element (row, col) of the 128-byte rows from element `base` on: 64 a row.
    let at = |base: usize, row: usize, col: usize| {
        let v = wgmma_16bit_tile_value(base + row * 64 + (((col / 8) ^ (row % 8)) * 8) + col % 8);
        f64::from(kernels::gpu::Bf16::from_f32(v).to_f32())
    };
    let a_column = |k: usize| -> f64 { (0..64).map(|m| at(0, m, k)).sum() };
    let b_row = |k: usize| -> f64 {
        (0..n)
            .map(|j| at(WGMMA_16BIT_A_TILE + (j / 64) * 64 * 64, k, j % 64))
            .sum()
    };
    let per_round: f64 = (0..64).map(|k| a_column(k) * b_row(k)).sum();
    rounds as f64 * 2.0 * f64::from(a) * f64::from(b) * per_round
}

/// The first block of `wgmma_tf32_throughput` whose threads' sum is not within 1% of
/// [`wgmma_block_total`] (a wgmma of the 8 left out is 12.5%; float sums of this many
/// terms stay well inside 1%), or None.
pub fn check_wgmma_blocks(got: &[f32], rounds: usize, a: f32, b: f32) -> Option<String> {
    check_blocks(got, wgmma_block_total(rounds, a, b))
}

/// The same for `wgmma_bf16_throughput` against [`wgmma_16bit_block_total`].
pub fn check_wgmma_16bit_blocks(got: &[f32], rounds: usize, a: f32, b: f32) -> Option<String> {
    check_blocks(got, wgmma_16bit_block_total(WGMMA_N, rounds, a, b))
}

/// The same for `wgmma_bf16_n128_throughput`.
pub fn check_wgmma_16bit_n128_blocks(got: &[f32], rounds: usize, a: f32, b: f32) -> Option<String> {
    check_blocks(got, wgmma_16bit_block_total(WGMMA_N128, rounds, a, b))
}

/// The first warpgroup's block whose threads' sum is not within 1% of `want`.
fn check_blocks(got: &[f32], want: f64) -> Option<String> {
    got.chunks(WGMMA_THREADS as usize)
        .map(|block| block.iter().map(|v| f64::from(*v)).sum::<f64>())
        .enumerate()
        .find(|(_, sum)| sum.is_nan() || (sum - want).abs() > 0.01 * want)
        .map(|(i, sum)| format!("block {i} stored {sum} in all instead of {want}"))
}

/// What every thread of `fma_latency` stores.
pub fn fma_chain(rounds: usize, a: f32, b: f32) -> f32 {
    (0..rounds * LATENCY_STEPS).fold(b, |x, _| x.mul_add(a, b))
}

/// Where lane `lane` of `shared_chase` ends after `rounds` rounds: its ring's word
/// (hops mod the ring's length) on.
pub fn chase_end(lane: usize, rounds: usize) -> u32 {
    (lane + 32 * (rounds * LATENCY_STEPS % CHASE_RING)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::compute::COMPUTE;
    use kernels::entry;

    #[test]
    fn the_references_compute_each_kernels_arithmetic() {
        // Two FMA steps of one chain by hand.
        let (a, b) = (FMA_A, FMA_B);
        assert_eq!(fma_chain(0, a, b), b);
        let two = b.mul_add(a, b).mul_add(a, b);
        assert_eq!((0..2).fold(b, |x, _| x.mul_add(a, b)), two);
        // The chains tend to b / (1 - a) and stay finite.
        let long = fma_chain(16384, a, b);
        assert!((long - 512.0).abs() < 1.0, "{long}");
        assert!(fma_chains(2048, a, b).is_finite());
        assert_ne!(issue_chains(3, a, b, ISSUE_K), issue_chains(4, a, b, ISSUE_K));
        // m16n8k8: 4 chains of [j; 4], each + (36, 36, 72, 72) a b per mma, 16 per round.
        let per_thread = |rounds: f32| 4.0 * 4.0 * 1.5 + 4.0 * rounds * 4.0 * 216.0 / 128.0;
        assert_eq!(mma_sum(1, MMA_A, MMA_B), per_thread(1.0));
        assert_eq!(mma_sum(2048, MMA_A, MMA_B), per_thread(2048.0));
        // wgmma: 64 x 256 accumulators, each + a b (8 products of values in [1, 2))
        // per wgmma, 8 per round: between 1 and 4 times the constants' 64 a b.
        let ones = 1024.0 * 8.0 * 64.0 * 256.0 * 8.0 * f64::from(MMA_A * WGMMA_B);
        let total = wgmma_block_total(1024, MMA_A, WGMMA_B);
        assert!(total > ones && total < 4.0 * ones, "{total} against {ones}");
        assert_eq!(
            wgmma_block_total(2, 1.0, 1.0),
            2.0 * wgmma_block_total(1, 1.0, 1.0)
        );
        // A block whose threads store the total passes; one a wgmma short, not.
        let share = (total / 128.0) as f32;
        assert_eq!(check_wgmma_blocks(&[share; 256], 1024, MMA_A, WGMMA_B), None);
        let short = [share * 7.0 / 8.0; 128];
        assert!(check_wgmma_blocks(&short, 1024, MMA_A, WGMMA_B).is_some());
        // BF16: 64 x 256 accumulators, each + a b (16 products in [1, 2)) per wgmma.
        let ones = 1024.0 * 8.0 * 64.0 * 256.0 * 16.0 * f64::from(MMA_A * WGMMA_B);
        let total = wgmma_16bit_block_total(WGMMA_N, 1024, MMA_A, WGMMA_B);
        assert!(total > ones && total < 4.0 * ones, "{total} against {ones}");
        let share = (total / 128.0) as f32;
        assert_eq!(
            check_wgmma_16bit_blocks(&[share; 256], 1024, MMA_A, WGMMA_B),
            None
        );
        // A wgmma short, or the TF32 kernel's product, fails.
        let short = [share * 7.0 / 8.0; 128];
        assert!(check_wgmma_16bit_blocks(&short, 1024, MMA_A, WGMMA_B).is_some());
        let tf32 = [(wgmma_block_total(1024, MMA_A, WGMMA_B) / 128.0) as f32; 128];
        assert!(check_wgmma_16bit_blocks(&tf32, 1024, MMA_A, WGMMA_B).is_some());
        // N = 128: B's first 2 atoms of the 4, so about half the N = 256 total; each
        // kernel's total passes its own check and fails the other's.
        let n128 = wgmma_16bit_block_total(WGMMA_N128, 1024, MMA_A, WGMMA_B);
        assert!(n128 > ones / 2.0 && n128 < 0.6 * total, "{n128} against {total}");
        let n128_share = [(n128 / 128.0) as f32; 128];
        assert_eq!(
            check_wgmma_16bit_n128_blocks(&n128_share, 1024, MMA_A, WGMMA_B),
            None
        );
        assert!(check_wgmma_16bit_blocks(&n128_share, 1024, MMA_A, WGMMA_B).is_some());
        assert!(check_wgmma_16bit_n128_blocks(&[share; 128], 1024, MMA_A, WGMMA_B).is_some());
        // The chase ends elsewhere than it started at the full and quick rounds.
        let chase = COMPUTE
            .iter()
            .find(|b| b.kernel() == entry::shared_chase.info())
            .unwrap();
        for quick in [false, true] {
            let rounds = chase.rounds.count(quick, 1);
            assert_ne!(chase_end(5, rounds), 5);
            assert_eq!(chase_end(5, rounds) % 32, 5, "in the lane's own bank");
        }
        assert_eq!(chase_end(3, 1), 3 + 32 * 2);
    }

    #[test]
    fn line_sum_is_the_kernels_running_sum() {
        for (block, t) in [(0, 0), (3, 37), (1055, 255)] {
            for rounds in [0, 1, 3, 2048] {
                let base = block * REQUEST_WINDOW + t % 32;
                let mut sum = 0.0f32;
                for r in 0..rounds {
                    for j in 0..REQUESTS_PER_ROUND {
                        sum += line_value(base + 32 * REQUESTS_PER_ROUND * (r & 1) + 32 * j);
                    }
                }
                assert_eq!(
                    line_sum(block, t, rounds),
                    sum,
                    "block {block} thread {t} rounds {rounds}"
                );
            }
        }
    }
}
