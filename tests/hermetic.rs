//! The hermetic tier: whole campaigns through the real `patchbench`
//! binary, against fake `make` and `qemu-system-x86_64` (tests/fakes),
//! in seconds: no kernel tree tarball, no QEMU, no KVM, no root. Each
//! test makes a small git tree (a Makefile, Kconfig files, a few `.c`
//! files) and a series of `git format-patch` mails against it; a patch
//! that adds a `patchbench-fake-effect:` line changes what the fake guest
//! measures on every kernel built from it.
//!
//! This binary is also the fakes: `main` first asks
//! `patchbench_fakes::dispatch` whether it was started as `make`, `gcc`
//! or `qemu-system-x86_64` (the symlinks each test puts alone on
//! patchbench's `PATH`), and acts as that program if so. Otherwise it
//! runs the tests below, libtest's way (filters, `--exact`, `--list`),
//! in parallel.
//!
//! Run alone: `cargo test --test hermetic`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use patchbench::results::history::History;
use patchbench::results::hunt::{Hunt, HuntState, StepOutcome, StepRole};
use patchbench::results::{Results, VerdictRecord};
use patchbench_fakes::{ENV_BOOT_NOISE, ENV_KILL, ENV_KVM, ENV_LOG, ENV_NOISE};

const TESTS: &[(&str, fn())] = &[
    (
        "the_boot_is_measured_once_per_boot_with_no_disk",
        the_boot_is_measured_once_per_boot_with_no_disk,
    ),
    (
        "every_benchmark_runs_through_the_fakes_and_a_missing_feature_is_named",
        every_benchmark_runs_through_the_fakes_and_a_missing_feature_is_named,
    ),
    (
        "a_kvm_that_cannot_create_a_vm_exits_3_before_any_build",
        a_kvm_that_cannot_create_a_vm_exits_3_before_any_build,
    ),
    (
        "kvm_with_icount_is_refused_before_anything_runs",
        kvm_with_icount_is_refused_before_anything_runs,
    ),
    (
        "a_second_cpu_that_icount_never_runs_is_refused_before_any_build",
        a_second_cpu_that_icount_never_runs_is_refused_before_any_build,
    ),
    (
        "a_suite_names_each_refused_campaign_and_runs_the_rest",
        a_suite_names_each_refused_campaign_and_runs_the_rest,
    ),
    (
        "doctor_calls_kvm_usable_only_where_the_trial_guest_ran",
        doctor_calls_kvm_usable_only_where_the_trial_guest_ran,
    ),
    (
        "auto_falls_back_to_tcg_on_a_closed_dev_kvm_and_the_report_says_why",
        auto_falls_back_to_tcg_on_a_closed_dev_kvm_and_the_report_says_why,
    ),
    (
        "a_regressing_series_exits_1_with_the_regression_found",
        a_regressing_series_exits_1_with_the_regression_found,
    ),
    ("an_improving_series_exits_0", an_improving_series_exits_0),
    (
        "a_killed_qemu_is_infrastructure_and_keeps_what_was_measured",
        a_killed_qemu_is_infrastructure_and_keeps_what_was_measured,
    ),
    (
        "an_interrupted_run_resumes_from_its_measured_boots",
        an_interrupted_run_resumes_from_its_measured_boots,
    ),
    (
        "an_identical_boot_is_replayed_not_booted",
        an_identical_boot_is_replayed_not_booted,
    ),
    (
        "a_kvm_campaign_samples_in_rounds_judged_by_boot_and_says_what_it_can_detect",
        a_kvm_campaign_samples_in_rounds_judged_by_boot_and_says_what_it_can_detect,
    ),
    (
        "a_sequential_campaign_stops_at_the_look_that_decides",
        a_sequential_campaign_stops_at_the_look_that_decides,
    ),
    (
        "shards_merge_into_the_unsharded_run",
        shards_merge_into_the_unsharded_run,
    ),
    (
        "a_hunt_names_the_patch_that_regressed",
        a_hunt_names_the_patch_that_regressed,
    ),
    (
        "a_hunt_skips_a_prefix_that_does_not_build",
        a_hunt_skips_a_prefix_that_does_not_build,
    ),
    (
        "a_failed_build_is_infrastructure_naming_the_error",
        a_failed_build_is_infrastructure_naming_the_error,
    ),
    (
        "watch_finds_the_nights_step_and_hunts_its_commit",
        watch_finds_the_nights_step_and_hunts_its_commit,
    ),
    (
        "the_fake_agent_reports_what_the_spec_lists",
        the_fake_agent_reports_what_the_spec_lists,
    ),
    (
        "the_fakes_refuse_what_they_do_not_understand",
        the_fakes_refuse_what_they_do_not_understand,
    ),
];

fn main() {
    if let Some(code) = patchbench_fakes::dispatch() {
        std::process::exit(code);
    }
    std::process::exit(run_tests(std::env::args().skip(1).collect()));
}

/// libtest's command line, as far as cargo and nextest use it: name
/// filters, `--exact`, `--list`, `--test-threads N`; other flags ignored.
fn run_tests(args: Vec<String>) -> i32 {
    let (mut filters, mut exact, mut list, mut threads) = (Vec::new(), false, false, None);
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--exact" => exact = true,
            "--list" => list = true,
            "--test-threads" => threads = it.next().and_then(|n| n.parse().ok()),
            a if a.starts_with("--test-threads=") => threads = a[15..].parse().ok(),
            "--format" | "--color" | "--skip" | "-Z" => {
                it.next();
            }
            a if a.starts_with('-') => {}
            _ => filters.push(arg),
        }
    }
    let chosen: Vec<&(&str, fn())> = TESTS
        .iter()
        .filter(|(name, _)| {
            filters.is_empty()
                || filters.iter().any(|f| {
                    if exact {
                        name == f
                    } else {
                        name.contains(f.as_str())
                    }
                })
        })
        .collect();
    if list {
        for (name, _) in &chosen {
            println!("{name}: test");
        }
        return 0;
    }
    let started = Instant::now();
    println!("\nrunning {} tests", chosen.len());
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().max(2)))
        .max(1);
    let queue = std::sync::Mutex::new(chosen.iter());
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let Some((name, test)) = queue.lock().unwrap().next().copied() else {
                        return;
                    };
                    let one = Instant::now();
                    let ok = std::thread::Builder::new()
                        .name(name.to_string())
                        .spawn(test)
                        .unwrap()
                        .join()
                        .is_ok();
                    println!(
                        "test {name} ... {} ({:.1}s)",
                        if ok { "ok" } else { "FAILED" },
                        one.elapsed().as_secs_f64()
                    );
                    if !ok {
                        failed.lock().unwrap().push(name);
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap();
    if !failed.is_empty() {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        chosen.len() - failed.len(),
        failed.len(),
        TESTS.len() - chosen.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() { 0 } else { 101 }
}

// ---------------------------------------------------------------------------
// The world a test runs in: a tree, a series, the fakes, a cache.

/// One test's directory: the fakes as `bin/`, the tree, the cache, and
/// the fakes' log.
struct World {
    dir: tempfile::TempDir,
}

/// A patch of a series: its subject, and the file it rewrites with the
/// line it appends.
struct Patch {
    subject: &'static str,
    file: &'static str,
    line: String,
    /// Remove `line` (which an earlier patch added) instead of appending it.
    remove: bool,
}

impl Patch {
    fn comment(subject: &'static str, file: &'static str) -> Patch {
        Patch {
            subject,
            file,
            line: format!("/* {subject} */"),
            remove: false,
        }
    }

    fn effect(subject: &'static str, file: &'static str, metric: &str, pct: f64) -> Patch {
        Patch {
            subject,
            file,
            line: format!("/* {subject}: patchbench-fake-effect: {metric} {pct} */"),
            remove: false,
        }
    }

    /// A line the fake compiler refuses, and the patch that takes it out.
    fn breaking(subject: &'static str, file: &'static str) -> (Patch, Patch) {
        let line = format!("int broken = {};", patchbench_fakes::ERROR_MARKER);
        (
            Patch {
                subject,
                file,
                line: line.clone(),
                remove: false,
            },
            Patch {
                subject: "fix the build",
                file,
                line,
                remove: true,
            },
        )
    }
}

/// The base tree's files.
const TREE: &[(&str, &str)] = &[
    (
        "Makefile",
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION = -hermetic\n",
    ),
    (
        "Kconfig",
        "mainmenu \"hermetic\"\n\nconfig PVH\n\tbool \"PVH entry\"\n\nconfig IKCONFIG_PROC\n\tbool \"/proc/config.gz\"\n\n\
         config VIRT_CPU_ACCOUNTING_GEN\n\tbool \"precise cputime\"\n\n\
         config CONTEXT_TRACKING_USER_FORCE\n\tbool \"force context tracking\"\n\tdepends on VIRT_CPU_ACCOUNTING_GEN\n\n\
         config IRQ_TIME_ACCOUNTING\n\tbool \"irq time\"\n\n\
         config PARAVIRT_TIME_ACCOUNTING\n\tbool \"paravirt steal time\"\n\n\
         config HZ_250\n\tbool \"250 Hz\"\n\nconfig HZ_1000\n\tbool \"1000 Hz\"\n\nconfig HZ\n\tint\n\tdefault 1000\n\nsource \"mm/Kconfig\"\n",
    ),
    (
        "mm/Kconfig",
        "config SWAP\n\tbool \"swap\"\n\tdefault y\n\nconfig ZSWAP\n\tbool \"zswap\"\n\tdepends on SWAP\n\n\
         config TRANSPARENT_HUGEPAGE\n\tbool \"thp\"\n\nconfig KSM\n\tbool \"ksm\"\n\n\
         config HUGETLBFS\n\tbool \"hugetlbfs\"\n\nconfig NUMA\n\tbool \"numa\"\n\n\
         config MIGRATION\n\tbool \"migration\"\n\nconfig COMPACTION\n\tbool \"compaction\"\n\n\
         config USERFAULTFD\n\tbool \"userfaultfd\"\n\nconfig LRU_GEN\n\tbool \"lru_gen\"\n\n\
         config MEMCG\n\tbool \"memcg\"\n\nconfig ZRAM\n\tbool \"zram\"\n\n\
         config SHMEM\n\tbool \"shmem\"\n\nconfig BLK_DEV_RAM\n\tbool \"brd\"\n\n\
         config EXT2_FS\n\tbool \"ext2\"\n\n\
         config DAMON_SYSFS\n\tbool \"damon sysfs\"\n\n\
         config DAMON_RECLAIM\n\tbool \"damon reclaim\"\n\n\
         config MEMORY_FAILURE\n\tbool \"memory failure\"\n\n\
         config HWPOISON_INJECT\n\tbool \"hwpoison injector\"\n\n\
         config DEBUG_KMEMLEAK\n\tbool \"kmemleak\"\n",
    ),
    ("init/main.c", "int start_kernel(void)\n{\n\treturn 0;\n}\n"),
    (
        "mm/vmscan.c",
        "int shrink_folio_list(void)\n{\n\treturn 0;\n}\n",
    ),
    ("mm/zswap.c", "int zswap_store(void)\n{\n\treturn 0;\n}\n"),
    (
        "mm/memcontrol.c",
        "int mem_cgroup_flush_stats(void)\n{\n\treturn 0;\n}\n",
    ),
];

/// The campaign's one fragment: options the tree declares.
const FRAGMENT: &str = "CONFIG_SWAP=y\nCONFIG_ZSWAP=y\nCONFIG_PVH=y\nCONFIG_IKCONFIG_PROC=y\n";

fn signature() -> git2::Signature<'static> {
    git2::Signature::new(
        "patchbench tests",
        "tests@patchbench.invalid",
        &git2::Time::new(1_800_000_000, 0),
    )
    .unwrap()
}

impl World {
    /// A world with the fakes, the tree, and `patches` as a series of
    /// format-patch mails in `series/`.
    fn new(patches: &[Patch]) -> World {
        let world = World {
            dir: tempfile::Builder::new()
                .prefix("patchbench-hermetic-")
                .tempdir()
                .unwrap(),
        };
        let exe = std::env::current_exe().unwrap();
        patchbench_fakes::install(&world.bin(), &exe).unwrap();
        world.write_tree(patches);
        std::fs::write(world.path("fake.config"), FRAGMENT).unwrap();
        // The world's host has hardware KVM loaded; ENV_KVM says whether
        // its trial guest runs.
        for module in ["kvm", "kvm_intel"] {
            std::fs::create_dir_all(world.path("sys-module").join(module)).unwrap();
        }
        world
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn bin(&self) -> PathBuf {
        self.path("bin")
    }

    /// The tree's repository (HEAD at the base), and the series as mails:
    /// each patch a commit on the one before, never on a ref.
    fn write_tree(&self, patches: &[Patch]) {
        let root = self.path("tree");
        let repo = git2::Repository::init(&root).unwrap();
        let mut files: Vec<(String, String)> = TREE
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        let commit_files = |files: &[(String, String)],
                            parent: Option<&git2::Commit>,
                            subject: &str,
                            head: bool| {
            let mut builder = git2::build::TreeUpdateBuilder::new();
            for (path, text) in files {
                let blob = repo.blob(text.as_bytes()).unwrap();
                builder.upsert(path, blob, git2::FileMode::Blob);
            }
            let empty = repo.treebuilder(None).unwrap().write().unwrap();
            let empty = repo.find_tree(empty).unwrap();
            let tree = builder.create_updated(&repo, &empty).unwrap();
            let tree = repo.find_tree(tree).unwrap();
            let parents: Vec<&git2::Commit> = parent.into_iter().collect();
            let message = format!("{subject}\n\nA patch of patchbench's hermetic tests.\n");
            repo.commit(
                head.then_some("HEAD"),
                &signature(),
                &signature(),
                &message,
                &tree,
                &parents,
            )
            .unwrap()
        };
        let base = commit_files(&files, None, "hermetic base", true);
        let series = self.path("series");
        std::fs::create_dir_all(&series).unwrap();
        let mut parent = repo.find_commit(base).unwrap();
        for (k, patch) in patches.iter().enumerate() {
            let entry = files
                .iter_mut()
                .find(|(p, _)| p == patch.file)
                .unwrap_or_else(|| panic!("no {} in the tree", patch.file));
            if patch.remove {
                entry.1 = entry.1.replace(&format!("{}\n", patch.line), "");
            } else {
                entry.1.push_str(&patch.line);
                entry.1.push('\n');
            }
            let oid = commit_files(&files, Some(&parent), patch.subject, false);
            let commit = repo.find_commit(oid).unwrap();
            let mut opts = git2::EmailCreateOptions::new();
            opts.start_number(k + 1);
            let email = git2::Email::from_commit(&commit, &mut opts).unwrap();
            std::fs::write(
                series.join(format!("{:04}-patch.patch", k + 1)),
                email.as_slice(),
            )
            .unwrap();
            parent = commit;
        }
        // The working tree as HEAD has it (a local repository's checkout).
        repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .unwrap();
    }

    /// Commit `files` (path, text) on the tree's HEAD, and check them out:
    /// the base every later campaign reads.
    fn commit_on_base(&self, files: &[(String, String)], subject: &str) {
        let repo = git2::Repository::open(self.path("tree")).unwrap();
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        let mut builder = git2::build::TreeUpdateBuilder::new();
        for (path, text) in files {
            let blob = repo.blob(text.as_bytes()).unwrap();
            builder.upsert(path, blob, git2::FileMode::Blob);
        }
        let tree = builder
            .create_updated(&repo, &head.tree().unwrap())
            .unwrap();
        let tree = repo.find_tree(tree).unwrap();
        repo.commit(
            Some("HEAD"),
            &signature(),
            &signature(),
            subject,
            &tree,
            &[&head],
        )
        .unwrap();
        repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .unwrap();
    }

    /// A campaign on the tree and series, with `protocol` as its
    /// protocol section's body (indented two spaces), written to
    /// `<name>.yaml`.
    fn campaign(&self, name: &str, protocol: &str) -> PathBuf {
        self.campaign_in(name, protocol, "icount: true\n  accel: tcg")
    }

    /// A campaign on the host's clock: KVM where the fake host's trial
    /// guest runs (`vm.accel: auto`, no icount), else plain TCG. One vCPU
    /// online, so that a KVM boot's pinning (a core for it, one kept for
    /// QEMU's main loop and patchbench) fits a 2-core host.
    fn real_time_campaign(&self, name: &str, protocol: &str) -> PathBuf {
        self.campaign_in(name, protocol, "accel: auto")
    }

    /// A campaign whose `vm:` section asks for `lane` (its `icount` and
    /// `accel` lines).
    fn campaign_in(&self, name: &str, protocol: &str, lane: &str) -> PathBuf {
        let online = if lane.contains("icount: true") { 2 } else { 1 };
        let text = format!(
            "name: {name}\n\
             tree:\n  git:\n    path: {tree}\n\
             series: {series}\n\
             kernel:\n  base: tinyconfig\n  fragments:\n    - {fragment}\n\
             vm:\n  memory: 1 GiB\n  cpus: {{possible: 4, online: {online}}}\n  {lane}\n  boot_timeout: 30s\n  run_timeout: 60s\n  swap_size: 64 MiB\n\
             zswap: {{enabled: true, compressor: lzo, zpool: zsmalloc, max_pool_percent: 20}}\n\
             thp: never\n\
             {WORLD_WORKLOAD}\
             protocol:\n{protocol}",
            tree = self.path("tree").display(),
            series = self.path("series").display(),
            fragment = self.path("fake.config").display(),
        );
        let path = self.path(&format!("{name}.yaml"));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `patchbench ARGS` with only the fakes on `PATH`, the world's cache,
    /// and `env` set; its output.
    fn patchbench<S: AsRef<OsStr>>(&self, args: &[S], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchbench"));
        cmd.args(args)
            .arg("--cache-dir")
            .arg(self.path("cache"))
            .env_clear()
            .env("PATH", self.bin())
            .env("TMPDIR", self.dir.path())
            // The agent never runs in the fake guest: the initramfs needs
            // a static ELF as /init, and busybox is the one the image
            // takes anyway.
            .env("PATCHBENCH_AGENT", "/bin/busybox")
            .env(ENV_LOG, self.path("fakes.log"))
            .env(ENV_NOISE, "0.2")
            .env(
                patchbench::vm::accel::ENV_SYS_MODULE,
                self.path("sys-module"),
            );
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn run(&self, campaign: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let mut args: Vec<&OsStr> = vec!["run".as_ref(), campaign.as_os_str(), "--out".as_ref()];
        let out = self.path(out);
        args.push(out.as_os_str());
        args.extend(extra.iter().map(|a| OsStr::new(*a)));
        self.patchbench(&args, env)
    }

    fn results(&self, out: &str) -> Results {
        Results::load(&self.path(out).join("results.json")).unwrap()
    }

    /// The fakes' log lines, and forget them.
    fn take_log(&self) -> Vec<String> {
        let path = self.path("fakes.log");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        text.lines().map(String::from).collect()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The verdict of the main condition's `metric`.
fn verdict(results: &Results, metric: &str) -> VerdictRecord {
    row(results, metric).verdict
}

fn row<'r>(results: &'r Results, metric: &str) -> &'r patchbench::results::ComparisonRecord {
    results
        .judgement
        .as_ref()
        .expect("judged")
        .rows
        .iter()
        .find(|r| r.metric == metric && r.condition.is_none())
        .unwrap_or_else(|| panic!("no comparison of {metric}"))
}

/// The fakes' boots in a log: `qemu LABEL ...` lines, by label.
fn boots_in(log: &[String]) -> Vec<String> {
    // Sorted: the boots of a wave start side by side, in no set order.
    let mut labels: Vec<String> = log
        .iter()
        .filter_map(|l| l.strip_prefix("qemu "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    labels.sort();
    labels
}

const ABA: &str = "  order: ABA\n  warmups: 1\n  samples: 3\n";

/// The workload section of every campaign `World::campaign` writes; a
/// test that runs another kind replaces it.
const WORLD_WORKLOAD: &str = "workload:\n  kind: zswap-pageout\n  workers: 1\n  mib_per_worker: 32\n  zswap_max: 64 MiB\n  count_flushes: true\n";

/// Two patches, the second making PAGEOUT `pct` percent slower.
fn two_patches(pct: f64) -> Vec<Patch> {
    vec![
        Patch::comment("mm: zswap: a comment", "mm/zswap.c"),
        Patch::effect(
            "mm: vmscan: the change",
            "mm/vmscan.c",
            "pageout_cpu_ns",
            pct,
        ),
    ]
}

// ---------------------------------------------------------------------------
// The tests.

/// A whole A/B/A′ campaign: both kernels built by the fake make (B
/// incrementally, rebuilding only what the series touched), three boots of
/// one warm-up and three samples, PAGEOUT 10% slower in B: a regression,
/// exit code 1, and nothing else called.
fn a_regressing_series_exits_1_with_the_regression_found() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.campaign("regress", ABA);
    let output = world.run(&campaign, "out", &[], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("the patch regressed: pageout_cpu_ns"), "{err}");
    let results = world.results("out");
    let labels: Vec<&str> = results.boots.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["A", "B", "A'"]);
    for boot in &results.boots {
        assert!(boot.complete, "{}", boot.label);
        assert_eq!(
            (boot.warmups.len(), boot.samples.len()),
            (1, 3),
            "{}",
            boot.label
        );
        let facts = boot.facts.as_ref().unwrap();
        assert_eq!(facts.kernel_release, "6.12.0-hermetic");
        assert!(facts.cputime.as_ref().unwrap().is_precise(), "{facts:?}");
        assert_eq!(facts.clocksource.as_deref(), Some("tsc"));
        assert!(world.path("out").join(&boot.console_log).is_file());
    }
    // The host's facts: QEMU's version from the fake's --version.
    let host_facts = results.host.host_facts.as_ref().unwrap();
    assert_eq!(host_facts.qemu_version.as_deref(), Some("7.2.0"));
    assert_eq!(
        verdict(&results, "pageout_cpu_ns"),
        VerdictRecord::Regression
    );
    let pageout = row(&results, "pageout_cpu_ns");
    let ratio = pageout.b.mean / pageout.a.mean;
    assert!((1.09..1.11).contains(&ratio), "{pageout:?}");
    for metric in [
        "verify_cpu_ns",
        "total_cpu_ns",
        "zswpout_pages",
        "pageout_flushes",
    ] {
        assert_eq!(
            verdict(&results, metric),
            VerdictRecord::NoClearDifference,
            "{metric}"
        );
    }
    assert_eq!(
        results.judgement.as_ref().unwrap().regressed,
        ["pageout_cpu_ns"]
    );
    // B is another kernel, built from A's objects: only the two files the
    // series changed were compiled again, both for the series.
    let (a, b) = (&results.variants[0].kernel, &results.variants[1].kernel);
    assert_ne!(a.bzimage_sha256, b.bzimage_sha256);
    assert!(b.incremental, "{b:?}");
    let rebuilt: Vec<&str> = b.rebuilt.iter().map(|r| r.object.as_str()).collect();
    assert_eq!(rebuilt, ["mm/vmscan.o", "mm/zswap.o"], "{:?}", b.rebuilt);
    let report = std::fs::read_to_string(world.path("out/report.md")).unwrap();
    assert!(report.contains("pageout_cpu_ns"), "{report}");
    let log = world.take_log();
    assert_eq!(boots_in(&log), ["A", "A'", "B"]);
    // The same run again: every boot is kept, nothing is built or booted.
    let again = world.run(&campaign, "out", &[], &[]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert_eq!(world.take_log(), Vec::<String>::new());
}

/// The same series made 10% faster: an improvement, exit code 0.
fn an_improving_series_exits_0() {
    let world = World::new(&two_patches(-10.0));
    let campaign = world.campaign("improve", ABA);
    let output = world.run(&campaign, "out", &[], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = world.results("out");
    assert_eq!(
        verdict(&results, "pageout_cpu_ns"),
        VerdictRecord::Improvement
    );
    assert!(results.judgement.as_ref().unwrap().regressed.is_empty());
}

/// QEMU killed by a signal in boot B, after two of its samples: the
/// host's failure (exit code 3), named with its boot and console log; A's
/// boot and B's two samples stay in results.json, and A′ never boots.
fn a_killed_qemu_is_infrastructure_and_keeps_what_was_measured() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.campaign("killed", ABA);
    let output = world.run(&campaign, "out", &[], &[(ENV_KILL, "B:2")]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(
        err.contains("boot B: QEMU was killed") && err.contains("console log"),
        "{err}"
    );
    let results = world.results("out");
    assert_eq!(results.boots.len(), 2);
    let (a, b) = (&results.boots[0], &results.boots[1]);
    assert!(a.complete && a.samples.len() == 3, "{a:?}");
    assert!(!b.complete, "{b:?}");
    assert_eq!(b.samples.len(), 2);
    assert!(results.judgement.is_none(), "a stopped run is not judged");
    assert_eq!(boots_in(&world.take_log()), ["A", "B"]);
}

/// A run whose QEMU died in A′ is run again with the same --out: A and B
/// are read back from disk, not booted again, A′ boots from the start, the
/// kernels come from the cache, and the run ends as an uninterrupted one.
fn an_interrupted_run_resumes_from_its_measured_boots() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.campaign("resume", ABA);
    let first = world.run(&campaign, "out", &[], &[(ENV_KILL, "A':1")]);
    assert_eq!(first.status.code(), Some(3), "{}", stderr(&first));
    let interrupted = world.results("out");
    assert_eq!(boots_in(&world.take_log()), ["A", "A'", "B"]);
    let second = world.run(&campaign, "out", &[], &[]);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(
        err.contains("boot(s) A, B already complete, not measured again"),
        "{err}"
    );
    let log = world.take_log();
    assert_eq!(boots_in(&log), ["A'"], "{log:?}");
    assert!(
        !log.iter().any(|l| l.starts_with("make")),
        "rebuilt: {log:?}"
    );
    let resumed = world.results("out");
    assert_eq!(resumed.started_at, interrupted.started_at);
    for k in 0..2 {
        assert_eq!(
            resumed.boots[k].samples, interrupted.boots[k].samples,
            "boot {k}"
        );
    }
    assert!(resumed.boots[2].complete && resumed.boots[2].samples.len() == 3);
    // The same figures as a run never interrupted.
    let straight = world.run(&campaign, "straight", &["--fresh-boots"], &[]);
    assert_eq!(straight.status.code(), Some(1));
    let straight = world.results("straight");
    for (r, s) in resumed.boots.iter().zip(&straight.boots) {
        assert_eq!(r.samples, s.samples, "boot {}", r.label);
    }
    assert_eq!(
        verdict(&resumed, "pageout_cpu_ns"),
        VerdictRecord::Regression
    );
}

/// Under icount a boot whose inputs ran before is replayed from the cache:
/// a second series on the same base boots only its B, with A's and A′'s
/// records those of the first run, marked replayed, and the report says
/// so; `--fresh-boots` boots all three again, to the same figures.
fn an_identical_boot_is_replayed_not_booted() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.campaign("replay", ABA);
    let first = world.run(&campaign, "first", &[], &[]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    assert_eq!(boots_in(&world.take_log()), ["A", "A'", "B"]);
    let first = world.results("first");
    assert!(first.boots.iter().all(|b| !b.replayed));

    // The same campaign into another directory: nothing boots.
    let again = world.run(&campaign, "again", &[], &[]);
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert!(boots_in(&world.take_log()).is_empty(), "{err}");
    assert!(err.contains("boot A: replayed from the cache"), "{err}");
    let again = world.results("again");
    for (a, f) in again.boots.iter().zip(&first.boots) {
        assert!(a.replayed && a.complete, "boot {}", a.label);
        assert_eq!(a.samples, f.samples, "boot {}", a.label);
        let log = world.path("again").join(&a.console_log);
        assert!(log.is_file(), "{} has its console log", a.label);
    }
    let report = std::fs::read_to_string(world.path("again/report.md")).unwrap();
    assert!(
        report.contains("Replayed from the cache, not booted: A, B, A'"),
        "{report}"
    );

    // --fresh-boots boots every kernel, to the same figures.
    let fresh = world.run(&campaign, "fresh", &["--fresh-boots"], &[]);
    assert_eq!(fresh.status.code(), Some(1), "{}", stderr(&fresh));
    assert_eq!(boots_in(&world.take_log()), ["A", "A'", "B"]);
    let fresh = world.results("fresh");
    for (n, f) in fresh.boots.iter().zip(&first.boots) {
        assert!(!n.replayed);
        assert_eq!(n.samples, f.samples, "boot {}", n.label);
    }
}

/// A sequential campaign with a budget of three rounds stops at its first
/// look when every primary metric is decided (a 10% regression); on the
/// band's edge (2%) it looks after every round and spends the budget.
fn a_sequential_campaign_stops_at_the_look_that_decides() {
    let protocol = "  order: ABA\n  warmups: 1\n  samples: 3\n  sequential: {rounds: 3}\n";
    let decided = World::new(&two_patches(10.0));
    let output = decided.run(&decided.campaign("seq", protocol), "out", &[], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("look 1 of 3: every primary metric decided"),
        "{err}"
    );
    let results = decided.results("out");
    let s = results.protocol.sequential.as_ref().unwrap();
    assert_eq!(s.looks.len(), 1, "{s:?}");
    assert!(s.looks[0].undecided.is_empty());
    assert_eq!(results.boots.len(), 3);
    assert_eq!(
        verdict(&results, "pageout_cpu_ns"),
        VerdictRecord::Regression
    );

    let edge = World::new(&two_patches(2.0));
    let output = edge.run(&edge.campaign("seq", protocol), "out", &[], &[]);
    let err = stderr(&output);
    assert!(matches!(output.status.code(), Some(0 | 1)), "{err}");
    let results = edge.results("out");
    let s = results.protocol.sequential.as_ref().unwrap();
    assert_eq!(s.looks.len(), 3, "{s:?}");
    assert!(
        s.looks
            .iter()
            .all(|l| l.undecided.iter().any(|m| m.contains("pageout_cpu_ns"))),
        "{s:?}"
    );
    assert_eq!(results.boots.len(), 9);
    assert!(err.contains("the budget's 3 round(s) spent"), "{err}");
}

/// A campaign on the host's clock, on a host whose KVM runs a guest, with
/// a boot-to-boot effect of up to 1%: KVM, rounds of A, B, A' by default,
/// each boot one observation; no look decides before B has three boots;
/// after the first round it says what its budget can detect; the report
/// carries KVM's banner and both statements.
fn a_kvm_campaign_samples_in_rounds_judged_by_boot_and_says_what_it_can_detect() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.real_time_campaign("kvm", ABA);
    let kvm_host = [(ENV_KVM, "runs"), (ENV_BOOT_NOISE, "1")];
    let output = world.run(&campaign, "out", &[], &kvm_host);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let results = world.results("out");
    assert_eq!(results.host.lane, patchbench::model::Lane::Kvm);
    let s = results
        .protocol
        .sequential
        .as_ref()
        .expect("rounds under KVM");
    assert_eq!(s.rounds, patchbench::model::sequential::KVM_ROUNDS);
    let looks = s.looks.len();
    assert!((3..=s.rounds as usize).contains(&looks), "{s:?}");
    assert!(
        s.looks[..2].iter().all(|l| !l.undecided.is_empty()),
        "with one or two B boots no look decides: {s:?}"
    );
    assert!(s.looks[looks - 1].undecided.is_empty(), "{s:?}");
    assert_eq!(results.boots.len(), 3 * looks);
    // Each boot's one online vCPU on a core of its own, QEMU's other
    // threads elsewhere.
    for boot in &results.boots {
        let pinned = boot
            .pinned
            .as_ref()
            .unwrap_or_else(|| panic!("{}", boot.label));
        assert_eq!(pinned.vcpus.len(), 1, "{pinned:?}");
        assert!(
            !pinned.rest.is_empty() && !pinned.rest.contains(&pinned.vcpus[0]),
            "{pinned:?}"
        );
    }
    let pageout = row(&results, "pageout_cpu_ns");
    assert_eq!(pageout.verdict, VerdictRecord::Regression);
    assert!(pageout.options.by_boot);
    assert_eq!(
        (pageout.a.n, pageout.b.n),
        (2 * looks, looks),
        "one observation a boot"
    );
    // Stated once, after the first round, before the rounds that follow.
    let stated = s
        .detectable
        .iter()
        .find(|d| d.metric == "pageout_cpu_ns")
        .unwrap_or_else(|| panic!("{s:?}"));
    assert_eq!(stated.round, 1);
    assert!(stated.fall_pct < 0.0 && stated.rise_pct > 0.0, "{stated:?}");
    let note = "detectable: pageout_cpu_ns: at round 1's noise";
    let (said, look_2) = (err.find(note), err.find("look 2 of 8"));
    assert!(said.is_some() && said < look_2, "{err}");
    let report = std::fs::read_to_string(world.path("out").join("report.md")).unwrap();
    for words in [
        "Accelerator: KVM",
        "host: Linux",
        "Judged by boot: under KVM",
        "Detectable: pageout_cpu_ns: at round 1's noise",
    ] {
        assert!(report.contains(words), "{words}: {report}");
    }
}

/// The round's three boots as three shards (`run --shard i/3`, one boot
/// each, nothing judged), merged by `patchbench merge` into the same
/// judgement as the unsharded run, with its exit code.
fn shards_merge_into_the_unsharded_run() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.campaign("shards", ABA);
    // On a host whose KVM runs a guest, with `--accel auto`: the icount
    // campaign stays on icount, which is what makes its shards comparable.
    let kvm_host = [(ENV_KVM, "runs")];
    let whole = world.run(&campaign, "whole", &["--accel", "auto"], &kvm_host);
    assert_eq!(whole.status.code(), Some(1), "{}", stderr(&whole));
    let lane = world.results("whole").host;
    assert_eq!(lane.lane, patchbench::model::Lane::Icount);
    assert!(
        lane.accel_reason
            .contains("KVM is usable on this host, and not used"),
        "{}",
        lane.accel_reason
    );
    world.take_log();
    let mut shards = Vec::new();
    for i in 1..=3 {
        let out = format!("s{i}");
        let output = world.run(
            &campaign,
            &out,
            &[
                "--shard",
                &format!("{i}/3"),
                "--fresh-boots",
                "--accel",
                "auto",
            ],
            &kvm_host,
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let shard = world.results(&out);
        assert_eq!(shard.boots.len(), 1, "shard {i}");
        assert_eq!(shard.boots[0].index, i - 1);
        assert!(shard.judgement.is_none(), "a shard judges nothing");
        shards.push(world.path(&out));
    }
    assert_eq!(boots_in(&world.take_log()), ["A", "A'", "B"]);
    let mut args: Vec<&OsStr> = vec!["merge".as_ref()];
    args.extend(shards.iter().map(|s| s.as_os_str()));
    let merged_dir = world.path("merged");
    args.extend([OsStr::new("--out"), merged_dir.as_os_str()]);
    // merge takes no --cache-dir: call it without World::patchbench's.
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(&args)
        .env_clear()
        .env("PATH", world.bin())
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let merged = Results::load(&merged_dir.join("results.json")).unwrap();
    let whole = world.results("whole");
    let rows = |r: &Results| {
        r.judgement
            .as_ref()
            .unwrap()
            .rows
            .iter()
            .map(|c| (c.metric.clone(), c.verdict, c.a.mean, c.b.mean))
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&merged), rows(&whole));
    assert_eq!(
        verdict(&merged, "pageout_cpu_ns"),
        VerdictRecord::Regression
    );
}

/// `run --bisect` over four patches, the third the slow one: the whole
/// series regresses, then two midpoints (p2: no change, p3: the change)
/// name patch 3, with exit code 1.
fn a_hunt_names_the_patch_that_regressed() {
    let world = World::new(&[
        Patch::comment("mm: zswap: one", "mm/zswap.c"),
        Patch::comment("mm: memcontrol: two", "mm/memcontrol.c"),
        Patch::effect(
            "mm: vmscan: three, the slow one",
            "mm/vmscan.c",
            "pageout_cpu_ns",
            10.0,
        ),
        Patch::comment("init: four", "init/main.c"),
    ]);
    let campaign = world.campaign("hunt", ABA);
    let output = world.run(&campaign, "out", &["--bisect"], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the first patch with the regression is 3/4"),
        "{err}"
    );
    let hunt = Hunt::load(&world.path("out/bisect.json")).unwrap();
    let steps: Vec<(StepRole, usize, usize)> = hunt
        .steps
        .iter()
        .map(|s| (s.role, s.baseline_patches, s.patches))
        .collect();
    assert_eq!(
        steps,
        [
            (StepRole::Whole, 0, 4),
            (StepRole::Midpoint, 0, 2),
            (StepRole::Midpoint, 0, 3),
        ]
    );
    let HuntState::Found { patch, own } = &hunt.state else {
        panic!("{:?}", hunt.state)
    };
    assert_eq!(*patch, 3);
    let own_pageout = own
        .comparisons
        .iter()
        .find(|c| c.metric == "pageout_cpu_ns" && c.condition.is_none())
        .unwrap();
    assert_eq!(own_pageout.verdict, VerdictRecord::Regression);
    assert_eq!(
        (own_pageout.baseline.as_str(), own_pageout.variant.as_str()),
        ("p2", "p3")
    );
}

/// A hunt over four patches where prefix 2 does not build (patch 2
/// breaks the build, patch 3 fixes it) and patch 4 is the slow one: the
/// midpoint, 2, is skipped as `git bisect skip` does, 1 and then 3 are
/// measured instead, and patch 4 is named with its own interval.
fn a_hunt_skips_a_prefix_that_does_not_build() {
    let (breaks, fixes) = Patch::breaking("mm: zswap: breaks the build", "mm/zswap.c");
    let world = World::new(&[
        Patch::comment("mm: memcontrol: one", "mm/memcontrol.c"),
        breaks,
        fixes,
        Patch::effect(
            "mm: vmscan: four, the slow one",
            "mm/vmscan.c",
            "pageout_cpu_ns",
            10.0,
        ),
    ]);
    let campaign = world.campaign("skip", ABA);
    let output = world.run(&campaign, "out", &["--bisect"], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the first patch with the regression is 4/4"),
        "{err}"
    );
    let hunt = Hunt::load(&world.path("out/bisect.json")).unwrap();
    let steps: Vec<(usize, Option<StepOutcome>)> =
        hunt.steps.iter().map(|s| (s.patches, s.outcome)).collect();
    assert_eq!(
        steps,
        [
            (4, Some(StepOutcome::Changed)),
            (2, Some(StepOutcome::Skipped)),
            (1, Some(StepOutcome::Unchanged)),
            (3, Some(StepOutcome::Unchanged)),
        ]
    );
    assert!(
        hunt.steps[1]
            .reason
            .contains("error: patchbench-fake-error"),
        "{}",
        hunt.steps[1].reason
    );
    let HuntState::Found { patch, .. } = &hunt.state else {
        panic!("{:?}", hunt.state)
    };
    assert_eq!(*patch, 4);
}

/// Commit `patch` on `refs/heads/watched` of the world's tree (from the
/// base the first time), as a maintainer's branch grows.
fn commit_on_branch(world: &World, patch: &Patch) {
    let repo = git2::Repository::open(world.path("tree")).unwrap();
    let parent = match repo.find_reference("refs/heads/watched") {
        Ok(r) => r.peel_to_commit().unwrap(),
        Err(_) => repo.head().unwrap().peel_to_commit().unwrap(),
    };
    let tree = parent.tree().unwrap();
    let entry = tree.get_path(Path::new(patch.file)).unwrap();
    let blob = repo.find_blob(entry.id()).unwrap();
    let mut text = String::from_utf8(blob.content().to_vec()).unwrap();
    text.push_str(&patch.line);
    text.push('\n');
    let mut builder = git2::build::TreeUpdateBuilder::new();
    builder.upsert(
        patch.file,
        repo.blob(text.as_bytes()).unwrap(),
        git2::FileMode::Blob,
    );
    let new_tree = builder.create_updated(&repo, &tree).unwrap();
    let new_tree = repo.find_tree(new_tree).unwrap();
    let message = format!(
        "{}\n\nA commit of patchbench's hermetic watch test.\n",
        patch.subject
    );
    repo.commit(
        Some("refs/heads/watched"),
        &signature(),
        &signature(),
        &message,
        &new_tree,
        &[&parent],
    )
    .unwrap();
}

/// `patchbench watch`, ten nights of a branch: one commit a night, but
/// four on night 4, the third of which makes PAGEOUT 20% slower. That
/// night's own run regresses (exit 1); the history shows one change point
/// at night 4 once enough nights follow it, and none elsewhere; the hunt
/// across night 4's four commits names the slow one in at most
/// 1 + log2(4) kernel pairs, with its own interval; the report says so
/// and gives the command that reproduces it. Watching the same head again
/// measures nothing.
fn watch_finds_the_nights_step_and_hunts_its_commit() {
    let world = World::new(&[]);
    let campaign = world.campaign("watched", ABA);
    let history = world.path("history");
    let nights: Vec<Vec<Patch>> = vec![
        vec![Patch::comment("mm: zswap: night 0", "mm/zswap.c")],
        vec![Patch::comment("mm: vmscan: night 1", "mm/vmscan.c")],
        vec![Patch::comment("init: night 2", "init/main.c")],
        vec![Patch::comment("mm: memcontrol: night 3", "mm/memcontrol.c")],
        vec![
            Patch::comment("mm: zswap: 4a", "mm/zswap.c"),
            Patch::comment("init: 4b", "init/main.c"),
            Patch::effect(
                "mm: vmscan: 4c, the slow one",
                "mm/vmscan.c",
                "pageout_cpu_ns",
                20.0,
            ),
            Patch::comment("mm: memcontrol: 4d", "mm/memcontrol.c"),
        ],
        vec![Patch::comment("mm: zswap: night 5", "mm/zswap.c")],
        vec![Patch::comment("init: night 6", "init/main.c")],
        vec![Patch::comment("mm: vmscan: night 7", "mm/vmscan.c")],
        vec![Patch::comment("mm: memcontrol: night 8", "mm/memcontrol.c")],
        vec![Patch::comment("mm: zswap: night 9", "mm/zswap.c")],
    ];
    let watch = |world: &World| {
        world.patchbench(
            &[
                OsStr::new("watch"),
                OsStr::new("--tree"),
                world.path("tree").as_os_str(),
                OsStr::new("--branch"),
                OsStr::new("watched"),
                OsStr::new("--history"),
                history.as_os_str(),
                campaign.as_os_str(),
            ],
            &[],
        )
    };
    let mut first_found = None;
    for (n, commits) in nights.iter().enumerate() {
        for c in commits {
            commit_on_branch(&world, c);
        }
        let output = watch(&world);
        let err = stderr(&output);
        let h = History::load(&history).unwrap().unwrap();
        assert_eq!(h.nights.len(), n + 1, "night {n}");
        assert_eq!(
            h.nights[n].commits.len(),
            if n == 0 { 0 } else { commits.len() }
        );
        // Once found, the one step stays where it is: at night 4.
        let points: Vec<(String, usize)> = h
            .change_points
            .iter()
            .map(|c| (c.metric.clone(), c.night))
            .collect();
        let new = first_found.is_none() && !points.is_empty();
        if new {
            first_found = Some(n);
        }
        if first_found.is_some() {
            assert_eq!(
                points,
                [("pageout_cpu_ns".to_string(), 4)],
                "night {n}: {err}"
            );
        }
        // Night 4's own run regressed, and the night that finds the step
        // reports a new regression: those exit 1, the others 0.
        let want = if n == 4 || new { 1 } else { 0 };
        assert_eq!(output.status.code(), Some(want), "night {n}: {err}");
    }
    // The permutation test needs enough nights after the step to reach
    // its level (docs/statistics.md): with four nights before the step,
    // six after it (C(10, 4) = 210 arrangements, against 1/alpha = 100).
    assert_eq!(first_found, Some(9));
    let h = History::load(&history).unwrap().unwrap();
    let cp = &h.change_points[0];
    assert_eq!(cp.verdict, "regression");
    assert!((18.0..22.0).contains(&cp.change_pct), "{cp:?}");
    assert!(cp.ci_low_pct > 2.0, "{cp:?}");
    assert_eq!(cp.commits.len(), 4);
    let hunt = cp.hunt.as_ref().expect("hunted");
    let found = hunt.found.as_ref().expect("found");
    assert_eq!(found.subject, "mm: vmscan: 4c, the slow one");
    assert_eq!(found.commit, cp.commits[2].commit);
    assert!(hunt.pairs <= 3, "{hunt:?}");
    let own = hunt.change_pct.unwrap();
    assert!((18.0..22.0).contains(&own), "{hunt:?}");
    assert!(hunt.ci_low_pct.unwrap() > 2.0, "{hunt:?}");
    let report = std::fs::read_to_string(history.join(cp.report.as_ref().unwrap())).unwrap();
    assert!(
        report.contains("`mm: vmscan: 4c, the slow one`"),
        "{report}"
    );
    assert!(report.contains("Its own interval, commit"), "{report}");
    assert!(
        report.contains(&format!(
            "--rev {}^ --series hunts/watched-n004/series/0003-{}.patch",
            &found.commit[..12],
            &found.commit[..12]
        )),
        "{report}"
    );
    // The same head again: nothing is built or booted, nothing changes.
    world.take_log();
    let again = watch(&world);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("nothing new to measure"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert_eq!(world.take_log(), Vec::<String>::new());
    assert_eq!(History::load(&history).unwrap().unwrap(), h);
}

/// `--accel kvm` on a host whose /dev/kvm opens but whose KVM cannot
/// create a VM: the host's failure (exit code 3), with QEMU's words, after
/// the KVM trial and before anything is built or booted.
fn a_kvm_that_cannot_create_a_vm_exits_3_before_any_build() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.real_time_campaign("no-vm", ABA);
    let output = world.run(&campaign, "out", &["--accel", "kvm"], &[(ENV_KVM, "no-vm")]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(
        err.contains("cannot run a guest on this host")
            && err.contains("ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy"),
        "{err}"
    );
    assert_eq!(
        world.take_log(),
        ["kvm-trial no-vm"],
        "nothing built or booted"
    );
}

/// A lane is honoured or refused, never changed: icount asked for with
/// KVM is a usage error (exit 2), before the trial, any build or boot.
fn kvm_with_icount_is_refused_before_anything_runs() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.campaign("icount", ABA);
    let output = world.run(&campaign, "out", &["--accel", "kvm"], &[(ENV_KVM, "runs")]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("vm.icount: true is a TCG clock, but KVM was requested"),
        "{err}"
    );
    assert!(
        world.take_log().is_empty(),
        "nothing tried, built or booted"
    );
}

/// A world whose base tree's x86 SMP bring-up still has the handshake
/// that waits without yielding (`cpu_callout_mask`, Linux before 6.5).
fn old_handshake_world() -> World {
    let world = World::new(&two_patches(10.0));
    world.commit_on_base(
        &[(
            "arch/x86/kernel/smpboot.c".to_string(),
            "\t\t\t\tcpumask_set_cpu(cpu, cpu_callout_mask);\n".to_string(),
        )],
        "x86: the old handshake",
    );
    world
}

/// A base tree whose x86 SMP bring-up waits without yielding
/// (`cpu_callout_mask`, Linux before 6.5), booted with two CPUs under
/// icount on the fakes' QEMU 7.2, would hang at the second CPU: refused
/// before anything is built, naming the fix. With `--online 1` it runs.
fn a_second_cpu_that_icount_never_runs_is_refused_before_any_build() {
    let world = old_handshake_world();
    let campaign = world.campaign("smp", ABA);
    assert!(
        std::fs::read_to_string(&campaign)
            .unwrap()
            .contains("online: 2")
    );
    world.take_log();
    let output = world.run(&campaign, "out", &["--series", "none"], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("vm.cpus.online: 2 cannot boot here under icount")
            && err.contains("QEMU 7.2.0")
            && err.contains("set vm.cpus.online: 1"),
        "{err}"
    );
    let log = world.take_log();
    assert!(
        !log.iter().any(|l| l.starts_with("make ")) && boots_in(&log).is_empty(),
        "nothing built or booted: {log:?}"
    );
    // `--online 1` brings one CPU up instead of the campaign's two.
    let output = world.run(
        &campaign,
        "out",
        &["--series", "none", "--online", "1"],
        &[],
    );
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    let log = world.take_log();
    assert!(log.iter().any(|l| l.starts_with("make ")), "{log:?}");
    assert_eq!(boots_in(&log).len(), 3, "{log:?}");
    for boot in &world.results("out").boots {
        let facts = boot.facts.as_ref().unwrap();
        assert_eq!(facts.online_cpus, "0", "boot {}", boot.index);
    }
    // Resuming those one-CPU boots with two would mix two guests.
    world.take_log();
    let output = world.run(
        &campaign,
        "out",
        &["--series", "none", "--online", "2"],
        &[],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("was measured with CPUs 0 online, and this run would bring 0-1 online"),
        "{err}"
    );
    assert!(
        world.take_log().is_empty(),
        "nothing imported, built or booted"
    );
}

/// `run --suite DIR` over three campaigns of one tree: one refused for
/// its second CPU (the old handshake on the fakes' QEMU 7.2), one for an
/// interface its workload `requires:` that the tree lacks, and one that
/// runs. Both refusals are named in the summary, and the third runs.
fn a_suite_names_each_refused_campaign_and_runs_the_rest() {
    use patchbench::workload::spec_for_kind;
    let world = old_handshake_world();
    let suite = world.path("suite");
    std::fs::create_dir(&suite).unwrap();
    let one_cpu = |text: String| text.replace("online: 2", "online: 1");
    let smp = world.campaign("a-smp", ABA);
    std::fs::rename(&smp, suite.join("a-smp.yaml")).unwrap();
    // uffd-ioctls requires UFFDIO_MOVE at its defaults; the fragment
    // builds what it needs of the kernel's options.
    let kind = "uffd-ioctls";
    assert!(!spec_for_kind(kind).unwrap().requires.is_empty());
    let features: String = patchbench_agent::feature::Feature::ALL
        .iter()
        .map(|f| format!("{}=y\n", f.config()))
        .collect();
    std::fs::write(world.path("features.config"), features).unwrap();
    let fake_fragment = format!("    - {}\n", world.path("fake.config").display());
    let needs = std::fs::read_to_string(world.campaign("b-needs", ABA))
        .unwrap()
        .replace(
            &fake_fragment,
            &format!(
                "{fake_fragment}    - {}\n",
                world.path("features.config").display()
            ),
        );
    let workload = needs.find("workload:").unwrap();
    let protocol = needs.find("protocol:").unwrap();
    let needs = format!(
        "{}workload:\n  kind: {kind}\n{}",
        &needs[..workload],
        &needs[protocol..]
    );
    std::fs::write(suite.join("b-needs.yaml"), one_cpu(needs)).unwrap();
    let ok = std::fs::read_to_string(world.campaign("c-ok", ABA)).unwrap();
    std::fs::write(suite.join("c-ok.yaml"), one_cpu(ok)).unwrap();
    let output = world.patchbench(
        &[
            OsStr::new("run"),
            OsStr::new("--suite"),
            suite.as_os_str(),
            OsStr::new("--series"),
            OsStr::new("none"),
            OsStr::new("--out"),
            world.path("out").as_os_str(),
        ],
        &[],
    );
    let err = stderr(&output);
    let all = format!("{}{err}", String::from_utf8_lossy(&output.stdout));
    assert!(matches!(output.status.code(), Some(0 | 1)), "{all}");
    for (name, why) in [
        ("a-smp", "vm.cpus.online: 2 cannot boot here under icount"),
        ("b-needs", "UFFDIO_MOVE"),
    ] {
        assert!(
            all.lines()
                .any(|l| l.contains(name) && l.contains("refused, nothing ran") && l.contains(why)),
            "{name}: {all}"
        );
        assert!(!world.path("out").join(name).join("results.json").exists());
    }
    let results = world.results("out/c-ok");
    assert_eq!(results.boots.len(), 3, "{all}");

    // With --online 1: a campaign whose workload needs two CPUs is named
    // as refused and the next runs; a campaign wrong on its own still
    // stops the command.
    let two = world.path("two");
    std::fs::create_dir(&two).unwrap();
    let ok = std::fs::read_to_string(suite.join("c-ok.yaml")).unwrap();
    let hotplug = ok.replace(
        &ok[ok.find("workload:").unwrap()..ok.find("protocol:").unwrap()],
        "workload:\n  kind: cpu-hotplug\n",
    );
    std::fs::write(
        two.join("a-hotplug.yaml"),
        hotplug.replace("online: 1", "online: 2"),
    )
    .unwrap();
    std::fs::write(two.join("b-ok.yaml"), &ok).unwrap();
    let suite_run = |dir: &Path, out: &str| {
        world.patchbench(
            &[
                OsStr::new("run"),
                OsStr::new("--suite"),
                dir.as_os_str(),
                OsStr::new("--series"),
                OsStr::new("none"),
                OsStr::new("--online"),
                OsStr::new("1"),
                OsStr::new("--out"),
                world.path(out).as_os_str(),
            ],
            &[],
        )
    };
    let output = suite_run(&two, "out-two");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    assert!(matches!(output.status.code(), Some(0 | 1)), "{all}");
    assert!(
        all.lines()
            .any(|l| l.contains("a-hotplug.yaml: refused, nothing ran: with --online 1")),
        "{all}"
    );
    assert_eq!(world.results("out-two/b-ok").boots.len(), 3, "{all}");
    // Wrong as a file (refused as the suite is listed), or as a plan (a
    // fragment that is not there): either stops it, exit 2.
    for (broken, why) in [
        (
            ok.replace("thp: never", "thp: nevermore"),
            "unknown variant `nevermore`",
        ),
        (
            ok.replace("fake.config", "missing.config"),
            "missing.config does not exist",
        ),
    ] {
        std::fs::write(two.join("a-broken.yaml"), broken).unwrap();
        let _ = std::fs::remove_dir_all(world.path("out-broken"));
        let output = suite_run(&two, "out-broken");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{err}");
        assert!(err.contains("a-broken.yaml") && err.contains(why), "{err}");
        assert!(!world.path("out-broken").join("b-ok").exists(), "{err}");
    }
}

/// `patchbench doctor`'s KVM line follows the trial: usable where its
/// guest ran (QEMU exited with the guest's status) on a hardware KVM
/// module, a warning naming the modules where only kvm_pvm is loaded, and
/// on a closed /dev/kvm a warning with both fixes, the kvm group and the
/// udev rule.
fn doctor_calls_kvm_usable_only_where_the_trial_guest_ran() {
    let world = World::new(&[]);
    let pvm = world.path("pvm-host");
    std::fs::create_dir_all(pvm.join("kvm_pvm")).unwrap();
    let pvm = pvm.to_str().unwrap();
    let kvm_line_on = |host: &str, modules: &[(&str, &str)]| {
        let mut env = vec![(ENV_KVM, host)];
        env.extend_from_slice(modules);
        let output = world.patchbench(&["doctor"], &env);
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find(|l| l.contains(" KVM "))
            .unwrap_or_else(|| panic!("no KVM line: {}", stderr(&output)))
            .to_string()
    };
    let kvm_line = |host: &str| kvm_line_on(host, &[]);
    let runs = kvm_line("runs");
    assert!(
        runs.starts_with("ok   KVM") && runs.contains("a guest ran"),
        "{runs}"
    );
    let denied = kvm_line("denied");
    assert!(
        denied.starts_with("warn KVM")
            && denied.contains("sudo usermod -aG kvm")
            && denied.contains(patchbench::vm::accel::UDEV_RULE),
        "{denied}"
    );
    // The guest runs, but the host's only KVM module is kvm_pvm.
    let only_pvm = kvm_line_on("runs", &[(patchbench::vm::accel::ENV_SYS_MODULE, pvm)]);
    assert!(
        only_pvm.starts_with("warn KVM")
            && only_pvm
                .contains("neither kvm_intel nor kvm_amd is loaded; KVM modules loaded: kvm_pvm"),
        "{only_pvm}"
    );
}

/// `--accel auto` on a host where QEMU cannot open /dev/kvm: the KVM trial
/// fails, every boot runs under TCG, and results.json's accelerator
/// reason, which the report shows, names the cause and the fix.
fn auto_falls_back_to_tcg_on_a_closed_dev_kvm_and_the_report_says_why() {
    let world = World::new(&two_patches(10.0));
    let campaign = world.real_time_campaign("denied", ABA);
    let output = world.run(
        &campaign,
        "out",
        &["--accel", "auto"],
        &[(ENV_KVM, "denied")],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let log = world.take_log();
    assert_eq!(log.first().map(String::as_str), Some("kvm-trial denied"));
    assert_eq!(boots_in(&log), ["A", "A'", "B"]);
    let results = world.results("out");
    assert_eq!(results.host.lane, patchbench::model::Lane::Tcg);
    let reason = &results.host.accel_reason;
    assert!(
        reason.starts_with("fell back to TCG")
            && reason.contains("cannot open /dev/kvm (Permission denied)")
            && reason.contains("usermod -aG kvm"),
        "{reason}"
    );
    let report = std::fs::read_to_string(world.path("out").join("report.md")).unwrap();
    assert!(report.contains(reason.as_str()), "{report}");
}

/// A source that does not compile: the build's failure is the host's
/// side (exit code 3), and the message quotes the compiler's error.
fn a_failed_build_is_infrastructure_naming_the_error() {
    let world = World::new(&[Patch::breaking("mm: vmscan: broken", "mm/vmscan.c").0]);
    let output = world.run(&world.campaign("broken", ABA), "out", &[], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(
        err.contains("mm/vmscan.c:5:1: error: patchbench-fake-error"),
        "{err}"
    );
    assert!(boots_in(&world.take_log()).is_empty(), "nothing boots");
}

/// Every benchmark of the mm library (`harness: ops`) runs a whole A/A
/// campaign through the fakes with its defaults, on a kernel whose
/// configuration builds every kernel feature, and its samples carry the
/// harness's metrics; without the fragment that builds a feature it
/// needs, `plan` refuses it by the feature's name before anything is
/// built.
fn every_benchmark_runs_through_the_fakes_and_a_missing_feature_is_named() {
    use patchbench::workload::{kinds::SPECS, spec_for_kind};
    let world = World::new(&two_patches(10.0));
    let features: String = patchbench_agent::feature::Feature::ALL
        .iter()
        .map(|f| format!("{}=y\n", f.config()))
        .collect();
    std::fs::write(world.path("features.config"), features).unwrap();
    let base = world.campaign(
        "bench",
        "  order: ABA\n  warmups: 0\n  samples: 2\n  sequential: off\n",
    );
    let text = std::fs::read_to_string(&base).unwrap();
    let fake_fragment = format!("    - {}\n", world.path("fake.config").display());
    let zswap_pageout = WORLD_WORKLOAD;
    assert!(text.contains(zswap_pageout) && text.contains(&fake_fragment));
    let (mut ran, mut refused) = (0, 0);
    for (kind, _) in SPECS {
        let Some(spec) = spec_for_kind(kind) else {
            continue;
        };
        if spec.harness.is_none() {
            continue;
        }
        let campaign = world.path(&format!("{kind}.yaml"));
        let with_features = format!(
            "{fake_fragment}    - {}\n",
            world.path("features.config").display()
        );
        // hugetlb-gigantic in its campaign's guest: 1 GiB leaves no 1 GiB
        // range free.
        let guest = if *kind == "hugetlb-gigantic" {
            assert!(text.contains("memory: 1 GiB"));
            text.replace("memory: 1 GiB", "memory: 6 GiB")
        } else {
            text.clone()
        };
        let section = guest.replace(zswap_pageout, &format!("workload:\n  kind: {kind}\n"));
        std::fs::write(&campaign, section.replace(&fake_fragment, &with_features)).unwrap();
        let out = format!("out-{kind}");
        // What it needs of the tree's source at its defaults (`requires:`),
        // which the world's tree does not have: refused by name before any
        // build, and run once the base holds it.
        let defaults: std::collections::BTreeMap<String, String> = spec
            .params
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    yaml_serde::to_string(&p.default)
                        .unwrap()
                        .trim()
                        .to_string(),
                )
            })
            .collect();
        let requires: Vec<_> = spec
            .requires
            .iter()
            .filter(|n| n.applies(&defaults))
            .collect();
        if !requires.is_empty() {
            world.take_log();
            let output = world.run(&campaign, &out, &["--series", "none"], &[]);
            let err = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{kind}: {err}");
            for need in &requires {
                assert!(
                    err.contains(&format!("{}: the tree has no {}", need.what, need.file)),
                    "{kind}: {err}"
                );
            }
            assert!(
                boots_in(&world.take_log()).is_empty(),
                "{kind}: nothing boots"
            );
            let mut files = std::collections::BTreeMap::<String, String>::new();
            for need in &requires {
                files
                    .entry(need.file.clone())
                    .or_default()
                    .push_str(&format!("/* {} */\n", need.has));
            }
            let files: Vec<(String, String)> = files.into_iter().collect();
            world.commit_on_base(&files, &format!("what {kind} requires"));
            refused += 1;
        }
        let output = world.run(&campaign, &out, &["--series", "none"], &[]);
        let err = stderr(&output);
        assert!(matches!(output.status.code(), Some(0 | 1)), "{kind}: {err}");
        let results = world.results(&out);
        assert_eq!(results.workload.kind, *kind);
        for boot in &results.boots {
            let facts = boot.facts.as_ref().unwrap();
            for need in &spec.needs {
                assert!(facts.features.iter().any(|f| f == need.name()), "{kind}");
            }
            assert_eq!(boot.samples.len(), 2, "{kind}");
            for sample in &boot.samples {
                for metric in ["ops", "ops_ns", "ns_per_op", "sys_ns", "guest_sys_ns"] {
                    assert!(sample.metrics.contains_key(metric), "{kind}: {metric}");
                }
            }
        }
        ran += 1;
        if !spec.needs.is_empty() {
            // Without the fragment that builds what it needs: refused by
            // name, before any build.
            std::fs::write(&campaign, &section).unwrap();
            let output = world.patchbench(&[OsStr::new("plan"), campaign.as_os_str()], &[]);
            let err = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{kind}: {err}");
            let first = spec.needs[0];
            assert!(
                err.contains(&format!("workload {kind} needs")) && err.contains(first.config()),
                "{kind}: {err}"
            );
        }
    }
    assert!(ran > 0, "no benchmark ran");
    assert!(
        refused > 0,
        "no benchmark was refused for what the tree lacks"
    );
}

/// kernel-boot, the kind whose window is the boot itself: a protocol of
/// more than one sample a boot is refused by name before anything boots;
/// one sample a boot runs A, B and A', each with its boot's clock, and no
/// swap disk (whose probe at boot would be host-timed I/O in the window).
fn the_boot_is_measured_once_per_boot_with_no_disk() {
    let world = World::new(&two_patches(10.0));
    let base = world.campaign("boot", "  order: ABA\n  warmups: 0\n  samples: 2\n");
    let text = std::fs::read_to_string(&base).unwrap();
    let zswap_pageout = WORLD_WORKLOAD;
    assert!(text.contains(zswap_pageout));
    let boot = text.replace(zswap_pageout, "workload:\n  kind: kernel-boot\n");
    let campaign = world.path("kernel-boot.yaml");
    std::fs::write(&campaign, &boot).unwrap();
    world.take_log();
    let output = world.run(&campaign, "out-refused", &["--series", "none"], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("kernel-boot measures the boot")
            && err.contains("protocol.samples: 1 and protocol.warmups: 0"),
        "{err}"
    );
    assert!(boots_in(&world.take_log()).is_empty(), "nothing boots");

    std::fs::write(&campaign, boot.replace("samples: 2", "samples: 1")).unwrap();
    let output = world.run(&campaign, "out", &["--series", "none"], &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let log = world.take_log();
    assert_eq!(boots_in(&log), ["A", "A'", "B"]);
    // A boot with a swap disk leaves its file beside its console log.
    let boots = world.path("out/boots");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&boots)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    for dir in dirs {
        assert!(dir.join("console.log").is_file(), "{}", dir.display());
        assert!(
            !dir.join("swap.img").exists(),
            "a swap disk: {}",
            dir.display()
        );
    }
    let results = world.results("out");
    assert_eq!(results.workload.kind, "kernel-boot");
    for boot in &results.boots {
        assert!(boot.warmups.is_empty(), "{}", boot.label);
        assert_eq!(boot.samples.len(), 1, "{}", boot.label);
        assert!(boot.samples[0].metrics["boot_ns"] > 0, "{}", boot.label);
    }
}

/// For every kind with a spec, the fake agent reports exactly the metrics
/// the spec lists for a lane without the plugin, for the workload of every
/// committed campaign of that kind (a kind no campaign runs yet: its
/// defaults alone, in the smoke campaign): the fakes cannot drift from the
/// specs, and a kind whose spec the fake cannot read fails here.
fn the_fake_agent_reports_what_the_spec_lists() {
    use patchbench::config::{Campaign, Overrides};
    use patchbench::workload::{Planned, kinds::SPECS, spec_for_kind};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The workload's kind, once its metrics are checked; `None` for a
    // kind without a spec.
    let check = |plan: &patchbench::config::Plan, at: &str| -> Option<&'static str> {
        let prepared = match &plan.workload {
            Planned::Ready(p) => p.clone(),
            Planned::KernelBuild(k) => k.prepared(Path::new("/src"), Path::new("/build")),
            Planned::Staged(s) => s.prepared(&patchbench::workload::StagedArchive {
                archive: "/staged/program.cpio".into(),
                source: "staged".into(),
            }),
        };
        let spec = spec_for_kind(prepared.kind())?;
        let mut listed: Vec<String> = spec
            .metrics
            .iter()
            .filter(|m| m.lane.is_none())
            .map(|m| m.name.clone())
            .collect();
        listed.sort();
        let reported = patchbench_fakes::qemu::metric_names(prepared.wire())
            .unwrap_or_else(|e| panic!("{at}: {}", e.0));
        // zswap-pageout counts its flushes only with count_flushes.
        if prepared.wire().profile_candidates().is_empty() {
            listed.retain(|m| m != "pageout_flushes");
        }
        assert_eq!(reported, listed, "{at}");
        Some(prepared.kind())
    };
    let mut seen: std::collections::BTreeMap<&str, usize> = SPECS
        .iter()
        .filter(|(_, spec)| spec.is_some())
        .map(|(kind, _)| (*kind, 0))
        .collect();
    for dir in ["ci/seeds", "ci/workloads", "ci/mm"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension() == Some(OsStr::new("yaml")))
            // A hidden file is a copy made to run (ci/mm-library.sh
            // --online), not a shipped campaign: the library skips it too.
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
        paths.sort();
        for path in paths {
            let at = path.display();
            let campaign = Campaign::load(&path).unwrap_or_else(|e| panic!("{at}: {e}"));
            let plan = campaign
                .into_plan(&path, path.parent().unwrap(), Overrides::default())
                .unwrap_or_else(|e| panic!("{at}: {e}"));
            if let Some(kind) = check(&plan, &at.to_string()) {
                *seen.get_mut(kind).unwrap() += 1;
            }
        }
    }
    for (kind, campaigns) in seen {
        if campaigns > 0 {
            continue;
        }
        let mut smoke: yaml_serde::Value =
            yaml_serde::from_str(patchbench::config::DEFAULT_CAMPAIGN).unwrap();
        smoke["workload"] = yaml_serde::from_str(&format!("kind: {kind}")).unwrap();
        let origin = root.join("ci/smoke.yaml");
        let plan = Campaign::parse(&yaml_serde::to_string(&smoke).unwrap(), &origin)
            .and_then(|c| {
                c.into_plan(
                    &origin,
                    &patchbench::config::default_campaign_dir(),
                    Overrides::default(),
                )
            })
            .unwrap_or_else(|e| {
                panic!("no committed campaign runs {kind}, and its defaults do not plan: {e}")
            });
        check(&plan, &format!("{kind} with its defaults"));
    }
}

/// A fake given what it does not understand exits 2 and says what.
fn the_fakes_refuse_what_they_do_not_understand() {
    let world = World::new(&[]);
    let run = |program: &str, args: &[&str]| {
        let output = Command::new(world.bin().join(program))
            .args(args)
            .output()
            .unwrap();
        (output.status.code(), stderr(&output))
    };
    let tree = world.path("tree");
    let tree = tree.to_str().unwrap();
    let (code, err) = run("make", &["-C", tree, "O=/nonexistent", "modules"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("fake make: does not understand the argument \"modules\""),
        "{err}"
    );
    let (code, err) = run("qemu-system-x86_64", &["-nodefaults", "-vnc", ":0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("\"-vnc\""), "{err}");
    let (code, err) = run("gcc", &["-c", "x.c"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("never runs gcc"), "{err}");
    let (code, out) = run("gcc", &["--version"]);
    assert_eq!(code, Some(0), "{out}");
}
