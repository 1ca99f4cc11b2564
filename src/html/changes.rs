//! A watch history on the site: its change points as rows of the index's
//! and the trend pages' tables, a page of their own each, and their markers
//! on the trend plots. Everything shown is `watch`'s record
//! (`results::history`, `history.json`): nothing here finds, measures or
//! judges a change point, it only formats the stored one.

use askama::Template;

use super::view::{Nav, short, signed_pct};
use crate::model::{Unit, Verdict};
use crate::results::history::{ChangePoint, CommitHunt, CommitInfo, History, Night};

/// The commits a table row lists before "and N more" (the change point's
/// page lists them all).
pub const COMMITS_IN_A_ROW: usize = 5;

/// A watch history as the site lays it out.
#[derive(Debug, Clone)]
pub struct HistorySite<'h> {
    pub history: &'h History,
    /// Per change point, in the history's order: its page's file stem
    /// under `changes/` (`<stem>.html`, and `<stem>.md` for its report).
    pub stems: Vec<String>,
    /// Per change point: whether its report was copied beside its page.
    pub reports: Vec<bool>,
}

impl<'h> HistorySite<'h> {
    /// The change points of `campaign`, with their index in the history.
    pub fn of_campaign<'s>(
        &'s self,
        campaign: &'s str,
    ) -> impl Iterator<Item = (usize, &'h ChangePoint)> + 's {
        self.history
            .change_points
            .iter()
            .enumerate()
            .filter(move |(_, cp)| cp.campaign == campaign)
    }

    /// The row of change point `i`, its links relative to a page `up`
    /// directories below the site's root (`""` or `"../"`).
    pub fn row(&self, i: usize, up: &str) -> ChangeRow {
        let cp = &self.history.change_points[i];
        let stem = &self.stems[i];
        let night = self.history.nights.get(cp.night);
        ChangeRow {
            href: format!("{up}changes/{stem}.html"),
            report_href: self.reports[i].then(|| format!("{up}changes/{stem}.md")),
            campaign: cp.campaign.clone(),
            metric: cp.metric.clone(),
            night: night_label(cp.night, night),
            date: night.map_or_else(String::new, night_date),
            verdict: verdict(&cp.verdict),
            verdict_text: cp.verdict.clone(),
            change: signed_pct(cp.change_pct),
            change_ci: interval(cp.ci_low_pct, cp.ci_high_pct),
            commits: cp
                .commits
                .iter()
                .take(COMMITS_IN_A_ROW)
                .map(CommitView::of)
                .collect(),
            more_commits: cp.commits.len().saturating_sub(COMMITS_IN_A_ROW),
            hunt: cp.hunt.as_ref().map(HuntView::of),
        }
    }

    /// Every change point's row, newest first (the index's order), links
    /// relative to the site's root.
    pub fn rows_newest_first(&self) -> Vec<ChangeRow> {
        let mut order: Vec<(usize, &ChangePoint)> =
            self.history.change_points.iter().enumerate().collect();
        order.sort_by(|(_, a), (_, b)| {
            (b.night, &a.campaign, &a.metric).cmp(&(a.night, &b.campaign, &b.metric))
        });
        order.into_iter().map(|(i, _)| self.row(i, "")).collect()
    }
}

/// One commit, as the tables list it.
#[derive(Debug, Clone)]
pub struct CommitView {
    pub short: String,
    pub commit: String,
    pub subject: String,
    pub author: String,
}

impl CommitView {
    pub fn of(c: &CommitInfo) -> CommitView {
        CommitView {
            short: short(&c.commit).to_string(),
            commit: c.commit.clone(),
            subject: c.subject.clone(),
            author: c.author.clone(),
        }
    }
}

/// A change point's hunt across its commits.
#[derive(Debug, Clone)]
pub struct HuntView {
    pub state: String,
    pub pairs: usize,
    /// The hunt's output directory, relative to the history directory.
    pub dir: String,
    pub found: Option<CommitView>,
    /// The found commit against its parent, and its interval; empty when
    /// the hunt has none.
    pub change: String,
    pub change_ci: String,
}

impl HuntView {
    fn of(h: &CommitHunt) -> HuntView {
        HuntView {
            state: h.state.clone(),
            pairs: h.pairs,
            dir: h.dir.display().to_string(),
            found: h.found.as_ref().map(CommitView::of),
            change: h.change_pct.map_or_else(String::new, signed_pct),
            change_ci: match (h.ci_low_pct, h.ci_high_pct) {
                (Some(lo), Some(hi)) => interval(lo, hi),
                _ => String::new(),
            },
        }
    }
}

/// One change point in a table (the index's, a trend page's).
#[derive(Debug, Clone)]
pub struct ChangeRow {
    /// Its page.
    pub href: String,
    /// The robot's Markdown report, copied beside its page.
    pub report_href: Option<String>,
    pub campaign: String,
    pub metric: String,
    /// `night 3 (1a2b3c4d5e6f)`: the first night after the step.
    pub night: String,
    pub date: String,
    /// The record's verdict, when it is one of the site's words.
    pub verdict: Option<Verdict>,
    pub verdict_text: String,
    pub change: String,
    pub change_ci: String,
    /// The first [`COMMITS_IN_A_ROW`] commits between the two heads.
    pub commits: Vec<CommitView>,
    pub more_commits: usize,
    pub hunt: Option<HuntView>,
}

/// `[lo, hi]`, each signed, as the comparison tables write an interval.
fn interval(lo: f64, hi: f64) -> String {
    format!("[{}, {}]", signed_pct(lo), signed_pct(hi))
}

/// The site's verdict for a change point's `regression`, `improvement` or
/// `changed`.
fn verdict(word: &str) -> Option<Verdict> {
    Verdict::ALL.into_iter().find(|v| v.label() == word)
}

pub(super) fn night_label(index: usize, night: Option<&Night>) -> String {
    match night {
        Some(n) => format!("night {index} ({})", short(&n.head.commit)),
        None => format!("night {index}"),
    }
}

fn night_date(night: &Night) -> String {
    night.started_at.strftime("%Y-%m-%d %H:%M UTC").to_string()
}

/// A night as a change point's page names it, with its run of the
/// campaign when the site has one.
#[derive(Debug, Clone)]
pub struct NightView {
    pub label: String,
    pub date: String,
    pub head: Option<CommitView>,
    pub run_href: Option<String>,
}

/// What became of the change point's report.
#[derive(Debug, Clone)]
pub enum ReportView {
    /// Copied beside the page: its href.
    Copied(String),
    /// Named by the record but not found below the history directory.
    Missing(String),
    /// The record names none.
    None,
}

#[derive(Template)]
#[template(path = "change.html")]
pub struct ChangePage {
    pub nav: Nav,
    pub campaign: String,
    pub metric: String,
    pub row: ChangeRow,
    pub headline: String,
    pub before: NightView,
    pub after: NightView,
    /// The two nights again, each with which side of the step it is on.
    pub sides: Vec<(&'static str, NightView)>,
    pub before_mean: String,
    pub after_mean: String,
    pub unit: &'static str,
    pub p: String,
    /// Every commit between the two heads, oldest first.
    pub commits: Vec<CommitView>,
    /// The commands that measure the step again.
    pub reproduce: Vec<String>,
    /// The same for the commit the hunt found.
    pub reproduce_found: Vec<String>,
    pub report: ReportView,
}

/// `text` as one shell word: as it is when it holds only characters no
/// shell reads specially, else single-quoted.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The commands that measure again, with `campaign_file`, the commits
/// `revs` names (`git format-patch`'s revision arguments) as a series on
/// top of `base`.
fn reproduce(
    tree: &str,
    campaign_file: &str,
    base: &str,
    revs: &[String],
    dir: &str,
) -> Vec<String> {
    let (tree, file) = (shell_word(tree), shell_word(campaign_file));
    let revs: Vec<String> = revs.iter().map(|r| shell_word(r)).collect();
    vec![
        format!("git -C {tree} format-patch -o {dir} {}", revs.join(" ")),
        format!(
            "patchbench run {file} --tree {tree} --rev {} --series {dir}",
            shell_word(base)
        ),
    ]
}

/// The page of change point `i` of `site`; `run_href(night)` is the page
/// of that night's run of the campaign, relative to `changes/`;
/// `trend` the campaign's trend page.
pub fn change_page(
    site: &HistorySite,
    i: usize,
    trend: String,
    run_href: impl Fn(usize) -> Option<String>,
) -> ChangePage {
    let history = site.history;
    let cp = &history.change_points[i];
    let row = site.row(i, "../");
    let night_view = |commit: &str, fallback: Option<usize>| {
        let (index, night) = match history.nights.iter().position(|n| n.head.commit == commit) {
            Some(k) => (Some(k), history.nights.get(k)),
            None => (fallback, fallback.and_then(|k| history.nights.get(k))),
        };
        NightView {
            label: match (index, night) {
                (Some(k), n) => night_label(k, n),
                (None, _) => format!("head {}", short(commit)),
            },
            date: night.map_or_else(String::new, night_date),
            head: night.map(|n| CommitView::of(&n.head)),
            run_href: index.and_then(&run_href),
        }
    };
    let before = night_view(&cp.before, cp.night.checked_sub(1));
    let after = night_view(&cp.after, Some(cp.night));
    let unit: Option<Unit> =
        serde_json::from_value(serde_json::Value::String(cp.unit.clone())).ok();
    let scale = crate::report::scale(unit, cp.before_mean.abs().max(cp.after_mean.abs()));
    let (before_mean, after_mean) = (
        crate::report::show(cp.before_mean, scale),
        crate::report::show(cp.after_mean, scale),
    );
    let unit_label = if unit.is_some() { scale.label } else { "" };
    let p = if cp.p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{:.3}", cp.p)
    };
    let campaign_file = history
        .nights
        .get(cp.night)
        .into_iter()
        .chain(&history.nights)
        .flat_map(|n| &n.runs)
        .find(|r| r.campaign == cp.campaign)
        // No night ran the campaign (the record alone): a placeholder.
        .map_or_else(
            || "CAMPAIGN_FILE".to_string(),
            |r| r.campaign_file.display().to_string(),
        );
    let reproduce_found = cp
        .hunt
        .as_ref()
        .and_then(|h| h.found.as_ref())
        .map(|f| {
            reproduce(
                &history.tree,
                &campaign_file,
                &format!("{}^", f.commit),
                &["-1".to_string(), f.commit.clone()],
                "found-series",
            )
        })
        .unwrap_or_default();
    let headline = format!(
        "{} of {}: {} from {} to {}{}, {} {} (p {}), between {} and {}.",
        cp.metric,
        cp.campaign,
        cp.verdict,
        before_mean,
        after_mean,
        if unit_label.is_empty() {
            String::new()
        } else {
            format!(" {unit_label}")
        },
        row.change,
        row.change_ci,
        p,
        before.label,
        after.label,
    );
    ChangePage {
        nav: Nav {
            home: Some("../index.html".into()),
            trend: Some(trend),
        },
        campaign: cp.campaign.clone(),
        metric: cp.metric.clone(),
        headline,
        sides: vec![
            ("last before", before.clone()),
            ("first after", after.clone()),
        ],
        before,
        after,
        before_mean,
        after_mean,
        unit: unit_label,
        p,
        commits: cp.commits.iter().map(CommitView::of).collect(),
        reproduce: reproduce(
            &history.tree,
            &campaign_file,
            &cp.before,
            &[format!("{}..{}", cp.before, cp.after)],
            "after-series",
        ),
        reproduce_found,
        report: match (&row.report_href, &cp.report) {
            (Some(href), _) => ReportView::Copied(href.clone()),
            (None, Some(path)) => ReportView::Missing(path.display().to_string()),
            (None, None) => ReportView::None,
        },
        row,
    }
}

/// Where a change point's marker goes on a trend plot whose points are
/// the runs of `nights` (each run's night, `None` for a run from outside
/// the history), in the plot's order: between the last run of a night
/// before the step and the first of a night from it on. `None` when no
/// run of the plot comes from the history.
pub fn marker_x(nights: &[Option<usize>], step: usize) -> Option<f64> {
    let after = nights.iter().position(|n| n.is_some_and(|n| n >= step));
    let before = nights.iter().rposition(|n| n.is_some_and(|n| n < step));
    match (before, after) {
        (Some(b), Some(a)) if b < a => Some((b + a) as f64 / 2.0),
        (_, Some(a)) => Some(a as f64 - 0.5),
        (Some(b), None) => Some(b as f64 + 0.5),
        (None, None) => None,
    }
}

#[cfg(test)]
#[path = "changes_tests.rs"]
mod tests;
