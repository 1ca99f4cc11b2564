//! Why a staged program could not be made: the one error type of
//! `staged`. Messages are lowercase fragments naming the kind; the cause
//! follows through `source`.

use std::path::{Path, PathBuf};

use crate::process::ProcessError;

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("staging: i/o on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("stress-ng: cannot stage the host's {program}")]
    Copy {
        program: String,
        #[source]
        source: crate::kbuild::CopyError,
    },
    #[error("stress-ng: cannot ask the host's {program} {what}")]
    Query {
        program: String,
        what: &'static str,
        #[source]
        source: Box<ProcessError>,
    },
    #[error("stress-ng: ldd finds no {library} for {program}")]
    MissingLibrary { program: String, library: String },
    #[error("mm-selftest: cannot check out the tree at {commit}")]
    Export {
        commit: String,
        #[source]
        source: Box<crate::kbuild::KbuildError>,
    },
    #[error("mm-selftest: cannot determine the compiler")]
    Compiler(#[source] Box<crate::build::BuildError>),
    #[error(
        "mm-selftest: the tree {tree} at {commit} has no selftest {program} (none of {})",
        tried.join(", ")
    )]
    NoSelftest {
        program: &'static str,
        tree: String,
        commit: String,
        tried: Vec<String>,
    },
    #[error("mm-selftest: cannot make the uapi headers of the tree {tree} at {commit}")]
    Headers {
        tree: String,
        commit: String,
        #[source]
        source: Box<ProcessError>,
    },
    #[error(
        "mm-selftest: {program} does not build in the tree {tree} at {commit} ({source_file}){}",
        first_error.as_ref().map(|l| format!(": {l}")).unwrap_or_default()
    )]
    Build {
        program: &'static str,
        tree: String,
        commit: String,
        source_file: String,
        /// The first compiler error in the output, if any.
        first_error: Option<String>,
        #[source]
        source: Box<ProcessError>,
    },
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StageError {
    let path = path.to_owned();
    move |source| StageError::Io { path, source }
}
