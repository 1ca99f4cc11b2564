//! Every exit code of `patchbench`, through the real binary: what a CI job
//! branches on. 0 and 1 come from `compare` on stored results, 2 from bad
//! usage and from a damaged results.json met by resume, 3 from a missing
//! piece of the host, 4 from a series that does not apply, 5 from `compare`
//! on stored results a guest failure stopped. The codes are literal
//! numbers: what a CI script compares them with. A guest failing in a run
//! needs a booted kernel: tests/e2e.rs pins that with a panicking guest, a
//! hang and a failing workload.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use patchbench::results::Results;

fn patchbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

fn code(output: &Output) -> Option<i32> {
    output.status.code()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json")
}

#[test]
fn a_run_without_a_regression_exits_0() {
    let output = patchbench(&["compare", "--rejudge", fixture().to_str().unwrap()]);
    assert_eq!(code(&output), Some(0), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("pageout_cpu_ns"));
    // Without --rejudge, a document of an older schema has no judgement,
    // and says how to get one.
    let output = patchbench(&["compare", fixture().to_str().unwrap()]);
    assert_eq!(code(&output), Some(0), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("patchbench judge RESULTS.json"));
}

#[test]
fn a_regressed_metric_exits_1_and_is_named_once() {
    let mut results = Results::load(&fixture()).unwrap();
    // B's PAGEOUT three times as slow, with a little spread.
    for boot in results.boots.iter_mut().filter(|b| b.variant == "B") {
        for s in &mut boot.samples {
            let v = s.metrics.get_mut("pageout_cpu_ns").unwrap();
            *v = *v * 3 + u64::from(s.index) * 1000;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    results.save(&path).unwrap();
    // `judge` judges it in place, writes report.md beside it, and exits 1
    // for the regression it found; `compare` then renders what it stored.
    let output = patchbench(&["judge", path.to_str().unwrap()]);
    assert_eq!(code(&output), Some(1), "{}", stderr(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(&format!(
            "judged under rule {}",
            patchbench::stats::RULE_VERSION
        )),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(dir.path().join("report.md").is_file());
    let output = patchbench(&["compare", path.to_str().unwrap()]);
    let err = stderr(&output);
    assert_eq!(code(&output), Some(1), "{err}");
    assert!(
        err.contains("the patch regressed: pageout_cpu_ns in"),
        "{err}"
    );
    assert_eq!(err.matches("regressed").count(), 1, "{err}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("regression"));
}

#[test]
fn stored_results_with_a_stopped_boot_exit_5_and_name_it() {
    let mut results = Results::load(&fixture()).unwrap();
    let b = results.boots.iter_mut().find(|b| b.variant == "B").unwrap();
    b.samples.truncate(1);
    b.complete = false;
    b.failure = Some(patchbench::results::BootFailure {
        what: "OOM kill".into(),
        excerpt: "Memory cgroup out of memory".into(),
    });
    let label = b.label.clone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    results.save(&path).unwrap();
    let output = patchbench(&["compare", "--rejudge", path.to_str().unwrap()]);
    let err = stderr(&output);
    assert_eq!(code(&output), Some(5), "{err}");
    assert!(
        err.contains(&format!(
            "a guest failure stopped boot {label} in {}",
            path.display()
        )),
        "{err}"
    );
    // What was measured is still shown.
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.contains("stopped after 1 of"), "{out}");
}

#[test]
fn bad_usage_exits_2_and_names_the_culprit() {
    let output = patchbench(&["run", "--no-such-flag"]);
    assert_eq!(code(&output), Some(2), "{}", stderr(&output));
    let dir = tempfile::tempdir().unwrap();
    let campaign = dir.path().join("typo.yaml");
    let text = patchbench::config::DEFAULT_CAMPAIGN.replace("protocol:", "protocl:");
    std::fs::write(&campaign, text).unwrap();
    let output = patchbench(&["plan", campaign.to_str().unwrap()]);
    let err = stderr(&output);
    assert_eq!(code(&output), Some(2), "{err}");
    assert!(
        err.contains("typo.yaml") && err.contains("protocl"),
        "{err}"
    );
}

/// `patchbench reach` refuses a map, --file or directory it cannot use
/// with exit 2, naming the option and the value at fault.
#[test]
fn a_reach_map_or_file_that_cannot_be_used_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_map = dir.path().join("not-a-map.json");
    std::fs::write(&not_a_map, b"[]").unwrap();
    let missing = dir.path().join("missing.json");
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["reach", "--map", missing.to_str().unwrap()], "--map"),
        (
            vec!["reach", "--map", not_a_map.to_str().unwrap()],
            "not-a-map.json is not a reach map",
        ),
        (
            vec!["reach", "--file", "mm/no-such-file.c"],
            "--file mm/no-such-file.c",
        ),
        (
            vec![
                "reach",
                "build",
                "--objects",
                dir.path().to_str().unwrap(),
                "--results",
                "results/mm",
                "--out",
                missing.to_str().unwrap(),
            ],
            "--objects",
        ),
    ];
    for (args, named) in cases {
        let output = patchbench(&args);
        let err = stderr(&output);
        assert_eq!(code(&output), Some(2), "{args:?}: {err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
    assert!(!missing.exists());
}

/// A hunt (`run --bisect`, `per_patch: bisect`) refuses, with exit 2 and
/// before anything is imported or built, what it cannot do: a waterfall,
/// prebuilt kernels or a shard at once, `patchbench build` or a CI matrix
/// (the hunt chooses its prefixes as it goes), and a damaged bisect.json
/// to resume.
#[test]
fn what_a_hunt_cannot_do_exits_2_before_anything_runs() {
    for conflict in [["--per-patch"], ["--kernels=/nowhere"], ["--shard=1/2"]] {
        let mut args = vec!["run", "--bisect"];
        args.extend(conflict);
        let output = patchbench(&args);
        let err = stderr(&output);
        assert_eq!(code(&output), Some(2), "{conflict:?}: {err}");
        assert!(err.contains("cannot be used with"), "{err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let campaign = dir.path().join("hunt.yaml");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = patchbench::config::DEFAULT_CAMPAIGN.replace("../", &format!("{}/", root.display()));
    std::fs::write(&campaign, format!("per_patch: bisect\n{text}")).unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = format!("--cache-dir={}", cache.display());
    for args in [
        vec!["build", campaign.to_str().unwrap(), &cache_arg],
        vec!["plan", "--matrix", campaign.to_str().unwrap()],
    ] {
        let output = patchbench(&args);
        let err = stderr(&output);
        assert_eq!(code(&output), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("hunt.yaml") && err.contains("per_patch: bisect"),
            "{err}"
        );
    }
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(
        out.join("bisect.json"),
        "{\"hunt_schema_version\": 1, \"steps\": [",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["run", "--bisect", "--out"])
        .arg(&out)
        .arg(&cache_arg)
        .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(code(&output), Some(2), "{err}");
    assert!(err.contains("bisect.json is not a hunt document"), "{err}");
    assert!(!cache.exists(), "the cache was touched: {err}");
}

/// A results.json left in `--out` that is not a results document, met by
/// the same command resuming: refused with exit 2, naming the file and the
/// byte, before anything is imported, built or booted; the file untouched.
#[test]
fn a_damaged_results_json_met_by_resume_exits_2_before_anything_runs() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    // Cut in the middle of the samples, as a crash of a non-atomic writer
    // would; and hand-edited, a number made a word.
    let cut = text.find("\"samples\"").unwrap() + 40;
    let value = "\"pageout_cpu_ns\": ";
    let edit = text.find(value).unwrap() + value.len();
    let mut edited = text.clone();
    edited.insert_str(edit, "\"fast\", \"was\": ");
    // serde_json stops at the token it cannot take: the end of the
    // truncated text, or the word where a number belongs.
    let cases = [
        ("truncated", &text[..cut], cut - 2..=cut),
        ("edited", &edited[..], edit..=edit + "\"fast\"".len()),
    ];
    for (damage, damaged, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let results = out.join("results.json");
        std::fs::write(&results, damaged).unwrap();
        let cache = dir.path().join("cache");
        let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
            .arg("run")
            .arg("--out")
            .arg(&out)
            .arg("--cache-dir")
            .arg(&cache)
            .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_eq!(code(&output), Some(2), "{damage}: {err}");
        let Err(patchbench::results::ResultsError::Parse { offset: at, .. }) =
            Results::load(&results)
        else {
            panic!("{damage}: the damaged file loads")
        };
        assert!(
            expected.contains(&at),
            "{damage}: at byte {at}, not {expected:?}"
        );
        assert!(
            err.contains(&format!(
                "{} is not a results document (at byte {at},",
                results.display()
            )),
            "{damage}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(&results).unwrap(),
            damaged,
            "{damage}"
        );
        assert!(!cache.exists(), "{damage}: the cache was touched: {err}");
        let entries: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().collect();
        assert_eq!(entries.len(), 1, "{damage}: {entries:?}");
    }
}

#[test]
fn a_missing_piece_of_the_host_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["run", "--out"])
        .arg(dir.path().join("out"))
        .env("PATCHBENCH_AGENT", dir.path().join("no-agent"))
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(code(&output), Some(3), "{err}");
    assert!(err.contains("PATCHBENCH_AGENT"), "{err}");
}

/// A one-commit repository holding `mm/file.c`.
fn tiny_tree(dir: &Path) -> PathBuf {
    let path = dir.join("linux");
    let repo = git2::Repository::init(&path).unwrap();
    std::fs::create_dir_all(path.join("mm")).unwrap();
    std::fs::write(
        path.join("mm/file.c"),
        "int a = 1;\nint b = 2;\nint c = 3;\n",
    )
    .unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("mm/file.c")).unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("T", "t@example.org").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "base", &tree, &[])
        .unwrap();
    path
}

#[test]
fn a_series_that_does_not_apply_exits_4_naming_the_patch() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tiny_tree(dir.path());
    let patch = dir.path().join("0001-change-x.patch");
    std::fs::write(
        &patch,
        "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
         From: A Developer <dev@example.org>\n\
         Date: Tue, 1 Dec 2026 00:00:00 +0000\n\
         Subject: [PATCH] mm: change x\n\
         \n\
         ---\n \
         mm/file.c | 2 +-\n \
         1 file changed, 1 insertion(+), 1 deletion(-)\n\
         \n\
         diff --git a/mm/file.c b/mm/file.c\n\
         --- a/mm/file.c\n\
         +++ b/mm/file.c\n\
         @@ -1,3 +1,3 @@\n \
         int x = 1;\n\
         -int y = 2;\n\
         +int y = 5;\n \
         int z = 3;\n\
         -- \n2.39.0\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let output = patchbench(&[
        "apply",
        "--tree",
        tree.to_str().unwrap(),
        "--series",
        patch.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ]);
    let err = stderr(&output);
    assert_eq!(code(&output), Some(4), "{err}");
    assert!(
        err.contains("mm: change x") && err.contains("mm/file.c"),
        "{err}"
    );
}
