//! The DRAM bytes a window moves: segments, sectors, partial writes and the L2 sharing
//! of blocks resident together.

use super::*;

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
    let p = predict(8 << 20, &t, whole_waves(100), &calibrated(), light()).unwrap();
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
        cluster: 1,
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
    // from binding here; only the launch's cost is left out (the sample has none).
    assert_eq!(p.not_modelled.len(), 1, "{:?}", p.not_modelled);
    assert!(p.not_modelled[0].contains("no launch_ns"));
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
        model: crate::explain::emulate::model::Model::Sm70,
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
