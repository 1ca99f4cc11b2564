//! The watch history, `history.json`: what `patchbench watch` measured of
//! a branch, night after night, and the change points found in it. It sits
//! at the top of the history directory, beside each night's runs (ordinary
//! campaign output directories, `nights/<NNN>-<head12>/<campaign>/`), is
//! rewritten atomically after every night, and is versioned on its own
//! ([`HISTORY_SCHEMA_VERSION`]); `docs/watch.md` documents it. Types of its
//! own, like `results.json`'s: the watch's engine converts into them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// 1: the first.
pub const HISTORY_SCHEMA_VERSION: u32 = 1;

/// The history document's name in the history directory.
pub const HISTORY_FILE: &str = "history.json";

/// A branch's measured history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    pub history_schema_version: u32,
    /// The tree watched, as the user gave it (a path or a URL).
    pub tree: String,
    /// The branch (or any revision) whose head each night measures.
    pub branch: String,
    /// Every night that measured a new head, oldest first.
    pub nights: Vec<Night>,
    /// The change points of every campaign's primary metrics over the
    /// nights, found again after each night (oldest first).
    pub change_points: Vec<ChangePoint>,
}

/// One commit, as a report names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitInfo {
    /// The full hex id.
    pub commit: String,
    pub subject: String,
    /// `Name <email>`.
    pub author: String,
}

/// One night: a new head measured against the head before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Night {
    /// From 0, in order.
    pub index: usize,
    pub started_at: jiff::Timestamp,
    pub head: CommitInfo,
    /// The head measured the night before; absent on the first night,
    /// which measures its head against itself (an A/A baseline).
    pub previous: Option<String>,
    /// The commits since `previous` on the first-parent line, oldest
    /// first (empty on the first night).
    pub commits: Vec<CommitInfo>,
    /// The night's campaigns and why each was chosen.
    pub runs: Vec<NightRun>,
}

/// One campaign's run of a night.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NightRun {
    pub campaign: String,
    /// The campaign file, relative to where `watch` ran.
    pub campaign_file: PathBuf,
    /// The run's output directory, relative to the history directory.
    pub dir: PathBuf,
    /// Why it ran: named on the command line, or the functions of the new
    /// commits it reaches.
    pub chosen: String,
    /// The run's headline (its stored judgement's), or why it failed.
    pub headline: String,
    /// The process's outcome: `ok`, `regressed`, or `failed: <why>`.
    pub outcome: String,
}

/// A step in one metric's history: the nights before `night` and the
/// nights from it on differ, by an interval that clears the band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangePoint {
    pub campaign: String,
    pub metric: String,
    /// The metric's unit as its spec names it (`ns`, `pages`, ...).
    pub unit: String,
    /// The index of the first night after the step.
    pub night: usize,
    /// The last head before the step and the first after it.
    pub before: String,
    pub after: String,
    /// The commits between them, oldest first: one of them made the step.
    pub commits: Vec<CommitInfo>,
    /// The mean of the segment before and after (the metric's unit).
    pub before_mean: f64,
    pub after_mean: f64,
    /// After against before, in percent, with its interval.
    pub change_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    /// The step's p-value (permutation test of the segment, docs/watch.md).
    pub p: f64,
    /// `regression`, `improvement` or `changed` (a count), by the
    /// metric's direction.
    pub verdict: String,
    /// The hunt across the step's commits, when it spans more than one.
    pub hunt: Option<CommitHunt>,
    /// The robot's report, relative to the history directory.
    pub report: Option<PathBuf>,
}

/// A hunt across a change point's commits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitHunt {
    /// The hunt's output directory (`bisect.json`), relative to the
    /// history directory.
    pub dir: PathBuf,
    /// Kernel pairs the hunt measured.
    pub pairs: usize,
    /// The first commit that carries the change, when found.
    pub found: Option<CommitInfo>,
    /// That commit against its parent, with its own interval.
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// Where the hunt stands, in words (found, stopped, why).
    pub state: String,
}

/// A history that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot read the watch history {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a watch history", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} has history schema {found}; this patchbench reads schema {HISTORY_SCHEMA_VERSION}", path.display())]
    Schema { path: PathBuf, found: u32 },
    #[error("{} watches {found}, not {wanted}; give another --history directory", path.display())]
    Foreign {
        path: PathBuf,
        found: String,
        wanted: String,
    },
}

impl History {
    pub fn new(tree: &str, branch: &str) -> History {
        History {
            history_schema_version: HISTORY_SCHEMA_VERSION,
            tree: tree.to_string(),
            branch: branch.to_string(),
            nights: Vec::new(),
            change_points: Vec::new(),
        }
    }

    /// Read `DIR/history.json`; `None` when the directory has none yet.
    pub fn load(dir: &Path) -> Result<Option<History>, HistoryError> {
        let path = dir.join(HISTORY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(HistoryError::Read { path, source }),
        };
        let history: History =
            serde_json::from_str(&text).map_err(|source| HistoryError::Parse {
                path: path.clone(),
                source,
            })?;
        if history.history_schema_version != HISTORY_SCHEMA_VERSION {
            return Err(HistoryError::Schema {
                path,
                found: history.history_schema_version,
            });
        }
        Ok(Some(history))
    }

    /// The night that measured `commit` as its head, if any.
    pub fn night_of(&self, commit: &str) -> Option<&Night> {
        self.nights.iter().find(|n| n.head.commit == commit)
    }

    /// The last head measured.
    pub fn last_head(&self) -> Option<&str> {
        self.nights.last().map(|n| n.head.commit.as_str())
    }
}
