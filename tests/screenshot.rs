//! The run page in a real browser's layout, at desktop and at phone width.
//!
//! A judged results document's run page, rendered by `html::write_site`, is
//! laid out by headless Chromium at 1280 px and at 500 px (the narrowest
//! window headless Chromium makes). At each width the test asserts, from the
//! browser's own layout, that the page does not scroll sideways, that every
//! headline shows inside the viewport, that every verdict badge of the
//! comparison tables has a size, lies inside the viewport horizontally and
//! is what the browser finds at its own centre (nothing clips or covers it),
//! that every plot fits the width, that no table scrolls sideways inside
//! itself, and that in each comparison table every primary row lies above
//! the other verdicts' rows, and those above every context row. It keeps a
//! full-page PNG per width, decodes it, and checks that every badge is
//! drawn in its verdict's colour at a point of its own background.
//!
//! Four documents: the smoke fixture (`tests/fixtures/smoke-results.json`),
//! the stored icount smoke run (`results/smoke/results.json`), and two kept
//! runs whose tables have primary and context rows: seed 000's eight-worker
//! run (counting lane, with a control) and seed 003's cost-lane run; each
//! kept judgement as stored. `ci/setup-host.sh` installs Chromium; without
//! it these tests fail rather than skip.
//!
//! A watch history's trend page too: five kept real A/A runs
//! (`results/seeds/000-counter-aa-*/results.json`) as five nights of a
//! history, with a change point of `pageout_cpu_ns` between the third and
//! fourth night, published by the real binary (`publish --history`). At
//! each width the test asserts that the page does not scroll sideways,
//! that the change-point table lies inside the viewport without scrolling
//! inside itself, that every plot fits the width, that each metric has a
//! plot of the nights' own level beside its B-vs-A plot, shown, and that
//! the change point's dashed line is drawn on both of its metric's plots:
//! pixels of its colour (templates/base.html) in the decoded PNG, along
//! the line, inside its plot's box. Every plotted
//! point is a kept run's stored judgement; only the history around them
//! is made up (the nights' heads and the change point's record: its
//! commits and figures), since no watch has run yet.
//!
//! The index of every kept run too (`results/smoke`, `results/seeds/*`),
//! published by the real binary as `ci/site.sh` does: at each width, no
//! sideways scroll, the document's or any table's own, every run's row and
//! verdict badge inside the viewport, and each run named by what it
//! compares (the A/A runs "A/A", the shrinker "knob: shrinker N → Y").
//!
//! To look at the pictures: `PATCHBENCH_SCREENSHOT_DIR=/tmp/shots cargo test
//! --test screenshot` keeps `<document>-1280.png` and `<document>-500.png`
//! there (`seed-trend-*.png` for the history's trend page, `index-*.png`
//! for the index); `--
//! --nocapture` prints what was measured.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use patchbench::html::{self, Run};
use patchbench::results::Results;

/// Desktop, and the narrowest width headless Chromium lays out.
const WIDTHS: [u32; 2] = [1280, 500];
/// The viewport's height while measuring (screenshots take the whole page).
const HEIGHT: u32 = 900;
/// The whole browser session: start, two loads, measuring, two screenshots.
/// A cold start on a loaded two-core host takes seconds; this is generous.
const SESSION: Duration = Duration::from_secs(180);

#[test]
fn the_fixture_run_page_shows_every_verdict_without_sideways_scrolling_at_1280_and_500_px() {
    check_run_page(
        "smoke-fixture",
        &repo().join("tests/fixtures/smoke-results.json"),
    );
}

#[test]
fn the_stored_icount_run_page_shows_every_verdict_without_sideways_scrolling_at_1280_and_500_px() {
    let path = repo().join("results/smoke/results.json");
    let results = Results::load(&path).unwrap();
    assert!(
        results.host.lane.icount() && results.judgement.is_some(),
        "{} is no longer an icount run with a stored judgement; update this test",
        path.display()
    );
    check_run_page("smoke-icount", &path);
}

#[test]
fn the_eight_worker_run_page_shows_every_verdict_primary_rows_first_at_1280_and_500_px() {
    check_kept_run_page("seed-000-8workers", "results/seeds/000-counter-8workers");
}

#[test]
fn the_cost_lane_run_page_shows_every_verdict_primary_rows_first_at_1280_and_500_px() {
    check_kept_run_page("seed-003-cost", "results/seeds/003-reclaim-refault-cost");
}

/// [`check_run_page`] of a kept run whose tables have both primary and
/// context rows, so that the order between them is checked.
fn check_kept_run_page(name: &str, dir: &str) {
    let layouts = check_run_page(name, &repo().join(dir).join("results.json"));
    assert!(
        layouts.iter().all(Layout::has_primary_and_context_rows),
        "{name}: {dir} no longer has primary and context rows in one table; choose another run"
    );
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Renders the run page of the document at `path` and checks its layout at
/// every width in [`WIDTHS`]; `name` names its screenshots. The layouts
/// measured, one per width.
fn check_run_page(name: &str, path: &Path) -> Vec<Layout> {
    let mut results = Results::load(path).unwrap();
    if results.judgement.is_none() {
        patchbench::judge::judge_into(&mut results);
    }
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    html::write_site(&site, &[Run::new(&results, path.parent().unwrap())]).unwrap();
    let page = std::fs::read_dir(site.join("runs"))
        .unwrap()
        .next()
        .expect("one run page")
        .unwrap()
        .path()
        .join("index.html");
    let html_text = std::fs::read_to_string(&page).unwrap();
    // What the browser must find: every rendered row, each with its badge.
    let rows_in_html = html_text.matches("<tr class=\"metric-row\">").count();
    assert!(
        rows_in_html > 0,
        "{name}: no metric row in {}",
        page.display()
    );
    assert!(
        html_text.contains("<p class=\"headline\">"),
        "{name}: no headline"
    );
    let url = file_url(&page);

    let shots = shots_dir(tmp.path());

    let mut browser = Browser::launch(tmp.path());
    let tab = browser.open_tab();
    let mut layouts = Vec::new();
    for width in WIDTHS {
        browser.set_viewport(&tab, width, HEIGHT);
        browser.load(&tab, &url);
        let layout: Layout = browser.evaluate(&tab, MEASURE);
        layout.print(name);
        let at = format!("{name} at {width} px");
        assert_eq!(layout.url, url, "{at}: the page did not load");
        assert_eq!(layout.ready_state, "complete", "{at}");
        assert_eq!(layout.inner_width, f64::from(width), "{at}: the viewport");
        layout.assert_shows_everything(&at, rows_in_html);

        let (png, page_height) = browser.screenshot(&tab, width);
        let file = shots.join(format!("{name}-{width}.png"));
        std::fs::write(&file, &png).unwrap();
        let image = decode_png(&png)
            .unwrap_or_else(|e| panic!("{at}: {} does not decode: {e}", file.display()));
        let (png_width, png_height) = (image.width, image.height);
        layout.assert_badges_drawn(&at, &image);
        assert_eq!(png_width, width, "{at}: {}", file.display());
        assert!(
            (f64::from(png_height) - page_height).abs() < 1.0,
            "{at}: {} is {png_height} px tall, the page {page_height} px",
            file.display(),
        );
        println!("{at}: {} ({png_width} x {png_height})", file.display());
        layouts.push(layout);
    }
    layouts
}

/// The colour of a change point's line (templates/base.html's
/// `--change-point`), written out here so that a marker drawn in another
/// colour fails.
const CHANGE_POINT: [u8; 3] = [0x82, 0x50, 0xdf];

#[test]
fn a_history_trend_page_marks_its_change_point_and_fits_at_1280_and_500_px() {
    use patchbench::results::history::{ChangePoint, CommitInfo, History, Night, NightRun};
    let tmp = tempfile::tempdir().unwrap();
    let history_dir = tmp.path().join("history");
    // Made-up heads: no watch has run yet.
    let head = |i: usize| CommitInfo {
        commit: format!("{:02x}", 0xa1 + i).repeat(20),
        subject: format!("Merge branch 'mm-unstable' night {i}"),
        author: "A U Thor <author@example.org>".into(),
    };
    let mut history = History::new("/src/linux", "mm-unstable");
    for i in 0..5 {
        let source = repo().join(format!(
            "results/seeds/000-counter-aa-{}/results.json",
            i + 1
        ));
        let results = Results::load(&source).unwrap();
        assert!(
            results.judgement.is_some(),
            "{} has no stored judgement; update this test",
            source.display()
        );
        let dir = format!(
            "nights/{i:03}-{}/{}",
            &head(i).commit[..12],
            results.campaign
        );
        std::fs::create_dir_all(history_dir.join(&dir)).unwrap();
        std::fs::copy(&source, history_dir.join(&dir).join("results.json")).unwrap();
        history.nights.push(Night {
            index: i,
            started_at: results.started_at,
            head: head(i),
            previous: i.checked_sub(1).map(|p| head(p).commit),
            commits: if i == 0 { Vec::new() } else { vec![head(i)] },
            runs: vec![NightRun {
                campaign: results.campaign.clone(),
                campaign_file: "ci/seeds/000-counter.yaml".into(),
                dir: dir.into(),
                chosen: "named on the command line".into(),
                headline: String::new(),
                outcome: "ok".into(),
            }],
        });
    }
    // The constructed record: its figures are no measurement.
    history.change_points.push(ChangePoint {
        campaign: history.nights[0].runs[0].campaign.clone(),
        metric: "pageout_cpu_ns".into(),
        unit: "ns".into(),
        night: 3,
        before: head(2).commit,
        after: head(3).commit,
        commits: vec![
            CommitInfo {
                commit: "c".repeat(40),
                subject: "mm: zswap: a <b>long</b> subject that has to wrap on a phone's narrow screen somewhere".into(),
                author: "B Author <b@example.org>".into(),
            },
            head(3),
        ],
        before_mean: 1.0e6,
        after_mean: 1.1e6,
        change_pct: 10.0,
        ci_low_pct: 6.0,
        ci_high_pct: 14.0,
        p: 0.001,
        verdict: "regression".into(),
        hunt: None,
        report: None,
    });
    std::fs::write(
        history_dir.join("history.json"),
        serde_json::to_string_pretty(&history).unwrap(),
    )
    .unwrap();

    let site = publish(tmp.path(), &["--history".as_ref(), history_dir.as_os_str()]);
    let page = site.join(format!("trends/{}.html", history.change_points[0].campaign));
    let html_text = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html_text.matches("<line class=\"change-point\"").count(),
        2,
        "one marker on each of its metric's two plots in {}",
        page.display()
    );
    let url = file_url(&page);
    let shots = shots_dir(tmp.path());

    let mut browser = Browser::launch(tmp.path());
    let tab = browser.open_tab();
    for width in WIDTHS {
        browser.set_viewport(&tab, width, HEIGHT);
        browser.load(&tab, &url);
        let layout: TrendLayout = browser.evaluate(&tab, MEASURE_TREND);
        let at = format!("the history's trend page at {width} px");
        println!(
            "{at}: scrollWidth {}, {} plots, table {:?}, markers {:?}",
            layout.scroll_width,
            layout.plots.len(),
            layout
                .table
                .iter()
                .map(|t| (t.left, t.right, t.content_width, t.box_width))
                .collect::<Vec<_>>(),
            layout.markers
        );
        assert_eq!(layout.url, url, "{at}: the page did not load");
        assert_eq!(layout.ready_state, "complete", "{at}");
        assert_eq!(layout.inner_width, f64::from(width), "{at}: the viewport");
        layout.assert_fits(&at);

        let (png, _) = browser.screenshot(&tab, width);
        let file = shots.join(format!("seed-trend-{width}.png"));
        std::fs::write(&file, &png).unwrap();
        let image = decode_png(&png)
            .unwrap_or_else(|e| panic!("{at}: {} does not decode: {e}", file.display()));
        assert_eq!(image.width, width, "{at}: {}", file.display());
        layout.assert_markers_drawn(&at, &image);
        println!("{at}: {}", file.display());
    }
}

/// `file://` and `path`, its bytes outside the unreserved set
/// percent-encoded, as the browser will report it back in `location.href`.
/// `patchbench publish INPUTS... --pages TMP/site` by the real binary;
/// the site's directory.
fn publish(tmp: &Path, inputs: &[&std::ffi::OsStr]) -> PathBuf {
    let site = tmp.join("site");
    let out = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("publish")
        .args(inputs)
        .arg("--pages")
        .arg(&site)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "publish {inputs:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    site
}

fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut url = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

// ---------------------------------------------------------------------------
// What the page measures in the browser.

/// A script evaluated in the page after it loaded: `$body` after the
/// helpers every measurement shares. `shown(el)` measures an element after
/// scrolling the document (only the document, and only vertically) so that
/// the element's centre is mid-viewport: a sideways-scrolling box is never
/// scrolled to bring an element into view, so an element it hides stays
/// hidden to these checks, as to a reader. `all(selector)` measures every
/// element the selector finds.
macro_rules! measuring {
    ($body:literal) => {
        concat!(
            r#"(() => {
  const W = window.innerWidth, H = window.innerHeight;
  const root = document.documentElement;
  // No clipping box: far outside any page.
  const FAR = 1e9;
  const describe = (e) => e
    ? e.tagName.toLowerCase() + [...e.classList].map((c) => '.' + c).join('')
    : 'nothing';
  const shown = (el) => {
    const first = el.getBoundingClientRect();
    window.scrollTo(0, window.scrollY + first.top + first.height / 2 - H / 2);
    const r = el.getBoundingClientRect();
    // What the element's ancestors' overflow leaves showing (their padding
    // boxes). The root's and body's overflow apply to the viewport, which
    // is checked on its own.
    const clip = { left: -FAR, right: FAR, top: -FAR, bottom: FAR };
    for (let a = el.parentElement; a && a !== root && a !== document.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      const b = a.getBoundingClientRect();
      if (s.overflowX !== 'visible') {
        clip.left = Math.max(clip.left, b.left + a.clientLeft);
        clip.right = Math.min(clip.right, b.left + a.clientLeft + a.clientWidth);
      }
      if (s.overflowY !== 'visible') {
        clip.top = Math.max(clip.top, b.top + a.clientTop);
        clip.bottom = Math.min(clip.bottom, b.top + a.clientTop + a.clientHeight);
      }
    }
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return {
      text: el.textContent.trim().replace(/\s+/g, ' ').slice(0, 60),
      left: r.left, right: r.right, top: r.top, bottom: r.bottom,
      width: r.width, height: r.height,
      clipLeft: clip.left, clipRight: clip.right, clipTop: clip.top, clipBottom: clip.bottom,
      visibility: getComputedStyle(el).visibility,
      contentWidth: el.scrollWidth, boxWidth: el.clientWidth,
      hit: describe(hit),
      hitItself: hit !== null && (hit === el || el.contains(hit)),
      scrollX: window.scrollX,
      // A point of its own background in page coordinates (the full-page
      // screenshot's): 5 px in from its left edge at mid-height, inside a
      // badge's 1 px border and 8 px padding, clear of its text.
      pageX: r.left + window.scrollX + 5,
      pageY: r.top + window.scrollY + r.height / 2,
      background: getComputedStyle(el).backgroundColor,
      classes: el.getAttribute('class') || '',
    };
  };
  const all = (selector) => [...document.querySelectorAll(selector)].map(shown);
"#,
            $body,
            "\n})()"
        )
    };
}

/// Returns a [`Layout`] of a run page.
const MEASURE: &str = measuring!(
    r#"
  const facts = {
    url: location.href,
    readyState: document.readyState,
    innerWidth: W,
    clientWidth: root.clientWidth,
    scrollWidth: root.scrollWidth,
    scrollHeight: root.scrollHeight,
    rows: document.querySelectorAll('table.comparison tr.metric-row').length,
    headlines: all('p.headline'),
    badges: all('.metric-row .badge'),
    plots: all('figure svg'),
  };
  window.scrollTo(0, 0);
  // Every table's own overflow, and each comparison row's role (its
  // group's class) and box, in page coordinates.
  facts.tables = [...document.querySelectorAll('table')].map((t, i) => ({
    what: t.id || (t.className ? 'table.' + t.className : 'table ' + i),
    contentWidth: t.scrollWidth, boxWidth: t.clientWidth,
    right: t.getBoundingClientRect().right,
  }));
  facts.roles = [...document.querySelectorAll('table.comparison')].map((t) =>
    [...t.querySelectorAll('tr.metric-row')].map((r) => {
      const b = r.getBoundingClientRect();
      return {
        role: r.closest('tbody').className,
        metric: r.cells[0].querySelector('code').textContent,
        top: b.top + window.scrollY, bottom: b.bottom + window.scrollY,
      };
    }));
  return facts;"#
);

/// The page's layout, as [`MEASURE`] returns it (CSS pixels, viewport
/// coordinates).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Layout {
    url: String,
    ready_state: String,
    inner_width: f64,
    client_width: f64,
    scroll_width: f64,
    scroll_height: f64,
    rows: usize,
    headlines: Vec<Shown>,
    badges: Vec<Shown>,
    plots: Vec<Shown>,
    tables: Vec<TableBox>,
    /// Each comparison table's rows, in document order.
    roles: Vec<Vec<RowBox>>,
}

/// A table's own width against its content's, and its right edge.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TableBox {
    what: String,
    content_width: f64,
    box_width: f64,
    right: f64,
}

/// A comparison row as laid out: its group's role and its box's top and
/// bottom in page coordinates.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowBox {
    role: String,
    metric: String,
    top: f64,
    bottom: f64,
}

/// One element, measured with its centre scrolled to mid-viewport.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Shown {
    text: String,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    width: f64,
    height: f64,
    clip_left: f64,
    clip_right: f64,
    clip_top: f64,
    clip_bottom: f64,
    visibility: String,
    /// Its content's width (`scrollWidth`) against its box's (`clientWidth`).
    content_width: f64,
    box_width: f64,
    /// What `elementFromPoint` found at its centre.
    hit: String,
    hit_itself: bool,
    scroll_x: f64,
    page_x: f64,
    page_y: f64,
    /// Its computed `background-color`, as `rgb(r, g, b)` or `rgba(..)`.
    background: String,
    classes: String,
}

/// Every group has elements, and each is fully shown in a viewport
/// `width` wide.
fn all_shown(at: &str, width: f64, groups: &[(&str, &Vec<Shown>)]) {
    for (what, shown) in groups {
        assert!(!shown.is_empty(), "{at}: no {what}");
        let hidden: Vec<String> = shown.iter().filter_map(|s| s.hidden(width)).collect();
        assert!(
            hidden.is_empty(),
            "{at}: {} of {} {what} not fully shown:\n  {}",
            hidden.len(),
            shown.len(),
            hidden.join("\n  ")
        );
    }
}

impl Shown {
    /// Why `self` is not fully shown inside a viewport `width` wide, if it
    /// is not.
    fn hidden(&self, width: f64) -> Option<String> {
        let why = if !(self.width > 0.0 && self.height > 0.0) {
            format!("has no size ({} x {})", self.width, self.height)
        } else if self.left < 0.0 || self.right > width {
            format!("spans x {}..{}, outside 0..{width}", self.left, self.right)
        } else if self.left < self.clip_left
            || self.right > self.clip_right
            || self.top < self.clip_top
            || self.bottom > self.clip_bottom
        {
            format!(
                "spans x {}..{} y {}..{}, but an ancestor's overflow shows only x {}..{} y {}..{}",
                self.left,
                self.right,
                self.top,
                self.bottom,
                self.clip_left,
                self.clip_right,
                self.clip_top,
                self.clip_bottom
            )
        } else if self.visibility != "visible" {
            format!("has visibility {}", self.visibility)
        } else if !self.hit_itself {
            format!("is covered: its centre hits {}", self.hit)
        } else if self.scroll_x != 0.0 {
            format!("needed the page scrolled sideways by {}", self.scroll_x)
        } else {
            return None;
        };
        Some(format!("{:?} {why}", self.text))
    }
}

impl Layout {
    fn print(&self, name: &str) {
        let rightmost = |v: &[Shown]| {
            v.iter()
                .map(|s| s.right)
                .fold(0.0_f64, f64::max)
                .to_string()
        };
        println!(
            "{name}: innerWidth {} clientWidth {} scrollWidth {} scrollHeight {}; \
             {} rows, {} badges (rightmost edge {}), {} headlines (rightmost {}), {} plots (rightmost {})",
            self.inner_width,
            self.client_width,
            self.scroll_width,
            self.scroll_height,
            self.rows,
            self.badges.len(),
            rightmost(&self.badges),
            self.headlines.len(),
            rightmost(&self.headlines),
            self.plots.len(),
            rightmost(&self.plots),
        );
    }

    /// In the screenshot, every verdict badge is drawn in the colour its
    /// verdict class gives it (templates/base.html), at a point of its own
    /// background, and the page has badges of at least two verdicts.
    fn assert_badges_drawn(&self, at: &str, image: &Image) {
        // templates/base.html's backgrounds, written out here so that a
        // badge drawn in another verdict's colour fails.
        const COLOURS: [(&str, [u8; 3]); 7] = [
            ("v-improvement", [0xda, 0xfb, 0xe1]),
            ("v-regression", [0xff, 0xeb, 0xe9]),
            ("v-nochange", [0xf6, 0xf8, 0xfa]),
            ("v-negligible", [0xf6, 0xf8, 0xfa]),
            ("v-inconclusive", [0xff, 0xf8, 0xc5]),
            ("v-context", [0xff, 0xff, 0xff]),
            ("v-changed", [0xdd, 0xf4, 0xff]),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for badge in &self.badges {
            let (class, want) = COLOURS
                .iter()
                .find(|(c, _)| badge.classes.split(' ').any(|k| k == *c))
                .unwrap_or_else(|| {
                    panic!(
                        "{at}: badge {:?} has no verdict class: {:?}",
                        badge.text, badge.classes
                    )
                });
            assert_eq!(
                badge.background,
                format!("rgb({}, {}, {})", want[0], want[1], want[2]),
                "{at}: badge {:?} ({class}): its computed background",
                badge.text
            );
            let (x, y) = (badge.page_x.floor() as u32, badge.page_y.floor() as u32);
            let got = image.rgb(x, y).unwrap_or_else(|| {
                panic!(
                    "{at}: badge {:?} at ({x}, {y}) is outside the screenshot",
                    badge.text
                )
            });
            assert!(
                got.iter().zip(want).all(|(g, w)| g.abs_diff(*w) <= 2),
                "{at}: badge {:?} ({class}) is drawn {got:?} at ({x}, {y}), not {want:?}",
                badge.text
            );
            seen.insert(*class);
        }
        assert!(
            seen.len() >= 2,
            "{at}: badges of one verdict only ({seen:?}): the colour check tells nothing"
        );
    }

    /// No sideways scrolling; every headline, verdict badge and plot shown.
    fn assert_shows_everything(&self, at: &str, rows_in_html: usize) {
        let width = self.inner_width;
        assert!(
            self.scroll_width <= width,
            "{at}: the page scrolls sideways: scrollWidth {} > innerWidth {width}",
            self.scroll_width
        );
        assert_eq!(
            (self.rows, self.badges.len()),
            (rows_in_html, rows_in_html),
            "{at}: (metric rows, verdict badges) the browser found, against the {rows_in_html} rows rendered"
        );
        all_shown(
            at,
            width,
            &[
                ("headlines", &self.headlines),
                ("verdict badges", &self.badges),
                ("plots", &self.plots),
            ],
        );
        for h in &self.headlines {
            assert!(
                h.content_width <= h.box_width,
                "{at}: headline {:?} is {} px of text in a {} px box",
                h.text,
                h.content_width,
                h.box_width
            );
        }
        for t in &self.tables {
            assert!(
                t.content_width <= t.box_width && t.right <= width,
                "{at}: {} is {} px of content in a {} px box ending at x {}: it scrolls sideways",
                t.what,
                t.content_width,
                t.box_width,
                t.right
            );
        }
        self.assert_primary_first(at);
    }

    /// In each comparison table, as laid out, every primary row lies above
    /// every other row, and every row with a verdict above every context
    /// row.
    fn assert_primary_first(&self, at: &str) {
        let rank = |role: &str| match role {
            "primary" => 0,
            "other" => 1,
            "context" => 2,
            other => panic!("{at}: a comparison row in a group of role {other:?}"),
        };
        for (t, rows) in self.roles.iter().enumerate() {
            for (a, b) in rows.iter().flat_map(|a| rows.iter().map(move |b| (a, b))) {
                if rank(&a.role) < rank(&b.role) {
                    assert!(
                        a.bottom <= b.top,
                        "{at}: in table {t}, {} ({}) ends at y {} below the top of {} ({}) at y {}",
                        a.metric,
                        a.role,
                        a.bottom,
                        b.metric,
                        b.role,
                        b.top
                    );
                }
            }
        }
    }

    /// Some table has primary rows and context rows: the order check
    /// above has something to check.
    fn has_primary_and_context_rows(&self) -> bool {
        self.roles.iter().any(|rows| {
            ["primary", "context"]
                .iter()
                .all(|role| rows.iter().any(|r| r.role == *role))
        })
    }
}

/// Returns a [`TrendLayout`] of a trend page.
const MEASURE_TREND: &str = measuring!(
    r#"
  // An element's box in page coordinates (the full-page screenshot's).
  const onPage = (el) => {
    const r = el.getBoundingClientRect();
    return {
      left: r.left + window.scrollX, right: r.right + window.scrollX,
      top: r.top + window.scrollY, bottom: r.bottom + window.scrollY,
    };
  };
  const facts = {
    url: location.href,
    readyState: document.readyState,
    innerWidth: W,
    scrollWidth: root.scrollWidth,
    plots: all('figure svg'),
    figures: document.querySelectorAll('figure').length,
    levels: [...document.querySelectorAll('figure svg')]
      .filter((svg) => svg.querySelector('title').textContent.endsWith(": B's level across runs"))
      .map(shown),
    table: all('table#change-points'),
    changeRows: all('table#change-points tr.change-row'),
  };
  window.scrollTo(0, 0);
  facts.markers = [...document.querySelectorAll('line.change-point')].map((line) => ({
    line: onPage(line),
    plot: onPage(line.ownerSVGElement),
    stroke: getComputedStyle(line).stroke,
  }));
  return facts;"#
);

/// A trend page's layout, as [`MEASURE_TREND`] returns it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TrendLayout {
    url: String,
    ready_state: String,
    inner_width: f64,
    scroll_width: f64,
    plots: Vec<Shown>,
    figures: usize,
    /// Each metric's plot of the nights' own level.
    levels: Vec<Shown>,
    table: Vec<Shown>,
    change_rows: Vec<Shown>,
    markers: Vec<Marker>,
}

/// A change point's line and the plot it is drawn in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Marker {
    line: PageBox,
    plot: PageBox,
    /// Its computed stroke, as `rgb(r, g, b)`.
    stroke: String,
}

/// A box in page coordinates, CSS px.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageBox {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl TrendLayout {
    /// No sideways scrolling; every plot, the change-point table and each
    /// of its rows shown inside the viewport, the table without a
    /// sideways scroll of its own.
    fn assert_fits(&self, at: &str) {
        let width = self.inner_width;
        assert!(
            self.scroll_width <= width,
            "{at}: the page scrolls sideways: scrollWidth {} > innerWidth {width}",
            self.scroll_width
        );
        assert_eq!(self.table.len(), 1, "{at}: one change-point table");
        assert_eq!(self.change_rows.len(), 1, "{at}: one change point");
        assert_eq!(
            (self.levels.len(), self.plots.len()),
            (self.figures, 2 * self.figures),
            "{at}: (level plots, plots) in {} figures: each metric's level and change",
            self.figures
        );
        all_shown(
            at,
            width,
            &[
                ("plots", &self.plots),
                ("level plots", &self.levels),
                ("change-point tables", &self.table),
                ("change-point rows", &self.change_rows),
            ],
        );
        let table = &self.table[0];
        assert!(
            table.content_width <= table.box_width,
            "{at}: the change-point table is {} px wide in a {} px box: it scrolls sideways",
            table.content_width,
            table.box_width
        );
    }

    /// Two markers, one on the metric's level and one on its change, each
    /// drawn.
    fn assert_markers_drawn(&self, at: &str, image: &Image) {
        assert_eq!(self.markers.len(), 2, "{at}: {:?}", self.markers);
        for m in &self.markers {
            Self::assert_marker_drawn(at, m, image);
        }
    }

    /// A marker stroked in the change point's colour, inside its plot's
    /// box, and drawn: along its line, in the screenshot, pixels of that
    /// colour over at least a third of its height (it is dashed).
    fn assert_marker_drawn(at: &str, m: &Marker, image: &Image) {
        let [r, g, b] = CHANGE_POINT;
        assert_eq!(m.stroke, format!("rgb({r}, {g}, {b})"), "{at}: its stroke");
        let (line, plot) = (&m.line, &m.plot);
        assert!(
            plot.left < line.left
                && line.right < plot.right
                && plot.top <= line.top
                && line.bottom <= plot.bottom
                && line.bottom - line.top > 50.0,
            "{at}: the marker {line:?} is not inside its plot {plot:?}"
        );
        // Each pixel row along the line that has a pixel of the colour
        // within 3 px of it.
        let x0 = (line.left - 3.0).floor().max(0.0) as u32;
        let x1 = (line.right + 3.0).ceil() as u32;
        let (y0, y1) = (line.top.ceil() as u32, line.bottom.floor() as u32);
        let close = |p: [u8; 3]| p.iter().zip(CHANGE_POINT).all(|(a, b)| a.abs_diff(b) <= 6);
        let rows = (y0..y1)
            .filter(|y| (x0..=x1).any(|x| image.rgb(x, *y).is_some_and(close)))
            .count();
        let height = (y1 - y0) as usize;
        assert!(
            rows * 3 >= height,
            "{at}: only {rows} of the marker's {height} px rows show its colour {CHANGE_POINT:?} in x {x0}..={x1}"
        );
        println!("{at}: the marker's colour on {rows} of {height} px rows at x {x0}..={x1}");
    }
}

#[test]
fn the_kept_runs_index_shows_every_runs_verdicts_and_what_it_compares_at_1280_and_500_px() {
    // The kept runs, published as ci/site.sh publishes them.
    let mut runs = vec![repo().join("results/smoke")];
    let mut seeds: Vec<PathBuf> = std::fs::read_dir(repo().join("results/seeds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("results.json").is_file())
        .collect();
    seeds.sort();
    runs.extend(seeds);
    let tmp = tempfile::tempdir().unwrap();
    let inputs: Vec<&std::ffi::OsStr> = runs.iter().map(|p| p.as_os_str()).collect();
    let site = publish(tmp.path(), &inputs);
    let page = site.join("index.html");
    let url = file_url(&page);
    let shots = shots_dir(tmp.path());

    let mut browser = Browser::launch(tmp.path());
    let tab = browser.open_tab();
    for width in WIDTHS {
        browser.set_viewport(&tab, width, HEIGHT);
        browser.load(&tab, &url);
        let layout: IndexLayout = browser.evaluate(&tab, MEASURE_INDEX);
        let at = format!("the kept runs' index at {width} px");
        println!(
            "{at}: scrollWidth {}, {} runs, {} badges (rightmost edge {}), tables (content, box) {:?}",
            layout.scroll_width,
            layout.runs.len(),
            layout.badges.len(),
            layout
                .badges
                .iter()
                .map(|b| b.right)
                .fold(0.0_f64, f64::max),
            layout
                .tables
                .iter()
                .map(|t| (t.content_width, t.box_width))
                .collect::<Vec<_>>()
        );
        assert_eq!(layout.url, url, "{at}: the page did not load");
        assert_eq!(layout.ready_state, "complete", "{at}");
        assert_eq!(layout.inner_width, f64::from(width), "{at}: the viewport");
        layout.assert_fits(&at, runs.len());

        let (png, _) = browser.screenshot(&tab, width);
        let file = shots.join(format!("index-{width}.png"));
        std::fs::write(&file, &png).unwrap();
        let image = decode_png(&png)
            .unwrap_or_else(|e| panic!("{at}: {} does not decode: {e}", file.display()));
        assert_eq!(image.width, width, "{at}: {}", file.display());
        println!("{at}: {}", file.display());
    }
}

/// Returns an [`IndexLayout`] of the index.
const MEASURE_INDEX: &str = measuring!(
    r#"
  const facts = {
    url: location.href,
    readyState: document.readyState,
    innerWidth: W,
    scrollWidth: root.scrollWidth,
    tables: all('table'),
    runs: all('table#runs tr.run'),
    compares: [...document.querySelectorAll('table#runs tr.run td.compares')]
      .map((td) => td.textContent.trim()),
    badges: all('table#runs tr.run .badge'),
  };
  window.scrollTo(0, 0);
  return facts;"#
);

/// The index's layout, as [`MEASURE_INDEX`] returns it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IndexLayout {
    url: String,
    ready_state: String,
    inner_width: f64,
    scroll_width: f64,
    tables: Vec<Shown>,
    runs: Vec<Shown>,
    /// Each run's "what it compares", in the page's order.
    compares: Vec<String>,
    badges: Vec<Shown>,
}

impl IndexLayout {
    /// No sideways scrolling, the document's or any table's own; every
    /// run's row and every verdict badge shown inside the viewport; each
    /// kind of run named by what it compares.
    fn assert_fits(&self, at: &str, runs: usize) {
        let width = self.inner_width;
        assert!(
            self.scroll_width <= width,
            "{at}: the page scrolls sideways: scrollWidth {} > innerWidth {width}",
            self.scroll_width
        );
        for t in &self.tables {
            assert!(
                t.content_width <= t.box_width,
                "{at}: table {:?} is {} px wide in a {} px box: it scrolls sideways",
                t.text,
                t.content_width,
                t.box_width
            );
        }
        assert_eq!(self.runs.len(), runs, "{at}: a row per kept run");
        assert!(
            self.badges.len() >= runs,
            "{at}: {} badges for {runs} runs",
            self.badges.len()
        );
        all_shown(
            at,
            width,
            &[
                ("tables", &self.tables),
                ("runs", &self.runs),
                ("verdict badges", &self.badges),
            ],
        );
        let count = |label: &str| self.compares.iter().filter(|c| *c == label).count();
        assert_eq!(
            count("A/A"),
            5,
            "{at}: the five A/A runs: {:?}",
            self.compares
        );
        assert_eq!(
            count("knob: shrinker N \u{2192} Y"),
            1,
            "{at}: 001's shrinker comparison: {:?}",
            self.compares
        );
        assert!(
            self.compares
                .iter()
                .any(|c| c.starts_with("diagnostic: A = patch, B = base: ")),
            "{at}: 004-anon-random-margin-first: {:?}",
            self.compares
        );
        assert!(
            !self.compares.iter().any(|c| c == "an empty series"),
            "{at}: {:?}",
            self.compares
        );
    }
}

// ---------------------------------------------------------------------------
// A small DevTools protocol client.
//
// `--remote-debugging-pipe` makes Chromium read DevTools protocol (CDP)
// commands on its fd 3 and write replies and events on its fd 4: no port,
// no websocket, nothing another process on the host can reach. Each
// message, either way, is one JSON object followed by a NUL byte.
//
// - A command is `{"id": N, "method": "Domain.name", "params": {..}}`, with
//   `"sessionId": S` when it is for a page rather than the browser.
// - Its reply carries the same `id` and either `"result": {..}` or
//   `"error": {"code", "message"}`.
// - An event has no `id`: `{"method", "params", "sessionId"?}`. Events come
//   interleaved with replies, so the client keeps those that arrive while it
//   waits for something else. Only enabled domains send events (here only
//   `Page`, a handful per load), so the queue stays short.
//
// A page is reached through the browser: `Target.createTarget` opens a tab
// and `Target.attachToTarget {flatten: true}` returns a session id; with
// `flatten`, the tab's commands travel on the same pipe, tagged with it.
//
// The client sends one command at a time and waits for its reply. A reader
// thread turns fd 4 into a channel, so every wait is a `recv_timeout`
// against one deadline for the whole session; Chromium exiting closes the
// pipe, which ends the channel, so a dead browser is noticed at once.
// Chromium runs in a process group of its own, which is killed when the
// [`Browser`] drops, on success and on every panic; a SIGKILLed test
// takes it along through `PR_SET_PDEATHSIG`.

/// A headless Chromium driven over the DevTools pipe.
struct Browser {
    child: Child,
    /// The write end of Chromium's fd 3.
    commands: File,
    /// Messages from Chromium's fd 4, or why one could not be read.
    messages: Receiver<Result<Value, String>>,
    /// Events that arrived while waiting for something else.
    events: VecDeque<Value>,
    next_id: u64,
    deadline: Instant,
    stderr: PathBuf,
    exited: Option<ExitStatus>,
}

/// A tab's session id.
struct Tab(String);

/// Chromium's arguments, each with why. `profile` is a fresh directory.
fn chromium_args(profile: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        // No display on CI hosts.
        "--headless",
        // The sandbox needs user namespaces that CI containers, running
        // as root, do not give.
        "--no-sandbox",
        // No GPU here; software rendering draws the same page.
        "--disable-gpu",
        // No welcome tab, default-browser prompt or first-run import.
        "--no-first-run",
        // A local page must not make the browser fetch anything: no safe
        // browsing lists, component or extension updates, or sync.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        // Scrollbars take no width, so the viewport is all page, and they
        // do not show in screenshots.
        "--hide-scrollbars",
        // The DevTools protocol on fds 3 and 4 (see above).
        "--remote-debugging-pipe",
    ]
    .map(OsString::from)
    .into();
    // Nothing from another run, and no profile lock shared with a test
    // running beside this one.
    let mut dir = OsString::from("--user-data-dir=");
    dir.push(profile);
    args.push(dir);
    args
}

fn chromium() -> PathBuf {
    let names = ["chromium", "chromium-browser"];
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .flat_map(|dir| names.map(|n| dir.join(n)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("chromium is missing: run ci/setup-host.sh (Debian package chromium)")
        })
}

/// A pipe, both ends close-on-exec: a browser that another test starts at
/// the same moment must not inherit them, or this browser's exit would not
/// close the pipe.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fds into the array it is given.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", io::Error::last_os_error());
    // SAFETY: both fds are fresh and owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// In the child, between fork and exec: `commands` becomes fd 3 and
/// `replies` fd 4, without close-on-exec, so they survive the exec; and the
/// child is killed when the thread that started it ends. Only
/// async-signal-safe calls.
fn place_pipe_fds(commands: RawFd, replies: RawFd) -> io::Result<()> {
    let check = |rc: libc::c_int| {
        if rc == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    };
    // SAFETY: fcntl, dup2, close and prctl on fds this child owns.
    unsafe {
        // Either may already be fd 3 or 4: first move both above them.
        let commands = check(libc::fcntl(commands, libc::F_DUPFD, 10))?;
        let replies = check(libc::fcntl(replies, libc::F_DUPFD, 10))?;
        check(libc::dup2(commands, 3))?;
        check(libc::dup2(replies, 4))?;
        libc::close(commands);
        libc::close(replies);
        // The test's thread lives as long as the Browser, whose Drop kills
        // the group; this covers a test killed before Drop can run.
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
    }
    Ok(())
}

impl Browser {
    /// Starts Chromium with a fresh profile under `dir`.
    fn launch(dir: &Path) -> Browser {
        let deadline = Instant::now() + SESSION;
        let program = chromium();
        let (commands_read, commands_write) = pipe();
        let (replies_read, replies_write) = pipe();
        let stderr = dir.join("chromium-stderr.txt");
        let mut command = Command::new(&program);
        command
            .args(chromium_args(&dir.join("profile")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&stderr).unwrap())
            .process_group(0);
        let (fd3, fd4) = (commands_read.as_raw_fd(), replies_write.as_raw_fd());
        // SAFETY: the closure runs between fork and exec and makes only
        // async-signal-safe calls (see place_pipe_fds).
        unsafe { command.pre_exec(move || place_pipe_fds(fd3, fd4)) };
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        // Only Chromium holds these now: its exit closes the reply pipe.
        drop((commands_read, replies_write));

        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(File::from(replies_read));
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(0, &mut buf) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(e) => {
                        let _ = tx.send(Err(format!("reading fd 4: {e}")));
                        return;
                    }
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                let message = serde_json::from_slice(&buf).map_err(|e| {
                    format!(
                        "{e} in {:?}",
                        String::from_utf8_lossy(&buf[..buf.len().min(200)])
                    )
                });
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Browser {
            child,
            commands: File::from(commands_write),
            messages,
            events: VecDeque::new(),
            next_id: 0,
            deadline,
            stderr,
            exited: None,
        }
    }

    /// Kills Chromium's process group and reaps it; its exit status. Its
    /// profile is a throwaway, so there is nothing for a gentler shutdown
    /// to save.
    fn kill(&mut self) -> ExitStatus {
        if let Some(status) = self.exited {
            return status;
        }
        // The group is Chromium's own (process_group(0)), its id the
        // browser's pid, which is not reused before the wait below.
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: killpg only sends a signal.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        let status = self.child.wait().expect("reaping chromium");
        self.exited = Some(status);
        status
    }

    /// Fails the test with `what`, Chromium's exit status and the end of
    /// its stderr.
    fn fail(&mut self, what: &str) -> ! {
        let status = self.kill();
        let mut stderr = String::new();
        if let Ok(mut f) = File::open(&self.stderr) {
            let _ = f.read_to_string(&mut stderr);
        }
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        panic!("{what} (chromium: {status}); the end of its stderr:\n{tail}");
    }

    /// The next message from Chromium, before the session's deadline.
    fn next_message(&mut self, awaiting: &str) -> Value {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match self.messages.recv_timeout(left) {
            Ok(Ok(message)) => message,
            Ok(Err(e)) => self.fail(&format!("awaiting {awaiting}: unreadable message: {e}")),
            Err(RecvTimeoutError::Timeout) => self.fail(&format!(
                "awaiting {awaiting}: the session's {SESSION:?} ran out"
            )),
            Err(RecvTimeoutError::Disconnected) => {
                self.fail(&format!("awaiting {awaiting}: chromium closed the pipe"))
            }
        }
    }

    /// Sends `method` (to the tab, if given) and returns its result.
    fn call(&mut self, tab: Option<&Tab>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(Tab(session)) = tab {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        if let Err(e) = self.commands.write_all(&bytes) {
            self.fail(&format!("sending {method}: {e}"));
        }
        loop {
            let mut reply = self.next_message(method);
            if reply.get("id").is_none() {
                self.events.push_back(reply);
            } else if reply["id"] == id {
                if let Some(error) = reply.get("error") {
                    let error = error.to_string();
                    self.fail(&format!("{method} failed: {error}"));
                }
                return reply["result"].take();
            } else {
                self.fail(&format!(
                    "awaiting {method} (id {id}): a reply to {}",
                    reply["id"]
                ));
            }
        }
    }

    /// Waits for the tab's event `method`, or takes it if it already came.
    fn wait_for_event(&mut self, tab: &Tab, method: &str) -> Value {
        let is_it = |e: &Value| e["method"] == method && e["sessionId"] == tab.0.as_str();
        if let Some(i) = self.events.iter().position(is_it) {
            return self.events.remove(i).unwrap()["params"].take();
        }
        loop {
            let mut message = self.next_message(method);
            if is_it(&message) {
                return message["params"].take();
            }
            if message.get("id").is_none() {
                self.events.push_back(message);
            }
        }
    }

    /// A new blank tab, attached, with page events on.
    fn open_tab(&mut self) -> Tab {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let target_id = target["targetId"].as_str().expect("a targetId").to_owned();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        );
        let tab = Tab(attached["sessionId"]
            .as_str()
            .expect("a sessionId")
            .to_owned());
        self.call(Some(&tab), "Page.enable", json!({}));
        tab
    }

    /// A desktop viewport (`mobile: false`) of `width` x `height` CSS px at
    /// one device pixel per CSS pixel. Not mobile emulation: a mobile
    /// browser may zoom a too-wide page out to fit, which would hide the
    /// sideways scrolling this test looks for.
    fn set_viewport(&mut self, tab: &Tab, width: u32, height: u32) {
        self.call(
            Some(tab),
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
    }

    /// Navigates the tab to `url` and waits for its load event.
    fn load(&mut self, tab: &Tab, url: &str) {
        // A load event of an earlier page must not pass for this one's.
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        let navigated = self.call(Some(tab), "Page.navigate", json!({ "url": url }));
        if let Some(error) = navigated.get("errorText") {
            let error = error.to_string();
            self.fail(&format!("navigating to {url}: {error}"));
        }
        self.wait_for_event(tab, "Page.loadEventFired");
    }

    /// The value of `expression`, evaluated in the tab.
    fn evaluate<T: DeserializeOwned>(&mut self, tab: &Tab, expression: &str) -> T {
        let mut result = self.call(
            Some(tab),
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            let exception = exception.to_string();
            self.fail(&format!("the page's script threw: {exception}"));
        }
        let value = result["result"]["value"].take();
        serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("the page's script returned {e}: {value}"))
    }

    /// A PNG of the whole page, `width` CSS px wide as the viewport is,
    /// and the page's height in CSS px.
    fn screenshot(&mut self, tab: &Tab, width: u32) -> (Vec<u8>, f64) {
        let metrics = self.call(Some(tab), "Page.getLayoutMetrics", json!({}));
        let height = metrics["cssContentSize"]["height"]
            .as_f64()
            .expect("the page's height");
        let shot = self.call(
            Some(tab),
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": { "x": 0, "y": 0, "width": width, "height": height, "scale": 1 },
            }),
        );
        let data = shot["data"].as_str().expect("screenshot data");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("screenshot data is base64");
        (png, height)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------
// PNG.

/// A PNG's pixels, after checking the signature, every chunk's CRC up to
/// IEND, and that IDAT inflates to exactly the filtered rows that IHDR
/// promises. Colour type 3 (a palette) is refused: screenshots are RGB.
fn decode_png(bytes: &[u8]) -> Result<Image, String> {
    let be = |b: &[u8]| u32::from_be_bytes(b[..4].try_into().unwrap());
    let mut rest = bytes
        .strip_prefix(b"\x89PNG\r\n\x1a\n")
        .ok_or("no PNG signature")?;
    let mut ihdr: Option<&[u8]> = None;
    let mut idat = Vec::new();
    loop {
        let len = rest.get(..4).map(be).ok_or("truncated")? as usize;
        let kind = rest.get(4..8).ok_or("truncated")?;
        let data = rest.get(8..8 + len).ok_or("truncated chunk")?;
        let crc = rest.get(8 + len..12 + len).map(be).ok_or("truncated")?;
        let mut sum = flate2::Crc::new();
        sum.update(kind);
        sum.update(data);
        let name = String::from_utf8_lossy(kind);
        if sum.sum() != crc {
            return Err(format!("bad CRC on {name}"));
        }
        match (kind, ihdr) {
            (b"IHDR", None) => ihdr = Some(data),
            (_, None) => return Err(format!("{name} before IHDR")),
            (b"IDAT", _) => idat.extend_from_slice(data),
            (b"IEND", _) => break,
            _ => {}
        }
        rest = &rest[12 + len..];
    }
    let ihdr = ihdr.filter(|h| h.len() == 13).ok_or("bad IHDR")?;
    let (width, height) = (be(&ihdr[0..]), be(&ihdr[4..]));
    let (depth, colour, interlace) = (ihdr[8], ihdr[9], ihdr[12]);
    let channels = match colour {
        0 => 1,
        4 => 2,
        2 => 3,
        6 => 4,
        _ => return Err(format!("colour type {colour}")),
    };
    if interlace != 0 {
        return Err("interlaced".into());
    }
    let row = 1 + (width as usize * channels * depth as usize).div_ceil(8);
    let mut rows = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut rows)
        .map_err(|e| format!("IDAT: {e}"))?;
    if rows.len() != row * height as usize {
        return Err(format!(
            "IDAT holds {} bytes, not {height} rows of {row}",
            rows.len()
        ));
    }
    if depth != 8 {
        return Err(format!("bit depth {depth}: only 8 is read"));
    }
    // Undo each row's filter (PNG spec, section 9): every byte is stored
    // as its difference from a prediction made of the pixel to its left
    // (a), above (b) and above-left (c), bytes of the reconstructed image.
    let stride = row - 1;
    let mut pixels = vec![0u8; stride * height as usize];
    for (y, filtered) in rows.chunks(row).enumerate() {
        let (kind, data) = (filtered[0], &filtered[1..]);
        for x in 0..stride {
            let a = if x >= channels {
                pixels[y * stride + x - channels]
            } else {
                0
            };
            let b = if y > 0 {
                pixels[(y - 1) * stride + x]
            } else {
                0
            };
            let c = if y > 0 && x >= channels {
                pixels[(y - 1) * stride + x - channels]
            } else {
                0
            };
            let predicted = match kind {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => paeth(a, b, c),
                other => return Err(format!("row {y} has filter type {other}")),
            };
            pixels[y * stride + x] = data[x].wrapping_add(predicted);
        }
    }
    Ok(Image {
        width,
        height,
        channels,
        pixels,
    })
}

/// The Paeth predictor: whichever of a, b, c is nearest to a + b − c.
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// A decoded 8-bit PNG: its rows of `channels` bytes a pixel, unfiltered.
#[derive(Debug, PartialEq)]
struct Image {
    width: u32,
    height: u32,
    channels: usize,
    pixels: Vec<u8>,
}

impl Image {
    /// The red, green and blue of the pixel at (x, y); grey repeated.
    fn rgb(&self, x: u32, y: u32) -> Option<[u8; 3]> {
        if x >= self.width || y >= self.height || self.channels == 2 {
            return None;
        }
        let at = (y as usize * self.width as usize + x as usize) * self.channels;
        let p = &self.pixels[at..at + self.channels];
        Some(if self.channels == 1 {
            [p[0]; 3]
        } else {
            [p[0], p[1], p[2]]
        })
    }
}

/// A PNG of `width` x `height` RGB pixels, 8 bits each, whose IDAT holds
/// `rows` (filter bytes included) as given.
fn encode_png(width: u32, height: u32, rows: &[u8]) -> Vec<u8> {
    let chunk = |png: &mut Vec<u8>, kind: &[u8], data: &[u8]| {
        let mut sum = flate2::Crc::new();
        sum.update(kind);
        sum.update(data);
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        png.extend_from_slice(kind);
        png.extend_from_slice(data);
        png.extend_from_slice(&sum.sum().to_be_bytes());
    };
    let mut ihdr = [width.to_be_bytes(), height.to_be_bytes()].concat();
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(rows).unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &z.finish().unwrap());
    chunk(&mut png, b"IEND", b"");
    png
}

#[test]
fn the_png_check_rejects_bad_crcs_and_missing_rows() {
    let row = [0, 255, 0, 0, 0, 0, 255];
    let good = encode_png(2, 1, &row);
    let image = decode_png(&good).unwrap();
    assert_eq!((image.width, image.height), (2, 1));
    assert_eq!(image.rgb(0, 0), Some([255, 0, 0]));
    assert_eq!(image.rgb(1, 0), Some([0, 0, 255]));
    assert_eq!(image.rgb(2, 0), None);

    let mut flipped = good.clone();
    let last_idat_byte = good.len() - 12 - 5;
    flipped[last_idat_byte] ^= 1;
    assert_eq!(decode_png(&flipped), Err("bad CRC on IDAT".into()));

    let short = encode_png(2, 2, &row);
    assert!(decode_png(&short).unwrap_err().contains("not 2 rows of 7"));
    assert!(decode_png(&good[..good.len() - 12]).is_err(), "no IEND");
    assert_eq!(decode_png(b"GIF89a"), Err("no PNG signature".into()));
}

#[test]
fn the_png_check_undoes_every_row_filter() {
    // Two rows of two RGB pixels: (10,20,30) (40,50,60) / (70,80,90) (100,110,120).
    let want: [[u8; 6]; 2] = [[10, 20, 30, 40, 50, 60], [70, 80, 90, 100, 110, 120]];
    // Row 0 as Sub (1): the second pixel minus the first. Row 1 as Paeth
    // (4): its first pixel's predictor is b (above), its second's is the
    // nearest of a, b, c to a + b - c.
    let mut rows = vec![1, 10, 20, 30, 30, 30, 30];
    let p = |x: usize, i: usize| {
        let (a, b, c) = (want[1][x - 3 + i], want[0][x + i], want[0][x - 3 + i]);
        want[1][x + i].wrapping_sub(paeth(a, b, c))
    };
    rows.extend([4, 60, 60, 60, p(3, 0), p(3, 1), p(3, 2)]);
    let image = decode_png(&encode_png(2, 2, &rows)).unwrap();
    assert_eq!(image.pixels, want.concat());
    // Up (2) and Average (3) on a one-row image predict from zeros above.
    let flat = decode_png(&encode_png(1, 1, &[3, 20, 40, 60])).unwrap();
    assert_eq!(flat.rgb(0, 0), Some([20, 40, 60]));
    let bad = encode_png(1, 1, &[5, 0, 0, 0]);
    assert_eq!(decode_png(&bad), Err("row 0 has filter type 5".into()));
}

/// Where the PNGs go: `$PATCHBENCH_SCREENSHOT_DIR` to keep them, else the
/// test's own temporary directory.
fn shots_dir(tmp: &Path) -> PathBuf {
    let shots = match std::env::var_os("PATCHBENCH_SCREENSHOT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => tmp.join("shots"),
    };
    std::fs::create_dir_all(&shots).unwrap();
    shots
}
