//! What a launch costs beyond its work ([`launch_ns`]), and the L2 as the memory of a
//! copy it holds ([`l2_resident`]): the rates `explain` gives small problems and
//! working sets that fit in the L2.

use cust::memory::AsyncCopyDestination;
use kernels::entry;

use super::{Effort, inflight, loaded_latency};
use crate::device::Gpu;
use crate::error::Result;
use crate::experiment::Problem;
use crate::launch::{AsGlobal, Launch};
use crate::profile::L2Resident;
use crate::profile::l2::{rate_without_launch, resident_bytes_per_array};
use crate::timing::{memcpy_baseline, time_launches};

/// The fixed cost of a launch, ns: one thread that loads a word and stores it back
/// (`chase` with no hops, so every launch writes memory as a kernel does), launch
/// after launch as `run` times them: the median time between its events.
pub(super) fn launch_ns(gpu: &Gpu, effort: Effort, progress: &mut impl FnMut(&str)) -> Result<f64> {
    progress("launch: one thread, one word");
    let mut next = gpu.alloc::<u32>(1)?;
    let mut cursor = gpu.alloc::<u32>(1)?;
    let zero = [0u32];
    // SAFETY: `zero` outlives the sync below.
    unsafe {
        next.async_copy_from(&zero[..], &gpu.stream)
            .map_err(gpu.cuda_error("uploading the launch's word"))?;
        cursor
            .async_copy_from(&zero[..], &gpu.stream)
            .map_err(gpu.cuda_error("uploading the launch's word"))?;
    }
    gpu.sync("uploading the launch's word")?;
    let chase = gpu.load(&entry::chase)?;
    let one = Launch {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        shared_bytes: 0,
    };
    let args = (0usize, next.global(), cursor.global_mut());
    let t = time_launches(gpu, effort.reps(), || chase.launch(one, args))?;
    Ok(t.median_ms * 1e6)
}

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
