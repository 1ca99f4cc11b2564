//! `patchbench publish`: place finished results where people read them: the
//! static pages, one comment per campaign on the pull request, a commit
//! status per campaign, and the job's step summary.
//!
//! Every text is a rendering of the results documents (`report::markdown`,
//! `html::write_site`); this command only loads them and places the
//! renderings. `--dry-run` prints exactly the comment bodies and statuses
//! that would be sent and sends nothing. The token is read from the
//! environment by [`GithubClient::from_env`] and never printed.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::events::{Event, Sink};
use crate::github::{
    self, CommentAction, DEFAULT_API, DEFAULT_TOKEN_VAR, GithubClient, GithubError, Repo,
    StatusState,
};
use crate::html::{self, Run};
use crate::model::Verdict;
use crate::results::Results;
use crate::results::history::{HISTORY_FILE, History};

#[derive(clap::Args)]
pub struct PublishArgs {
    /// Results to publish: a run directory holding `results.json`, or the
    /// file itself. Console logs below the run directory go on the pages.
    #[arg(required_unless_present = "history", value_name = "RESULTS_DIR")]
    pub(super) results: Vec<PathBuf>,
    /// Write the static result pages here (an index, one page per run, a
    /// trend page per campaign).
    #[arg(long, value_name = "DIR")]
    pages: Option<PathBuf>,
    /// A watch history (`patchbench watch`'s directory, holding
    /// history.json): every night's run goes on the pages too, each
    /// campaign's trend page follows the nights and marks the change points,
    /// each change point gets a page, and the index lists them. Only the
    /// RESULTS_DIRs get comments, statuses and the step summary.
    #[arg(long, value_name = "HISTORY", requires = "pages")]
    history: Option<PathBuf>,
    /// The repository to comment on and set statuses in; needs --pr and --sha.
    #[arg(long, value_name = "OWNER/NAME", requires_all = ["pr", "sha"])]
    repo: Option<Repo>,
    /// The pull request that gets one comment per campaign (edited in place
    /// on later runs: the comment is found by its hidden marker).
    #[arg(long, value_name = "N", requires = "repo")]
    pr: Option<u64>,
    /// The commit (full SHA) that gets a `patchbench/<campaign>` status.
    #[arg(long, value_name = "SHA", requires = "repo")]
    sha: Option<String>,
    /// The environment variable holding the GitHub token.
    #[arg(long, value_name = "VAR", default_value = DEFAULT_TOKEN_VAR)]
    token_var: String,
    /// The GitHub REST API.
    #[arg(long, value_name = "URL", env = "GITHUB_API_URL", default_value = DEFAULT_API)]
    api_url: String,
    /// Where the full report lives (the pages, or the run's artifact): the
    /// statuses link to it, and a report cut to GitHub's size limits points
    /// at it.
    #[arg(long, value_name = "URL")]
    report_url: Option<String>,
    /// Print the comment bodies and statuses that would be sent, and send
    /// nothing. Pages and the step summary are still written.
    #[arg(long)]
    dry_run: bool,
}

/// The `after_help` of `patchbench publish`.
pub(super) const AFTER_HELP: &str = "\
Examples:
  patchbench publish patchbench-out/smoke-20250101-120000 --pages site/
  patchbench publish --history watch-out/ --pages site/
  patchbench publish results/*/ --repo owner/linux --pr 42 --sha \"$SHA\" --dry-run
  GITHUB_TOKEN=... patchbench publish results/*/ --repo owner/linux --pr 42 --sha \"$SHA\" \\
      --report-url \"$RUN_URL\"

Each campaign gets one comment, opened by the marker <!-- patchbench:CAMPAIGN -->,
and one commit status with context patchbench/CAMPAIGN: error when a guest
failure stopped a boot or nothing was measured, failure when the patch
regressed (exit 1), success otherwise. When
$GITHUB_STEP_SUMMARY is set, each report is appended to it.";

/// One campaign's renderings.
struct Item {
    campaign: String,
    markdown: String,
    state: StatusState,
    description: String,
}

/// Where comments and statuses go.
struct Target {
    repo: Repo,
    pr: u64,
    sha: String,
}

pub(super) async fn publish(args: PublishArgs, sink: Arc<dyn Sink>) -> anyhow::Result<()> {
    let target = match (args.repo.clone(), args.pr, args.sha.clone()) {
        (Some(repo), Some(pr), Some(sha)) => {
            check_sha(&sha)?;
            Some(Target { repo, pr, sha })
        }
        // clap requires all three together.
        _ => None,
    };
    let mut loaded: Vec<(PathBuf, Results)> = Vec::new();
    for given in &args.results {
        let (file, run_dir) = locate(given);
        let results = Results::load(&file)?;
        // One comment and one status per campaign: to GitHub, one run of
        // each. Pages alone take many (a campaign's trend page is for that).
        if target.is_some()
            && let Some((other, _)) = loaded.iter().find(|(_, r)| r.campaign == results.campaign)
        {
            anyhow::bail!(
                "{} and {} are both of campaign {:?}; publish one run per campaign (each campaign has one comment)",
                other.display(),
                run_dir.display(),
                results.campaign
            );
        }
        // Refuse a name the marker cannot carry before anything is written.
        github::campaign_marker(&results.campaign)?;
        // Pages and comments render the stored judgement; a document
        // without one (a shard, a run cut short, an older schema) is
        // judged first, on purpose.
        if results.judgement.is_none() {
            return Err(crate::results::ResultsError::Unjudged { path: file }.into());
        }
        loaded.push((run_dir, results));
    }
    let watched = match &args.history {
        // A year of nights is hundreds of documents: read off the async
        // threads, so Ctrl-C is seen at once.
        Some(dir) => {
            let (dir, sink) = (dir.clone(), sink.clone());
            Some(crate::blocking::unblock(move || load_history(&dir, sink.as_ref())).await?)
        }
        None => None,
    };
    let runs: Vec<Run> = loaded.iter().map(|(dir, r)| Run::new(r, dir)).collect();
    let items: Vec<Item> = runs
        .iter()
        .map(|run| {
            let (state, description) = status_for(run);
            Item {
                campaign: run.results.campaign.clone(),
                markdown: crate::report::markdown(run.results),
                state,
                description,
            }
        })
        .collect();

    // The token is checked before anything is written.
    let client = match &target {
        Some(target) if !args.dry_run => Some(
            GithubClient::from_env(target.repo.clone(), &args.token_var, &args.api_url)?
                .with_events(sink.clone()),
        ),
        _ => None,
    };

    if let Some(dir) = &args.pages {
        let site = match &watched {
            Some(w) => {
                // The nights' runs, then the runs given.
                let all: Vec<Run> = w
                    .runs
                    .iter()
                    .map(|(night, run_dir, r)| Run::new(r, run_dir).of_night(*night))
                    .chain(runs.iter().cloned())
                    .collect();
                html::write_history_site(dir, &all, &w.history, &w.dir)
            }
            None => html::write_site(dir, &runs),
        }
        .with_context(|| format!("cannot write the pages into {}", dir.display()))?;
        sink.emit(Event::Note(format!(
            "pages: {} ({} files)",
            dir.join("index.html").display(),
            site.written.len()
        )));
        for log in &site.missing_logs {
            sink.emit(Event::Note(format!(
                "pages: console log {} not found; its link dangles",
                log.display()
            )));
        }
        for report in &site.missing_reports {
            sink.emit(Event::Note(format!(
                "pages: change point report {} not found; its page says so",
                report.display()
            )));
        }
    }

    let report_url = args.report_url.as_deref();
    if args.dry_run {
        sink.emit(Event::Output(dry_run_text(
            target.as_ref(),
            &items,
            report_url,
        )?));
    } else if let (Some(target), Some(client)) = (&target, &client) {
        for item in &items {
            let outcome = client
                .upsert_comment(target.pr, &item.campaign, &item.markdown, report_url)
                .await
                .with_context(|| {
                    format!(
                        "cannot post the {} report on {}#{}",
                        item.campaign, target.repo, target.pr
                    )
                })?;
            let action = match outcome.action {
                CommentAction::Created => "created",
                CommentAction::Updated => "updated",
                CommentAction::Unchanged => "unchanged",
            };
            sink.emit(Event::Output(format!(
                "comment {action}: {}\n",
                outcome.html_url
            )));
            client
                .set_status(
                    &target.sha,
                    item.state,
                    &item.campaign,
                    &item.description,
                    report_url,
                )
                .await
                .with_context(|| {
                    format!("cannot set the {} status on {}", item.campaign, target.sha)
                })?;
            sink.emit(Event::Output(format!(
                "status patchbench/{} on {}: {}\n",
                item.campaign,
                target.sha,
                item.state.as_str()
            )));
        }
    }

    for item in &items {
        if let Some(wrote) = github::append_step_summary_from_env(&item.markdown, report_url)?
            && wrote.truncated
        {
            sink.emit(Event::Note(format!(
                "step summary: the {} report was cut to fit GitHub's limit",
                item.campaign
            )));
        }
    }
    Ok(())
}

/// A watch history and its nights' runs, loaded for the pages.
struct Watched {
    dir: PathBuf,
    history: History,
    /// Each night's runs that have a judged results document: the night's
    /// index, the run directory and the document.
    runs: Vec<(usize, PathBuf, Results)>,
}

/// `dir`'s history.json and every night's run in it. A run without a
/// results document, or with one never judged (a night that failed before
/// it finished), is left out with a note: its night still shows in the
/// change points' records. A directory without history.json is refused.
fn load_history(dir: &Path, sink: &dyn Sink) -> anyhow::Result<Watched> {
    let Some(history) = History::load(dir)? else {
        anyhow::bail!(
            "{} not found: {} is not a watch history (patchbench watch writes one)",
            dir.join(HISTORY_FILE).display(),
            dir.display()
        );
    };
    let mut runs = Vec::new();
    for night in &history.nights {
        for run in &night.runs {
            let run_dir = dir.join(&run.dir);
            let file = super::args::results_file(&run_dir);
            if !file.is_file() {
                sink.emit(Event::Note(format!(
                    "pages: night {} ran {} without a results document ({}); left out",
                    night.index, run.campaign, run.outcome
                )));
                continue;
            }
            let results = Results::load(&file)?;
            if results.judgement.is_none() {
                sink.emit(Event::Note(format!(
                    "pages: night {}'s run of {} ({}) was never judged; left out",
                    night.index,
                    run.campaign,
                    file.display()
                )));
                continue;
            }
            runs.push((night.index, run_dir, results));
        }
    }
    Ok(Watched {
        dir: dir.to_owned(),
        history,
        runs,
    })
}

/// The results file and its run directory for a command-line argument.
fn locate(given: &Path) -> (PathBuf, PathBuf) {
    if given.is_dir() {
        (super::args::results_file(given), given.to_owned())
    } else {
        let dir = given
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned();
        (given.to_owned(), dir)
    }
}

fn check_sha(sha: &str) -> Result<(), GithubError> {
    if matches!(sha.len(), 40 | 64) && sha.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(GithubError::InvalidSha {
            given: sha.to_string(),
        })
    }
}

/// The commit status for a run: error when a guest failure stopped a boot
/// (what was compared lacks it; `run` and `compare` exit 5) or when no
/// metric was measured, failure when the patch regressed (the stored
/// judgement's `regressed`, what exit 1 is: where the patched kernel is
/// the baseline, what the base does better), success otherwise; the
/// description counts the rows' verdicts.
fn status_for(run: &Run) -> (StatusState, String) {
    let stopped: Vec<String> = crate::report::failed_boots(run.results)
        .into_iter()
        .map(|b| b.label)
        .collect();
    let counts = run.verdict_counts();
    let regressed = match &run.results.judgement {
        Some(j) => !j.regressed.is_empty(),
        None => counts.iter().any(|(v, _)| *v == Verdict::Regression),
    };
    status_with_stopped(&stopped, &counts, regressed)
}

fn status_with_stopped(
    stopped: &[String],
    counts: &[(Verdict, usize)],
    regressed: bool,
) -> (StatusState, String) {
    let (state, text) = status_from_counts(counts, regressed);
    if stopped.is_empty() {
        return (state, text);
    }
    (
        StatusState::Error,
        format!(
            "a guest failure stopped boot {}; {text}",
            stopped.join(", ")
        ),
    )
}

fn status_from_counts(counts: &[(Verdict, usize)], regressed: bool) -> (StatusState, String) {
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return (
            StatusState::Error,
            "no metric was measured: no complete boot of A and B".into(),
        );
    }
    let state = if regressed {
        StatusState::Failure
    } else {
        StatusState::Success
    };
    let parts: Vec<String> = counts
        .iter()
        .map(|(v, n)| format!("{n} {}", v.label()))
        .collect();
    (
        state,
        format!("{total} metric(s) compared: {}", parts.join(", ")),
    )
}

/// What `--dry-run` prints: each comment body as it would be posted (marker
/// included) and each status as it would be set.
fn dry_run_text(
    target: Option<&Target>,
    items: &[Item],
    report_url: Option<&str>,
) -> Result<String, GithubError> {
    let mut s = String::from("dry run: nothing is sent to GitHub\n");
    if target.is_none() {
        s.push_str("(no --repo/--pr/--sha: shown as they would be posted)\n");
    }
    for item in items {
        let marker = github::campaign_marker(&item.campaign)?;
        let body = github::comment_body(&marker, &item.markdown, report_url);
        let place = target.map_or("the pull request".to_string(), |t| {
            format!("{}#{}", t.repo, t.pr)
        });
        let _ = writeln!(
            s,
            "\n=== comment on {place} (edits the comment opened by {marker} if there is one)\n{body}"
        );
        if !body.ends_with('\n') {
            s.push('\n');
        }
        let sha = target.map_or("the head commit", |t| t.sha.as_str());
        let _ = writeln!(
            s,
            "=== status on {sha}\ncontext: patchbench/{}\nstate: {}\ndescription: {}\ntarget_url: {}",
            item.campaign,
            item.state.as_str(),
            github::status_description(&item.description),
            report_url.unwrap_or("(none)")
        );
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regressed_metric_fails_the_status() {
        let (state, text) = status_from_counts(
            &[(Verdict::Regression, 2), (Verdict::NoClearDifference, 4)],
            true,
        );
        assert_eq!(state, StatusState::Failure);
        assert_eq!(
            text,
            "6 metric(s) compared: 2 regression, 4 no clear difference"
        );
    }

    #[test]
    fn anything_but_a_regression_passes() {
        let (state, text) = status_from_counts(
            &[
                (Verdict::Improvement, 1),
                (Verdict::Changed, 1),
                (Verdict::Inconclusive, 1),
            ],
            false,
        );
        assert_eq!(state, StatusState::Success);
        assert_eq!(
            text,
            "3 metric(s) compared: 1 improvement, 1 changed, 1 inconclusive"
        );
    }

    #[test]
    fn a_stopped_boot_is_an_error_status_even_beside_a_regression() {
        let stopped = ["A'".to_string()];
        let (state, text) = status_with_stopped(&stopped, &[(Verdict::Regression, 1)], true);
        assert_eq!(state, StatusState::Error);
        assert_eq!(
            text,
            "a guest failure stopped boot A'; 1 metric(s) compared: 1 regression"
        );
        let (state, _) = status_with_stopped(&[], &[(Verdict::Improvement, 1)], false);
        assert_eq!(state, StatusState::Success);
    }

    #[test]
    fn nothing_measured_is_an_error_status() {
        assert_eq!(status_from_counts(&[], false).0, StatusState::Error);
    }

    /// 004-anon-random-margin-first boots the patched kernel as A: its
    /// base's +17% is a "regression" row of B, but the patch did not
    /// regress (it exits 0), so its commit status passes.
    #[test]
    fn the_status_of_a_run_with_the_patch_as_a_follows_the_exit_code_not_the_row_words() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results/seeds/004-anon-random-margin-first");
        let results = crate::results::Results::load(&dir.join("results.json")).unwrap();
        let judged = results.judgement.as_ref().unwrap();
        assert!(judged.regressed.is_empty(), "{:?}", judged.regressed);
        let run = Run {
            results: &results,
            rows: &judged.rows,
            steps: &judged.steps,
            run_dir: &dir,
            night: None,
        };
        assert!(
            run.verdict_counts()
                .iter()
                .any(|(v, n)| *v == Verdict::Regression && *n > 0),
            "the kept run no longer has a regression row to test with"
        );
        let (state, text) = status_for(&run);
        assert_eq!(state, StatusState::Success, "{text}");
    }

    #[test]
    fn a_short_sha_is_refused_before_anything_is_sent() {
        assert!(check_sha("abc123").is_err());
        assert!(check_sha(&"a".repeat(40)).is_ok());
        assert!(check_sha(&"g".repeat(40)).is_err());
    }

    #[test]
    fn a_results_file_or_its_directory_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let (file, run_dir) = locate(dir.path());
        assert_eq!(file, dir.path().join("results.json"));
        assert_eq!(run_dir, dir.path());
        let (file, run_dir) = locate(Path::new("results.json"));
        assert_eq!(
            (file.as_path(), run_dir.as_path()),
            (Path::new("results.json"), Path::new("."))
        );
    }
}
