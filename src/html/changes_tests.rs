//! Tests of the change points' page models (`changes.rs`) and of how the
//! trend pages and the index show them. The runs are the stored smoke
//! fixture, judged, as three nights; the history around them (heads,
//! commits, the change point's figures) is made up here, since no watch
//! has run yet.

use std::path::{Path, PathBuf};

use super::*;
use crate::html::view::Run;
use crate::results::Results;
use crate::results::history::{CommitHunt, NightRun};

const SCRIPT: &str = "<script>alert(1)</script>";

fn commit(n: u8, subject: &str) -> CommitInfo {
    CommitInfo {
        commit: format!("{n:x}").repeat(40),
        subject: subject.into(),
        author: format!("Author {n} <a{n}@example.org>"),
    }
}

/// The smoke fixture, judged, started `minutes` after it did.
fn night_run(minutes: i64) -> Results {
    let mut r = crate::results::tests::fixture();
    r.started_at = r
        .started_at
        .checked_add(jiff::SignedDuration::from_mins(minutes))
        .unwrap();
    crate::judge::judge_into(&mut r);
    r
}

/// A history of three nights (heads 1, 2, 3) of campaign `smoke`, with a
/// change point of `pageout_cpu_ns` at night 2 whose commits carry a
/// hostile subject and author, and another of `elapsed_ns` at night 1.
fn history() -> History {
    let mut h = History::new("/src/linux", "mm-unstable");
    for i in 0..3u8 {
        h.nights.push(Night {
            index: i.into(),
            started_at: "2026-12-01T02:00:00Z".parse().unwrap(),
            head: commit(i + 1, &format!("head {i}")),
            previous: i.checked_sub(1).map(|p| commit(p + 1, "").commit),
            commits: Vec::new(),
            runs: vec![NightRun {
                campaign: "smoke".into(),
                campaign_file: "ci/smoke.yaml".into(),
                dir: format!("nights/{i:03}/smoke").into(),
                chosen: "named".into(),
                headline: String::new(),
                outcome: "ok".into(),
            }],
        });
    }
    let mut hostile = commit(9, &format!("mm: {SCRIPT} zswap"));
    hostile.author = format!("{SCRIPT} <evil@example.org>");
    let step = |metric: &str, night: usize, commits: Vec<CommitInfo>| ChangePoint {
        campaign: "smoke".into(),
        metric: metric.into(),
        unit: "ns".into(),
        night,
        before: h.nights[night - 1].head.commit.clone(),
        after: h.nights[night].head.commit.clone(),
        commits,
        before_mean: 641.3e6,
        after_mean: 684.7e6,
        change_pct: 6.77,
        ci_low_pct: 2.5,
        ci_high_pct: 11.25,
        p: 0.0004,
        verdict: "regression".into(),
        hunt: None,
        report: None,
    };
    let mut cp = step(
        "pageout_cpu_ns",
        2,
        vec![hostile.clone(), commit(8, "mm: another")],
    );
    cp.hunt = Some(CommitHunt {
        dir: "hunts/smoke-pageout_cpu_ns-2".into(),
        pairs: 2,
        found: Some(hostile),
        change_pct: Some(6.5),
        ci_low_pct: Some(1.0),
        ci_high_pct: Some(12.0),
        state: "found".into(),
    });
    cp.report = Some("reports/smoke-pageout_cpu_ns-2.md".into());
    let earlier = step("elapsed_ns", 1, vec![commit(7, "mm: earlier")]);
    h.change_points = vec![earlier, cp];
    h
}

fn site(history: &History) -> HistorySite<'_> {
    HistorySite {
        history,
        stems: vec!["smoke-elapsed-ns-1".into(), "smoke-pageout-cpu-ns-2".into()],
        reports: vec![false, true],
    }
}

/// The x of every `<circle>` and of every change point's `<line>` in `svg`.
fn xs(svg: &str) -> (Vec<f64>, Vec<f64>) {
    let attr = |tag: &str, name: &str| -> f64 {
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    let circles = svg
        .split('<')
        .filter(|t| t.starts_with("circle"))
        .map(|t| attr(t, "cx"))
        .collect();
    let lines = svg
        .split('<')
        .filter(|t| t.starts_with("line class=\"change-point\""))
        .map(|t| attr(t, "x1"))
        .collect();
    (circles, lines)
}

/// The `<svg>` of the plot of `metric` on a trend page.
fn plot_of<'p>(page: &'p str, metric: &str) -> &'p str {
    let title = format!("<title>{metric}: B vs A across runs</title>");
    let at = page
        .find(&title)
        .unwrap_or_else(|| panic!("no plot of {metric}"));
    let start = page[..at].rfind("<svg").unwrap();
    let end = page[at..].find("</svg>").unwrap() + at;
    &page[start..end]
}

#[test]
fn a_marker_goes_between_the_last_night_before_and_the_first_after() {
    let n = |v: &[Option<usize>], step| marker_x(v, step);
    assert_eq!(n(&[Some(0), Some(1), Some(2)], 2), Some(1.5));
    // A night without a run of the campaign: between the runs around it.
    assert_eq!(n(&[Some(0), Some(1), Some(3)], 2), Some(1.5));
    assert_eq!(n(&[Some(0), Some(3), Some(4)], 2), Some(0.5));
    // A run from outside the history between them: midway still.
    assert_eq!(n(&[Some(1), None, Some(2)], 2), Some(1.0));
    // The step before the first run, or after the last.
    assert_eq!(n(&[Some(2), Some(3)], 1), Some(-0.5));
    assert_eq!(n(&[Some(0), Some(1)], 5), Some(1.5));
    assert_eq!(n(&[None, None], 1), None);
}

#[test]
fn the_trend_page_marks_the_change_point_between_its_nights_and_escapes_its_commits() {
    let history = history();
    let site = site(&history);
    // The nights given out of order: the page puts them in theirs.
    let docs = [night_run(20), night_run(0), night_run(10)];
    let dir = Path::new("/out");
    let runs: Vec<Run> = [2, 0, 1]
        .into_iter()
        .zip(&docs)
        .map(|(night, r)| Run::new(r, dir).of_night(night))
        .collect();
    let page = crate::html::render_trend_with(
        "smoke",
        &runs,
        |i| format!("r{i}.html"),
        Nav::default(),
        Some(&site),
    )
    .unwrap();
    // One marker on each of a change point's two plots (its metric's
    // level and change), none elsewhere; every metric has both plots.
    assert_eq!(page.matches("<line class=\"change-point\"").count(), 4);
    assert_eq!(
        page.matches(": B&apos;s level across runs</title>").count(),
        page.matches(": B vs A across runs</title>").count()
    );
    let (circles, lines) = xs(plot_of(&page, "pageout_cpu_ns"));
    assert_eq!((circles.len(), lines.len()), (3, 1), "{page}");
    assert!(
        circles[1] < lines[0] && lines[0] < circles[2],
        "the step at night 2 is drawn at {} between nights at {circles:?}",
        lines[0]
    );
    let (circles, lines) = xs(plot_of(&page, "elapsed_ns"));
    assert!(circles[0] < lines[0] && lines[0] < circles[1]);
    assert_eq!(xs(plot_of(&page, "verify_cpu_ns")).1, Vec::<f64>::new());
    assert!(page.contains(">step +6.77%</text>"), "{page}");
    // The axis names each night's head; the runs are in the nights' order.
    let heads: Vec<String> = (1..=3).map(|n| format!("{n:x}").repeat(12)).collect();
    for head in &heads {
        assert!(page.contains(&format!("\n{head}\n")), "{head}");
    }
    let at = |s: &str| page.find(s).unwrap();
    assert!(at("href=\"r1.html\"") < at("href=\"r2.html\""));
    assert!(at("href=\"r2.html\"") < at("href=\"r0.html\""));
    // The table below the plots: both change points, oldest first, with
    // the commits' subjects escaped.
    let table = &page[at("<table id=\"change-points\"")..];
    assert_eq!(table.matches("<tr class=\"change-row\">").count(), 2);
    assert!(table.find("elapsed_ns").unwrap() < table.find("pageout_cpu_ns").unwrap());
    assert!(table.contains("mm: &#60;script&#62;alert(1)&#60;/script&#62; zswap"));
    assert!(!page.contains(SCRIPT), "{page}");
    assert!(table.contains("<td class=\"num\" data-label=\"change\">+6.77%</td>"));
    assert!(table.contains("[+2.50%, +11.25%]"));
    // The hunt's commit, with its own change and interval.
    assert!(table.contains("zswap: +6.50% [+1.00%, +12.00%]"), "{table}");
    assert!(table.contains("<a href=\"../changes/smoke-pageout-cpu-ns-2.html\">page</a>"));
    assert!(table.contains("<a href=\"../changes/smoke-pageout-cpu-ns-2.md\">report</a>"));
    assert!(!table.contains("smoke-elapsed-ns-1.md"), "no report copied");
}

#[test]
fn runs_from_outside_the_history_keep_the_date_axis() {
    let history = history();
    let site = site(&history);
    let docs = [night_run(0), night_run(10), night_run(20)];
    let dir = Path::new("/out");
    let runs = vec![
        Run::new(&docs[0], dir).of_night(1),
        Run::new(&docs[1], dir),
        Run::new(&docs[2], dir).of_night(2),
    ];
    let page = crate::html::render_trend_with(
        "smoke",
        &runs,
        |i| format!("r{i}.html"),
        Nav::default(),
        Some(&site),
    )
    .unwrap();
    let svg = plot_of(&page, "pageout_cpu_ns");
    assert!(svg.contains("\n11-30\n"), "{svg}");
    assert!(!svg.contains(&"2".repeat(12)));
    // The marker between night 1's run and night 2's, the run between
    // them from outside the history.
    let (circles, lines) = xs(svg);
    assert!(circles[0] < lines[0] && lines[0] < circles[2]);
}

#[test]
fn the_index_lists_every_change_point_newest_first_above_the_runs() {
    let history = history();
    let site = site(&history);
    let doc = night_run(0);
    let runs = [Run::new(&doc, Path::new("/out")).of_night(0)];
    let page = crate::html::render_index_with(&runs, |_| "r.html".into(), Some(&site)).unwrap();
    let newer = page
        .find("href=\"changes/smoke-pageout-cpu-ns-2.html\"")
        .unwrap();
    let older = page
        .find("href=\"changes/smoke-elapsed-ns-1.html\"")
        .unwrap();
    assert!(newer < older, "newest first");
    assert!(
        older < page.find("<table id=\"runs\"").unwrap(),
        "above the runs"
    );
    assert_eq!(page.matches("<tr class=\"change-row\">").count(), 2);
    assert_eq!(
        page.matches("<span class=\"badge v-regression\">regression</span>")
            .count(),
        2
    );
    // Without a history, no such section.
    let plain = crate::html::render_index(&runs, |_| "r.html".into()).unwrap();
    assert!(!plain.contains("change-points"));
}

#[test]
fn the_change_point_page_renders_the_record_escaped() {
    let history = history();
    let site = site(&history);
    let page = change_page(&site, 1, "../trends/smoke.html".into(), |night| {
        (night == 1).then(|| "../runs/one/index.html".to_string())
    });
    let html = askama::Template::render(&page).unwrap();
    assert!(!html.contains(SCRIPT), "{html}");
    assert!(html.contains("mm: &#60;script&#62;alert(1)&#60;/script&#62; zswap"));
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62; &#60;evil@example.org&#62;"));
    // The step in the unit that fits, the change with its interval.
    assert!(
        html.contains("regression from 641.300 to 684.700 ms, +6.77% [+2.50%, +11.25%] (p &#60;0.001), between night 1 (222222222222) and night 2 (333333333333)."),
        "{html}"
    );
    // Both nights, the first with its run page; the trend page.
    assert!(html.contains("<a class=\"run\" href=\"../runs/one/index.html\">run page</a>"));
    assert_eq!(html.matches("not on this site").count(), 1);
    assert!(html.contains("<a href=\"../trends/smoke.html\">Trends of smoke</a>"));
    // The hunt's commit, and the commands that measure the step again.
    assert!(html.contains(&format!("Found <code>{}</code>", "9".repeat(40))));
    let (before, after) = ("2".repeat(40), "3".repeat(40));
    assert!(html.contains(&format!(
        "git -C /src/linux format-patch -o after-series {before}..{after}\npatchbench run ci/smoke.yaml --tree /src/linux --rev {before} --series after-series"
    )), "{html}");
    assert!(html.contains(&format!(
        "--rev &#39;{}^&#39; --series found-series",
        "9".repeat(40)
    )));
    assert!(html.contains("<a class=\"report\" href=\"../changes/smoke-pageout-cpu-ns-2.md\">"));
    // The other change point names no report and had no hunt.
    let html = askama::Template::render(&change_page(&site, 0, String::new(), |_| None)).unwrap();
    assert!(html.contains("The watch wrote no report"));
    assert!(html.contains("No hunt: the step spans one commit."));
}

#[test]
fn shell_words_are_quoted_only_when_they_must_be() {
    assert_eq!(
        shell_word("ci/seeds/000-counter.yaml"),
        "ci/seeds/000-counter.yaml"
    );
    assert_eq!(
        shell_word("https://git.kernel.org/x.git"),
        "https://git.kernel.org/x.git"
    );
    assert_eq!(shell_word("my tree"), "'my tree'");
    assert_eq!(shell_word("a'b"), r"'a'\''b'");
    assert_eq!(shell_word("$(reboot)"), "'$(reboot)'");
    assert_eq!(shell_word(""), "''");
}

#[test]
fn the_site_copies_each_report_and_names_those_it_cannot() {
    let hdir = tempfile::tempdir().unwrap();
    let mut history = history();
    std::fs::create_dir_all(hdir.path().join("reports")).unwrap();
    std::fs::write(
        hdir.path().join("reports/smoke-pageout_cpu_ns-2.md"),
        "# pageout_cpu_ns regressed\n",
    )
    .unwrap();
    // A report outside the history directory is never read.
    history.change_points[0].report = Some(PathBuf::from("../../etc/passwd"));
    let doc = night_run(0);
    let runs = [Run::new(&doc, hdir.path()).of_night(2)];
    let out = tempfile::tempdir().unwrap();
    let report = crate::html::write_history_site(out.path(), &runs, &history, hdir.path()).unwrap();
    let changes = out.path().join("changes");
    assert_eq!(
        std::fs::read_to_string(changes.join("smoke-pageout-cpu-ns-2.md")).unwrap(),
        "# pageout_cpu_ns regressed\n"
    );
    assert_eq!(
        report.missing_reports,
        vec![hdir.path().join("../../etc/passwd")]
    );
    let missing = std::fs::read_to_string(changes.join("smoke-elapsed-ns-1.html")).unwrap();
    assert!(missing.contains("which was not found in the history directory"));
    // Every page's relative links land on a file the site has.
    for page in report
        .written
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
    {
        let html = std::fs::read_to_string(page).unwrap();
        for (i, _) in html.match_indices("href=\"") {
            let href = &html[i + 6..][..html[i + 6..].find('"').unwrap()];
            if href.starts_with('#') || href.contains("console.log") {
                continue;
            }
            let target = page.parent().unwrap().join(href.split('#').next().unwrap());
            assert!(
                target.is_file(),
                "{} links to missing {href}",
                page.display()
            );
        }
    }
}

#[test]
fn a_row_lists_the_first_commits_and_counts_the_rest() {
    let mut history = history();
    history.change_points[1].commits = (1..=7).map(|n| commit(n, "mm: x")).collect();
    let row = site(&history).row(1, "../");
    assert_eq!(row.commits.len(), COMMITS_IN_A_ROW);
    assert_eq!(row.more_commits, 2);
    assert_eq!(row.commits[0].short, "1".repeat(12));
    // The page lists them all.
    let page = change_page(&site(&history), 1, String::new(), |_| None);
    assert_eq!(page.commits.len(), 7);
}
