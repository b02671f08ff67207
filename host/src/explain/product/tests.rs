use super::*;
use crate::explain::emulate::analyse::{Direction, Memory, SiteStats};
use crate::explain::emulate::traffic::Traffic;
use crate::profile::tests::{sample, schema_5};

// Rounds, waves and the launch's fixed costs.
mod schedule;
// The 16-bit wgmma rate's tests.
mod wgmma16;

/// The sample profile without its power limit: the pace alone sets the clock.
fn unpowered() -> Profile {
    Profile {
        power: None,
        ..sample()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-30)
}

/// One warp's iteration: 64 FFMAs (4096 FLOPs), 72 instructions in all.
fn simt() -> Step {
    Step {
        flops: 4096.0,
        instructions: 72.0,
        fp32: 64.0,
        shared_wavefronts: 4.0,
        ..Step::default()
    }
}

fn launch(blocks: u64, threads: u32) -> LaunchSize {
    LaunchSize {
        blocks,
        threads_per_block: threads,
        dynamic_shared_bytes: 0,
        cluster: 1,
    }
}

/// A prediction's time without its fixed costs (the rounds' fills, the launch): its
/// rounds' alone.
fn loop_ms(p: &ProductPrediction) -> f64 {
    p.time_ms - (p.fill_ns + p.launch_ns) * 1e-6
}

/// Demand of `count` at a per-SM rate, on one scheduler.
fn demand(count: f64, per_sm: f64) -> f64 {
    count / (per_sm / SCHEDULERS_PER_SM)
}

#[test]
fn one_warp_waits_for_the_issue_slots_and_its_slowest_unit_in_turn() {
    let p = sample();
    let rates = p.compute.clone().unwrap();
    // One block of one warp on one SM: a scheduler with a single warp.
    let step = simt();
    let got = predict(step.flops * 10.0, step, "SASS", launch(1, 32), &p, None).unwrap();
    let issue = demand(72.0, rates.issue_per_ns_per_sm);
    let fp32 = demand(64.0, rates.fma_per_ns_per_sm);
    let l1 = demand(4.0, p.shared_wavefronts_per_ns_per_sm.unwrap());
    // Ten iterations, each the issue slots' time and the L1's; the FP32 pipe takes
    // the FFMAs as they issue, so it only caps the pace.
    let per_iteration = (issue + l1).max(fp32);
    assert!(close(loop_ms(&got), 10.0 * per_iteration * 1e-6), "{got:?}");
    assert_eq!(got.waves.busiest, 1);
}

#[test]
fn the_fp32_pipe_caps_the_pace_but_no_warp_waits_on_it() {
    let p = unpowered();
    let rates = p.compute.clone().unwrap();
    // Nothing but FFMAs: two warps a scheduler issue them back to back, so the slower
    // of the issue slots and the pipe sets the pace, with no queue between them.
    let step = Step {
        flops: 64.0 * 64.0,
        instructions: 64.0,
        fp32: 64.0,
        ..Step::default()
    };
    let got = predict(step.flops * 8.0 * 1000.0, step, "SASS", launch(1, 256), &p, None).unwrap();
    let (issue, fp32) = (
        demand(64.0, rates.issue_per_ns_per_sm),
        demand(64.0, rates.fma_per_ns_per_sm),
    );
    // 8 warps, 2 a scheduler, 1000 iterations each.
    let want = 2.0 * 1000.0 * issue.max(fp32);
    assert!(
        close(loop_ms(&got) * 1e6, want),
        "{} against {want}",
        loop_ms(&got) * 1e6
    );
}

#[test]
fn a_block_that_drains_its_wgmmas_at_a_barrier_keeps_the_tensor_pipe_to_itself() {
    let p = unpowered();
    let rates = p.compute.clone().unwrap();
    // Two warpgroups a block (2 warps a scheduler), one block an SM: each warp issues
    // 40 instructions and a quarter of its warpgroup's wgmma FLOPs an iteration.
    let free = Step {
        flops: 65536.0,
        instructions: 40.0,
        wgmma_flops: 65536.0,
        wgmma_waits_all: 1.0,
        ..Step::default()
    };
    let drained = Step {
        block_barriers: 1.0,
        ..free
    };
    let iterations = 8.0 * 100.0;
    let run = |step: Step| predict(step.flops * iterations, step, "SASS", launch(1, 256), &p, None).unwrap();
    let (apart, together) = (run(free), run(drained));
    let issue = demand(40.0, rates.issue_per_ns_per_sm);
    let tensor = demand(65536.0, rates.wgmma_tf32_flops_per_ns_per_sm.unwrap());
    // The block is one customer: each iteration its two warps' issue, then their
    // wgmmas, one after the other; 100 iterations.
    let want = 100.0 * 2.0 * (issue + tensor);
    assert!(close(loop_ms(&together) * 1e6, want), "{together:?}");
    // Warps that meet on no barrier overlap one's issue with the other's wgmmas.
    assert!(apart.time_ms < together.time_ms * 0.95, "{apart:?}");
    // A wait that leaves the pipe busy (no wait for all) keeps the warps apart too.
    let in_flight = run(Step {
        wgmma_waits_all: 0.0,
        ..drained
    });
    assert!(close(in_flight.time_ms, apart.time_ms));
}

#[test]
fn a_blocks_stores_of_c_follow_its_loop_and_nothing_overlaps_them() {
    let p = unpowered();
    let per_line = 1.0 / p.store_lines_per_ns_per_sm.unwrap();
    // 132 blocks of one warp (one an SM), 100 iterations each, the last storing its
    // tile: 2 store lines an iteration in all, 200 a block.
    let step = simt();
    let storing = Step {
        store_lines: 2.0,
        ..step
    };
    let run = |s: Step| predict(s.flops * 132.0 * 100.0, s, "SASS", launch(132, 32), &p, None).unwrap();
    let (plain, with) = (run(step), run(storing));
    // The loop's pace is unchanged: the lines take the SM's L1 after it, all 200.
    assert!(
        close(with.time_ms - plain.time_ms, 200.0 * per_line * 1e-6),
        "{with:?}"
    );
    let l1 = |r: &ProductPrediction| r.units.iter().find(|u| u.unit == Unit::L1).unwrap().demand_ns;
    assert!(close(l1(&with), l1(&plain)));
    // Two blocks an SM (of 100 warp iterations each, as above) store together at the
    // end of their round: twice the lines.
    let two = |s: Step| predict(s.flops * 264.0 * 100.0, s, "SASS", launch(264, 1024), &p, None).unwrap();
    let (plain, with) = (two(step), two(storing));
    let blocks = f64::from(with.residency.blocks.min(2));
    assert_eq!(blocks, 2.0, "{with:?}");
    let want = blocks * 200.0 * per_line * 1e-6;
    assert!(
        close(with.time_ms - plain.time_ms, want),
        "{} against {want}",
        with.time_ms - plain.time_ms
    );
}

#[test]
fn tiles_on_the_edge_compute_more_than_the_declared_flops() {
    let p = unpowered();
    let step = simt();
    let declared = step.flops * 132.0 * 100.0;
    let exact = predict(declared, step, "SASS", launch(132, 32), &p, None).unwrap();
    let padded = LaunchFlops {
        declared,
        computed: declared * 1.25,
        busiest_block: None,
        split: None,
        computing_warps: None,
    };
    let got = predict(padded, step, "SASS", launch(132, 32), &p, None).unwrap();
    // A quarter more iterations take a quarter more time, quoted in declared FLOPs.
    assert!(close(loop_ms(&got), loop_ms(&exact) * 1.25));
    assert!(close(got.gflop_per_s, declared / (got.time_ms * 1e6)));
}

#[test]
fn many_warps_run_at_the_busiest_units_pace_and_name_it() {
    let p = sample();
    let rates = p.compute.clone().unwrap();
    // Far more blocks than SMs, each of 1024 threads: 8 warps per scheduler per block.
    let step = Step {
        shared_wavefronts: 60.0,
        ..simt()
    };
    let blocks = 132 * 64;
    let got = predict(step.flops * 1e6, step, "SASS", launch(blocks, 1024), &p, None).unwrap();
    let l1 = demand(60.0, p.shared_wavefronts_per_ns_per_sm.unwrap());
    assert!(l1 > demand(72.0, rates.issue_per_ns_per_sm));
    assert_eq!(got.bound, ProductBound::Unit(Unit::L1));
    // At most the L1's pace: iterations per scheduler x its demand.
    let per_scheduler = 1e6 / (132.0 * SCHEDULERS_PER_SM);
    assert!(got.time_ms * 1e6 >= per_scheduler * l1 * (1.0 - 1e-9));
    assert!(got.time_ms * 1e6 <= per_scheduler * l1 * 1.1, "{got:?}");
}

/// The sample profile's idle DRAM latency.
fn bare_profile_latency() -> f64 {
    sample().idle_latency_ns
}

#[test]
fn too_few_warps_are_named_as_the_bound() {
    let p = sample();
    let got = predict(simt().flops * 132.0, simt(), "PTX", launch(132, 32), &p, None).unwrap();
    assert_eq!(got.bound, ProductBound::Latency);
    assert!(got.units.iter().all(|u| u.busy < BUSY_ENOUGH));
}

#[test]
fn barriers_delay_every_iteration_by_a_shared_load() {
    let p = sample();
    let step = Step {
        barriers: 2.0,
        ..simt()
    };
    let with = predict(step.flops, step, "SASS", launch(1, 32), &p, None).unwrap();
    let without = predict(simt().flops, simt(), "SASS", launch(1, 32), &p, None).unwrap();
    let latency = p.compute.as_ref().unwrap().shared_latency_ns;
    assert!(close(with.delay_ns, 2.0 * latency));
    assert!(close((with.time_ms - without.time_ms) * 1e6, 2.0 * latency));
}

#[test]
fn work_that_would_draw_more_than_the_limit_runs_at_the_limit() {
    let p = sample();
    let power = p.power.clone().unwrap();
    // A warpgroup's wgmma FLOPs and the L2 bytes of its tiles, at full residency.
    let step = Step {
        flops: 65536.0,
        instructions: 8.0,
        wgmma_flops: 65536.0,
        l2_bytes: 512.0,
        dram_bytes: 256.0,
        ..Step::default()
    };
    let flops = 1e13;
    let blocks = 132 * 16;
    let got = predict(flops, step, "SASS", launch(blocks, 128), &p, None).unwrap();
    let joules = energy_j(flops, &step, &power);
    // 0.8 pJ a FLOP, 25 pJ an L2 byte and 50 a DRAM byte: the sample's energies.
    let pj = 0.8 + (25.0 * 512.0 + 50.0 * 256.0) / 65536.0;
    assert!(close(joules, flops * pj * 1e-12), "{joules}");
    let drawn = got.power_w.unwrap();
    assert!(drawn > power.limit_w, "{got:?}");
    assert_eq!(got.bound, ProductBound::Power);
    // Without the power limit, the same work runs at the tensor pipe's pace, faster.
    let unlimited = Profile {
        power: None,
        ..p.clone()
    };
    let free = predict(flops, step, "SASS", launch(blocks, 128), &unlimited, None).unwrap();
    assert_eq!(free.bound, ProductBound::Unit(Unit::TensorWgmma));
    assert!(close(drawn, power.base_w + joules / (loop_ms(&free) * 1e-3)));
    // The clock falls until the work draws the limit: power as the clock's cube.
    let clock = loop_ms(&free) / loop_ms(&got);
    let at_clock = (drawn - power.base_w) * clock.powi(3);
    assert!(
        close(at_clock, power.limit_w - power.base_w),
        "{clock} {at_clock}"
    );
    assert!(close(
        clock,
        clock_under_limit(drawn - power.base_w, power.limit_w - power.base_w)
    ));
    assert_eq!(clock_under_limit(100.0, 500.0), 1.0);
    assert!(close(got.clock_share, clock), "{got:?}");
    assert_eq!((free.clock_share, got.power_limit_w), (1.0, Some(700.0)));
    let text = crate::explain::render::product_line(&got);
    assert!(
        text.contains("against the board's limit of 700 W; the clock at 0."),
        "{text}"
    );
    assert!(free.not_modelled.iter().any(|l| l.starts_with("power:")));
    // A light launch stays under the limit and keeps its bound.
    let simt_step = simt();
    let light = predict(
        simt_step.flops * 1e6,
        simt_step,
        "SASS",
        launch(132, 256),
        &p,
        None,
    )
    .unwrap();
    assert!(light.power_w.unwrap() < power.limit_w, "{light:?}");
    assert_ne!(light.bound, ProductBound::Power);
}

#[test]
fn the_copy_engines_rereads_take_the_l2_at_the_shared_lines_rate() {
    let p = unpowered();
    let rates = p.compute.clone().unwrap();
    // Of 4096 L2 bytes, 1024 by the SMs' loads and 3072 by the copy engine, of which
    // 512 are the product's bytes to move once (its DRAM bytes).
    let step = Step {
        flops: 65536.0,
        instructions: 8.0,
        l2_bytes: 4096.0,
        l2_bulk_bytes: 3072.0,
        dram_bytes: 512.0,
        ..Step::default()
    };
    let got = predict(1e12, step, "SASS", launch(132, 128), &p, None).unwrap();
    let l2 = got.units.iter().find(|u| u.unit == Unit::L2).unwrap().demand_ns;
    let share = |gb_per_s: f64| gb_per_s / 132.0 / SCHEDULERS_PER_SM;
    let want = 1024.0 / share(rates.l2_read_gb_per_s)
        + 512.0 / share(rates.l2_bulk_read_gb_per_s.unwrap())
        + 2560.0 / share(rates.l2_bulk_shared_gb_per_s.unwrap());
    assert!(close(l2, want), "{l2} against {want}");
    // A profile without the copy engine's rates takes every byte at the SMs' rate.
    let mut older = p.clone();
    let c = older.compute.as_mut().unwrap();
    (c.l2_bulk_read_gb_per_s, c.l2_bulk_shared_gb_per_s) = (None, None);
    let got = predict(1e12, step, "SASS", launch(132, 128), &older, None).unwrap();
    let l2 = got.units.iter().find(|u| u.unit == Unit::L2).unwrap().demand_ns;
    assert!(close(l2, 4096.0 / share(rates.l2_read_gb_per_s)), "{l2}");
}

#[test]
fn a_profile_without_compute_rates_says_to_calibrate_again() {
    let err = predict(1e9, simt(), "SASS", launch(1, 32), &schema_5(), None).unwrap_err();
    assert!(err.contains("calibrate"), "{err}");
}

/// A site of `requests` recorded of `executions` in all, with `per` lines, sectors or
/// wavefronts per recorded request.
fn site(space: Memory, op: Direction, requests: u64, executions: u64, per: u64) -> SiteStats {
    SiteStats {
        file: "k.rs".into(),
        line: 1,
        column: 1,
        op,
        space,
        buffer: None,
        async_copy: false,
        bulk: false,
        requests,
        executions,
        executions_beside_mma: 0,
        lanes: 32 * requests,
        lane_bytes: 4,
        sectors: 4 * per * requests,
        lines: per * requests,
        transactions: 4 * per * requests,
        fetched_bytes: 128 * per * requests,
        useful_bytes: 128 * requests,
        bank_ways: requests,
        wavefronts: per * requests,
        bank_ways_max: 1,
        line_rows: 0,
        pattern: crate::explain::emulate::analyse::Pattern::Coalesced,
        pattern_share: 1.0,
    }
}

/// The step of a warp issuing 20 instructions (15 FP32) for 1000 FLOPs an iteration, in
/// a window of `sites` and `traffic` that did 1e5 FLOPs, for a launch of 1e6 FLOPs that
/// moves 4e4 bytes.
fn step_over(sites: &[SiteStats], traffic: &Traffic) -> Step {
    let issued = Issued {
        flops: 1000.0,
        instructions: 20.0,
        fp32: 15.0,
        ..Issued::default()
    };
    let window = Window {
        flops: 1e5,
        launch_flops: 1e6,
        busiest_block_flops: None,
        split: None,
        tensor_warps_per_block: None,
        sites,
        traffic,
    };
    Step::of(issued, &window, 4e4, 1e6)
}

#[test]
fn a_step_takes_every_execution_of_the_windows_sites_per_flop() {
    // Recorded: 10 of each site's 1000 requests (a long loop's first iterations).
    let sites = [
        site(Memory::Global, Direction::Load, 10, 1000, 2),
        site(Memory::Global, Direction::Store, 10, 100, 1),
        site(Memory::Shared, Direction::Load, 10, 1000, 4),
    ];
    // Of the recorded loads' 80 sectors, 20 distinct: the L1 keeps the re-reads.
    let traffic = Traffic {
        global_sectors: [80, 40],
        read_segments: [20, 10, 5],
        ..Traffic::default()
    };
    let step = step_over(&sites, &traffic);
    let per = 1000.0 / 1e5;
    assert!(close(step.load_requests, 1000.0 * per));
    assert!(close(step.load_lines, 2000.0 * per));
    assert!(close(step.store_lines, 100.0 * per));
    assert!(close(step.shared_wavefronts, 4000.0 * per));
    assert!(close(step.l2_bytes, 8000.0 * 0.25 * 32.0 * per));
    // Plain loads allocate in the L1: all their L2 bytes are its misses.
    assert!(close(step.l1_miss_bytes, step.l2_bytes));
    assert!(close(step.dram_bytes, 40.0));
    assert_eq!(step.instructions, 20.0);
}

#[test]
fn only_loads_that_allocate_in_the_l1_count_as_its_misses() {
    let copy = |lane_bytes: u64| SiteStats {
        async_copy: true,
        lane_bytes,
        ..site(Memory::Global, Direction::Load, 10, 1000, 1)
    };
    let bulk = SiteStats {
        bulk: true,
        ..site(Memory::Global, Direction::Load, 10, 1000, 1)
    };
    let traffic = Traffic {
        global_sectors: [10, 0],
        read_segments: [10, 0, 0],
        ..Traffic::default()
    };
    let step_of = |sites: &[SiteStats]| step_over(sites, &traffic);
    // A 4-byte cp.async is cp.async.ca, through the L1; a 16-byte one (.cg) and the
    // copy engine's boxes go from the L2 to shared memory around it.
    let ca = step_of(&[copy(4)]);
    assert!(ca.l1_miss_bytes > 0.0 && close(ca.l1_miss_bytes, ca.l2_bytes));
    for around in [step_of(&[copy(16)]), step_of(&[bulk])] {
        assert!(around.l2_bytes > 0.0);
        assert_eq!(around.l1_miss_bytes, 0.0);
    }
}

#[test]
fn every_box_of_the_copy_engine_is_an_l2_read_however_many_blocks_share_it() {
    let (bulk, plain) = (
        SiteStats {
            bulk: true,
            ..site(Memory::Global, Direction::Load, 10, 1000, 1)
        },
        site(Memory::Global, Direction::Load, 10, 1000, 1),
    );
    // The window's blocks read the same tiles: a quarter of the 80 recorded sectors
    // (40 of each site) are distinct across it.
    let traffic = Traffic {
        global_sectors: [80, 0],
        read_segments: [20, 10, 5],
        ..Traffic::default()
    };
    let step = step_over(&[bulk, plain], &traffic);
    let per = 1000.0 / 1e5;
    // The boxes go around the L1, so other SMs' reads of them are no hits: all 4000
    // sectors of the copy engine's 1000 requests; the plain loads' distinct quarter.
    assert!(close(step.l2_bulk_bytes, 4000.0 * 32.0 * per));
    assert!(close(step.l2_bytes, (4000.0 + 4000.0 * 0.25) * 32.0 * per));
    assert!(close(step.l1_miss_bytes, 4000.0 * 0.25 * 32.0 * per));
}

#[test]
fn the_l1s_misses_take_its_time_at_each_busy_sms_share_of_the_l2_rate() {
    let p = sample();
    let rates = p.compute.clone().unwrap();
    let sms = u64::from(p.sm_count);
    // The L1's and the L2's demands of one warp's iteration in a launch of `blocks`
    // blocks of one warp, one an SM.
    let l1_of = |l1_miss_bytes: f64, blocks: u64| {
        let step = Step {
            l2_bytes: 512.0,
            l1_miss_bytes,
            ..simt()
        };
        let got = predict(
            step.flops * blocks as f64,
            step,
            "SASS",
            launch(blocks, 32),
            &p,
            None,
        )
        .unwrap();
        let demand_of = |unit| got.units.iter().find(|u| u.unit == unit).unwrap().demand_ns;
        (demand_of(Unit::L1), demand_of(Unit::L2))
    };
    // Every SM busy: the L1 takes its misses at each SM's share of the L2's read rate,
    // on one scheduler, as the L2 serves them.
    let (bypassed, _) = l1_of(0.0, sms);
    let (missed, l2) = l1_of(512.0, sms);
    let share = rates.l2_read_gb_per_s / f64::from(p.sm_count) / SCHEDULERS_PER_SM;
    assert!(close(missed - bypassed, 512.0 / share));
    assert!(close(l2, 512.0 / share));
    // One busy SM: the L2 fills its misses as fast as one SM's port takes (the most an
    // SM was measured to take: the copy engine's shared lines'), not at the share it
    // has when every SM misses.
    let (alone_bypassed, _) = l1_of(0.0, 1);
    let (alone, alone_l2) = l1_of(512.0, 1);
    let port = rates.l2_bulk_shared_gb_per_s.unwrap() / f64::from(p.sm_count) / SCHEDULERS_PER_SM;
    assert!(port > share);
    assert!(close(alone - alone_bypassed, 512.0 / port));
    assert!(close(alone_l2, 512.0 / port));
    assert!(alone < missed);
}

#[test]
fn one_line_loads_take_the_l1_at_the_request_rate() {
    let p = sample();
    let rates = p.compute.clone().unwrap();
    let lines = p.load_lines_per_ns_per_sm.unwrap();
    assert!(rates.l1_requests_per_ns_per_sm < lines);
    let at = |requests: f64, lines_each: f64| {
        let step = Step {
            instructions: 1.0,
            load_requests: requests,
            load_lines: requests * lines_each,
            ..simt()
        };
        let got = predict(step.flops, step, "SASS", launch(1, 32), &p, None).unwrap();
        got.units.iter().find(|u| u.unit == Unit::L1).unwrap().demand_ns
    };
    // One line each: the request rate; 32 each: the line rate.
    assert!(close(
        at(8.0, 1.0),
        demand(8.0, rates.l1_requests_per_ns_per_sm)
            + demand(4.0, p.shared_wavefronts_per_ns_per_sm.unwrap())
    ));
    assert!(close(
        at(1.0, 32.0),
        demand(32.0, lines) + demand(4.0, p.shared_wavefronts_per_ns_per_sm.unwrap())
    ));
}

#[test]
fn a_bound_is_one_word_in_json() {
    let json = |b: ProductBound| serde_json::to_string(&b).unwrap();
    assert_eq!(json(ProductBound::Unit(Unit::IssueSlots)), "\"issue-slots\"");
    assert_eq!(json(ProductBound::Latency), "\"latency\"");
    assert_eq!(json(ProductBound::Power), "\"power\"");
}

/// A stream-k launch's partial tiles and flags (its scratch) are the fix-up's chain's,
/// not the loop's: with a split they leave the step; without one they stay in it.
#[test]
fn a_splits_scratch_traffic_leaves_the_loop_to_the_fixup() {
    use crate::explain::emulate::SCRATCH;
    use kernels::hgemm::stream_k::{Deal, HYBRID};
    let on = |buffer: &str, op: Direction| SiteStats {
        buffer: Some(buffer.into()),
        ..site(Memory::Global, op, 10, 100, 4)
    };
    let sites = [
        on("a", Direction::Load),
        on(SCRATCH, Direction::Load),
        on(SCRATCH, Direction::Store),
        on("c", Direction::Store),
    ];
    let traffic = Traffic {
        global_sectors: [80, 80],
        read_segments: [80, 40, 20],
        ..Traffic::default()
    };
    let issued = Issued {
        flops: 1000.0,
        ..Issued::default()
    };
    let step = |split| {
        let window = Window {
            flops: 1e5,
            launch_flops: 1e6,
            busiest_block_flops: None,
            split,
            tensor_warps_per_block: None,
            sites: &sites,
            traffic: &traffic,
        };
        Step::of(issued, &window, 4e4, 1e6)
    };
    let split = fixup::Split {
        deal: Deal::new(1, 8, 4, HYBRID),
        partial_bytes: 128 * 1024,
    };
    let (alone, with) = (step(None), step(Some(split)));
    assert!(
        close(alone.load_lines, 2.0 * with.load_lines),
        "{alone:?} {with:?}"
    );
    assert!(
        close(alone.store_lines, 2.0 * with.store_lines),
        "{alone:?} {with:?}"
    );
    assert!(close(alone.l2_bytes, 2.0 * with.l2_bytes), "{alone:?} {with:?}");
}
