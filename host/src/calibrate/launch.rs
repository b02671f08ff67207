//! What a launch costs, launch after launch as `run` times them ([`launch_costs`]):
//! the interval of a launch with no work to speak of (`launch_ns`), and what a launch
//! adds to a kernel long enough to hide the next launch's setup (`launch_gap_ns`).
//!
//! The driver and the GPU's front end set up launch i + 1 while launch i runs, so
//! back-to-back launches of a kernel that does W ns of work are
//! `gap + max(W, launch_ns - gap)` apart: an empty one costs `launch_ns`, a long one
//! its work plus the gap between one kernel's end and the next one's start.
//! [`gap_from`] fits that gap to one thread's chase of `h` dependent loads at several
//! `h` (W = h hops' latency): on the kernels that outlast the setup the interval is a
//! line in `h`, and its intercept is the gap.
//!
//! The timing harness queues the launches behind a hold kernel
//! ([`crate::timing`]), so the host's share of the setup is out of every interval:
//! what is left is the GPU's own, which a long kernel pays too, and the intercept
//! comes out at `launch_ns` within the timing's noise (3482 against 3488 ns on an
//! H200). The gap is then taken as `launch_ns`.

use cust::memory::AsyncCopyDestination;
use kernels::entry;

use super::Effort;
use crate::device::Gpu;
use crate::error::Result;
use crate::launch::{AsGlobal, Launch};
use crate::timing::time_launches;

/// Hops of the chases the gap is fitted to: a few µs to a few ms of dependent loads
/// of one word (an L1 or L2 hit each, 30 to 300 ns), so several outlast any setup.
pub const GAP_HOPS: [usize; 7] = [1 << 10, 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16];

/// A launch's fixed costs, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchCosts {
    /// The interval between launches of one thread that loads a word and stores it
    /// back (`chase` with no hops).
    pub launch_ns: f64,
    /// What a launch adds to a kernel that outlasts the next launch's setup
    /// ([`gap_from`]); `None` where no line fits the chases.
    pub gap_ns: Option<f64>,
}

/// Times `chase` of one thread over a one-word cycle with no hops, then at each of
/// [`GAP_HOPS`], launch after launch as `run` times them.
pub(super) fn launch_costs(
    gpu: &Gpu,
    effort: Effort,
    progress: &mut impl FnMut(&str),
) -> Result<LaunchCosts> {
    progress("launch: one thread, one word, then its chases");
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
    let interval = |hops: usize| -> Result<f64> {
        // next[0] = 0: every hop reads the same word, so the chase stays in bounds.
        let args = (hops, next.global(), cursor.global_mut());
        Ok(time_launches(gpu, effort.reps(), || chase.launch(one, args))?.median_ms * 1e6)
    };
    let launch_ns = interval(0)?;
    let chases = GAP_HOPS
        .iter()
        .map(|&h| interval(h).map(|ns| (h, ns)))
        .collect::<Result<Vec<_>>>()?;
    Ok(LaunchCosts {
        launch_ns,
        gap_ns: gap_from(&chases, launch_ns),
    })
}

/// The gap between back-to-back launches of kernels that outlast the setup: the
/// intercept of the least-squares line through the chases (hops, interval ns) that
/// last at least twice `launch_ns` (well past the setup), at most `launch_ns`: no
/// launch costs a long kernel more than an empty one's interval, so an intercept a
/// little above it is that interval measured with noise. `None` with fewer than
/// three such chases, a line that does not rise with the hops, or an intercept
/// outside (0, 1.5 launch_ns], which no launch gives.
pub fn gap_from(chases: &[(usize, f64)], launch_ns: f64) -> Option<f64> {
    let long: Vec<(f64, f64)> = chases
        .iter()
        .filter(|&&(_, ns)| ns.is_finite() && ns >= 2.0 * launch_ns)
        .map(|&(h, ns)| (h as f64, ns))
        .collect();
    if long.len() < 3 {
        return None;
    }
    let n = long.len() as f64;
    let (mean_h, mean_t) = (
        long.iter().map(|p| p.0).sum::<f64>() / n,
        long.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = long.iter().map(|p| (p.0 - mean_h).powi(2)).sum();
    let sxy: f64 = long.iter().map(|p| (p.0 - mean_h) * (p.1 - mean_t)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let gap = mean_t - slope * mean_h;
    (slope > 0.0 && gap > 0.0 && gap <= 1.5 * launch_ns).then_some(gap.min(launch_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Intervals of `gap + max(h x hop, launch - gap)`.
    fn chases(gap: f64, hop: f64, launch: f64) -> Vec<(usize, f64)> {
        GAP_HOPS
            .iter()
            .map(|&h| (h, gap + (h as f64 * hop).max(launch - gap)))
            .collect()
    }

    #[test]
    fn the_gap_is_the_intercept_of_the_long_chases() {
        // 35 ns a hop: the first chase (36 µs) already outlasts a 3.5 µs launch.
        let gap = gap_from(&chases(600.0, 35.0, 3500.0), 3500.0).unwrap();
        assert!((gap - 600.0).abs() < 1e-6, "{gap}");
        // 1 ns a hop: the short chases sit on the floor and are left out.
        let gap = gap_from(&chases(250.0, 1.0, 3500.0), 3500.0).unwrap();
        assert!((gap - 250.0).abs() < 1e-6, "{gap}");
        // Held launches: the long chases pay the whole launch, and noise puts the
        // intercept a little above it.
        let held: Vec<_> = GAP_HOPS.iter().map(|&h| (h, 3560.0 + h as f64 * 35.0)).collect();
        assert_eq!(gap_from(&held, 3500.0), Some(3500.0));
    }

    #[test]
    fn no_gap_without_enough_long_chases_or_from_a_line_no_launch_gives() {
        // Every chase on the launch's floor.
        assert_eq!(gap_from(&chases(600.0, 0.01, 3500.0), 3500.0), None);
        // A line whose intercept is above the empty launch's interval.
        let late: Vec<_> = GAP_HOPS.iter().map(|&h| (h, 9000.0 + h as f64 * 35.0)).collect();
        assert_eq!(gap_from(&late, 3500.0), None);
        // Intervals that fall as the hops rise.
        let falling: Vec<_> = GAP_HOPS.iter().map(|&h| (h, 1e7 - h as f64)).collect();
        assert_eq!(gap_from(&falling, 3500.0), None);
    }
}
