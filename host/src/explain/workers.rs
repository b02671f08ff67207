//! Many variants explained side by side, each emulation on an OS thread of its own,
//! and what the caller hears as they go ([`ExplainEvent`]).

use super::options::Options;
use super::report::KernelReport;
use super::residency;
use super::variant::explain_variant;
use crate::error::{Error, Result};
use crate::experiment::{Experiment, Problem, Variant, Work};

/// One variant to explain, at its problem.
pub(super) type Job = (&'static Experiment, &'static Variant, Problem);

/// How many emulations run at once: up to 4, as the machine's cores and, where the OS
/// says (Linux), its available memory allow.
fn workers(jobs: usize, limit: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let memory = available_memory().map_or(usize::MAX, |bytes| (bytes / limit.max(1)) as usize);
    cores.min(memory).min(jobs).clamp(1, 4)
}

/// The memory available to a new process: `MemAvailable` of /proc/meminfo.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What [`super::explain`] tells its caller as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplainEvent<'a> {
    /// `variant` (`EXPERIMENT/VARIANT`) has emulated `done` of the `of` blocks of the
    /// window it counts now (its sample, or a wave), and the rest will take about
    /// `left` at the rate so far.
    Blocks {
        variant: &'a str,
        done: usize,
        of: usize,
        left: std::time::Duration,
    },
    /// `variant` is explained.
    Explained(&'a str),
}

/// What a worker tells the thread that gathers: job `at`'s progress, or its report.
enum Heard {
    Blocks(usize, usize, usize, std::time::Duration),
    Done(usize, Box<Result<KernelReport>>),
}

/// How often a worker reports an emulation's blocks.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Explains `jobs` side by side, each emulation on an OS thread of its own
/// ([`workers`] at once), and returns their reports in `jobs`' order, or the first
/// error in it. `progress` hears of each as it goes.
pub(super) fn explain_all(
    jobs: &[Job],
    opts: &Options,
    progress: &mut impl FnMut(ExplainEvent),
) -> Result<Vec<KernelReport>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = workers(jobs.len(), opts.memory_limit);
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut reports: Vec<Option<Result<KernelReport>>> = jobs.iter().map(|_| None).collect();
    let names: Vec<String> = jobs
        .iter()
        .map(|(e, v, _)| format!("{}/{}", e.name, v.name))
        .collect();
    std::thread::scope(|s| -> Result<()> {
        // ptxas (for residency, which bandwidth kernels' predictions need) runs beside
        // the first emulations instead of after them.
        if let Some(p) = &opts.profile
            && jobs
                .iter()
                .any(|(e, _, problem)| matches!((e.work)(problem), Work::Bytes(_)))
        {
            s.spawn(|| residency::prefetch(p));
        }
        for _ in 0..workers {
            let (tx, next) = (tx.clone(), &next);
            let work = move || loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(experiment, variant, problem)) = jobs.get(at) else {
                    break;
                };
                let now = std::time::Instant::now;
                // When the window began, and when its blocks were last reported.
                let (began, last) = (std::cell::Cell::new(now()), std::cell::Cell::new(now()));
                let blocks = |done: usize, of: usize| {
                    if done <= 1 {
                        began.set(now());
                    }
                    if done == of || last.get().elapsed() >= PROGRESS_EVERY {
                        last.set(now());
                        let per_block = began.get().elapsed() / done.max(1) as u32;
                        let left = per_block * of.saturating_sub(done) as u32;
                        let _ = tx.send(Heard::Blocks(at, done, of, left));
                    }
                };
                let report = explain_variant(experiment, variant, problem, opts, &blocks);
                if tx.send(Heard::Done(at, Box::new(report))).is_err() {
                    break;
                }
            };
            // The main thread's stack, which one variant at a time had.
            std::thread::Builder::new()
                .stack_size(8 << 20)
                .spawn_scoped(s, work)
                .map_err(|e| Error::Emulation {
                    kernel: "explain".into(),
                    why: format!("cannot start a thread: {e}"),
                })?;
        }
        drop(tx);
        for heard in rx {
            match heard {
                Heard::Blocks(at, done, of, left) => progress(ExplainEvent::Blocks {
                    variant: &names[at],
                    done,
                    of,
                    left,
                }),
                Heard::Done(at, report) => {
                    progress(ExplainEvent::Explained(&names[at]));
                    reports[at] = Some(*report);
                }
            }
        }
        Ok(())
    })?;
    reports
        .into_iter()
        .map(|r| r.unwrap_or_else(|| unreachable!("every job is taken and reported")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::EMULATION_BYTES;

    #[test]
    fn emulations_at_once_stay_within_the_jobs_cores_and_memory() {
        assert_eq!(workers(0, EMULATION_BYTES), 1);
        assert_eq!(workers(1, EMULATION_BYTES), 1);
        let many = workers(100, EMULATION_BYTES);
        assert!((1..=4).contains(&many), "{many} at once");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(many <= cores.max(1));
        #[cfg(target_os = "linux")]
        {
            let bytes = available_memory().expect("Linux says its available memory");
            assert!(
                many as u64 <= (bytes / EMULATION_BYTES).max(1),
                "{many} at once in {bytes} bytes"
            );
        }
    }
}
