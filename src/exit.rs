//! Exit codes, each a documented constant, and the mapping from an error
//! chain to the code that tells the user whose fault it was.
//!
//! Code 1 is kept free for "the patch regressed", which arrives with the
//! statistical verdicts.

use crate::build::BuildError;
use crate::config::ConfigError;
use crate::series::SeriesError;
use crate::vm::VmError;
use crate::vm::accel::KvmUnusable;

/// The campaign ran and its results were written.
pub const OK: i32 = 0;
/// The campaign ran, its results were written, and at least one metric
/// regressed by the rules of docs/statistics.md.
pub const REGRESSION: i32 = 1;
/// The command line or the campaign file is wrong. Nothing ran.
pub const USAGE: i32 = 2;
/// The host failed us: a missing tool, a failed kernel build, QEMU that would
/// not start, an unusable accelerator, a full disk.
pub const INFRASTRUCTURE: i32 = 3;
/// The series does not apply to the tree, or is malformed.
pub const PATCH: i32 = 4;
/// A guest failed: a kernel panic, oops or warning, a hang, a workload error.
/// The console log path is in the message.
pub const GUEST: i32 = 5;

/// Ctrl-C or SIGTERM stopped the command.
#[derive(Debug, thiserror::Error)]
#[error(
    "interrupted; every sample measured so far is in results.json, and the same command with the same --out resumes"
)]
pub struct Interrupted;

/// The campaign finished and the patch regressed these metrics.
#[derive(Debug, thiserror::Error)]
#[error("the patch regressed: {}", .metrics.join(", "))]
pub struct Regressed {
    pub metrics: Vec<String>,
}

/// The exit code for an error, from the most specific cause in its chain.
pub fn code_for(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if cause.is::<Regressed>() {
            return REGRESSION;
        }
        if cause.is::<ConfigError>() || cause.is::<crate::campaign::ResumeError>() {
            return USAGE;
        }
        if cause.is::<SeriesError>() {
            return PATCH;
        }
        if let Some(vm) = cause.downcast_ref::<VmError>() {
            return match vm {
                VmError::Guest { .. } => GUEST,
                VmError::Setup { .. } | VmError::Spawn { .. } => INFRASTRUCTURE,
            };
        }
        if cause.is::<BuildError>() || cause.is::<KvmUnusable>() {
            return INFRASTRUCTURE;
        }
    }
    INFRASTRUCTURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn each_failure_class_has_its_own_code() {
        let usage = anyhow::Error::new(ConfigError::Invalid {
            path: PathBuf::from("x.yaml"),
            message: "bad".into(),
        });
        assert_eq!(code_for(&usage), USAGE);
        let patch = anyhow::Error::new(SeriesError::Empty {
            source_name: "s".into(),
        });
        assert_eq!(code_for(&patch.context("applying")), PATCH);
        let guest = anyhow::Error::new(VmError::Guest {
            label: "B".into(),
            what: "kernel panic".into(),
            console_log: "c.log".into(),
            excerpt: String::new(),
        });
        assert_eq!(code_for(&guest), GUEST);
        let regressed = anyhow::Error::new(Regressed {
            metrics: vec!["pageout_cpu_ns".into()],
        });
        assert_eq!(code_for(&regressed), REGRESSION);
        assert_eq!(regressed.to_string(), "the patch regressed: pageout_cpu_ns");
        let kvm = anyhow::Error::new(KvmUnusable {
            reason: "no".into(),
        });
        assert_eq!(code_for(&kvm), INFRASTRUCTURE);
        assert_eq!(code_for(&anyhow::anyhow!("disk full")), INFRASTRUCTURE);
        let codes = [OK, USAGE, INFRASTRUCTURE, PATCH, GUEST];
        let mut unique = codes.to_vec();
        unique.dedup();
        assert_eq!(unique.len(), codes.len());
    }
}
