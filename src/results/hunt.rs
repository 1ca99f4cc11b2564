//! The hunt document, `bisect.json`: what a bisection over a series
//! (`per_patch: bisect`, `patchbench run --bisect`) measured, step by step,
//! and what it concluded. It sits beside the steps' own results (each step
//! is an ordinary A/B campaign with its `results.json` under
//! `bisect/<step>/`), is rewritten atomically after every step, and is
//! versioned on its own ([`HUNT_SCHEMA_VERSION`]); `docs/results-schema.md`
//! documents it. Types of its own, like `results.json`'s: the hunt's engine
//! (`crate::bisect`) converts into them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::comparison::{ChangeRecord, ComparisonRecord, VerdictRecord};
use crate::model::{Accel, Lane};

/// 1: the first. 2: the lane as one name (`lane: "icount"`), where 1
/// stored its accelerator, icount flag and plugin model.
pub const HUNT_SCHEMA_VERSION: u32 = 2;

/// The hunt document's name in the output directory.
pub const HUNT_FILE: &str = "bisect.json";

/// A hunt, as far as it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hunt {
    pub hunt_schema_version: u32,
    pub patchbench_version: String,
    pub campaign: String,
    /// The campaign file, absent for the built-in default.
    pub campaign_file: Option<PathBuf>,
    pub started_at: jiff::Timestamp,
    /// The workload's kind: its spec gives the metrics' units.
    pub workload: String,
    pub base_commit: String,
    pub series: HuntSeries,
    /// The lane the steps ran in (the first step's); absent until it ran.
    pub lane: Option<Lane>,
    /// What the hunt looks for, from the whole series' step; absent until
    /// that step is judged.
    pub hunted: Option<Hunted>,
    /// Every step measured, in the order they ran.
    pub steps: Vec<HuntStep>,
    pub state: HuntState,
}

/// The series hunted through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HuntSeries {
    pub source: String,
    pub sha256: String,
    pub patches: Vec<HuntPatch>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HuntPatch {
    /// From 1.
    pub number: usize,
    /// The mail's subject (untrusted text).
    pub subject: String,
    /// The commit the patch became on the base.
    pub commit: String,
}

/// The change the hunt looks for: the whole series' verdict on its
/// primary metrics, and which of them had it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hunted {
    /// Regression when any primary metric regressed, else improvement,
    /// else changed.
    pub verdict: VerdictRecord,
    pub metrics: Vec<MetricKey>,
}

/// A metric of a condition (`None`: the main workload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricKey {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub metric: String,
}

impl MetricKey {
    /// The metric, with its control's name when it is a control's.
    pub fn label(&self) -> String {
        match &self.condition {
            Some(c) => format!("{} (control {c})", self.metric),
            None => self.metric.clone(),
        }
    }
}

/// What a step is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepRole {
    /// The base against the whole series: whether there is a change to
    /// hunt, and which.
    Whole,
    /// The base against the prefix halfway between the last one known
    /// without the change and the first known with it.
    Midpoint,
    /// The patch found, against the prefix before it, in boots of its own
    /// (where boots of different steps are not comparable).
    Own,
}

/// What a step says of the hunted change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// A hunted metric has the whole series' verdict: the first patch with
    /// the change is in this prefix.
    Changed,
    /// Every hunted metric is "no clear difference": the first patch with
    /// the change comes after this prefix.
    Unchanged,
    /// Neither: a hunted metric is inconclusive, or changed the other way.
    /// The hunt stops here.
    Undecided,
    /// The prefix does not build: as `git bisect skip` does, the hunt
    /// measures the nearest prefix that does instead (the step has no
    /// kernels and no verdicts, and its reason quotes the build's error).
    Skipped,
}

/// One step: an A/B campaign of two prefixes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HuntStep {
    pub role: StepRole,
    /// How many patches the step's baseline carries (0: the base).
    pub baseline_patches: usize,
    /// How many the compared variant carries.
    pub patches: usize,
    /// The step's output directory, relative to the hunt's.
    pub dir: PathBuf,
    /// The kernels the step booted, baseline first.
    pub kernels: Vec<StepKernel>,
    /// Every primary metric's verdict in the step, the hunted ones first.
    pub verdicts: Vec<StepVerdict>,
    /// What the step says of the hunted change; absent for the whole
    /// series' step when nothing changed, and for the patch's own step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<StepOutcome>,
    /// Why, for people: the metrics that decided it.
    pub reason: String,
    /// Wall time of the step's boots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boots_wall_seconds: Option<f64>,
}

/// A kernel a step booted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepKernel {
    pub variant: String,
    pub commit: String,
    pub bzimage_sha256: String,
}

/// One metric's verdict in a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepVerdict {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub metric: String,
    pub hunted: bool,
    pub verdict: VerdictRecord,
    pub change: Option<ChangeRecord>,
}

/// Where the hunt is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum HuntState {
    /// Steps to go: the first patch with the change is in `lo + 1 ..= hi`.
    Running { lo: usize, hi: usize },
    /// The whole series shows no change in any primary metric (or none
    /// the rules could call): there is nothing to hunt.
    NothingToHunt { reason: String },
    /// A step was undecided: the first patch is in `lo + 1 ..= hi`, and
    /// the hunt does not guess which.
    Stopped {
        lo: usize,
        hi: usize,
        reason: String,
    },
    /// The first patch with the change, and its own interval.
    Found { patch: usize, own: OwnInterval },
}

/// How a patch's own interval (its prefix against the one before) was
/// measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnMethod {
    /// Patch 1: its step compared it with the base in the same boots.
    InStep,
    /// The prefix's boots from its step against the prefix before's from
    /// that one's step, where a deterministic lane makes them comparable
    /// and the base, measured in both, agrees with itself.
    AcrossSteps,
    /// A step of its own: the two prefixes in the same boots.
    OwnStep,
}

/// A patch's own interval: its prefix against the one before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnInterval {
    pub method: OwnMethod,
    /// Why this method, for people.
    pub note: String,
    /// With `across_steps` (or when it was refused for a moved base): the
    /// base of the prefix before's step against the base of the patch's
    /// step, every primary metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witness: Vec<ComparisonRecord>,
    /// Every primary metric, the prefix before as baseline.
    pub comparisons: Vec<ComparisonRecord>,
}

/// A hunt document that cannot be read or resumed.
#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    #[error("cannot read the hunt {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a hunt document written by `patchbench run --bisect`", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} has hunt schema {found}; this patchbench reads schemas 1 to {HUNT_SCHEMA_VERSION}", path.display())]
    Schema { path: PathBuf, found: u64 },
    #[error("{} is a hunt of another campaign, base or series ({what} differs); resume only with the same campaign and series, or choose another --out", path.display())]
    Foreign { path: PathBuf, what: &'static str },
}

impl Hunt {
    /// Read a hunt document.
    pub fn load(path: &Path) -> Result<Hunt, HuntError> {
        let text = std::fs::read_to_string(path).map_err(|source| HuntError::Read {
            path: path.to_owned(),
            source,
        })?;
        let parse = |source| HuntError::Parse {
            path: path.to_owned(),
            source,
        };
        #[derive(Deserialize)]
        struct Version {
            hunt_schema_version: u64,
        }
        let version: Version = serde_json::from_str(&text).map_err(parse)?;
        match version.hunt_schema_version {
            2 => serde_json::from_str(&text).map_err(parse),
            // Schema 1 stored the lane as its parts.
            1 => {
                let mut value: serde_json::Value = serde_json::from_str(&text).map_err(parse)?;
                if let Some(doc) = value.as_object_mut() {
                    if let Some(old) = doc.get("lane").filter(|l| !l.is_null()) {
                        #[derive(Deserialize)]
                        struct Parts {
                            accel: Accel,
                            icount: bool,
                            cost_model: Option<String>,
                        }
                        let parts: Parts = serde_json::from_value(old.clone()).map_err(parse)?;
                        let lane = Lane::of_old_document(
                            parts.accel,
                            parts.icount,
                            parts.cost_model.as_deref(),
                        );
                        doc.insert("lane".into(), serde_json::to_value(lane).map_err(parse)?);
                    }
                    doc.insert("hunt_schema_version".into(), HUNT_SCHEMA_VERSION.into());
                }
                serde_json::from_value(value).map_err(parse)
            }
            found => Err(HuntError::Schema {
                path: path.to_owned(),
                found,
            }),
        }
    }

    /// Write the document atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("a hunt serializes");
        text.push('\n');
        crate::fsutil::write_atomic(path, text.as_bytes())
    }

    /// What makes `earlier` (at `path`) another experiment than this hunt,
    /// if anything: then its steps must not be resumed into this one.
    pub fn check_resumable(&self, earlier: &Hunt, path: &Path) -> Result<(), HuntError> {
        let what = if earlier.campaign != self.campaign {
            Some("the campaign")
        } else if earlier.base_commit != self.base_commit {
            Some("the base commit")
        } else if earlier.series.sha256 != self.series.sha256
            || earlier.series.patches != self.series.patches
        {
            Some("the series")
        } else if earlier.workload != self.workload {
            Some("the workload")
        } else {
            None
        };
        match what {
            Some(what) => Err(HuntError::Foreign {
                path: path.to_owned(),
                what,
            }),
            None => Ok(()),
        }
    }

    /// The patch `k` (from 1), if the series has it.
    pub fn patch(&self, k: usize) -> Option<&HuntPatch> {
        k.checked_sub(1).and_then(|i| self.series.patches.get(i))
    }

    /// How many kernel pairs (steps) the hunt booted.
    pub fn kernel_pairs(&self) -> usize {
        self.steps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunt() -> Hunt {
        Hunt {
            hunt_schema_version: HUNT_SCHEMA_VERSION,
            patchbench_version: "0".into(),
            campaign: "smoke".into(),
            campaign_file: None,
            started_at: "2026-12-01T00:00:00Z".parse().unwrap(),
            workload: "zswap-pageout".into(),
            base_commit: "a".repeat(40),
            series: HuntSeries {
                source: "s".into(),
                sha256: "b".repeat(64),
                patches: vec![HuntPatch {
                    number: 1,
                    subject: "mm: one".into(),
                    commit: "c".repeat(40),
                }],
            },
            lane: None,
            hunted: None,
            steps: Vec::new(),
            state: HuntState::Running { lo: 0, hi: 1 },
        }
    }

    #[test]
    fn a_hunt_round_trips_and_refuses_another_schema_or_experiment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HUNT_FILE);
        let mut h = hunt();
        h.state = HuntState::Stopped {
            lo: 0,
            hi: 1,
            reason: "why".into(),
        };
        h.save(&path).unwrap();
        assert_eq!(Hunt::load(&path).unwrap(), h);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"kind\": \"stopped\""), "{text}");
        std::fs::write(
            &path,
            text.replace("\"hunt_schema_version\": 2", "\"hunt_schema_version\": 9"),
        )
        .unwrap();
        assert!(matches!(
            Hunt::load(&path),
            Err(HuntError::Schema { found: 9, .. })
        ));
        // The kept hunt of schema 1 loads, its lane from its parts.
        let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results/watch-synthetic/hunts/smoke-n006/bisect.json");
        let old = Hunt::load(&kept).unwrap();
        assert_eq!(old.hunt_schema_version, HUNT_SCHEMA_VERSION);
        assert_eq!(old.lane, Some(Lane::Icount));
        std::fs::write(&path, "{\"results\": 1}").unwrap();
        assert!(matches!(Hunt::load(&path), Err(HuntError::Parse { .. })));
        let mut other = hunt();
        assert!(h.check_resumable(&other, &path).is_ok());
        other.series.patches[0].commit = "d".repeat(40);
        let err = h.check_resumable(&other, &path).unwrap_err().to_string();
        assert!(err.contains("the series differs"), "{err}");
    }
}
