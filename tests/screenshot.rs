//! The run page of the stored smoke run, rendered by `html::write_site` and
//! screenshotted by headless Chromium: the page really draws (a PNG of the
//! window's size, far larger than a blank page's). `ci/setup-host.sh`
//! installs Chromium; without it this test fails rather than skips.
//!
//! To look at the picture: `PATCHBENCH_SCREENSHOT_DIR=/tmp/shots cargo test
//! --test screenshot` keeps `run-page.png` (and `blank.png`) there.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use patchbench::html::{self, Run};
use patchbench::results::Results;

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 2000;
const DEADLINE: Duration = Duration::from_secs(120);

fn chromium() -> PathBuf {
    let names = ["chromium", "chromium-browser"];
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .flat_map(|dir| names.map(|n| dir.join(n)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("chromium is missing: run ci/setup-host.sh (it installs Debian's `chromium`)")
        })
}

/// Screenshots `page` into `png` with headless Chromium, under a deadline.
fn screenshot(page: &Path, png: &Path, profile: &Path) {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={WIDTH},{HEIGHT}"))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took more than {DEADLINE:?} on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    assert!(
        status.success() && png.is_file(),
        "chromium failed on {} ({status}):\n{stderr}",
        page.display()
    );
}

/// The width and height in a PNG's IHDR, checking the signature on the way.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.len() > 33, "too short for a PNG");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR", "no IHDR first");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn the_run_page_draws_its_table_and_plots() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json");
    let mut results = Results::load(&fixture).unwrap();
    patchbench::judge::judge_into(&mut results);
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = fixture.parent().unwrap();
    let site = tmp.path().join("site");
    html::write_site(&site, &[Run::new(&results, run_dir)]).unwrap();
    let page = std::fs::read_dir(site.join("runs"))
        .unwrap()
        .next()
        .expect("one run page")
        .unwrap()
        .path()
        .join("index.html");
    let html_text = std::fs::read_to_string(&page).unwrap();
    assert!(html_text.contains("<table") && html_text.contains("<svg"));

    let blank = tmp.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let shots = match std::env::var_os("PATCHBENCH_SCREENSHOT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => tmp.path().join("shots"),
    };
    std::fs::create_dir_all(&shots).unwrap();
    let page_png = shots.join("run-page.png");
    let blank_png = shots.join("blank.png");
    screenshot(&page, &page_png, &tmp.path().join("profile-1"));
    screenshot(&blank, &blank_png, &tmp.path().join("profile-2"));

    let page_bytes = std::fs::read(&page_png).unwrap();
    let blank_bytes = std::fs::read(&blank_png).unwrap();
    assert_eq!(png_size(&page_bytes), (WIDTH, HEIGHT));
    assert_eq!(png_size(&blank_bytes), (WIDTH, HEIGHT));
    // Text, a table and plots compress far worse than one flat colour.
    assert!(
        page_bytes.len() > 10 * blank_bytes.len() && page_bytes.len() > 50_000,
        "the page's screenshot is {} bytes, a blank page's {}: nothing drawn?",
        page_bytes.len(),
        blank_bytes.len()
    );
}
