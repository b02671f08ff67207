use std::process::ExitCode;

use coalesce::cli::main_with;
use coalesce::device::Gpu;

fn main() -> ExitCode {
    ExitCode::from(main_with(std::env::args_os(), &Gpu::open))
}
