use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::config::reaches::{DeclaredFunction, Reaches};

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

fn candidate(name: &str, declared: &[(&str, &str)], evidence: Vec<EvidenceFile>) -> Candidate {
    Candidate {
        name: name.into(),
        file: PathBuf::from(format!("/src/ci/seeds/{name}.yaml")),
        shown: format!("ci/seeds/{name}.yaml"),
        workload: "zswap-pageout".into(),
        tree: TreeSource::Tarball("/t.tar.xz".into()),
        reaches: Reaches {
            same_as: None,
            kconfig: vec!["MEMCG".into()],
            functions: declared
                .iter()
                .map(|(file, name)| DeclaredFunction {
                    name: (*name).into(),
                    file: (*file).into(),
                    why: format!("the workload calls {name}"),
                    unprofiled: None,
                })
                .collect(),
            evidence: Vec::new(),
        },
        evidence,
    }
}

fn profile(path: &str, symbols: &[(&str, u64)]) -> EvidenceFile {
    EvidenceFile {
        path: PathBuf::from(path),
        profiled: true,
        symbols: symbols
            .iter()
            .map(|(s, c)| {
                (
                    (*s).to_string(),
                    Seen::Profile {
                        cycles: *c,
                        samples: 2,
                    },
                )
            })
            .collect::<BTreeMap<_, _>>(),
        counted: None,
    }
}

#[test]
fn a_declared_function_chooses_its_campaign_and_says_so() {
    let touched = [
        function("mm/memcontrol.c", "obj_cgroup_may_zswap", true),
        function("mm/memcontrol.c", "memory_files_show", true),
    ];
    let candidates = [
        candidate(
            "zswap",
            &[("mm/memcontrol.c", "obj_cgroup_may_zswap")],
            vec![],
        ),
        candidate("other", &[("mm/vmscan.c", "shrink_lruvec")], vec![]),
    ];
    let choice = choose(&touched, &candidates, Path::new("/src"));
    assert_eq!(choice.chosen.len(), 1);
    assert_eq!(choice.chosen[0].candidate, 0);
    assert_eq!(choice.unreached, [1]);
    let text = render(&choice, &candidates, 0);
    assert!(
        text.contains("zswap (ci/seeds/zswap.yaml, workload zswap-pageout)"),
        "{text}"
    );
    assert!(
        text.contains("executes mm/memcontrol.c: obj_cgroup_may_zswap"),
        "{text}"
    );
    assert!(
        text.contains("declared in ci/seeds/zswap.yaml: the workload calls obj_cgroup_may_zswap"),
        "{text}"
    );
    assert!(text.contains("no shipped campaign executes"), "{text}");
    assert!(
        text.contains("mm/memcontrol.c: memory_files_show"),
        "{text}"
    );
}

#[test]
fn the_same_name_in_another_file_is_not_the_declared_function() {
    let touched = [function("mm/zswap.c", "obj_cgroup_may_zswap", true)];
    let candidates = [candidate(
        "zswap",
        &[("mm/memcontrol.c", "obj_cgroup_may_zswap")],
        vec![],
    )];
    let choice = choose(&touched, &candidates, Path::new("/src"));
    assert!(choice.chosen.is_empty());
}

#[test]
fn a_profile_that_saw_the_function_chooses_and_names_its_file() {
    let touched = [
        function("mm/memcontrol.c", "mem_cgroup_css_rstat_flush", true),
        // Added by the series: no run of the base can have seen it.
        function("mm/memcontrol.c", "zswap_store", false),
    ];
    let candidates = [candidate(
        "refault",
        &[],
        vec![profile(
            "/src/ci/seeds/../../results/seeds/x/results.json",
            &[("mem_cgroup_css_rstat_flush", 900), ("zswap_store", 10)],
        )],
    )];
    let choice = choose(&touched, &candidates, Path::new("/src"));
    assert_eq!(choice.chosen.len(), 1);
    let hit = &choice.chosen[0].hits[0];
    assert_eq!(hit.function, "mem_cgroup_css_rstat_flush");
    assert_eq!(hit.declared, None);
    assert_eq!(hit.seen[0].0, "results/seeds/x/results.json");
    assert_eq!(choice.chosen[0].hits.len(), 1, "{:?}", choice.chosen);
    let record = choice.record(Some(0), "ci/seeds/refault.yaml");
    assert_eq!(
        record.executes[0].how,
        [
            "seen in the cost profile, 450 modeled cycles a sample on the base (results/seeds/x/results.json)"
        ]
    );
    // Added by the series: not a function no campaign executes.
    assert!(record.unreached.is_empty(), "{:?}", record.unreached);
}

#[test]
fn a_series_no_campaign_reaches_is_told_it_says_nothing() {
    let touched = [
        function("fs/ext4/inode.c", "ext4_write_begin", true),
        Touched {
            file: "Documentation/mm/x.rst".into(),
            place: Place::NotC,
            patches: vec![2],
        },
    ];
    let candidates = [candidate(
        "zswap",
        &[("mm/memcontrol.c", "obj_cgroup_may_zswap")],
        vec![],
    )];
    let choice = choose(&touched, &candidates, Path::new("/src"));
    assert!(choice.chosen.is_empty());
    let text = render(&choice, &candidates, 0);
    assert!(text.contains("no campaign chosen"), "{text}");
    assert!(text.contains(NOTHING_REACHED), "{text}");
    assert!(
        text.contains("Documentation/mm/x.rst: (not C source)  (patch 2)"),
        "{text}"
    );
    // A library workload runs instead: no smoke run, no warning.
    let library = render(&choice, &candidates, 2);
    assert!(
        library.contains("no ci/seeds campaign chosen")
            && library.contains("2 workload(s) of the mm library do (below)")
            && !library.contains(NOTHING_REACHED)
            && !library.contains("smoke"),
        "{library}"
    );
    let record = choice.record(None, "ci/smoke.yaml");
    assert!(record.executes.is_empty());
    let lines = record.lines();
    assert!(
        lines[0].starts_with("WARNING: no shipped workload executes"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("fs/ext4/inode.c: ext4_write_begin"),
        "{lines:?}"
    );
}

#[test]
fn paths_are_shown_from_the_checkout() {
    assert_eq!(
        shown(
            Path::new("/w/p"),
            Path::new("/w/p/ci/seeds/../../results/x.json")
        ),
        "results/x.json"
    );
    assert_eq!(
        shown(Path::new("/w/p"), Path::new("/elsewhere/y.yaml")),
        "/elsewhere/y.yaml"
    );
}

/// The shipped map (ci/seeds/*.yaml's `reaches:` blocks) against the
/// committed runs it names: every declared function that a cost-lane
/// profile could show (not marked `unprofiled`) is in it, every one marked
/// `unprofiled` is not, and the function profiler's function was counted
/// on the base and is declared. A failure lists what the profile saw.
#[test]
fn the_shipped_map_agrees_with_the_committed_profiles() {
    let candidates = candidates(&crate::config::default_campaign_dir()).unwrap();
    assert!(
        candidates.len() >= 4,
        "{:?}",
        candidates.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
    let mut wrong = Vec::new();
    for c in &candidates {
        for e in &c.evidence {
            if e.profiled {
                for f in &c.reaches.functions {
                    match (e.saw(&f.name), &f.unprofiled) {
                        (None, None) => wrong.push(format!(
                            "{}: {} is declared, but {} did not see it; it saw {} symbols, e.g. {}",
                            c.shown,
                            f.name,
                            e.path.display(),
                            e.symbols.len(),
                            e.symbols
                                .keys()
                                .filter(|s| s.contains(f.name.split('_').nth(1).unwrap_or("")))
                                .take(12)
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                        (Some(seen), Some(why)) => wrong.push(format!(
                            "{}: {} is marked unprofiled ({why}), but {} saw it {seen}",
                            c.shown,
                            f.name,
                            e.path.display()
                        )),
                        _ => {}
                    }
                }
            }
            if let Some((symbol, seen)) = &e.counted {
                let Seen::Counted { per_sample, .. } = seen else {
                    unreachable!()
                };
                if *per_sample <= 0.0 {
                    wrong.push(format!(
                        "{}: {} counted {symbol} 0 times on the base",
                        c.shown,
                        e.path.display()
                    ));
                }
                if !c.reaches.functions.iter().any(|f| f.name == *symbol) {
                    wrong.push(format!(
                        "{}: {} counted {symbol} ({seen}), which the campaign does not declare",
                        c.shown,
                        e.path.display()
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Each option a campaign's map says its code needs is set `=y` by one of
/// the campaign's own fragments.
#[test]
fn the_shipped_maps_kconfig_options_are_in_their_campaigns_fragments() {
    let ci = crate::config::default_campaign_dir();
    for c in candidates(&ci).unwrap() {
        let campaign = Campaign::load(&c.file).unwrap();
        let dir = c.file.parent().unwrap();
        let text: String = campaign
            .kernel
            .fragments
            .iter()
            .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
            .collect();
        for option in &c.reaches.kconfig {
            assert!(
                text.lines()
                    .any(|l| l.trim() == format!("CONFIG_{option}=y")),
                "{}: CONFIG_{option}=y is in none of its fragments",
                c.shown
            );
        }
    }
}

#[test]
fn a_campaign_with_reaches_must_measure_the_series() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = dir.path().join("seeds");
    std::fs::create_dir(&seeds).unwrap();
    let text = crate::config::DEFAULT_CAMPAIGN.to_string()
        + "variants:\n  - {name: off}\n  - {name: on, cmdline: [zswap.enabled=1]}\nreaches:\n  functions:\n    - {name: zswap_store, file: mm/zswap.c, why: it stores}\n";
    std::fs::write(seeds.join("x.yaml"), text).unwrap();
    let err = candidates(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("x.yaml") && err.contains("no variant applies the whole series"),
        "{err}"
    );
}

#[test]
fn the_report_of_a_sanity_run_says_it_tells_nothing_about_the_series() {
    let mut results = crate::results::tests::fixture();
    results.reach = Some(crate::results::ReachRecord {
        executes: Vec::new(),
        unreached: vec!["mm/ksm.c: ksm_scan_thread".into()],
    });
    crate::judge::judge_into(&mut results);
    let markdown = crate::report::markdown(&results);
    let terminal = crate::report::terminal(&results);
    for text in [&markdown, &terminal] {
        assert!(text.contains(NOTHING_REACHED), "{text}");
        assert!(text.contains("mm/ksm.c: ksm_scan_thread"), "{text}");
    }
    // Above the tables, where it is read first.
    assert!(
        markdown.find(NOTHING_REACHED) < markdown.find("| metric"),
        "{markdown}"
    );
}

#[test]
fn a_new_header_shows_its_first_lines_and_how_many_more() {
    let mut touched = vec![function("mm/memcontrol.c", "__mod_memcg_state", true)];
    for k in 0..9 {
        touched.push(Touched {
            file: "include/trace/events/memcg.h".into(),
            place: Place::Outside {
                what: format!("line {k}"),
            },
            patches: vec![1 + k % 2],
        });
    }
    for k in 0..5 {
        touched.push(Touched {
            file: "mm/memcontrol.c".into(),
            place: Place::Outside {
                what: format!("macro {k}"),
            },
            patches: vec![1],
        });
    }
    let candidates = [candidate("c", &[], vec![])];
    let text = render(
        &choose(&touched, &candidates, Path::new("/src")),
        &candidates,
        0,
    );
    let header: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("include/trace/events/memcg.h"))
        .collect();
    assert_eq!(header.len(), 5, "{text}");
    assert!(header[3].contains("line 3"), "{text}");
    assert!(
        header[4].contains(
            "... and 5 more declarations, macros or lines outside functions  (patch 1, 2)"
        ),
        "{text}"
    );
    // Five lines are shown whole: hiding one would save no line.
    assert!(
        text.contains("mm/memcontrol.c: macro 4  (patch 1)"),
        "{text}"
    );
}

#[test]
fn a_declaration_no_profile_can_show_says_why() {
    let touched = [function("mm/vmscan.c", "shrink_node_memcgs", true)];
    let mut c = candidate("reclaim", &[("mm/vmscan.c", "shrink_node_memcgs")], vec![]);
    c.reaches.functions[0].unprofiled = Some("inlined into shrink_node()".into());
    let candidates = [c];
    let text = render(
        &choose(&touched, &candidates, Path::new("/src")),
        &candidates,
        0,
    );
    assert!(
        text.contains("      no profile can show it: inlined into shrink_node()"),
        "{text}"
    );
}

#[test]
fn a_shared_block_is_the_other_campaigns_and_needs_its_workload_and_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = dir.path().join("seeds");
    std::fs::create_dir(&seeds).unwrap();
    let own = crate::config::DEFAULT_CAMPAIGN.replace("name: smoke", "name: own")
        + "reaches:\n  functions:\n    - {name: zswap_store, file: mm/zswap.c, why: it stores}\n";
    assert!(
        own.contains("name: own"),
        "the smoke campaign is named smoke"
    );
    std::fs::write(seeds.join("a-own.yaml"), own).unwrap();
    let shared = crate::config::DEFAULT_CAMPAIGN.replace("name: smoke", "name: shared")
        + "reaches: {same_as: a-own.yaml}\n";
    std::fs::write(seeds.join("b-shared.yaml"), &shared).unwrap();
    let got = candidates(dir.path()).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].name, "shared");
    assert_eq!(got[1].reaches.functions[0].name, "zswap_store");
    // Another workload: what the other executes says nothing of it.
    let other = shared.replace("kind: zswap-pageout", "kind: rstat-flush");
    assert_ne!(other, shared);
    std::fs::write(seeds.join("b-shared.yaml"), other).unwrap();
    let err = candidates(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("b-shared.yaml") && err.contains("another workload, kernel or tree"),
        "{err}"
    );
}

#[test]
fn a_hidden_copy_of_a_campaign_is_not_a_campaign() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["b.yaml", "a.yaml", ".mm-library-a.yaml", "notes.md"] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    let files = campaign_files(dir.path()).unwrap();
    assert_eq!(
        files,
        [dir.path().join("a.yaml"), dir.path().join("b.yaml")],
        "{files:?}"
    );
}
