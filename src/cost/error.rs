//! What can go wrong in the cost lane, and the plugin API range a QEMU
//! accepts (which its errors name): below the rest of the module.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CostError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not an ELF binary ({message})", path.display())]
    NotElf { path: PathBuf, message: String },
    #[error("{} has no TCG plugin support (it exports no qemu_plugin_* API); the cost lane needs a QEMU built with plugins, such as Debian's qemu-system-x86", qemu.display())]
    NoPlugins { qemu: PathBuf },
    #[error("{} speaks plugin API {found}, but the cost-model plugin needs version {needed} (QEMU 6.0 to 8.2; Debian 12 ships 7.2)", qemu.display())]
    ApiMismatch {
        qemu: PathBuf,
        found: ApiRange,
        needed: u32,
    },
    #[error("{} line {line} is not a window record", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("the cost-model plugin reported: {message} (in {})", path.display())]
    Plugin { path: PathBuf, message: String },
    #[error(
        "the sample has no cost windows: did the workload mark its phases, and the boot load the plugin?"
    )]
    NoWindows,
    #[error("the sample has two windows of phase {phase}")]
    DuplicatePhase { phase: String },
    #[error(
        "window {seq} ({phase}): its symbols' modeled cycles sum to {symbols}, its total is {total}"
    )]
    SplitMismatch {
        seq: u64,
        phase: String,
        symbols: u64,
        total: u64,
    },
}

/// The plugin API versions a QEMU accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRange {
    pub min: u32,
    pub max: u32,
}

impl ApiRange {
    pub fn accepts(&self, version: u32) -> bool {
        (self.min..=self.max).contains(&version)
    }
}

impl fmt::Display for ApiRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "version {}", self.min)
        } else {
            write!(f, "versions {} to {}", self.min, self.max)
        }
    }
}
