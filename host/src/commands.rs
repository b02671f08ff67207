//! What each `coalesce` command does, once [`crate::cli`] has parsed it: `run`,
//! `compare`, `check`, `info` and `list` here, the others in their own files.

mod calibrate;
mod explain;
mod report;

use std::time::SystemTime;

pub use calibrate::{calibrate, refit};
pub use explain::explain_command;
pub use report::write_report;

use crate::args::{CompareArgs, DeviceArg, RunArgs, SuiteArgs};
use crate::device::Gpu;
use crate::error::Result;
use crate::experiments::{self, ALL, Selection};
use crate::harness::{self, RunOptions};
use crate::output::{self, Human};
use crate::progress::Progress;
use crate::ptx;
use crate::run_table::{self, ExperimentBaseline, Run};
use crate::timing::Reps;

/// What a command ended with, for the exit code.
pub enum Outcome {
    Ok,
    /// Ran, but this many kernels failed validation.
    Invalid(usize),
}

/// How commands open a GPU: [`Gpu::open`], or in tests one with substituted kernels.
pub type Opener<'a> = &'a dyn Fn(u32) -> Result<Gpu>;

/// The text of `coalesce list --names`: every EXPERIMENT/VARIANT, one per line.
pub fn list_names() -> String {
    ALL.iter()
        .flat_map(|e| e.variants.iter().map(move |v| format!("{}/{}\n", e.name, v.name)))
        .collect()
}

/// The text of `coalesce list`.
pub fn list() -> String {
    let mut out = String::new();
    for e in ALL {
        out.push_str(&format!("{:<10} {}\n", e.name, e.about));
        out.push_str(&format!(
            "{:<10}   variants: {}\n",
            "",
            e.variant_names().join(", ")
        ));
        if let Some(line) = precisions(e) {
            out.push_str(&format!("{:<10}   precision: {line}\n", ""));
        }
    }
    out
}

/// What a product's variants multiply in: `BF16`, or `FP32; TF32: a, b` where they
/// differ (the first variant's, then the others by precision). None for an
/// experiment that moves data.
fn precisions(e: &crate::experiment::Experiment) -> Option<String> {
    if e.kind != crate::experiment::Kind::Product {
        return None;
    }
    let first = e.variants.first()?.precision();
    let mut line = first.to_string();
    let mut others: Vec<&str> = Vec::new();
    for p in e.variants.iter().map(|v| v.precision()) {
        if p != first && !others.contains(&p) {
            others.push(p);
        }
    }
    for p in others {
        let names: Vec<&str> = e
            .variants
            .iter()
            .filter(|v| v.precision() == p)
            .map(|v| v.name)
            .collect();
        line.push_str(&format!("; {p}: {}", names.join(", ")));
    }
    Some(line)
}

/// `coalesce check`: every selected kernel at awkward sizes, on each device.
pub fn check(experiments: &[String], device: &DeviceArg, seed: u64, open: Opener) -> Result<Outcome> {
    let selection = experiments::select(experiments)?;
    let mut failed = 0;
    for d in device.ordinals()? {
        let gpu = open(d)?;
        let human = Human::STDOUT;
        human.line(&run_table::device_line(
            &gpu.info,
            &run_table::ptx_loaded(&gpu.info),
        ));
        let rows = crate::check::run_checks(&gpu, &selection, seed)?;
        human.print(&crate::check::render(&rows));
        failed += rows.iter().filter(|r| !r.validated).count();
    }
    Ok(outcome(failed))
}

/// `coalesce info` for each device.
pub fn info(device: &DeviceArg, open: Opener) -> Result<Outcome> {
    for d in device.ordinals()? {
        info_one(d, open)?;
    }
    Ok(Outcome::Ok)
}

fn info_one(device: u32, open: Opener) -> Result<Outcome> {
    let say = |text: String| Human::STDOUT.line(&text);
    say(format!(
        "kernels: PTX for {} ({} bytes)",
        ptx::ARCH,
        ptx::PTX.len()
    ));
    say(format!(
        "entry points: {}",
        ptx::entry_points(ptx::PTX).join(", ")
    ));
    say(format!(
        "sm_80 kernels (cp.async; loaded on GPUs from sm_80): PTX for {} ({} bytes): {}",
        ptx::SM80_ARCH,
        ptx::PTX_SM80.len(),
        ptx::entry_points(ptx::PTX_SM80).join(", ")
    ));
    say(format!(
        "sm_90a kernels (the copy engine, wgmma, clusters; loaded on sm_90 GPUs only): PTX ({} bytes): {}",
        ptx::PTX_SM90A.len(),
        ptx::entry_points(ptx::PTX_SM90A).join(", ")
    ));
    for line in crate::compare::toolkit::toolkit_lines() {
        say(line);
    }
    let gpu = open(device)?;
    say(format!(
        "device: {}",
        run_table::device_line(&gpu.info, &run_table::ptx_loaded(&gpu.info))
    ));
    let (free, total) = gpu.memory()?;
    say(format!(
        "memory: {} free of {}",
        crate::units::format_bytes(free),
        crate::units::format_bytes(total)
    ));
    say(format!(
        "default size per array: {}",
        crate::units::format_bytes(crate::experiment::DefaultSize::BeyondL2.bytes(&gpu.info))
    ));
    Ok(Outcome::Ok)
}

/// A `--shape` must fit some selected experiment.
fn check_shape(selection: &[Selection], shape: Option<&[usize]>) -> Result<()> {
    if let Some(shape) = shape
        && !selection.iter().any(|s| s.experiment.shape_rank() == shape.len())
    {
        return Err(crate::Error::BadShape {
            input: shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"),
            why: "no selected experiment takes a shape of that rank (transpose: ROWSxCOLS, matmul: MxNxK)"
                .into(),
        });
    }
    Ok(())
}

/// Checks everything the user typed, before anything touches the GPU or the disk.
fn suite_options(args: &SuiteArgs) -> Result<(Vec<Selection>, RunOptions)> {
    let selection = experiments::select(&args.experiments)?;
    let shape = args.shape.clone().map(|s| s.0);
    check_shape(&selection, shape.as_deref())?;
    let opts = RunOptions {
        size: args.size,
        shape,
        reps: Reps {
            warmup: args.warmup as usize,
            timed: args.reps as usize,
        },
        seed: args.seed,
    };
    Ok((selection, opts))
}

/// One progress step per experiment (its setup) and one per variant.
fn steps(selection: &[Selection]) -> u64 {
    selection.iter().map(|s| 1 + s.count() as u64).sum()
}

/// Runs the selected experiments through the harness, with a progress bar.
fn run_suite(
    args: &SuiteArgs,
    device: u32,
    selection: &[Selection],
    opts: &RunOptions,
    open: Opener,
) -> Result<Run> {
    let gpu = open(device)?;
    harness::reserve_buffers(&gpu, selection, opts)?;
    let mut progress = Progress::new(steps(selection), args.quiet);
    let mut report = Run {
        schema: crate::run_table::SCHEMA,
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        date: None,
        device: gpu.info.clone(),
        ptx_arch: ptx::ARCH.to_string(),
        peak_gb_per_s: gpu.info.peak_gb_per_s(),
        baselines: Vec::new(),
        rows: Vec::new(),
    };
    for s in selection {
        let measured =
            harness::run_experiment(&gpu, s, opts, None, &[], |_| Ok(()), |msg| progress.step(msg))?;
        report.baselines.push(ExperimentBaseline {
            experiment: s.experiment.name.to_string(),
            baseline: measured.baseline,
        });
        report
            .rows
            .extend(measured.rows.into_iter().map(|(rust, _, _)| rust));
    }
    progress.finish();
    report.date = Some(crate::date::utc_date(SystemTime::now()));
    Ok(report)
}

fn outcome(failures: usize) -> Outcome {
    match failures {
        0 => Outcome::Ok,
        n => Outcome::Invalid(n),
    }
}

/// Writes one device's results as they are, several as one file holding them all.
fn write_per_device<T: serde::Serialize>(path: &std::path::Path, key: &str, mut all: Vec<T>) -> Result<()> {
    if all.len() == 1 {
        return output::write_json(path, &all.remove(0));
    }
    let mut doc = serde_json::Map::new();
    doc.insert("schema".into(), crate::run_table::SCHEMA.into());
    doc.insert("coalesce_version".into(), env!("CARGO_PKG_VERSION").into());
    doc.insert(key.into(), serde_json::to_value(all)?);
    output::write_json(path, &doc)
}

pub fn run(args: RunArgs, open: Opener) -> Result<Outcome> {
    let (selection, opts) = suite_options(&args.suite)?;
    // A --json path that cannot be written fails now, before the GPU is opened.
    if let Some(path) = &args.json {
        output::check_file(path)?;
    }
    let human = Human::beside(args.json.as_deref());
    let mut reports = Vec::new();
    for (i, d) in args.suite.device.ordinals()?.into_iter().enumerate() {
        let report = run_suite(&args.suite, d, &selection, &opts, open)?;
        human.print(&format!(
            "{}{}",
            if i > 0 { "\n" } else { "" },
            run_table::render(&report)
        ));
        reports.push(report);
    }
    let failures = reports.iter().map(Run::failures).sum();
    if let Some(path) = &args.json {
        write_per_device(path, "runs", reports)?;
    }
    Ok(outcome(failures))
}

/// Runs the comparison of the selected experiments, with a progress bar.
fn run_comparison(
    args: &SuiteArgs,
    device: u32,
    selection: &[Selection],
    opts: &RunOptions,
    dump_ptx: Option<&std::path::Path>,
    open: Opener,
) -> Result<crate::compare::CompareReport> {
    let gpu = open(device)?;
    let mut progress = Progress::new(steps(selection), args.quiet);
    let mut report = crate::compare::run::compare(&gpu, selection, opts, dump_ptx, |msg| progress.step(msg))?;
    progress.finish();
    report.date = Some(crate::date::utc_date(SystemTime::now()));
    Ok(report)
}

pub fn compare(args: CompareArgs, open: Opener) -> Result<Outcome> {
    let (selection, opts) = suite_options(&args.suite)?;
    if let Some(path) = &args.json {
        output::check_file(path)?;
    }
    if let Some(dir) = &args.dump_ptx {
        output::check_dir(dir)?;
    }
    let human = Human::beside(args.json.as_deref());
    let mut reports = Vec::new();
    for (i, d) in args.suite.device.ordinals()?.into_iter().enumerate() {
        let report = run_comparison(&args.suite, d, &selection, &opts, args.dump_ptx.as_deref(), open)?;
        human.print(&format!(
            "{}{}",
            if i > 0 { "\n" } else { "" },
            crate::compare::render::render(&report)
        ));
        reports.push(report);
    }
    let failures = reports.iter().map(|r| r.failures()).sum();
    if let Some(path) = &args.json {
        write_per_device(path, "comparisons", reports)?;
    }
    Ok(outcome(failures))
}
