use kernels::gpu::emu::{Access, Op, Space};

use super::super::emulate::traffic::tests::global;
use super::super::emulate::traffic::{Scattered, traffic};
use super::super::residency::Limit;
use super::*;
use crate::profile::tests::{sample, schema_2};

mod dram;
mod on_chip;
mod scattered;
mod time;

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
        cluster: 1,
    }
}

/// The sample profile with a launch's fixed cost and the L2 as a copy's memory
/// (schema 8).
fn calibrated() -> Profile {
    Profile {
        launch_ns: Some(4000.0),
        l2_resident: Some(crate::profile::l2::tests::sample()),
        ..sample()
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
