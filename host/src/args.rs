//! The `coalesce` command line's words: commands, their options, and the parsers of
//! sizes, shapes and devices (clap). [`crate::cli`] parses and dispatches;
//! [`crate::commands`] carries the commands out.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::error::Result;
use crate::explain::emulate::model::Model;
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
    /// Run experiments and write report.md, index.html, results.json and SVG plots to a directory.
    Report(ReportArgs),
    /// Run each Rust kernel beside its CUDA C++ twin (NVRTC) and matmul beside cuBLAS.
    Compare(CompareArgs),
    /// Predict on the CPU (no GPU needed) how each kernel's memory accesses coalesce,
    /// per source line: sectors per warp request, useful bytes, bank conflicts.
    Explain(ExplainArgs),
    /// Show the device, its peak bandwidth, the kernels in the embedded PTX, and
    /// whether NVRTC, cuBLAS and the CUDA headers the 16-bit twins include (for
    /// `compare`) can be found.
    Info {
        /// CUDA device: an ordinal, a list such as 0,1, or all.
        #[arg(long, allow_hyphen_values = true, value_parser = device_arg, default_value = "0")]
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
        #[arg(long, allow_hyphen_values = true, value_parser = device_arg, default_value = "0")]
        device: DeviceArg,
        /// Seed for the random inputs.
        #[arg(long, allow_hyphen_values = true, default_value_t = 0x5eed)]
        seed: u64,
    },
    /// Measure this GPU's profile for `explain`'s predictions (copy ceiling, DRAM read
    /// granularity, latencies, on-chip and compute rates: FFMA, mma.sync, wgmma, L2)
    /// and write it as JSON.
    Calibrate(CalibrateArgs),
    /// Fit profiles' parameters again from the sweeps they keep, with this coalesce's
    /// fits, and rewrite them (for maintainers: host/profiles after a fit changes).
    #[command(hide = true)]
    Refit {
        /// Profile files, as `coalesce calibrate` writes them.
        #[arg(required = true, value_name = "FILE")]
        profiles: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// CUDA device ordinal.
    #[arg(long, allow_hyphen_values = true, default_value_t = 0)]
    pub device: u32,
    /// The profile file (`-`: standard output), or a folder to write it in as
    /// <gpu>.json, the name host/profiles/ gives it (default:
    /// coalesce-profile-<gpu>.json in the current folder).
    #[arg(long, value_name = "FILE|DIR")]
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
    #[arg(long, allow_hyphen_values = true, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Matrix shape, as for `run`: ROWSxCOLS for transpose, MxNxK for matmul.
    #[arg(long, allow_hyphen_values = true, value_parser = shape_arg)]
    pub shape: Option<ShapeArg>,
    /// The coalescing rules: sm70 (Volta and later) or the compute capability 1.x
    /// half-warp rules, for teaching.
    #[arg(long, value_enum, default_value_t = Model::Sm70)]
    pub model: Model,
    /// Blocks to emulate per kernel, spread over the grid (the whole grid if it has fewer).
    #[arg(long, allow_hyphen_values = true, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub blocks: u32,
    /// Also write the analysis (or, with --against-ncu, the comparison) as JSON to
    /// FILE (`-`: to standard output, and the text to standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the annotated view as one HTML page to FILE (`-`: to standard
    /// output, and the text to standard error): each kernel's source with its accesses
    /// beside each line, its C++ twin and PTX folded, and each variant's diff from the
    /// one before. Open it in a browser; it needs no network.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["against_ncu", "against_run"])]
    pub html: Option<PathBuf>,
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
    /// Also write the results as JSON to FILE (`-`: to standard output, and the
    /// table to standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Directory for report.md, index.html, results.json and the plots (made if missing; the
    /// folder it goes in must exist, as for every output).
    #[arg(long, value_name = "DIR", default_value = "coalesce-report")]
    pub out: PathBuf,
    /// Skip the comparison with the CUDA C++ twins and cuBLAS: Rust kernels only.
    #[arg(long)]
    pub rust_only: bool,
    /// Render saved results instead of running (no GPU needed): a results.json from
    /// `report`, or a file from `run --json` or `compare --json`. Repeat it with
    /// one file per GPU to compare the GPUs side by side; further files of one GPU are
    /// its runs at other sizes (`run --size` or `--shape`), set beside the model's
    /// prediction at each with --profile.
    #[arg(long, value_name = "FILE")]
    pub from: Vec<PathBuf>,
    /// Set `explain`'s predictions beside the measurements (a table, and in the
    /// stride and good-against-bad plots): a profile file from `coalesce calibrate`
    /// or a shipped profile's GPU name, of the GPU the results come from. Repeat it
    /// with one profile per GPU when the report holds several. A report that runs
    /// uses the profile that ships for its GPU unless told otherwise; `none`: no
    /// predictions.
    #[arg(long, value_name = "FILE|GPU|none")]
    pub profile: Vec<String>,
}

#[derive(Debug, Args, Default)]
pub struct CompareArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Also write the comparison as JSON to FILE (`-`: to standard output, and the
    /// table to standard error).
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
    #[arg(long, allow_hyphen_values = true, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Matrix shape: ROWSxCOLS for transpose, MxNxK (any) for the matrix products
    /// (overrides --size for them).
    #[arg(long, allow_hyphen_values = true, value_parser = shape_arg)]
    pub shape: Option<ShapeArg>,
    /// Timed launches per variant; the table shows their median.
    #[arg(long, allow_hyphen_values = true, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: u32,
    /// Untimed launches before timing.
    #[arg(long, allow_hyphen_values = true, default_value_t = 3)]
    pub warmup: u32,
    /// CUDA device: an ordinal, a list such as 0,1, or all (each GPU in turn).
    #[arg(long, allow_hyphen_values = true, value_parser = device_arg, default_value = "0")]
    pub device: DeviceArg,
    /// Seed for the random inputs.
    #[arg(long, allow_hyphen_values = true, default_value_t = 0x5eed)]
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
    pub fn ordinals(&self) -> Result<Vec<u32>> {
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
