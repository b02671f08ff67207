//! The `coalesce` command line: `run` (the default), `report`, `compare`, `explain`,
//! `info`, `list`, `check`, `calibrate`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use clap::{Args, Parser, Subcommand};

use crate::device::Gpu;
use crate::error::Result;
use crate::experiments::{self, ALL, Selection};
use crate::explain::{self, model::Model, ncu};
use crate::harness::{self, RunOptions};
use crate::progress::Progress;
use crate::ptx;
use crate::report::{self, Results};
use crate::table::{self, ExperimentBaseline, Report};
use crate::timing::Reps;
use crate::units::parse_size;

#[derive(Debug, Parser)]
#[command(
    name = "coalesce",
    version,
    about = "Rust GPU kernels that show and measure memory coalescing",
    long_about = "Runs pairs of Rust kernels that do the same work with good and bad memory access \
                  patterns, validates every result against a CPU reference, and reports effective \
                  bandwidth next to the device's peak and a device-to-device copy.\n\n\
                  With no command, runs the whole suite (`coalesce run`).",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run experiments and print the table (the default).
    Run(RunArgs),
    /// Run experiments and write report.md, results.json and SVG plots to a directory.
    Report(ReportArgs),
    /// Run each Rust kernel beside its CUDA C++ twin (NVRTC) and matmul beside cuBLAS.
    Compare(CompareArgs),
    /// Predict on the CPU (no GPU needed) how each kernel's memory accesses coalesce,
    /// per source line: sectors per warp request, useful bytes, bank conflicts.
    Explain(ExplainArgs),
    /// Show the device, its peak bandwidth, the kernels in the embedded PTX, and
    /// whether NVRTC and cuBLAS (for `compare`) can be loaded.
    Info {
        /// CUDA device: an ordinal, a list such as 0,1, or all.
        #[arg(long, value_parser = device_arg, default_value = "0")]
        device: DeviceArg,
    },
    /// List experiments and their variants (no GPU needed).
    List {
        /// One EXPERIMENT/VARIANT per line, for scripts.
        #[arg(long)]
        names: bool,
    },
    /// Validate every kernel at awkward sizes (1, 31, 33, 4095, 2^20+7 elements;
    /// non-square matrices), without timing: for sanitizers and new GPUs.
    Check {
        /// Experiments to check, as EXPERIMENT or EXPERIMENT/VARIANT (default: all).
        experiments: Vec<String>,
        /// CUDA device: an ordinal, a list such as 0,1, or all.
        #[arg(long, value_parser = device_arg, default_value = "0")]
        device: DeviceArg,
        /// Seed for the random inputs.
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
    },
    /// Measure this GPU's profile for `explain`'s predictions (copy ceiling, DRAM read
    /// granularity, idle and loaded latency, threads per SM) and write it as JSON.
    Calibrate(CalibrateArgs),
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// The profile file (default: coalesce-profile-<device>.json in the current folder).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A smoke test: smaller arrays, fewer strides and repetitions (not a profile to use).
    #[arg(long)]
    pub quick: bool,
    /// No progress bar on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Experiments to explain, as EXPERIMENT or EXPERIMENT/VARIANT (default: all).
    pub experiments: Vec<String>,
    /// Bytes per array, as for `run` (default: each experiment's default on an H100);
    /// it sets the grid, of which a sample of blocks is emulated.
    #[arg(long, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Matrix shape, as for `run`: ROWSxCOLS for transpose, MxNxK for matmul.
    #[arg(long, value_parser = shape_arg)]
    pub shape: Option<ShapeArg>,
    /// The coalescing rules: sm70 (Volta and later) or the compute capability 1.x
    /// half-warp rules, for teaching.
    #[arg(long, value_enum, default_value_t = Model::Sm70)]
    pub model: Model,
    /// Blocks to emulate per kernel, spread over the grid (the whole grid if it has fewer).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub blocks: u32,
    /// Also write the analysis (or, with --against-ncu, the comparison) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Compare the predictions with Nsight Compute results: a folder of
    /// EXPERIMENT.VARIANT.csv files as `scripts/gpu-run.sh ncu` writes them (pass
    /// the --size they were measured at).
    #[arg(long, value_name = "DIR")]
    pub against_ncu: Option<PathBuf>,
    /// Predict each bandwidth kernel's DRAM bytes, time and % of copy on a GPU: a
    /// profile file written by `coalesce calibrate`, or the name of a GPU whose
    /// profile ships with coalesce. Sizes and grids are then that GPU's.
    #[arg(long, value_name = "FILE|GPU")]
    pub profile: Option<String>,
    /// With --profile: set each prediction beside what a run measured on that GPU
    /// (a `run --json` file or a report's results.json).
    #[arg(long, value_name = "FILE", requires = "profile")]
    pub against_run: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args, Default)]
pub struct RunArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Directory for report.md, results.json and the plots (made if missing).
    #[arg(long, value_name = "DIR", default_value = "coalesce-report")]
    pub out: PathBuf,
    /// Skip the comparison with the CUDA C++ twins and cuBLAS: Rust kernels only.
    #[arg(long)]
    pub rust_only: bool,
    /// Render saved results instead of running (no GPU needed): a results.json from
    /// `report`, or a file from `run --json` or `compare --json`. Repeat it with
    /// one file per GPU to compare the GPUs side by side.
    #[arg(long, value_name = "FILE")]
    pub from: Vec<PathBuf>,
    /// Set `explain`'s predictions beside the measurements (a table, and in the
    /// stride and good-against-bad plots): a profile file from `coalesce calibrate`
    /// or a shipped profile's GPU name, of the GPU the results come from.
    #[arg(long, value_name = "FILE|GPU")]
    pub profile: Option<String>,
}

#[derive(Debug, Args, Default)]
pub struct CompareArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Also write the comparison as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the PTX of both sides (EXPERIMENT.cpp.ptx, rust-kernels.ptx) into DIR.
    #[arg(long, value_name = "DIR", hide = true)]
    pub dump_ptx: Option<PathBuf>,
}

/// What to run and how: shared by `run`, `report` and `compare`.
#[derive(Debug, Args, Default)]
pub struct SuiteArgs {
    /// Experiments to run, as EXPERIMENT or EXPERIMENT/VARIANT (default: all).
    pub experiments: Vec<String>,
    /// Bytes per array, e.g. 256M or 1G (default: 8 x the L2 size, at least 256 MiB).
    #[arg(long, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Matrix shape: ROWSxCOLS for transpose, MxNxK for matmul (overrides --size for them).
    #[arg(long, value_parser = shape_arg)]
    pub shape: Option<ShapeArg>,
    /// Timed launches per variant; the table shows their median.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: u32,
    /// Untimed launches before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// CUDA device: an ordinal, a list such as 0,1, or all (each GPU in turn).
    #[arg(long, value_parser = device_arg, default_value = "0")]
    pub device: DeviceArg,
    /// Seed for the random inputs.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// No progress bar on stderr (it is only drawn on a terminal anyway).
    #[arg(long, short)]
    pub quiet: bool,
}

fn size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// A parsed `--shape` (a newtype: clap treats a bare `Vec` as a list of values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeArg(pub Vec<usize>);

fn shape_arg(s: &str) -> std::result::Result<ShapeArg, String> {
    crate::units::parse_shape(s)
        .map(ShapeArg)
        .map_err(|e| e.to_string())
}

/// `--device`: one ordinal, a list (`0,1`), or `all` of the host's GPUs, in turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceArg {
    Some(Vec<u32>),
    All,
}

impl Default for DeviceArg {
    fn default() -> Self {
        DeviceArg::Some(vec![0])
    }
}

fn device_arg(s: &str) -> std::result::Result<DeviceArg, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(DeviceArg::All);
    }
    let mut list = Vec::new();
    for part in s.split(',') {
        let n: u32 = part
            .trim()
            .parse()
            .map_err(|_| format!("{part:?} is not a device ordinal (use 0, 0,1 or all)"))?;
        if list.contains(&n) {
            return Err(format!("device {n} is listed twice"));
        }
        list.push(n);
    }
    Ok(DeviceArg::Some(list))
}

impl DeviceArg {
    /// The ordinals to run on, checked against the host's GPUs before any work.
    fn ordinals(&self) -> Result<Vec<u32>> {
        match self {
            DeviceArg::Some(list) if list.len() == 1 => Ok(list.clone()),
            DeviceArg::Some(list) => {
                let count = crate::device::count()?;
                match list.iter().find(|&&d| d >= count) {
                    Some(&requested) => Err(crate::Error::DeviceOutOfRange { requested, count }),
                    None => Ok(list.clone()),
                }
            }
            DeviceArg::All => Ok((0..crate::device::count()?).collect()),
        }
    }
}

/// What a command ended with, for the exit code.
pub enum Outcome {
    Ok,
    /// Ran, but this many kernels failed validation.
    Invalid(usize),
}

/// How commands open a GPU: [`Gpu::open`], or in tests one with substituted kernels.
pub type Opener<'a> = &'a dyn Fn(u32) -> Result<Gpu>;

/// The whole program: parses `args` (the first is the program name), runs the
/// command, prints the one-line error if any, and returns the exit code: 0, 1 for a
/// failed run or a kernel that failed validation, 2 for a bad command line.
pub fn main_with<I, T>(args: I, open: Opener) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // --help and --version print as clap formats them.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return 0;
        }
        Err(e) => {
            eprintln!("{}", one_line(&e.to_string()));
            return 2;
        }
    };
    match execute_on(cli, open) {
        Ok(Outcome::Ok) => 0,
        Ok(Outcome::Invalid(n)) => {
            eprintln!("error: {n} kernel(s) failed validation (see NOT VALIDATED above)");
            1
        }
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code() as u8
        }
    }
}

/// clap's error as one line, not its usage block: the message, with the possible
/// values and "a similar argument exists" tips it gives on later lines.
fn one_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = lines.next().unwrap_or("error: invalid arguments").to_string();
    for l in lines {
        if l.starts_with("[possible values") {
            out = format!("{out} {l}");
        } else if l.starts_with("tip:") {
            out = format!("{out}; {l}");
        }
    }
    format!("{out} (see --help)")
}

/// The commands, for "did you mean" when a first word is neither one nor an experiment.
const COMMANDS: [&str; 8] = [
    "run",
    "report",
    "compare",
    "explain",
    "info",
    "list",
    "check",
    "calibrate",
];

/// Edit distance (insertions, deletions, substitutions, adjacent swaps).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// `coalesce lsit` reads as `run lsit`: when the word is no experiment but is close to
/// a command, say so.
fn suggest_command(words: &[String], e: crate::Error) -> crate::Error {
    match (&e, words.first()) {
        (crate::Error::UnknownExperiment { name, known }, Some(first)) if first == name => {
            match COMMANDS.iter().find(|c| distance(c, name) <= 2) {
                Some(c) => crate::Error::UnknownExperiment {
                    name: name.clone(),
                    known: format!("{known}; did you mean the command `{c}`?"),
                },
                None => e,
            }
        }
        _ => e,
    }
}

pub fn execute(cli: Cli) -> Result<Outcome> {
    execute_on(cli, &Gpu::open)
}

/// Runs a parsed command, opening the GPU with `open`.
pub fn execute_on(cli: Cli, open: Opener) -> Result<Outcome> {
    match cli.command {
        None => {
            let words = cli.run.suite.experiments.clone();
            run(cli.run, open).map_err(|e| suggest_command(&words, e))
        }
        Some(Command::Run(args)) => run(args, open),
        Some(Command::Report(args)) => write_report(args, open),
        Some(Command::Compare(args)) => compare(args, open),
        Some(Command::Info { device }) => {
            for d in device.ordinals()? {
                info(d, open)?;
            }
            Ok(Outcome::Ok)
        }
        Some(Command::Explain(args)) => explain_command(args),
        Some(Command::Calibrate(args)) => calibrate(args, open),
        Some(Command::List { names }) => {
            print!("{}", if names { list_names() } else { list() });
            Ok(Outcome::Ok)
        }
        Some(Command::Check {
            experiments,
            device,
            seed,
        }) => {
            let selection = experiments::select(&experiments)?;
            let mut failed = 0;
            for d in device.ordinals()? {
                let gpu = open(d)?;
                println!("{}", table::device_line(&gpu.info, ptx::ARCH));
                let rows = crate::check::run_checks(&gpu, &selection, seed)?;
                print!("{}", crate::check::render(&rows));
                failed += rows.iter().filter(|r| !r.validated).count();
            }
            Ok(match failed {
                0 => Outcome::Ok,
                n => Outcome::Invalid(n),
            })
        }
    }
}

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
    let report = explain::explain(selection, opts, |msg| progress.step(&format!("emulating {msg}")));
    progress.finish();
    report
}

fn explain_command(args: ExplainArgs) -> Result<Outcome> {
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
    };
    if let Some(dir) = &args.against_ncu {
        let found = ncu::read_dir(dir)?;
        let selection = experiments::select(&ncu::variants(&found.measured))?;
        // ncu counts 32-byte sectors: compare with the sm70 rules whatever --model says.
        opts.model = Model::Sm70;
        let report = emulate(&selection, &opts, args.quiet)?;
        let rows = ncu::compare(&report, &found.measured);
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
        print!("{}", explain::measured::render(&rows, &run.device.name));
        if let Some(path) = &args.json {
            table::write_json(path, &rows)?;
        }
        return Ok(Outcome::Ok);
    }
    print!("{}", explain::render::render(&report));
    if let Some(path) = &args.json {
        table::write_json(path, &report)?;
    }
    Ok(Outcome::Ok)
}

/// `report --profile`: predictions for the results of the profile's GPU (one GPU's
/// results with another's profile is refused; with several GPUs, the profile's).
fn with_predictions(
    all: &mut [Results],
    profile: Option<crate::profile::Profile>,
    origin: Option<&str>,
) -> Result<()> {
    let (Some(profile), Some(origin)) = (profile, origin) else {
        return Ok(());
    };
    let several = all.len() > 1;
    let mut used = false;
    for r in all.iter_mut() {
        if several && r.run.device.name != profile.device {
            continue;
        }
        r.predicted = report::predicted::predict(r, profile.clone(), origin)?;
        used = true;
    }
    if !used {
        return Err(crate::Error::BadProfile {
            path: origin.to_string(),
            why: format!(
                "measured on {}, which none of the results come from",
                profile.device
            ),
        });
    }
    Ok(())
}

/// `--profile`: a file, or a shipped profile by its GPU's name.
fn profile_named(what: &str) -> Result<crate::profile::Profile> {
    use crate::profile::{Profile, SHIPPED};
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
fn calibrate(args: CalibrateArgs, open: Opener) -> Result<Outcome> {
    use crate::calibrate::{self as cal, Plan};
    // An unwritable file fails now, not after minutes of measuring; the default name
    // needs the device's name, so until the GPU is open, its folder is what is checked.
    let probe = args.out.clone().unwrap_or_else(|| cal::default_path(""));
    table::check_writable(&probe)?;
    let gpu = open(args.device)?;
    let path = args.out.unwrap_or_else(|| cal::default_path(&gpu.info.name));
    table::check_writable(&path)?;
    println!("calibrating {}", table::device_line(&gpu.info, ptx::ARCH));
    let plan = Plan { quick: args.quick };
    let mut progress = Progress::new(plan.steps(), args.quiet);
    let c = cal::measure(&gpu, plan, |msg| progress.step(msg))?;
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
    crate::profile::Profile::parse(&text, &path.display().to_string())?;
    table::write_json(&path, &c.profile)?;
    let note = if args.quick {
        " (--quick: a smoke test)"
    } else {
        ""
    };
    println!("profile: {}{note}", path.display());
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

fn info(device: u32, open: Opener) -> Result<Outcome> {
    println!("kernels: PTX for {} ({} bytes)", ptx::ARCH, ptx::PTX.len());
    println!("entry points: {}", ptx::entry_points(ptx::PTX).join(", "));
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
fn plan(args: &SuiteArgs) -> Result<(Vec<Selection>, RunOptions)> {
    let selection = experiments::select(&args.experiments)?;
    let shape = args.shape.clone().map(|s| s.0);
    check_shape(&selection, shape.as_deref())?;
    let plan = RunOptions {
        size: args.size,
        shape,
        reps: Reps {
            warmup: args.warmup as usize,
            timed: args.reps as usize,
        },
        seed: args.seed,
    };
    Ok((selection, plan))
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
    plan: &RunOptions,
    open: Opener,
) -> Result<Report> {
    let gpu = open(device)?;
    let mut progress = Progress::new(steps(selection), args.quiet);
    let mut report = Report {
        schema: crate::table::SCHEMA,
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        device: gpu.info.clone(),
        ptx_arch: ptx::ARCH.to_string(),
        peak_gb_per_s: gpu.info.peak_gb_per_s(),
        baselines: Vec::new(),
        rows: Vec::new(),
    };
    for s in selection {
        let measured = harness::measure(&gpu, s, plan, None, |_| Ok(()), |msg| progress.step(msg))?;
        report.baselines.push(ExperimentBaseline {
            experiment: s.experiment.name.to_string(),
            baseline: measured.baseline,
        });
        report
            .rows
            .extend(measured.rows.into_iter().map(|(rust, _)| rust));
    }
    progress.finish();
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

fn run(args: RunArgs, open: Opener) -> Result<Outcome> {
    let (selection, plan) = plan(&args.suite)?;
    // A --json path that cannot be written fails now, not after the whole run.
    if let Some(path) = &args.json {
        table::check_writable(path)?;
    }
    let mut reports = Vec::new();
    for (i, d) in args.suite.device.ordinals()?.into_iter().enumerate() {
        let report = run_suite(&args.suite, d, &selection, &plan, open)?;
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
    plan: &RunOptions,
    dump_ptx: Option<&std::path::Path>,
    open: Opener,
) -> Result<crate::compare::CompareReport> {
    let gpu = open(device)?;
    let mut progress = Progress::new(steps(selection), args.quiet);
    let report = crate::compare::run::compare(&gpu, selection, plan, dump_ptx, |msg| progress.step(msg))?;
    progress.finish();
    Ok(report)
}

fn compare(args: CompareArgs, open: Opener) -> Result<Outcome> {
    let (selection, plan) = plan(&args.suite)?;
    if let Some(path) = &args.json {
        table::check_writable(path)?;
    }
    let mut reports = Vec::new();
    for (i, d) in args.suite.device.ordinals()?.into_iter().enumerate() {
        let report = run_comparison(&args.suite, d, &selection, &plan, args.dump_ptx.as_deref(), open)?;
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
    let profile = args.profile.as_deref().map(profile_named).transpose()?;
    let mut all = report::gpus::load_all(&args.from)?;
    with_predictions(&mut all, profile, args.profile.as_deref())?;
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

fn write_report(args: ReportArgs, open: Opener) -> Result<Outcome> {
    if !args.from.is_empty() {
        return report_from(&args);
    }
    let (selection, plan) = plan(&args.suite)?;
    // A bad --out or --profile fails now, not after the whole suite has run; nothing
    // is made until there is something to write.
    report::check_dir(&args.out)?;
    let profile = args.profile.as_deref().map(profile_named).transpose()?;
    let mut all = Vec::new();
    for d in args.suite.device.ordinals()? {
        let start = Instant::now();
        all.push(if args.rust_only {
            let run = run_suite(&args.suite, d, &selection, &plan, open)?;
            print!("{}", table::render(&run));
            Results {
                date: report::utc_date(SystemTime::now()),
                elapsed_s: start.elapsed().as_secs_f64(),
                run,
                compare: None,
                predicted: Vec::new(),
            }
        } else {
            // The comparison times the same Rust kernels through the same harness
            // (and falls back to them alone where NVRTC is missing), so it replaces
            // the run.
            let c = run_comparison(&args.suite, d, &selection, &plan, None, open)?;
            print!("{}", crate::compare::render::render(&c));
            Results::of_comparison(
                report::utc_date(SystemTime::now()),
                start.elapsed().as_secs_f64(),
                c,
            )
        });
    }
    with_predictions(&mut all, profile, args.profile.as_deref())?;
    let files = report::write_from(&args.out, &all)?;
    let took: f64 = all.iter().map(|r| r.elapsed_s).sum();
    println!(
        "\nreport: {} ({} files, run took {took:.0} s)",
        files[0].display(),
        files.len()
    );
    Ok(outcome(all.iter().map(Results::failures).sum()))
}
