//! What each `coalesce` command does, once [`crate::cli`] has parsed it.

use std::time::{Instant, SystemTime};

use crate::args::{CalibrateArgs, CompareArgs, DeviceArg, ExplainArgs, ReportArgs, RunArgs, SuiteArgs};
use crate::device::Gpu;
use crate::error::Result;
use crate::experiments::{self, ALL, Selection};
use crate::explain::{self, emulate::model::Model, ncu};
use crate::harness::{self, RunOptions};
use crate::profile::Profile;
use crate::progress::Progress;
use crate::ptx;
use crate::report::{self, Results};
use crate::table::{self, ExperimentBaseline, Report};
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

/// Variants in a selection: one progress step each.
fn variant_count(selection: &[Selection]) -> u64 {
    selection.iter().map(|s| s.count() as u64).sum()
}

/// Emulates `selection` with a progress bar.
fn emulate(selection: &[Selection], opts: &explain::Options, quiet: bool) -> Result<explain::ExplainReport> {
    let mut progress = Progress::new(variant_count(selection), quiet);
    let report = explain::explain(selection, opts, |step| match step {
        explain::Step::Blocks {
            variant,
            done,
            of,
            left,
        } => {
            // The time left, once it is more than a glance.
            let left = if left.as_secs() >= 5 {
                format!(", about {} left", crate::progress::rough(left))
            } else {
                String::new()
            };
            progress.note(&format!("emulating {variant}: block {done} of {of}{left}"))
        }
        explain::Step::Explained(variant) => progress.step(&format!("emulated {variant}")),
    });
    progress.finish();
    report
}

pub fn explain_command(args: ExplainArgs) -> Result<Outcome> {
    // A --json path that cannot be written fails now, not after the analysis.
    if let Some(path) = &args.json {
        table::check_writable(path)?;
    }
    let mut opts = explain::Options {
        size: args.size,
        shape: args.shape.map(|s| s.0),
        model: args.model,
        blocks: args.blocks as usize,
        profile: args.profile.as_deref().map(profile_named).transpose()?,
        memory_limit: explain::EMULATION_BYTES,
    };
    if let Some(dir) = &args.against_ncu {
        let found = ncu::read_dir(dir)?;
        let selection = experiments::select(&ncu::variants(&found.kernels))?;
        // ncu counts 32-byte sectors: compare with the sm70 rules whatever --model says.
        opts.model = Model::Sm70;
        let report = emulate(&selection, &opts, args.quiet)?;
        let rows = ncu::compare(&report, &found.kernels);
        print!("{}", ncu::render(&rows, &report, &found));
        if let Some(path) = &args.json {
            table::write_json(path, &rows)?;
        }
        return Ok(Outcome::Ok);
    }
    let selection = experiments::select(&args.experiments)?;
    check_shape(&selection, opts.shape.as_deref())?;
    // The run to compare with is read before the analysis, so a bad file fails first.
    let run = match &args.against_run {
        Some(path) => {
            let mut all = report::gpus::load(path)?;
            if all.len() != 1 {
                return Err(crate::Error::BadResults {
                    path: path.display().to_string(),
                    why: "holds several GPUs' runs; give one".into(),
                });
            }
            Some((all.remove(0).run, path.display().to_string()))
        }
        None => None,
    };
    let report = emulate(&selection, &opts, args.quiet)?;
    if let Some((run, origin)) = run {
        let rows = explain::measured::against(&report, &run, &origin)?;
        let products = explain::measured::against_products(&report, &run, &origin)?;
        if !rows.is_empty() || products.is_empty() {
            print!("{}", explain::measured::render(&rows, &run.device.name));
        }
        if !products.is_empty() {
            print!(
                "{}",
                explain::measured::render_products(&products, &run.device.name)
            );
        }
        if let Some(path) = &args.json {
            table::write_json(
                path,
                &serde_json::json!({ "bandwidth": rows, "products": products }),
            )?;
        }
        return Ok(Outcome::Ok);
    }
    print!("{}", explain::render::render(&report));
    if let Some(path) = &args.json {
        table::write_json(path, &report)?;
    }
    Ok(Outcome::Ok)
}

/// `report --profile` (repeatable): each profile's predictions for the results of
/// its GPU (one GPU's results with another's profile is refused; with several GPUs,
/// each profile goes to its own GPU's results and must match one of them), with a
/// progress bar over the kernels emulated.
fn with_predictions(all: &mut [Results], profiles: Vec<(Profile, String)>, quiet: bool) -> Result<()> {
    let several = all.len() > 1;
    let applies = |r: &Results, p: &Profile| !several || r.run.device.name == p.device;
    let steps = profiles
        .iter()
        .flat_map(|(p, _)| {
            all.iter()
                .filter(move |r| applies(r, p))
                .map(move |r| report::predicted::steps(r, p))
        })
        .sum();
    let mut progress = Progress::new(steps, quiet);
    for (profile, origin) in profiles {
        let mut used = false;
        for r in all.iter_mut() {
            if !applies(r, &profile) {
                continue;
            }
            let device = r.run.device.name.clone();
            r.predicted = report::predicted::predict(r, profile.clone(), &origin, |kernel| {
                progress.step(&format!("predicted {kernel} on {device}"))
            })?;
            used = true;
        }
        if !used {
            return Err(crate::Error::BadProfile {
                path: origin,
                why: format!(
                    "measured on {}, which none of the results come from",
                    profile.device
                ),
            });
        }
    }
    progress.finish();
    Ok(())
}

/// Every `--profile` of a report, read before any work: `None` when none is given,
/// no profile for `--profile none`.
fn profiles_named(names: &[String]) -> Result<Option<Vec<(Profile, String)>>> {
    if names.is_empty() {
        return Ok(None);
    }
    if names.iter().any(|n| n == "none") {
        if names.len() > 1 {
            return Err(crate::Error::BadProfile {
                path: "none".into(),
                why: "--profile none leaves predictions out; it takes no other --profile".into(),
            });
        }
        return Ok(Some(Vec::new()));
    }
    names
        .iter()
        .map(|n| Ok((profile_named(n)?, n.clone())))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// A live report's profiles when none is named: the one that ships for each GPU
/// that ran, where one does (the driver's exact name).
fn shipped_profiles(devices: &[&str]) -> Result<Vec<(Profile, String)>> {
    let mut out: Vec<(Profile, String)> = Vec::new();
    for &device in devices {
        if out.iter().any(|(p, _)| p.device == device) {
            continue;
        }
        if let Some((name, text)) = crate::profile::SHIPPED.iter().find(|(name, _)| *name == device) {
            let origin = format!("the shipped profile of {name}");
            out.push((Profile::parse(text, &origin)?, origin));
        }
    }
    Ok(out)
}

/// `--profile`: a file, or a shipped profile by its GPU's name.
fn profile_named(what: &str) -> Result<Profile> {
    use crate::profile::SHIPPED;
    let path = std::path::Path::new(what);
    if path.exists() {
        return Profile::load(path);
    }
    Profile::shipped(what).unwrap_or_else(|| {
        let shipped: Vec<&str> = SHIPPED.iter().map(|(name, _)| *name).collect();
        Err(crate::Error::BadProfile {
            path: what.to_string(),
            why: format!(
                "no such file, and no profile ships for a GPU of that name (shipped: {})",
                if shipped.is_empty() {
                    "none yet".to_string()
                } else {
                    shipped.join(", ")
                }
            ),
        })
    })
}

/// `coalesce calibrate`: measures the profile and writes it, or, when a kernel fails
/// validation, says which and writes nothing.
pub fn calibrate(args: CalibrateArgs, open: Opener) -> Result<Outcome> {
    use crate::calibrate::{self as cal, Effort};
    // An unwritable file fails now, not after minutes of measuring; the default name
    // needs the device's name, so until the GPU is open, its folder is what is checked.
    let probe = args.out.clone().unwrap_or_else(|| cal::default_path(""));
    table::check_writable(&probe)?;
    let gpu = open(args.device)?;
    let path = args.out.unwrap_or_else(|| cal::default_path(&gpu.info.name));
    table::check_writable(&path)?;
    println!("calibrating {}", table::device_line(&gpu.info, ptx::ARCH));
    let effort = Effort { quick: args.quick };
    let mut progress = Progress::new(effort.steps(), args.quiet);
    let c = cal::measure(&gpu, effort, |msg| progress.step(msg))?;
    progress.finish();
    if !c.failures.is_empty() {
        for f in &c.failures {
            println!("NOT VALIDATED {f}");
        }
        return Ok(Outcome::Invalid(c.failures.len()));
    }
    print!("{}", cal::summary(&c.profile, &c.notes));
    // What the loader would refuse is refused here, before a file exists.
    let text = serde_json::to_string(&c.profile)?;
    Profile::parse(&text, &path.display().to_string())?;
    table::write_json(&path, &c.profile)?;
    let note = if args.quick {
        " (--quick: a smoke test)"
    } else {
        ""
    };
    println!("profile: {}{note}", path.display());
    Ok(Outcome::Ok)
}

/// `coalesce refit`: every file read and refitted before any is written, so a bad one
/// leaves them all as they were; then each written as `calibrate` writes a profile.
pub fn refit(paths: &[std::path::PathBuf]) -> Result<Outcome> {
    let refitted = paths
        .iter()
        .map(|path| {
            let before = Profile::load_as_written(path)?;
            let mut after = before.clone();
            crate::profile::refit(&mut after);
            table::check_writable(path)?;
            Ok((path, before, after))
        })
        .collect::<Result<Vec<_>>>()?;
    for (path, before, after) in refitted {
        table::write_json(path, &after)?;
        println!(
            "{}: dram_read_granularity {} -> {} B, loaded_latency_ns {:.3} -> {:.3}, queueing_latency_ns {:.3} -> {:.3}{}",
            path.display(),
            before.dram_read_granularity,
            after.dram_read_granularity,
            before.loaded_latency_ns,
            after.loaded_latency_ns,
            before.queueing_latency_ns,
            after.queueing_latency_ns,
            if before == after { " (unchanged)" } else { "" }
        );
    }
    Ok(Outcome::Ok)
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
    }
    out
}

/// `coalesce check`: every selected kernel at awkward sizes, on each device.
pub fn check(experiments: &[String], device: &DeviceArg, seed: u64, open: Opener) -> Result<Outcome> {
    let selection = experiments::select(experiments)?;
    let mut failed = 0;
    for d in device.ordinals()? {
        let gpu = open(d)?;
        println!("{}", table::device_line(&gpu.info, ptx::ARCH));
        let rows = crate::check::run_checks(&gpu, &selection, seed)?;
        print!("{}", crate::check::render(&rows));
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
    println!("kernels: PTX for {} ({} bytes)", ptx::ARCH, ptx::PTX.len());
    println!("entry points: {}", ptx::entry_points(ptx::PTX).join(", "));
    println!(
        "sm_80 kernels (cp.async; loaded on GPUs from sm_80): PTX for {} ({} bytes): {}",
        ptx::SM80_ARCH,
        ptx::PTX_SM80.len(),
        ptx::entry_points(ptx::PTX_SM80).join(", ")
    );
    println!(
        "sm_90a kernels (the copy engine, wgmma, clusters; loaded on sm_90 GPUs only): PTX ({} bytes): {}",
        ptx::PTX_SM90A.len(),
        ptx::entry_points(ptx::PTX_SM90A).join(", ")
    );
    for line in crate::compare::toolkit::toolkit_lines() {
        println!("{line}");
    }
    let gpu = open(device)?;
    println!("device: {}", table::device_line(&gpu.info, ptx::ARCH));
    let (free, total) = gpu.memory()?;
    println!(
        "memory: {} free of {}",
        crate::units::format_bytes(free),
        crate::units::format_bytes(total)
    );
    println!(
        "default size per array: {}",
        crate::units::format_bytes(crate::experiment::DefaultSize::BeyondL2.bytes(&gpu.info))
    );
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
) -> Result<Report> {
    let gpu = open(device)?;
    harness::reserve_buffers(&gpu, selection, opts)?;
    let mut progress = Progress::new(steps(selection), args.quiet);
    let mut report = Report {
        schema: crate::table::SCHEMA,
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        date: None,
        device: gpu.info.clone(),
        ptx_arch: ptx::ARCH.to_string(),
        peak_gb_per_s: gpu.info.peak_gb_per_s(),
        baselines: Vec::new(),
        rows: Vec::new(),
    };
    for s in selection {
        let measured = harness::measure(&gpu, s, opts, None, None, |_| Ok(()), |msg| progress.step(msg))?;
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
        return table::write_json(path, &all.remove(0));
    }
    let mut doc = serde_json::Map::new();
    doc.insert("schema".into(), crate::table::SCHEMA.into());
    doc.insert("coalesce_version".into(), env!("CARGO_PKG_VERSION").into());
    doc.insert(key.into(), serde_json::to_value(all)?);
    table::write_json(path, &doc)
}

pub fn run(args: RunArgs, open: Opener) -> Result<Outcome> {
    let (selection, opts) = suite_options(&args.suite)?;
    // A --json path that cannot be written fails now, not after the whole run.
    if let Some(path) = &args.json {
        table::check_writable(path)?;
    }
    let mut reports = Vec::new();
    for (i, d) in args.suite.device.ordinals()?.into_iter().enumerate() {
        let report = run_suite(&args.suite, d, &selection, &opts, open)?;
        print!("{}{}", if i > 0 { "\n" } else { "" }, table::render(&report));
        reports.push(report);
    }
    let failures = reports.iter().map(Report::failures).sum();
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
        table::check_writable(path)?;
    }
    let mut reports = Vec::new();
    for (i, d) in args.suite.device.ordinals()?.into_iter().enumerate() {
        let report = run_comparison(&args.suite, d, &selection, &opts, args.dump_ptx.as_deref(), open)?;
        print!(
            "{}{}",
            if i > 0 { "\n" } else { "" },
            crate::compare::render::render(&report)
        );
        reports.push(report);
    }
    let failures = reports.iter().map(|r| r.failures()).sum();
    if let Some(path) = &args.json {
        write_per_device(path, "comparisons", reports)?;
    }
    Ok(outcome(failures))
}

/// `report --from`: saved results rendered, nothing run.
fn report_from(args: &ReportArgs) -> Result<Outcome> {
    let s = &args.suite;
    if !s.experiments.is_empty() || s.size.is_some() || s.shape.is_some() || args.rust_only {
        return Err(crate::Error::BadResults {
            path: "--from".into(),
            why: "renders saved results as they are; it takes no experiments, --size, --shape or --rust-only"
                .into(),
        });
    }
    report::check_dir(&args.out)?;
    // Saved results are rendered as they are: predictions only where asked for.
    let profiles = profiles_named(&args.profile)?.unwrap_or_default();
    let mut all = report::gpus::load_all(&args.from)?;
    with_predictions(&mut all, profiles, args.suite.quiet)?;
    let files = report::write_from(&args.out, &all)?;
    println!(
        "report: {} ({} files, from {} results file(s))",
        files[0].display(),
        files.len(),
        all.len()
    );
    Ok(match all.iter().map(Results::failures).sum() {
        0 => Outcome::Ok,
        n => Outcome::Invalid(n),
    })
}

pub fn write_report(args: ReportArgs, open: Opener) -> Result<Outcome> {
    if !args.from.is_empty() {
        return report_from(&args);
    }
    let (selection, opts) = suite_options(&args.suite)?;
    // A bad --out or --profile fails now, not after the whole suite has run; nothing
    // is made until there is something to write.
    report::check_dir(&args.out)?;
    let profiles = profiles_named(&args.profile)?;
    let mut all = Vec::new();
    for d in args.suite.device.ordinals()? {
        let start = Instant::now();
        all.push(if args.rust_only {
            let run = run_suite(&args.suite, d, &selection, &opts, open)?;
            print!("{}", table::render(&run));
            Results {
                elapsed_s: start.elapsed().as_secs_f64(),
                run,
                compare: None,
                predicted: Vec::new(),
            }
        } else {
            // The comparison times the same Rust kernels through the same harness
            // (and falls back to them alone where NVRTC is missing), so it replaces
            // the run.
            let c = run_comparison(&args.suite, d, &selection, &opts, None, open)?;
            print!("{}", crate::compare::render::render(&c));
            Results::of_comparison(start.elapsed().as_secs_f64(), c)
        });
    }
    let profiles = match profiles {
        Some(named) => named,
        None => {
            let devices: Vec<&str> = all.iter().map(|r| r.run.device.name.as_str()).collect();
            shipped_profiles(&devices)?
        }
    };
    with_predictions(&mut all, profiles, args.suite.quiet)?;
    let files = report::write_from(&args.out, &all)?;
    let took: f64 = all.iter().map(|r| r.elapsed_s).sum();
    println!(
        "\nreport: {} ({} files, run took {took:.0} s)",
        files[0].display(),
        files.len()
    );
    Ok(outcome(all.iter().map(Results::failures).sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_report_predicts_with_the_profile_that_ships_for_its_gpu() {
        let h100 = "NVIDIA H100 80GB HBM3";
        let got = shipped_profiles(&[h100, "NVIDIA B300", h100]).unwrap();
        assert_eq!(got.len(), 1, "one profile per GPU model");
        assert_eq!(got[0].0.device, h100);
        assert_eq!(got[0].1, format!("the shipped profile of {h100}"));
        // Only the exact name: a GPU named like a shipped one is another GPU.
        assert!(shipped_profiles(&["NVIDIA H100 PCIe"]).unwrap().is_empty());
        assert_eq!(shipped_profiles(&[h100, "NVIDIA H200"]).unwrap().len(), 2);
    }

    #[test]
    fn profile_none_means_no_predictions() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(profiles_named(&[]).unwrap().is_none());
        assert!(profiles_named(&names(&["none"])).unwrap().unwrap().is_empty());
        let named = profiles_named(&names(&["H200"])).unwrap().unwrap();
        assert_eq!(named[0].0.device, "NVIDIA H200");
        let e = profiles_named(&names(&["none", "H100"])).unwrap_err().to_string();
        assert!(e.contains("--profile none leaves predictions out"), "{e}");
    }
}
