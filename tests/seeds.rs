//! Every campaign in `ci/seeds/` (the seed experiments, issue 16) loads and
//! validates through the real config parser, with its header and the knobs
//! its seed needs. The campaigns themselves are too long for CI (they run
//! through `ci/seeds/run-all.sh`); this keeps them runnable as the code
//! under them changes. No QEMU, no kernel.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use patchbench::config::{Campaign, Overrides, Plan};
use patchbench::variants::VariantSet;

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/seeds")
}

/// Every `*.yaml` in `ci/seeds/`, sorted.
fn seed_files() -> Vec<PathBuf> {
    let dir = seeds_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

fn plan_of(path: &Path) -> Plan {
    let campaign = Campaign::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    campaign
        .into_plan(path, path.parent().unwrap(), Overrides::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The comment block at the top of a campaign file, without the `#`s.
fn header(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .collect::<Vec<_>>()
        .join(" ")
}

fn stem(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn every_seed_campaign_loads_and_validates() {
    let files = seed_files();
    assert!(!files.is_empty(), "ci/seeds/ holds no campaign");
    let mut names = BTreeSet::new();
    for path in &files {
        let plan = plan_of(path);
        assert!(
            plan.name.starts_with("seed-"),
            "{}: name {:?} does not start with seed-",
            path.display(),
            plan.name
        );
        assert!(
            names.insert(plan.name.clone()),
            "{}: name {} is used twice",
            path.display(),
            plan.name
        );
        assert!(plan.samples > 0, "{}: no samples", path.display());
    }
}

/// The diagnostic campaigns beside them (ci/seeds/diagnostics/, named in
/// docs/seeds.md) load too, and each says which seed campaign it follows.
#[test]
fn every_diagnostic_campaign_loads_and_names_its_seed_campaign() {
    let dir = seeds_dir().join("diagnostics");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        n += 1;
        let plan = plan_of(&path);
        // The prefix by which the pages and reports call it a diagnostic.
        assert!(
            plan.name
                .starts_with(patchbench::results::DIAGNOSTIC_PREFIX),
            "{}",
            path.display()
        );
        let header = header(&path);
        let follows = seed_files()
            .iter()
            .any(|seed| header.contains(&format!("{}.yaml", stem(seed))));
        assert!(follows, "{}: names no seed campaign", path.display());
        assert!(
            header.contains(&format!(
                "patchbench run ci/seeds/diagnostics/{}.yaml",
                stem(&path)
            )),
            "{}: the header does not give the command that runs it",
            path.display()
        );
    }
    assert!(n > 0, "{} holds no campaign", dir.display());
}

#[test]
fn every_issue_16_experiment_has_its_campaign() {
    let stems: BTreeSet<String> = seed_files().iter().map(|p| stem(p)).collect();
    for wanted in [
        "000-counter",
        "000-counter-8workers",
        "001-shrinker",
        "002-dfl-rstat",
        "003-reclaim-refault",
        "004-swapin-margin",
    ] {
        assert!(stems.contains(wanted), "ci/seeds/{wanted}.yaml is missing");
    }
}

#[test]
fn every_header_states_the_setup_the_seed_figure_and_the_expectation() {
    for path in seed_files() {
        let header = header(&path);
        let number = &stem(&path)[..3];
        for needle in [format!("Seed {number}"), "figure".into(), "Expected".into()] {
            assert!(
                header.contains(needle.as_str()),
                "{}: the header does not say {needle:?}",
                path.display()
            );
        }
        assert!(
            header.contains(&format!("patchbench run ci/seeds/{}.yaml", stem(&path))),
            "{}: the header does not give the command that runs it",
            path.display()
        );
    }
}

#[test]
fn eight_workers_have_a_cpu_each_and_the_seeds_limits() {
    let plan = plan_of(&seeds_dir().join("000-counter-8workers.yaml"));
    assert_eq!(plan.vm.cpus.online, 8);
    let params = plan_params(&plan);
    assert_eq!(params["workers"], "8");
    assert_eq!(params["memory_max"], "2 GiB");
    assert_eq!(params["swap_max"], "1 GiB");
    assert_eq!(params["zswap_max"], "64 MiB");
}

/// The workload's parameters as the results record them.
fn plan_params(plan: &Plan) -> std::collections::BTreeMap<String, String> {
    match &plan.workload {
        patchbench::workload::Planned::Ready(p) => p.params(),
        patchbench::workload::Planned::KernelBuild(k) => {
            k.prepared(Path::new("/src"), Path::new("/build")).params()
        }
        patchbench::workload::Planned::Staged(s) => s
            .prepared(&patchbench::workload::StagedArchive {
                archive: "/staged.cpio".into(),
                source: "staged".into(),
            })
            .params(),
    }
}

/// Seed 004 needs large-folio swap-in on A: zram, zswap never enabled on
/// the boot (no ZSWAP_DEFAULT_ON, zswap.enabled=0, zswap left off), and
/// mTHP sizes set to always in every variant.
#[test]
fn seed_004_campaigns_reach_large_folio_swap_in() {
    for file in [
        "004-swapin-margin.yaml",
        "004-swapin-margin-anon.yaml",
        "004-swapin-margin-anon-random.yaml",
    ] {
        let path = seeds_dir().join(file);
        let plan = plan_of(&path);
        let at = path.display();
        assert!(
            plan.fragments
                .iter()
                .any(|f| f.ends_with("variants/no-zswap-default.config")),
            "{at}: ZSWAP_DEFAULT_ON must be off"
        );
        assert!(
            plan.fragments
                .iter()
                .any(|f| f.ends_with("kconfigs/vm-events.config")),
            "{at}: pswpin needs CONFIG_VM_EVENT_COUNTERS"
        );
        assert!(
            plan.cmdline.iter().any(|w| w == "zswap.enabled=0"),
            "{at}: zswap.enabled=0 is not on the command line"
        );
        assert!(!plan.zswap.enabled, "{at}: zswap must stay off");
        assert_eq!(
            plan.workload.swap_backend(),
            patchbench_agent::SwapBackend::Zram,
            "{at}: large folios swap in only from a synchronous device (zram)"
        );
        let VariantSet::Listed(variants) = &plan.variants else {
            panic!("{at}: variants must be listed")
        };
        assert_eq!(variants.len(), 2, "{at}");
        for variant in variants {
            for kib in [16, 32, 64] {
                let file = format!("/sys/kernel/mm/transparent_hugepage/hugepages-{kib}kB/enabled");
                assert!(
                    variant
                        .settings
                        .iter()
                        .any(|s| s.path == file && s.value == "always"),
                    "{at}: variant {} does not set {file} to always",
                    variant.name.as_str()
                );
            }
        }
    }
    let anon = plan_params(&plan_of(&seeds_dir().join("004-swapin-margin-anon.yaml")));
    assert_eq!(anon["memory"], "anon");
    // The random-order re-read changes the order and nothing else: the
    // same kernels, guest, limit and size as the sequential campaign.
    let sequential = plan_of(&seeds_dir().join("004-swapin-margin-anon.yaml"));
    let random = plan_of(&seeds_dir().join("004-swapin-margin-anon-random.yaml"));
    let mut random_params = plan_params(&random);
    assert_eq!(random_params.remove("reread").as_deref(), Some("random"));
    assert_eq!(random_params, anon);
    assert_eq!(random.fragments, sequential.fragments);
    assert_eq!(random.cmdline, sequential.cmdline);
    assert_eq!(format!("{:?}", random.vm), format!("{:?}", sequential.vm));
    assert_eq!(random.samples, sequential.samples);
}

/// Seed 002's cost-lane campaign is 002-dfl-rstat.yaml (the counting
/// lane) measured on the cost model: the same workload and kernels,
/// swapping to zram (no disk, so boots of one kernel repeat) and with the
/// seed's 70 samples.
#[test]
fn seed_002_runs_in_the_cost_lane_on_the_counting_campaigns_workload() {
    let icount = plan_of(&seeds_dir().join("002-dfl-rstat.yaml"));
    let cost = plan_of(&seeds_dir().join("002-dfl-rstat-cost.yaml"));
    assert_eq!(icount.vm.cost_model, patchbench::config::CostModel::Count);
    assert_eq!(cost.vm.cost_model, patchbench::config::CostModel::Cache);
    let mut cost_params = plan_params(&cost);
    assert_eq!(cost_params.remove("swap").as_deref(), Some("zram"));
    assert_eq!(cost_params, plan_params(&icount));
    assert_eq!(cost.fragments, icount.fragments);
    assert_eq!(cost.vm.cpus, icount.vm.cpus);
    assert_eq!(cost.samples, 70);
}

#[test]
fn the_layout_campaigns_vary_only_the_protocol() {
    // 002 across layouts is the lockstep campaign, booted eight times a
    // variant in layouts of their own.
    let lockstep = plan_of(&seeds_dir().join("002-dfl-rstat-cost-lockstep.yaml"));
    let layouts = plan_of(&seeds_dir().join("002-dfl-rstat-cost-layouts.yaml"));
    assert_eq!(plan_params(&layouts), plan_params(&lockstep));
    assert_eq!(layouts.fragments, lockstep.fragments);
    assert_eq!(layouts.vm.cost_model, patchbench::config::CostModel::Cache);
    assert_eq!(layouts.layouts, patchbench::model::Layouts::Varied);
    assert_eq!(
        layouts.order,
        patchbench::model::BootOrder::Abab { boots: 8 }
    );
    // The counter across layouts is ci/workloads/counter-cost.yaml's.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let counter = plan_of(&root.join("ci/workloads/counter-cost.yaml"));
    let counter_layouts = plan_of(&root.join("ci/workloads/counter-cost-layouts.yaml"));
    assert_eq!(plan_params(&counter_layouts), plan_params(&counter));
    assert_eq!(counter_layouts.fragments, counter.fragments);
    assert_eq!(counter_layouts.layouts, patchbench::model::Layouts::Varied);
}

/// Every campaign in ci/workloads/ loads and validates too: they are the
/// README's and docs' examples, run by hand.
#[test]
fn every_ci_workloads_campaign_loads_and_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/workloads");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "yaml") {
            let plan = plan_of(&path);
            assert!(plan.samples > 0, "{}: no samples", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 8, "only {seen} campaigns in {}", dir.display());
}

#[test]
fn seed_campaigns_stay_out_of_ci() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for script in ["ci/smoke.sh", "ci/test.sh"] {
        let text = std::fs::read_to_string(root.join(script)).unwrap();
        assert!(!text.contains("ci/seeds"), "{script} runs a seed campaign");
    }
    let workflows = root.join(".github/workflows");
    if let Ok(entries) = std::fs::read_dir(&workflows) {
        for entry in entries {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                !text.contains("ci/seeds"),
                "{} runs a seed campaign",
                path.display()
            );
        }
    }
}
