//! The HTML pages of a stored real smoke run (`tests/fixtures/smoke-results.json`):
//! their structure, their determinism, and that nothing from a results
//! document can become markup.

use std::path::{Path, PathBuf};

use patchbench::html::{self, Run};
use patchbench::results::Results;

fn fixture() -> Results {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json");
    Results::load(&path).unwrap()
}

/// `r` with its judgement, which is what pages render.
fn judged(mut r: Results) -> Results {
    patchbench::judge::judge_into(&mut r);
    r
}

const METRICS: [&str; 6] = [
    "pageout_cpu_ns",
    "verify_cpu_ns",
    "total_cpu_ns",
    "elapsed_ns",
    "zswpout_pages",
    "zswpin_pages",
];

/// The tags in `html`: what lies between each `<` and the next `>`. Text
/// askama or plotters escaped holds no `<`, so every `<` opens real markup.
fn tags(html: &str) -> Vec<&str> {
    html.split('<')
        .skip(1)
        .map(|rest| rest.split_once('>').map_or(rest, |(tag, _)| tag))
        .collect()
}

const ALLOWED_TAGS: &[&str] = &[
    "!DOCTYPE",
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "nav",
    "a",
    "header",
    "footer",
    "h1",
    "h2",
    "h3",
    "p",
    "span",
    "strong",
    "br",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "code",
    "figure",
    "figcaption",
    "svg",
    "rect",
    "circle",
    "line",
    "polyline",
    "polygon",
    "text",
    "path",
];

/// No tag outside the page's own vocabulary, and no event-handler attribute.
fn assert_markup_is_ours(what: &str, html: &str) {
    for tag in tags(html) {
        let name = tag
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("");
        assert!(
            ALLOWED_TAGS.contains(&name),
            "{what}: unexpected tag <{tag}>"
        );
        for attr in tag.split_whitespace().skip(1) {
            assert!(
                !attr.to_ascii_lowercase().starts_with("on"),
                "{what}: event handler in <{tag}>"
            );
        }
    }
    let lower = html.to_ascii_lowercase();
    for bad in ["<script", "<img", "<iframe", "javascript:"] {
        assert!(!lower.contains(bad), "{what}: contains {bad}");
    }
}

fn svgs(html: &str) -> Vec<&str> {
    html.match_indices("<svg")
        .map(|(i, _)| {
            let end = html[i..].find("</svg>").expect("closed svg") + i + "</svg>".len();
            &html[i..end]
        })
        .collect()
}

#[test]
fn the_run_page_shows_the_table_a_plot_per_metric_and_the_tcg_label() {
    let results = fixture();
    let results = judged(results);
    let run = Run::new(&results, Path::new("/out"));
    let page = html::render_run(&run).unwrap();

    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<title>patchbench: smoke, 2026-11-30 00:35 UTC</title>"));
    assert!(page.contains(r#"<span class="accel tcg" id="accel">TCG</span>"#));
    assert!(page.contains(r#"id="tcg-warning""#));
    assert!(page.contains("no hardware KVM module"));
    // The stored run is plain MTTCG: no lane label after "TCG".
    assert!(page.contains("<strong>Accelerator: TCG (software emulation)</strong>"));
    // Each TCG lane is labelled, as in Markdown.
    let mut icount = results.clone();
    icount.host.lane = patchbench::model::Lane::Icount;
    let icount = judged(icount);
    let page = html::render_run(&Run::new(&icount, Path::new("/out"))).unwrap();
    assert!(
        page.contains(
            "Accelerator: TCG (software emulation) with icount (deterministic guest clock)"
        ),
        "{page}"
    );
    // Boots in memory layouts of their own: one note under the tables.
    assert!(!page.contains("judged-by-boot"));
    let mut layouts = results.clone();
    for (boot, layout) in layouts.boots.iter_mut().zip([1, 1, 2]) {
        boot.layout = Some(layout);
    }
    let layouts = judged(layouts);
    let page = html::render_run(&Run::new(&layouts, Path::new("/out"))).unwrap();
    assert_eq!(
        page.matches(r#"<p class="note" id="judged-by-boot">Judged by boot: each boot ran in a memory layout of its own"#)
            .count(),
        1,
        "{page}"
    );
    let page = html::render_run(&run).unwrap();

    assert_eq!(
        page.matches(r#"<tr class="metric-row">"#).count(),
        METRICS.len()
    );
    assert_eq!(svgs(&page).len(), METRICS.len());
    for metric in METRICS {
        assert!(page.contains(&format!("<code>{metric}</code>")), "{metric}");
    }
    // The same numbers as the Markdown report, each labelled for the
    // narrow layout.
    for (label, value) in [
        ("A mean", "641.308"),
        ("B mean", "684.703"),
        ("change", "+6.77%"),
        ("A mean", "1.343"),
        ("A mean", "8192"),
        ("change", "+0.00%"),
    ] {
        assert!(
            page.contains(&format!(
                r#"<td class="num" data-label="{label}">{value}</td>"#
            )),
            "{label} {value}"
        );
    }
    // The stored smoke run's verdicts: four times inconclusive (A drifted),
    // the two page counters unchanged.
    assert_eq!(page.matches(r#"class="badge v-inconclusive""#).count(), 4);
    assert_eq!(page.matches(r#"class="badge v-nochange""#).count(), 2);
    assert!(!page.contains("not judged"));

    // Every sample drawn: 3 boots of 3 samples per metric.
    for svg in svgs(&page) {
        assert_eq!(svg.matches("<circle").count(), 9);
    }

    assert!(
        page.contains("mm: memcg: keep a swap-in margin for large folios near the memcg limit")
    );
    assert!(page.contains("Barry Song &#60;21cnbao@gmail.com&#62;"));
    assert!(page.contains("9b96fe89a6f48ab291b00f765a3a15462a42af37"));
    assert!(page.contains(r#"<a class="log" href="boots/0-A/console.log">"#));
    assert!(page.contains(r#"<a class="log" href="boots/2-Ap/console.log">"#));
    assert!(page.contains("zswap compressor"));
    assert!(page.contains("6.12.117+"));
    assert!(page.contains("Fresh boots in the order A/B/A&#39;"));
    assert_markup_is_ours("run page", &page);
}

#[test]
fn rendering_is_deterministic() {
    let results = fixture();
    let again = fixture();
    let results = judged(results);
    let one = Run::new(&results, Path::new("/out"));
    let again = judged(again);
    let two = Run::new(&again, Path::new("/out"));
    assert_eq!(
        html::render_run(&one).unwrap(),
        html::render_run(&two).unwrap()
    );
    let href = |i: usize| format!("run-{i}.html");
    assert_eq!(
        html::render_index(std::slice::from_ref(&one), href).unwrap(),
        html::render_index(std::slice::from_ref(&two), href).unwrap()
    );
    assert_eq!(
        html::render_trend("smoke", std::slice::from_ref(&one), href).unwrap(),
        html::render_trend("smoke", std::slice::from_ref(&two), href).unwrap()
    );
}

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = r#""><img src=x onerror=alert(1)>"#;

/// The fixture with attacker-controlled text in every field a page shows.
fn hostile() -> Results {
    let mut r = fixture();
    let both = format!("{SCRIPT}{IMG}");
    r.campaign = both.clone();
    r.host.accel_reason = both.clone();
    r.host.cpu_model = both.clone();
    r.tree.origin = both.clone();
    r.tree.base_choice = both.clone();
    r.series.source = both.clone();
    for p in &mut r.series.patches {
        p.subject = SCRIPT.into();
        p.author = IMG.into();
        p.origin = both.clone();
        p.message_id = Some(both.clone());
        p.applied = both.clone();
    }
    for v in &mut r.variants {
        v.kernel.compiler = both.clone();
    }
    for b in &mut r.boots {
        b.label = both.clone();
        b.console_log = PathBuf::from(format!("/out/{IMG}/console.log"));
        if let Some(f) = &mut b.facts {
            f.kernel_release = both.clone();
            f.thp = both.clone();
            f.zswap.insert(both.clone(), both.clone());
            f.swaps.push(both.clone());
        }
        let only_a = b.variant == "A";
        for s in &mut b.samples {
            let v = s.metrics.remove("elapsed_ns").unwrap();
            s.metrics.insert(both.clone(), v);
            // A metric only A's samples have: listed as not compared.
            if only_a {
                s.metrics.insert(format!("{SCRIPT}only-a"), v);
            }
        }
    }
    r
}

#[test]
fn hostile_text_never_becomes_markup() {
    let results = hostile();
    let results = judged(results);
    let run = Run::new(&results, Path::new("/out"));
    assert!(run.rows.iter().any(|r| r.metric.contains("<script>")));
    let runs = [run];
    let pages = [
        ("run", html::render_run(&runs[0]).unwrap()),
        (
            "index",
            html::render_index(&runs, |i| format!("runs/{i}/index.html")).unwrap(),
        ),
        (
            "trend",
            html::render_trend(&results.campaign, &runs, |i| format!("{i}.html")).unwrap(),
        ),
    ];
    for (what, page) in &pages {
        assert_markup_is_ours(what, page);
        assert!(
            page.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
            "{what}"
        );
        for svg in svgs(page) {
            assert_markup_is_ours(&format!("{what} svg"), svg);
            assert!(!svg.contains("<script") && !svg.contains("<img"));
        }
    }
    let run_page = &pages[0].1;
    assert_eq!(svgs(run_page).len(), 6, "the renamed metric keeps its plot");
    // The metric no B sample has is named, escaped, below the tables.
    assert!(run_page.contains(r#"id="uncompared""#));
    assert!(run_page.contains(
        "<br>&#60;script&#62;alert(1)&#60;/script&#62;only-a: not compared, B vs A: measured in"
    ));
    // The hostile metric name reaches the SVG's title, escaped once.
    assert!(run_page.contains("<title>&lt;script&gt;alert(1)&lt;/script&gt;"));
    // The hostile boot label reaches the plots' axes, escaped once.
    assert!(run_page.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
    // The log link is percent-encoded below the run directory.
    assert!(
        run_page
            .contains(r#"href="%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E/console.log""#)
    );
}

/// A watch history whose every text is hostile, over two nights of the
/// hostile document: no page of the site it makes holds markup of its
/// own, and the change point's hostile metric gets its marker.
#[test]
fn a_hostile_history_never_becomes_markup() {
    use patchbench::results::history::{
        ChangePoint, CommitHunt, CommitInfo, History, Night, NightRun,
    };
    let both = format!("{SCRIPT}{IMG}");
    let first = judged(hostile());
    let mut second = hostile();
    second.started_at = "2026-12-01T08:00:00Z".parse().unwrap();
    let second = judged(second);
    let commit = |n: char| CommitInfo {
        commit: format!("{n}{both}"),
        subject: both.clone(),
        author: both.clone(),
    };
    let mut history = History::new(&both, &both);
    for (i, n) in ['1', '2'].into_iter().enumerate() {
        history.nights.push(Night {
            index: i,
            started_at: "2026-12-01T02:00:00Z".parse().unwrap(),
            head: commit(n),
            previous: None,
            commits: vec![commit(n)],
            runs: vec![NightRun {
                campaign: first.campaign.clone(),
                campaign_file: both.clone().into(),
                dir: both.clone().into(),
                chosen: both.clone(),
                headline: both.clone(),
                outcome: both.clone(),
            }],
        });
    }
    history.change_points.push(ChangePoint {
        campaign: first.campaign.clone(),
        metric: both.clone(),
        unit: both.clone(),
        night: 1,
        before: commit('1').commit,
        after: commit('2').commit,
        commits: vec![commit('3'), commit('4')],
        before_mean: 1.0,
        after_mean: 2.0,
        change_pct: 100.0,
        ci_low_pct: 50.0,
        ci_high_pct: 150.0,
        p: 0.01,
        verdict: both.clone(),
        hunt: Some(CommitHunt {
            dir: both.clone().into(),
            pairs: 1,
            found: Some(commit('3')),
            change_pct: Some(1.0),
            ci_low_pct: None,
            ci_high_pct: None,
            state: both.clone(),
        }),
        report: Some(both.clone().into()),
    });
    let runs = [
        Run::new(&first, Path::new("/out")).of_night(0),
        Run::new(&second, Path::new("/out")).of_night(1),
    ];
    let site = tempfile::tempdir().unwrap();
    let report = html::write_history_site(site.path(), &runs, &history, Path::new("/h")).unwrap();
    assert_eq!(report.missing_reports, vec![Path::new("/h").join(&both)]);
    let pages: Vec<&PathBuf> = report
        .written
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    assert_eq!(
        pages.len(),
        5,
        "two runs, a trend page, a change point, the index"
    );
    let mut marked = 0;
    for page in pages {
        let html = std::fs::read_to_string(page).unwrap();
        let what = page.display().to_string();
        assert_markup_is_ours(&what, &html);
        for svg in svgs(&html) {
            assert_markup_is_ours(&format!("{what} svg"), svg);
        }
        marked += html.matches("<line class=\"change-point\"").count();
    }
    assert_eq!(marked, 2, "the hostile metric's two plots have its marker");
}

#[test]
fn the_index_lists_runs_newest_first_with_their_verdicts() {
    let older = fixture();
    let mut newer = fixture();
    newer.started_at = "2026-12-01T08:00:00Z".parse().unwrap();
    newer.campaign = "nightly".into();
    let older = judged(older);
    let newer = judged(newer);
    let runs = [
        Run::new(&older, Path::new("/out")),
        Run::new(&newer, Path::new("/out")),
    ];
    let page = html::render_index(&runs, |i| format!("runs/{i}/index.html")).unwrap();
    let first = page.find(r#"href="runs/1/index.html""#).unwrap();
    let second = page.find(r#"href="runs/0/index.html""#).unwrap();
    assert!(first < second, "newest first");
    assert_eq!(page.matches(r#"<tr class="run">"#).count(), 2);
    assert_eq!(page.matches("4 inconclusive").count(), 2);
    assert_eq!(page.matches("2 no clear difference").count(), 2);
    assert!(page.contains(r#"<a href="trends/nightly.html">nightly</a>"#));
    assert!(page.contains(r#"<a href="trends/smoke.html">smoke</a>"#));
    // Plain MTTCG says only TCG; every other lane is named beside it.
    assert_eq!(
        page.matches(r#"<span class="accel tcg">TCG</span>"#)
            .count(),
        2
    );
    assert_markup_is_ours("index", &page);
    let mut icount = fixture();
    icount.host.lane = patchbench::model::Lane::Icount;
    let cost = cost_lane();
    let icount = judged(icount);
    let cost = judged(cost);
    let runs = [
        Run::new(&icount, Path::new("/out")),
        Run::new(&cost, Path::new("/out")),
    ];
    let page = html::render_index(&runs, |i| format!("runs/{i}/index.html")).unwrap();
    assert!(
        page.contains(r#"<span class="accel tcg">TCG · icount</span>"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<span class="accel tcg">TCG · cost model</span>"#),
        "{page}"
    );
}

#[test]
fn the_trend_page_has_a_plot_per_metric_over_the_campaigns_runs() {
    let first = fixture();
    let mut second = fixture();
    second.started_at = "2026-12-01T08:00:00Z".parse().unwrap();
    let mut other = fixture();
    other.campaign = "other".into();
    let second = judged(second);
    let first = judged(first);
    let other = judged(other);
    let runs = [
        Run::new(&second, Path::new("/out")),
        Run::new(&first, Path::new("/out")),
        Run::new(&other, Path::new("/out")),
    ];
    let page = html::render_trend("smoke", &runs, |i| format!("r{i}.html")).unwrap();
    // Each metric's level and its change.
    assert_eq!(svgs(&page).len(), 2 * METRICS.len());
    for svg in svgs(&page) {
        assert_eq!(svg.matches("<circle").count(), 2, "one point per smoke run");
    }
    // Oldest first in the run list.
    assert!(page.find(r#"href="r1.html""#).unwrap() < page.find(r#"href="r0.html""#).unwrap());
    assert!(!page.contains("r2.html"));
    assert_markup_is_ours("trend", &page);
}

/// The number in attribute `name` of the SVG element whose tag (what
/// follows its `<`) is `tag`.
fn svg_attr(tag: &str, name: &str) -> f64 {
    let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    tag[at..].split('"').next().unwrap().parse().unwrap()
}

/// The `<svg>` in `page` whose title is `title`, and the centre of each
/// of its circles, in its order.
fn plot_points<'p>(page: &'p str, title: &str) -> (&'p str, Vec<(f64, f64)>) {
    let svg = svgs(page)
        .into_iter()
        .find(|svg| svg.contains(&format!("<title>{title}</title>")))
        .unwrap_or_else(|| panic!("no plot {title:?}"));
    let points = svg
        .split('<')
        .filter(|t| t.starts_with("circle"))
        .map(|t| (svg_attr(t, "cx"), svg_attr(t, "cy")))
        .collect();
    (svg, points)
}

/// The synthetic watch history (`results/watch-synthetic`): night 6 adds a
/// stats flush to every page zswap stores, and `pageout_cpu_ns` steps up
/// 22% and stays there. On its trend page the nights' level shows that as
/// a step, where B vs A shows one spike at night 6 and the nights after it
/// back at the nights before it.
#[test]
fn a_watch_history_trend_shows_its_step_as_a_step_in_the_nights_level() {
    use patchbench::results::history::History;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/watch-synthetic");
    let history = History::load(&dir).unwrap().expect("a kept history");
    let docs: Vec<(usize, PathBuf, Results)> = history
        .nights
        .iter()
        .flat_map(|n| n.runs.iter().map(|r| (n.index, dir.join(&r.dir))))
        .map(|(night, run_dir)| {
            let results = Results::load(&run_dir.join("results.json")).unwrap();
            (night, run_dir, results)
        })
        .collect();
    let runs: Vec<Run> = docs
        .iter()
        .map(|(night, run_dir, r)| Run::new(r, run_dir).of_night(*night))
        .collect();
    let site = tempfile::tempdir().unwrap();
    html::write_history_site(site.path(), &runs, &history, &dir).unwrap();
    let page = std::fs::read_to_string(site.path().join("trends/smoke.html")).unwrap();
    assert_markup_is_ours("trend", &page);

    let (level_svg, level) = plot_points(&page, "pageout_cpu_ns: B&apos;s level across runs");
    let (change_svg, change) = plot_points(&page, "pageout_cpu_ns: B vs A across runs");
    assert_eq!((level.len(), change.len()), (14, 14), "one point a night");
    let y = |points: &[(f64, f64)], nights: std::ops::Range<usize>| -> Vec<f64> {
        points[nights].iter().map(|(_, y)| *y).collect()
    };
    let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
    // The level: every night from 6 on above every night before (up is a
    // smaller y), by most of the plot's height.
    let (before, after) = (y(&level, 0..6), y(&level, 6..14));
    assert!(max(&after) + 100.0 < min(&before), "{before:?} {after:?}");
    // B vs A: night 6 alone stands out; the nights after it are back with
    // the nights before.
    let spike = change[6].1;
    let rest: Vec<f64> = [y(&change, 0..6), y(&change, 7..14)].concat();
    assert!(spike + 100.0 < min(&rest), "{spike} {rest:?}");
    assert!(max(&rest) - min(&rest) < 10.0, "{rest:?}");
    // The change point's marker on both, between nights 5 and 6.
    for (svg, points) in [(level_svg, &level), (change_svg, &change)] {
        let line = svg
            .split('<')
            .find(|t| t.starts_with("line class=\"change-point\""))
            .expect("the change point's marker");
        let x = svg_attr(line, "x1");
        assert!(points[5].0 < x && x < points[6].0, "{x} {points:?}");
    }
}

#[test]
fn the_site_links_resolve_and_logs_are_copied() {
    let source = tempfile::tempdir().unwrap();
    let mut results = fixture();
    for b in &mut results.boots {
        let rel = b.console_log.strip_prefix("/out").unwrap().to_owned();
        b.console_log = source.path().join(rel);
    }
    let present = &results.boots[0].console_log;
    std::fs::create_dir_all(present.parent().unwrap()).unwrap();
    std::fs::write(present, "Linux version 6.12.117+\n").unwrap();
    let results = judged(results);
    let runs = [Run::new(&results, source.path())];

    let site = tempfile::tempdir().unwrap();
    let report = html::write_site(site.path(), &runs).unwrap();
    assert_eq!(
        report.missing_logs,
        vec![
            results.boots[1].console_log.clone(),
            results.boots[2].console_log.clone(),
        ]
    );
    let run_dir = site.path().join("runs/20261130T003531Z-smoke");
    for f in ["index.html", "results.json", "boots/0-A/console.log"] {
        assert!(run_dir.join(f).is_file(), "{f}");
    }
    assert!(site.path().join("trends/smoke.html").is_file());

    // Every relative link on every page lands on a file, or on a log the
    // report names as missing.
    for page in &report.written {
        if page.extension().is_none_or(|e| e != "html") {
            continue;
        }
        let html = std::fs::read_to_string(page).unwrap();
        for (i, _) in html.match_indices("href=\"") {
            let href = &html[i + 6..][..html[i + 6..].find('"').unwrap()];
            if href.starts_with('#') {
                continue;
            }
            let target = page.parent().unwrap().join(href);
            let missing_log = href.ends_with("console.log") && !href.contains("0-A");
            assert!(
                target.is_file() || missing_log,
                "{} links to missing {href}",
                page.display()
            );
        }
    }
    // Writing again gives the same bytes.
    let before = std::fs::read(site.path().join("index.html")).unwrap();
    html::write_site(site.path(), &runs).unwrap();
    assert_eq!(
        std::fs::read(site.path().join("index.html")).unwrap(),
        before
    );
}

/// The smoke run with a control: its samples are the main ones, tagged.
fn with_control(name: &str) -> Results {
    let mut results = fixture();
    results.controls.push(patchbench::results::ControlRecord {
        name: name.into(),
        set: [("zswap_max".to_string(), "max".to_string())].into(),
        workload: results.workload.clone(),
    });
    for boot in &mut results.boots {
        let tagged: Vec<_> = boot
            .samples
            .iter()
            .map(|s| patchbench::results::SampleRecord {
                condition: Some(name.into()),
                ..s.clone()
            })
            .collect();
        boot.samples.extend(tagged);
    }
    results
}

#[test]
fn the_run_page_has_a_table_and_plots_per_control() {
    let results = with_control("unlimited");
    let results = judged(results);
    let run = Run::new(&results, Path::new("/out"));
    let page = html::render_run(&run).unwrap();
    assert!(page.contains(r#"<table id="comparison-table" class="comparison">"#));
    assert!(page.contains(r#"<table id="control-1" class="comparison">"#));
    assert!(
        page.contains(r#"<h3 class="control">Control `unlimited` (zswap_max: max)</h3>"#),
        "{page}"
    );
    assert_eq!(
        page.matches(r#"<tr class="metric-row">"#).count(),
        2 * METRICS.len()
    );
    assert_eq!(svgs(&page).len(), 2 * METRICS.len());
    // Each row links to its own condition's plot.
    let (_, control_table) = page.split_once(r#"id="control-1""#).unwrap();
    assert!(control_table.contains(&format!(r##"href="#m-{}""##, METRICS.len())));
    assert!(page.contains("pageout_cpu_ns (control unlimited)"));
}

/// `text` as askama escapes it in a page.
fn escaped(text: &str) -> String {
    text.replace('&', "&#38;")
        .replace('<', "&#60;")
        .replace('>', "&#62;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

#[test]
fn each_comparison_table_puts_primary_rows_first_and_states_a_context_reason_once() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/seeds/000-counter-8workers/results.json");
    let results = Results::load(&path).unwrap();
    let rows = &results.judgement.as_ref().expect("a stored judgement").rows;
    let page = html::render_run(&Run::new(&results, path.parent().unwrap())).unwrap();
    for (id, condition) in [("comparison-table", None), ("control-1", Some("unlimited"))] {
        let start = page.find(&format!(r#"<table id="{id}""#)).unwrap();
        let table = &page[start..start + page[start..].find("</table>").unwrap()];
        // Its groups, in order: primary, other, then context by reason.
        let roles: Vec<&str> = table
            .split(r#"<tbody class=""#)
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap())
            .collect();
        let mut sorted = roles.clone();
        sorted.sort_by_key(|r| ["primary", "other", "context"].iter().position(|k| k == r));
        assert_eq!(roles, sorted, "{id}");
        assert!(
            roles.starts_with(&["primary", "other", "context"]),
            "{id}: {roles:?}"
        );
        // Every stored row of the condition, with its verdict beside its
        // name, in the group of its role.
        let of: Vec<_> = rows
            .iter()
            .filter(|r| r.condition.as_deref() == condition)
            .collect();
        let shown: Vec<&str> = table.split(r#"<tr class="metric-row">"#).skip(1).collect();
        assert_eq!(shown.len(), of.len(), "{id}");
        for row in shown {
            let (name_cell, _) = row.split_once("</td>").unwrap();
            assert!(
                name_cell.contains(r#"<span class="badge v-"#),
                "{id}: {row}"
            );
        }
        for r in &of {
            // The groups of a role, one after the other.
            let group = |role: &str| -> String {
                table
                    .split(&format!(r#"<tbody class="{role}">"#))
                    .skip(1)
                    .map(|g| g.split("</tbody>").next().unwrap())
                    .collect()
            };
            let role = match (r.measured(), r.primary) {
                (false, _) => "context",
                (true, true) => "primary",
                (true, false) => "other",
            };
            assert!(
                group(role).contains(&format!("<code>{}</code>", r.metric)),
                "{id}: {} is not in the {role} group",
                r.metric
            );
        }
        // Each context reason once in the table, in its group's heading.
        let reasons: std::collections::BTreeSet<&str> = of
            .iter()
            .filter(|r| !r.measured())
            .map(|r| patchbench::report::context_why(r))
            .collect();
        assert_eq!(reasons.len(), 2, "{id}: icount times and tick counts");
        for why in reasons {
            let heading = format!(
                r#"<th colspan="9" scope="rowgroup">Context, no verdict: {}.</th>"#,
                escaped(why)
            );
            assert_eq!(table.matches(&escaped(why)).count(), 1, "{id}: {why}");
            assert_eq!(table.matches(&heading).count(), 1, "{id}: {heading}");
        }
    }
}

#[test]
fn a_control_name_from_a_hostile_document_stays_text() {
    let results = with_control("<b>x</b>");
    let results = judged(results);
    let run = Run::new(&results, Path::new("/out"));
    let page = html::render_run(&run).unwrap();
    assert!(!page.contains("<b>x</b>"));
    assert!(tags(&page).iter().all(|t| !t.starts_with("b>")));
}

/// The stored smoke run as if measured in the cost lane: B no longer runs
/// `do_flush_stats` in pageout, and one symbol's name is hostile.
fn cost_lane() -> Results {
    let mut r = fixture();
    r.host.cost_model = Some("skylake-client".into());
    r.host.lane = patchbench::model::Lane::Cost;
    r.host.accel_reason = "cost model: TCG forced (single-threaded, -icount shift=0,sleep=off, so that the modeled counts repeat); KVM is not usable here anyway".into();
    for b in &mut r.boots {
        let is_b = b.variant == "B";
        for s in &mut b.samples {
            let mut pageout = std::collections::BTreeMap::new();
            if !is_b {
                pageout.insert("do_flush_stats".to_string(), 300_000_000);
            }
            pageout.insert(SCRIPT.to_string(), if is_b { 2_000_000 } else { 1_000_000 });
            pageout.insert("user".to_string(), 10_000);
            let total: u64 = pageout.values().sum();
            s.metrics.insert("pageout_modeled_cycles".into(), total);
            s.profile = [("pageout".to_string(), pageout)].into();
        }
    }
    r
}

#[test]
fn a_cost_lane_page_has_its_banner_and_a_symbol_chart_with_escaped_names() {
    let results = cost_lane();
    let results = judged(results);
    let run = Run::new(&results, Path::new("/out"));
    let page = html::render_run(&run).unwrap();
    assert_markup_is_ours("cost-lane run", &page);
    assert!(page.contains(r#"id="cost-lane""#), "the lane's banner");
    assert!(page.contains("skylake-client") && page.contains("TCG forced"));
    assert!(!page.contains(r#"id="tcg-warning""#), "one banner, not two");
    assert!(page.contains(r#"<figure id="profile-0">"#));
    assert!(
        page.contains("Top symbols by \u{394} modeled cycles per sample, B vs A: pageout"),
        "the table's title"
    );
    assert!(page.contains("<code>do_flush_stats</code>"));
    // The modeled cycles get their own plot, in millions.
    assert!(page.contains("pageout_modeled_cycles"));
    assert!(page.contains("Mcycles"));
    let chart = svgs(&page)
        .into_iter()
        .find(|s| s.contains("modeled cycles per sample, B vs A: pageout"))
        .expect("the symbol chart");
    assert_markup_is_ours("symbol chart", chart);
    assert!(chart.contains("\ndo_flush_stats\n"), "{chart}");
    assert!(chart.contains("&lt;script&gt;"), "{chart}");
    // Outside the cost lane there is neither.
    let plain = fixture();
    let plain = judged(plain);
    let page = html::render_run(&Run::new(&plain, Path::new("/out"))).unwrap();
    assert!(!page.contains("cost-lane") && !page.contains("profile-0"));
}
