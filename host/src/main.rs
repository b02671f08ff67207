use std::process::ExitCode;

use clap::Parser;
use coalesce::cli::{Cli, Outcome, execute};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version print as clap formats them.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            // One line, not clap's usage block: the message already says what is wrong.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("{first} (see --help)");
            return ExitCode::from(2);
        }
    };
    match execute(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Invalid(n)) => {
            eprintln!("error: {n} kernel(s) failed validation (see NOT VALIDATED above)");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
