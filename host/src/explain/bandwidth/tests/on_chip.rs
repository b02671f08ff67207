//! The L1's lines and wavefronts, and residency from registers and shared memory.

use super::*;

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
            "L2 residency: the launch's 8.0 MiB fit in the L2, but the profile (schema 2) has no L2-resident rates: timed at the DRAM's; recalibrate",
            "the launch's fixed cost: the profile (schema 2) has no launch_ns; recalibrate",
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
        cluster: 1,
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
