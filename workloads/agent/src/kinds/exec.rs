//! `exec` (`patchbench boot -- CMD`): one command, for debugging a kernel.
//! Not a kind a campaign names, so not in [`with_kinds!`](crate::with_kinds).

use serde::{Deserialize, Serialize};

use crate::kind::Kind;

/// Run one command, its output on the console; a non-zero exit is a
/// workload error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exec {
    /// The program and its arguments, run without a shell.
    pub argv: Vec<String>,
}

impl Kind for Exec {
    fn describe(&self) -> String {
        format!("{:?}", self.argv)
    }
}
