//! The page models behind `templates/*.html`: every value the templates
//! show, formatted here, so the templates only lay text out. Askama escapes
//! every field; the one exception is [`Svg`], which `plot` drew.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use askama::Template;

use super::changes::HistorySite;
use super::plot::{self, Svg, TrendAxis, TrendPoint};
use super::view::{Nav, Role, Run, plot_key, samples_by_boot, short, signed_pct};
use crate::model::Accel;
use crate::model::{Direction, Verdict};
use crate::results::{ComparisonRecord, Results};

#[derive(Template)]
#[template(path = "run.html")]
pub struct RunPage<'a> {
    pub nav: Nav,
    pub campaign: &'a str,
    pub date: String,
    pub version: &'a str,
    /// What A and B are ([`crate::results::Compares::sides`]).
    pub sides: String,
    pub accel: String,
    pub tcg: bool,
    /// The TCG lane's label after "TCG" (`report::tcg_mode`).
    pub tcg_mode: &'static str,
    pub accel_reason: &'a str,
    /// The cost lane's banner (model, TCG forced, icount); `None` outside it.
    pub cost_banner: Option<String>,
    /// The cost lane's top symbols by Δ modeled cycles, per phase.
    pub profiles: Vec<ProfileView>,
    /// More than two variants: tables get a variant column, and the key
    /// lists every variant.
    pub multi: bool,
    /// The baseline's name.
    pub baseline: String,
    /// `p1, p2, p3 against base`: what a multi-variant page compares.
    pub compared: String,
    /// What each candidate did, in a line (the judgement's headlines).
    pub headlines: Vec<String>,
    /// The lane the verdicts belong to, and the rule's version.
    pub lane: String,
    /// Every variant, the baseline first, with its colour on the plots.
    pub variant_keys: Vec<VariantKey>,
    /// The main workload's table, then each control's.
    pub tables: Vec<TableView>,
    /// Boots a guest failure stopped (`report::failed_boots`), one line
    /// each, then the variants left without a complete boot
    /// (`report::nothing_compared`); the guest's words in them are escaped
    /// like all text.
    pub stopped: Vec<String>,
    /// Metrics no sample of one side has, one line each.
    pub uncompared: Vec<String>,
    /// Under the tables when the boots ran in memory layouts of their own
    /// (`report::layouts_line`): what one observation is.
    pub judged_by_boot: Option<String>,
    pub plots: Vec<PlotView>,
    /// A per-patch campaign's waterfalls, one per metric; empty otherwise.
    pub waterfalls: Vec<PlotView>,
    pub method: String,
    /// The host's noise floor beside the guest's CVs, when measured.
    pub noise: Option<String>,
    /// How the boots' kernels split CPU time (`report::cputime_line`).
    pub cputime: Option<String>,
    pub tree: &'a crate::results::TreeInfo,
    pub series_source: &'a str,
    pub series_sha256: &'a str,
    pub head_commit: &'a str,
    pub patches: Vec<PatchView<'a>>,
    pub kernels: Vec<KernelView<'a>>,
    pub boots: Vec<BootView<'a>>,
    pub facts: FactsTable,
}

/// One condition's comparison table.
pub struct TableView {
    /// `Control `unlimited` (zswap_max: max)`; `None` for the main workload.
    pub title: Option<String>,
    /// The table's element id: `comparison-table`, then `control-<i>`.
    pub id: String,
    /// Its rows by [`Role`]: the primary rows, then the other verdicts,
    /// then the context rows, a group for each reason; no group is empty.
    pub groups: Vec<GroupView>,
}

/// Rows of one role under one heading: for context rows, of one reason,
/// which the heading states once for all of them.
pub struct GroupView {
    /// [`Role::key`]: the class of its `tbody`.
    pub role: &'static str,
    pub heading: String,
    pub rows: Vec<RowView>,
}

/// `rows` (each with its role and, for a context row, why) in groups by
/// role, in [`Role`]'s order, each keeping the rows' own order; context
/// rows in a group per reason, in the order the reasons first appear.
fn groups(rows: Vec<(Role, &str, RowView)>) -> Vec<GroupView> {
    let mut groups: Vec<(Role, &str, Vec<RowView>)> = Vec::new();
    for (role, why, row) in rows {
        let why = if role == Role::Context { why } else { "" };
        match groups.iter_mut().find(|(r, w, _)| *r == role && *w == why) {
            Some((.., rows)) => rows.push(row),
            None => groups.push((role, why, vec![row])),
        }
    }
    // Stable: within a role, the groups keep their first appearance's order.
    groups.sort_by_key(|(role, ..)| *role);
    groups
        .into_iter()
        .map(|(role, why, rows)| GroupView {
            role: role.key(),
            heading: match role {
                Role::Primary => "Primary: the figures the headline is made of".into(),
                Role::Other => "Other metrics".into(),
                Role::Context => format!("Context, no verdict: {why}."),
            },
            rows,
        })
        .collect()
}

/// One row's cells, formatted from the stored comparison record.
pub struct RowView {
    /// The anchor of the metric's plot.
    pub anchor: String,
    pub name: String,
    /// The variant compared with the baseline.
    pub variant: String,
    pub unit: &'static str,
    pub better: &'static str,
    pub a_mean: String,
    pub b_mean: String,
    pub change: String,
    pub change_ci: String,
    pub p: String,
    pub verdict: Verdict,
    pub note: String,
}

/// A variant in the plots' key.
pub struct VariantKey {
    pub name: String,
    /// `v0`, `v1`...: the CSS class of its colour (never user text).
    pub class: String,
    pub description: String,
}

pub struct PlotView {
    pub name: String,
    pub anchor: String,
    pub svg: Svg,
    pub caption: String,
}

/// One phase's top symbols by Δ modeled cycles: a chart and its table.
pub struct ProfileView {
    pub title: String,
    pub anchor: String,
    pub baseline: String,
    pub variant: String,
    /// The chart; `None` when no symbol changed.
    pub svg: Option<Svg>,
    /// `modeled cycles` or `instructions`, and its unit in millions.
    pub measure: &'static str,
    pub unit: &'static str,
    pub rows: Vec<ProfileRowView>,
    /// The whole phase: A, B, Δ, and the listed symbols' share of it.
    pub whole: String,
    /// The cost lane with splits: where each row's Δ went, then the whole
    /// phase's (empty otherwise).
    pub split: Vec<SplitRowView>,
}

/// One row of "where the Δ went": instructions, the cost table's
/// classes, misses (signed Mcycles), and the classes' counts.
pub struct SplitRowView {
    pub symbol: String,
    pub whole: bool,
    pub insns: String,
    pub classes: String,
    pub misses: String,
    pub counts: String,
}

pub struct ProfileRowView {
    pub symbol: String,
    pub a: String,
    pub b: String,
    pub delta: String,
    pub share: String,
}

/// The cost lane's tables as page models, each with its bar chart.
fn profiles(r: &Results) -> Result<Vec<ProfileView>, plot::PlotError> {
    let m = |c: f64| format!("{:.3}", c / 1e6);
    let signed = |c: f64| {
        if c < 0.0 {
            format!("\u{2212}{:.3}", -c / 1e6)
        } else {
            format!("+{:.3}", c / 1e6)
        }
    };
    crate::report::profile_tables(r)
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let bars: Vec<plot::SymbolBar> = t
                .rows
                .iter()
                .map(|row| plot::SymbolBar {
                    symbol: row.symbol.clone(),
                    delta_mcycles: row.delta / 1e6,
                })
                .collect();
            let svg = if bars.is_empty() {
                None
            } else {
                Some(plot::symbol_delta_plot(&t.title(), &bars)?)
            };
            let split_row = |symbol: &str, whole: bool, d: &crate::model::profile::SplitDelta| {
                SplitRowView {
                    symbol: symbol.to_string(),
                    whole,
                    insns: signed(d.insns),
                    classes: signed(d.class_cycles),
                    misses: signed(d.miss_cycles),
                    counts: crate::report::profile::classes_cell(d),
                }
            };
            let split = t.phase_split.as_ref().map_or_else(Vec::new, |phase| {
                t.splits
                    .iter()
                    .map(|(s, d)| split_row(s, false, d))
                    .chain([split_row("", true, phase)])
                    .collect()
            });
            Ok(ProfileView {
                split,
                title: t.title(),
                anchor: format!("profile-{i}"),
                baseline: t.baseline.clone(),
                variant: t.variant.clone(),
                svg,
                measure: t.measure(),
                unit: t.unit(),
                rows: t
                    .rows
                    .iter()
                    .map(|row| ProfileRowView {
                        symbol: row.symbol.clone(),
                        a: m(row.a_mean),
                        b: m(row.b_mean),
                        delta: signed(row.delta),
                        share: row
                            .share
                            .map_or_else(|| "n/a".into(), |s| format!("{:.1}%", s * 100.0)),
                    })
                    .collect(),
                whole: format!(
                    "The whole phase: {} {}, {} {}, \u{394} {} {} per sample ({} and {} sample(s)){}.",
                    t.baseline,
                    m(t.a_total),
                    t.variant,
                    m(t.b_total),
                    signed(t.total_delta()),
                    t.unit(),
                    t.a_samples,
                    t.b_samples,
                    t.listed_share().map_or_else(String::new, |s| format!(
                        "; the symbols listed account for {:.1}% of the \u{394}",
                        s * 100.0
                    )),
                ),
            })
        })
        .collect()
}

pub struct PatchView<'a> {
    pub number: String,
    pub subject: &'a str,
    pub author: &'a str,
    pub origin: &'a str,
    pub message_id: Option<&'a str>,
    pub commit: &'a str,
    pub applied: &'a str,
    pub fuzz: bool,
}

pub struct KernelView<'a> {
    pub variant: String,
    pub commit: &'a str,
    pub compiler: &'a str,
    pub bzimage_sha256: &'a str,
    pub config_sha256: &'a str,
    pub build: String,
}

pub struct BootView<'a> {
    pub label: &'a str,
    pub variant: String,
    pub samples: usize,
    pub complete: bool,
    pub hello: String,
    pub total: String,
    pub log_href: Option<String>,
    pub log_path: String,
}

pub struct FactsTable {
    pub boots: Vec<String>,
    /// Each fact and its value in every boot, with the boot's label (a
    /// cell's label when the table is laid out as cards).
    pub rows: Vec<(String, Vec<(String, String)>)>,
}

#[derive(Template)]
#[template(path = "index.html")]
pub struct IndexPage {
    /// A watch history's change points, newest first.
    pub changes: Vec<super::changes::ChangeRow>,
    pub runs: Vec<RunSummary>,
    pub campaigns: Vec<(String, String)>,
}

pub struct RunSummary {
    pub href: String,
    pub date: String,
    pub campaign: String,
    /// What it compares ([`crate::results::Compares::label`]).
    pub compares: String,
    pub accel: String,
    pub tcg: bool,
    pub counts: Vec<(Verdict, usize)>,
    /// The labels of the boots a guest failure stopped
    /// (`report::failed_boots`): a "stopped" badge each.
    pub stopped: Vec<String>,
}

#[derive(Template)]
#[template(path = "trend.html")]
pub struct TrendPage {
    pub nav: Nav,
    pub campaign: String,
    /// What one point is and what the x axis says.
    pub axis: String,
    pub plots: Vec<TrendView>,
    pub runs: Vec<TrendRun>,
    /// Whether some run is a night of a watch history: the run list names
    /// the nights.
    pub night_column: bool,
    /// The campaign's change points in a watch history, oldest first.
    pub changes: Vec<super::changes::ChangeRow>,
}

/// One metric on a trend page: each run's level and its change, side by
/// side where they fit.
pub struct TrendView {
    pub name: String,
    pub anchor: String,
    /// B's own mean per run, with its interval ([`TrendAxis::Level`]).
    pub level: Svg,
    /// B against A per run ([`TrendAxis::Change`]).
    pub change: Svg,
    pub caption: String,
}

/// A run in a trend page's list.
pub struct TrendRun {
    pub date: String,
    /// The watch history's night it measured (`night 3 (1a2b3c4d5e6f)`),
    /// if any.
    pub night: Option<String>,
    pub series: String,
    pub href: String,
}

/// A run's start, as pages show it.
pub fn date(results: &Results) -> String {
    results
        .started_at
        .strftime("%Y-%m-%d %H:%M UTC")
        .to_string()
}

fn seconds(s: Option<f64>) -> String {
    s.map_or("\u{2014}".into(), |s| format!("{s:.1} s"))
}

fn row_view(results: &Results, row: &ComparisonRecord, anchor: String) -> RowView {
    let scale = crate::report::row_scale(row);
    RowView {
        anchor,
        name: row.metric.clone(),
        variant: row.variant.clone(),
        unit: scale.label,
        better: match Direction::from(row.direction) {
            Direction::LowerIsBetter => "lower",
            Direction::HigherIsBetter => "higher",
            Direction::Neither => "",
        },
        a_mean: crate::report::show(row.a.mean, scale),
        b_mean: crate::report::show(row.b.mean, scale),
        change: row.change_pct().map_or("n/a".into(), signed_pct),
        change_ci: row.change_ci().map_or(String::new(), |ci| {
            format!("[{}, {}]", signed_pct(ci.lo), signed_pct(ci.hi))
        }),
        p: match row.welch.as_ref().map(|w| w.p) {
            None => "\u{2014}".into(),
            Some(p) if p < 0.001 => "<0.001".into(),
            Some(p) => format!("{p:.3}"),
        },
        verdict: row.kind(),
        note: note(results, row),
    }
}

/// A short remark beside a row's verdict: its reason (a context row's is
/// its group's heading) and, when they matter, what it rules out, the
/// host's noise, a drift, a large CV, the samples it stands on.
fn note(results: &Results, row: &ComparisonRecord) -> String {
    let mut notes = Vec::new();
    if row.measured() {
        notes.push(format!(
            "{}{}",
            row.reason,
            crate::report::undecided_note(row)
        ));
    }
    if let Some(noisy) = crate::report::noisy_host(results, row.kind()) {
        notes.push(noisy);
    }
    if let Some(drift) = row.drift_pct.filter(|d| d.abs() >= 5.0) {
        let sign = if drift < 0.0 { '\u{2212}' } else { '+' };
        notes.push(format!(
            "A drifted {sign}{:.1}% between its first and last boot",
            drift.abs()
        ));
    }
    if let Some(cv) = row.max_boot_cv_pct.filter(|c| *c >= 10.0) {
        notes.push(format!("within-boot CV up to {cv:.1}%"));
    }
    notes.extend(row.coverage());
    notes.extend(row.repeat_note());
    notes.join("; ")
}

/// A console log's path below `run_dir`: as recorded when relative (a
/// document records it relative to its run), else below `run_dir`. `None`
/// for a log outside it, or a path that climbs out (`..`).
pub fn log_below(run_dir: &Path, log: &Path) -> Option<std::path::PathBuf> {
    let rel = if log.is_absolute() {
        log.strip_prefix(run_dir).ok()?
    } else {
        log
    };
    let normal = rel.components().all(|c| matches!(c, Component::Normal(_)));
    (normal && rel.components().next().is_some()).then(|| rel.to_path_buf())
}

/// The href of a console log: its path below `run_dir`, percent-encoded
/// segment by segment. `None` for a log outside `run_dir`, which a
/// published page cannot reach.
pub fn log_href(run_dir: &Path, log: &Path) -> Option<String> {
    let rel = log_below(run_dir, log)?;
    let mut segments = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => segments.push(percent_encode(&s.to_string_lossy())),
            _ => return None,
        }
    }
    (!segments.is_empty()).then(|| segments.join("/"))
}

/// Percent-encode all but RFC 3986's unreserved characters, so a segment
/// can never read as a scheme (`javascript:`), a query or a fragment.
fn percent_encode(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn method(results: &Results) -> String {
    let order = crate::report::boot_order(results);
    let rows = crate::report::rows(results);
    let stats = if crate::report::judged_by_boot(rows) && results.host.lane.judged_by_boot() {
        "Each boot landed on the host anew under KVM, so its samples are not independent: intervals, p-values and verdicts come from the statistics over the boots' means (Welch's t)."
    } else if crate::report::judged_by_boot(rows) {
        "Each boot ran in a memory layout of its own, and intervals, p-values and verdicts come from the statistics over the boots' means (Welch's t)."
    } else {
        "Intervals, p-values and verdicts come from the statistics over the pooled samples."
    };
    if results.candidates().len() > 1 {
        return format!(
            "Fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; \
             warm-ups are discarded and each variant pools its boots. Each variant's mean is compared with {}'s. {} \
             Accelerator: {}, on a {}-core {} host. Base {} ({}), chosen from {}; the series has {} patch(es), sha256 {}.",
            order,
            results.protocol.warmups,
            results.protocol.samples,
            results.baseline(),
            stats,
            results.host.lane.accel(),
            results.host.cores,
            results.host.cpu_model,
            short(&results.tree.base_commit),
            results.tree.origin,
            results.tree.base_choice,
            results.series.patches.len(),
            short(&results.series.sha256),
        );
    }
    format!(
        "Fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; \
         warm-ups are discarded and A pools every A boot. B vs A is B's mean against A's pooled mean. {} \
         Accelerator: {}, on a {}-core {} host. Base {} ({}), chosen from {}; B adds {} patch(es), series sha256 {}.",
        order,
        results.protocol.warmups,
        results.protocol.samples,
        stats,
        results.host.lane.accel(),
        results.host.cores,
        results.host.cpu_model,
        short(&results.tree.base_commit),
        results.tree.origin,
        results.tree.base_choice,
        results.series.patches.len(),
        short(&results.series.sha256),
    )
}

fn facts_table(results: &Results) -> FactsTable {
    let boots: Vec<String> = results.boots.iter().map(|b| b.label.clone()).collect();
    let dash = || "\u{2014}".to_string();
    let mut rows: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut fact = |name: &str, get: &dyn Fn(&crate::results::Facts) -> String| {
        let cells = results
            .boots
            .iter()
            .map(|b| (b.label.clone(), b.facts.as_ref().map_or_else(dash, get)))
            .collect();
        rows.push((name.to_string(), cells));
    };
    fact("kernel release", &|f| f.kernel_release.clone());
    fact("kernel version", &|f| f.kernel_version.clone());
    fact("possible CPUs", &|f| f.possible_cpus.clone());
    fact("online CPUs", &|f| f.online_cpus.clone());
    fact("MemTotal", &|f| format!("{} KiB", f.mem_total_kib));
    fact("THP", &|f| f.thp.clone());
    fact("CPU time", &|f| {
        f.cputime.as_ref().map_or_else(dash, |c| {
            let word = match c.accounting {
                crate::results::CputimeAccounting::Precise if c.irq_time => "precise",
                crate::results::CputimeAccounting::Precise => "precise, interrupts in tasks",
                crate::results::CputimeAccounting::Tick => "timer ticks",
                crate::results::CputimeAccounting::Unknown => "unknown",
            };
            match c.hz {
                Some(hz) => format!("{word}, HZ {hz}"),
                None => word.to_string(),
            }
        })
    });
    let zswap_keys: std::collections::BTreeSet<&String> = results
        .boots
        .iter()
        .filter_map(|b| b.facts.as_ref())
        .flat_map(|f| f.zswap.keys())
        .collect();
    for key in zswap_keys {
        fact(&format!("zswap {key}"), &|f| {
            f.zswap.get(key).cloned().unwrap_or_else(dash)
        });
    }
    let setting_paths: std::collections::BTreeSet<&String> = results
        .boots
        .iter()
        .filter_map(|b| b.facts.as_ref())
        .flat_map(|f| f.settings.keys())
        .collect();
    for path in setting_paths {
        fact(&format!("setting {path}"), &|f| {
            f.settings.get(path).cloned().unwrap_or_else(dash)
        });
    }
    fact("swaps", &|f| {
        f.swaps
            .iter()
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("; ")
    });
    FactsTable { boots, rows }
}

/// The anchor of a metric's plot: `m-` and its index, so no user text
/// lands in an id.
fn anchor(i: usize) -> String {
    format!("m-{i}")
}

/// The first row of each metric in each condition (one samples plot
/// each), with the index of that row.
fn plotted_rows<'r>(run: &'r Run) -> Vec<(usize, &'r ComparisonRecord)> {
    let mut seen: Vec<String> = Vec::new();
    run.rows
        .iter()
        .enumerate()
        .filter(|(_, row)| {
            let key = plot_key(row);
            let new = !seen.contains(&key);
            if new {
                seen.push(key);
            }
            new
        })
        .collect()
}

/// Every variant's mean of the metric `row` is about, for its plot.
fn means_of(run: &Run, row: &ComparisonRecord) -> Vec<plot::Mean> {
    let index = |name: &str| {
        run.results
            .variants
            .iter()
            .position(|v| v.name == name)
            .unwrap_or(usize::MAX)
    };
    let ci = |s: &crate::results::comparison::SummaryRecord| s.mean_ci.map(|i| (i.lo, i.hi));
    std::iter::once((0, row.a.mean, ci(&row.a)))
        .chain(
            run.rows
                .iter()
                .filter(|r| plot_key(r) == plot_key(row))
                .map(|r| (index(&r.variant), r.b.mean, ci(&r.b))),
        )
        .collect()
}

/// A per-patch campaign's waterfall of each main-workload metric.
fn waterfalls(run: &Run) -> Result<Vec<PlotView>, plot::PlotError> {
    if run.steps.is_empty() {
        return Ok(Vec::new());
    }
    crate::report::waterfall::metrics(run.results, run.steps, run.rows)
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let steps: Vec<plot::WaterfallStep> = m
                .steps
                .iter()
                .map(|s| plot::WaterfallStep {
                    label: s.variant.to_string(),
                    points: s.points,
                    verdict: Some(s.row.kind()),
                })
                .collect();
            let whole = plot::WaterfallStep {
                label: "whole".into(),
                points: m.whole.and_then(|w| w.change_pct()),
                verdict: m.whole.map(ComparisonRecord::kind),
            };
            Ok(PlotView {
                name: m.metric.to_string(),
                anchor: format!("w-{i}"),
                svg: plot::waterfall_plot(m.metric, &steps, &whole)?,
                caption: format!(
                    "{}: each patch's step against the one before, in points of the base's mean, coloured by its verdict; then the whole series against the base.",
                    m.metric
                ),
            })
        })
        .collect()
}

pub fn run_page<'a>(run: &'a Run<'a>, nav: Nav) -> Result<RunPage<'a>, plot::PlotError> {
    let r = run.results;
    let plots = plotted_rows(run)
        .into_iter()
        .map(|(i, row)| {
            let boots = samples_by_boot(r, row.condition.as_deref(), &row.metric);
            let means = means_of(run, row);
            let svg = plot::samples_plot(&plot_key(row), row.unit, &boots, &means)?;
            let unit = crate::report::row_scale(row).label;
            let band = if row.a.mean_ci.is_some() || row.b.mean_ci.is_some() {
                ", bands their confidence intervals"
            } else {
                ""
            };
            Ok(PlotView {
                name: plot_key(row),
                anchor: anchor(i),
                svg,
                caption: format!(
                    "{} ({unit}): every measured sample by boot; lines are each variant's mean{band}.",
                    plot_key(row)
                ),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Nothing compared: no table drawn empty, as in the text reports
    // (`report::by_condition`); the page's warnings say why.
    let conditions = if run.rows.is_empty() {
        Vec::new()
    } else {
        r.conditions()
    };
    let tables = conditions
        .into_iter()
        .enumerate()
        .map(|(c, control)| {
            let name = control.map(|c| c.name.as_str());
            TableView {
                title: control.map(crate::report::control_title),
                id: if c == 0 {
                    "comparison-table".into()
                } else {
                    format!("control-{c}")
                },
                groups: groups(
                    run.rows
                        .iter()
                        .enumerate()
                        .filter(|(_, row)| row.condition.as_deref() == name)
                        .map(|(i, row)| {
                            // Every variant's row links to its metric's one plot.
                            let plot = run
                                .rows
                                .iter()
                                .position(|p| plot_key(p) == plot_key(row))
                                .unwrap_or(i);
                            (
                                Role::of(row),
                                crate::report::context_why(row),
                                row_view(r, row, anchor(plot)),
                            )
                        })
                        .collect(),
                ),
            }
        })
        .collect();
    Ok(RunPage {
        nav,
        campaign: &r.campaign,
        date: date(r),
        version: &r.patchbench_version,
        sides: r.compares().sides(str::to_string),
        accel: r.host.lane.accel().to_string().to_uppercase(),
        tcg: r.host.lane.accel() == Accel::Tcg,
        tcg_mode: crate::report::tcg_mode(r),
        accel_reason: &r.host.accel_reason,
        cost_banner: crate::report::cost_banner(r),
        stopped: crate::report::failed_boots(r)
            .iter()
            .map(|f| f.sentence(str::to_string))
            .chain(crate::report::nothing_compared(r))
            .collect(),
        uncompared: r
            .judgement
            .iter()
            .flat_map(|j| &j.uncompared)
            .map(crate::results::UncomparedRecord::sentence)
            .collect(),
        judged_by_boot: crate::report::layouts_line(
            run.results.host.lane,
            &run.rows.iter().collect::<Vec<_>>(),
        ),
        profiles: profiles(r)?,
        multi: run.multi(),
        baseline: r.baseline().to_string(),
        headlines: r
            .judgement
            .iter()
            .flat_map(|j| &j.headlines)
            .map(|h| h.text.clone())
            .chain(crate::report::unjudged(r))
            .collect(),
        lane: r.judgement.as_ref().map_or_else(String::new, |j| {
            format!(
                "Lane: {}; verdicts under rule {} (docs/statistics.md).",
                j.lane.label(),
                j.rule
            )
        }),
        compared: format!(
            "{} against {}",
            r.candidates()
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            r.baseline()
        ),
        variant_keys: r
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| VariantKey {
                name: v.name.clone(),
                class: format!("v{}", i.min(5)),
                description: v.description.clone(),
            })
            .collect(),
        tables,
        plots,
        waterfalls: waterfalls(run)?,
        method: method(r),
        noise: crate::report::noise_line(
            r,
            crate::report::max_time_cv(
                run.rows
                    .iter()
                    .filter(|row| row.measured())
                    .map(|row| (row.unit, Some(row.direction.into()), row.max_boot_cv_pct)),
            ),
        ),
        cputime: crate::report::cputime_line(r),
        tree: &r.tree,
        series_source: &r.series.source,
        series_sha256: &r.series.sha256,
        head_commit: &r.series.head_commit,
        patches: r
            .series
            .patches
            .iter()
            .enumerate()
            .map(|(i, p)| PatchView {
                number: format!("{}/{}", i + 1, r.series.patches.len()),
                subject: &p.subject,
                author: &p.author,
                origin: &p.origin,
                message_id: p.message_id.as_deref(),
                commit: &p.commit,
                applied: &p.applied,
                fuzz: p.fuzz,
            })
            .collect(),
        kernels: r
            .variants
            .iter()
            .map(|v| KernelView {
                variant: v.name.clone(),
                commit: &v.kernel.commit,
                compiler: &v.kernel.compiler,
                bzimage_sha256: &v.kernel.bzimage_sha256,
                config_sha256: &v.kernel.config_sha256,
                build: if v.kernel.reused {
                    "reused".into()
                } else if v.kernel.incremental {
                    format!(
                        "incremental, {} objects rebuilt, {:.1} s",
                        v.kernel.objects_rebuilt, v.kernel.build_seconds
                    )
                } else {
                    format!("full, {:.1} s", v.kernel.build_seconds)
                },
            })
            .collect(),
        boots: r
            .boots
            .iter()
            .map(|b| BootView {
                label: &b.label,
                variant: b.variant.clone(),
                samples: b.samples.len(),
                complete: b.complete,
                hello: seconds(b.hello_seconds),
                total: seconds(b.total_seconds),
                log_href: log_href(run.run_dir, &b.console_log),
                log_path: b.console_log.display().to_string(),
            })
            .collect(),
        facts: facts_table(r),
    })
}

pub fn run_summary(run: &Run, href: String) -> RunSummary {
    let r = run.results;
    RunSummary {
        href,
        date: date(r),
        campaign: r.campaign.clone(),
        compares: r.compares().label(),
        // The lane too: every row of the index would say TCG otherwise.
        accel: crate::report::lane_short(r),
        tcg: r.host.lane.accel() == Accel::Tcg,
        counts: run.verdict_counts(),
        stopped: crate::report::failed_boots(r)
            .into_iter()
            .map(|f| f.label)
            .collect(),
    }
}

/// A run's point on a trend plot of `axis` (B vs A, or B's own mean), with
/// its interval, in its verdict's colour; none when the run lacks the row.
fn trend_point(label: &str, row: Option<&ComparisonRecord>, axis: TrendAxis) -> TrendPoint {
    let (value, ci) = match (row, axis) {
        (None, _) => (None, None),
        (Some(r), TrendAxis::Change) => (r.change_pct(), r.change_ci()),
        (Some(r), TrendAxis::Level(_)) => (Some(r.b.mean), r.b.mean_ci),
    };
    TrendPoint {
        label: label.to_string(),
        value,
        ci: ci.map(|ci| (ci.lo, ci.hi)),
        verdict: row.map(ComparisonRecord::kind),
    }
}

/// The trend page of one campaign: `runs` oldest first, each with the href
/// of its page; per metric, each run's level (B's mean) and its change (B
/// vs A). With a watch history, runs that are its nights are labelled by
/// their head (when every run is one), and the campaign's change points
/// are marked on both of their metric's plots and listed below the plots.
pub fn trend_page(
    campaign: &str,
    runs: &[(&Run, String)],
    nav: Nav,
    history: Option<&HistorySite>,
) -> Result<TrendPage, plot::PlotError> {
    // Metrics (a control's named with it) in the order the runs first list
    // them, each with its metric and condition.
    let mut names: Vec<(String, &str, Option<&str>)> = Vec::new();
    for (run, _) in runs {
        for row in run.rows {
            if !names.iter().any(|(n, ..)| *n == row.label()) {
                names.push((row.label(), &row.metric, row.condition.as_deref()));
            }
        }
    }
    let by_name: Vec<BTreeMap<String, &ComparisonRecord>> = runs
        .iter()
        .map(|(run, _)| run.rows.iter().map(|r| (r.label(), r)).collect())
        .collect();
    let nights: Vec<Option<usize>> = runs.iter().map(|(run, _)| run.night).collect();
    let history_nights = history.map_or(&[][..], |h| h.history.nights.as_slice());
    // Every point a night of the history: the head under each, as long as
    // it fits (12 hex digits, else 7), else the dates.
    let id_chars = [12, 7]
        .into_iter()
        .find(|c| plot::trend_labels_fit(*c, runs.len()))
        .filter(|_| {
            !runs.is_empty()
                && nights
                    .iter()
                    .all(|n| n.is_some_and(|n| n < history_nights.len()))
        });
    let label = |run: &Run| match (id_chars, run.night) {
        (Some(chars), Some(n)) => {
            let head = &history_nights[n].head.commit;
            head[..head.len().min(chars)].to_string()
        }
        _ => run.results.started_at.strftime("%m-%d").to_string(),
    };
    let changes: Vec<(usize, &crate::results::history::ChangePoint)> = history
        .map(|h| h.of_campaign(campaign).collect())
        .unwrap_or_default();
    let plots = names
        .iter()
        .enumerate()
        .map(|(i, (name, metric, condition))| {
            let rows: Vec<(String, Option<&ComparisonRecord>)> = runs
                .iter()
                .zip(&by_name)
                .map(|((run, _), rows)| (label(run), rows.get(name.as_str()).copied()))
                .collect();
            let unit = rows.iter().find_map(|(_, row)| row.and_then(|r| r.unit));
            // A change point is of a main-workload metric.
            let markers: Vec<plot::TrendMarker> = changes
                .iter()
                .filter(|(_, cp)| condition.is_none() && cp.metric == *metric)
                .filter_map(|(_, cp)| {
                    Some(plot::TrendMarker {
                        x: super::changes::marker_x(&nights, cp.night)?,
                        label: format!("step {}", signed_pct(cp.change_pct)),
                    })
                })
                .collect();
            let (each, level_is) = if id_chars.is_some() {
                ("night", "the head's mean, B")
            } else {
                ("run", "B's mean")
            };
            let plot = |axis| {
                let points: Vec<TrendPoint> = rows
                    .iter()
                    .map(|(label, row)| trend_point(label, *row, axis))
                    .collect();
                plot::trend_plot(name, axis, &points, &markers)
            };
            Ok(TrendView {
                name: name.to_string(),
                anchor: anchor(i),
                level: plot(TrendAxis::Level(unit))?,
                change: plot(TrendAxis::Change)?,
                caption: format!(
                    "{name}: each {each}'s own level ({level_is}, with its interval), then B vs A in percent; one point per {each}, oldest first{}.",
                    match markers.len() {
                        0 => "",
                        1 => "; the dashed line marks a change point",
                        _ => "; the dashed lines mark change points",
                    }
                ),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TrendPage {
        nav,
        campaign: campaign.to_string(),
        axis: if id_chars.is_some() {
            "one point per night of the watch history, oldest first, under its head's commit; each night's new head (B) against the head before it (A)".into()
        } else {
            "one point per run, oldest first".into()
        },
        plots,
        night_column: nights.iter().any(Option::is_some),
        runs: runs
            .iter()
            .map(|(run, href)| TrendRun {
                date: date(run.results),
                night: run
                    .night
                    .map(|n| super::changes::night_label(n, history_nights.get(n))),
                series: crate::results::compares::series_title(&run.results.series),
                href: href.clone(),
            })
            .collect(),
        changes: history
            .map(|h| changes.iter().map(|(i, _)| h.row(*i, "../")).collect())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
