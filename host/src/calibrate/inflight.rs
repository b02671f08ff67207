//! The inflight sweep: the `inflight` experiment's copies, each with more bytes in
//! flight per thread: Little's law gives the loaded latency and how it rises with load
//! ([`super::loaded_latency`]).

use super::{Effort, SEED, Sweep, bytes_in_flight_per_sm, problem_for};
use crate::device::Gpu;
use crate::error::Result;
use crate::experiment::Problem;
use crate::experiments::inflight;
use crate::launch::Launch;
use crate::prepared::Prepared;
use crate::profile::SweepPoint;
use crate::profile::l2::rate_without_launch;
use crate::timing::time_launches;
use crate::units::format_bytes;

/// Threads of a launch.
fn threads(l: &Launch) -> u64 {
    let count = |(x, y, z): (u32, u32, u32)| u64::from(x) * u64::from(y) * u64::from(z);
    count(l.grid) * count(l.block)
}

/// Every inflight variant, validated, then timed: x = read bytes in flight per SM,
/// from its launch, and its read + written rate.
pub(super) fn inflight_sweep(gpu: &Gpu, effort: Effort, progress: &mut impl FnMut(&str)) -> Result<Sweep> {
    let problem = problem_for(gpu, &inflight::EXPERIMENT, effort)?;
    sweep_at(gpu, effort, problem, 0.0, "inflight", progress)
}

/// The inflight sweep at `problem`, each median time less `launch_ns` (a launch's
/// fixed cost: 0 where the copies are long enough not to see it); `label` names the
/// sweep in progress lines and failures.
pub(super) fn sweep_at(
    gpu: &Gpu,
    effort: Effort,
    problem: Problem,
    launch_ns: f64,
    label: &str,
    progress: &mut impl FnMut(&str),
) -> Result<Sweep> {
    let exp = &inflight::EXPERIMENT;
    let bytes = 4 * problem.dim(crate::experiment::Dim::Len) as u64;
    progress(&format!("{label}: {} per array", format_bytes(bytes)));
    let mut p = Prepared::new(gpu, exp, problem, SEED)?;
    let moved = p.work().bytes();
    let mut points = Vec::new();
    let mut failures = Vec::new();
    for (i, v) in exp.variants.iter().enumerate() {
        progress(&format!("{label}/{}", v.name));
        let f = gpu.function(v.kernel)?;
        let check = p.check(gpu, i, &f)?;
        if !check.ok {
            failures.push(format!("{label}/{}: {}", v.name, check.detail));
        }
        let t = time_launches(gpu, effort.reps(), || p.launch(gpu, i, &f))?;
        let (cfg, _) = p.launch_spec(i)?;
        // A copy no longer than its launch's fixed cost says nothing: left out.
        let Some(gb_per_s) = rate_without_launch(moved, t.median_ms, launch_ns) else {
            continue;
        };
        points.push(SweepPoint {
            // A copy reads half the bytes it moves.
            x: bytes_in_flight_per_sm(
                moved / 2,
                threads(&cfg),
                gpu.info.sm_count,
                gpu.info.max_threads_per_sm,
            ),
            gb_per_s,
        });
    }
    Ok(Sweep {
        points,
        bytes,
        failures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceInfo;
    use crate::experiment::{DefaultSize, Problem};

    #[test]
    fn bytes_in_flight_come_from_the_inflight_launches() {
        // At the default size on an H100 every variant has more threads than the SMs
        // hold, so x = 2048 x bytes per thread, from the launch rule alone.
        let info = DeviceInfo::h100();
        let n = (DefaultSize::BeyondL2.bytes(&info) / 4) as usize;
        let launches = inflight::EXPERIMENT
            .launches(&Problem::Elements { n }, &info)
            .unwrap();
        let per_thread: Vec<f64> = launches
            .iter()
            .map(|l| bytes_in_flight_per_sm(4 * n as u64, threads(l.as_ref().unwrap()), 132, 2048) / 2048.0)
            .collect();
        assert_eq!(per_thread, [4.0, 8.0, 16.0, 32.0, 16.0, 32.0, 64.0, 128.0]);
        // A launch smaller than the GPU: its threads divided among the SMs.
        assert_eq!(bytes_in_flight_per_sm(4 * 13_200, 13_200, 132, 2048), 400.0);
        assert_eq!(bytes_in_flight_per_sm(4, 0, 0, 2048), 0.0);
    }
}
