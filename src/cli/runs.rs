//! `run` over several campaigns, one after another, each into its own
//! subdirectory of `--out`: the campaigns a series chooses (`run --series`
//! without a campaign file) and a suite (`run --suite mm`, the whole mm
//! library, within a time budget).
//!
//! A regression or a guest failure in one campaign lets the next run (the
//! exit code is the guest's, else 1), and so does a campaign the tree
//! cannot run (refused before its build, named in the summary); any other
//! failure would repeat in the next one, and stops the command with its
//! own code.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::args::{self, CampaignArgs, cache_dir};
use super::{choose, compare};
use crate::campaign;
use crate::config::AccelChoice;
use crate::events::{Event, Sink};
use crate::results::ReachRecord;

/// What `run` over several campaigns takes of its command line.
pub(super) struct Many {
    pub campaign: CampaignArgs,
    pub accel: Option<AccelChoice>,
    pub out: Option<PathBuf>,
    pub bisect: bool,
    pub fresh_boots: bool,
    pub budget: Option<Duration>,
    pub online: Option<u32>,
}

/// A suite of campaigns `run --suite` runs whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suite {
    /// The mm benchmark library: every campaign of ci/mm/, in name order.
    Mm,
    /// Every campaign file directly in a directory of the user's, in name
    /// order.
    Dir(PathBuf),
}

impl std::str::FromStr for Suite {
    type Err = String;

    /// `mm`, or a directory that holds campaign files.
    fn from_str(text: &str) -> Result<Suite, String> {
        if text == "mm" {
            return Ok(Suite::Mm);
        }
        let dir = PathBuf::from(text);
        if dir.is_dir() {
            Ok(Suite::Dir(dir))
        } else {
            Err(format!(
                "{text} is neither `mm` (the mm library, ci/mm/) nor a directory of campaign files"
            ))
        }
    }
}

/// The budget `--suite` runs within unless `--budget` says otherwise:
/// issue 50's target for the mm library on cached kernels, on two cores.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(30 * 60);

/// One campaign of the list: its file (None: the built-in smoke
/// campaign), as shown, and why it runs (for a series).
struct Item {
    file: Option<PathBuf>,
    shown: String,
    reach: Option<ReachRecord>,
}

/// `run --series X` without a campaign file: the campaigns that execute
/// what the series changes (ci/seeds/, then the library workloads that
/// run a changed function most); or, when none does, the built-in smoke
/// campaign as a sanity check whose report says it tells nothing about
/// the series.
pub(super) async fn run_chosen(args: Many, sink: &dyn Sink) -> anyhow::Result<()> {
    let chose = choose::choose(&args.campaign.sources, &cache_dir(&args.campaign), sink).await?;
    sink.emit(Event::Output(chose.text.clone()));
    if args.bisect && chose.runs.is_empty() {
        return Err(crate::config::ConfigError::Invalid {
            path: PathBuf::from("--bisect"),
            message: format!(
                "{}, so a hunt would look for nothing: pass a campaign file that runs what the series changes",
                crate::reach::NOTHING_REACHED
            ),
        }
        .into());
    }
    let items = if chose.runs.is_empty() {
        vec![Item {
            file: None,
            shown: "ci/smoke.yaml".into(),
            reach: Some(chose.choice.record(None, "ci/smoke.yaml")),
        }]
    } else {
        chose
            .runs
            .iter()
            .map(|r| Item {
                file: Some(r.file.clone()),
                shown: r.shown.clone(),
                reach: Some(r.record.clone()),
            })
            .collect()
    };
    let nothing_reached = chose.runs.is_empty();
    let ended = run_list(&args, items, "series", None, sink).await;
    if nothing_reached {
        sink.emit(Event::Output(format!(
            "WARNING: {}.\n",
            crate::reach::NOTHING_REACHED
        )));
    }
    ended
}

/// `run --suite S`: every campaign of the suite, with `--series` if given
/// (else each campaign's own: an A/A self-check for the library), until
/// the budget is spent.
pub(super) async fn run_suite(args: Many, suite: Suite, sink: &dyn Sink) -> anyhow::Result<()> {
    let budget = args.budget.unwrap_or(DEFAULT_BUDGET);
    let ci = crate::config::default_campaign_dir();
    let (dir, root, what) = match suite {
        Suite::Mm => {
            let root = ci.parent().unwrap_or(&ci).to_path_buf();
            (ci.join("mm"), root, "suite-mm".to_string())
        }
        Suite::Dir(dir) => {
            let stem = dir
                .canonicalize()
                .ok()
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "dir".into());
            (dir, PathBuf::new(), format!("suite-{stem}"))
        }
    };
    let items = suite_items(&dir, &root)?;
    sink.emit(Event::Note(format!(
        "{}: {} campaigns of {}, within {}",
        what.replacen('-', " ", 1),
        items.len(),
        crate::reach::shown(&root, &dir),
        humantime::format_duration(budget)
    )));
    run_list(&args, items, &what, Some(budget), sink).await
}

fn suite_items(dir: &Path, root: &Path) -> anyhow::Result<Vec<Item>> {
    Ok(crate::reach::library::campaigns_in(dir, root)?
        .into_iter()
        .map(|c| Item {
            file: Some(c.file),
            shown: c.shown,
            reach: None,
        })
        .collect())
}

/// Whether `e` refused a campaign before anything was built, for what its
/// tree cannot run: an interface a workload `requires:`, or a second CPU
/// that QEMU would never run under icount (`vm::smp_icount`).
fn refused_before_build(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<crate::workload::needs::Unsupported>() || c.is::<crate::vm::smp_icount::SmpStall>()
    })
}

/// Run `items` in order, into `--out/<file stem>/` (default
/// `patchbench-out/<what>-<time>/`). With a budget, no campaign starts
/// once it is spent (the one running finishes); those left are named, and
/// the same `--out` runs them, resuming.
async fn run_list(
    args: &Many,
    items: Vec<Item>,
    what: &str,
    budget: Option<Duration>,
    sink: &dyn Sink,
) -> anyhow::Result<()> {
    let started = Instant::now();
    // A hunt's regression (exit 1) lets the next campaign hunt too.
    let mut hunted: Option<anyhow::Error> = None;
    let base_out = args.out.clone().unwrap_or_else(|| {
        let stamp = jiff::ZonedDateTime::now()
            .strftime("%Y%m%d-%H%M%S")
            .to_string();
        PathBuf::from("patchbench-out").join(format!("{what}-{stamp}"))
    });
    let agent = crate::find_agent()?;
    let mut regressed = Vec::new();
    let mut guest: Option<anyhow::Error> = None;
    // Each campaign's headlines and the series' functions it reached, or
    // how it ended: the summary across them all, at the end.
    let mut summary: Vec<String> = Vec::new();
    let mut left: Vec<String> = Vec::new();
    for item in items {
        if budget.is_some_and(|b| started.elapsed() >= b) {
            left.push(item.shown);
            continue;
        }
        let campaign_args = CampaignArgs {
            campaign: item.file.clone(),
            sources: args.campaign.sources.clone(),
            cache_dir: args.campaign.cache_dir.clone(),
            cache_max: args.campaign.cache_max,
        };
        let shown = item.shown;
        let plan = match args::load_run_plan(&campaign_args, args.accel, args.bisect, args.online) {
            Ok(plan) => plan,
            // A campaign whose workload cannot run on the CPUs --online
            // gives it (cpu-hotplug on one), but can on its own, is
            // refused; the next runs. A campaign wrong without --online
            // too stops the command, as it would without the flag.
            Err(e)
                if let Some(online) = args.online
                    && args::load_run_plan(&campaign_args, args.accel, args.bisect, None)
                        .is_ok() =>
            {
                let e = e.context(format!("with --online {online}"));
                sink.emit(Event::Note(format!(
                    "warning: {shown}: {e:#}; the next campaign runs"
                )));
                summary.push(format!("{shown}: refused, nothing ran: {e:#}\n"));
                continue;
            }
            Err(e) => return Err(e),
        };
        let stem = item
            .file
            .as_deref()
            .and_then(|f| f.file_stem())
            .map_or("smoke".to_string(), |s| s.to_string_lossy().into_owned());
        let out_dir = base_out.join(stem);
        sink.emit(Event::Note(format!(
            "campaign {} ({shown}) into {}",
            plan.name,
            out_dir.display()
        )));
        let opts = campaign::RunOptions {
            out_dir,
            cache_dir: cache_dir(&args.campaign),
            agent: agent.clone(),
            cache_max: args.campaign.cache_max,
            kernels: None,
            shard: None,
            reach: item.reach,
            replay: !args.fresh_boots,
        };
        if plan.variants == crate::variants::VariantSet::Bisect {
            match hunt(&plan, &opts, sink).await {
                Ok(()) => summary.push(format!(
                    "{} ({shown}): hunted, nothing regressed\n",
                    plan.name
                )),
                Err(e) if crate::exit::code_for(&e) == crate::exit::REGRESSION => {
                    summary.push(format!("{} ({shown}): {e:#}\n", plan.name));
                    hunted.get_or_insert(e);
                }
                Err(e) => return Err(e.context(format!("campaign {} ({shown})", plan.name))),
            }
            continue;
        }
        match campaign::run(&plan, &opts, sink).await {
            Ok(outcome) => {
                sink.emit(Event::Output(format!(
                    "== {} ({shown})\n{}",
                    plan.name,
                    crate::report::terminal(&outcome.results)
                )));
                compare::files_written(&outcome, sink);
                summary.push(campaign_summary(&plan.name, &shown, &outcome.results));
                regressed.extend(
                    outcome
                        .regressed()
                        .into_iter()
                        .map(|m| format!("{}: {m}", plan.name)),
                );
            }
            Err(e) if crate::exit::code_for(&e) == crate::exit::GUEST => {
                let e = e.context(format!("campaign {} ({shown})", plan.name));
                sink.emit(Event::Note(format!(
                    "warning: {e:#}; the next campaign runs"
                )));
                summary.push(format!(
                    "{} ({shown}): stopped by a guest failure ({e:#})\n",
                    plan.name
                ));
                guest.get_or_insert(e);
            }
            // What the tree (or this QEMU with it) cannot run stops this
            // campaign only: the next may need nothing of it (a suite on
            // an older tree).
            Err(e) if refused_before_build(&e) => {
                sink.emit(Event::Note(format!(
                    "warning: campaign {} ({shown}): {e:#}; the next campaign runs",
                    plan.name
                )));
                summary.push(format!(
                    "{} ({shown}): refused, nothing ran: {e:#}\n",
                    plan.name
                ));
            }
            Err(e) => return Err(e.context(format!("campaign {} ({shown})", plan.name))),
        }
    }
    if summary.len() > 1 || !left.is_empty() {
        sink.emit(Event::Output(format!(
            "\n== The {what}, across {} campaigns, in {}\n{}",
            summary.len(),
            humantime::format_duration(Duration::from_secs(started.elapsed().as_secs())),
            summary.join("")
        )));
    }
    if let (Some(b), false) = (budget, left.is_empty()) {
        sink.emit(Event::Output(format!(
            "NOT RUN: the {} budget was spent before {} of the campaigns started: {}\nrun the same command with the same --out to run them (finished campaigns are kept)\n",
            humantime::format_duration(b),
            left.len(),
            left.join(", ")
        )));
    }
    if let Some(e) = guest.or(hunted) {
        return Err(e);
    }
    if regressed.is_empty() {
        Ok(())
    } else {
        Err(crate::exit::Regressed { metrics: regressed }.into())
    }
}

/// One campaign of a `run --series` in the summary across them: its
/// headlines, and the series' functions it executes.
fn campaign_summary(name: &str, shown: &str, results: &crate::results::Results) -> String {
    let mut out = format!("{name} ({shown})\n");
    let reached: Vec<&str> = results
        .reach
        .iter()
        .flat_map(|r| &r.executes)
        .map(|r| r.function.as_str())
        .collect();
    if !reached.is_empty() {
        out.push_str(&format!("  reaches {}\n", reached.join(", ")));
    }
    match &results.judgement {
        Some(j) => {
            for h in &j.headlines {
                out.push_str(&format!("  {}\n", h.text));
            }
        }
        None => out.push_str("  not judged\n"),
    }
    out
}

/// `run --bisect`: the hunt, its report, and the whole series' exit code.
pub(super) async fn hunt(
    plan: &crate::config::Plan,
    opts: &campaign::RunOptions,
    sink: &dyn Sink,
) -> anyhow::Result<()> {
    let outcome = crate::bisect::run(plan, opts, sink).await?;
    let spec = crate::workload::spec_for_kind(&outcome.hunt.workload);
    sink.emit(Event::Output(crate::report::hunt::terminal(
        &outcome.hunt,
        spec.as_ref(),
    )));
    sink.emit(Event::Note(format!(
        "hunt:   {}",
        outcome.hunt_path.display()
    )));
    sink.emit(Event::Note(format!(
        "report: {}",
        outcome.markdown_path.display()
    )));
    if outcome.regressed.is_empty() {
        return Ok(());
    }
    let found = match &outcome.hunt.state {
        crate::results::hunt::HuntState::Found { .. }
            if crate::bisect::hunts_regression(&outcome.hunt) =>
        {
            crate::report::hunt::conclusion(&outcome.hunt)
        }
        crate::results::hunt::HuntState::Stopped { lo, hi, .. } => format!(
            "the hunt stopped with the first patch somewhere in {}",
            crate::report::hunt::patch_range(*lo, *hi)
        ),
        _ => "no primary metric regressed, so the hunt looked for another change".to_string(),
    };
    Err(crate::exit::HuntRegressed {
        metrics: outcome.regressed,
        found,
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_is_mm_or_a_directory_that_is_there() {
        assert_eq!("mm".parse::<Suite>(), Ok(Suite::Mm));
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().display().to_string();
        assert_eq!(text.parse::<Suite>(), Ok(Suite::Dir(dir.path().into())));
        let missing = dir.path().join("nope").display().to_string();
        let err = missing.parse::<Suite>().unwrap_err();
        assert!(err.starts_with(&missing) && err.contains("`mm`"), "{err}");
    }
}
