//! Scattered requests (a segment per lane) at the pitch sweep's rates, and spread waves.

use super::*;

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
        cluster: 1,
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
