//! End-to-end tests of the guest workloads through the real binary: a real
//! kernel tree, real builds (cached after the first run), real QEMU boots.
//! They never skip: on a host without QEMU or the kernel source they fail,
//! naming what is missing (`ci/setup-host.sh` installs it).
//!
//! The zswap-pageout flush counts are the mechanism of seed 000, so they are
//! asserted as counts, not statistics: on 6.12 a finite `memory.zswap.max`
//! forces one stats flush per page stored, `patches/zswap-counter` removes
//! it, and an unlimited `memory.zswap.max` never forced it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use patchbench::config::Variant;
use patchbench::results::Results;

mod common;
use common::{cache_dir, require_host_tools};

/// One campaign at a time: they share the cached tree and build directories.
static SERIAL: Mutex<()> = Mutex::new(());

/// ci/workloads/zswap-pageout.yaml with absolute paths and `zswap_max`.
fn pageout_campaign(dir: &Path, zswap_max: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ci/workloads/zswap-pageout.yaml"))
        .unwrap()
        .replace("../../", &format!("{}/", root.display()));
    let text = text.replace("zswap_max: 64 MiB", &format!("zswap_max: {zswap_max}"));
    assert!(
        text.contains(&format!("zswap_max: {zswap_max}"))
            && text.contains("mib_per_worker: 32")
            && text.contains("series: /"),
        "ci/workloads/zswap-pageout.yaml changed shape; update this test"
    );
    let path = dir.join("campaign.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the real binary on a campaign and returns its results document.
fn run(campaign: &Path, out: &Path) -> Results {
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("run")
        .arg(campaign)
        .arg("--out")
        .arg(out)
        .arg("--cache-dir")
        .arg(cache_dir())
        .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "patchbench run failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Results::load(&out.join("results.json")).unwrap()
}

/// (boot label, variant, pageout_flushes, zswpout_pages) of every sample.
fn flush_counts(results: &Results) -> Vec<(String, Variant, u64, u64)> {
    let mut rows = Vec::new();
    for boot in &results.boots {
        assert!(boot.complete, "boot {} incomplete", boot.label);
        assert!(
            !boot.samples.is_empty(),
            "boot {} has no samples",
            boot.label
        );
        let facts = boot.facts.as_ref().expect("guest facts");
        assert_eq!(
            facts.profiled_symbol.as_deref(),
            Some("do_flush_stats"),
            "boot {}",
            boot.label
        );
        for sample in &boot.samples {
            let get = |name: &str| {
                *sample
                    .metrics
                    .get(name)
                    .unwrap_or_else(|| panic!("boot {}: no {name} in {sample:?}", boot.label))
            };
            rows.push((
                boot.label.clone(),
                boot.variant,
                get("pageout_flushes"),
                get("zswpout_pages"),
            ));
        }
    }
    rows
}

#[test]
fn a_finite_zswap_limit_flushes_per_store_on_base_and_not_with_the_counter() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let results = run(
        &pageout_campaign(dir.path(), "64 MiB"),
        &dir.path().join("out"),
    );
    let rows = flush_counts(&results);
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (label, variant, flushes, stored) in &rows {
        // 32 MiB of 4 KiB pages, all stored.
        assert_eq!(*stored, 8192, "boot {label}: {rows:?}");
        match variant {
            Variant::A => assert!(flushes >= stored, "boot {label}: {rows:?}"),
            Variant::B => assert!(flushes * 100 < *stored, "boot {label}: {rows:?}"),
        }
    }
}

#[test]
fn an_unlimited_zswap_never_flushes_per_store() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let results = run(
        &pageout_campaign(dir.path(), "max"),
        &dir.path().join("out"),
    );
    let rows = flush_counts(&results);
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (label, _, flushes, stored) in &rows {
        assert!(*stored > 0, "boot {label}: {rows:?}");
        assert!(flushes * 100 < *stored, "boot {label}: {rows:?}");
    }
}
