//! Why the kernel-build workload's tree could not be prepared: the one
//! error type of `kbuild` and its stage, kept apart so that neither
//! imports the other for it.

use std::path::{Path, PathBuf};

use crate::process;

/// Why the kernel-build workload's tree could not be prepared. Messages
/// are lowercase fragments; the cause follows through `source`.
#[derive(Debug, thiserror::Error)]
pub enum KbuildError {
    #[error("kernel-build: cannot determine the compiler")]
    Compiler(#[source] crate::build::BuildError),
    #[error("kernel-build: i/o on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("kernel-build: cannot {what} ({})", repo.display())]
    Git {
        repo: PathBuf,
        what: String,
        #[source]
        source: git2::Error,
    },
    #[error(
        "kernel-build: cannot {what} the workload's tree (config {config}, targets {}){}",
        targets.join(" "),
        first_error.as_ref().map(|l| format!(" at {l}")).unwrap_or_default()
    )]
    Make {
        what: &'static str,
        config: String,
        targets: Vec<String>,
        /// The first compiler error in the output, if any.
        first_error: Option<String>,
        #[source]
        source: Box<process::ProcessError>,
    },
    #[error(
        "kernel-build: make built {target} but left no {}; only files kbuild builds with a recorded command can be targets",
        cmd_file.display()
    )]
    NoCmdFile {
        target: String,
        cmd_file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("kernel-build: {} has no savedcmd line", cmd_file.display())]
    NoSavedCommand { cmd_file: PathBuf },
    #[error(
        "kernel-build: the build, run once on the host under strace to learn which files it reads, failed"
    )]
    Trace {
        #[source]
        source: Box<process::ProcessError>,
    },
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> KbuildError {
    let path = path.to_owned();
    move |source| KbuildError::Io { path, source }
}
