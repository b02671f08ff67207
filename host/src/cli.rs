//! The `coalesce` command line: `run` (the default), `compare`, `info`, `list`.

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
    /// Run each Rust kernel beside its CUDA C++ twin (NVRTC) and matmul beside cuBLAS.
    Compare(CompareArgs),
    /// Show the device, its peak bandwidth, the kernels in the embedded PTX, and
    /// whether NVRTC and cuBLAS (for `compare`) can be loaded.
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

#[derive(Debug, Args, Default)]
pub struct CompareArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Write the PTX of both sides (EXPERIMENT.cpp.ptx, rust-kernels.ptx) into DIR.
    #[arg(long, value_name = "DIR", hide = true)]
    pub dump_ptx: Option<PathBuf>,
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

pub fn execute(cli: Cli) -> Result<Outcome> {
    match cli.command {
        None => run(cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Info { device }) => info(device),
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
            let gpu = Gpu::open(device)?;
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

fn info(device: u32) -> Result<Outcome> {
    println!("kernels: PTX for {} ({} bytes)", ptx::ARCH, ptx::PTX.len());
    println!("entry points: {}", ptx::entry_points(ptx::PTX).join(", "));
    for line in crate::compare::toolkit_lines() {
        println!("{line}");
    }
    let gpu = Gpu::open(device)?;
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

/// `--shape` must fit one of the selected experiments (checked before the GPU opens).
fn check_shape(args: &RunArgs, selection: &[experiments::Selection]) -> Result<()> {
    if let Some(Shape(shape)) = &args.shape
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

fn plan(args: &RunArgs) -> Plan {
    Plan {
        size: args.size,
        shape: args.shape.clone().map(|s| s.0),
        reps: Reps {
            warmup: args.warmup as usize,
            timed: args.reps as usize,
        },
        seed: args.seed,
    }
}

fn compare(args: CompareArgs) -> Result<Outcome> {
    let selection = experiments::select(&args.run.experiments)?;
    check_shape(&args.run, &selection)?;
    let gpu = Gpu::open(args.run.device)?;
    let show = !args.run.quiet && std::io::stderr().is_terminal();
    let report = crate::compare::compare(
        &gpu,
        &selection,
        &plan(&args.run),
        args.dump_ptx.as_deref(),
        |msg| {
            if show {
                eprintln!("running {msg}");
            }
        },
    )?;
    print!("{}", crate::compare::render(&report));
    if let Some(path) = &args.run.json {
        table::write_json(path, &report)?;
    }
    Ok(match report.failures() {
        0 => Outcome::Ok,
        n => Outcome::Invalid(n),
    })
}

fn run(args: RunArgs) -> Result<Outcome> {
    // Parse everything the user typed before touching the GPU.
    let selection = experiments::select(&args.experiments)?;
    check_shape(&args, &selection)?;
    let gpu = Gpu::open(args.device)?;
    let plan = plan(&args);
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
