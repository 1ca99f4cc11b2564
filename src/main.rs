//! The `patchbench` binary: parse the command line, run it, and exit with a
//! documented code (see `patchbench --help` and `src/exit.rs`).

use std::process::ExitCode;

use clap::Parser;
use patchbench::cli::Cli;
use patchbench::exit;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::INFRASTRUCTURE as u8);
        }
    };
    let result = runtime.block_on(async { cli.run().await });
    match result {
        Ok(()) => ExitCode::from(exit::OK as u8),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(exit::code_for(&err) as u8)
        }
    }
}
