use std::collections::BTreeMap;

use super::*;
use crate::reach::map::{FileFunctions, MapTree};

fn function(file: &str, name: &str, in_base: bool) -> Touched {
    Touched {
        file: file.into(),
        place: Place::Function {
            name: name.into(),
            in_base,
        },
        patches: vec![1],
    }
}

fn workload(per: Per, functions: &[(&str, f64)]) -> WorkloadReach {
    let functions: BTreeMap<String, f64> =
        functions.iter().map(|(f, v)| (f.to_string(), *v)).collect();
    WorkloadReach {
        kind: "k".into(),
        results: "results/mm/x/results.json".into(),
        phase: "ops".into(),
        per,
        samples: 2,
        kernel_insns: functions.values().sum(),
        functions,
    }
}

fn map() -> ReachMap {
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
    ReachMap {
        schema: crate::reach::map::SCHEMA,
        tree: MapTree {
            origin: "tarball t".into(),
            base_commit: "c".into(),
        },
        config_sha256: "s".into(),
        objects: "builds/t/k".into(),
        sources: Vec::new(),
        skipped: Vec::new(),
        workloads: [
            (
                "mm-ksm-merge".to_string(),
                // 1000 kernel instructions an op: ksm_do_scan 10%.
                workload(
                    Per::Op,
                    &[("ksm_do_scan", 100.0), ("shared", 50.0), ("other", 850.0)],
                ),
            ),
            (
                "mm-madvise".to_string(),
                // 100 an op: shared 20%, the madvise entry points 30%.
                workload(
                    Per::Op,
                    &[
                        ("shared", 20.0),
                        ("__x64_sys_madvise", 10.0),
                        ("__do_sys_madvise", 20.0),
                        ("copy_process", 5.0),
                        ("other", 45.0),
                    ],
                ),
            ),
        ]
        .into(),
        files: [(
            "mm/ksm.c".to_string(),
            FileFunctions {
                object: "mm/ksm.o".into(),
                functions: set(&["ksm_do_scan", "shared", "error_path"]),
                from_headers: Default::default(),
                init_exit: set(&["ksm_init"]),
            },
        )]
        .into(),
    }
}

fn library() -> Vec<LibraryCampaign> {
    ["mm-ksm-merge", "mm-madvise", "mm-never-kept"]
        .iter()
        .map(|n| LibraryCampaign {
            name: n.to_string(),
            file: PathBuf::from(format!("/src/ci/mm/{n}.yaml")),
            shown: format!("ci/mm/{n}.yaml"),
        })
        .collect()
}

#[test]
fn campaigns_rank_by_the_share_the_changed_functions_take() {
    let touched = [
        function("mm/ksm.c", "ksm_do_scan", true),
        function("mm/ksm.c", "shared", true),
        function("mm/madvise.c", "sys_madvise", true),
        function("mm/ksm.c", "added_by_the_series", false),
    ];
    let r = rank(&touched, &map(), &library(), &Inlined::new());
    // mm-madvise: shared 20% + madvise 30% = 50%; mm-ksm-merge: 10% + 5%.
    let order: Vec<(usize, String)> = r
        .ranked
        .iter()
        .map(|x| (x.campaign, format!("{:.6}", x.share)))
        .collect();
    assert_eq!(order, [(1, "0.500000".into()), (0, "0.150000".into())]);
    let shares: Vec<(&str, &str, f64, f64)> = r.ranked[0]
        .functions
        .iter()
        .map(|f| (f.file.as_str(), f.name.as_str(), f.share, f.insns))
        .collect();
    assert_eq!(
        shares,
        [
            ("mm/madvise.c", "sys_madvise", 0.3, 30.0),
            ("mm/ksm.c", "shared", 0.2, 20.0),
        ]
    );
    assert!(r.ranked[0].functions.iter().all(|f| f.via.is_empty()));
    assert_eq!(r.unmapped, [2]);
    // Each changed function of the base, with the workload where it takes
    // the largest share: `shared` is 50 of 1000 in ksm-merge, 20 of 100
    // in madvise.
    let most: Vec<(&str, Option<usize>)> = r
        .functions
        .iter()
        .map(|(_, n, reach)| {
            (
                n.as_str(),
                match reach {
                    FunctionReach::Most { campaign, .. } => Some(*campaign),
                    FunctionReach::Not(_) => None,
                },
            )
        })
        .collect();
    assert_eq!(
        most,
        [
            ("ksm_do_scan", Some(0)),
            ("shared", Some(1)),
            ("sys_madvise", Some(1))
        ]
    );
    let text = render(&r, &library(), "results/reach/x.json");
    assert!(
        text.contains("  50.000%  mm-madvise (ci/mm/mm-madvise.yaml)"),
        "{text}"
    );
    assert!(
        text.contains("mm/ksm.c: shared  mm-madvise (20.000%, 20.0 insns/op)"),
        "{text}"
    );
    assert!(
        text.contains(
            "not in the reach map (no kept run of theirs when it was built): mm-never-kept"
        ),
        "{text}"
    );
}

#[test]
fn a_changed_function_no_workload_executes_says_why() {
    let touched = [
        function("mm/ksm.c", "ksm_init", true),
        function("mm/ksm.c", "error_path", true),
        function("mm/ksm.c", "ifdefed_out", true),
        function("mm/nommu.c", "nommu_thing", true),
        function("kernel/fork.c", "not_profiled", true),
        function("kernel/fork.c", "copy_process", true),
    ];
    let r = rank(&touched, &map(), &library(), &Inlined::new());
    let why: Vec<String> = r
        .functions
        .iter()
        .map(|(_, _, reach)| match reach {
            FunctionReach::Not(why) => why.clone(),
            FunctionReach::Most { campaign, .. } => format!("run by {campaign}"),
        })
        .collect();
    assert!(why[0].starts_with("init-only"), "{why:?}");
    assert!(
        why[1].starts_with("built in mm/ksm.o, but no workload"),
        "{why:?}"
    );
    assert!(
        why[2].starts_with("not built: mm/ksm.o has no symbol of it"),
        "{why:?}"
    );
    assert!(
        why[3].starts_with("not built: the library's kernel has no mm/nommu.o"),
        "{why:?}"
    );
    assert!(why[4].contains("mm/ objects only"), "{why:?}");
    // Outside mm/, the profiles still name what runs.
    assert_eq!(why[5], "run by 1");
    assert_eq!(r.ranked.len(), 1);
    let text = render(&r, &library(), "m.json");
    assert!(
        text.contains("mm/ksm.c: ksm_init  not executed: init-only"),
        "{text}"
    );
}

#[test]
fn the_shipped_library_campaigns_are_the_maps_workloads() {
    let ci = crate::config::default_campaign_dir();
    let library = library_campaigns(&ci).unwrap();
    assert!(library.len() >= 20, "{library:?}");
    assert!(
        library
            .iter()
            .any(|c| c.name == "mm-ksm-merge" && c.shown == "ci/mm/ksm-merge.yaml")
    );
    let root = ci.parent().unwrap();
    let mut map = ReachMap::load(&root.join("results/reach/linux-6.12-mm-all.json")).unwrap();
    // The second kernel's map maps its campaigns, and adds only its file.
    let second = ReachMap::load(&root.join("results/reach/linux-6.12-mm-kmemleak.json")).unwrap();
    assert_eq!(
        map.add_kernel(second),
        Ok(vec!["mm/kmemleak.c".to_string()])
    );
    let touched = [function("mm/ksm.c", "ksm_scan_thread", true)];
    let r = rank(&touched, &map, &library, &Inlined::new());
    assert!(
        r.unmapped.is_empty(),
        "library campaigns without a kept run: {:?}",
        r.unmapped
    );
    // ksmd scans the whole process under PR_SET_MEMORY_MERGE: its loop
    // takes a larger share there than under MADV_MERGEABLE.
    assert_eq!(library[r.ranked[0].campaign].name, "mm-ksm-prctl");
    assert_eq!(library[r.ranked[1].campaign].name, "mm-ksm-merge");
}

#[test]
fn a_function_every_workload_runs_shows_the_top_campaigns_and_counts_the_rest() {
    let mut m = map();
    let mut library = library();
    for k in 0..12 {
        let name = format!("mm-w{k:02}");
        // w00 gives `shared` 1/13 of its instructions, w11 1/24.
        m.workloads.insert(
            name.clone(),
            workload(Per::Op, &[("shared", 1.0), ("other", 12.0 + k as f64)]),
        );
        library.push(LibraryCampaign {
            name: name.clone(),
            file: PathBuf::from(format!("/src/ci/mm/{name}.yaml")),
            shown: format!("ci/mm/{name}.yaml"),
        });
    }
    let r = rank(
        &[function("mm/ksm.c", "shared", true)],
        &m,
        &library,
        &Inlined::new(),
    );
    assert_eq!(r.ranked.len(), 14);
    let text = render(&r, &library, "m.json");
    assert!(
        text.contains("mm-madvise (ci/mm/mm-madvise.yaml)"),
        "{text}"
    );
    assert!(!text.contains("mm-w11 ("), "{text}");
    assert!(text.contains("... and 6 more, each at "), "{text}");
}

const KSM_C: &str = "static inline int helper(int x)
{
\treturn x + 1;
}

static int deeper(int x)
{
\treturn helper(x) * 2;
}

int ksm_do_scan(int x)
{
\t/* helper (not a call) */
\treturn deeper(x) + helper (x);
}

int other(int x)
{
\tint not_helper(int);
\treturn not_helper(x) + unhelpered;
}
";

#[test]
fn a_functions_callers_are_the_bodies_that_call_it() {
    let scan = crate::reach::cscan::scan(KSM_C.as_bytes());
    assert_eq!(
        callers_in(KSM_C.as_bytes(), &scan, "helper"),
        ["deeper", "ksm_do_scan"]
    );
    assert_eq!(
        callers_in(KSM_C.as_bytes(), &scan, "deeper"),
        ["ksm_do_scan"]
    );
    assert!(callers_in(KSM_C.as_bytes(), &scan, "ksm_do_scan").is_empty());
    // Up the callers until one with a symbol.
    let has = |f: &str| f == "ksm_do_scan";
    assert_eq!(
        symbol_callers(KSM_C.as_bytes(), &scan, "helper", has),
        ["ksm_do_scan"]
    );
    assert!(symbol_callers(KSM_C.as_bytes(), &scan, "other", has).is_empty());
}

#[test]
fn an_inlined_function_counts_by_the_callers_it_runs_inside_and_says_so() {
    let m = map();
    // `inlined_away` has no symbol: the object does not define it.
    assert!(has_no_symbol(&m, "mm/ksm.c", "inlined_away"));
    assert!(!has_no_symbol(&m, "mm/ksm.c", "ksm_do_scan"));
    assert!(!has_no_symbol(&m, "mm/ksm.c", "ksm_init"));
    let inlined: Inlined = [
        (
            ("mm/ksm.c".to_string(), "inlined_away".to_string()),
            vec!["ksm_do_scan".to_string()],
        ),
        (
            ("mm/ksm.c".to_string(), "inlined_unrun".to_string()),
            vec!["error_path".to_string()],
        ),
        // hugetlb_sysctl_init: inlined into __init hugetlb_init() alone.
        (
            ("mm/ksm.c".to_string(), "inlined_at_boot".to_string()),
            vec!["ksm_init".to_string()],
        ),
    ]
    .into();
    let touched = [
        function("mm/ksm.c", "inlined_away", true),
        function("mm/ksm.c", "inlined_unrun", true),
        function("mm/ksm.c", "inlined_at_boot", true),
    ];
    let r = rank(&touched, &m, &library(), &inlined);
    assert_eq!(r.ranked.len(), 1);
    let f = &r.ranked[0].functions[0];
    assert_eq!(
        (f.name.as_str(), f.share, f.via.as_slice()),
        ("inlined_away", 0.1, &["ksm_do_scan".to_string()][..])
    );
    let FunctionReach::Not(why) = &r.functions[1].2 else {
        panic!("{:?}", r.functions)
    };
    assert!(
        why.contains("inlined into error_path, which no workload"),
        "{why}"
    );
    let FunctionReach::Not(why) = &r.functions[2].2 else {
        panic!("{:?}", r.functions)
    };
    assert!(
        why.starts_with(
            "init-only: no symbol of its own in mm/ksm.o: inlined into ksm_init, which runs at boot"
        ),
        "{why}"
    );
    let text = render(&r, &library(), "m.json");
    assert!(
        text.contains("mm/ksm.c: inlined_away  mm-ksm-merge (<= 10.000%, 100.0 insns/op); no symbol of its own: inlined into ksm_do_scan"),
        "{text}"
    );
}

#[test]
fn run_series_measures_each_changed_function_where_it_weighs_most() {
    let touched = [
        function("mm/ksm.c", "ksm_do_scan", true),
        function("mm/ksm.c", "shared", true),
        function("mm/ksm.c", "error_path", true),
    ];
    let r = rank(&touched, &map(), &library(), &Inlined::new());
    // ksm_do_scan runs only in ksm-merge; shared weighs most in madvise
    // (20% against 5%): both run, the larger share first.
    assert_eq!(r.to_run(), [1, 0]);
    // Only ksm_do_scan: madvise runs none of it, and is not run.
    let only = rank(&touched[..1], &map(), &library(), &Inlined::new());
    assert_eq!(only.to_run(), [0]);
    let why = r.executes(0, "results/reach/x.json");
    let lines: Vec<(&str, &str, &str)> = why
        .iter()
        .map(|w| (w.file.as_str(), w.function.as_str(), w.how[0].as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            (
                "mm/ksm.c",
                "ksm_do_scan",
                "10.000% of its kernel instructions, 100.0 insns/op on the base kernel (results/reach/x.json)"
            ),
            (
                "mm/ksm.c",
                "shared",
                "5.000% of its kernel instructions, 50.0 insns/op on the base kernel (results/reach/x.json)"
            ),
        ]
    );
    assert!(r.runs("mm/ksm.c", "shared"));
    assert!(!r.runs("mm/ksm.c", "error_path"));
    assert!(r.executes(2, "m").is_empty(), "a campaign not ranked");
    let text = render(&r, &library(), "results/reach/x.json");
    assert!(
        text.contains(
            "the workload that runs each changed function most: mm-madvise, mm-ksm-merge"
        ),
        "{text}"
    );
}
