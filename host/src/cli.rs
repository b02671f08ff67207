//! The `coalesce` command line: `run` (the default), `report`, `compare`, `explain`,
//! `info`, `list`, `check`, `calibrate`. This module parses ([`crate::args`] holds the
//! words), dispatches to [`crate::commands`], and turns the outcome into one line and
//! an exit code.

use std::ffi::OsString;

use clap::Parser;

pub use crate::args::{Cli, Command};
pub use crate::commands::{Opener, Outcome};
use crate::commands::{
    calibrate, check, compare, explain_command, info, list, list_names, refit, run, write_report,
};
use crate::device::Gpu;
use crate::error::Result;

/// The whole program: parses `args` (the first is the program name), runs the
/// command, prints the one-line error if any, and returns the exit code (one rule,
/// docs/commands.md): 0; 1 for a run that failed, a kernel that failed validation,
/// or a file that cannot be read or written; 2 for a bad argument or a malformed
/// input file.
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

/// clap's error as one line, not its usage block: the message, with the missing
/// arguments, the possible values and the "a similar argument exists" tips it gives
/// on later lines.
fn one_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = lines.next().unwrap_or("error: invalid arguments").to_string();
    if out.ends_with("were not provided:") {
        // The missing arguments follow, one a line, until the usage.
        let missing: Vec<&str> = lines.clone().take_while(|l| !l.starts_with("Usage:")).collect();
        out = format!("{out} {}", missing.join(", "));
    }
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
        Some(Command::Info { device }) => info(&device, open),
        Some(Command::Explain(args)) => explain_command(args),
        Some(Command::Calibrate(args)) => calibrate(args, open),
        Some(Command::Refit { profiles }) => refit(&profiles),
        Some(Command::List { names }) => {
            crate::output::Human::STDOUT.print(&if names { list_names() } else { list() });
            Ok(Outcome::Ok)
        }
        Some(Command::Check {
            experiments,
            device,
            seed,
        }) => check(&experiments, &device, seed, open),
    }
}
