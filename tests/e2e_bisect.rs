//! End-to-end test of the regression hunt (`patchbench run --bisect`)
//! through the real binary: a synthetic seven-patch series, written here as
//! `git format-patch` mails, applied to Debian's 6.12 tree, each prefix the
//! hunt asks for built (incrementally, from the cached base) and booted
//! under icount with the smoke campaign's workload. Six patches are
//! comments; patch 4 is the known-bad one. It never skips: on a host
//! without QEMU or the kernel source it fails, naming what is missing
//! (`ci/setup-host.sh` installs it).
//!
//! The bad patch makes zswap's limit check flush the memcg stats twice
//! for every page it stores instead of once: the second flush finds
//! nothing to do and still walks every possible CPU (20 in the smoke
//! campaign), which icount counts, so PAGEOUT's CPU time and the flush
//! count (`pageout_flushes`) rise at patch 4 and not before.

use std::path::Path;
use std::process::Command;

use patchbench::results::hunt::{Hunt, HuntState, OwnMethod, StepRole};
use patchbench::results::{Results, VerdictRecord};

mod common;
use common::{cache_dir, require_host_tools, smoke_variant};

/// The last lines of mm/memcontrol.c in Debian's linux-source-6.12
/// (6.12.118: 5559 lines), which the comment patches append after.
const TAIL: [&str; 3] = [
    "subsys_initcall(mem_cgroup_swap_init);",
    "",
    "#endif /* CONFIG_SWAP */",
];
const LINES: usize = 5559;

/// `obj_cgroup_may_zswap()`'s forced flush in 6.12, with the three lines
/// before it; the known-bad patch repeats the flush after them (at line
/// 5390). The lines after it follow as context.
const FLUSH_BEFORE: [&str; 3] = [
    "\t\t * do_flush_stats() directly to get accurate stats for charging.",
    "\t\t */",
    "\t\tdo_flush_stats(memcg);",
];
const FLUSH_AFTER: [&str; 3] = [
    "\t\tpages = memcg_page_state(memcg, MEMCG_ZSWAP_B) / PAGE_SIZE;",
    "\t\tif (pages < max)",
    "\t\t\tcontinue;",
];
const FLUSH_LINE: usize = 5388;

/// One mail as `git format-patch` writes it.
fn mail(number: usize, of: usize, subject: &str, body: &str, hunk: &str, added: usize) -> String {
    format!(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n\
         From: patchbench tests <tests@patchbench.invalid>\n\
         Date: Tue, 1 Dec 2026 00:0{number}:00 +0000\n\
         Subject: [PATCH {number}/{of}] {subject}\n\
         \n\
         {body}\n\
         ---\n \
         mm/memcontrol.c | {added} {plus}\n \
         1 file changed, {added} insertions(+)\n\
         \n\
         diff --git a/mm/memcontrol.c b/mm/memcontrol.c\n\
         --- a/mm/memcontrol.c\n\
         +++ b/mm/memcontrol.c\n\
         {hunk}\
         -- \n\
         2.39.5\n",
        plus = "+".repeat(added)
    )
}

/// The synthetic series in `dir`: seven patches to mm/memcontrol.c, of
/// which only patch `bad` changes code. Returns the subjects.
fn write_series(dir: &Path, bad: usize) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    let n = 7;
    let mut tail: Vec<String> = TAIL.iter().map(|s| s.to_string()).collect();
    let mut lines = LINES;
    let flush_line = FLUSH_LINE;
    let mut subjects = Vec::new();
    for k in 1..=n {
        let (subject, body, hunk, added) = if k == bad {
            let added = [
                "\t\t/*",
                "\t\t * patchbench's bisection test, the known-bad patch: flush",
                "\t\t * again. The second flush finds nothing left to flush and",
                "\t\t * still walks every possible CPU.",
                "\t\t */",
                "\t\tdo_flush_stats(memcg);",
            ];
            let mut hunk = format!(
                "@@ -{flush_line},6 +{flush_line},{} @@ bool obj_cgroup_may_zswap(struct obj_cgroup *objcg)\n",
                6 + added.len()
            );
            for l in FLUSH_BEFORE {
                hunk.push_str(&format!(" {l}\n"));
            }
            for l in added {
                hunk.push_str(&format!("+{l}\n"));
            }
            for l in FLUSH_AFTER {
                hunk.push_str(&format!(" {l}\n"));
            }
            // Lines before the file's end: the comments' hunks below
            // move down with them.
            lines += added.len();
            (
                "mm: memcg: flush the stats twice in the zswap limit check".to_string(),
                "The known-bad patch of patchbench's bisection test: every page zswap\n\
                 stores now costs two forced rstat flushes instead of one."
                    .to_string(),
                hunk,
                added.len(),
            )
        } else {
            let comment =
                format!("/* patchbench's bisection test: harmless patch {k} of {n}, a comment. */");
            let start = lines - 2;
            let mut hunk = format!("@@ -{start},3 +{start},5 @@\n");
            for l in &tail {
                hunk.push_str(&format!(" {l}\n"));
            }
            hunk.push_str("+\n");
            hunk.push_str(&format!("+{comment}\n"));
            tail = vec![tail[2].clone(), String::new(), comment];
            lines += 2;
            (
                format!("mm: memcg: a comment at the end of memcontrol.c ({k})"),
                "A harmless patch of patchbench's bisection test: a comment after\n\
                 the last line of mm/memcontrol.c, so no line of code moves."
                    .to_string(),
                hunk,
                2,
            )
        };
        let name = format!("{k:04}-bisect-test-{k}.patch");
        std::fs::write(dir.join(name), mail(k, n, &subject, &body, &hunk, added)).unwrap();
        subjects.push(subject);
    }
    subjects
}

/// The binaries under test, copied into `dir` at the start: the test runs
/// for a quarter of an hour, and a build of another checkout sharing the
/// target directory (CARGO_TARGET_DIR) must not swap the binary or the
/// guest agent between its two runs, or between the hunt's steps.
struct Binaries {
    patchbench: std::path::PathBuf,
    agent: std::path::PathBuf,
}

impl Binaries {
    fn copy_into(dir: &Path) -> Binaries {
        let copy = |from: std::path::PathBuf, name: &str| {
            let to = dir.join(name);
            std::fs::copy(&from, &to)
                .unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
            to
        };
        Binaries {
            patchbench: copy(env!("CARGO_BIN_EXE_patchbench").into(), "patchbench"),
            agent: copy(patchbench::find_agent().unwrap(), "patchbench-agent"),
        }
    }
}

fn run(bin: &Binaries, campaign: &Path, out: &Path) -> std::process::Output {
    Command::new(&bin.patchbench)
        .arg("run")
        .arg(campaign)
        .arg("--bisect")
        .arg("--out")
        .arg(out)
        .arg("--cache-dir")
        .arg(cache_dir())
        .env("PATCHBENCH_AGENT", &bin.agent)
        .output()
        .unwrap()
}

fn verdict_of(records: &[patchbench::results::ComparisonRecord], metric: &str) -> VerdictRecord {
    records
        .iter()
        .find(|c| c.condition.is_none() && c.metric == metric)
        .unwrap_or_else(|| panic!("no {metric} in {records:?}"))
        .verdict
}

/// The hunt names patch 4 of 7 in at most 4 kernel pairs (the whole
/// series, then three midpoints: p3, p5, p4), and patch 4's own interval,
/// p4 against p3 across their steps' boots (icount), is a regression of
/// PAGEOUT CPU and of the flush count; the base, booted in both steps,
/// agrees with itself. The exit code is a regression's. Run again with the
/// same --out, the hunt resumes: every step is read back, no boot runs.
#[test]
fn bisection_names_the_known_bad_patch_of_seven_in_four_kernel_pairs() {
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let bin = Binaries::copy_into(dir.path());
    let series = dir.path().join("series");
    let subjects = write_series(&series, 4);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let campaign = smoke_variant(
        dir.path(),
        "bisect",
        &[
            ("name: smoke", "name: smoke-bisect"),
            (
                &format!("series: {}/patches/zswap-counter", root.display()),
                &format!("series: {}", series.display()),
            ),
            // A quarter of the smoke's memory: 2048 pages stored a sample,
            // each still flushed once before patch 4 and twice after it,
            // which icount counts exactly, at a quarter of the boots' time.
            ("mib_per_worker: 32", "mib_per_worker: 8"),
        ],
    );
    let out = dir.path().join("out");
    let started = std::time::Instant::now();
    let first = run(&bin, &campaign, &out);
    let stdout = String::from_utf8_lossy(&first.stdout);
    let stderr = String::from_utf8_lossy(&first.stderr);
    eprintln!(
        "{stdout}\n{stderr}\nhunt took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        first.status.code(),
        Some(1),
        "a regression's exit code:\n{stderr}"
    );
    assert!(
        stderr.contains("the series regressed: ")
            && stderr.contains("the first patch with the regression is 4/7"),
        "{stderr}"
    );

    let hunt = Hunt::load(&out.join("bisect.json")).unwrap();
    assert_eq!(hunt.series.patches.len(), 7);
    assert_eq!(hunt.series.patches[3].subject, subjects[3]);
    let lane = hunt.lane.as_ref().unwrap();
    assert!(lane.icount(), "{lane:?}");
    let hunted = hunt.hunted.as_ref().unwrap();
    assert_eq!(hunted.verdict, VerdictRecord::Regression);
    let names: Vec<&str> = hunted.metrics.iter().map(|m| m.metric.as_str()).collect();
    // The times that regressed; the flush count is a count (changed), so
    // the hunt, which takes the regressions first, leaves it out.
    assert!(
        names.contains(&"pageout_cpu_ns") && !names.contains(&"pageout_flushes"),
        "{names:?}"
    );
    let prefixes: Vec<(StepRole, usize, usize)> = hunt
        .steps
        .iter()
        .map(|s| (s.role, s.baseline_patches, s.patches))
        .collect();
    assert_eq!(
        prefixes,
        [
            (StepRole::Whole, 0, 7),
            (StepRole::Midpoint, 0, 3),
            (StepRole::Midpoint, 0, 5),
            (StepRole::Midpoint, 0, 4),
        ]
    );
    assert!(hunt.kernel_pairs() <= 4);
    let HuntState::Found { patch, own } = &hunt.state else {
        panic!("{:?}", hunt.state)
    };
    assert_eq!(*patch, 4);
    assert_eq!(own.method, OwnMethod::AcrossSteps, "{}", own.note);
    // PAGEOUT CPU regresses; the flush count, a count, is changed.
    for (metric, want) in [
        ("pageout_cpu_ns", VerdictRecord::Regression),
        ("pageout_flushes", VerdictRecord::Changed),
    ] {
        assert_eq!(verdict_of(&own.comparisons, metric), want, "{metric}");
        assert_eq!(
            verdict_of(&own.witness, metric),
            VerdictRecord::NoClearDifference,
            "the base between steps, {metric}"
        );
    }
    let own_flushes = own
        .comparisons
        .iter()
        .find(|c| c.metric == "pageout_flushes")
        .unwrap();
    assert_eq!(
        (own_flushes.baseline.as_str(), own_flushes.variant.as_str()),
        ("p3", "p4")
    );
    // One forced flush per page stored before patch 4, two after it.
    let ratio = own_flushes.b.mean / own_flushes.a.mean;
    assert!((1.9..2.1).contains(&ratio), "{own_flushes:?}");

    // Every step is an ordinary campaign of its own, inspectable, with the
    // kernels the hunt recorded.
    for step in &hunt.steps {
        let results = Results::load(&out.join(&step.dir).join("results.json")).unwrap();
        let variants: Vec<&str> = results.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(variants, ["base".to_string(), format!("p{}", step.patches)]);
        for (v, k) in results.variants.iter().zip(&step.kernels) {
            assert_eq!(v.kernel.commit, k.commit);
        }
        assert_eq!(
            results.variants[1].kernel.commit,
            hunt.series.patches[step.patches - 1].commit
        );
        assert!(out.join(&step.dir).join("report.md").is_file());
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("#### Patch 4's own interval: p4 against p3"),
        "{report}"
    );
    assert!(
        report.contains("the first patch with the regression is 4/7"),
        "{report}"
    );
    assert!(
        stdout.contains("patch 4's own interval, p4 against p3"),
        "{stdout}"
    );

    // The same command again: the hunt resumes, every step's boots are
    // kept, and it concludes the same.
    let boots_before: Vec<usize> = hunt
        .steps
        .iter()
        .map(|s| {
            Results::load(&out.join(&s.dir).join("results.json"))
                .unwrap()
                .boots
                .len()
        })
        .collect();
    let again = run(&bin, &campaign, &out);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("resuming the hunt"), "{stderr}");
    assert_eq!(
        stderr
            .matches("already complete, not measured again")
            .count(),
        hunt.steps.len(),
        "every step's boots kept: {stderr}"
    );
    assert!(!stderr.contains("warm-up 1/"), "a boot ran again: {stderr}");
    let resumed = Hunt::load(&out.join("bisect.json")).unwrap();
    assert_eq!(resumed.started_at, hunt.started_at);
    assert_eq!(resumed.steps.len(), hunt.steps.len());
    assert!(matches!(resumed.state, HuntState::Found { patch: 4, .. }));
    for (s, before) in resumed.steps.iter().zip(boots_before) {
        let results = Results::load(&out.join(&s.dir).join("results.json")).unwrap();
        assert_eq!(results.boots.len(), before, "{}", s.dir.display());
    }
}
