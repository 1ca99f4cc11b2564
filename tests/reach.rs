//! `patchbench plan --series` through the real binary, on the real tree
//! (Debian's linux-source-6.12, imported into the cache once): each series
//! chooses the campaigns whose workloads execute a function it changes,
//! and a series that changes nothing a campaign executes is told so.
//! Nothing is built or booted.
//!
//! A series to check is one row of `SERIES`: its path (from the checkout)
//! and, for each campaign it must choose, a function it must say that
//! campaign executes; an empty list means no campaign may be chosen.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SERIES: &[(&str, &[(&str, &str)])] = &[
    (
        "patches/zswap-counter",
        &[("seed-000-counter", "mm/memcontrol.c: obj_cgroup_may_zswap")],
    ),
    (
        "patches/memcg-dfl-local-skip",
        &[
            (
                "seed-000-counter",
                "mm/memcontrol.c: mem_cgroup_css_rstat_flush",
            ),
            (
                "seed-002-dfl-rstat",
                "mm/memcontrol.c: mem_cgroup_css_rstat_flush",
            ),
            (
                "seed-003-reclaim-refault-cost",
                "mm/memcontrol.c: mem_cgroup_css_rstat_flush",
            ),
        ],
    ),
    (
        "patches/swapin-margin",
        &[
            (
                "seed-003-reclaim-refault-cost",
                "mm/memcontrol.c: mem_cgroup_swapin_charge_folio",
            ),
            (
                "seed-004-swapin-margin-anon",
                "mm/memcontrol.c: mem_cgroup_swapin_charge_folio",
            ),
        ],
    ),
    ("tests/fixtures/reach/ksm-nice.patch", &[]),
];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn plan(series: &str) -> Output {
    assert!(
        Path::new("/usr/src/linux-source-6.12.tar.xz").exists(),
        "the kernel source is missing: run ci/setup-host.sh (Debian package linux-source-6.12)"
    );
    Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["plan", "--series", series])
        .current_dir(repo_root())
        .output()
        .expect("patchbench runs")
}

/// The campaigns the plan says it chose, each with the functions it says
/// that campaign executes.
fn chosen(stdout: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for line in stdout.lines() {
        if line.contains("campaign(s) chosen") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(name) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) {
            out.push((name.split(' ').next().unwrap().to_string(), Vec::new()));
        } else if let Some(f) = line.trim().strip_prefix("executes ") {
            out.last_mut()
                .expect("a campaign first")
                .1
                .push(f.to_string());
        } else if !line.starts_with("    ") {
            inside = false;
        }
    }
    out
}

/// The functions the plan says the series changes.
fn changed(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| !l.contains("function(s):"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().split("  ").next().unwrap().to_string())
        .collect()
}

#[test]
fn each_series_chooses_the_campaigns_that_execute_what_it_changes() {
    let mut failures = Vec::new();
    for (series, expected) in SERIES {
        let out = plan(series);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{series}: {stderr}\n{stdout}");
        // Every declaration of the map names a function the tree defines.
        assert!(!stderr.contains("does not define"), "{series}: {stderr}");
        let changed = changed(&stdout);
        assert!(
            !changed.is_empty(),
            "{series} changes no function?\n{stdout}"
        );
        let chosen = chosen(&stdout);
        // A chosen campaign executes only functions the series changes.
        for (campaign, functions) in &chosen {
            assert!(
                !functions.is_empty(),
                "{series}: {campaign} chosen for nothing\n{stdout}"
            );
            for f in functions {
                assert!(
                    changed.iter().any(|c| c.starts_with(f.as_str())),
                    "{series}: {campaign} executes {f}, which the series does not change\n{stdout}"
                );
            }
        }
        for (campaign, function) in *expected {
            let found = chosen
                .iter()
                .any(|(c, fs)| c == campaign && fs.iter().any(|f| f == function));
            if !found {
                failures.push(format!("{series}: {campaign} should execute {function}"));
            }
        }
        if expected.is_empty() {
            assert!(chosen.is_empty(), "{series}: {chosen:?}\n{stdout}");
            assert!(stdout.contains("no campaign chosen"), "{series}\n{stdout}");
            assert!(
                stdout.contains(patchbench::reach::NOTHING_REACHED),
                "{series}\n{stdout}"
            );
            // The plan is the smoke campaign's, the sanity check.
            assert!(
                stdout.contains("campaign smoke (built-in)"),
                "{series}\n{stdout}"
            );
        }
        if !failures.is_empty() {
            eprintln!("{stdout}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_series_that_chooses_prints_a_matrix_of_its_campaigns() {
    let out = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["plan", "--matrix", "--series", "patches/swapin-margin"])
        .current_dir(repo_root())
        .output()
        .expect("patchbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let matrix: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one line of JSON");
    let campaigns: Vec<&str> = matrix["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["campaign"].as_str().unwrap())
        .collect();
    assert_eq!(
        campaigns,
        [
            "seed-003-reclaim-refault-cost",
            "seed-004-swapin-margin-anon"
        ]
    );
}

#[test]
fn run_with_a_chosen_series_refuses_prebuilt_kernels_before_any_work() {
    let out = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args([
            "run",
            "--series",
            "patches/swapin-margin",
            "--kernels",
            "/nonexistent",
        ])
        .current_dir(repo_root())
        .output()
        .expect("patchbench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--kernels"), "{stderr}");
    assert!(stderr.contains("needs a campaign file"), "{stderr}");
}
