//! The warpgroup MMA's emulation: its products, accumulators and groups.

use super::*;
use crate::gpu::SharedArray;
use crate::gpu::emu::{Dim3, LaunchConfig, Schedule, launch};
use crate::gpu::mma::to_tf32;
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::thread::{sync_threads, thread_rank_in_block};
use crate::gpu::tma::swizzled_128;
use std::sync::Mutex;
use std::vec::Vec;

/// A warpgroup multiplies a 64 x 8 A (fragments in registers) by a B tile that
/// the threads wrote into shared memory in the copy engine's 128-byte swizzle
/// (K-major: row `col` holds B[k][col] at k), one `m64n64k8` step at k offset 8 of
/// the row. The accumulators are unchanged until `wait_group` retires the
/// group, and then hold A B in the layout the module docs give; a kernel that
/// reads them without waiting sees the old values.
#[test]
fn a_warpgroup_mma_lands_at_its_wait_in_the_documented_layout() {
    let a = |r: usize, k: usize| ((r * 8 + k) % 7) as f32 - 3.0;
    let b = |k: usize, col: usize| ((k * 64 + col) % 5) as f32 - 2.0;
    for schedule in [Schedule::Concurrent, Schedule::Reverse] {
        // Only k 8..16 is the step's; the rest must not be read.
        let step = |k: usize, col: usize| {
            if (8..16).contains(&k) {
                b(k - 8, col)
            } else {
                f32::NAN
            }
        };
        let out = on_b_tile(schedule, step, |tid, tile| {
            let (w, lane) = (tid / 32, tid % 32);
            let (g, t) = (16 * w + lane / 4, lane % 4);
            let frag = [a(g, t), a(g + 8, t), a(g, t + 4), a(g + 8, t + 4)].map(to_tf32);
            let mut acc = [1.0f32; 32];
            // SAFETY: the tile is written (the helper's barrier); every thread of the
            // warpgroup issues and waits.
            unsafe {
                fence();
                mma_tf32(&mut acc, frag, Descriptor::k_major_128b(tile, 8));
                commit_group();
            }
            let early = acc;
            wait_group::<0, _>(&mut acc);
            (tid, early, acc)
        });
        assert_eq!(out.len(), 128);
        for (tid, early, acc) in out {
            assert_eq!(early, [1.0; 32], "thread {tid} saw the product before its wait");
            let (w, lane) = (tid / 32, tid % 32);
            let (g, t) = (16 * w + lane / 4, lane % 4);
            for j in 0..8 {
                for h in 0..2 {
                    for e in 0..2 {
                        let (row, col) = (g + 8 * h, 8 * j + 2 * t + e);
                        let want = 1.0 + (0..8).map(|k| a(row, k) * b(k, col)).sum::<f32>();
                        assert_eq!(
                            acc[4 * j + 2 * h + e],
                            want,
                            "thread {tid}: D[{row}][{col}] ({schedule:?})"
                        );
                    }
                }
            }
        }
    }
}

/// Runs `body(tid, tile)` on each thread of one warpgroup under `schedule` and
/// collects what it returns, after threads 0..64 wrote B's K-major tile of 64 rows
/// of 32 floats in the copy engine's 128-byte swizzle: row `col`'s k holds `b(k, col)`.
fn on_b_tile<T: Send>(
    schedule: Schedule,
    b: impl Fn(usize, usize) -> f32 + Sync,
    body: impl Fn(usize, SharedArray<f32>) -> T + Sync,
) -> Vec<T> {
    let cfg = LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(128),
        dynamic_shared_bytes: 64 * 32 * 4 + 1024,
        schedule,
        ..Default::default()
    };
    let out = Mutex::new(Vec::new());
    launch(&cfg, || {
        let tid = thread_rank_in_block();
        // SAFETY: the launch's dynamic shared memory holds the aligned tile.
        let tile = unsafe { dynamic_shared_array::<f32>(64 * 32 + 256).aligned(1024) };
        if tid < 64 {
            for k in 0..32 {
                // SAFETY: row `tid` of the tile.
                unsafe { tile.write(swizzled_128(tid, k), b(k, tid)) };
            }
        }
        sync_threads();
        let r = body(tid, tile);
        out.lock().unwrap().push(r);
    });
    out.into_inner().unwrap()
}

/// Each thread's id, first chain, second chain before its wait, and after.
type Chains = Vec<(usize, [f32; 32], [f32; 32], [f32; 32])>;

/// Two chains of groups, each into its own accumulators (a tile's two halves): a
/// wait that leaves the newest group pending has computed the older into its own
/// accumulators only, and the last wait the newer into its; a wait not handed the
/// accumulators of a group it retires is refused.
fn two_chains(hand_both: bool) -> Chains {
    let b = |k: usize, col: usize| ((k * 64 + col) % 5) as f32 - 2.0;
    let first_step = |k: usize, col: usize| if k < 8 { b(k, col) } else { 0.0 };
    on_b_tile(Schedule::default(), first_step, |tid, tile| {
        let frag = [1.0f32; 4].map(to_tf32);
        let (mut left, mut right) = ([1.0f32; 32], [2.0f32; 32]);
        // SAFETY: the tile is written (the helper's barrier); every thread of the
        // warpgroup issues and waits.
        unsafe {
            fence();
            mma_tf32(&mut left, frag, Descriptor::k_major_128b(tile, 0));
            commit_group();
            mma_tf32(&mut right, frag, Descriptor::k_major_128b(tile, 0));
            commit_group();
        }
        if hand_both {
            wait_group_pair::<1, _>(&mut left, &mut right);
        } else {
            wait_group::<0, _>(&mut left);
        }
        let early = right;
        wait_group_pair::<0, _>(&mut left, &mut right);
        (tid, left, early, right)
    })
}

#[test]
fn each_chain_of_groups_lands_in_its_own_accumulators_at_its_wait() {
    let out = two_chains(true);
    assert_eq!(out.len(), 128);
    for (tid, left, early, right) in out {
        let (_, t) = (tid / 32, tid % 32 % 4);
        for (i, (&l, &r)) in left.iter().zip(&right).enumerate() {
            // A is all ones: D[row][col] is the sum of B's column col over k.
            let col = 8 * (i / 4) + 2 * t + i % 2;
            let sum = (0..8).map(|k| ((k * 64 + col) % 5) as f32 - 2.0).sum::<f32>();
            assert_eq!(l, 1.0 + sum, "thread {tid}: the first chain's D[.][{col}]");
            assert_eq!(early[i], 2.0, "thread {tid}: the second chain before its wait");
            assert_eq!(r, 2.0 + sum, "thread {tid}: the second chain's D[.][{col}]");
        }
    }
}

/// A store made while a group is in flight counts as beside the MMAs; one made
/// after the wait that retires the last group does not.
#[test]
fn stores_count_as_beside_the_mmas_while_a_group_is_in_flight() {
    use crate::gpu::GlobalMut;
    use crate::gpu::emu::{Op, try_record};
    let out = Mutex::new(std::vec![0.0f32; 256]);
    let addr = out.lock().unwrap().as_mut_ptr() as usize;
    let cfg = LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(128),
        dynamic_shared_bytes: 64 * 32 * 4 + 1024,
        record: true,
        ..Default::default()
    };
    let rec = try_record(&cfg, || {
        let tid = thread_rank_in_block();
        let c = GlobalMut::from_ptr(addr as *mut f32);
        // SAFETY: the launch's dynamic shared memory holds the aligned tile; each
        // thread stores its own two elements of `out`.
        unsafe {
            let tile = dynamic_shared_array::<f32>(64 * 32 + 256).aligned(1024);
            let mut acc = [0.0f32; 32];
            fence();
            mma_tf32(&mut acc, [to_tf32(0.0); 4], Descriptor::k_major_128b(tile, 0));
            commit_group();
            c.write(tid, 1.0);
            wait_group::<0, _>(&mut acc);
            c.write(128 + tid, 2.0);
        }
    })
    .unwrap();
    let mut beside: Vec<usize> = rec
        .executions
        .iter()
        .filter(|e| e.op == Op::Store)
        .map(|e| e.beside_mma)
        .collect();
    beside.sort();
    assert_eq!(rec.executions.iter().filter(|e| e.op == Op::Store).count(), 256);
    assert_eq!(beside.iter().filter(|&&b| b == 1).count(), 128, "{beside:?}");
    assert_eq!(beside.iter().filter(|&&b| b == 0).count(), 128, "{beside:?}");
}

#[test]
#[should_panic(expected = "accumulators it was not handed")]
fn a_wait_that_retires_a_group_into_accumulators_it_was_not_handed_is_refused() {
    two_chains(false);
}

/// A warpgroup multiplies A (64 x 16, K-major, at k offset 16 of its 128-byte rows)
/// by B (16 x 128, MN-major: two 64-wide atoms 8 KiB apart, the second k group of 8
/// rows 1024 bytes on), both written in the copy engine's 128-byte swizzle, with
/// one `m64n128k16` in BF16: the accumulators hold A B in f32 after the wait, and
/// the same data read without the swizzle (a kernel that forgets it) differ.
#[test]
fn a_16_bit_mma_reads_k_major_a_and_mn_major_b_through_the_swizzle() {
    use crate::gpu::Bf16;
    let a = |r: usize, k: usize| ((r * 16 + k) % 7) as f32 - 3.0;
    let b = |k: usize, col: usize| ((k * 128 + col) % 5) as f32 * 0.5 - 1.0;
    // Elements: A at 0 (64 rows of 64), B's atoms at 4096 and 8192 (64 k rows of 64 n).
    // The copy engine's 128-byte swizzle of element `at` (2 bytes each).
    let swizzled = |at: usize| {
        let byte = at * 2;
        (byte ^ (((byte >> 7) & 7) << 4)) / 2
    };
    let run = |swizzle: bool| {
        let cfg = LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(128),
            dynamic_shared_bytes: 3 * 8192 + 1024,
            ..Default::default()
        };
        let out = Mutex::new(Vec::new());
        launch(&cfg, || {
            let tid = thread_rank_in_block();
            let place = |at: usize| if swizzle { swizzled(at) } else { at };
            // SAFETY: the launch's dynamic shared memory holds the aligned tiles.
            unsafe {
                let tile = dynamic_shared_array::<Bf16>(3 * 4096 + 512).aligned(1024);
                if tid < 64 {
                    for k in 0..64 {
                        let v = if (16..32).contains(&k) {
                            a(tid, k - 16)
                        } else {
                            f32::NAN
                        };
                        tile.write(place(tid * 64 + k), Bf16::from_f32(v));
                    }
                    for k in 0..16 {
                        for col in [tid, tid + 64] {
                            let at = 4096 + (col / 64) * 4096 + (8 + k) * 64 + col % 64;
                            tile.write(place(at), Bf16::from_f32(b(k, col)));
                        }
                    }
                }
                sync_threads();
                let mut acc = [0.0f32; 64];
                fence();
                let da = Descriptor::k_major_128b(tile, 16);
                let db = Descriptor::mn_major_128b(tile, 4096 + 8 * 64, 8192);
                mma_16bit_ss::<Bf16, _>(&mut acc, da, db);
                commit_group();
                wait_group::<0, _>(&mut acc);
                out.lock().unwrap().push((tid, acc));
            }
        });
        out.into_inner().unwrap()
    };
    let mut wrong = 0;
    for (swizzle, out) in [(true, run(true)), (false, run(false))] {
        assert_eq!(out.len(), 128);
        for (tid, acc) in out {
            let (w, lane) = (tid / 32, tid % 32);
            let (g, t) = (16 * w + lane / 4, lane % 4);
            for (i, &v) in acc.iter().enumerate() {
                let (row, col) = (g + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * t + i % 2);
                let want = (0..16).map(|k| a(row, k) * b(k, col)).sum::<f32>();
                if swizzle {
                    assert_eq!(v, want, "thread {tid}: D[{row}][{col}]");
                } else if v != want {
                    wrong += 1;
                }
            }
        }
    }
    assert!(
        wrong > 0,
        "tiles written without the swizzle gave the same product"
    );
}
