use super::*;
use crate::results::SampleRecord;

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A results document with the smoke run's frame and the given base (A)
/// and B samples, as (ops, phase, symbol → instructions).
/// A base sample: its `ops` metric, its phase, symbol → instructions.
type Window<'a> = (Option<u64>, &'a str, &'a [(&'a str, u64)]);

fn results(campaign: &str, a: &[Window], b_insns: u64) -> Results {
    let mut r = Results::load(&repo_file("results/smoke/results.json")).unwrap();
    r.campaign = campaign.into();
    r.workload.kind = "ksm-merge".into();
    let sample = |index: u32, ops: Option<u64>, phase: &str, syms: &[(&str, u64)]| SampleRecord {
        index,
        condition: None,
        metrics: ops.map(|o| ("ops".to_string(), o)).into_iter().collect(),
        profile: [(
            phase.to_string(),
            syms.iter().map(|(s, v)| (s.to_string(), *v)).collect(),
        )]
        .into(),
        split: Default::default(),
    };
    let template = r.boots[0].clone();
    let mut boot_a = template.clone();
    boot_a.variant = "A".into();
    boot_a.samples = a
        .iter()
        .enumerate()
        .map(|(i, (ops, phase, syms))| sample(i as u32, *ops, phase, syms))
        .collect();
    let mut boot_b = template.clone();
    boot_b.variant = "B".into();
    boot_b.samples = vec![sample(
        0,
        Some(1),
        "ops",
        &[("foo", b_insns), ("only_b", 5)],
    )];
    let mut unfinished = boot_a.clone();
    unfinished.complete = false;
    unfinished.samples = vec![sample(0, Some(1), "ops", &[("only_unfinished", 5)])];
    r.boots = vec![boot_a, boot_b, unfinished];
    r
}

fn build_of(commit: &str, config: &str) -> Build {
    Build {
        shown: "builds/linux/key".into(),
        commit: commit.into(),
        config_sha256: config.into(),
        objects: [
            (
                "mm/ksm.o".to_string(),
                ObjectFunctions {
                    own: ["foo", "bar", "never"].map(String::from).into(),
                    init_exit: ["ksm_init"].map(String::from).into(),
                    from_headers: ["pmd_flags"].map(String::from).into(),
                },
            ),
            (
                "mm/damon/core.o".to_string(),
                ObjectFunctions {
                    own: ["damon_x"].map(String::from).into(),
                    ..Default::default()
                },
            ),
        ]
        .into(),
    }
}

fn source(shown: &str, results: Results) -> Source {
    Source {
        shown: shown.into(),
        sha256: sha256(shown.as_bytes()),
        results,
    }
}

/// The smoke run's tree and base config: what `build_of` must name for a
/// source to be used.
fn smoke_identity() -> (String, String) {
    let r = Results::load(&repo_file("results/smoke/results.json")).unwrap();
    let a = r.variants.iter().find(|v| v.name == "A").unwrap();
    (r.tree.base_commit.clone(), a.kernel.config_sha256.clone())
}

#[test]
fn a_workload_is_the_mean_over_base_samples_of_each_functions_insns_per_op() {
    let r = results(
        "mm-ksm-merge",
        &[
            (
                Some(2),
                "ops",
                &[("foo", 10), ("foo.isra.0", 2), ("bar", 8), ("user", 1000)],
            ),
            (Some(4), "ops", &[("foo", 20), ("bar", 0)]),
        ],
        1_000_000,
    );
    let w = of_results(&r).unwrap();
    assert_eq!(w.per, Per::Op);
    assert_eq!(w.phase, "ops");
    assert_eq!(w.samples, 2);
    // foo: (12/2 + 20/4) / 2; bar: (8/2 + 0) / 2; user space, B and an
    // unfinished boot left out.
    assert_eq!(
        w.functions,
        [("bar".to_string(), 2.0), ("foo".to_string(), 5.5)].into()
    );
    assert_eq!(w.kernel_insns, 7.5);
    assert_eq!(w.share(5.5), 5.5 / 7.5);
}

#[test]
fn a_window_without_an_ops_metric_counts_per_run_in_its_only_phase() {
    let r = results("mm-selftest", &[(None, "run", &[("foo", 30)])], 1);
    let w = of_results(&r).unwrap();
    assert_eq!((w.per, w.phase.as_str()), (Per::Run, "run"));
    assert_eq!(w.functions["foo"], 30.0);
    // kernel-boot's window is the boot: per boot, and said so.
    let r = results(
        "kernel-boot",
        &[(None, "boot", &[("hugetlb_init", 2847)])],
        1,
    );
    let w = of_results(&r).unwrap();
    assert_eq!((w.per, w.phase.as_str()), (Per::Boot, "boot"));
    assert_eq!(w.per.to_string(), "boot");
    assert_eq!(w.functions["hugetlb_init"], 2847.0);
}

#[test]
fn a_run_without_base_profiles_or_with_zero_ops_is_refused_saying_why() {
    let mut r = results("x", &[(Some(1), "ops", &[("foo", 1)])], 1);
    for b in &mut r.boots {
        for s in &mut b.samples {
            s.profile.clear();
        }
    }
    assert!(of_results(&r).unwrap_err().contains("no profile"));
    let r = results("x", &[(Some(0), "ops", &[("foo", 1)])], 1);
    assert!(of_results(&r).unwrap_err().contains("0 ops"));
    let mut r = results("x", &[(Some(1), "ops", &[("foo", 1)])], 1);
    r.boots.retain(|b| b.variant != "A");
    assert!(of_results(&r).unwrap_err().contains("variant A"));
}

#[test]
fn sources_of_another_tree_or_config_are_skipped_and_the_rest_mapped() {
    let (commit, config) = smoke_identity();
    let mut other_config = results("mm-other", &[(Some(1), "ops", &[("bar", 1)])], 1);
    other_config.variants[0].kernel.config_sha256 = "f".repeat(64);
    let mut other_tree = results("mm-old", &[(Some(1), "ops", &[("bar", 1)])], 1);
    other_tree.tree.base_commit = "0".repeat(40);
    let sources = vec![
        source(
            "results/mm/ksm-merge-aa/results.json",
            results("mm-ksm-merge", &[(Some(1), "ops", &[("foo", 3)])], 1),
        ),
        source("results/mm/other-aa/results.json", other_config),
        source("results/mm/old-aa-6.1/results.json", other_tree),
    ];
    let map = of_inputs(&build_of(&commit, &config), &sources).unwrap();
    assert_eq!(map.workloads.keys().collect::<Vec<_>>(), ["mm-ksm-merge"]);
    assert_eq!(map.sources.len(), 1);
    assert_eq!(map.sources[0].sha256, sources[0].sha256);
    assert_eq!(map.config_sha256, config);
    assert_eq!(map.tree.base_commit, commit);
    let skipped: Vec<&str> = map.skipped.iter().map(|s| s.results.as_str()).collect();
    assert_eq!(
        skipped,
        [
            "results/mm/old-aa-6.1/results.json",
            "results/mm/other-aa/results.json"
        ]
    );
    assert!(map.skipped[1].why.contains(".config"), "{:?}", map.skipped);
    assert_eq!(
        map.files.keys().collect::<Vec<_>>(),
        ["mm/damon/core.c", "mm/ksm.c"]
    );
    assert_eq!(map.files["mm/ksm.c"].object, "mm/ksm.o");
    assert!(map.files["mm/ksm.c"].init_exit.contains("ksm_init"));
    assert!(map.files["mm/ksm.c"].from_headers.contains("pmd_flags"));
    assert!(!map.files["mm/ksm.c"].functions.contains("pmd_flags"));
}

#[test]
fn two_runs_of_one_campaign_or_none_of_the_build_are_errors_naming_the_file() {
    let (commit, config) = smoke_identity();
    let one = || results("mm-ksm-merge", &[(Some(1), "ops", &[("foo", 3)])], 1);
    let err = of_inputs(
        &build_of(&commit, &config),
        &[
            source("results/mm/a/results.json", one()),
            source("results/mm/b/results.json", one()),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("results/mm/b/results.json"), "{err}");
    assert!(err.contains("second run of campaign mm-ksm-merge"), "{err}");
    let err = of_inputs(
        &build_of(&commit, "nope"),
        &[source("results/mm/a/results.json", one())],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("none is a run of the objects'"), "{err}");
}

#[test]
fn the_same_inputs_in_any_order_give_the_same_bytes_and_they_read_back() {
    let (commit, config) = smoke_identity();
    let a = source(
        "results/mm/a/results.json",
        results("mm-a", &[(Some(1), "ops", &[("foo", 3), ("bar", 1)])], 1),
    );
    let b = source(
        "results/mm/b/results.json",
        results("mm-b", &[(Some(3), "ops", &[("foo", 1)])], 1),
    );
    let build = build_of(&commit, &config);
    let one = of_inputs(&build, &[a, b]).unwrap();
    let (a, b) = (
        source(
            "results/mm/a/results.json",
            results("mm-a", &[(Some(1), "ops", &[("bar", 1), ("foo", 3)])], 1),
        ),
        source(
            "results/mm/b/results.json",
            results("mm-b", &[(Some(3), "ops", &[("foo", 1)])], 1),
        ),
    );
    let two = of_inputs(&build, &[b, a]).unwrap();
    assert_eq!(one.to_bytes(), two.to_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reach/map.json");
    one.write(&path).unwrap();
    assert_eq!(ReachMap::load(&path).unwrap(), one);
    // foo: mm-a 3 of 4 instructions an op, mm-b all of its 0.33: mm-b
    // executes it most, by share.
    let most = one.most("foo").unwrap();
    assert_eq!(most.campaign, "mm-b");
    assert_eq!(most.share, 1.0);
    assert!(one.most("never").is_none());
}

#[test]
fn a_share_too_small_for_three_decimals_keeps_two_digits() {
    assert_eq!(percent(0.04330), "4.330%");
    assert_eq!(percent(0.00001), "0.001%");
    assert_eq!(percent(3.1e-8), "3.1e-6%");
    assert_eq!(percent(0.0), "0.000%");
}

#[test]
fn a_second_kernels_map_adds_only_the_files_it_alone_builds() {
    let (commit, config) = smoke_identity();
    let first = of_inputs(
        &build_of(&commit, &config),
        &[source(
            "results/mm/a/results.json",
            results("mm-a", &[(Some(1), "ops", &[("foo", 3), ("bar", 1)])], 1),
        )],
    )
    .unwrap();
    // The debug kernel builds mm/kmemleak.c as well; its workload runs
    // ksm.c's foo too, which must not count against the library's.
    let mut debug_build = build_of(&commit, &config);
    debug_build.objects.insert(
        "mm/kmemleak.o".into(),
        ObjectFunctions {
            own: ["kmemleak_scan"].map(String::from).into(),
            ..Default::default()
        },
    );
    let debug = |campaign: &str| {
        of_inputs(
            &debug_build,
            &[source(
                "results/mm/k/results.json",
                results(
                    campaign,
                    &[(Some(1), "ops", &[("foo", 50), ("kmemleak_scan", 50)])],
                    1,
                ),
            )],
        )
        .unwrap()
    };
    let mut map = first.clone();
    assert_eq!(
        map.add_kernel(debug("mm-k")),
        Ok(vec!["mm/kmemleak.c".to_string()])
    );
    let most = map.most("kmemleak_scan").unwrap();
    assert_eq!((most.campaign, most.share), ("mm-k", 0.5));
    // foo is still mm-a's alone, at its share there.
    assert_eq!(map.most("foo").unwrap().campaign, "mm-a");
    assert_eq!(map.files["mm/ksm.c"], first.files["mm/ksm.c"]);
    // A campaign both maps have, or another tree, is refused, saying so.
    let err = map.clone().add_kernel(debug("mm-a")).unwrap_err();
    assert!(err.contains("campaign mm-a"), "{err}");
    let mut other = debug("mm-k2");
    other.tree.base_commit = "0".repeat(40);
    let err = map.add_kernel(other).unwrap_err();
    assert!(err.contains("not this map's tree"), "{err}");
}

#[test]
fn a_map_of_another_schema_or_not_a_map_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("map.json");
    std::fs::write(&path, br#"{"schema": 99}"#).unwrap();
    let err = ReachMap::load(&path).unwrap_err();
    assert!(err.to_string().contains("reach map schema 99"), "{err}");
    assert!(err.is_usage());
    std::fs::write(&path, b"[]").unwrap();
    let err = ReachMap::load(&path).unwrap_err().to_string();
    assert!(err.contains("map.json is not a reach map"), "{err}");
}

/// A relocatable ELF64 object with `.text` (section 1) and `.init.text`
/// (2), whose symbols are (name, type, section index).
fn elf_object(symbols: &[(&str, u8, u16)]) -> Vec<u8> {
    use goblin::elf::section_header::{SHT_NOBITS, SHT_STRTAB, SHT_SYMTAB};
    let shstrtab = b"\0.text\0.init.text\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let name_at = |n: &str| {
        let needle = format!("\0{n}\0");
        (shstrtab
            .windows(needle.len())
            .position(|w| w == needle.as_bytes())
            .unwrap()
            + 1) as u32
    };
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24]; // the null symbol
    for (name, kind, shndx) in symbols {
        let at = strtab.len() as u32;
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
        symtab.extend_from_slice(&at.to_le_bytes());
        symtab.push(*kind); // STB_LOCAL << 4 | type
        symtab.push(0);
        symtab.extend_from_slice(&shndx.to_le_bytes());
        symtab.extend_from_slice(&0u64.to_le_bytes());
        symtab.extend_from_slice(&1u64.to_le_bytes());
    }
    let mut out = vec![0u8; 64];
    let symtab_off = out.len() as u64;
    out.extend_from_slice(&symtab);
    let strtab_off = out.len() as u64;
    out.extend_from_slice(&strtab);
    let shstrtab_off = out.len() as u64;
    out.extend_from_slice(&shstrtab);
    while out.len() % 8 != 0 {
        out.push(0);
    }
    let shoff = out.len() as u64;
    let nsyms = (symtab.len() / 24) as u32;
    // name, type, offset, size, link, info, entsize
    let sections: [(u32, u32, u64, u64, u32, u32, u64); 6] = [
        (0, 0, 0, 0, 0, 0, 0),
        (name_at(".text"), SHT_NOBITS, 0, 16, 0, 0, 0),
        (name_at(".init.text"), SHT_NOBITS, 0, 16, 0, 0, 0),
        (
            name_at(".symtab"),
            SHT_SYMTAB,
            symtab_off,
            symtab.len() as u64,
            4,
            nsyms,
            24,
        ),
        (
            name_at(".strtab"),
            SHT_STRTAB,
            strtab_off,
            strtab.len() as u64,
            0,
            0,
            0,
        ),
        (
            name_at(".shstrtab"),
            SHT_STRTAB,
            shstrtab_off,
            shstrtab.len() as u64,
            0,
            0,
            0,
        ),
    ];
    for (name, kind, offset, size, link, info, entsize) in sections {
        out.extend_from_slice(&name.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // flags
        out.extend_from_slice(&0u64.to_le_bytes()); // addr
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&link.to_le_bytes());
        out.extend_from_slice(&info.to_le_bytes());
        out.extend_from_slice(&1u64.to_le_bytes()); // align
        out.extend_from_slice(&entsize.to_le_bytes());
    }
    // The ELF header: 64-bit, little-endian, ET_REL, x86-64.
    let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&1u16.to_le_bytes()); // ET_REL
    h.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // entry
    h.extend_from_slice(&0u64.to_le_bytes()); // phoff
    h.extend_from_slice(&shoff.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes()); // flags
    h.extend_from_slice(&64u16.to_le_bytes()); // ehsize
    h.extend_from_slice(&0u16.to_le_bytes()); // phentsize
    h.extend_from_slice(&0u16.to_le_bytes()); // phnum
    h.extend_from_slice(&64u16.to_le_bytes()); // shentsize
    h.extend_from_slice(&(sections.len() as u16).to_le_bytes());
    h.extend_from_slice(&5u16.to_le_bytes()); // shstrndx
    out[..64].copy_from_slice(&h);
    out
}

#[test]
fn an_object_defines_its_functions_with_init_and_exit_ones_apart() {
    const FUNC: u8 = goblin::elf::sym::STT_FUNC;
    const OBJECT: u8 = goblin::elf::sym::STT_OBJECT;
    let bytes = elf_object(&[
        ("ksm_do_scan", FUNC, 1),
        ("cmp_and_merge_page.part.0", FUNC, 1),
        ("cmp_and_merge_page", FUNC, 1),
        ("ksm_init", FUNC, 2),
        // A function with a copy in .text and one in .init.text is built.
        ("both", FUNC, 2),
        ("both.constprop.0", FUNC, 1),
        ("ksm_run", OBJECT, 1),
        ("called_elsewhere", FUNC, 0),
    ]);
    let (built, init_exit) = of_object(&bytes).unwrap();
    assert_eq!(
        built,
        ["both", "cmp_and_merge_page", "ksm_do_scan"]
            .map(String::from)
            .into()
    );
    assert_eq!(init_exit, ["ksm_init"].map(String::from).into());
    assert!(of_object(b"not an object").is_err());
}

#[test]
fn an_objects_functions_are_its_c_files_own_or_from_headers() {
    let set =
        |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| n.to_string()).collect() };
    let f = split(
        set(&[
            "ksm_do_scan",
            "pmd_flags",
            "__x64_sys_madvise",
            "__se_sys_madvise",
            "__x64_sys_other",
        ]),
        set(&["ksm_init"]),
        &set(&["ksm_do_scan", "sys_madvise", "ksm_init"]),
    );
    assert_eq!(
        f.own,
        set(&["__se_sys_madvise", "__x64_sys_madvise", "ksm_do_scan"])
    );
    assert_eq!(f.from_headers, set(&["__x64_sys_other", "pmd_flags"]));
    assert_eq!(f.init_exit, set(&["ksm_init"]));
}

#[test]
fn a_build_directory_is_read_with_its_commit_config_and_mm_objects() {
    let dir = tempfile::tempdir().unwrap();
    // The tree: a git repository holding the objects' C files.
    let repo_dir = dir.path().join("trees/linux-x");
    let repo = git2::Repository::init(&repo_dir).unwrap();
    std::fs::create_dir_all(repo_dir.join("mm/damon")).unwrap();
    std::fs::write(
        repo_dir.join("mm/ksm.c"),
        "static int ksm_do_scan(void)\n{\n\treturn 0;\n}\n",
    )
    .unwrap();
    std::fs::write(
        repo_dir.join("mm/damon/core.c"),
        "void damon_x(void)\n{\n}\n",
    )
    .unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("mm/ksm.c")).unwrap();
    index.add_path(Path::new("mm/damon/core.c")).unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let who = git2::Signature::now("T", "t@example.org").unwrap();
    let commit = repo
        .commit(Some("HEAD"), &who, &who, "base", &tree, &[])
        .unwrap()
        .to_string();

    let build = dir.path().join("builds/linux-x/key");
    std::fs::create_dir_all(build.join("mm/damon")).unwrap();
    let err = read_build(&build).unwrap_err().to_string();
    assert!(err.contains("has no .config"), "{err}");
    std::fs::write(build.join(".config"), b"CONFIG_KSM=y\n").unwrap();
    std::fs::write(
        build.join("patchbench-build.json"),
        format!(r#"{{"commit": "{commit}", "key": "key"}}"#),
    )
    .unwrap();
    let err = read_build(&build).unwrap_err().to_string();
    assert!(err.contains("`source` link"), "{err}");
    std::os::unix::fs::symlink(&repo_dir, build.join("source")).unwrap();
    let err = read_build(&build).unwrap_err().to_string();
    assert!(err.contains("has no mm/*.o"), "{err}");
    const FUNC: u8 = goblin::elf::sym::STT_FUNC;
    std::fs::write(
        build.join("mm/ksm.o"),
        elf_object(&[("ksm_do_scan", FUNC, 1), ("pmd_flags", FUNC, 1)]),
    )
    .unwrap();
    std::fs::write(
        build.join("mm/damon/core.o"),
        elf_object(&[("damon_x", FUNC, 1)]),
    )
    .unwrap();
    std::fs::write(build.join("mm/built-in.a"), b"!<arch>\n").unwrap();
    let b = read_build(&build).unwrap();
    assert_eq!(b.commit, commit);
    assert_eq!(b.config_sha256, sha256(b"CONFIG_KSM=y\n"));
    assert_eq!(b.shown, "builds/linux-x/key");
    assert_eq!(
        b.objects.keys().collect::<Vec<_>>(),
        ["mm/damon/core.o", "mm/ksm.o"]
    );
    assert_eq!(
        b.objects["mm/ksm.o"].own,
        ["ksm_do_scan".to_string()].into()
    );
    assert_eq!(
        b.objects["mm/ksm.o"].from_headers,
        ["pmd_flags".to_string()].into()
    );
    std::fs::write(build.join("mm/gone.o"), elf_object(&[("x", FUNC, 1)])).unwrap();
    let err = read_build(&build).unwrap_err().to_string();
    assert!(err.contains("cannot read mm/gone.c at"), "{err}");
    std::fs::remove_file(build.join("mm/gone.o")).unwrap();
    std::fs::write(build.join("mm/bad.o"), b"junk").unwrap();
    let err = read_build(&build).unwrap_err().to_string();
    assert!(err.contains("mm/bad.o: not an ELF object"), "{err}");
}

/// The committed map is of the committed runs it names, byte for byte, and
/// names every kept run of results/mm (used or skipped, with its reason):
/// a run kept again, or a new one, makes this fail until the map is built
/// again (`patchbench reach build`, as docs/reach.md says).
#[test]
fn the_committed_maps_are_of_the_committed_results_they_name() {
    for (shown, file) in [
        ("linux-6.12-mm-all.json", "mm/ksm.c"),
        ("linux-6.12-mm-kmemleak.json", "mm/kmemleak.c"),
    ] {
        committed_map_is_of_the_committed_results_it_names(shown, file);
    }
}

/// `results/reach/<shown>`, which maps `file`.
fn committed_map_is_of_the_committed_results_it_names(shown: &str, file: &str) {
    let map = ReachMap::load(&repo_file(&format!("results/reach/{shown}"))).unwrap();
    let rebuild = format!(
        "build it again: patchbench reach build --objects <the build> --results results/mm --out results/reach/{shown}"
    );
    let mut named: BTreeSet<String> = map.skipped.iter().map(|s| s.results.clone()).collect();
    for source in &map.sources {
        let path = repo_file(&source.results);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            sha256(&bytes),
            source.sha256,
            "{} changed since the map was built; {rebuild}",
            source.results
        );
        let results = Results::load(&path).unwrap();
        assert_eq!(results.campaign, source.campaign);
        assert_eq!(results.tree.base_commit, map.tree.base_commit);
        let a = results.variants.iter().find(|v| v.name == "A").unwrap();
        assert_eq!(a.kernel.config_sha256, map.config_sha256);
        let mut again = of_results(&results).unwrap();
        again.results = source.results.clone();
        assert_eq!(
            map.workloads[&source.campaign], again,
            "{}: the map's figures are not what its results give; {rebuild}",
            source.campaign
        );
        named.insert(source.results.clone());
    }
    let mut kept = BTreeSet::new();
    for entry in std::fs::read_dir(repo_file("results/mm")).unwrap() {
        let run = entry.unwrap().path().join("results.json");
        if run.is_file() {
            let rel = run.strip_prefix(repo_file("")).unwrap();
            kept.insert(rel.to_string_lossy().into_owned());
        }
    }
    assert_eq!(
        named, kept,
        "the map does not name every kept run; {rebuild}"
    );
    assert_eq!(map.workloads.len(), map.sources.len());
    assert!(map.files.contains_key(file) && map.files.contains_key("mm/vmscan.c"));
}
