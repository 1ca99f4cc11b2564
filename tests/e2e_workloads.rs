//! End-to-end tests of the guest workloads through the real binary: a real
//! kernel tree, real builds (cached after the first run), real QEMU boots.
//! They never skip: on a host without QEMU or the kernel source they fail,
//! naming what is missing (`ci/setup-host.sh` installs it).
//!
//! The zswap-pageout flush counts are the mechanism of seed 000, so they are
//! asserted as counts, not statistics: on 6.12 a finite `memory.zswap.max`
//! forces one stats flush per page stored, `patches/zswap-counter` removes
//! it, and an unlimited `memory.zswap.max` never forced it. Both conditions
//! run in one campaign, the unlimited one as a control in the same boots.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use patchbench::model::Verdict;
use patchbench::results::Results;

mod common;
use common::{require_host_tools, run_campaign};

/// One campaign at a time: they share the cached tree and build directories.
static SERIAL: Mutex<()> = Mutex::new(());

/// ci/seeds/000-counter.yaml (seed 000 with its unlimited control, under
/// icount) with absolute paths and a CI-sized protocol: 1 warm-up and 3
/// samples per condition per boot. icount makes the CPU times repeat, so
/// three samples are enough for the verdicts.
fn counter_campaign(dir: &Path) -> PathBuf {
    let text = shipped_campaign("ci/seeds/000-counter.yaml");
    // Three samples: one round, the fixed protocol (protocol.sequential:
    // auto needs six or more to sample in rounds).
    let text = text.replace("  samples: 9\n", "  samples: 3\n");
    assert!(
        text.contains("zswap_max: 64 MiB")
            && text.contains("mib_per_worker: 32")
            && text.contains("name: unlimited")
            && text.contains("icount: true")
            && text.contains("  warmups: 1\n")
            && text.contains("  samples: 3\n")
            && text.contains("series: /"),
        "ci/seeds/000-counter.yaml changed shape; update this test"
    );
    let path = dir.join("campaign.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The verdict the run recorded for `metric` in `condition`.
fn verdict(results: &Results, condition: Option<&str>, metric: &str) -> Verdict {
    results
        .judgement
        .as_ref()
        .expect("a finished run is judged")
        .rows
        .iter()
        .find(|c| c.condition.as_deref() == condition && c.metric == metric)
        .unwrap_or_else(|| panic!("no comparison of {metric} in {condition:?}"))
        .verdict
        .into()
}

/// (boot label, variant, pageout_flushes, zswpout_pages) of every sample of
/// one condition (`None`: the main workload).
fn flush_counts(results: &Results, condition: Option<&str>) -> Vec<(String, String, u64, u64)> {
    let mut rows = Vec::new();
    for boot in &results.boots {
        assert!(boot.complete, "boot {} incomplete", boot.label);
        let samples = boot.samples_of(condition);
        assert!(
            !samples.is_empty(),
            "boot {} has no samples of {condition:?}",
            boot.label
        );
        let facts = boot.facts.as_ref().expect("guest facts");
        assert_eq!(
            facts.profiled_symbol.as_deref(),
            Some("do_flush_stats"),
            "boot {}",
            boot.label
        );
        for sample in samples {
            let get = |name: &str| {
                *sample
                    .metrics
                    .get(name)
                    .unwrap_or_else(|| panic!("boot {}: no {name} in {sample:?}", boot.label))
            };
            rows.push((
                boot.label.clone(),
                boot.variant.clone(),
                get("pageout_flushes"),
                get("zswpout_pages"),
            ));
        }
    }
    rows
}

#[test]
fn the_counter_patch_removes_the_forced_flushes_and_their_cpu_time_and_leaves_the_control_alone() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let results = run_campaign(&counter_campaign(dir.path()), &out);
    eprintln!(
        "{}",
        std::fs::read_to_string(out.join("report.md")).unwrap()
    );
    assert_eq!(results.controls.len(), 1);
    assert_eq!(results.controls[0].name, "unlimited");

    let finite = flush_counts(&results, None);
    eprintln!("finite zswap_max (label, variant, flushes, stored): {finite:?}");
    assert_eq!(finite.len(), 9, "{finite:?}");
    for (label, variant, flushes, stored) in &finite {
        // 32 MiB of 4 KiB pages, all stored.
        assert_eq!(*stored, 8192, "boot {label}: {finite:?}");
        match variant.as_str() {
            "A" => assert!(flushes >= stored, "boot {label}: {finite:?}"),
            _ => assert!(flushes * 100 < *stored, "boot {label}: {finite:?}"),
        }
    }

    let unlimited = flush_counts(&results, Some("unlimited"));
    eprintln!("control unlimited (label, variant, flushes, stored): {unlimited:?}");
    assert_eq!(unlimited.len(), 9, "{unlimited:?}");
    for (label, _, flushes, stored) in &unlimited {
        assert!(*stored > 0, "boot {label}: {unlimited:?}");
        assert!(flushes * 100 < *stored, "boot {label}: {unlimited:?}");
    }
    // The control ran in the same boots, after the main condition.
    for boot in &results.boots {
        let conditions: Vec<_> = boot
            .samples
            .iter()
            .map(|s| s.condition.as_deref())
            .collect();
        assert_eq!(
            conditions,
            [
                None,
                None,
                None,
                Some("unlimited"),
                Some("unlimited"),
                Some("unlimited")
            ],
            "boot {}",
            boot.label
        );
    }

    // The report's verdicts (seed 000: PAGEOUT CPU fell 44.69%, forced
    // flushes 8192 -> 0, the unlimited control showed no clear difference,
    // or, for a few background flushes a sample, a negligible one).
    use Verdict::{Changed, Improvement};
    assert_eq!(verdict(&results, None, "pageout_flushes"), Changed);
    assert_eq!(verdict(&results, None, "pageout_cpu_ns"), Improvement);
    for metric in ["pageout_cpu_ns", "pageout_flushes", "zswpout_pages"] {
        let v = verdict(&results, Some("unlimited"), metric);
        assert!(v.is_unchanged(), "control {metric}: {v:?}");
    }
}

/// A shipped campaign file (`ci/...`, from the repository's root) as
/// text, its relative paths made absolute, for a test to change and write
/// elsewhere.
fn shipped_campaign(file: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(file))
        .unwrap()
        .replace("../../", &format!("{}/", root.display()))
}

/// kernel-boot on the library's kernel (cached by the test above or built
/// here), its shipped campaign with 1 GiB and no hugepages: the plugin
/// counts from the guest's first instruction (`boot=on`) and the agent's
/// first instruction ends the window, so each boot's one sample carries
/// the boot's kernel instructions and a profile with the kernel's `__init`
/// code in it; under icount A′ repeats A exactly, and the judge says so.
#[test]
fn kernel_boot_counts_the_boot_with_its_init_code() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let text = shipped_campaign("ci/mm/kernel-boot.yaml");
    let shipped = (
        "  cmdline: [numa=fake=2, default_hugepagesz=1G, hugepagesz=1G, hugepages=2]\n",
        "  memory: 8 GiB\n",
    );
    assert!(
        text.contains(shipped.0) && text.contains(shipped.1),
        "ci/mm/kernel-boot.yaml changed shape; update this test"
    );
    let text = text
        .replace(shipped.0, "  cmdline: [numa=fake=2]\n")
        .replace(shipped.1, "  memory: 1 GiB\n");
    let campaign = dir.path().join("campaign.yaml");
    std::fs::write(&campaign, text).unwrap();
    let results = run_campaign(&campaign, &dir.path().join("out"));
    let mut figures = Vec::new();
    for boot in &results.boots {
        assert_eq!(boot.samples.len(), 1, "boot {}", boot.label);
        let sample = &boot.samples[0];
        let kernel = sample.metrics["boot_kernel_insns"];
        assert!(
            kernel > 50_000_000,
            "boot {}: {:?}",
            boot.label,
            sample.metrics
        );
        assert!(sample.metrics["boot_ns"] > 0, "boot {}", boot.label);
        let profile = &sample.profile["boot"];
        for symbol in ["start_kernel", "hugetlb_init", "mm_core_init"] {
            assert!(
                profile.get(symbol).is_some_and(|n| *n > 0),
                "boot {}: {symbol} is not in the boot's profile",
                boot.label
            );
        }
        figures.push((boot.label.clone(), kernel));
    }
    let a: Vec<u64> = figures
        .iter()
        .filter(|f| f.0.starts_with('A'))
        .map(|f| f.1)
        .collect();
    assert_eq!(a.len(), 2, "{figures:?}");
    assert_eq!(a[0], a[1], "A' did not repeat A: {figures:?}");
    // One sample a side, judged because A's boots repeat exactly
    // (docs/statistics.md, rule 1), not "too few samples".
    assert_eq!(
        verdict(&results, None, "boot_kernel_insns"),
        Verdict::NoClearDifference
    );
}

/// The library's kernel (kconfigs/mm-all.config) boots and reads back
/// every kernel feature a benchmark may need but kmemleak, which only the
/// second kernel has (and this one must not), and a benchmark of the mm
/// library runs in it, in the counting lane: ci/mm/page-fault-anon.yaml
/// as an A/A run, with no warm-up and two samples a boot. Its kernel
/// instructions per operation are the counting lane's own figure, made
/// on the host from the plugin's window.
#[test]
fn the_all_mm_kernel_reads_back_every_feature_and_runs_a_benchmark() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let text = shipped_campaign("ci/mm/page-fault-anon.yaml");
    let protocol = "protocol:\n  order: ABA\n  warmups: 1\n  samples: 5\n";
    assert!(
        text.contains(protocol) && text.contains("cost_model: count"),
        "ci/mm/page-fault-anon.yaml changed shape; update this test"
    );
    let text = text.replace(
        protocol,
        "protocol:\n  order: ABA\n  warmups: 0\n  samples: 2\n  sequential: off\n",
    );
    let campaign = dir.path().join("campaign.yaml");
    std::fs::write(&campaign, text).unwrap();
    let results = run_campaign(&campaign, &dir.path().join("out"));
    for boot in &results.boots {
        let facts = boot.facts.as_ref().expect("guest facts");
        for feature in patchbench_agent::feature::Feature::ALL {
            // The leak detector is the second kernel's
            // (kconfigs/mm-kmemleak.config): in this one, its hooks
            // would count in every slab figure, so it must be absent.
            if feature == patchbench_agent::feature::Feature::Kmemleak {
                assert!(
                    !facts.features.iter().any(|f| f == feature.name()),
                    "boot {}: the all-mm kernel has kmemleak: {:?}",
                    boot.label,
                    facts.features
                );
                continue;
            }
            assert!(
                facts.features.iter().any(|f| f == feature.name()),
                "boot {}: the all-mm kernel does not read back {} ({}): {:?}",
                boot.label,
                feature.name(),
                feature.config(),
                facts.features
            );
        }
        assert_eq!(boot.samples.len(), 2, "boot {}", boot.label);
        for sample in &boot.samples {
            let get = |name: &str| sample.metrics.get(name).copied().unwrap_or(0);
            assert_eq!(get("ops"), 16, "2 tasks x 8 operations");
            assert!(
                get("ops_kernel_insns_per_op") > 0
                    && get("ops_kernel_insns_per_op") * 16 <= get("ops_kernel_insns"),
                "boot {}: {:?}",
                boot.label,
                sample.metrics
            );
        }
    }
}
