//! Rounds of blocks, whole waves, persistent kernels' schedules and each launch's
//! fixed costs.

use super::*;

#[test]
fn a_last_partial_round_runs_with_fewer_warps() {
    let p = sample();
    let step = simt();
    let blocks_of = |n: u64| predict(step.flops * n as f64, step, "SASS", launch(n, 256), &p, None).unwrap();
    // 256 threads without resources: 8 blocks per SM by threads (2048 / 256).
    let full = blocks_of(132 * 8);
    let one_more = blocks_of(132 * 8 + 132);
    assert_eq!(full.waves.rounds, 1);
    assert_eq!((one_more.waves.rounds, one_more.waves.last_round_blocks), (2, 1));
    // The extra round of one block per SM holds 2 warps per scheduler, not 16: slower
    // per iteration than the full round.
    assert!(
        one_more.time_ms > full.time_ms * 1.125,
        "{} {}",
        one_more.time_ms,
        full.time_ms
    );
}

#[test]
fn one_block_more_than_a_full_wave_predicts_a_second_wave() {
    let p = unpowered();
    let step = simt();
    // 100 iterations a block, 8 blocks of 256 threads an SM (threads).
    let blocks_of = |n: u64| {
        predict(
            step.flops * 100.0 * n as f64,
            step,
            "SASS",
            launch(n, 256),
            &p,
            None,
        )
        .unwrap()
    };
    let wave = blocks_of(132 * 8);
    let one_more = blocks_of(132 * 8 + 1);
    assert_eq!((wave.waves.rounds, one_more.waves.rounds), (1, 2));
    // The second wave is that one block alone on one SM: as long as a launch of it.
    let alone = blocks_of(1);
    assert!(
        close(one_more.time_ms, wave.time_ms + alone.time_ms),
        "{} against {} + {}",
        one_more.time_ms,
        wave.time_ms,
        alone.time_ms
    );
}

#[test]
fn a_persistent_kernels_busiest_block_sets_its_time() {
    let p = unpowered();
    let step = simt();
    // 132 blocks walk 133 tiles of 100 iterations: one block walks two.
    let tiles = 133.0 * 100.0 * step.flops;
    let even = predict(tiles, step, "SASS", launch(132, 256), &p, None).unwrap();
    let walked = LaunchFlops {
        declared: tiles,
        computed: tiles,
        busiest_block: Some(200.0 * step.flops),
        split: None,
        computing_warps: None,
    };
    let got = predict(walked, step, "SASS", launch(132, 256), &p, None).unwrap();
    assert!(
        close(loop_ms(&got), loop_ms(&even) * 200.0 / (133.0 * 100.0 / 132.0)),
        "{got:?}"
    );
}

#[test]
fn each_rounds_first_tiles_and_the_launch_cost_their_fixed_time() {
    let step = Step {
        dram_bytes: 64.0,
        ..simt()
    };
    let flops = step.flops * 100.0 * 132.0 * 8.0 * 3.0;
    let run = |p: &Profile| predict(flops, step, "SASS", launch(132 * 8 * 3, 256), p, None).unwrap();
    let bare = run(&unpowered());
    assert!(
        bare.not_modelled.iter().any(|n| n.contains("no launch_ns")),
        "{bare:?}"
    );
    // Three rounds, each waiting an idle DRAM load before its first tile.
    assert_eq!(bare.waves.rounds, 3);
    assert!(close(bare.fill_ns, 3.0 * bare_profile_latency()));
    let calibrated = Profile {
        launch_ns: Some(4000.0),
        launch_gap_ns: Some(500.0),
        l2_resident: Some(crate::profile::l2::tests::sample()),
        ..unpowered()
    };
    let got = run(&calibrated);
    assert!(!got.not_modelled.iter().any(|n| n.contains("launch")));
    // The product's 64 bytes an iteration (20 MiB or so) fit in the L2: the L2's latency.
    let l2 = crate::profile::l2::tests::sample().loaded_latency_ns;
    assert!(close(got.fill_ns, 3.0 * l2));
    // Launch after launch: the gap beside the work, or the launch's floor.
    let work_ns = loop_ms(&bare) * 1e6 + 3.0 * l2;
    let interval_ns = 500.0 + work_ns.max(3500.0);
    assert!(close(got.launch_ns, interval_ns - work_ns), "{got:?}");
    assert!(close(got.time_ms, interval_ns * 1e-6), "{got:?}");
}

#[test]
fn a_kernel_that_outlasts_the_launch_pays_the_gap_and_a_short_one_the_whole_launch() {
    let step = simt();
    let calibrated = Profile {
        launch_ns: Some(4000.0),
        launch_gap_ns: Some(500.0),
        ..unpowered()
    };
    let run = |iterations: f64| {
        let flops = step.flops * iterations * 132.0 * 8.0;
        predict(flops, step, "SASS", launch(132 * 8, 256), &calibrated, None).unwrap()
    };
    // Long enough to hide the next launch's setup: only the gap is added.
    let long = run(1e5);
    assert!(long.time_ms * 1e6 > 10.0 * 4000.0, "{long:?}");
    assert!(close(long.launch_ns, 500.0), "{long:?}");
    // One iteration a block: the launch's interval is the time.
    let short = run(1.0);
    assert!(close(short.time_ms * 1e6, 4000.0), "{short:?}");
    assert!(short.launch_ns > 500.0, "{short:?}");
    // Without the gap, the whole launch beside the work, and said so.
    let uncalibrated = Profile {
        launch_gap_ns: None,
        ..calibrated
    };
    let flops = step.flops * 1e5 * 132.0 * 8.0;
    let whole = predict(flops, step, "SASS", launch(132 * 8, 256), &uncalibrated, None).unwrap();
    assert!(close(whole.launch_ns, 4000.0), "{whole:?}");
    assert!(whole.not_modelled.iter().any(|n| n.contains("no launch_gap_ns")));
}

#[test]
fn a_round_that_leaves_sms_idle_stores_its_tiles_faster_up_to_the_port() {
    let p = unpowered();
    let rate = p.store_lines_per_ns_per_sm.unwrap();
    let rates = p.compute.as_ref().unwrap();
    let port = l2_port_gb_per_s(rates) / 132.0 / 128.0;
    // 2 lines an iteration, the threads' and the copy engine's alike, 100 iterations
    // a block: 200 lines a block's epilogue.
    let threads = Step {
        store_lines: 2.0,
        ..simt()
    };
    let copy_engine = Step {
        bulk_store_lines: 2.0,
        ..simt()
    };
    let run = |s: Step, blocks: u64| {
        predict(
            s.flops * 100.0 * blocks as f64,
            s,
            "SASS",
            launch(blocks, 32),
            &p,
            None,
        )
        .unwrap()
    };
    // Every SM busy: each its share of the L2's write rate.
    assert!(close(run(threads, 132).epilogue_ns, 200.0 / rate));
    assert!(close(run(copy_engine, 132).epilogue_ns, 200.0 / rate));
    // 33 SMs busy share the same write rate, 4 times each one's share, up to its port.
    let few = run(threads, 33);
    let want = 200.0 / (rate * 4.0).min(port.max(rate));
    assert!(close(few.epilogue_ns, want), "{} against {want}", few.epilogue_ns);
    assert!(few.epilogue_ns < run(threads, 132).epilogue_ns);
}

/// overlap: the lines a block stores while its MMAs run are no epilogue after its
/// loop; they take the L2 in the loop's time instead.
#[test]
fn stores_beside_the_mmas_leave_the_epilogue_for_the_loops_l2_demand() {
    let p = unpowered();
    let after = Step {
        bulk_store_lines: 2.0,
        ..simt()
    };
    let beside = Step {
        store_lines_beside_mma: 1.5,
        ..after
    };
    let run = |s: Step| predict(s.flops * 100.0 * 132.0, s, "SASS", launch(132, 32), &p, None).unwrap();
    let l2 = |got: &ProductPrediction| {
        got.units
            .iter()
            .find(|u| u.unit == Unit::L2)
            .map_or(0.0, |u| u.demand_ns)
    };
    let (a, b) = (run(after), run(beside));
    // A quarter of the lines left after the loop.
    assert!(
        close(b.epilogue_ns, a.epilogue_ns / 4.0),
        "{} against {}",
        b.epilogue_ns,
        a.epilogue_ns
    );
    assert!(l2(&b) > l2(&a), "{} against {}", l2(&b), l2(&a));
}

/// stream-k: one tile of 2 (k + 1) k-blocks dealt to k + 1 clusters, two k-blocks
/// each, against k + 1 tiles of two k-blocks dealt whole. The loops are the same; the
/// split tile's owner then waits for its k contributors' partial tiles to be stored
/// (they end their parts as it does) and takes them one after another.
#[test]
fn a_split_tiles_owner_waits_for_its_contributors_one_after_another() {
    use crate::explain::product::fixup::Split;
    use kernels::hgemm::stream_k::{Deal, HYBRID};
    let p = unpowered();
    let rates = p.compute.as_ref().unwrap();
    let port = l2_port_gb_per_s(rates) / 132.0;
    let partial = 128.0 * 1024.0;
    let step = simt();
    for k in 1..=3u32 {
        let clusters = k + 1;
        let run = |deal: Deal| {
            let flops = step.flops * 100.0 * 2.0 * f64::from(clusters);
            let work = LaunchFlops {
                split: Some(Split {
                    deal,
                    partial_bytes: partial as u64,
                }),
                ..LaunchFlops::from(flops)
            };
            let size = LaunchSize {
                cluster: 2,
                ..launch(2 * u64::from(clusters), 256)
            };
            predict(work, step, "SASS", size, &p, None).unwrap()
        };
        let whole = run(Deal::new(clusters, 2, clusters, HYBRID));
        let split = run(Deal::new(1, 2 * clusters, clusters, HYBRID));
        assert_eq!(whole.fixup_ns, 0.0, "{whole:?}");
        // The k contributors' blocks store together; the owner's two blocks load.
        let store = partial
            / 128.0
            / (p.store_lines_per_ns_per_sm.unwrap() * 132.0 / f64::from(2 * k))
                .min((port / 128.0).max(p.store_lines_per_ns_per_sm.unwrap()));
        // Each a wait for the flag and then the partial's loads: two of the latency
        // (the sample profile has no L2-resident one: an idle load's) and the bytes.
        let gather = 2.0 * bare_profile_latency() + partial / (rates.l2_read_gb_per_s / 2.0).min(port);
        let chain = store + f64::from(k) * gather;
        assert!(
            close(split.fixup_ns, chain),
            "k = {k}: {} against {chain}",
            split.fixup_ns
        );
        assert!(
            close(loop_ms(&split) - loop_ms(&whole), chain * 1e-6),
            "k = {k}: {} against {}",
            loop_ms(&split),
            loop_ms(&whole)
        );
    }
}
