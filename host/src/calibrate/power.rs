//! The power runs: each compute microbenchmark of [`super::compute`] launched again
//! and again for a second or more, while the board's energy counter (NVML) says what
//! it drew; [`crate::profile::power::fit`] turns the runs into the energy of each
//! kind of work. The window opens and closes where the counter changes, so its
//! updates (tens of ms apart on some boards) cost nothing of its length.

use std::time::{Duration, Instant};

use super::Effort;
use super::compute::{Inputs, Microbenchmark, power_runs};
use crate::device::Gpu;
use crate::error::Result;
use crate::nvml::Board;
use crate::profile::power::{Energy, PowerRates, PowerRun, fit};

/// How long each run's window lasts, after how long a warm-up: long enough for the
/// board to settle at its limit's clock where the kernel meets it.
fn window(effort: Effort) -> (Duration, Duration) {
    if effort.quick {
        (Duration::from_millis(100), Duration::from_millis(300))
    } else {
        (Duration::from_millis(500), Duration::from_millis(1500))
    }
}

/// The power fit, or why there is none (no NVML, a run that drew too little), and the
/// runs' validation failures. `progress` hears of each run ([`power_runs`]).
pub fn power_rates(
    gpu: &Gpu,
    effort: Effort,
    progress: &mut impl FnMut(&str),
) -> Result<(std::result::Result<PowerRates, String>, Vec<String>)> {
    let board = match gpu
        .info
        .pci_bus_id
        .as_deref()
        .ok_or_else(|| "the driver gives no PCI address for this GPU".to_string())
        .and_then(Board::open)
    {
        Ok(b) => b,
        Err(why) => {
            power_runs().iter().for_each(|(e, _)| progress(e.run()));
            return Ok((Err(why), Vec::new()));
        }
    };
    let mut runs = Vec::new();
    let mut failures = Vec::new();
    for (energy, bench) in power_runs() {
        progress(energy.run());
        if let Some((r, failure)) = run(gpu, &board, energy, bench, effort)? {
            runs.push(r);
            failures.extend(failure);
        }
    }
    let limit = match board.power_limit_w() {
        Ok(w) => w,
        Err(why) => return Ok((Err(why), failures)),
    };
    Ok((fit(limit, runs), failures))
}

/// The run pricing `energy`, by `bench`'s launches, then a check of what the last one
/// stored. None where this GPU cannot load its kernel.
fn run(
    gpu: &Gpu,
    board: &Board,
    energy: Energy,
    bench: &Microbenchmark,
    effort: Effort,
) -> Result<Option<(PowerRun, Option<String>)>> {
    let info = &gpu.info;
    if !bench.kernel().module.loads_on(info.compute_capability) {
        return Ok(None);
    }
    // The base: one warp on every SM. The others: as its microbenchmark runs.
    let base = energy == Energy::Base;
    let cfg = bench.launch(gpu, base.then_some(info.sm_count.max(1)))?;
    // The DRAM's: 32 times the L2-resident buffer, 8 x the L2.
    let span = if energy == Energy::Dram {
        32 * info.l2_bytes
    } else {
        info.l2_bytes
    };
    let inputs = Inputs {
        quick: effort.quick,
        span,
        group: 1,
    };
    let (warm, length) = window(effort);
    let ran = bench.run(gpu, cfg, inputs, |launch| draw(gpu, board, warm, length, launch))?;
    let (watts, launches, seconds) = ran.measured;
    // The base's work is not priced: its rate is its launches'.
    let units = if base { 1 } else { ran.units };
    Ok(Some((
        PowerRun {
            kernel: energy.run().to_string(),
            watts,
            units_per_s: launches as f64 * units as f64 / seconds,
            seconds,
        },
        ran.failure,
    )))
}

/// Launches `launch` for `warm`, then until `length` has passed between two changes of
/// the energy counter: the mean watts, the launches that ran between them and the
/// seconds. Launches go four at a time, so the GPU never waits on the host.
fn draw(
    gpu: &Gpu,
    board: &Board,
    warm: Duration,
    length: Duration,
    mut launch: impl FnMut() -> Result<()>,
) -> Result<(f64, u64, f64)> {
    let read = || board.energy_mj().map_err(crate::Error::Library);
    let mut batch = || -> Result<()> {
        for _ in 0..4 {
            launch()?;
        }
        gpu.sync("running a power microbenchmark")
    };
    let start = Instant::now();
    while start.elapsed() < warm {
        batch()?;
    }
    // Open the window where the counter changes.
    let mut last = read()?;
    let (e0, t0) = loop {
        batch()?;
        let e = read()?;
        if e != last {
            break (e, Instant::now());
        }
        last = e;
    };
    let mut launches = 0u64;
    let mut last = e0;
    let (e1, t1) = loop {
        batch()?;
        launches += 4;
        let e = read()?;
        if e != last && t0.elapsed() >= length {
            break (e, Instant::now());
        }
        last = e;
    };
    let seconds = (t1 - t0).as_secs_f64();
    Ok(((e1 - e0) as f64 / 1e3 / seconds, launches, seconds))
}
