//! The `patchbench` binary: parse the command line, run it, and exit with a
//! documented code (see `patchbench --help` and `src/exit.rs`).

use std::process::ExitCode;

use clap::Parser;
use patchbench::cli::Cli;
use patchbench::{exit, ui};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::INFRASTRUCTURE as u8);
        }
    };
    // On Ctrl-C or SIGTERM the command's future is dropped: every QEMU
    // (each in its own process group, so the terminal's SIGINT never
    // reaches it) is killed by its guard, and results.json already holds
    // every sample measured. Re-running the same command resumes.
    // `--quiet` decides how the UI shows events, so it is set before the UI is made.
    ui::set_quiet(cli.quiet);
    let ui: std::sync::Arc<dyn patchbench::events::Sink> = std::sync::Arc::new(ui::Ui::new());
    let result = runtime.block_on(async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            result = cli.run(ui) => result,
            _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!(exit::Interrupted)),
            _ = terminated => Err(anyhow::anyhow!(exit::Interrupted)),
        }
    });
    // Blocking work abandoned by an interruption (a git2 commit of 87k
    // files, say) must not hold the exit: dropping the runtime would wait
    // for it. Its caller left the cache consumable (see `blocking`).
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::from(exit::OK as u8),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(exit::code_for(&err) as u8)
        }
    }
}
