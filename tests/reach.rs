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

/// (series, the fuzz it needs, [(campaign, function it executes)]).
type Row = (&'static str, u32, &'static [(&'static str, &'static str)]);

const SERIES: &[Row] = &[
    (
        "patches/zswap-counter",
        0,
        &[("seed-000-counter", "mm/memcontrol.c: obj_cgroup_may_zswap")],
    ),
    (
        "patches/memcg-dfl-local-skip",
        0,
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
        0,
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
    ("tests/fixtures/reach/ksm-nice.patch", 0, &[]),
    // Real upstream series (tests/fixtures/outside-series, PROVENANCE.md in
    // each); the two that need fuzz 2 are refused without it.
    (
        "tests/fixtures/outside-series/zswap-skip-empty-invalidate",
        0,
        &[(
            "seed-003-reclaim-refault-cost",
            "mm/zswap.c: zswap_invalidate",
        )],
    ),
    (
        "tests/fixtures/outside-series/memcg-stat-tracing",
        0,
        &[(
            "seed-003-reclaim-refault-cost",
            "mm/memcontrol.c: __mod_memcg_lruvec_state",
        )],
    ),
    (
        "tests/fixtures/outside-series/page-alloc-pcp-free-high",
        0,
        &[(
            "seed-003-reclaim-refault-cost",
            "mm/page_alloc.c: free_unref_page_commit",
        )],
    ),
    (
        "tests/fixtures/outside-series/memcg-tracing-stack",
        2,
        &[
            ("seed-000-counter", "mm/memcontrol.c: do_flush_stats"),
            (
                "seed-002-dfl-rstat",
                "mm/memcontrol.c: mem_cgroup_flush_stats",
            ),
            (
                "seed-003-reclaim-refault-cost",
                "mm/memcontrol.c: __mod_memcg_state",
            ),
        ],
    ),
    (
        "tests/fixtures/outside-series/vmscan-skip-empty-memcg",
        2,
        &[(
            "seed-003-reclaim-refault-cost",
            "mm/vmscan.c: shrink_node_memcgs",
        )],
    ),
];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `patchbench ARGS` in the checkout.
fn patchbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("patchbench runs")
}

fn plan(series: &str, fuzz: u32) -> Output {
    assert!(
        Path::new("/usr/src/linux-source-6.12.tar.xz").exists(),
        "the kernel source is missing: run ci/setup-host.sh (Debian package linux-source-6.12)"
    );
    patchbench(&["plan", "--fuzz", &fuzz.to_string(), "--series", series])
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

/// The library workloads the plan says `run --series` runs besides.
fn library_runs(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .find_map(|l| l.split_once("the workload that runs each changed function most: "))
        .map(|(_, names)| names.split(", ").map(String::from).collect())
        .unwrap_or_default()
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
    for (series, fuzz, expected) in SERIES {
        if *fuzz > 0 {
            // Refused as git am refuses it, naming the fuzz that would do.
            let out = plan(series, 0);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(4), "{series}: {stderr}");
            assert!(
                stderr.contains(&format!("--fuzz {fuzz}")),
                "{series}: {stderr}"
            );
        }
        let out = plan(series, *fuzz);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{series}: {stderr}\n{stdout}");
        // A fuzzed series is measured with a warning that says so.
        assert_eq!(
            *fuzz > 0,
            stdout.contains("WARNING: \"") && stdout.contains("fuzz 2"),
            "{series}\n{stdout}"
        );
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
        // The library workloads `run --series` adds are planned too.
        let library = library_runs(&stdout);
        for name in &library {
            assert!(
                stdout.contains(&format!("\ncampaign {name} (")),
                "{series}: {name} is not planned\n{stdout}"
            );
        }
        if expected.is_empty() && !library.is_empty() {
            assert!(chosen.is_empty(), "{series}: {chosen:?}\n{stdout}");
            assert!(
                !stdout.contains("campaign smoke (built-in)")
                    && !stdout.contains(patchbench::reach::NOTHING_REACHED),
                "{series}: a library workload runs it, not the sanity check\n{stdout}"
            );
        } else if expected.is_empty() {
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

/// Beside the seeds' choice, the plan ranks the mm library by the
/// committed reach map: a change to ksmd's loop is first in ksm-prctl's
/// window (ksmd scans the whole process there: 1.25% of its kernel
/// instructions) and second in ksm-merge's (1.11%), and the plan names
/// ksm-prctl as the workload that runs the function most.
#[test]
fn reach_names_the_second_kernels_map_for_a_file_only_it_builds() {
    let out = patchbench(&["reach", "--file", "mm/kmemleak.c"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("a second kernel builds it: --map results/reach/linux-6.12-mm-kmemleak.json"),
        "{stderr}"
    );
    let out = patchbench(&[
        "reach",
        "--map",
        "results/reach/linux-6.12-mm-kmemleak.json",
        "--file",
        "mm/kmemleak.c",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("kmemleak_scan            mm-kmemleak-scan (4.485%"),
        "{stdout}"
    );
}

#[test]
fn the_plan_ranks_the_library_by_the_reach_map() {
    let out = plan("tests/fixtures/reach/ksm-nice.patch", 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let section: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("the mm library by the reach map"))
        .collect();
    assert!(
        section
            .get(1)
            .is_some_and(|l| l.contains("mm-ksm-prctl (ci/mm/ksm-prctl.yaml)")),
        "{stdout}"
    );
    assert!(
        section
            .get(3)
            .is_some_and(|l| l.contains("mm-ksm-merge (ci/mm/ksm-merge.yaml)")),
        "{stdout}"
    );
    assert!(
        section
            .iter()
            .any(|l| l.starts_with("  mm/ksm.c: ksm_scan_thread  mm-ksm-prctl (")),
        "{stdout}"
    );
    // The seeds' choice is unchanged: none of them runs KSM; run --series
    // runs ksm-prctl, and nothing else.
    assert!(chosen(&stdout).is_empty(), "{stdout}");
    assert_eq!(library_runs(&stdout), ["mm-ksm-prctl"], "{stdout}");
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
            "seed-004-swapin-margin-anon",
            "seed-003-reclaim-refault-cost",
            // The library's workload that runs the changed function most:
            // swapoff's try_to_unuse() charges every page it swaps in.
            "mm-swapoff"
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

/// One entry of the upstream corpus (tests/fixtures/upstream-mm, README.md
/// there): its directory, the fuzz it needs, each function `plan` says it
/// changes with the start of what it says of that function (the mm-library
/// workload that runs it most, or why none does), and the shipped campaigns
/// it chooses.
type UpstreamRow = (
    &'static str,
    u32,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

const NOT_RUN: &str = "not executed: built in";

const UPSTREAM_MM: &[UpstreamRow] = &[
    (
        "compaction-ubsan-order",
        0,
        &[(
            "mm/compaction.c: isolate_freepages_block",
            "mm-compaction (0.161%",
        )],
        &[],
    ),
    (
        "damon-core-commit-target-nid",
        0,
        &[("mm/damon/core.c: damos_commit", "mm-damon-tune (9.9e-4%")],
        &[],
    ),
    (
        "damon-reclaim-aggr-interval-zero",
        0,
        &[(
            "mm/damon/reclaim.c: damon_reclaim_apply_parameters",
            "mm-damon (0.001%",
        )],
        &[],
    ),
    (
        "damon-sysfs-attrs-cleanup",
        0,
        &[(
            "mm/damon/sysfs.c: damon_sysfs_context_add_dirs",
            "mm-damon (<= 0.003%",
        )],
        &[],
    ),
    (
        "damon-vaddr-no-pte-retry",
        0,
        &[
            (
                "mm/damon/vaddr.c: damon_mkold_pmd_entry",
                "mm-damon-tune (0.430%",
            ),
            (
                "mm/damon/vaddr.c: damon_young_pmd_entry",
                "mm-damon-tune (0.591%",
            ),
        ],
        &[],
    ),
    // Moves an #ifdef line past a function: no function's body changes.
    ("hmm-pmd-flags-ifdef", 0, &[], &[]),
    (
        "huge-memory-pmd-migration-entry",
        0,
        &[(
            "mm/huge_memory.c: split_huge_pmd_locked",
            "mm-fork-cow-thp (0.004%",
        )],
        &[],
    ),
    (
        "hugetlb-avoid-reserve-subpool",
        0,
        &[
            (
                "mm/hugetlb.c: dequeue_hugetlb_folio_vma",
                "mm-hugetlb-pool (<= 0.006%",
            ),
            (
                "mm/hugetlb.c: alloc_hugetlb_folio",
                "mm-hugetlb-pool (0.006%",
            ),
        ],
        &[],
    ),
    (
        "hugetlb-bootmem-interleaved-nodes",
        0,
        // __init, run at boot: kernel-boot's window is the boot.
        &[(
            "mm/hugetlb.c: hugetlb_bootmem_struct_page_init",
            "mm-kernel-boot (3.1e-6%",
        )],
        &[],
    ),
    (
        "hugetlb-sysctl-init-section",
        0,
        // Inlined into the __init hugetlb_init(), which the boot runs.
        &[(
            "mm/hugetlb.c: hugetlb_sysctl_init",
            "mm-kernel-boot (<= 4.7e-4%",
        )],
        &[],
    ),
    (
        "hwpoison-clean-page-no-sigbus",
        0,
        &[(
            "mm/memory-failure.c: kill_accessing_process",
            "mm-hwpoison (0.006%",
        )],
        &[],
    ),
    (
        "kmemleak-percpu-min-count",
        0,
        &[(
            "mm/kmemleak.c: kmemleak_alloc_percpu",
            "mm-kmemleak-scan (3.3e-6%",
        )],
        &[],
    ),
    (
        "kmemleak-phys-upper-bound",
        0,
        &[("mm/kmemleak.c: kmemleak_scan", "mm-kmemleak-scan (4.485%")],
        &[],
    ),
    (
        "kmemleak-print-pk",
        0,
        // Prints a leak a scan reported; no boot of the library's kmemleak
        // kernel has one (its leaking sample, samples/kmemleak, is a module).
        &[("mm/kmemleak.c: print_unreferenced", NOT_RUN)],
        &[],
    ),
    (
        "memory-failure-unpoison-offline",
        0,
        &[(
            "mm/memory-failure.c: unpoison_memory",
            "mm-hwpoison (0.015%",
        )],
        &[],
    ),
    (
        "mempolicy-migrate-to-node-no-vma",
        0,
        &[(
            "mm/mempolicy.c: migrate_to_node",
            "mm-numa-migrate-pages (<= 2.8e-4%",
        )],
        &[],
    ),
    (
        "mremap-partial-vma-at-zero",
        0,
        &[("mm/mremap.c: move_vma", "mm-mremap (1.407%")],
        &[],
    ),
    (
        "page-vma-mapped-hugetlb-check-pte",
        1,
        &[
            (
                "mm/page_vma_mapped.c: check_pte",
                "mm-numa-migrate-pages (0.834%",
            ),
            (
                "mm/page_vma_mapped.c: page_vma_mapped_walk",
                "mm-numa-migrate-pages (3.627%",
            ),
        ],
        &["seed-003-reclaim-refault-cost"],
    ),
    (
        "vmscan-accumulate-nr-demoted",
        0,
        &[("mm/vmscan.c: shrink_folio_list", "mm-memcg-reclaim (0.973%")],
        &["seed-003-reclaim-refault-cost"],
    ),
    (
        "vmscan-node-reclaim-release-barrier",
        0,
        &[("mm/vmscan.c: node_reclaim", "mm-node-reclaim (0.024%")],
        &[],
    ),
];

/// What the plan says of each changed function: the lines under "each
/// changed function, and the workload that runs it most".
fn runs_most(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("each changed function, and the workload"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim_start().to_string())
        .collect()
}

/// Every entry of the upstream corpus gets a result from `plan`: the
/// mm-library workload that runs a function it changes, with that
/// function's share, or the reason none does; and the shipped campaigns it
/// chooses. The corpus was picked by a rule stated in its README, not by
/// what `plan` makes of it, so the share aimed is whatever it is: 18 of 20.
#[test]
fn each_upstream_mm_commit_gets_a_workload_or_a_reason() {
    assert_eq!(
        UPSTREAM_MM.len(),
        std::fs::read_dir(repo_root().join("tests/fixtures/upstream-mm"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count(),
        "every corpus directory has a row"
    );
    let mut failures = Vec::new();
    let mut aimed = 0;
    for (name, fuzz, functions, seeds) in UPSTREAM_MM {
        let series = format!("tests/fixtures/upstream-mm/{name}");
        if *fuzz > 0 {
            let out = plan(&series, 0);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(4), "{series}: {stderr}");
            assert!(
                stderr.contains(&format!("--fuzz {fuzz}")),
                "{series}: {stderr}"
            );
        }
        let out = plan(&series, *fuzz);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{series}: {stderr}\n{stdout}");
        let expected: Vec<&str> = functions.iter().map(|(f, _)| *f).collect();
        if changed(&stdout) != expected {
            failures.push(format!(
                "{name}: changes {:?}, expected {expected:?}",
                changed(&stdout)
            ));
            continue;
        }
        let said = runs_most(&stdout);
        assert_eq!(said.len(), functions.len(), "{series}\n{stdout}");
        for ((function, what), line) in functions.iter().zip(&said) {
            let want = format!("{function}  {what}");
            if !line.starts_with(&want) {
                failures.push(format!("{name}: `{line}`, expected `{want}...`"));
            }
        }
        if functions.iter().any(|(_, w)| w.starts_with("mm-")) {
            aimed += 1;
        }
        let campaigns: Vec<String> = chosen(&stdout).into_iter().map(|(c, _)| c).collect();
        if campaigns != *seeds {
            failures.push(format!("{name}: chose {campaigns:?}, expected {seeds:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!((aimed, UPSTREAM_MM.len()), (18, 20));
}

/// `run --suite mm` runs the whole library: with its budget spent before
/// the first, each campaign of ci/mm/ is named as not run, nothing is
/// built, and the same --out is how the rest would run.
#[test]
fn a_suite_whose_budget_is_spent_names_every_library_campaign_not_run() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["run", "--suite", "mm", "--budget", "0s", "--out"])
        .arg(out_dir.path())
        .current_dir(repo_root())
        .output()
        .expect("patchbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut library: Vec<String> = std::fs::read_dir(repo_root().join("ci/mm"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && !n.starts_with('.'))
        .map(|n| format!("ci/mm/{n}"))
        .collect();
    library.sort();
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("NOT RUN: the 0s budget was spent before "))
        .unwrap_or_else(|| panic!("no NOT RUN line:\n{stdout}"));
    let (count, names) = line.split_once(" of the campaigns started: ").unwrap();
    assert_eq!(count, library.len().to_string(), "{stdout}");
    assert_eq!(names.split(", ").collect::<Vec<_>>(), library, "{stdout}");
    assert!(stdout.contains("with the same --out"), "{stdout}");
    assert_eq!(std::fs::read_dir(out_dir.path()).unwrap().count(), 0);
}
