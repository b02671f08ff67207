//! The `coalesce` command line: `run` (the default), `info`, `list`.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::device::Gpu;
use crate::error::Result;
use crate::experiments::{self, ALL};
use crate::harness::{self, Plan, Reps};
use crate::ptx;
use crate::table::{self, ExperimentBaseline, Report};
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
    /// Show the device, its peak bandwidth, and the kernels in the embedded PTX.
    Info {
        /// CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        device: u32,
    },
    /// List experiments and their variants (no GPU needed).
    List,
    /// Validate every kernel at awkward sizes (1, 31, 33, 4095, 2^20+7 elements;
    /// non-square matrices), without timing: for sanitizers and new GPUs.
    Check {
        /// Experiments to check, as EXPERIMENT or EXPERIMENT/VARIANT (default: all).
        experiments: Vec<String>,
        /// CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        device: u32,
        /// Seed for the random inputs.
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
    },
}

#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Experiments to run, as EXPERIMENT or EXPERIMENT/VARIANT (default: all).
    pub experiments: Vec<String>,
    /// Bytes per array, e.g. 256M or 1G (default: 8 x the L2 size, at least 256 MiB).
    #[arg(long, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Matrix shape: ROWSxCOLS for transpose, MxNxK for matmul (overrides --size for them).
    #[arg(long, value_parser = shape_arg)]
    pub shape: Option<Shape>,
    /// Timed launches per variant; the table shows their median.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: u32,
    /// Untimed launches before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Seed for the random inputs.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

fn size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// A parsed `--shape` (a newtype: clap treats a bare `Vec` as a list of values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape(pub Vec<usize>);

fn shape_arg(s: &str) -> std::result::Result<Shape, String> {
    crate::units::parse_shape(s).map(Shape).map_err(|e| e.to_string())
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
            // One line, not clap's usage block: the message already says what is wrong.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("{first} (see --help)");
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

pub fn execute(cli: Cli) -> Result<Outcome> {
    execute_on(cli, &Gpu::open)
}

/// Runs a parsed command, opening the GPU with `open`.
pub fn execute_on(cli: Cli, open: Opener) -> Result<Outcome> {
    match cli.command {
        None => run(cli.run, open),
        Some(Command::Run(args)) => run(args, open),
        Some(Command::Info { device }) => info(device, open),
        Some(Command::List) => {
            print!("{}", list());
            Ok(Outcome::Ok)
        }
        Some(Command::Check {
            experiments,
            device,
            seed,
        }) => {
            let selection = experiments::select(&experiments)?;
            let gpu = open(device)?;
            let rows = crate::check::run_checks(&gpu, &selection, seed)?;
            print!("{}", crate::check::render(&rows));
            Ok(match rows.iter().filter(|r| !r.validated).count() {
                0 => Outcome::Ok,
                n => Outcome::Invalid(n),
            })
        }
    }
}

/// The text of `coalesce list`.
pub fn list() -> String {
    let mut out = String::new();
    for e in ALL {
        out.push_str(&format!("{:<10} {}\n", e.name(), e.about()));
        out.push_str(&format!("{:<10}   variants: {}\n", "", e.variants().join(", ")));
    }
    out
}

fn info(device: u32, open: Opener) -> Result<Outcome> {
    println!("kernels: PTX for {} ({} bytes)", ptx::ARCH, ptx::PTX.len());
    println!("entry points: {}", ptx::entry_points(ptx::PTX).join(", "));
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
        crate::units::format_bytes(harness::default_size(&gpu.info))
    );
    Ok(Outcome::Ok)
}

fn run(args: RunArgs, open: Opener) -> Result<Outcome> {
    // Parse everything the user typed before touching the GPU.
    let selection = experiments::select(&args.experiments)?;
    let shape = args.shape.map(|s| s.0);
    if let Some(shape) = &shape
        && !selection.iter().any(|s| s.experiment.shape_rank() == shape.len())
    {
        return Err(crate::Error::BadShape {
            input: shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"),
            why: "no selected experiment takes a shape of that rank (transpose: ROWSxCOLS, matmul: MxNxK)"
                .into(),
        });
    }
    // A --json path that cannot be written fails now, not after the whole run.
    if let Some(path) = &args.json {
        table::check_writable(path)?;
    }
    let gpu = open(args.device)?;
    let plan = Plan {
        size: args.size,
        shape,
        reps: Reps {
            warmup: args.warmup as usize,
            timed: args.reps as usize,
        },
        seed: args.seed,
    };
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut report = Report {
        coalesce_version: env!("CARGO_PKG_VERSION").to_string(),
        device: gpu.info.clone(),
        ptx_arch: ptx::ARCH.to_string(),
        peak_gb_per_s: gpu.info.peak_gb_per_s(),
        baselines: Vec::new(),
        rows: Vec::new(),
    };
    for s in &selection {
        let (baseline, rows) =
            harness::run_experiment(&gpu, s.experiment, s.variants.as_deref(), &plan, |msg| {
                if show {
                    eprintln!("running {msg}");
                }
            })?;
        report.baselines.push(ExperimentBaseline {
            experiment: s.experiment.name().to_string(),
            baseline,
        });
        report.rows.extend(rows);
    }
    print!("{}", table::render(&report));
    if let Some(path) = &args.json {
        table::write_json(path, &report)?;
    }
    Ok(match report.failures() {
        0 => Outcome::Ok,
        n => Outcome::Invalid(n),
    })
}
