//! The power runs: each compute microbenchmark of [`super::compute`] launched again
//! and again for a second or more, while the board's energy counter (NVML) says what
//! it drew; [`crate::profile::power::fit`] turns the runs into the energy of each
//! kind of work. The window opens and closes where the counter changes, so its
//! updates (tens of ms apart on some boards) cost nothing of its length.

use std::time::{Duration, Instant};

use kernels::entry;

use super::Effort;
use super::compute::{BulkRead, Chains, L2Read, compute_rounds, compute_units, full_launch};
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
/// runs' validation failures. `progress` hears of each run ([`Energy::ALL`]).
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
            Energy::ALL.iter().for_each(|e| progress(e.run()));
            return Ok((Err(why), Vec::new()));
        }
    };
    let mut runs = Vec::new();
    let mut failures = Vec::new();
    for energy in Energy::ALL {
        progress(energy.run());
        if let Some((r, failure)) = run(gpu, &board, energy.run(), effort)? {
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

/// One kernel's run: its launches, then a check of what the last one stored. None
/// where this GPU cannot load it.
fn run(gpu: &Gpu, board: &Board, name: &str, effort: Effort) -> Result<Option<(PowerRun, Option<String>)>> {
    let info = &gpu.info;
    let kernel = match name {
        "fma_latency" => entry::fma_latency.info(),
        "fma_throughput" => entry::fma_throughput.info(),
        "mma_tf32_throughput" => entry::mma_tf32_throughput.info(),
        "wgmma_tf32_throughput" => entry::wgmma_tf32_throughput.info(),
        "l2_bulk_read" => entry::l2_bulk_read.info(),
        _ => entry::l2_read.info(),
    };
    if !kernel.module.loads_on(info.compute_capability) {
        return Ok(None);
    }
    // The base: one warp on every SM. The others: as many blocks as fit.
    let base = (name == "fma_latency").then_some(info.sm_count.max(1));
    let cfg = full_launch(gpu, kernel, base)?;
    let (blocks, threads) = (cfg.grid.0, cfg.block.0);
    let n = (blocks * threads) as usize;
    let rounds = compute_rounds(kernel, effort.quick);
    let (warm, length) = window(effort);
    let (watts, launches, seconds, rounds, layers, failure) = match name {
        "l2_bulk_read" => {
            let bulk = BulkRead::new(gpu, blocks, effort.quick)?;
            let k = gpu.load(&entry::l2_bulk_read)?;
            let (w, l, s) = energy(gpu, board, warm, length, || k.launch(cfg, bulk.args(1)))?;
            (w, l, s, bulk.rounds, 1, bulk.check(gpu, 1)?)
        }
        "l2_read" | "l2_read_dram" => {
            // L2-resident: as the rate's run; from DRAM: 32 times its buffer, 8 x the L2.
            let span = if name == "l2_read" {
                info.l2_bytes
            } else {
                32 * info.l2_bytes
            };
            let l2 = L2Read::new(gpu, n, span, effort.quick)?;
            let k = gpu.load(&entry::l2_read)?;
            let (w, l, s) = energy(gpu, board, warm, length, || k.launch(cfg, l2.args()))?;
            (w, l, s, l2.rounds, l2.layers, l2.check(gpu, name)?)
        }
        _ => {
            let chains = Chains::new(gpu, name, n, rounds)?;
            let k = gpu.load(chains.kernel)?;
            let (w, l, s) = energy(gpu, board, warm, length, || k.launch(cfg, chains.args()))?;
            (w, l, s, rounds, 1, chains.check(gpu)?)
        }
    };
    let units = match name {
        // The base's work is not priced: its rate is its launches'.
        "fma_latency" => 1,
        _ => compute_units(kernel, blocks, rounds, layers),
    };
    Ok(Some((
        PowerRun {
            kernel: name.to_string(),
            watts,
            units_per_s: launches as f64 * units as f64 / seconds,
            seconds,
        },
        failure,
    )))
}

/// Launches `launch` for `warm`, then until `length` has passed between two changes of
/// the energy counter: the mean watts, the launches that ran between them and the
/// seconds. Launches go four at a time, so the GPU never waits on the host.
fn energy(
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
