//! `patchbench watch`: follow a branch night after night, as a robot does.
//!
//! Each call measures the branch's head once ([`next`] then [`measure`]):
//! the campaigns run with A at the head measured before and B at the new
//! head, B being the old head plus the commits between, written as a
//! series (`commits`), so a night is an ordinary campaign run in
//! `HISTORY/nights/<NNN>-<head12>/<campaign>/`. The first night measures
//! its head against itself (an A/A baseline). A head already measured is
//! not measured again.
//!
//! After each night the history's change points are found again over the
//! nights of every campaign that ran (`stats::changepoint`: binary
//! segmentation of the nights' means of B, each primary metric the lane
//! measures exactly). A new change point that spans more than one commit
//! is hunted across them as `run --bisect` hunts a series (the commits
//! are the series, applied on the head before the step), and gets a
//! robot's report (`report`): the step, the commit found with its own
//! interval, and the one command that reproduces it.
//!
//! `HISTORY/history.json` ([`crate::results::history`]) is rewritten
//! atomically after each campaign of a night; a night interrupted before
//! it is recorded is measured again by the next call, its campaigns
//! resuming from their own results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use git2::Oid;

use crate::campaign::{self, RunOptions};
use crate::config::{Plan, TreeSource};
use crate::events::{Event, Sink};
use crate::results::Results;
use crate::results::comparison::DirectionRecord;
use crate::results::history::{
    ChangePoint, CommitHunt, CommitInfo, HISTORY_FILE, History, HistoryError, Night, NightRun,
};
use crate::results::hunt::HuntState;
use crate::stats::changepoint::{ChangePointOptions, change_points};
use crate::variants::{Patches, VariantSet};

pub mod commits;
pub mod report;

use commits::Line;

/// Makes a campaign's plan for a night or a hunt: the campaign file with
/// the tree at `rev`, `series` (a directory, or `none`), hunting when
/// `bisect`.
pub type Planner<'a> = dyn Fn(&Path, TreeSource, &str, bool) -> anyhow::Result<Plan> + 'a;

/// What a watch follows, and how its runs run.
pub struct Watch<'a> {
    /// The local git repository.
    pub tree: PathBuf,
    pub branch: String,
    pub history_dir: PathBuf,
    /// Every run's options; `out_dir` is set per run.
    pub run: RunOptions,
    /// Hunt new change points across their commits.
    pub hunt: bool,
    pub planner: &'a Planner<'a>,
}

/// The night to measure, or why there is none.
pub enum Next {
    /// The head was measured already, on this night.
    Measured {
        night: usize,
        head: String,
    },
    Night(Box<NightPlan>),
}

/// A night before it runs.
pub struct NightPlan {
    pub history: History,
    pub index: usize,
    pub head: Oid,
    /// The head as the history names it.
    pub head_info: CommitInfo,
    pub previous: Option<Oid>,
    pub line: Option<Line>,
    /// The commits since the previous head, oldest first.
    pub commits: Vec<CommitInfo>,
    /// The night's directory, relative to the history's.
    pub dir: PathBuf,
    /// The series of the commits (absolute), absent on the first night.
    pub series: Option<PathBuf>,
}

/// A campaign a night runs, and why.
pub struct Chosen {
    pub file: PathBuf,
    pub why: String,
}

/// What a night did.
pub struct Outcome {
    pub history: History,
    /// The change points this night found that the history did not have.
    pub new_change_points: Vec<ChangePoint>,
    /// Regressions: the night's own runs' and its new change points'.
    pub regressed: Vec<String>,
}

/// Read the history and the branch: the night to measure next (git and
/// the files off the async threads).
pub async fn next(w: &Watch<'_>) -> anyhow::Result<Next> {
    let (tree, branch, dir) = (w.tree.clone(), w.branch.clone(), w.history_dir.clone());
    crate::blocking::unblock(move || next_blocking(&tree, &branch, &dir)).await
}

fn next_blocking(tree: &Path, branch: &str, history_dir: &Path) -> anyhow::Result<Next> {
    let repo = commits::open(tree)?;
    let head = commits::head(&repo, branch)?;
    let tree_name = tree.display().to_string();
    let history = match History::load(history_dir)? {
        Some(h) if h.tree != tree_name || h.branch != branch => {
            return Err(HistoryError::Foreign {
                path: history_dir.join(HISTORY_FILE),
                found: format!("{} {}", h.tree, h.branch),
                wanted: format!("{tree_name} {branch}"),
            }
            .into());
        }
        Some(h) => h,
        None => History::new(&tree_name, branch),
    };
    if let Some(night) = history.night_of(&head.to_string()) {
        return Ok(Next::Measured {
            night: night.index,
            head: head.to_string(),
        });
    }
    let index = history.nights.len();
    let dir = commits::night_dir(index, head);
    let previous = history
        .last_head()
        .map(Oid::from_str)
        .transpose()
        .context("history.json names a head that is not a commit id")?;
    let (line, commit_infos, series) = match previous {
        None => (None, Vec::new(), None),
        Some(prev) => {
            repo.find_commit(prev).with_context(|| {
                format!(
                    "the head measured last, {prev}, is not in {}: fetch it, or start a new history",
                    tree.display()
                )
            })?;
            let line = commits::line(&repo, prev, head)?;
            let infos = match &line {
                Line::Commits(c) => c
                    .iter()
                    .map(|&id| commits::info(&repo, id))
                    .collect::<anyhow::Result<_>>()?,
                Line::Rewritten => vec![commits::info(&repo, head)?],
            };
            let series = history_dir.join(&dir).join("series");
            commits::write_series(&repo, prev, head, &line, &series)?;
            (Some(line), infos, Some(series))
        }
    };
    Ok(Next::Night(Box::new(NightPlan {
        history,
        index,
        head,
        head_info: commits::info(&repo, head)?,
        previous,
        line,
        commits: commit_infos,
        dir,
        series,
    })))
}

/// Measure a night: each chosen campaign, then the change points, the
/// hunts and the reports. The history is saved after each campaign and at
/// the end.
pub async fn measure(
    w: &Watch<'_>,
    night: NightPlan,
    chosen: Vec<Chosen>,
    sink: &dyn Sink,
) -> anyhow::Result<Outcome> {
    let mut history = night.history.clone();
    let mut record = Night {
        index: night.index,
        started_at: jiff::Timestamp::now(),
        head: night.head_info.clone(),
        previous: night.previous.map(|p| p.to_string()),
        commits: night.commits.clone(),
        runs: Vec::new(),
    };
    let (rev, series) = match (night.previous, &night.series) {
        (Some(prev), Some(series)) => (prev.to_string(), series.display().to_string()),
        _ => (night.head.to_string(), "none".to_string()),
    };
    let mut regressed = Vec::new();
    for c in &chosen {
        let plan = (w.planner)(&c.file, git_tree(&w.tree, &rev), &series, false)?;
        check_two_variants(&plan, &c.file)?;
        let dir = night.dir.join(&plan.name);
        sink.emit(Event::Note(format!(
            "watch: night {} ({}), {}: {}",
            night.index,
            commits::short(night.head),
            plan.name,
            c.why
        )));
        let opts = RunOptions {
            out_dir: w.history_dir.join(&dir),
            ..w.run.clone()
        };
        let outcome = campaign::run(&plan, &opts, sink).await?;
        sink.emit(Event::Output(crate::report::terminal(&outcome.results)));
        let run_regressed = outcome.regressed();
        regressed.extend(run_regressed.iter().map(|m| format!("{}: {m}", plan.name)));
        record.runs.push(NightRun {
            campaign: plan.name.clone(),
            campaign_file: c.file.clone(),
            dir,
            chosen: c.why.clone(),
            headline: outcome
                .judgement()
                .map(|j| {
                    j.headlines
                        .iter()
                        .map(|h| h.text.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default(),
            outcome: if run_regressed.is_empty() {
                "ok".into()
            } else {
                "regressed".into()
            },
        });
    }
    history.nights.push(record);
    save(&w.history_dir, &history)?;
    let found = find_change_points(&history, &w.history_dir)?;
    let mut new = Vec::new();
    let mut hunts: BTreeMap<(String, usize), Hunted> = BTreeMap::new();
    let mut all = Vec::new();
    for mut cp in found {
        let known = history.change_points.iter().find(|k| same_step(k, &cp));
        if let Some(known) = known {
            cp.hunt = known.hunt.clone();
            cp.report = known.report.clone();
            all.push(cp);
            continue;
        }
        if cp.commits.len() == 1 {
            cp.hunt = night_own(&history, &w.history_dir, &cp)?;
        } else if w.hunt && cp.commits.len() > 1 {
            let key = (cp.campaign.clone(), cp.night);
            if !hunts.contains_key(&key) {
                let h = hunt(w, &history, &cp, sink).await?;
                hunts.insert(key.clone(), h);
            }
            // One hunt per step of a campaign; each metric takes its own
            // interval from the found commit's comparisons.
            let (found, own) = &hunts[&key];
            let mut h = found.clone();
            if let Some(c) = own
                .iter()
                .find(|c| c.metric == cp.metric && c.condition.is_none())
                .and_then(|c| c.mean_change.as_ref())
            {
                h.change_pct = Some(c.pct);
                h.ci_low_pct = c.ci.as_ref().map(|i| i.lo);
                h.ci_high_pct = c.ci.as_ref().map(|i| i.hi);
            }
            cp.hunt = Some(h);
        }
        let rel = PathBuf::from("reports")
            .join(format!("{}-{}-n{:03}.md", cp.campaign, cp.metric, cp.night));
        let file = campaign_file(&history, &cp.campaign);
        let text = report::markdown(&history, &cp, &file, &w.tree);
        let path = w.history_dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        crate::fsutil::write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        cp.report = Some(rel);
        if cp.verdict == "regression" {
            regressed.push(format!("{}: {} (change point)", cp.campaign, cp.metric));
        }
        sink.emit(Event::Output(format!("{}\n", report::headline(&cp))));
        new.push(cp.clone());
        all.push(cp);
    }
    history.change_points = all;
    save(&w.history_dir, &history)?;
    Ok(Outcome {
        history,
        new_change_points: new,
        regressed,
    })
}

fn git_tree(tree: &Path, rev: &str) -> TreeSource {
    TreeSource::Git {
        path: tree.to_owned(),
        rev: Some(rev.to_string()),
    }
}

/// A night's B must be the new head: the campaign's variants are the
/// default pair, the base and the base with the whole series, with no
/// run-time settings of their own.
fn check_two_variants(plan: &Plan, file: &Path) -> anyhow::Result<()> {
    let ok = match &plan.variants {
        VariantSet::Listed(v) => {
            v.len() == 2
                && v[0].patches == Patches::None
                && v[1].patches == Patches::All
                && v.iter().all(|v| v.settings.is_empty())
        }
        _ => false,
    };
    if ok {
        return Ok(());
    }
    Err(crate::config::ConfigError::Invalid {
        path: file.to_owned(),
        message: "watch measures each new head (B) against the head before (A): the campaign needs the default variants, the base and the base with the whole series, without settings of their own".into(),
    }
    .into())
}

fn save(dir: &Path, history: &History) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(HISTORY_FILE);
    let mut text = serde_json::to_string_pretty(history)?;
    text.push('\n');
    crate::fsutil::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn same_step(a: &ChangePoint, b: &ChangePoint) -> bool {
    a.campaign == b.campaign && a.metric == b.metric && a.after == b.after && a.before == b.before
}

fn campaign_file(history: &History, campaign: &str) -> PathBuf {
    history
        .nights
        .iter()
        .rev()
        .flat_map(|n| &n.runs)
        .find(|r| r.campaign == campaign)
        .map(|r| r.campaign_file.clone())
        .unwrap_or_default()
}

/// The change points of every campaign's primary metrics over its nights,
/// from the nights' runs in `dir` (without hunts or reports).
pub fn find_change_points(history: &History, dir: &Path) -> anyhow::Result<Vec<ChangePoint>> {
    // Each campaign's nights: the history's night index, and the run.
    let mut by_campaign: BTreeMap<String, Vec<(usize, Results)>> = BTreeMap::new();
    for night in &history.nights {
        for run in &night.runs {
            let results = Results::load(&dir.join(&run.dir).join("results.json"))?;
            by_campaign
                .entry(run.campaign.clone())
                .or_default()
                .push((night.index, results));
        }
    }
    let mut out = Vec::new();
    for (campaign, c) in by_campaign {
        let Some((_, last)) = c.last() else {
            continue;
        };
        let Some(judgement) = &last.judgement else {
            continue;
        };
        for row in judgement.rows.iter().filter(|r| {
            r.primary
                && r.condition.is_none()
                && r.verdict != crate::results::VerdictRecord::Context
        }) {
            let series: Vec<Vec<f64>> = c
                .iter()
                .map(|(_, r)| head_samples(r, &row.metric))
                .collect();
            if series.iter().any(|s| s.is_empty()) {
                continue;
            }
            let steps = change_points(&series, &ChangePointOptions::default())?;
            for step in steps {
                let after_night = c[step.index].0;
                let before_night = c[step.index - 1].0;
                let commits: Vec<CommitInfo> = history
                    .nights
                    .iter()
                    .filter(|n| n.index > before_night && n.index <= after_night)
                    .flat_map(|n| n.commits.clone())
                    .collect();
                out.push(ChangePoint {
                    campaign: campaign.clone(),
                    metric: row.metric.clone(),
                    unit: row
                        .unit
                        .and_then(|u| serde_json::to_value(u).ok())
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                    night: after_night,
                    before: history.nights[before_night].head.commit.clone(),
                    after: history.nights[after_night].head.commit.clone(),
                    commits,
                    before_mean: step.before_mean,
                    after_mean: step.after_mean,
                    change_pct: step.change_pct,
                    ci_low_pct: step.ci_low_pct,
                    ci_high_pct: step.ci_high_pct,
                    p: step.p,
                    verdict: verdict(row.direction, step.change_pct).into(),
                    hunt: None,
                    report: None,
                });
            }
        }
    }
    Ok(out)
}

/// B's measured samples of `metric` in the main workload: the new head's.
fn head_samples(results: &Results, metric: &str) -> Vec<f64> {
    let Some(b) = results.variants.get(1) else {
        return Vec::new();
    };
    results
        .boots
        .iter()
        .filter(|boot| boot.variant == b.name)
        .flat_map(|boot| &boot.samples)
        .filter(|s| s.condition.is_none())
        .filter_map(|s| s.metrics.get(metric).map(|v| *v as f64))
        .collect()
}

fn verdict(direction: DirectionRecord, change_pct: f64) -> &'static str {
    match direction {
        DirectionRecord::LowerIsBetter if change_pct > 0.0 => "regression",
        DirectionRecord::LowerIsBetter => "improvement",
        DirectionRecord::HigherIsBetter if change_pct < 0.0 => "regression",
        DirectionRecord::HigherIsBetter => "improvement",
        DirectionRecord::Neither => "changed",
    }
}

/// A step of one commit: the night's own run is that commit against its
/// parent, with its own interval; nothing to hunt.
fn night_own(
    history: &History,
    dir: &Path,
    cp: &ChangePoint,
) -> anyhow::Result<Option<CommitHunt>> {
    let Some(run) = history.nights[cp.night]
        .runs
        .iter()
        .find(|r| r.campaign == cp.campaign)
    else {
        return Ok(None);
    };
    let results = Results::load(&dir.join(&run.dir).join("results.json"))?;
    let change = results
        .judgement
        .as_ref()
        .and_then(|j| {
            j.rows
                .iter()
                .find(|r| r.metric == cp.metric && r.condition.is_none())
        })
        .and_then(|r| r.mean_change);
    Ok(Some(CommitHunt {
        dir: run.dir.clone(),
        pairs: 0,
        found: cp.commits.first().cloned(),
        change_pct: change.as_ref().map(|c| c.pct),
        ci_low_pct: change.as_ref().and_then(|c| c.ci.as_ref()).map(|i| i.lo),
        ci_high_pct: change.as_ref().and_then(|c| c.ci.as_ref()).map(|i| i.hi),
        state: "one commit came in that night: the night's own run is the commit against its parent, nothing to hunt".into(),
    }))
}

/// A hunt's result, and the found commit's own comparisons (every primary
/// metric, the commit against its parent; empty when none was found).
type Hunted = (CommitHunt, Vec<crate::results::ComparisonRecord>);

/// Hunt a change point across its commits: the commits as a series on the
/// head before the step, bisected as `run --bisect` bisects a series.
async fn hunt(
    w: &Watch<'_>,
    history: &History,
    cp: &ChangePoint,
    sink: &dyn Sink,
) -> anyhow::Result<Hunted> {
    let before = Oid::from_str(&cp.before)?;
    let after = Oid::from_str(&cp.after)?;
    let rel = PathBuf::from("hunts").join(format!("{}-n{:03}", cp.campaign, cp.night));
    let dir = w.history_dir.join(&rel);
    let series = dir.join("series");
    // git off the async threads: the line, and the series written.
    let (tree, to) = (w.tree.clone(), series.clone());
    let (line, patches) = crate::blocking::unblock(move || -> anyhow::Result<_> {
        let repo = commits::open(&tree)?;
        let line = commits::line(&repo, before, after)?;
        let patches = match line {
            Line::Rewritten => Vec::new(),
            Line::Commits(_) => commits::write_series(&repo, before, after, &line, &to)?,
        };
        Ok((line, patches))
    })
    .await?;
    if line == Line::Rewritten {
        return Ok((CommitHunt {
            dir: rel,
            pairs: 0,
            found: None,
            change_pct: None,
            ci_low_pct: None,
            ci_high_pct: None,
            state: "not hunted: the branch was rewritten between the two heads, so there is no line of commits to bisect".into(),
        }, Vec::new()));
    }
    let Line::Commits(ids) = &line else {
        unreachable!("checked above")
    };
    sink.emit(Event::Note(format!(
        "watch: hunting {} {} across {} commits ({}..{})",
        cp.campaign,
        cp.metric,
        ids.len(),
        commits::short(before),
        commits::short(after)
    )));
    let file = campaign_file(history, &cp.campaign);
    let plan = (w.planner)(
        &file,
        git_tree(&w.tree, &cp.before),
        &series.display().to_string(),
        true,
    )?;
    let opts = RunOptions {
        out_dir: dir.clone(),
        ..w.run.clone()
    };
    let outcome = crate::bisect::run(&plan, &opts, sink).await?;
    let pairs = outcome
        .hunt
        .steps
        .iter()
        .filter(|s| s.outcome != Some(crate::results::hunt::StepOutcome::Skipped))
        .count();
    let mut own_comparisons = Vec::new();
    let mut result = CommitHunt {
        dir: rel,
        pairs,
        found: None,
        change_pct: None,
        ci_low_pct: None,
        ci_high_pct: None,
        state: String::new(),
    };
    match &outcome.hunt.state {
        HuntState::Found { patch, own } => {
            // The change point's commits are this line's, in order.
            let commit = ids[patches[patch - 1]];
            result.found = cp.commits.get(patches[patch - 1]).cloned();
            own_comparisons = own.comparisons.clone();
            result.state = format!(
                "found in {pairs} kernel pair(s): commit {} is the first with the change",
                commits::short(commit)
            );
        }
        HuntState::Stopped { lo, hi, reason } => {
            result.state = format!(
                "stopped after {pairs} kernel pair(s) with the first commit among {}..{}: {reason}",
                commits::short(ids[patches[*lo]]),
                commits::short(ids[patches[hi - 1]])
            );
        }
        HuntState::NothingToHunt { reason } => {
            result.state = format!("nothing to hunt: {reason}");
        }
        HuntState::Running { .. } => result.state = "the hunt did not finish".into(),
    }
    Ok((result, own_comparisons))
}
