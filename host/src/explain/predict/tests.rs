use kernels::gpu::emu::{Access, Op, Space};

use super::super::residency::Limit;
use super::super::traffic::tests::global;
use super::super::traffic::{Scattered, traffic};
use super::*;
use crate::profile::tests::{sample, schema_2};

/// A kernel light on registers and with no shared memory: threads limit residency.
fn light() -> std::result::Result<Resources, String> {
    Ok(Resources {
        registers: 16,
        shared_bytes: 0,
    })
}

/// `stride` floats apart, one per lane, 32 lanes per warp, one store per lane.
fn strided(stride: usize, warps: usize) -> Vec<Access> {
    let mut log = Vec::new();
    for i in 0..warps * 32 {
        log.push(global(i, Op::Load, (1 << 30) + 4 * i * stride, 4));
        log.push(global(i, Op::Store, (1 << 34) + 4 * i, 4));
    }
    log
}

/// A launch of `waves` whole waves of 256-thread blocks on the sample profile.
fn whole_waves(waves: u64) -> LaunchSize {
    LaunchSize {
        blocks: waves * 8 * 132,
        threads_per_block: 256,
        dynamic_shared_bytes: 0,
    }
}

/// The sample profile with a latency that rises with load: L0 = 700, Lq = 50 ns.
fn queued() -> Profile {
    Profile {
        loaded_latency_ns: 700.0,
        queueing_latency_ns: 50.0,
        ..sample()
    }
}

#[test]
fn a_coalesced_copy_moves_what_it_asks_for() {
    let t = traffic(&strided(1, 8));
    assert_eq!((t.useful_read, t.useful_write), (1024, 1024));
    assert_eq!(t.read_segments, [32, 16, 8]);
    assert_eq!(t.write_sectors, 32);
    assert_eq!(t.in_flight_per_thread, 4.0);
    // 8 warps, each one load and one store request of 4 sectors; no shared memory.
    assert_eq!((t.global_requests, t.global_sectors), ([8, 8], [32, 32]));
    assert_eq!((t.shared_requests, t.shared_wavefronts), ([0, 0], [0, 0]));
    let p = predict(8 << 20, &t, whole_waves(100), &sample(), light()).unwrap();
    assert!(p.not_modelled.is_empty(), "{:?}", p.not_modelled);
}

#[test]
fn wide_strides_fetch_a_whole_segment_per_lane() {
    // 16 floats apart: every lane in its own 64-byte segment.
    let t = traffic(&strided(16, 4));
    assert_eq!(t.read_segments[1], 128);
    let shape = LaunchSize {
        blocks: 1 << 20,
        threads_per_block: 256,
        dynamic_shared_bytes: 0,
    };
    let p = predict(8 << 20, &t, shape, &sample(), light()).unwrap();
    // 16x the useful reads, 1x the writes: (64 + 4) bytes per 8 useful.
    assert!((p.dram_read_bytes - 16.0 * (4 << 20) as f64).abs() < 1.0);
    assert_eq!(p.bound, Bound::DramBytes);
    assert!(
        (p.pct_of_copy - 100.0 * 8.0 / 68.0).abs() < 1e-9,
        "{}",
        p.pct_of_copy
    );
    // 16 lines per load request (two lanes a line): counted at the L1's rate, far
    // from binding here.
    assert!(p.not_modelled.is_empty(), "{:?}", p.not_modelled);
    let lines = p.l1_parts.iter().find(|b| b.bound == Bound::LoadLines).unwrap();
    // 4 requests of 16 lines per 1024 window bytes, 8 MiB of them, on 132 SMs at 2 per ns.
    let want = 64.0 * 8192.0 / (132.0 * 2.0) / 1e6;
    assert!((lines.time_ms - want).abs() < 1e-12, "{lines:?}");
    // A schema-2 profile has no rate for them: named, not counted.
    let p = predict(8 << 20, &t, shape, &schema_2(), light()).unwrap();
    assert_eq!(p.bounds.len(), 1);
    assert!(p.l1_parts.is_empty());
    assert_eq!(
        p.not_modelled[..2],
        [
            "4 scattered requests, a DRAM segment per lane (not calibrated: the profile has no pitch_sweep; recalibrate)",
            "32.0 sectors per global load request, 8x the bytes used (not calibrated: the profile has no load_lines_per_ns_per_sm; recalibrate)"
        ]
    );
}

/// One warp per request, 32 lanes `pitch` bytes apart, 16 bytes each: a load, then
/// (with `update`) a store to the same addresses, else a coalesced 4-byte store.
fn columns(pitch: usize, warps: usize, update: bool) -> Vec<Access> {
    let mut log = Vec::new();
    for w in 0..warps {
        for lane in 0..32 {
            let i = w * 32 + lane;
            // Warp w reads column w of a view of 32 rows.
            let at = (1 << 30) + lane * pitch + 16 * w;
            log.push(global(i, Op::Load, at, 16));
            log.push(if update {
                global(i, Op::Store, at, 16)
            } else {
                global(i, Op::Store, (1 << 34) + 4 * i, 4)
            });
        }
    }
    log
}

#[test]
fn scattered_requests_are_told_by_their_lanes_segments() {
    // 4 floats apart share segments: not scattered.
    assert!(traffic(&strided(4, 8)).scattered.is_empty());
    // 64 floats (256 B) apart: every load a gather, a 64-byte segment per lane; the
    // coalesced stores are not scattered.
    let t = traffic(&strided(64, 8));
    assert_eq!(
        t.scattered,
        [Scattered {
            kind: RequestKind::Gather,
            pitch_bytes: 256,
            requests: 8,
            lanes: 8 * 32,
            dram_bytes: 8 * 32 * 64
        }]
    );
    assert_eq!(t.scattered_pages, 1);
    // Four warps down four adjacent columns 64 KiB apart: four gathers share each
    // segment, so the group's DRAM bytes are 64 per lane, once.
    let t = traffic(&columns(64 << 10, 4, false));
    assert_eq!((t.scattered[0].requests, t.scattered[0].dram_bytes), (4, 32 * 64));
    // A store to what the same lanes loaded: one update with its load, its
    // segments read and its sectors (two columns a sector) written.
    let t = traffic(&columns(64 << 10, 4, true));
    assert_eq!(
        t.scattered,
        [Scattered {
            kind: RequestKind::Update,
            pitch_bytes: 64 << 10,
            requests: 4,
            lanes: 4 * 32,
            dram_bytes: 32 * 64 + 2 * 32 * 32
        }]
    );
}

#[test]
fn scattered_requests_take_the_pitch_sweeps_rate() {
    use crate::profile::PitchPoint;
    // The sweep at 256 B: 64 DRAM bytes a lane in 20 / 500 - 4 / 3000 ns, 1655 GB/s.
    let point = PitchPoint {
        pitch_bytes: 256,
        span_bytes: 1 << 30,
        wave_pages: 33,
        segment_bytes_per_lane: 64.0,
        sector_bytes_per_lane: 32.0,
        read_gb_per_s: 500.0,
        write_gb_per_s: 200.0,
        update_gb_per_s: 300.0,
        iterations: 1,
    };
    let profile = Profile {
        pitch_sweep: Some(vec![point.clone()]),
        ..sample()
    };
    let rate = 64.0 / (20.0 / 500.0 - 4.0 / 3000.0);
    let t = traffic(&strided(64, 8));
    let p = predict(8 << 20, &t, whole_waves(16), &profile, light()).unwrap();
    assert_eq!(p.bound, Bound::Scattered);
    // 4 MiB read, 64 B of DRAM per 4: 64 MiB at the sweep's rate; the 4 MiB written
    // at the ceiling.
    let want = (64.0 * (1 << 20) as f64 / rate + 4.0 * (1 << 20) as f64 / 3000.0) / 1e6;
    assert!((p.time_ms - want).abs() < 1e-9, "{} {want}", p.time_ms);
    assert_eq!(p.scattered_parts.len(), 2);
    assert_eq!(p.scattered_parts[1].kind, None);
    // More threads than the 1 Mi floats read: fewer than one iteration a thread.
    assert!(p.scattered_parts[0].iterations < 1.0);
    // A grid of half as many threads as floats runs two iterations each, and takes
    // the sweep's rate at two.
    let twice = Profile {
        pitch_sweep: Some(vec![
            point.clone(),
            PitchPoint {
                iterations: 2,
                read_gb_per_s: 250.0,
                ..point.clone()
            },
        ]),
        ..sample()
    };
    let half = LaunchSize {
        blocks: (1 << 20) / 2 / 256,
        threads_per_block: 256,
        dynamic_shared_bytes: 0,
    };
    let p = predict(8 << 20, &t, half, &twice, light()).unwrap();
    assert!((p.scattered_parts[0].iterations - 2.0).abs() < 1e-12);
    let slower = 64.0 / (20.0 / 250.0 - 4.0 / 3000.0);
    assert!((p.scattered_parts[0].dram_gb_per_s - slower).abs() < 1e-9);
    // Without a sweep it is named, not timed; the DRAM bytes set the time again.
    let p = predict(
        8 << 20,
        &t,
        whole_waves(16),
        &crate::profile::tests::schema_3(),
        light(),
    )
    .unwrap();
    assert_eq!(p.bound, Bound::DramBytes);
    assert!(p.scattered_parts.is_empty());
    assert!(
        p.not_modelled[0].starts_with("8 scattered requests"),
        "{:?}",
        p.not_modelled
    );
}

#[test]
fn a_spread_wave_keeps_its_share_of_the_ceiling() {
    use crate::profile::{SpreadPoint, Stream};
    let at = |write_spread, gb_per_s| SpreadPoint {
        stream: Stream::Writes,
        apart: 1,
        read_spread: 1.0,
        write_spread,
        gb_per_s,
    };
    let profile = Profile {
        spread_sweep: Some(vec![at(1.0, 3000.0), at(64.0, 2000.0)]),
        ..sample()
    };
    // A coalesced copy with enough in flight to reach the ceiling.
    let mut t = traffic(&strided(1, 8));
    t.in_flight_per_thread = 64.0;
    let near = predict(8 << 20, &t, whole_waves(100), &profile, light()).unwrap();
    assert_eq!((near.spread, near.spread_share), (None, 1.0));
    // Its first wave's writes spread 64x: two thirds of the ceiling.
    t.wave_spread = Some(Spread {
        read: 1.0,
        write: 64.0,
    });
    let far = predict(8 << 20, &t, whole_waves(100), &profile, light()).unwrap();
    assert!((far.spread_share - 2.0 / 3.0).abs() < 1e-12);
    let dram = |p: &Prediction| p.bounds[0].time_ms;
    assert!(
        (dram(&far) / dram(&near) - 1.5).abs() < 1e-9,
        "{:?} {:?}",
        far.bounds,
        near.bounds
    );
    // The DRAM's time now sets it; % of copy stays over the profile's ceiling.
    assert_eq!(far.bound, Bound::DramBytes);
    assert!(
        (far.pct_of_copy - 100.0 * 2.0 / 3.0).abs() < 1e-9,
        "{}",
        far.pct_of_copy
    );
    // The DRAM bound sets this time, so a lower ceiling matters; were another bound
    // 1.6x its time, a share of two thirds could not change the prediction.
    assert!(near.dram_ceiling_matters(2.0 / 3.0));
    let mut l1_bound = near.clone();
    l1_bound.bounds.push(BoundTime {
        bound: Bound::L1,
        time_ms: 1.6 * near.bounds[0].time_ms,
    });
    assert!(!l1_bound.dram_ceiling_matters(2.0 / 3.0));
    assert!(l1_bound.dram_ceiling_matters(0.5));
    // Without a spread sweep the pages count for nothing.
    let none = predict(
        8 << 20,
        &t,
        whole_waves(100),
        &crate::profile::tests::schema_4(),
        light(),
    )
    .unwrap();
    assert_eq!((none.spread, none.spread_share), (None, 1.0));
    // With few bytes in flight (2 B a thread: 1.2 TB/s read and written at 900 ns)
    // the rate is under the shortened ceiling: no change.
    t.in_flight_per_thread = 2.0;
    let (a, b) = (
        predict(8 << 20, &t, whole_waves(100), &profile, light()).unwrap(),
        predict(
            8 << 20,
            &Traffic {
                wave_spread: None,
                ..t.clone()
            },
            whole_waves(100),
            &profile,
            light(),
        )
        .unwrap(),
    );
    assert!(
        (a.time_ms - b.time_ms).abs() < 1e-12,
        "{} {}",
        a.time_ms,
        b.time_ms
    );
}

#[test]
fn segments_used_in_part_are_told_apart() {
    // Contiguous floats: every 64-byte segment read and 32-byte sector written whole.
    let t = traffic(&strided(1, 8));
    assert_eq!((t.partial_read_segments, t.partial_write_sectors), ([0, 0, 0], 0));
    assert!(!t.shares_segments(64));
    // Every other float: each 32-, 64- and 128-byte segment read in part (its other
    // floats may be another block's); the writes stay whole.
    let t = traffic(&strided(2, 8));
    assert_eq!(t.partial_read_segments, t.read_segments);
    assert_eq!(t.partial_write_sectors, 0);
    assert!(t.shares_segments(64));
    // A 16-byte store into a 32-byte sector: written in part.
    let mut log = strided(1, 1);
    log.retain(|a| a.op == Op::Load);
    log.push(Access {
        op: Op::Store,
        addr: 1 << 34,
        bytes: 16,
        ..log[0]
    });
    let t = traffic(&log);
    assert_eq!((t.write_sectors, t.partial_write_sectors), (1, 1));
}

#[test]
fn a_partial_write_to_a_line_no_load_reads_fills_one_sector() {
    // Coalesced stores write whole sectors: nothing to fill.
    assert_eq!(traffic(&strided(1, 8)).fill_sectors, 0);
    // A column store, 4 bytes a lane 8 KiB apart, as naive-write's: each lane's line
    // is first met by this request, in one sector, in part: 32 fills.
    let column: Vec<Access> = (0..32)
        .map(|i| global(i, Op::Store, (1 << 34) + 8192 * i, 4))
        .collect();
    assert_eq!(traffic(&column).fill_sectors, 32);
    // The same lines' other sectors, written in part by a later request, fill nothing:
    // the L2 holds the line.
    let mut twice = column.clone();
    twice.extend(column.iter().map(|a| Access {
        addr: a.addr + 32,
        occurrence: 1,
        ..*a
    }));
    assert_eq!(traffic(&twice).fill_sectors, 32);
    // Two lanes in two sectors of one line, in the first request: two fills.
    let pair = vec![
        global(0, Op::Store, 1 << 34, 4),
        global(1, Op::Store, (1 << 34) + 64, 4),
    ];
    assert_eq!(traffic(&pair).fill_sectors, 2);
    // Lines a load of the window reads (an update, as saxpy's y) fill nothing.
    let mut updated: Vec<Access> = column.iter().map(|a| Access { op: Op::Load, ..*a }).collect();
    updated.extend(column.iter().copied());
    assert_eq!(traffic(&updated).fill_sectors, 0);
    // Each fill is a 32-byte read and a 32-byte write more: 32 lines' 128 useful
    // bytes become 32 x 32 read and 32 x 32 + 32 x 32 written.
    let p = predict(128, &traffic(&column), whole_waves(1), &sample(), light()).unwrap();
    assert_eq!(
        (p.dram_read_bytes, p.dram_write_bytes, p.fill_bytes),
        (1024.0, 2048.0, 1024.0)
    );
    // With no loads to wait for, the DRAM bytes flow at the ceiling.
    assert!(p.time_ms.is_finite() && p.in_flight_gb_per_s == sample().copy_gb_per_s);
}

#[test]
fn one_float_per_thread_is_bound_by_bytes_in_flight() {
    let t = traffic(&strided(1, 8));
    let profile = sample();
    let p = predict(8 << 20, &t, whole_waves(100), &profile, light()).unwrap();
    assert_eq!(p.resident_threads_per_sm, 2048);
    assert_eq!(p.waves, 100.0);
    // 2048 threads x 4 bytes on 132 SMs over 900 ns, doubled for the writes.
    let rate = 2048.0 * 4.0 * 132.0 / 900.0 * 2.0;
    assert!((p.in_flight_gb_per_s - rate).abs() < 1e-9);
    assert!((p.latency_ns - 900.0).abs() < 1e-9);
    assert_eq!(p.bound, Bound::BytesInFlight);
    assert!((p.pct_of_copy - 100.0 * rate / 3000.0).abs() < 1e-9);
    // Four times the bytes in flight reach the ceiling.
    let mut more = t.clone();
    more.in_flight_per_thread = 16.0;
    assert_eq!(
        predict(8 << 20, &more, whole_waves(100), &profile, light())
            .unwrap()
            .bound,
        Bound::DramBytes
    );
}

#[test]
fn latency_rises_with_load_so_the_rate_approaches_the_ceiling() {
    let q = queued();
    let mut last = 0.0;
    for f in [1e5, 1e6, 2e6, 4e6, 1e7, 1e8, 1e9] {
        let rate = in_flight_rate(f, q.copy_gb_per_s, &q);
        // Little's law at the latency of that load.
        let rho = rate / 3000.0;
        assert!((rate * q.latency_at(rho) - f).abs() < 1e-6 * f, "{f}: {rate}");
        assert!(rate > last && rate < 3000.0, "{f}: {rate}");
        last = rate;
    }
    // With no queueing: the constant latency's hard knee, min(C, F / L0).
    let s = sample();
    let c = s.copy_gb_per_s;
    assert!((in_flight_rate(1e6, c, &s) - 1e6 / 900.0).abs() < 1e-9);
    assert_eq!(in_flight_rate(1e7, c, &s), 3000.0);
    assert_eq!(in_flight_rate(0.0, c, &s), 0.0);
    // The bound turns when the queue's delay passes L0: rho = 700 / 750.
    let turn = 700.0 / 750.0;
    assert_eq!(bound_at(turn - 1e-9, &q), Bound::BytesInFlight);
    assert_eq!(bound_at(turn + 1e-9, &q), Bound::DramBytes);
    assert_eq!(bound_at(0.99, &s), Bound::BytesInFlight);
    assert_eq!(bound_at(1.0, &s), Bound::DramBytes);
}

#[test]
fn the_calibration_copy_is_predicted_at_its_measured_rate() {
    // The H200's fit passes through its inflight f32-1 point (8192 read bytes in
    // flight per SM, 2685.7 GB/s): one float per thread, 2048 threads, is that copy.
    let h200 = Profile {
        sm_count: 132,
        copy_gb_per_s: 4220.187848199257,
        loaded_latency_ns: 702.2257326400044,
        queueing_latency_ns: 58.875801597166635,
        ..sample()
    };
    let t = traffic(&strided(1, 8));
    let p = predict(8 << 20, &t, whole_waves(100), &h200, light()).unwrap();
    assert!((p.in_flight_gb_per_s - 2685.672326582515).abs() < 1e-6, "{p:?}");
    assert!((p.pct_of_copy - 63.639).abs() < 1e-3, "{p:?}");
    assert!((p.latency_ns - 805.269).abs() < 1e-3, "{p:?}");
    assert_eq!(p.bound, Bound::BytesInFlight);
}

#[test]
fn the_last_partial_wave_moves_its_share_slower() {
    let t = traffic(&strided(1, 8));
    let q = queued();
    // One and a half waves: 2/3 of the bytes at 2048 threads per SM, 1/3 at 1024.
    let shape = LaunchSize {
        blocks: 3 * 4 * 132,
        threads_per_block: 256,
        dynamic_shared_bytes: 0,
    };
    let p = predict(8 << 20, &t, shape, &q, light()).unwrap();
    assert_eq!(p.waves, 1.5);
    let rate = |threads: f64| in_flight_rate(threads * 4.0 * 132.0 * 2.0, q.copy_gb_per_s, &q);
    // 8 MiB useful = 4 MiB read + 4 MiB written, each byte once in DRAM.
    let dram = (8 << 20) as f64;
    let time = dram * 2.0 / 3.0 / rate(2048.0) + dram / 3.0 / rate(1024.0);
    assert!((p.time_ms - time / 1e6).abs() < 1e-12, "{p:?}");
    // Less than one wave: the blocks divided among the SMs, 100 threads each here.
    let small = LaunchSize {
        blocks: 66,
        threads_per_block: 200,
        dynamic_shared_bytes: 0,
    };
    let p = predict(8 << 20, &t, small, &q, light()).unwrap();
    assert!((p.in_flight_gb_per_s - rate(100.0)).abs() < 1e-9, "{p:?}");
    assert_eq!(p.resident_threads_per_sm, 200);
    assert_eq!(p.waves, 66.0 / (10.0 * 132.0));
}

/// One warp reading a 32 x 32 tile's column: 32 lanes 128 bytes apart, one bank.
fn column_read(log: &mut Vec<Access>) {
    let site = std::panic::Location::caller();
    log.extend((0..32).map(|lane| Access {
        block: 0,
        thread: lane,
        site,
        occurrence: 1,
        op: Op::Load,
        space: Space::Shared,
        addr: 128 * lane,
        array: 0,
        array_name: "",
        epoch: 0,
        bytes: 4,
        async_copy: false,
        bulk: false,
        copied_from: None,
    }));
}

#[test]
fn bank_conflicts_are_named_not_counted() {
    let mut log = strided(1, 1);
    column_read(&mut log);
    let t = traffic(&log);
    assert_eq!((t.shared_requests, t.shared_wavefronts), ([1, 0], [32, 0]));
    let p = predict(8 << 20, &t, whole_waves(1), &schema_2(), light()).unwrap();
    assert_eq!(
        p.not_modelled,
        [
            "shared-memory bank conflicts, 32.0 wavefronts per shared load (not calibrated: the profile has no shared_wavefronts_per_ns_per_sm; recalibrate)",
            "residency counts threads only: the profile (schema 2) has no register or shared-memory limits; recalibrate"
        ]
    );
}

#[test]
fn the_l1_serves_lines_and_wavefronts_one_after_another() {
    // One warp: a coalesced load and store (1 line each) and a 32-way conflicted
    // shared load (32 wavefronts), per 256 useful bytes.
    let mut log = strided(1, 1);
    column_read(&mut log);
    let t = traffic(&log);
    assert_eq!((t.global_lines, t.shared_wavefronts), ([1, 1], [32, 0]));
    let slow_banks = Profile {
        shared_wavefronts_per_ns_per_sm: Some(0.05),
        ..sample()
    };
    let p = predict(8 << 20, &t, whole_waves(100), &slow_banks, light()).unwrap();
    assert_eq!(p.bound, Bound::L1);
    // Per 256 bytes, 8 MiB of them (32768) over 132 SMs: 1 load line at 2 per ns,
    // 1 store line at 0.5 per ns, 32 wavefronts at 0.05 per ns; the times add.
    let part = |n: f64, rate: f64| n * 32768.0 / (132.0 * rate) / 1e6;
    let parts = [part(1.0, 2.0), part(1.0, 0.5), part(32.0, 0.05)];
    let got: Vec<(Bound, f64)> = p.l1_parts.iter().map(|b| (b.bound, b.time_ms)).collect();
    assert_eq!(
        got,
        [
            (Bound::LoadLines, parts[0]),
            (Bound::StoreLines, parts[1]),
            (Bound::SharedWavefronts, parts[2])
        ]
    );
    let want: f64 = parts.iter().sum();
    assert!((p.time_ms - want).abs() < 1e-12, "{p:?}");
    assert!((p.gb_per_s - (8 << 20) as f64 / (want * 1e6)).abs() < 1e-9);
    // Two bounds: DRAM (or bytes in flight) and the L1; the larger is the time.
    assert_eq!(p.bounds.len(), 2);
    assert_eq!(
        p.bounds[1],
        BoundTime {
            bound: Bound::L1,
            time_ms: want
        }
    );
    assert!(p.bounds[0].time_ms < want);
    // At a fast rate the DRAM sets it again.
    let fast_banks = Profile {
        shared_wavefronts_per_ns_per_sm: Some(100.0),
        ..sample()
    };
    let p = predict(8 << 20, &t, whole_waves(100), &fast_banks, light()).unwrap();
    assert_eq!(p.bound, Bound::BytesInFlight);
    // Two parts, each under the DRAM's time, whose sum is over it: the L1.
    let dram = p.bounds[0].time_ms;
    let halves = Profile {
        load_lines_per_ns_per_sm: Some(32768.0 / (132.0 * 0.6 * dram * 1e6)),
        store_lines_per_ns_per_sm: Some(32768.0 / (132.0 * 0.6 * dram * 1e6)),
        ..fast_banks
    };
    let p = predict(8 << 20, &t, whole_waves(100), &halves, light()).unwrap();
    assert!(p.l1_parts.iter().all(|b| b.time_ms < dram), "{p:?}");
    assert_eq!(p.bound, Bound::L1);
}

#[test]
fn registers_and_shared_memory_limit_the_blocks_an_sm_holds() {
    let p = sample();
    let launch = |threads_per_block, dynamic_shared_bytes| LaunchSize {
        blocks: 1 << 20,
        threads_per_block,
        dynamic_shared_bytes,
    };
    let uses = |registers, shared_bytes| {
        Some(Resources {
            registers,
            shared_bytes,
        })
    };
    let at = |l, r| blocks_per_sm(l, &p, r);
    // 42 registers: 1344 per warp, allocated 1536; 65536 / 1536 = 42 warps, 5 blocks of 8.
    assert_eq!(
        at(launch(256, 0), uses(42, 16640)),
        Residency {
            blocks: 5,
            limit: Limit::Registers
        }
    );
    // 32 registers: 1024 per warp, 64 warps: 8 blocks, as many as the threads allow.
    assert_eq!(at(launch(256, 0), uses(32, 0)).limit, Limit::Threads);
    assert_eq!(at(launch(256, 0), uses(32, 0)).blocks, 8);
    // 255 registers: 8160 per warp, allocated 8192: 8 warps, one 256-thread block.
    assert_eq!(at(launch(256, 0), uses(255, 0)).blocks, 1);
    // Shared memory: 48 KiB static + 1 KiB reserved per block: 233472 / 50176 = 4.
    assert_eq!(
        at(launch(128, 0), uses(16, 48 << 10)),
        Residency {
            blocks: 4,
            limit: Limit::SharedMemory
        }
    );
    // Dynamic shared bytes count too, with or without ptxas.
    assert_eq!(at(launch(128, 100 << 10), None).blocks, 2);
    // 32-thread blocks: the block limit (32), not the threads (64).
    assert_eq!(
        at(launch(32, 0), uses(16, 0)),
        Residency {
            blocks: 32,
            limit: Limit::Blocks
        }
    );
    // A schema-2 profile counts threads and the 32-block limit only.
    let old = schema_2();
    assert_eq!(blocks_per_sm(launch(256, 0), &old, uses(255, 0)).blocks, 8);
    // The resident threads follow.
    assert_eq!(resident_threads(launch(256, 0), &p, uses(42, 0)), 5 * 256);
    // ... and so do the waves and the bytes in flight of a prediction.
    let t = traffic(&strided(1, 8));
    let pr = predict(
        8 << 20,
        &t,
        launch(256, 0),
        &p,
        Ok(Resources {
            registers: 42,
            shared_bytes: 0,
        }),
    )
    .unwrap();
    assert_eq!(pr.resident_threads_per_sm, 1280);
    assert_eq!(pr.waves, (1u64 << 20) as f64 / (5.0 * 132.0));
    assert_eq!(pr.in_flight_bytes_per_sm, 1280.0 * 4.0);
}

#[test]
fn blocks_resident_together_share_their_segments_in_l2() {
    use crate::experiments::{Selection, named};
    // saxpy/f32x4-strided: a thread's float4 shares its 64-byte segment with the
    // threads 4096, 8192 and 12288 further on (16, 32 and 48 blocks away, in the
    // same wave). The evenly spaced sample sees a quarter of each segment used;
    // a wave of consecutive blocks sees the segments whole but at its ends.
    let profile = Profile::shipped("H100").unwrap().unwrap();
    let opts = crate::explain::Options {
        size: None,
        shape: None,
        model: crate::explain::model::Model::Sm70,
        blocks: 8,
        profile: Some(profile),
        memory_limit: crate::explain::EMULATION_BYTES,
    };
    let exp = named("saxpy").unwrap();
    let report = crate::explain::explain(&[Selection::all(exp)], &opts, |_| {}).unwrap();
    let k = |v: &str| report.kernels.iter().find(|k| k.variant == v).unwrap();
    let strided = k("f32x4-strided");
    assert_eq!(
        strided.dram_window,
        Some(crate::explain::DramWindow {
            first: 0,
            blocks: 8 * 132
        })
    );
    let p = strided.prediction.as_ref().unwrap();
    // 2 x 256 MiB read (x and y) and 256 MiB written, as Nsight Compute counts them
    // (512.3 and 240.7 MiB on the H100): within the wave's edge, 48 of 1056 blocks.
    let mib = |b: f64| b / f64::from(1 << 20);
    assert!(
        (mib(p.dram_read_bytes) / 512.0 - 1.0).abs() < 48.0 / 1056.0,
        "{}",
        mib(p.dram_read_bytes)
    );
    assert_eq!(mib(p.dram_write_bytes), 256.0);
    // The coalesced walk uses every segment it touches whole: the sample stands.
    assert_eq!(k("f32x4").dram_window, None);
}

#[test]
fn the_shipped_profiles_predict_their_calibration_copies_without_a_gpu() {
    use crate::experiments::{Selection, named};
    // The inflight copies the latency was fitted to come back at their measured
    // rates (the fit passes through them; the last partial wave costs < 0.5%).
    for (gpu, f32_1, f32_2) in [("H100", 2412.63, 2824.52), ("h200", 2746.16, 3807.47)] {
        let profile = Profile::shipped(gpu).unwrap().unwrap();
        let copy = profile.copy_gb_per_s;
        let opts = crate::explain::Options {
            size: None,
            shape: None,
            model: crate::explain::model::Model::Sm70,
            blocks: 8,
            profile: Some(profile),
            memory_limit: crate::explain::EMULATION_BYTES,
        };
        let exp = named("inflight").unwrap();
        let report = crate::explain::explain(&[Selection::all(exp)], &opts, |_| {}).unwrap();
        let pct = |variant: &str| {
            let k = report.kernels.iter().find(|k| k.variant == variant).unwrap();
            k.prediction.as_ref().unwrap().pct_of_copy
        };
        for (variant, rate) in [("f32-1", f32_1), ("f32-2", f32_2)] {
            let want = 100.0 * rate / copy;
            assert!(
                (pct(variant) / want - 1.0).abs() < 0.005,
                "{gpu} {variant}: {} vs {want}",
                pct(variant)
            );
        }
    }
}
