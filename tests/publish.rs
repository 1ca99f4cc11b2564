//! `patchbench publish`, the real binary, end to end against a local GitHub
//! stand-in (wiremock): the first publish creates the PR comment and sets
//! the status, a second one edits that comment instead of posting another;
//! `--dry-run` prints what would be posted and sends nothing; `--history`
//! puts a watch history's nights and change points on the pages.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_publishTestTokenNeverShown42";
const SHA: &str = "9b96fe89a6f48ab291b00f765a3a15462a42af37";
const COMMENTS: &str = "/repos/o/r/issues/7/comments";
const MARKER: &str = "<!-- patchbench:smoke -->";

/// The stored smoke run's results.json, judged, copied into `dir/run/`,
/// with `edit` applied to it.
fn run_dir(dir: &Path, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json");
    let mut results = patchbench::results::Results::load(&fixture).unwrap();
    patchbench::judge::judge_into(&mut results);
    let mut doc: Value = serde_json::to_value(&results).unwrap();
    edit(&mut doc);
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("results.json"), doc.to_string()).unwrap();
    run
}

struct Output {
    ok: bool,
    stdout: String,
    stderr: String,
}

async fn patchbench(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_patchbench"));
    cmd.args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_API_URL")
        .env_remove("GITHUB_TOKEN")
        .env("NO_COLOR", "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("publish finished within 60 s")
        .unwrap();
    let output = Output {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !output.stdout.contains(TOKEN) && !output.stderr.contains(TOKEN),
        "the token was printed:\n{}\n{}",
        output.stdout,
        output.stderr
    );
    output
}

fn comment(body: &str) -> Value {
    json!({"id": 1, "html_url": "https://github.com/o/r/pull/7#issuecomment-1", "body": body})
}

fn publish_args<'a>(run: &'a str, server: &'a str) -> Vec<&'a str> {
    vec![
        "publish",
        run,
        "--repo",
        "o/r",
        "--pr",
        "7",
        "--sha",
        SHA,
        "--token-var",
        "PATCHBENCH_TEST_TOKEN",
        "--api-url",
        server,
        "--report-url",
        "https://example.org/runs/1",
    ]
}

#[tokio::test]
async fn a_second_publish_edits_the_comment_the_first_created() {
    let server = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let summary = tmp.path().join("summary.md");
    let envs = [
        ("PATCHBENCH_TEST_TOKEN", TOKEN),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let status = || {
        Mock::given(method("POST"))
            .and(path(format!("/repos/o/r/statuses/{SHA}")))
            .and(body_partial_json(json!({
                "state": "success",
                "context": "patchbench/smoke",
                "target_url": "https://example.org/runs/1",
            })))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 5})))
            .expect(1)
    };

    // 1. No comment yet: one is created.
    let run = run_dir(tmp.path(), |_| {});
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(201).set_body_json(comment("(created)")))
        .expect(1)
        .mount(&server)
        .await;
    status().mount(&server).await;
    let uri = server.uri();
    let out = patchbench(&publish_args(run.to_str().unwrap(), &uri), &envs).await;
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("comment created: https://github.com/o/r/pull/7#issuecomment-1")
    );
    assert!(
        out.stdout
            .contains(&format!("status patchbench/smoke on {SHA}: success"))
    );
    server.verify().await;
    let requests = server.received_requests().await.unwrap();
    let created = requests
        .iter()
        .find(|r| r.method.as_str() == "POST" && r.url.path() == COMMENTS)
        .unwrap();
    let posted: Value = serde_json::from_slice(&created.body).unwrap();
    let posted = posted["body"].as_str().unwrap().to_string();
    assert!(posted.starts_with(&format!("{MARKER}\n### patchbench: zswap-pageout")));
    assert!(posted.contains(
        "| metric | unit | A mean | B mean | B vs A [95% CI] | p | verdict | A drift | max CV |"
    ));
    let summary_text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        summary_text.starts_with("### patchbench: zswap-pageout"),
        "{summary_text}"
    );

    // 2. The comment exists (with what was posted); the report changed: it
    //    is edited, and no second comment is created.
    server.reset().await;
    let run = run_dir(&tmp.path().join("again"), |doc| {
        doc["series"]["patches"][0]["subject"] = json!("mm: memcg: the same patch, v2");
    });
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([comment(&posted)])))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/o/r/issues/comments/1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(comment("(edited)")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(201).set_body_json(comment("(duplicate)")))
        .expect(0)
        .mount(&server)
        .await;
    status().mount(&server).await;
    let out = patchbench(&publish_args(run.to_str().unwrap(), &uri), &envs).await;
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("comment updated:"), "{}", out.stdout);
    server.verify().await;
    let requests = server.received_requests().await.unwrap();
    let edited = requests
        .iter()
        .find(|r| r.method.as_str() == "PATCH")
        .unwrap();
    let edited: Value = serde_json::from_slice(&edited.body).unwrap();
    let edited = edited["body"].as_str().unwrap();
    assert!(edited.starts_with(MARKER));
    assert!(edited.contains("the same patch, v2"));
}

#[tokio::test]
async fn a_dry_run_prints_the_marked_comment_and_the_status_and_sends_nothing() {
    // A server that answers nothing: any request would fail the run.
    let server = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let run = run_dir(tmp.path(), |_| {});
    let pages = tmp.path().join("site");
    let uri = server.uri();
    let mut args = publish_args(run.to_str().unwrap(), &uri);
    args.extend(["--dry-run", "--pages", pages.to_str().unwrap()]);
    // No token in the environment: a dry run does not need one.
    let out = patchbench(&args, &[]).await;
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    assert!(server.received_requests().await.unwrap().is_empty());
    let text = &out.stdout;
    assert!(
        text.starts_with("dry run: nothing is sent to GitHub\n"),
        "{text}"
    );
    assert!(text.contains(&format!(
        "=== comment on o/r#7 (edits the comment opened by {MARKER}"
    )));
    assert!(text.contains(&format!("\n{MARKER}\n### patchbench: zswap-pageout")));
    assert!(text.contains(
        "| metric | unit | A mean | B mean | B vs A [95% CI] | p | verdict | A drift | max CV |"
    ));
    assert!(text.contains("| pageout_cpu_ns | ms |"), "{text}");
    assert!(text.contains(&format!(
        "=== status on {SHA}\ncontext: patchbench/smoke\nstate: success\n\
         description: 6 metric(s) compared: 2 no clear difference, 4 inconclusive\ntarget_url: https://example.org/runs/1\n"
    )));
    // The pages are local: written even in a dry run.
    assert!(pages.join("index.html").is_file());
}

/// A' stopped by a guest failure after one sample: A and B are still
/// compared, but the status is an error naming the boot, as `run` and
/// `compare` exit 5 for it.
#[tokio::test]
async fn a_stopped_boot_makes_the_status_an_error() {
    let server = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json");
    let mut results = patchbench::results::Results::load(&fixture).unwrap();
    let last = results.boots.last_mut().unwrap();
    last.samples.truncate(1);
    last.complete = false;
    last.failure = Some(patchbench::results::BootFailure {
        what: "kernel panic".into(),
        excerpt: "Kernel panic - not syncing".into(),
    });
    patchbench::judge::judge_into(&mut results);
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    results.save(&run.join("results.json")).unwrap();
    let uri = server.uri();
    let mut args = publish_args(run.to_str().unwrap(), &uri);
    args.push("--dry-run");
    let out = patchbench(&args, &[]).await;
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    let text = &out.stdout;
    assert!(
        text.contains("state: error\ndescription: a guest failure stopped boot A'; "),
        "{text}"
    );
    assert!(
        text.contains("**Stopped:** Boot A' (variant A) stopped after 1 of"),
        "{text}"
    );
}

#[tokio::test]
async fn a_missing_token_is_named_by_its_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_dir(tmp.path(), |_| {});
    let mut args = publish_args(run.to_str().unwrap(), "http://127.0.0.1:9");
    let var = args.iter().position(|a| *a == "--token-var").unwrap() + 1;
    args[var] = "PATCHBENCH_TEST_TOKEN_UNSET";
    let out = patchbench(&args, &[]).await;
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("environment variable PATCHBENCH_TEST_TOKEN_UNSET holds no GitHub token"),
        "{}",
        out.stderr
    );
}

/// Two runs of one campaign: the pages take both (the project's own site
/// keeps every run of a campaign and its trend), but one PR comment per
/// campaign cannot hold two, so posting them is refused before any request.
#[tokio::test]
async fn two_runs_of_a_campaign_make_pages_but_not_one_comment() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run_dir(&tmp.path().join("1"), |_| {});
    let second = run_dir(&tmp.path().join("2"), |doc| {
        doc["started_at"] = json!("2026-12-03T10:00:00Z");
    });
    let (first, second) = (first.to_str().unwrap(), second.to_str().unwrap());
    let site = tmp.path().join("site");
    let out = patchbench(
        &["publish", first, second, "--pages", site.to_str().unwrap()],
        &[],
    )
    .await;
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    let runs = std::fs::read_dir(site.join("runs")).unwrap().count();
    assert_eq!(runs, 2, "one page per run");

    let mut args = publish_args(first, "http://127.0.0.1:9");
    args.insert(2, second);
    args.push("--dry-run");
    let out = patchbench(&args, &[]).await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains("are both of campaign \"smoke\""),
        "{}",
        out.stderr
    );
}

/// A watch history with two nights (the stored smoke run twice, the
/// second an hour later) and a change point between them, made up here:
/// `--history` alone puts both nights and the change point on the pages;
/// with a run directory as well, that run gets the dry run's comment and
/// the nights do not; a directory without history.json is refused by name.
#[tokio::test]
async fn a_watch_history_goes_on_the_pages_and_a_directory_without_one_is_refused() {
    use patchbench::results::history::{ChangePoint, CommitInfo, History, Night, NightRun};
    let tmp = tempfile::tempdir().unwrap();
    let history_dir = tmp.path().join("history");
    let head = |n: u8| CommitInfo {
        commit: format!("{n}").repeat(40),
        subject: format!("head {n}"),
        author: "A U Thor <author@example.org>".into(),
    };
    let mut history = History::new("/src/linux", "mm-unstable");
    for i in 0..2u8 {
        // The night's run in `<night>/run/`, as `run_dir` writes it.
        let night = format!("nights/{i:03}-{}", &head(i + 1).commit[..12]);
        run_dir(&history_dir.join(&night), |doc| {
            doc["started_at"] = json!(format!("2026-12-0{}T02:00:00Z", i + 1));
        });
        history.nights.push(Night {
            index: i.into(),
            started_at: format!("2026-12-0{}T02:00:00Z", i + 1).parse().unwrap(),
            head: head(i + 1),
            previous: (i > 0).then(|| head(i).commit),
            commits: Vec::new(),
            runs: vec![NightRun {
                campaign: "smoke".into(),
                campaign_file: "ci/smoke.yaml".into(),
                dir: format!("{night}/run").into(),
                chosen: "named".into(),
                headline: String::new(),
                outcome: "ok".into(),
            }],
        });
    }
    // A night whose run left no results document: left out, with a note.
    history.nights[1].runs.push(NightRun {
        campaign: "other".into(),
        campaign_file: "ci/other.yaml".into(),
        dir: "nights/001/other".into(),
        chosen: "named".into(),
        headline: String::new(),
        outcome: "failed: the build broke".into(),
    });
    history.change_points.push(ChangePoint {
        campaign: "smoke".into(),
        metric: "pageout_cpu_ns".into(),
        unit: "ns".into(),
        night: 1,
        before: head(1).commit,
        after: head(2).commit,
        commits: vec![head(2)],
        before_mean: 641.3e6,
        after_mean: 684.7e6,
        change_pct: 6.77,
        ci_low_pct: 2.5,
        ci_high_pct: 11.25,
        p: 0.002,
        verdict: "regression".into(),
        hunt: None,
        report: Some("reports/smoke-pageout_cpu_ns-1.md".into()),
    });
    std::fs::create_dir_all(history_dir.join("reports")).unwrap();
    std::fs::write(
        history_dir.join("reports/smoke-pageout_cpu_ns-1.md"),
        "# report\n",
    )
    .unwrap();
    std::fs::write(
        history_dir.join("history.json"),
        serde_json::to_string_pretty(&history).unwrap(),
    )
    .unwrap();

    let site = tmp.path().join("site");
    let (h, s) = (history_dir.to_str().unwrap(), site.to_str().unwrap());
    let out = patchbench(&["publish", "--history", h, "--pages", s], &[]).await;
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "night 1 ran other without a results document (failed: the build broke); left out"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_dir(site.join("runs")).unwrap().count(), 2);
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(
        index.contains(
            r#"<a href="changes/smoke-pageout-cpu-ns-1.html">night 1 (222222222222)</a>"#
        ),
        "{index}"
    );
    let trend = std::fs::read_to_string(site.join("trends/smoke.html")).unwrap();
    // One change point, marked on both of its metric's plots: the nights'
    // levels and B against A.
    assert_eq!(trend.matches(r#"<line class="change-point""#).count(), 2);
    assert!(trend.contains("\n111111111111\n") && trend.contains("\n222222222222\n"));
    assert_eq!(
        std::fs::read_to_string(site.join("changes/smoke-pageout-cpu-ns-1.md")).unwrap(),
        "# report\n"
    );

    // With a run directory too: its comment only, in the dry run.
    let today = run_dir(&tmp.path().join("today"), |doc| {
        doc["started_at"] = json!("2026-12-03T02:00:00Z");
    });
    let site2 = tmp.path().join("site2");
    let out = patchbench(
        &[
            "publish",
            today.to_str().unwrap(),
            "--history",
            h,
            "--pages",
            site2.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
    )
    .await;
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout.matches("=== comment on").count(),
        1,
        "{}",
        out.stdout
    );
    assert_eq!(std::fs::read_dir(site2.join("runs")).unwrap().count(), 3);

    // A run directory is no history.
    let out = patchbench(
        &[
            "publish",
            "--history",
            today.to_str().unwrap(),
            "--pages",
            s,
        ],
        &[],
    )
    .await;
    assert!(!out.ok);
    let named = format!("{} not found", today.join("history.json").display());
    assert!(out.stderr.contains(&named), "{}", out.stderr);
    // And a history needs --pages.
    let out = patchbench(&["publish", "--history", h], &[]).await;
    assert!(!out.ok && out.stderr.contains("--pages"), "{}", out.stderr);
}
