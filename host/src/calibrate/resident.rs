//! The L2 as the memory of a copy it holds ([`l2_resident`]): the rates `explain`
//! gives working sets that fit in the L2.

use super::{Effort, inflight, loaded_latency};
use crate::device::Gpu;
use crate::error::Result;
use crate::experiment::Problem;
use crate::profile::L2Resident;
use crate::profile::l2::{rate_without_launch, resident_bytes_per_array};
use crate::timing::memcpy_baseline;

/// The L2 as a copy's memory: cuMemcpyDtoD and the inflight copies at a quarter of
/// the L2 per array, each time less `launch_ns`; the latency's line fitted as the
/// DRAM's is. Returns it (None where no copy outlasted its launch, or no fit was
/// possible) and the copies that failed validation.
pub(super) fn l2_resident(
    gpu: &Gpu,
    effort: Effort,
    launch_ns: f64,
    progress: &mut impl FnMut(&str),
) -> Result<(Option<L2Resident>, Vec<String>)> {
    let bytes = resident_bytes_per_array(gpu.info.l2_bytes);
    progress("L2-resident copy baseline");
    let copy = memcpy_baseline(gpu, bytes, effort.reps())?;
    let sweep = inflight::sweep_at(
        gpu,
        effort,
        Problem::Elements {
            n: (bytes / 4) as usize,
        },
        launch_ns,
        "inflight in L2",
        progress,
    )?;
    let resident =
        rate_without_launch(2 * copy.bytes, copy.timing.median_ms, launch_ns).and_then(|ceiling| {
            let fit = loaded_latency(&sweep.points, gpu.info.sm_count, ceiling)?;
            Some(L2Resident {
                bytes_per_array: bytes,
                copy_gb_per_s: ceiling,
                loaded_latency_ns: fit.base_ns,
                queueing_latency_ns: fit.queue_ns,
                inflight_sweep: sweep.points,
            })
        });
    Ok((resident, sweep.failures))
}
