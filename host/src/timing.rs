//! Timing on the GPU: CUDA events around launches, warm-up first, the median of
//! many repetitions; and the driver's device-to-device copy, the baseline every
//! bandwidth is compared with.
//!
//! The GPU is held ([`Hold`]) while the host queues the launches and their events, so
//! an interval holds one launch's GPU time: without it, a launch shorter than the
//! host's time to queue one (a few microseconds; more for a library call such as
//! cuBLAS's) is timed at the host's pace.

use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, LockedBox};
use kernels::entry;
use kernels::gpu::Global;
use serde::{Deserialize, Serialize};

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::launch::Launch;
use crate::units::gb_per_s;

/// How long the hold kernel waits for the host at most: far longer than queueing any
/// timing loop takes, short enough that a host that never releases it costs little.
const HOLD_LIMIT_NS: u64 = 2_000_000_000;

/// The hold kernel (`kernels::hold`) running on the stream until [`Hold::release`]
/// (or drop) sets its flag in pinned host memory; what is queued behind it runs back
/// to back once it is released.
struct Hold<'g> {
    gpu: &'g Gpu,
    flag: LockedBox<u32>,
    released: bool,
}

impl<'g> Hold<'g> {
    fn start(gpu: &'g Gpu) -> Result<Hold<'g>> {
        let flag =
            LockedBox::new(&0u32).map_err(Error::cuda("allocating the hold's flag in pinned memory"))?;
        let mut hold = Hold {
            gpu,
            flag,
            released: false,
        };
        // Unified addressing: the pinned word's host address is its device address.
        let word = Global::from_ptr(hold.word() as *const u32);
        let one = Launch {
            grid: (1, 1, 1),
            block: (1, 1, 1),
            shared_bytes: 0,
        };
        if let Err(e) = gpu.launch(&entry::hold, one, (word, HOLD_LIMIT_NS)) {
            hold.released = true;
            return Err(e);
        }
        Ok(hold)
    }

    fn word(&mut self) -> *mut u32 {
        &mut *self.flag
    }

    /// Lets the queued work run.
    fn release(&mut self) {
        // SAFETY: the pinned word this Hold owns; the kernel only reads it.
        unsafe { std::ptr::write_volatile(self.word(), 1) };
        self.released = true;
    }
}

impl Drop for Hold<'_> {
    /// On an early return, the kernel still reads the flag: release it and wait for
    /// the stream before the pinned word is freed.
    fn drop(&mut self) {
        if !self.released {
            self.release();
        }
        let _ = self.gpu.stream.synchronize();
    }
}

/// Median, min and max of repeated timings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub reps: usize,
}

impl Timing {
    pub fn from_samples(mut ms: Vec<f64>) -> Timing {
        assert!(!ms.is_empty(), "at least one timing sample");
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let median = if n % 2 == 1 {
            ms[n / 2]
        } else {
            (ms[n / 2 - 1] + ms[n / 2]) / 2.0
        };
        Timing {
            median_ms: median,
            min_ms: ms[0],
            max_ms: ms[n - 1],
            reps: n,
        }
    }
}

/// How many launches to time, after how many untimed ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reps {
    pub warmup: usize,
    pub timed: usize,
}

impl Reps {
    /// Launches of each that [`time_interleaved`] makes: the first, finished before
    /// the hold, the warm-ups and the timed ones (what a kernel that carries state
    /// from launch to launch, as the chase does, has to count).
    pub fn launches(&self) -> usize {
        1 + self.warmup + self.timed.max(1)
    }
}

impl Default for Reps {
    fn default() -> Self {
        Reps { warmup: 3, timed: 20 }
    }
}

/// Times `launch` with CUDA events, the GPU held while they are queued, so each
/// event interval holds exactly one launch and no host gap.
pub fn time_launches(gpu: &Gpu, reps: Reps, mut launch: impl FnMut() -> Result<()>) -> Result<Timing> {
    let mut timings = time_interleaved(gpu, reps, &mut [&mut launch])?;
    Ok(timings.remove(0))
}

/// Times several launches that do the same work (a kernel and its twin) in one
/// stream, interleaved: each timed round runs every launch once, in alternating
/// order (A B, then B A), so clock and thermal drift fall on all of them alike.
/// Returns one timing per launch, each from `reps.timed` samples. Everything is
/// queued behind a [`Hold`], released when the last event is.
pub fn time_interleaved(
    gpu: &Gpu,
    reps: Reps,
    launches: &mut [&mut dyn FnMut() -> Result<()>],
) -> Result<Vec<Timing>> {
    let count = launches.len();
    if count == 0 {
        return Ok(Vec::new());
    }
    let timed = reps.timed.max(1);
    let events = (0..=timed * count)
        .map(|_| Event::new(EventFlags::DEFAULT))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::cuda("creating timing events"))?;
    // One launch of each, finished before the hold: a first call that waits for the
    // GPU (a library loading its kernels, allocating its workspace) would otherwise
    // wait for the hold, which waits for the host.
    for launch in launches.iter_mut() {
        launch()?;
    }
    gpu.sync("the first of the timed launches")?;
    let mut hold = Hold::start(gpu)?;
    for _ in 0..reps.warmup {
        for launch in launches.iter_mut() {
            launch()?;
        }
    }
    events[0]
        .record(&gpu.stream)
        .map_err(Error::cuda("recording an event"))?;
    // owner[e] = which launch ran between events e and e + 1.
    let mut owner = Vec::with_capacity(timed * count);
    for round in 0..timed {
        for j in 0..count {
            let which = interleaved(round, j, count);
            launches[which]()?;
            events[owner.len() + 1]
                .record(&gpu.stream)
                .map_err(Error::cuda("recording an event"))?;
            owner.push(which);
        }
    }
    hold.release();
    gpu.sync("running the timed launches")?;
    let mut samples = vec![Vec::with_capacity(timed); count];
    for (e, &which) in owner.iter().enumerate() {
        let ms = events[e + 1]
            .elapsed_time_f32(&events[e])
            .map_err(Error::cuda("reading event times"))?;
        samples[which].push(f64::from(ms));
    }
    Ok(samples.into_iter().map(Timing::from_samples).collect())
}

/// The launch that runs `j`th in timed round `round` of `count` launches:
/// forward in even rounds, backward in odd ones.
fn interleaved(round: usize, j: usize, count: usize) -> usize {
    if round.is_multiple_of(2) { j } else { count - 1 - j }
}

/// GPU time of `launches` back-to-back launches, in milliseconds: one event before
/// the first and one after the last (what criterion's `iter_custom` needs: the total
/// time of a batch). The caller warms up. Not held: a batch may be longer than the
/// queue, so launches shorter than the host's time to queue one are timed at the
/// host's pace here.
pub fn time_batch(gpu: &Gpu, launches: u64, mut launch: impl FnMut() -> Result<()>) -> Result<f64> {
    let start = Event::new(EventFlags::DEFAULT).map_err(Error::cuda("creating timing events"))?;
    let end = Event::new(EventFlags::DEFAULT).map_err(Error::cuda("creating timing events"))?;
    start
        .record(&gpu.stream)
        .map_err(Error::cuda("recording an event"))?;
    for _ in 0..launches {
        launch()?;
    }
    end.record(&gpu.stream)
        .map_err(Error::cuda("recording an event"))?;
    gpu.sync("running the timed launches")?;
    let ms = end
        .elapsed_time_f32(&start)
        .map_err(Error::cuda("reading event times"))?;
    Ok(f64::from(ms))
}

/// The driver's device-to-device copy of `bytes`, timed like a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub bytes: u64,
    pub timing: Timing,
    /// Read + written bytes per second.
    pub gb_per_s: f64,
}

impl Baseline {
    /// The faster of two copies timed before and after other work: background driver
    /// work (freeing a previous experiment's memory) can make one copy look slow, and
    /// a slow ceiling would make every kernel look good.
    pub fn faster(self, other: Baseline) -> Baseline {
        if other.gb_per_s > self.gb_per_s {
            other
        } else {
            self
        }
    }
}

pub fn memcpy_baseline(gpu: &Gpu, bytes: u64, reps: Reps) -> Result<Baseline> {
    let n = (bytes / 4) as usize;
    let src = gpu.alloc::<f32>(n)?;
    let mut dst = gpu.alloc::<f32>(n)?;
    let timing = time_launches(gpu, reps, || {
        // SAFETY: both buffers hold n f32s and live until after the sync inside time_launches.
        unsafe { dst.async_copy_from(&src, &gpu.stream) }.map_err(Error::cuda("copying device to device"))
    })?;
    let moved = 2 * n as u64 * 4;
    Ok(Baseline {
        bytes: n as u64 * 4,
        timing,
        gb_per_s: gb_per_s(moved, timing.median_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let t = Timing::from_samples(vec![3.0, 1.0, 2.0]);
        assert_eq!((t.median_ms, t.min_ms, t.max_ms, t.reps), (2.0, 1.0, 3.0, 3));
        assert_eq!(Timing::from_samples(vec![4.0, 1.0, 2.0, 3.0]).median_ms, 2.5);
    }

    #[test]
    fn interleaving_alternates_the_order() {
        let rounds: Vec<Vec<usize>> = (0..3)
            .map(|r| (0..2).map(|j| interleaved(r, j, 2)).collect())
            .collect();
        assert_eq!(rounds, [[0, 1], [1, 0], [0, 1]]);
        // Every launch runs once per round.
        let mut three: Vec<usize> = (0..3).map(|j| interleaved(1, j, 3)).collect();
        assert_eq!(three, [2, 1, 0]);
        three.sort();
        assert_eq!(three, [0, 1, 2]);
    }
}
