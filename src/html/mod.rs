//! Static HTML result pages: a page per run, an index of runs, and a trend
//! page per campaign, each one self-contained (inline CSS and SVG, no
//! script, no outside asset), so they work from `file://` and GitHub Pages.
//!
//! Rendering is pure: [`render_run`], [`render_index`] and [`render_trend`]
//! map [`Run`]s to strings, byte for byte the same for the same input. Only
//! [`write_site`] touches the filesystem. Every text from a results document
//! is escaped by askama; the SVG plots `plot` draws are the only markup
//! embedded unescaped.
//!
//! The rows (means, changes, intervals, verdicts) are the stored
//! judgement's, through [`Run::new`]: a page renders them and never
//! judges.
//!
//! Site layout, as [`write_site`] writes it:
//!
//! ```text
//! index.html                    every run, newest first
//! trends/<campaign>.html        per metric, each run's level and change
//! runs/<start>-<campaign>/
//!     index.html                the run's page
//!     results.json              its results document
//!     boots/<i>-<label>/console.log   copied from the run directory
//! ```
//!
//! With a watch history ([`write_history_site`]), the index lists its change
//! points above the runs, each campaign's trend page marks them on their
//! metric's two plots and lists them below the plots, and each has a page:
//!
//! ```text
//! changes/<campaign>-<metric>-<night>.html   the change point's page
//! changes/<campaign>-<metric>-<night>.md     the robot's report, copied
//! ```

pub mod changes;
pub mod pages;
pub mod plot;
pub mod view;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use askama::Template;

pub use plot::{PlotError, Svg};
pub use view::Run;

use crate::results::history::History;
use changes::HistorySite;

#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    #[error("cannot render the {page} page")]
    Render {
        page: &'static str,
        #[source]
        source: askama::Error,
    },
    #[error("cannot draw a plot")]
    Plot(#[source] PlotError),
    #[error("cannot write {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn render(page: &'static str, t: &impl Template) -> Result<String, HtmlError> {
    t.render()
        .map_err(|source| HtmlError::Render { page, source })
}

/// The page of one run, on its own: console logs link relative to
/// `run.run_dir`, so the page belongs in that directory (next to
/// `results.json`).
pub fn render_run(run: &Run) -> Result<String, HtmlError> {
    render_run_with(run, view::Nav::default())
}

fn render_run_with(run: &Run, nav: view::Nav) -> Result<String, HtmlError> {
    let page = pages::run_page(run, nav).map_err(HtmlError::Plot)?;
    render("run", &page)
}

/// The index of `runs`, newest first; `href(i)` is the page of `runs[i]`.
pub fn render_index(runs: &[Run], href: impl Fn(usize) -> String) -> Result<String, HtmlError> {
    render_index_with(runs, href, None)
}

fn render_index_with(
    runs: &[Run],
    href: impl Fn(usize) -> String,
    history: Option<&HistorySite>,
) -> Result<String, HtmlError> {
    let mut order: Vec<(usize, &Run)> = runs.iter().enumerate().collect();
    order.sort_by(|(_, a), (_, b)| {
        (b.results.started_at, &b.results.campaign)
            .cmp(&(a.results.started_at, &a.results.campaign))
    });
    let campaigns: Vec<String> = site_campaigns(runs, history);
    let trend_files = file_names(&campaigns);
    let page = pages::IndexPage {
        changes: history.map_or_else(Vec::new, HistorySite::rows_newest_first),
        runs: order
            .iter()
            .map(|(i, r)| pages::run_summary(r, href(*i)))
            .collect(),
        campaigns: campaigns
            .iter()
            .map(|c| (c.clone(), format!("trends/{}", trend_files[c])))
            .collect(),
    };
    render("index", &page)
}

/// The trend page of one campaign over `runs` (any order; drawn oldest
/// first); `href(i)` is the page of `runs[i]`.
pub fn render_trend(
    campaign: &str,
    runs: &[Run],
    href: impl Fn(usize) -> String,
) -> Result<String, HtmlError> {
    render_trend_with(campaign, runs, href, view::Nav::default(), None)
}

fn render_trend_with(
    campaign: &str,
    runs: &[Run],
    href: impl Fn(usize) -> String,
    nav: view::Nav,
    history: Option<&HistorySite>,
) -> Result<String, HtmlError> {
    let mut own: Vec<(&Run, String)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.results.campaign == campaign)
        .map(|(i, r)| (r, href(i)))
        .collect();
    // A history's nights in their order; other runs by their start.
    if history.is_some() && own.iter().all(|(r, _)| r.night.is_some()) {
        own.sort_by_key(|(r, _)| (r.night, r.results.started_at));
    } else {
        own.sort_by_key(|(r, _)| r.results.started_at);
    }
    let page = pages::trend_page(campaign, &own, nav, history).map_err(HtmlError::Plot)?;
    render("trend", &page)
}

/// Every campaign with a trend page: those of `runs`, and with a history
/// those of its change points (whose pages link their trend page even when
/// no run of theirs is on the site).
fn site_campaigns(runs: &[Run], history: Option<&HistorySite>) -> Vec<String> {
    runs.iter()
        .map(|r| r.results.campaign.clone())
        .chain(
            history
                .into_iter()
                .flat_map(|h| &h.history.change_points)
                .map(|cp| cp.campaign.clone()),
        )
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// `names`, in order, with `-2`, `-3`... added to repeats.
fn distinct(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut taken = std::collections::BTreeSet::new();
    names
        .map(|base| {
            let mut name = base.clone();
            let mut n = 1;
            while !taken.insert(name.clone()) {
                n += 1;
                name = format!("{base}-{n}");
            }
            name
        })
        .collect()
}

/// A distinct `.html` file name per key, from its slug, with `-2`, `-3`...
/// on collisions (keys in sorted order, so the names are stable).
fn file_names(keys: &[String]) -> BTreeMap<String, String> {
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort();
    sorted.dedup();
    let names = distinct(sorted.iter().map(|k| view::slugify(k)));
    sorted
        .into_iter()
        .cloned()
        .zip(names.into_iter().map(|n| format!("{n}.html")))
        .collect()
}

/// What [`write_site`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteReport {
    /// Every file written, pages and copies, in the order written.
    pub written: Vec<PathBuf>,
    /// Console logs a page links to that were not found in their run
    /// directory; their links dangle.
    pub missing_logs: Vec<PathBuf>,
    /// Reports a change point names that were not found below the history
    /// directory (or whose path leaves it); their pages say so.
    pub missing_reports: Vec<PathBuf>,
}

fn write(path: &Path, bytes: &[u8], report: &mut SiteReport) -> Result<(), HtmlError> {
    let io = |source| HtmlError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    crate::fsutil::write_atomic(path, bytes).map_err(io)?;
    report.written.push(path.to_owned());
    Ok(())
}

/// Write the whole site for `runs` into `dir` (layout in the module doc),
/// each file atomically. Runs' console logs below their `run_dir` are copied
/// next to their page.
pub fn write_site(dir: &Path, runs: &[Run]) -> Result<SiteReport, HtmlError> {
    write_all(dir, runs, None)
}

/// [`write_site`] with a watch history: `history`, read from `history_dir`.
/// The runs that are its nights say so ([`Run::of_night`]); every change
/// point gets a page under `changes/`, with its report copied from below
/// `history_dir` when there is one, a marker on its campaign's trend page
/// and a line on the index.
pub fn write_history_site(
    dir: &Path,
    runs: &[Run],
    history: &History,
    history_dir: &Path,
) -> Result<SiteReport, HtmlError> {
    write_all(dir, runs, Some((history, history_dir)))
}

fn write_all(
    dir: &Path,
    runs: &[Run],
    history: Option<(&History, &Path)>,
) -> Result<SiteReport, HtmlError> {
    let mut report = SiteReport::default();
    let run_dirs = distinct(runs.iter().map(Run::slug));
    // The change points' pages and the reports copied beside them.
    let mut copies: Vec<Option<Vec<u8>>> = Vec::new();
    let site = history.map(|(history, history_dir)| {
        let stems = distinct(history.change_points.iter().map(|cp| {
            format!(
                "{}-{}-{}",
                view::slugify(&cp.campaign),
                view::slugify(&cp.metric),
                cp.night
            )
        }));
        for cp in &history.change_points {
            let Some(rel) = &cp.report else {
                copies.push(None);
                continue;
            };
            let bytes = pages::log_below(history_dir, rel)
                .and_then(|rel| std::fs::read(history_dir.join(rel)).ok());
            if bytes.is_none() {
                report.missing_reports.push(history_dir.join(rel));
            }
            copies.push(bytes);
        }
        HistorySite {
            history,
            stems,
            reports: copies.iter().map(Option::is_some).collect(),
        }
    });
    let campaigns = site_campaigns(runs, site.as_ref());
    let trend_files = file_names(&campaigns);

    for (run, run_dir) in runs.iter().zip(&run_dirs) {
        let rel = format!("runs/{run_dir}");
        let nav = view::Nav {
            home: Some("../../index.html".into()),
            trend: Some(format!(
                "../../trends/{}",
                trend_files[&run.results.campaign]
            )),
        };
        let html = render_run_with(run, nav)?;
        let out = dir.join(&rel);
        write(&out.join("index.html"), html.as_bytes(), &mut report)?;
        let mut json = serde_json::to_string_pretty(run.results).expect("results serialize");
        json.push('\n');
        write(&out.join("results.json"), json.as_bytes(), &mut report)?;
        for boot in &run.results.boots {
            // The log below the run's directory (a document records it
            // relative to that; older ones recorded it whole).
            let Some(log_rel) = pages::log_below(run.run_dir, &boot.console_log) else {
                continue;
            };
            let log = run.run_dir.join(&log_rel);
            match std::fs::read(&log) {
                Ok(bytes) => write(&out.join(&log_rel), &bytes, &mut report)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    report.missing_logs.push(log);
                }
                Err(source) => return Err(HtmlError::Io { path: log, source }),
            }
        }
    }
    if let Some(site) = &site {
        for (i, (cp, copy)) in site.history.change_points.iter().zip(&copies).enumerate() {
            // The page of a night's run of the change point's campaign.
            let run_href = |night: usize| {
                runs.iter()
                    .position(|r| r.night == Some(night) && r.results.campaign == cp.campaign)
                    .map(|k| format!("../runs/{}/index.html", run_dirs[k]))
            };
            let trend = format!("../trends/{}", trend_files[&cp.campaign]);
            let page = changes::change_page(site, i, trend, run_href);
            let html = render("change point", &page)?;
            let out = dir.join("changes");
            write(
                &out.join(format!("{}.html", site.stems[i])),
                html.as_bytes(),
                &mut report,
            )?;
            if let Some(bytes) = copy {
                write(
                    &out.join(format!("{}.md", site.stems[i])),
                    bytes,
                    &mut report,
                )?;
            }
        }
    }
    for (campaign, file) in &trend_files {
        let nav = view::Nav {
            home: Some("../index.html".into()),
            trend: None,
        };
        let html = render_trend_with(
            campaign,
            runs,
            |i| format!("../runs/{}/index.html", run_dirs[i]),
            nav,
            site.as_ref(),
        )?;
        write(&dir.join("trends").join(file), html.as_bytes(), &mut report)?;
    }
    let html = render_index_with(
        runs,
        |i| format!("runs/{}/index.html", run_dirs[i]),
        site.as_ref(),
    )?;
    write(&dir.join("index.html"), html.as_bytes(), &mut report)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colliding_slugs_get_distinct_file_names() {
        let names = file_names(&["a b".into(), "a-b".into(), "a b".into(), "<>".into()]);
        assert_eq!(names["a b"], "a-b.html");
        assert_eq!(names["a-b"], "a-b-2.html");
        assert_eq!(names["<>"], "run.html");
    }
}
