//! patchbench: what does this patch do to the kernel's performance?
//!
//! [`model`] is the vocabulary at the bottom, importing nothing of the crate.
//! The modules follow the pipeline: [`config`] → [`tree`] / [`series`] →
//! [`kconfig`] / [`build`] → [`kbuild`] / [`image`] / [`vm`] (and [`cost`], the cost lane) → [`campaign`] (and
//! [`bisect`], a hunt of campaigns) → [`stats`] →
//! [`results`] / [`report`] → [`html`] / [`github`]. [`process`] is the only module that spawns host
//! processes; [`events`] is how the engine talks to the UI.

pub mod apply;
pub mod bisect;
pub mod blocking;
pub mod build;
pub mod campaign;
pub mod cli;
pub mod config;
pub mod controls;
pub mod cost;
pub mod events;
pub mod exit;
pub mod fsutil;
pub mod github;
pub mod hostfacts;
pub mod hostnoise;
pub mod html;
pub mod image;
pub mod judge;
pub mod kbuild;
pub mod kconfig;
pub mod model;
pub mod process;
pub mod reach;
pub mod report;
pub mod results;
pub mod series;
pub mod staged;
pub mod stats;
pub mod tls;
pub mod tree;
pub mod ui;
pub mod variants;
pub mod vm;
pub mod watch;
pub mod workload;

/// Find the guest agent binary: `$PATCHBENCH_AGENT`, else next to the running
/// executable (as `cargo build --workspace` leaves it), else one folder up
/// (test binaries live in `target/<profile>/deps`).
pub fn find_agent() -> anyhow::Result<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("PATCHBENCH_AGENT") {
        let path = std::path::PathBuf::from(path);
        anyhow::ensure!(
            path.is_file(),
            "PATCHBENCH_AGENT={} is not a file",
            path.display()
        );
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    let dir = exe.parent().unwrap_or(std::path::Path::new("."));
    for candidate in [
        dir.join("patchbench-agent"),
        dir.join("../patchbench-agent"),
    ] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    anyhow::bail!(
        "the guest agent `patchbench-agent` is not next to {}; build it with `cargo build --release --workspace` or set PATCHBENCH_AGENT",
        exe.display()
    )
}
