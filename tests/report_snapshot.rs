//! Snapshot of the Markdown report for a stored real smoke run
//! (`tests/fixtures/smoke-results.json`, machine paths redacted), judged
//! under today's rule. A change to the judgement or the report shows up
//! here as a diff; update the `.md` file on purpose.

use std::path::Path;

use patchbench::results::Results;

#[test]
fn the_smoke_report_renders_as_stored() {
    render_as_stored("smoke-results.json", "smoke-report.md");
}

/// The stored run `results` (under tests/fixtures), judged and rendered as
/// Markdown, must equal the stored report `report`; UPDATE_SNAPSHOTS=1
/// accepts it. Returns the run.
fn render_as_stored(results: &str, report: &str) -> Results {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut results = Results::load(&fixtures.join(results)).unwrap();
    patchbench::judge::judge_into(&mut results);
    let markdown = patchbench::report::markdown(&results);
    let expected_path = fixtures.join(report);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&expected_path, &markdown).unwrap();
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    assert_eq!(
        markdown, expected,
        "re-run with UPDATE_SNAPSHOTS=1 to accept"
    );
    results
}

#[test]
fn a_schema_2_document_becomes_a_schema_4_document_that_round_trips() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(fixtures.join("smoke-results.json")).unwrap();
    assert!(
        text.contains(r#""schema_version": 2"#),
        "the fixture stays schema 2"
    );
    let results = Results::load(&fixtures.join("smoke-results.json")).unwrap();
    assert_eq!(results.schema_version, patchbench::results::SCHEMA_VERSION);
    let v3 = serde_json::to_string_pretty(&results).unwrap();
    let back: Results = serde_json::from_str(&v3).unwrap();
    let again: serde_json::Value = serde_json::to_value(&back).unwrap();
    let original: serde_json::Value = serde_json::from_str(&v3).unwrap();
    assert_eq!(again, original);
}

/// The cost lane's report, from a real run of ci/workloads/counter-cost.yaml
/// with one warm-up and three samples per boot, trimmed by
/// `tests/fixtures/trim-cost-results.py` (machine paths redacted,
/// comparisons and the controls' profiles dropped, the long tail of each
/// profile summed into `(other symbols)`). `cost-report.md` was that
/// run's own report.md, byte for byte, but for the noise line, whose guest
/// CV now covers times and rates only (0.3%, where the run's binary printed
/// the coherence-miss counts' 93.6%); since rule 3, instructions are the
/// work the cycles price (`<phase>_insns` an improvement when they fall)
/// and a negligible count says "negligible".
#[test]
fn the_cost_lane_report_renders_as_stored() {
    let results = render_as_stored("cost-results.json", "cost-report.md");
    assert_eq!(results.host.cost_model.as_deref(), Some("skylake-client"));
    // What the run showed: the flush path tops the table, and the listed
    // symbols explain at least 80% of PAGEOUT's Δ.
    let pageout = patchbench::report::profile_tables(&results)
        .into_iter()
        .find(|t| t.phase == "pageout")
        .unwrap();
    assert_eq!(pageout.rows[0].symbol, "cgroup_rstat_flush_locked");
    assert!(pageout.listed_share().unwrap() >= 0.8);
}

/// `--quiet` silences progress, not the command's output: `compare -q
/// --markdown` prints the report to stdout, and nothing to stderr. It
/// printed nothing at all, so `> report.md` wrote an empty file.
#[test]
fn compare_quiet_markdown_prints_the_report_and_nothing_else() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["compare", "-q", "--markdown", "--rejudge"])
        .arg(fixtures.join("smoke-results.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
    let expected = std::fs::read_to_string(fixtures.join("smoke-report.md")).unwrap();
    // compare ends its output with a blank line; report.md does not.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        expected.trim_end()
    );
}
