//! The on-chip rates (kernels/src/calibrate/throughput.rs): lines of global loads and stores,
//! and shared-memory wavefronts, per ns per SM.

use kernels::entry;
use kernels::handle::KernelInfo;

use super::{Effort, per_sm_rate};
use crate::device::Gpu;
use crate::error::Result;
use crate::launch::{AsGlobal, Launch};
use crate::timing::time_launches;
use crate::units::format_bytes;

/// The on-chip microbenchmarks (kernels/src/calibrate/throughput.rs): kernel, and the units
/// (lines or wavefronts) one warp handles per round.
pub static ON_CHIP: [(&KernelInfo, u64); 3] = [
    (entry::lines_load.info(), 32),
    (entry::lines_store.info(), 32),
    (entry::bank_conflicts.info(), 32),
];

/// Units each of [`ON_CHIP`]'s kernels handles in a launch of `blocks` blocks of
/// `rounds` rounds: 32 per warp per round; `bank_conflicts` also fills its tile (32
/// conflict-free store requests per block, a wavefront each).
pub fn on_chip_units(kernel: &KernelInfo, blocks: u32, rounds: usize) -> u64 {
    let warps = u64::from(blocks) * u64::from(kernels::calibrate::throughput::BLOCK / 32);
    let per_round = ON_CHIP.iter().find(|(k, _)| *k == kernel).map_or(0, |(_, u)| *u);
    let fill = if kernel == entry::bank_conflicts.info() {
        u64::from(blocks) * (32 * 32 / 32)
    } else {
        0
    };
    warps * rounds as u64 * per_round + fill
}

/// What `lines_store` writes, for the summary: each warp's own lines, and whether the
/// windows of `blocks` blocks fit the L2 (where they do not, the DRAM may set the rate).
pub(super) fn store_windows(blocks: u32, l2_bytes: u64) -> String {
    let bytes = u64::from(blocks) * (4 * kernels::calibrate::throughput::STORE_WINDOW) as u64;
    let fit = if bytes <= l2_bytes {
        "L2-resident".to_string()
    } else {
        format!(
            "{} of windows, more than the {} L2 holds: the DRAM may limit this rate",
            format_bytes(bytes),
            format_bytes(l2_bytes)
        )
    };
    format!("32 lines per warp store, one partial sector each, each warp its own lines, {fit}")
}

/// Times the three on-chip kernels at full residency (max threads per SM / 256 blocks
/// per SM) and returns their per-SM rates, in [`ON_CHIP`]'s order, and the blocks.
pub(super) fn on_chip_rates(
    gpu: &Gpu,
    effort: Effort,
    progress: &mut impl FnMut(&str),
) -> Result<([f64; 3], u32)> {
    use kernels::calibrate::throughput::{BLOCK, STORE_WINDOW};
    let blocks = gpu.info.sm_count.max(1) * (gpu.info.max_threads_per_sm / BLOCK).max(1);
    let mut window = gpu.alloc::<f32>(blocks as usize * STORE_WINDOW)?;
    let out = gpu.alloc::<f32>((blocks * BLOCK) as usize)?;
    // SAFETY: the buffer lives until the sync below.
    unsafe { window.set_32_async(0, &gpu.stream) }.map_err(gpu.cuda_error("clearing the windows"))?;
    gpu.sync("clearing the windows")?;
    let cfg = Launch {
        grid: (blocks, 1, 1),
        block: (BLOCK, 1, 1),
        shared_bytes: 0,
    };
    let rounds = effort.rounds();
    let (load, store, banks) = (
        gpu.load(&entry::lines_load)?,
        gpu.load(&entry::lines_store)?,
        gpu.load(&entry::bank_conflicts)?,
    );
    let (window_in, window_out, out) = (window.global(), window.global_mut(), out.global_mut());
    // In ON_CHIP's order.
    let launches: [&mut dyn FnMut() -> Result<()>; 3] = [
        &mut || load.launch(cfg, (rounds, window_in, out)),
        &mut || {
            store.launch(
                cfg,
                (rounds, kernels::calibrate::throughput::STORE_MASK, window_out),
            )
        },
        &mut || banks.launch(cfg, (rounds, out)),
    ];
    let mut rates = [0.0; 3];
    for ((rate, (kernel, _)), launch) in rates.iter_mut().zip(&ON_CHIP).zip(launches) {
        progress(kernel.name);
        let t = time_launches(gpu, effort.reps(), launch)?;
        *rate = per_sm_rate(
            on_chip_units(kernel, blocks, rounds),
            t.median_ms,
            gpu.info.sm_count,
        )
        .ok_or_else(|| crate::Error::BadProfile {
            path: "calibrate".into(),
            why: format!("{} took {} ms: no rate", kernel.name, t.median_ms),
        })?;
    }
    Ok((rates, blocks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_windows_say_when_the_l2_cannot_hold_them() {
        // An H100's or H200's 1056 blocks write 33 MiB of windows: their L2 holds them.
        assert!(store_windows(1056, 50 << 20).ends_with("each warp its own lines, L2-resident"));
        let small = store_windows(1056, 6 << 20);
        assert!(
            small.contains("33.0 MiB of windows, more than the 6.0 MiB L2 holds"),
            "{small}"
        );
    }

    #[test]
    fn on_chip_units_count_32_per_warp_and_round() {
        // 1056 blocks of 8 warps, 2048 rounds, 32 lines or wavefronts each.
        let per = 1056 * 8 * 2048 * 32;
        assert_eq!(on_chip_units(&entry::lines_load, 1056, 2048), per);
        assert_eq!(on_chip_units(&entry::lines_store, 1056, 2048), per);
        // The tile's fill: 32 conflict-free store requests per block.
        assert_eq!(on_chip_units(&entry::bank_conflicts, 1056, 2048), per + 1056 * 32);
        assert_eq!(on_chip_units(&entry::copy_f32, 1056, 2048), 0);
    }
}
