//! The real end-to-end tests: a real kernel tree, real builds, real QEMU
//! boots, real samples. They never skip: on a host without QEMU or the kernel
//! source they fail, naming what is missing (`ci/setup-host.sh` installs it).
//!
//! The smoke campaign runs once per test binary; the failure tests reuse its
//! cached tree and kernels, so they cost only their boots.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use patchbench::campaign::{self, Outcome, RunOptions};
use patchbench::config::{self, Campaign, Overrides};
use patchbench::events::Recorder;

mod common;
use common::{PLAIN_TCG, cache_dir, require_host_tools, smoke_variant};

/// One campaign at a time: they share the cached tree and build directories.
static SERIAL: Mutex<()> = Mutex::new(());
static SMOKE: OnceLock<Outcome> = OnceLock::new();

fn run_campaign(text: &str, out: &Path) -> anyhow::Result<Outcome> {
    let origin = PathBuf::from("test campaign");
    let plan = Campaign::parse(text, &origin)?.into_plan(
        &origin,
        &config::default_campaign_dir(),
        Overrides::default(),
    )?;
    let opts = RunOptions {
        out_dir: out.to_owned(),
        cache_dir: cache_dir(),
        agent: patchbench::find_agent()?,
        cache_max: patchbench::build::cache::DEFAULT_BUDGET,
        kernels: None,
        shard: None,
        reach: None,
        replay: false,
    };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(campaign::run(&plan, &opts, &Recorder::default()))
}

fn smoke() -> &'static Outcome {
    SMOKE.get_or_init(|| {
        require_host_tools();
        let out = std::env::temp_dir().join(format!("patchbench-e2e-smoke-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        run_campaign(config::DEFAULT_CAMPAIGN, &out)
            .unwrap_or_else(|e| panic!("smoke campaign failed: {e:#}"))
    })
}

#[test]
fn smoke_campaign_measures_every_boot_with_zswap_on() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let outcome = smoke();
    let results = &outcome.results;
    let labels: Vec<_> = results.boots.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["A", "B", "A'"]);
    let variants: Vec<_> = results.boots.iter().map(|b| b.variant.as_str()).collect();
    assert_eq!(variants, ["A", "B", "A"]);
    for boot in &results.boots {
        assert!(boot.complete, "boot {} incomplete", boot.label);
        assert_eq!(boot.warmups.len(), 1, "boot {}", boot.label);
        assert_eq!(boot.samples.len(), 3, "boot {}", boot.label);
        for sample in &boot.samples {
            assert!(
                sample.metrics["pageout_cpu_ns"] > 0,
                "boot {}: {sample:?}",
                boot.label
            );
            assert!(
                sample.metrics["zswpout_pages"] > 0,
                "boot {}: {sample:?}",
                boot.label
            );
        }
        let facts = boot.facts.as_ref().expect("guest facts");
        // kernel.cputime: precise, the default: the kernel says so itself.
        let cputime = facts.cputime.as_ref().expect("facts.cputime");
        assert!(cputime.is_precise(), "boot {}: {cputime:?}", boot.label);
        assert_eq!(cputime.hz, Some(1000), "boot {}", boot.label);
        for sample in &boot.samples {
            let m = |name: &str| sample.metrics[name];
            // The workers' exact CPU time, split; the whole guest's system
            // time holds theirs (each may lose under a tick of pending time
            // when it exits, kernel/sched/cputime.c).
            assert!(m("sys_ns") > 0 && m("user_ns") > 0, "{sample:?}");
            assert!(
                m("user_ns") + m("sys_ns") + 1_000_000 >= m("total_cpu_ns"),
                "{sample:?}"
            );
            assert!(m("guest_sys_ns") + 2_000_000 >= m("sys_ns"), "{sample:?}");
            for name in [
                "guest_user_ns",
                "guest_irq_ns",
                "guest_softirq_ns",
                "kworker_ns",
                "kswapd_ns",
            ] {
                assert!(sample.metrics.contains_key(name), "{name}: {sample:?}");
            }
        }
        assert_eq!(
            facts.zswap.get("enabled").map(String::as_str),
            Some("Y"),
            "boot {}",
            boot.label
        );
        assert!(
            facts.kernel_release.starts_with("6.12"),
            "{}",
            facts.kernel_release
        );
        // Recorded relative to the run's directory.
        assert!(boot.console_log.is_relative(), "{:?}", boot.console_log);
        let run_dir = outcome.results_path.parent().unwrap();
        let console = std::fs::read_to_string(run_dir.join(&boot.console_log)).unwrap();
        assert!(
            console.contains("zswap enabled=Y"),
            "boot {}: no zswap line in {}",
            boot.label,
            boot.console_log.display()
        );
    }
    // The smoke shows the tool working: under icount, the counter patch's
    // removed flushes (a count: changed) and PAGEOUT CPU are called, and
    // something it does not touch reads "no clear difference".
    let judgement = results
        .judgement
        .as_ref()
        .expect("a finished run is judged");
    let verdict = |metric: &str| {
        judgement
            .rows
            .iter()
            .find(|c| c.metric == metric && c.condition.is_none())
            .unwrap_or_else(|| panic!("no comparison of {metric}"))
            .verdict
    };
    use patchbench::results::VerdictRecord;
    assert_eq!(verdict("pageout_flushes"), VerdictRecord::Changed);
    assert_eq!(verdict("pageout_cpu_ns"), VerdictRecord::Improvement);
    assert!(
        judgement
            .rows
            .iter()
            .any(|c| c.verdict == VerdictRecord::NoClearDifference),
        "{}",
        outcome.markdown
    );
    // The whole guest's times, the kernel threads' and the tick-counted
    // interrupt times are not the lane's own with two vCPUs under icount
    // (one instruction counter serves both, docs/cputime.md): context,
    // never a verdict. The worker's own figures are all decided.
    for metric in ["guest_sys_ns", "guest_irq_ns", "kworker_ns"] {
        assert_eq!(verdict(metric), VerdictRecord::Context, "{metric}");
    }
    assert!(
        judgement
            .rows
            .iter()
            .all(|c| c.verdict != VerdictRecord::Inconclusive),
        "{}",
        outcome.markdown
    );
    // The report opens with a headline that agrees with the primary
    // verdicts: PAGEOUT down, nothing regressed, no rise among them.
    let headline = &judgement.headlines[0].text;
    assert!(
        headline.starts_with("B: pageout_cpu_ns \u{2212}"),
        "{headline}"
    );
    assert!(headline.contains("no regression"), "{headline}");
    let first = outcome
        .markdown
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap();
    assert!(first.contains(headline.as_str()), "{}", outcome.markdown);
    assert!(
        !outcome.markdown.contains("Geometric mean"),
        "{}",
        outcome.markdown
    );
    for boot in &results.boots {
        for sample in &boot.samples {
            let flushes = sample.metrics["pageout_flushes"];
            match boot.variant.as_str() {
                "A" => assert!(flushes > 1000, "boot {}: {flushes}", boot.label),
                _ => assert!(flushes < 80, "boot {}: {flushes}", boot.label),
            }
        }
    }
    // B really is a different kernel from A, built incrementally.
    let a = &results.variants[0].kernel;
    let b = &results.variants[1].kernel;
    assert_ne!(a.bzimage_sha256, b.bzimage_sha256);
    assert_ne!(a.commit, b.commit);
    // Issue 33: the smoke configuration is one kconfigs/objects.tsv lists,
    // so its first build on a new machine shows a total and the time left.
    for variant in &results.variants {
        use patchbench::build::objects::{config_digest, known_full_build};
        // Recorded relative to the build cache: no path of one machine.
        assert!(
            variant.kernel.build_dir.starts_with("builds"),
            "{variant:?}"
        );
        let path = cache_dir().join(&variant.kernel.build_dir).join(".config");
        let config =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let digest = config_digest(&config);
        assert!(
            known_full_build(&digest).is_some(),
            "variant {}: {} (digest {digest}) is not in kconfigs/objects.tsv; \
             `patchbench cache objects` prints its line after a full build",
            variant.name,
            path.display()
        );
    }
    // The results on disk are the same document, and the report has the table.
    let on_disk = patchbench::results::Results::load(&outcome.results_path).unwrap();
    assert_eq!(on_disk.boots.len(), 3);
    assert!(
        outcome.markdown.contains("| pageout_cpu_ns | ms |"),
        "{}",
        outcome.markdown
    );
    assert!(
        outcome.markdown.contains("CPU time: precise in every boot"),
        "{}",
        outcome.markdown
    );
    for stage in [
        "import", "apply", "build A", "build B", "boot A", "boot B", "boot A'",
    ] {
        assert!(
            results.timings.iter().any(|t| t.stage == stage),
            "no timing for {stage}"
        );
    }
    // Under icount the boots ran side by side wherever the host has two
    // cores (each boot's entry is complete and in order, checked above).
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        assert!(
            results.host.parallel_boots.is_some_and(|n| n >= 2),
            "{:?}",
            results.host.parallel_boots
        );
    }
}

/// The smoke campaign's whole `workload:` block, so that a test replacing
/// it leaves none of its parameters behind.
const SMOKE_WORKLOAD: &str = "  kind: zswap-pageout\n  workers: 1\n  mib_per_worker: 32\n  zswap_max: 64 MiB\n  count_flushes: true\nprotocol:";

/// Run the real binary on a broken guest and return (exit code, stderr).
fn run_broken_guest(fault: &str, run_timeout: &str) -> (Option<i32>, String, PathBuf) {
    let workload = format!("  kind: guest-fault\n  fault: {fault}\nprotocol:");
    run_edited(
        fault,
        &[
            ("run_timeout: 10m", &format!("run_timeout: {run_timeout}")),
            (SMOKE_WORKLOAD, &workload),
        ],
    )
}

/// Run the real binary on an edited smoke campaign, in plain TCG: (exit
/// code, stderr, out).
fn run_edited(name: &str, edits: &[(&str, &str)]) -> (Option<i32>, String, PathBuf) {
    let _ = smoke();
    let dir = tempfile::tempdir().unwrap().keep();
    let campaign = smoke_variant(&dir, name, &[edits, &[PLAIN_TCG]].concat());
    let out = dir.join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("run")
        .arg(&campaign)
        .arg("--out")
        .arg(&out)
        .arg("--cache-dir")
        .arg(cache_dir())
        .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        out,
    )
}

/// No process (a stray QEMU) has `path` on its command line.
fn assert_no_process_mentions(path: &Path) {
    let pgrep = Command::new("pgrep")
        .arg("-f")
        .arg(path.display().to_string())
        .output()
        .unwrap();
    assert!(
        pgrep.stdout.is_empty(),
        "stray QEMU: {}",
        String::from_utf8_lossy(&pgrep.stdout)
    );
}

/// `patchbench boot KERNEL -- sleep 30`, SIGKILLed while the guest runs
/// the command: QEMU must not outlive it (issue 17 found it running 39 s
/// later).
#[test]
fn sigkill_during_a_boot_leaves_no_qemu_running() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let kernel = cache_dir().join(&smoke().results.variants[0].kernel.bzimage);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("boot");
    let mut child = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("boot")
        .arg(&kernel)
        .arg("--out")
        .arg(&out)
        .args(["--", "sleep", "30"])
        .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let console = out.join("boot1/console.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    // Wait until the guest runs the command: QEMU is well under way.
    let watched = loop {
        let below = common::descendants(child.id() as i32);
        let running = std::fs::read_to_string(&console)
            .is_ok_and(|c| c.contains("patchbench-agent: exec: ["));
        if running && below.iter().any(|p| p.comm.starts_with("qemu-system")) {
            break below;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the boot ended before the command ran"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the guest never ran the command"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    common::sigkill_and_expect_no_orphans(&mut child, &watched);
    assert_no_process_mentions(&out);
}

#[test]
fn a_guest_panic_names_the_boot_and_its_console_log() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, stderr, out) = run_broken_guest("exit-init", "2m");
    assert_eq!(code, Some(patchbench::exit::GUEST), "{stderr}");
    assert!(stderr.contains("boot A: kernel panic"), "{stderr}");
    assert!(stderr.contains("Attempted to kill init"), "{stderr}");
    assert!(
        stderr.contains(&out.join("boots/0-A/console.log").display().to_string()),
        "{stderr}"
    );
}

#[test]
fn a_hung_guest_hits_the_run_timeout_and_leaves_no_qemu() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, stderr, out) = run_broken_guest("hang", "15s");
    assert_eq!(code, Some(patchbench::exit::GUEST), "{stderr}");
    assert!(
        stderr.contains("boot A: the workload did not finish within the run timeout (15s)"),
        "{stderr}"
    );
    // No QEMU of this run is left: none has this run's console log open.
    assert_no_process_mentions(&out.join("boots/0-A/console.log"));
}

#[test]
fn a_failing_workload_reports_its_message() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, stderr, _) = run_broken_guest("fail", "2m");
    assert_eq!(code, Some(patchbench::exit::GUEST), "{stderr}");
    assert!(
        stderr.contains("boot A: the workload failed: guest-fault: deliberate workload failure"),
        "{stderr}"
    );
    assert!(stderr.contains("console log:"), "{stderr}");
}

/// The smoke campaign's `series:` line, as `smoke_variant` rewrites it.
fn smoke_series_line() -> String {
    format!(
        "series: {}/patches/zswap-counter\n",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Two variants that differ only in a runtime setting: one kernel (the
/// smoke campaign's base, already built), the setting written and read
/// back in every boot and recorded in the guest facts. The workload
/// settles and compacts before each pass, as the counter's cost campaign
/// does (the agent hops onto the worker CPUs, runs rcu_barrier(),
/// compacts memory, then writes /proc/sys/vm/stat_refresh), in a real
/// guest, two samples a boot, at no extra boot.
#[test]
fn knob_variants_share_a_kernel_and_read_their_setting_back() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let knob = "/sys/module/zswap/parameters/shrinker_enabled";
    let variants = format!(
        "variants:\n  - {{name: off, settings: {{{knob}: N}}}}\n  - {{name: on, settings: {{{knob}: 1}}}}\nprotocol:"
    );
    let (code, stderr, out) = run_edited(
        "knobs",
        &[
            (&smoke_series_line(), ""),
            ("protocol:", &variants),
            ("warmups: 1\n  samples: 3", "warmups: 0\n  samples: 2"),
            (
                "count_flushes: true\n",
                "count_flushes: true\n  settle: true\n  compact: true\n",
            ),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let results = patchbench::results::Results::load(&out.join("results.json")).unwrap();
    let names: Vec<_> = results.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["off", "on"]);
    assert_eq!(
        results.variants[0].kernel.bzimage_sha256, results.variants[1].kernel.bzimage_sha256,
        "variants that differ at run time share a kernel"
    );
    let builds = results
        .timings
        .iter()
        .filter(|t| t.stage.starts_with("build "))
        .count();
    assert_eq!(builds, 1, "{:?}", results.timings);
    for boot in &results.boots {
        let read = boot.facts.as_ref().unwrap().settings.get(knob).cloned();
        let want = if boot.variant == "off" { "N" } else { "Y" };
        assert_eq!(read.as_deref(), Some(want), "boot {}", boot.label);
        // Both samples measured after settling, flushes counted.
        assert_eq!(boot.samples.len(), 2, "boot {}", boot.label);
        for sample in &boot.samples {
            assert!(sample.metrics["zswpout_pages"] > 0, "{sample:?}");
            assert!(sample.metrics.contains_key("pageout_flushes"), "{sample:?}");
        }
        let console = std::fs::read_to_string(out.join(&boot.console_log)).unwrap();
        assert!(console.contains("compact=true settle=true"), "{console}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("`on` against `off`"), "{report}");
}

/// A value the kernel does not keep fails the boot before any sample,
/// naming the file, what was written and what it read back.
#[test]
fn a_setting_that_does_not_read_back_fails_the_boot() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let variants = "variants:\n  - {name: base}\n  - {name: odd, settings: {/proc/sys/vm/overcommit_ratio: '050'}}\nprotocol:";
    let (code, stderr, _) = run_edited(
        "odd-setting",
        &[
            (&smoke_series_line(), ""),
            ("protocol:", variants),
            ("warmups: 1\n  samples: 3", "warmups: 0\n  samples: 1"),
        ],
    );
    assert_eq!(code, Some(patchbench::exit::GUEST), "{stderr}");
    assert!(
        stderr.contains("boot odd")
            && stderr.contains(
                "setting /proc/sys/vm/overcommit_ratio: wrote \"050\", reads back \"40\""
            ),
        "{stderr}"
    );
}

#[test]
fn a_workload_killed_by_the_oom_killer_fails_the_boot() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 32 MiB of anonymous memory in a cgroup limited to 8 MiB with no swap:
    // the memcg OOM killer must kill the worker.
    let workload = "  kind: zswap-pageout\n  workers: 1\n  mib_per_worker: 32\n  zswap_max: 64 MiB\n  memory_max: 8 MiB\n  swap_max: 0 B\nprotocol:";
    let (code, stderr, out) = run_edited("oom", &[(SMOKE_WORKLOAD, workload)]);
    assert_eq!(code, Some(patchbench::exit::GUEST), "{stderr}");
    assert!(stderr.contains("boot A: OOM kill"), "{stderr}");
    assert!(
        stderr.contains("Memory cgroup out of memory: Killed process"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&out.join("boots/0-A/console.log").display().to_string()),
        "{stderr}"
    );
    // results.json keeps the failure with its boot, and the report of what
    // was measured names it.
    let results = patchbench::results::Results::load(&out.join("results.json")).unwrap();
    let failure = results.boots[0]
        .failure
        .as_ref()
        .expect("the failure is kept");
    assert!(failure.what.starts_with("OOM kill"), "{failure:?}");
    assert!(
        failure.excerpt.contains("Memory cgroup out of memory"),
        "{failure:?}"
    );
    assert!(!results.boots[0].complete);
    let compare = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("compare")
        .arg(out.join("results.json"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&compare.stdout);
    assert!(
        report.contains("stopped: Boot A stopped after 0 of 3 samples: OOM kill"),
        "{report}"
    );
    assert!(
        report.contains("Not compared: no complete boot of A"),
        "{report}"
    );
    // The run wrote the same report as report.md, and said where.
    let written = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        written.contains("Boot A stopped after 0 of 3 samples: `OOM kill"),
        "{written}"
    );
    assert!(
        stderr.contains(&format!(
            "what was measured before the failure: {}",
            out.join("report.md").display()
        )),
        "{stderr}"
    );
    // And it exits as the run did: a guest failure.
    assert_eq!(
        compare.status.code(),
        Some(patchbench::exit::GUEST),
        "{}",
        String::from_utf8_lossy(&compare.stderr)
    );
}

#[test]
fn the_guest_has_the_possible_and_online_cpus_asked_for() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, stderr, out) = run_edited(
        "cpus",
        &[
            (
                "cpus: {possible: 20, online: 2}",
                "cpus: {possible: 6, online: 2}",
            ),
            ("warmups: 1\n  samples: 3", "warmups: 0\n  samples: 1"),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let results = patchbench::results::Results::load(&out.join("results.json")).unwrap();
    assert_eq!(results.boots.len(), 3);
    for boot in &results.boots {
        let facts = boot.facts.as_ref().expect("guest facts");
        assert_eq!(facts.possible_cpus, "0-5", "boot {}", boot.label);
        assert_eq!(facts.online_cpus, "0-1", "boot {}", boot.label);
    }
}

#[test]
fn accel_kvm_fails_fast_with_the_reason_where_kvm_is_unusable() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The smoke campaign names icount: with --accel kvm it is refused on
    // any host, before the trial (a lane is honoured or refused).
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["run", "--accel", "kvm"])
        .arg("--out")
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(patchbench::exit::USAGE),
        "{stderr}"
    );
    assert!(
        stderr.contains("vm.icount: true is a TCG clock, but KVM was requested"),
        "{stderr}"
    );
    // The same campaign on the host's clock, its paths made absolute, with
    // one online vCPU: a KVM host of two cores keeps one for QEMU's main
    // loop (src/vm/pin.rs).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ci/smoke.yaml"))
        .unwrap()
        .replace("icount: true", "icount: false")
        .replace("online: 2", "online: 1")
        .replace("../", &format!("{}/", root.display()));
    let dir = tempfile::tempdir().unwrap();
    let campaign = dir.path().join("real-time.yaml");
    std::fs::write(&campaign, text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["run", "--accel", "kvm"])
        .arg(&campaign)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let probe = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(patchbench::vm::accel::probe());
    match probe.usable() {
        Err(_) => {
            assert_eq!(
                output.status.code(),
                Some(patchbench::exit::INFRASTRUCTURE),
                "{stderr}"
            );
            assert!(
                stderr.contains("cannot run a guest on this host"),
                "{stderr}"
            );
            assert!(
                !stderr.contains("import:"),
                "it got past the accelerator: {stderr}"
            );
        }
        Ok(()) => assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "a KVM host must run the campaign: {stderr}"
        ),
    }
}

#[test]
fn an_interrupted_campaign_resumes_without_redoing_a_finished_boot() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _ = smoke();
    let dir = tempfile::tempdir().unwrap().keep();
    let campaign = smoke_variant(
        &dir,
        "resume",
        &[
            ("warmups: 1\n  samples: 3", "warmups: 0\n  samples: 2"),
            PLAIN_TCG,
        ],
    );
    let out = dir.join("out");
    let run = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchbench"));
        cmd.arg("run")
            .arg(&campaign)
            .arg("--out")
            .arg(&out)
            .arg("--cache-dir")
            .arg(cache_dir())
            .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap());
        cmd
    };
    let first_log = std::fs::File::create(dir.join("first.stderr")).unwrap();
    let mut child = run().stderr(first_log).spawn().unwrap();
    // Interrupt as soon as the first boot is complete on disk.
    let results_path = out.join("results.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
    let first_boot = loop {
        if let Ok(r) = patchbench::results::Results::load(&results_path)
            && r.boots.first().is_some_and(|b| b.complete)
        {
            break serde_json::to_value(&r.boots[0]).unwrap();
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be interrupted: {}",
            std::fs::read_to_string(dir.join("first.stderr")).unwrap_or_default()
        );
        assert!(
            std::time::Instant::now() < deadline,
            "boot A never completed"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let first_stderr = std::fs::read_to_string(dir.join("first.stderr")).unwrap();
    assert_eq!(
        status.code(),
        Some(patchbench::exit::INFRASTRUCTURE),
        "{first_stderr}"
    );
    assert!(first_stderr.contains("interrupted"), "{first_stderr}");
    // The interrupted boot's QEMU is gone with it.
    assert_no_process_mentions(&out.join("boots/1-B"));

    let again = run().output().unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("boot(s) A already complete, not measured again"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("boot A: kernel A"),
        "boot A ran again: {stderr}"
    );
    let results = patchbench::results::Results::load(&results_path).unwrap();
    let labels: Vec<_> = results.boots.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["A", "B", "A'"]);
    assert!(results.boots.iter().all(|b| b.complete));
    // Boot A is the very boot measured before the interruption.
    assert_eq!(serde_json::to_value(&results.boots[0]).unwrap(), first_boot);
}

/// `build --out DIR` then `run --kernels DIR`: the run boots the copies in
/// DIR (the build job's upload, in CI), and its results name them.
#[test]
fn kernels_built_elsewhere_boot_without_a_build() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let built = smoke();
    let dir = tempfile::tempdir().unwrap().keep();
    let campaign = smoke_variant(
        &dir,
        "prebuilt",
        &[
            ("warmups: 1\n  samples: 3", "warmups: 0\n  samples: 1"),
            PLAIN_TCG,
        ],
    );
    let kernels = dir.join("kernels");
    let patchbench = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_patchbench"))
            .args(args)
            .arg("--cache-dir")
            .arg(cache_dir())
            .arg(&campaign)
            .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
            .output()
            .unwrap()
    };
    let build = patchbench(&["build".as_ref(), "--out".as_ref(), kernels.as_os_str()]);
    assert_eq!(
        build.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let out = dir.join("out");
    let run = patchbench(&[
        "run".as_ref(),
        "--kernels".as_ref(),
        kernels.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    // 0 or 1: the campaign ran (1 would be a verdict, not a failure).
    assert!(matches!(run.status.code(), Some(0 | 1)), "{stderr}");
    assert!(!stderr.contains("build A: commit"), "it built: {stderr}");
    assert!(stderr.contains("kernel A: prebuilt"), "{stderr}");
    let results = patchbench::results::Results::load(&out.join("results.json")).unwrap();
    for (ran, smoke) in results.variants.iter().zip(&built.results.variants) {
        assert!(ran.kernel.bzimage.starts_with(&kernels), "{ran:?}");
        assert_eq!(ran.kernel.bzimage_sha256, smoke.kernel.bzimage_sha256);
    }
    assert!(results.boots.iter().all(|b| b.complete));
}
