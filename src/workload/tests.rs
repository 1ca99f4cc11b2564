//! Tests of the workload parameters and specs.

use super::*;
use crate::config::{Campaign, DEFAULT_CAMPAIGN, Overrides, default_campaign_dir};
use crate::model::CpuShape;
use std::collections::BTreeMap;
use std::path::Path;

use patchbench_agent::Workload;
use serde_json::{Value, json};

use crate::model::GuestShape;

/// A listed kind's spec text.
fn spec_text(kind: &str) -> &'static str {
    kinds::SPECS
        .iter()
        .find(|(name, _)| *name == kind)
        .and_then(|(_, text)| *text)
        .unwrap()
}

#[test]
fn every_spec_parses_and_names_the_agents_metrics() {
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            spec_text("zswap-pageout"),
            "zswap-pageout",
            &[
                "pageout_cpu_ns",
                "verify_cpu_ns",
                "total_cpu_ns",
                "elapsed_ns",
                "zswpout_pages",
                "zswpin_pages",
                "pageout_flushes",
                "user_ns",
                "sys_ns",
                "guest_user_ns",
                "guest_sys_ns",
                "guest_irq_ns",
                "guest_softirq_ns",
                "guest_steal_ns",
                "kswapd_ns",
                "kcompactd_ns",
                "kworker_ns",
            ],
        ),
        (
            spec_text("rstat-flush"),
            "rstat-flush",
            &[
                "flush_calls",
                "flush_mean_ns",
                "flush_total_ns",
                "reads_per_s",
                "read_mean_ns",
                "read_loop_ns",
                "user_ns",
                "sys_ns",
                "guest_user_ns",
                "guest_sys_ns",
                "guest_irq_ns",
                "guest_softirq_ns",
                "guest_steal_ns",
                "kswapd_ns",
                "kcompactd_ns",
                "kworker_ns",
            ],
        ),
        (
            spec_text("reclaim-refault"),
            "reclaim-refault",
            &[
                "real_ns",
                "user_ns",
                "sys_ns",
                "pgscan",
                "pgsteal",
                "workingset_refault",
                "pgfault",
                "pgmajfault",
                "pswpin",
                "pswpout",
                "mthp_fault_alloc",
                "mthp_swpout",
                "mthp_swpout_16k",
                "mthp_swpout_32k",
                "mthp_swpout_64k",
                "mthp_swpout_fallback",
                "guest_user_ns",
                "guest_sys_ns",
                "guest_irq_ns",
                "guest_softirq_ns",
                "guest_steal_ns",
                "kswapd_ns",
                "kcompactd_ns",
                "kworker_ns",
            ],
        ),
        (
            spec_text("kernel-build"),
            "kernel-build",
            &[
                "real_ns",
                "user_ns",
                "sys_ns",
                "zswpout",
                "zswpin",
                "pgfault",
                "pgmajfault",
                "pswpin",
                "pswpout",
                "mthp_fault_alloc",
                "mthp_swpout",
                "mthp_swpout_16k",
                "mthp_swpout_32k",
                "mthp_swpout_64k",
                "mthp_swpout_fallback",
                "disk_irqs",
                "peak_bytes",
                "guest_user_ns",
                "guest_sys_ns",
                "guest_irq_ns",
                "guest_softirq_ns",
                "guest_steal_ns",
                "kswapd_ns",
                "kcompactd_ns",
                "kworker_ns",
            ],
        ),
        (
            spec_text("stress-ng"),
            "stress-ng",
            &[
                "ops",
                "ops_per_sec",
                "ns_per_op",
                "stressor_ns",
                "real_ns",
                "user_ns",
                "sys_ns",
                "disk_irqs",
                "guest_user_ns",
                "guest_sys_ns",
                "guest_irq_ns",
                "guest_softirq_ns",
                "guest_steal_ns",
                "kswapd_ns",
                "kcompactd_ns",
                "kworker_ns",
            ],
        ),
        (
            spec_text("mm-selftest"),
            "mm-selftest",
            &[
                "real_ns",
                "user_ns",
                "sys_ns",
                "reported_ns",
                "reported",
                "disk_irqs",
                "guest_user_ns",
                "guest_sys_ns",
                "guest_irq_ns",
                "guest_softirq_ns",
                "guest_steal_ns",
                "kswapd_ns",
                "kcompactd_ns",
                "kworker_ns",
            ],
        ),
    ];
    for (text, name, metrics) in cases {
        let spec = WorkloadSpec::parse(text).unwrap();
        assert_eq!(spec.name, name);
        let agents: Vec<&str> = spec
            .metrics
            .iter()
            .filter(|m| m.lane.is_none())
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(agents, metrics, "{name}");
        for m in &spec.metrics {
            // A time per operation, as the mm library names it.
            let suffix_ns = m.name.ends_with("_ns") || m.name == "ns_per_op";
            assert_eq!(suffix_ns, m.unit == Unit::Ns, "{name}: {}", m.name);
        }
    }
}

/// The cost lane's metrics, seven per phase the agent marks (in
/// `cost::sample_metrics`'s order), then the workload's per-call metric if
/// it has one, declared after the agent's own.
#[test]
fn every_spec_declares_the_cost_metrics_of_the_phases_it_marks() {
    let cases: [(&str, &[&str], &str); 6] = [
        (
            spec_text("zswap-pageout"),
            &["total", "pageout", "verify"],
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: 64 MiB",
        ),
        (
            spec_text("rstat-flush"),
            &["read_loop"],
            "kind: rstat-flush",
        ),
        (
            spec_text("reclaim-refault"),
            &["run"],
            "kind: reclaim-refault",
        ),
        (spec_text("kernel-build"), &["build"], "kind: kernel-build"),
        (spec_text("stress-ng"), &["ops"], "kind: stress-ng"),
        (spec_text("mm-selftest"), &["run"], "kind: mm-selftest"),
    ];
    for (text, phases, kind) in cases {
        let spec = WorkloadSpec::parse(text).unwrap();
        let workload = parse(kind).unwrap().into_workload(&vm("1 GiB", 2)).unwrap();
        let per_call = match &workload {
            Planned::Ready(p) => p.wire().per_call_cost(),
            Planned::KernelBuild(_) | Planned::Staged(_) => None,
        };
        // The cost lane's: those of the cache model and those either lane
        // makes, in the spec's order.
        let cost: Vec<&MetricSpec> = spec
            .metrics
            .iter()
            .filter(|m| matches!(m.lane, Some(MetricLane::Cost | MetricLane::Plugin)))
            .collect();
        // The counting lane's, three per phase in `cost::count_metric_names`'
        // order: the instructions, then split by mode, the lane's own
        // measure of work. (Their directions follow docs/statistics.md's
        // unit rule, tests/docs.rs.)
        // (Less the kernel's instructions per operation, which the host
        // derives where a kind reports `ops`: `cost::kernel_insns_per_op`.)
        let count: Vec<&str> = spec
            .metrics
            .iter()
            .filter(|m| matches!(m.lane, Some(MetricLane::Count | MetricLane::Plugin)))
            .map(|m| m.name.as_str())
            .filter(|m| *m != "ops_kernel_insns_per_op")
            .collect();
        let want_count: Vec<String> = phases
            .iter()
            .flat_map(|p| crate::cost::count_metric_names(p))
            .collect();
        assert_eq!(count, want_count, "{}", spec.name);
        for m in spec
            .metrics
            .iter()
            .filter(|m| m.lane == Some(MetricLane::Count))
        {
            assert_eq!(m.unit, Unit::Insns, "{}", m.name);
        }
        let want: Vec<String> = phases
            .iter()
            .flat_map(|p| {
                [
                    "insns",
                    "l1d_misses",
                    "llc_misses",
                    "coherence_misses",
                    "modeled_cycles",
                    "kernel_modeled_cycles",
                    "user_modeled_cycles",
                ]
                .map(|m| format!("{p}_{m}"))
            })
            .chain(per_call.map(|c| c.metric.to_string()))
            .collect();
        if let Some(c) = per_call {
            assert!(phases.contains(&c.phase), "{}", spec.name);
            assert!(
                spec.metrics.iter().any(|m| m.name == c.calls),
                "{}",
                spec.name
            );
        }
        let got: Vec<&str> = cost.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(got, want, "{}", spec.name);
        for m in cost {
            let cycles =
                m.name.ends_with("_modeled_cycles") || per_call.is_some_and(|c| c.metric == m.name);
            // Cycles are the lane's time, instructions the work they
            // price, misses counts that explain them.
            let unit = if cycles {
                Unit::Cycles
            } else if m.name.ends_with("_insns") {
                Unit::Insns
            } else {
                Unit::Count
            };
            assert_eq!(m.unit, unit, "{}", m.name);
        }
        for phase in phases {
            assert!(
                patchbench_agent::marker::Phase::ALL
                    .iter()
                    .any(|p| p.name() == *phase),
                "the agent marks no phase {phase}"
            );
        }
    }
}

/// A kind is registered once, in the agent's list
/// (`patchbench_agent::with_kinds!`), from which the wire, the agent's run
/// dispatch and the host's campaign section are generated: every spec file
/// must be a listed kind's, as the host reads it, and every listed kind the
/// agent's too.
#[test]
fn every_spec_file_is_a_registered_kind_on_both_sides() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            files.push(path);
        }
    }
    assert!(!files.is_empty(), "no specs in {}", dir.display());
    for path in &files {
        let kind = path.file_stem().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let listed = kinds::SPECS.iter().find(|(name, _)| *name == kind);
        assert_eq!(
            listed.and_then(|(_, t)| *t),
            Some(text.as_str()),
            "{}: not a kind with a spec in patchbench_agent::with_kinds!",
            path.display()
        );
        assert!(
            Workload::KINDS.contains(&kind),
            "{kind}: the agent has no such kind"
        );
        assert_eq!(spec_for_kind(kind).unwrap().name, kind);
    }
    let specified = kinds::SPECS.iter().filter(|(_, t)| t.is_some()).count();
    assert_eq!(specified, files.len(), "a listed spec without its file");
    // The host lists exactly the agent's kinds, `exec` aside.
    let host: Vec<&str> = kinds::SPECS.iter().map(|(name, _)| *name).collect();
    assert_eq!(host, Workload::KINDS[..Workload::KINDS.len() - 1]);
}

#[test]
fn spec_for_covers_every_measuring_workload() {
    let vm = vm("1 GiB", 2);
    for text in [
        "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: 64 MiB",
        "kind: rstat-flush",
        "kind: reclaim-refault",
        "kind: kernel-build",
        "kind: stress-ng",
        "kind: mm-selftest",
    ] {
        let workload = parse(text).unwrap().into_workload(&vm).unwrap();
        let spec = spec_for_kind(workload.kind()).unwrap();
        assert_eq!(
            Some(spec.name.as_str()),
            text.strip_prefix("kind: ")
                .map(|k| k.lines().next().unwrap())
        );
    }
    let fault = parse("kind: guest-fault\nfault: hang").unwrap();
    assert!(spec_for_kind(fault.into_workload(&vm).unwrap().kind()).is_none());
}

/// The workload section of the smoke campaign replaced by `workload`,
/// parsed as a whole campaign (so errors carry the YAML path).
fn campaign_error(workload: &str) -> String {
    let start = DEFAULT_CAMPAIGN.find("workload:\n").unwrap();
    let end = DEFAULT_CAMPAIGN.find("protocol:\n").unwrap();
    let indented: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!(
        "{}workload:\n{indented}{}",
        &DEFAULT_CAMPAIGN[..start],
        &DEFAULT_CAMPAIGN[end..]
    );
    Campaign::parse(&text, Path::new("x.yaml"))
        .and_then(|c| {
            c.into_plan(
                Path::new("x.yaml"),
                &default_campaign_dir(),
                Overrides::default(),
            )
        })
        .unwrap_err()
        .chain()
}

fn parse(text: &str) -> Result<WorkloadConfig, String> {
    yaml_serde::from_str(text).map_err(|e| e.to_string())
}

fn vm(memory: &str, online: u32) -> GuestShape {
    GuestShape {
        memory: memory.parse().unwrap(),
        cpus: CpuShape::new(online, online).unwrap(),
    }
}

#[test]
fn an_unknown_parameter_is_named() {
    for (workload, bad) in [
        ("kind: rstat-flush\nreadz: 5", "readz"),
        ("kind: reclaim-refault\nfile_mib: 5", "file_mib"),
        (
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: max\nworker: 2",
            "worker",
        ),
    ] {
        let err = campaign_error(workload);
        assert!(
            err.contains(bad) && err.contains("unknown field"),
            "{workload}: {err}"
        );
    }
}

#[test]
fn a_wrong_unit_is_named() {
    for (workload, param) in [
        ("kind: reclaim-refault\nfile_size: lots", "file_size"),
        ("kind: reclaim-refault\nfile_size: -5 MiB", "file_size"),
        ("kind: reclaim-refault\ncgroups: lots", "cgroups"),
        ("kind: reclaim-refault\ncgroups: -2", "cgroups"),
        ("kind: reclaim-refault\nswap: tape", "swap"),
        ("kind: reclaim-refault\nmemory: ram", "memory"),
        (
            "kind: reclaim-refault\nlimit_percent: most",
            "limit_percent",
        ),
        ("kind: rstat-flush\ndirty_pause: soon", "dirty_pause"),
        ("kind: rstat-flush\ndirty_size: big", "dirty_size"),
        ("kind: rstat-flush\nreads: -1", "reads"),
        (
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: max\nrandom_percent: half",
            "random_percent",
        ),
        (
            "kind: zswap-pageout\nmib_per_worker: -32\nzswap_max: max",
            "mib_per_worker",
        ),
        (
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: lots",
            "zswap_max",
        ),
    ] {
        let err = campaign_error(workload);
        assert!(
            err.contains(&format!("workload: workload.{param}:")),
            "{workload}: {err}"
        );
    }
}

#[test]
fn more_memory_than_the_guest_has_is_named_before_boot() {
    let vm = vm("1 GiB", 2);
    for (workload, param) in [
        (
            "kind: zswap-pageout\nmib_per_worker: 4096\nzswap_max: max",
            "mib_per_worker",
        ),
        (
            "kind: zswap-pageout\nmib_per_worker: 300\nworkers: 2\nzswap_max: max",
            "mib_per_worker",
        ),
        ("kind: reclaim-refault\nfile_size: 2 GiB", "file_size"),
        (
            "kind: reclaim-refault\ncgroups: 2 per cpu\nfile_size: 200 MiB",
            "file_size",
        ),
        ("kind: rstat-flush\ndirty_size: 512 MiB", "dirty_size"),
        (
            "kind: zswap-pageout\nmib_per_worker: 32\nworkers: 3\nzswap_max: max",
            "workers",
        ),
        ("kind: rstat-flush\ncgroups: 0", "cgroups"),
        (
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: max\nrandom_percent: 101",
            "random_percent",
        ),
        ("kind: rstat-flush\nreads: 0", "reads"),
        ("kind: reclaim-refault\nfile_size: 5000 KiB", "file_size"),
        ("kind: reclaim-refault\nlimit_percent: 0", "limit_percent"),
        ("kind: reclaim-refault\nlimit_percent: 101", "limit_percent"),
    ] {
        let err = parse(workload).unwrap().into_workload(&vm).unwrap_err();
        assert_eq!(err.param, param, "{workload}: {err}");
        assert!(
            err.to_string().starts_with(&format!("workload.{param} (")),
            "{err}"
        );
    }
}

#[test]
fn reclaim_refault_takes_anonymous_memory_at_the_edge_of_its_limit() {
    let workload = parse(
        "kind: reclaim-refault\ncgroups: 2\nfile_size: 32 MiB\nmemory: anon\nlimit_percent: 90",
    )
    .unwrap()
    .into_workload(&vm("1 GiB", 2));
    assert_eq!(
        workload.map(|w| wire(&w)),
        Ok(json!({
            "kind": "reclaim-refault", "cgroups": 2, "file_mib": 32, "swap": "zram",
            "memory": "anon", "limit_percent": 90,
        }))
    );
    let random = parse(
        "kind: reclaim-refault\ncgroups: 2\nfile_size: 32 MiB\nmemory: anon\nlimit_percent: 90\nreread: random",
    )
    .unwrap()
    .into_workload(&vm("1 GiB", 2))
    .unwrap();
    assert_eq!(wire(&random)["reread"], "random");
    let Planned::Ready(prepared) = &random else {
        panic!("not ready: {random:?}")
    };
    assert_eq!(prepared.params()["reread"], "random");
    let tmpfs = parse("kind: reclaim-refault\nreread: random")
        .unwrap()
        .into_workload(&vm("1 GiB", 2))
        .unwrap_err();
    assert_eq!(tmpfs.param, "reread");
    assert!(tmpfs.to_string().contains("memory: anon"), "{tmpfs}");
}

#[test]
fn defaults_scale_with_the_online_cpus() {
    let workload = parse("kind: reclaim-refault")
        .unwrap()
        .into_workload(&vm("4 GiB", 4));
    assert_eq!(
        workload.map(|w| wire(&w)),
        Ok(json!({"kind": "reclaim-refault", "cgroups": 8, "file_mib": 50, "swap": "zram"}))
    );
    let workload = parse("kind: rstat-flush\ncgroups: 3\ndirty_pause: 0s")
        .unwrap()
        .into_workload(&vm("1 GiB", 2));
    assert_eq!(
        workload.map(|w| wire(&w)),
        Ok(json!({
            "kind": "rstat-flush", "cgroups": 3, "dirty_kib": 256,
            "dirty_pause": {"secs": 0, "nanos": 0}, "reads": 1000,
        }))
    );
    assert_eq!(CgroupCount::parse("2 per cpu"), Ok(CgroupCount::PerCpu(2)));
    assert!(CgroupCount::parse("2 per core").is_err());
}

#[test]
fn zswap_pageout_counts_flushes_unless_told_not_to() {
    let vm = vm("1 GiB", 2);
    let get = |extra: &str| match parse(&format!(
        "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: 64 MiB{extra}"
    ))
    .unwrap()
    .into_workload(&vm)
    .map(|w| wire(&w))
    .unwrap()["count_flushes"]
    {
        Value::Bool(count_flushes) => count_flushes,
        ref other => panic!("{other:?}"),
    };
    assert!(get(""));
    assert!(!get("\ncount_flushes: false"));
}

#[test]
fn zswap_pageout_compacts_and_settles_only_when_told_to() {
    let vm = vm("1 GiB", 2);
    let prepared = |extra: &str| match parse(&format!(
        "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: 64 MiB{extra}"
    ))
    .unwrap()
    .into_workload(&vm)
    .unwrap()
    {
        Planned::Ready(p) => p,
        Planned::KernelBuild(plan) => panic!("{plan:?}"),
        Planned::Staged(plan) => panic!("{plan:?}"),
    };
    // Each is left out of the wire when off.
    let flags = |p: &Prepared| {
        let wire = serde_json::to_value(p.wire()).unwrap();
        let on = |key: &str| wire.get(key) == Some(&json!(true));
        (on("compact"), on("settle"))
    };
    let off = prepared("");
    assert_eq!(flags(&off), (false, false));
    assert_eq!(off.params()["compact"], "false");
    assert_eq!(off.params()["settle"], "false");
    let compacted = prepared("\ncompact: true");
    assert_eq!(flags(&compacted), (true, false));
    assert_eq!(compacted.params()["compact"], "true");
    let settled = prepared("\nsettle: true");
    assert_eq!(flags(&settled), (false, true));
    assert_eq!(settled.params()["settle"], "true");
    for param in ["compact", "settle"] {
        let err = parse(&format!(
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: 64 MiB\n{param}: 1"
        ))
        .unwrap_err();
        assert!(err.contains(&format!("workload.{param}")), "{err}");
    }
}

#[test]
fn kernel_build_parameters_are_checked_before_boot() {
    let vm = vm("1 GiB", 2);
    for (workload, param) in [
        (
            "kind: kernel-build
targets: []",
            "targets",
        ),
        (
            "kind: kernel-build
targets: [../../etc/passwd]",
            "targets",
        ),
        (
            "kind: kernel-build
targets: [/vmlinux]",
            "targets",
        ),
        (
            "kind: kernel-build
targets: [\"mm/a.o; rm -rf /\"]",
            "targets",
        ),
        (
            "kind: kernel-build
jobs: 9",
            "jobs",
        ),
        (
            "kind: kernel-build
jobs: 0",
            "jobs",
        ),
        (
            "kind: kernel-build
memory_max: 2 GiB",
            "memory_max",
        ),
        (
            "kind: kernel-build
memory_max: max",
            "memory_max",
        ),
        (
            "kind: kernel-build
memory_max: 1 MiB",
            "memory_max",
        ),
    ] {
        let err = parse(workload).unwrap().into_workload(&vm).unwrap_err();
        assert_eq!(err.param, param, "{workload}: {err}");
    }
    for (workload, param) in [
        (
            "kind: kernel-build
driver: ninja",
            "driver",
        ),
        (
            "kind: kernel-build
config: allyesconfig",
            "config",
        ),
        (
            "kind: kernel-build
memory_max: lots",
            "memory_max",
        ),
        (
            "kind: kernel-build
target: [vmlinux]",
            "target",
        ),
    ] {
        let err = campaign_error(workload);
        assert!(err.contains(param), "{workload}: {err}");
    }
}

#[test]
fn kernel_build_defaults_build_vmlinux_with_kbuild() {
    let workload = parse("kind: kernel-build")
        .unwrap()
        .into_workload(&vm("1 GiB", 2))
        .unwrap();
    let Planned::KernelBuild(plan) = &workload else {
        panic!("{workload:?}")
    };
    assert_eq!(
        serde_json::to_value(plan.prepared(Path::new("/src"), Path::new("/build")).wire()).unwrap(),
        json!({
            "kind": "kernel-build", "config": "defconfig", "driver": "kbuild",
            "src": "/src", "build": "/build", "targets": ["vmlinux"], "jobs": 2,
            "memory_max": {"bytes": 256 << 20}, "zswap_max": "max",
        })
    );
}

/// The guest protocol's workload of a ready one, as the wire carries it.
fn wire(planned: &Planned) -> Value {
    match planned {
        Planned::Ready(p) => serde_json::to_value(p.wire()).unwrap(),
        Planned::KernelBuild(plan) => panic!("not prepared: {plan:?}"),
        Planned::Staged(plan) => panic!("not staged: {plan:?}"),
    }
}

#[test]
fn a_prepared_workload_lists_its_parameters_as_people_write_them() {
    let workload = parse("kind: rstat-flush\ncgroups: 3\ndirty_pause: 1ms")
        .unwrap()
        .into_workload(&vm("1 GiB", 2))
        .unwrap();
    let Planned::Ready(prepared) = workload else {
        panic!()
    };
    let params = prepared.params();
    assert_eq!(params["cgroups"], "3");
    assert_eq!(params["dirty_size"], "256 KiB");
    assert_eq!(params["dirty_pause"], "1ms");
    assert_eq!(prepared.kind(), "rstat-flush");
}

#[test]
fn host_io_counted_by_a_metric_is_a_runs_only_where_a_sample_counted_some() {
    use std::collections::BTreeMap;
    let spec = spec_for_kind("kernel-build").unwrap();
    let io = spec
        .host_io
        .expect("kernel-build says what host I/O it may do");
    assert_eq!(io.counted_by.as_deref(), Some("disk_irqs"));
    let sample = |n: Option<u64>| -> BTreeMap<String, u64> {
        n.map(|n| ("disk_irqs".to_string(), n))
            .into_iter()
            .collect()
    };
    assert_eq!(io.in_run(&[sample(Some(0)), sample(Some(0))]), None);
    let some = io.in_run(&[sample(Some(0)), sample(Some(7))]).unwrap();
    assert!(some.ends_with(": disk_irqs 7 in 1 of 2 samples"), "{some}");
    let old = io.in_run(&[sample(None)]).unwrap();
    assert!(
        old.ends_with("; the run has no disk_irqs to count it"),
        "{old}"
    );
}

/// Every benchmark of the mm library (`harness: ops`): a campaign section
/// naming only its kind plans, and records exactly the parameters its spec
/// lists, at the spec's defaults; its metrics are the harness's after its
/// own, each named once.
#[test]
fn every_benchmark_records_its_spec_parameters_at_their_defaults() {
    // The library's guest; hugetlb-gigantic needs 6 GiB (its campaign's),
    // an aligned 1 GiB range being free only then.
    let vm_for = |kind: &str| {
        if kind == "hugetlb-gigantic" {
            vm("6 GiB", 2)
        } else {
            vm("1 GiB", 2)
        }
    };
    let mut benchmarks = 0;
    for (kind, _) in kinds::SPECS {
        let Some(spec) = spec_for_kind(kind) else {
            continue;
        };
        if spec.harness.is_none() {
            continue;
        }
        benchmarks += 1;
        let planned = parse(&format!("kind: {kind}"))
            .unwrap()
            .into_workload(&vm_for(kind))
            .unwrap_or_else(|e| panic!("{kind}: its defaults do not plan: {e}"));
        let Planned::Ready(prepared) = planned else {
            panic!("{kind}: a benchmark is ready as planned");
        };
        let recorded = prepared.params();
        let listed: BTreeMap<String, String> = spec
            .params
            .iter()
            .map(|p| {
                let text = match &p.default {
                    yaml_serde::Value::String(s) => s.clone(),
                    other => yaml_serde::to_string(other).unwrap().trim().to_string(),
                };
                (p.name.clone(), text)
            })
            .collect();
        assert_eq!(
            recorded, listed,
            "{kind}: recorded params vs its spec's defaults"
        );
        assert_eq!(spec.wall, "ops_ns", "{kind}");
        let mut names: Vec<&str> = spec.metrics.iter().map(|m| m.name.as_str()).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "{kind}: a metric named twice");
        let err = parse(&format!("kind: {kind}\nbogus: 1")).unwrap_err();
        assert!(err.contains("bogus"), "{kind}: {err}");
        for (param, value) in [("tasks", "0"), ("ops", "0")] {
            let err = parse(&format!("kind: {kind}\n{param}: {value}"))
                .unwrap()
                .into_workload(&vm_for(kind))
                .unwrap_err();
            assert_eq!(err.param, param, "{kind}: {err}");
        }
    }
    assert!(benchmarks > 0, "no benchmark of the mm library");
}

/// stress-ng's parameters are checked against the host's own stress-ng
/// (the one the guest runs) when the campaign is read, before anything
/// is built: each bad one is named.
#[test]
fn stress_ng_refuses_what_the_hosts_stress_ng_would() {
    let vm = vm("1 GiB", 2);
    let refused = |text: &str| {
        parse(&format!("kind: stress-ng\n{text}"))
            .unwrap()
            .into_workload(&vm)
            .unwrap_err()
    };
    let e = refused("stressor: mmapp");
    assert_eq!((e.param, e.value.as_str()), ("stressor", "mmapp"));
    assert!(e.problem.contains("no such stressor"), "{e:?}");
    assert!(e.problem.contains("mmap "), "the near ones: {e:?}");
    for (text, param) in [
        ("instances: 0", "instances"),
        ("instances: 65", "instances"),
        ("instances: 4\nops: 3", "ops"),
        ("ops: 0", "ops"),
        ("options: {mmap-bytes: 99Q}", "options"),
        ("options: {timeout: 5}", "options"),
        ("options: {mmap-ops: 5}", "options"),
        ("options: {no-such-option: 1}", "options"),
        ("stressor: \"--all\"", "stressor"),
    ] {
        assert_eq!(refused(text).param, param, "{text}");
    }
    let e = refused("options: {mmap-bytes: 99Q}");
    assert!(e.problem.contains("--dry-run"), "{e:?}");
    let Planned::Staged(StagedPlan::StressNg(plan)) = parse(
        "kind: stress-ng\nstressor: vm\ninstances: 2\nops: 8\noptions: {vm-bytes: 8M, vm-keep: true}",
    )
    .unwrap()
    .into_workload(&vm)
    .unwrap() else {
        panic!("stress-ng is staged");
    };
    assert_eq!(plan.options["vm-bytes"], "8M");
    assert_eq!(plan.options["vm-keep"], "");
}

#[test]
fn mm_selftest_names_a_program_it_cannot_read() {
    let err = campaign_error("kind: mm-selftest\nprogram: ksm_tests");
    assert!(
        err.contains("workload.program") && err.contains("mremap_test"),
        "{err}"
    );
    let planned = parse("kind: mm-selftest")
        .unwrap()
        .into_workload(&vm("1 GiB", 2))
        .unwrap();
    let Planned::Staged(plan) = planned else {
        panic!("{planned:?}")
    };
    let prepared = plan.prepared(&StagedArchive {
        archive: "/c/staged/mm-selftest-0123456789abcdef.cpio".into(),
        source: "2a1097b70a378b27".into(),
    });
    assert_eq!(prepared.params()["program"], "mremap_test");
    assert_eq!(prepared.params()["args"], "-p 1");
    assert_eq!(
        prepared.wire().initramfs_archives(),
        ["/c/staged/mm-selftest-0123456789abcdef.cpio"]
    );
}
