//! What can go wrong building a kernel, each with the file, option or
//! command at fault.

use std::path::{Path, PathBuf};

use crate::{kconfig, process};

use super::toolchain;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("the kernel configuration lost options the fragments asked for:\n  {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    ConfigMismatch(Vec<kconfig::Mismatch>),
    /// A fragment's version markers (`# patchbench: since X.Y`).
    #[error(transparent)]
    Fragment(#[from] kconfig::FragmentError),
    #[error("no kernel version in {} (its VERSION and PATCHLEVEL lines)", makefile.display())]
    TreeVersion { makefile: PathBuf },
    #[error("`make {target}` failed{}", first_error.as_ref().map(|e| format!(" at {e}")).unwrap_or_default())]
    Make {
        target: String,
        first_error: Option<String>,
        #[source]
        source: Box<process::ProcessError>,
    },
    #[error("i/o on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Checking out the commit to build (its message names the commit).
    #[error(transparent)]
    Checkout(#[from] crate::tree::TreeError),
    #[error("cannot {what} of the tree")]
    Index {
        what: &'static str,
        #[source]
        source: git2::Error,
    },
    #[error("cannot set the mtime of {}", path.display())]
    Mtime {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot determine the compiler version")]
    Compiler(#[source] Box<process::ProcessError>),
    #[error("{}", toolchain::describe_missing(.0))]
    Toolchain(Vec<toolchain::Missing>),
    #[error("only {free} free on the filesystem holding {}; a kernel build needs at least {}", dir.display(), toolchain::MIN_FREE)]
    NoSpace {
        dir: PathBuf,
        free: bytesize::ByteSize,
    },
    #[error("the disk filled up during `make {target}` (\"No space left on device\" in {}); free space under {} and re-run", log.display(), dir.display())]
    DiskFull {
        target: String,
        log: PathBuf,
        dir: PathBuf,
    },
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError {
    let path = path.to_owned();
    move |source| BuildError::Io { path, source }
}
