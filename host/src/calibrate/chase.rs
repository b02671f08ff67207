//! The idle latency: a single thread chasing pointers through a random cycle
//! ([`super::chase_buffer`]) far larger than the L2.

use cust::memory::{AsyncCopyDestination, CopyDestination};
use kernels::entry;

use super::{Effort, SEED, chase_buffer, follow};
use crate::device::Gpu;
use crate::error::Result;
use crate::experiment::DefaultSize;
use crate::launch::{AsGlobal, Launch};
use crate::timing::time_launches;
use crate::units::format_bytes;

/// The idle latency: one thread, `chase_steps` dependent loads per launch through a
/// random cycle over 8 x L2 (at least 256 MiB), so every hop misses L2; ns per hop.
/// Returns it, the buffer's bytes and the hops per launch, and a failure if the
/// chase did not end where the host's walk of the same cycle does.
pub(super) fn idle_latency(
    gpu: &Gpu,
    effort: Effort,
    progress: &mut impl FnMut(&str),
) -> Result<(f64, u64, usize, Option<String>)> {
    let bytes = DefaultSize::BeyondL2.bytes(&gpu.info);
    let slots = (bytes / 128) as usize;
    progress(&format!("chase: {} cycle", format_bytes(bytes)));
    let reps = effort.chase_reps();
    let launches = reps.launches();
    // Launches go on from one another: with no more hops than slots in all of them,
    // none revisits a line a launch before it brought into L2.
    let steps = effort.chase_steps().min(slots / launches).max(1);
    let host = chase_buffer(slots, SEED).ok_or_else(|| crate::Error::TooLarge {
        what: format!("a {} pointer chase", format_bytes(bytes)),
        why: "its indices do not fit the kernel's 32-bit words".into(),
    })?;
    let mut next = gpu.alloc::<u32>(host.len())?;
    let mut cursor = gpu.alloc::<u32>(1)?;
    let start = [0u32];
    // Stream-ordered uploads: a synchronous copy from pageable memory may return
    // before its DMA is done, and the stream does not wait for the default one.
    // SAFETY: both host slices outlive the sync below.
    unsafe {
        next.async_copy_from(&host[..], &gpu.stream)
            .map_err(gpu.cuda_error("uploading the chase's cycle"))?;
        cursor
            .async_copy_from(&start[..], &gpu.stream)
            .map_err(gpu.cuda_error("uploading the chase's start"))?;
    }
    // The upload leaves the buffer's last lines in L2: overwrite L2 with twice its
    // size of something else.
    let mut flush = gpu.alloc::<u32>((2 * gpu.info.l2_bytes / 4).max(1) as usize)?;
    // SAFETY: the buffer lives until the sync below.
    unsafe { flush.set_32_async(0, &gpu.stream) }.map_err(gpu.cuda_error("flushing L2"))?;
    gpu.sync("uploading the chase")?;
    drop(flush);
    let chase = gpu.load(&entry::chase)?;
    let one = Launch {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        shared_bytes: 0,
    };
    let args = (steps, next.global(), cursor.global_mut());
    let t = time_launches(gpu, reps, || chase.launch(one, args))?;
    let mut end = [0u32];
    cursor
        .copy_to(&mut end[..])
        .map_err(gpu.cuda_error("reading the chase's end"))?;
    let want = follow(&host, start[0], steps * launches);
    let failure = (end[0] != want).then(|| format!("chase: ended at index {} instead of {want}", end[0]));
    Ok((t.median_ms * 1e6 / steps as f64, bytes, steps, failure))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceInfo;

    #[test]
    fn the_chase_never_revisits_a_line_across_its_launches() {
        let info = DeviceInfo::h100();
        for quick in [false, true] {
            let effort = Effort { quick };
            let slots = (DefaultSize::BeyondL2.bytes(&info) / 128) as usize;
            let r = effort.chase_reps();
            assert!(r.launches() * effort.chase_steps() <= slots);
            // Every L2 line of 8 x L2 is 8 x more than L2 holds.
            assert!(slots as u64 * 128 >= 8 * info.l2_bytes);
        }
    }
}
