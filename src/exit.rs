//! Exit codes, each a documented constant, and the mapping from an error
//! chain to the code that tells the user whose fault it was.
//!
//! Code 1 is kept free for "the patch regressed", which arrives with the
//! statistical verdicts.

use crate::build::BuildError;
use crate::config::ConfigError;
use crate::kbuild::KbuildError;
use crate::process::ProcessError;
use crate::results::ResultsError;
use crate::series::SeriesError;
use crate::tree::TreeError;
use crate::vm::VmError;
use crate::vm::accel::KvmUnusable;

/// The campaign ran and its results were written.
pub const OK: i32 = 0;
/// The campaign ran, its results were written, and at least one metric
/// regressed by the rules of docs/statistics.md.
pub const REGRESSION: i32 = 1;
/// The command line, the campaign file or the results.json to resume is
/// wrong. Nothing ran.
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
    "interrupted; what was finished is kept (imported trees and built kernels in the cache, every sample measured so far in results.json), and the same command with the same --out resumes"
)]
pub struct Interrupted;

/// The campaign finished and the patch regressed these metrics.
#[derive(Debug, thiserror::Error)]
#[error("the patch regressed: {}", .metrics.join(", "))]
pub struct Regressed {
    pub metrics: Vec<String>,
}

/// A hunt (`run --bisect`) over a series that regressed: the metrics the
/// whole series regressed, and what the hunt found of where.
#[derive(Debug, thiserror::Error)]
#[error("the series regressed: {}; {found}", .metrics.join(", "))]
pub struct HuntRegressed {
    pub metrics: Vec<String>,
    /// "the first patch with the regression is 4/7 ...", or why the hunt
    /// named none.
    pub found: String,
}

/// Stored results in which a guest failure stopped boots (`patchbench
/// compare`): what was measured is shown, and the exit code is the
/// guest's, as the run's was.
#[derive(Debug, thiserror::Error)]
#[error("a guest failure stopped {}; their samples are left out of the comparison", .boots.join(", "))]
pub struct Stopped {
    pub boots: Vec<String>,
}

/// The exit code for an error, from the outermost cause in its chain that
/// is a stage's error: each stage (tree, series, build, kbuild, vm) returns
/// its own enum, so the stage that failed decides whose fault it was.
/// Anything else (a full disk while writing results, say) is the host's.
pub fn code_for(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if cause.is::<Regressed>() || cause.is::<HuntRegressed>() {
            return REGRESSION;
        }
        if cause.is::<Stopped>() {
            return GUEST;
        }
        if cause.is::<ConfigError>()
            || cause.is::<crate::model::LaneRefused>()
            || cause.is::<crate::workload::needs::Missing>()
            || cause.is::<crate::workload::needs::Unsupported>()
            || cause.is::<crate::vm::smp_icount::SmpStall>()
            || cause.is::<crate::model::shard::ShardError>()
            || cause.is::<crate::results::merge::MergeError>()
        {
            return USAGE;
        }
        // A results document that is not one (truncated, hand-edited, of a
        // future schema, of another experiment) is bad input; one that
        // cannot be read is the host's.
        if let Some(map) = cause.downcast_ref::<crate::reach::map::MapError>() {
            return if map.is_usage() {
                USAGE
            } else {
                INFRASTRUCTURE
            };
        }
        // A campaign file of a suite or of ci/ that is wrong is bad input.
        if let Some(reach) = cause.downcast_ref::<crate::reach::ReachError>()
            && reach.is_usage()
        {
            return USAGE;
        }
        if let Some(hunt) = cause.downcast_ref::<crate::results::hunt::HuntError>() {
            use crate::results::hunt::HuntError;
            return match hunt {
                HuntError::Parse { .. } | HuntError::Schema { .. } | HuntError::Foreign { .. } => {
                    USAGE
                }
                HuntError::Read { .. } => INFRASTRUCTURE,
            };
        }
        if let Some(results) = cause.downcast_ref::<ResultsError>() {
            return match results {
                ResultsError::Parse { .. }
                | ResultsError::Schema { .. }
                | ResultsError::Foreign { .. }
                | ResultsError::OtherCpus { .. }
                | ResultsError::Unjudged { .. } => USAGE,
                ResultsError::Read { .. } => INFRASTRUCTURE,
            };
        }
        if cause.is::<SeriesError>() {
            return PATCH;
        }
        if let Some(vm) = cause.downcast_ref::<VmError>() {
            return match vm {
                VmError::Guest { .. } => GUEST,
                VmError::Setup { .. }
                | VmError::Spawn { .. }
                | VmError::Killed { .. }
                | VmError::ConsoleLog { .. }
                | VmError::Record { .. }
                | VmError::Pin { .. } => INFRASTRUCTURE,
            };
        }
        if cause.is::<BuildError>()
            || cause.is::<KbuildError>()
            || cause.is::<TreeError>()
            || cause.is::<ProcessError>()
            || cause.is::<KvmUnusable>()
            || cause.is::<Interrupted>()
        {
            return INFRASTRUCTURE;
        }
    }
    INFRASTRUCTURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn io(what: &str) -> std::io::Error {
        std::io::Error::other(what.to_string())
    }

    /// One error of each kind the host is to blame for, as the stages
    /// build them.
    fn infrastructure_errors() -> Vec<anyhow::Error> {
        let make_failed = || ProcessError::Timeout {
            command: "make -C /src bzImage".into(),
            after: std::time::Duration::from_secs(60),
            tail: vec!["  CC      mm/zswap.o".into()],
            log: Some("build.log".into()),
        };
        vec![
            anyhow::Error::new(TreeError::Io {
                path: "/cache/trees".into(),
                source: io("disk on fire"),
            }),
            anyhow::Error::new(BuildError::Checkout(TreeError::Io {
                path: "/cache/trees/x".into(),
                source: io("gone"),
            })),
            anyhow::Error::new(BuildError::Make {
                target: "bzImage".into(),
                first_error: None,
                source: Box::new(make_failed()),
            }),
            anyhow::Error::new(KbuildError::Make {
                what: "prepare",
                config: "defconfig".into(),
                targets: vec!["mm/mmzone.o".into()],
                first_error: Some("mm/mmzone.c:1:1: error: x".into()),
                source: Box::new(make_failed()),
            }),
            anyhow::Error::new(VmError::Record {
                label: "A".into(),
                source: anyhow::anyhow!("cannot write results.json").into(),
            }),
            anyhow::Error::new(VmError::Killed {
                label: "B".into(),
                status: std::os::unix::process::ExitStatusExt::from_raw(libc::SIGKILL),
                console_log: "boots/1-B/console.log".into(),
                excerpt: String::new(),
            }),
            anyhow::Error::new(make_failed()),
            anyhow::Error::new(crate::results::ResultsError::Read {
                path: "out/results.json".into(),
                source: io("permission denied"),
            }),
        ]
    }

    /// Whether a message in the chain holds the whole text of its cause:
    /// the top level prints the chain, so the cause would appear twice.
    fn repeats_a_cause(err: &anyhow::Error) -> Option<String> {
        let texts: Vec<String> = err.chain().map(ToString::to_string).collect();
        texts
            .windows(2)
            .find(|w| w[0].contains(w[1].as_str()))
            .map(|w| format!("{:?} repeats {:?}", w[0], w[1]))
    }

    #[test]
    fn no_stage_error_repeats_its_cause() {
        for err in infrastructure_errors() {
            assert_eq!(repeats_a_cause(&err), None);
        }
        let interrupted = anyhow::Error::new(Interrupted).context("run");
        assert_eq!(repeats_a_cause(&interrupted), None);
    }

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
        let stopped = anyhow::Error::new(Stopped {
            boots: vec!["boot B in out/results.json".into()],
        });
        assert_eq!(code_for(&stopped), GUEST);
        assert_eq!(
            stopped.to_string(),
            "a guest failure stopped boot B in out/results.json; their samples are left out of the comparison"
        );
        let regressed = anyhow::Error::new(Regressed {
            metrics: vec!["pageout_cpu_ns".into()],
        });
        assert_eq!(code_for(&regressed), REGRESSION);
        assert_eq!(regressed.to_string(), "the patch regressed: pageout_cpu_ns");
        // A hunt over a regressed series exits as a run of it would, and
        // says where the hunt found the regression.
        let hunted = anyhow::Error::new(HuntRegressed {
            metrics: vec!["pageout_cpu_ns (p7 vs base)".into()],
            found: "the first patch with the regression is 4/7".into(),
        })
        .context("bisect");
        assert_eq!(code_for(&hunted), REGRESSION);
        let foreign_hunt = anyhow::Error::new(crate::results::hunt::HuntError::Foreign {
            path: "out/bisect.json".into(),
            what: "the series",
        });
        assert_eq!(code_for(&foreign_hunt), USAGE);
        // /dev/kvm opens and the VM cannot be made: the host's fault.
        let kvm = anyhow::Error::new(KvmUnusable {
            cause: crate::vm::accel::KvmUnfit::CreateVm {
                why: "ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy".into(),
            },
        });
        assert_eq!(code_for(&kvm), INFRASTRUCTURE);
        assert_eq!(code_for(&anyhow::anyhow!("disk full")), INFRASTRUCTURE);
        assert_eq!(code_for(&anyhow::Error::new(Interrupted)), INFRASTRUCTURE);
        // A series that does not apply is the patch's fault even when the
        // orchestration wrapped it in context.
        let bad_patch = anyhow::Error::new(SeriesError::Malformed {
            origin: "0001.patch".into(),
            reason: "no diff".into(),
        })
        .context("apply");
        assert_eq!(code_for(&bad_patch), PATCH);
        // A results.json to resume that is not one is bad input.
        let truncated = anyhow::Error::new(ResultsError::Schema {
            path: "out/results.json".into(),
            found: 9,
        });
        assert_eq!(code_for(&truncated), USAGE);
        // So is one of another experiment, in the --out given.
        let foreign = anyhow::Error::new(ResultsError::Foreign {
            path: "out/results.json".into(),
        })
        .context("resume");
        assert_eq!(code_for(&foreign), USAGE);
        for infra in infrastructure_errors() {
            assert_eq!(code_for(&infra), INFRASTRUCTURE, "{infra:#}");
        }
        let codes = [OK, USAGE, INFRASTRUCTURE, PATCH, GUEST];
        let mut unique = codes.to_vec();
        unique.dedup();
        assert_eq!(unique.len(), codes.len());
    }
}
