use super::*;
use crate::model::Lane;
use crate::results::VerdictRecord;

fn smoke() -> Results {
    Results::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/smoke/results.json"),
    )
    .unwrap()
}

fn row<'j>(j: &'j JudgementRecord, metric: &str) -> &'j ComparisonRecord {
    j.rows
        .iter()
        .find(|r| r.metric == metric && r.condition.is_none())
        .unwrap_or_else(|| panic!("no row {metric}"))
}

#[test]
fn the_smoke_headline_agrees_with_its_primary_verdicts() {
    let j = judge(&smoke());
    assert_eq!(j.rule, stats::RULE_VERSION);
    assert_eq!(j.lane, Lane::Icount);
    let text = &j.headlines[0].text;
    assert!(text.starts_with("B: pageout_cpu_ns \u{2212}18."), "{text}");
    assert!(text.contains("(improvement)"), "{text}");
    assert!(
        text.contains("pageout_flushes 8192 \u{2192} 0 (changed)"),
        "{text}"
    );
    assert!(text.contains("no regression"), "{text}");
    assert!(text.contains("shown as context"), "{text}");
    assert!(!text.contains('+'), "no rise among the primaries: {text}");
    assert!(j.regressed.is_empty());
}

#[test]
fn a_figure_that_is_not_the_lanes_own_is_context() {
    let j = judge(&smoke());
    // One worker on two vCPUs under icount: the whole guest's times and
    // the tick-counted ones are context, the worker's own are measured.
    for metric in [
        "guest_sys_ns",
        "guest_user_ns",
        "guest_irq_ns",
        "kworker_ns",
    ] {
        let r = row(&j, metric);
        assert_eq!(r.verdict, VerdictRecord::Context, "{metric}: {}", r.reason);
        assert!(r.reason.starts_with("context, not this lane's measurement"));
    }
    for metric in ["pageout_cpu_ns", "sys_ns", "elapsed_ns", "pageout_flushes"] {
        assert!(row(&j, metric).measured(), "{metric}");
    }
    // A count is changed, never better or worse.
    assert_eq!(row(&j, "pageout_flushes").verdict, VerdictRecord::Changed);
    // In the cost lane every time is an icount time.
    let mut cost = smoke();
    cost.host.cost_model = Some("skylake-client".into());
    cost.host.lane = Lane::Cost;
    let j = judge(&cost);
    assert_eq!(j.lane, Lane::Cost);
    assert_eq!(row(&j, "pageout_cpu_ns").verdict, VerdictRecord::Context);
    assert!(
        j.headlines[0].text.contains("(among them pageout_cpu_ns, "),
        "{}",
        j.headlines[0].text
    );
}

#[test]
fn a_regression_of_context_never_reaches_the_exit_code() {
    // The whole guest's system time doubles in B: context, so nothing
    // regressed.
    let mut results = smoke();
    for boot in results.boots.iter_mut().filter(|b| b.variant == "B") {
        for s in &mut boot.samples {
            let v = s.metrics.get_mut("guest_sys_ns").unwrap();
            *v *= 3;
        }
    }
    let j = judge(&results);
    assert_eq!(row(&j, "guest_sys_ns").verdict, VerdictRecord::Context);
    assert!(j.regressed.is_empty(), "{:?}", j.regressed);
}

#[test]
fn an_a_a_self_check_is_for_identical_variants_only() {
    let mut results = smoke();
    results.series.patches.clear();
    for v in &mut results.variants {
        v.patches = 0;
    }
    assert!(is_a_a(&results));
    let j = judge(&results);
    assert!(j.self_check.is_some());
    assert!(
        j.headlines[0].text.starts_with("A/A self-check"),
        "{}",
        j.headlines[0].text
    );
    // Variants told apart by a setting (seed 001's shrinker off and on)
    // are no A/A run, patches or not.
    results.variants[1].settings.insert(
        "/sys/module/zswap/parameters/shrinker_enabled".into(),
        "Y".into(),
    );
    assert!(!is_a_a(&results));
    assert!(judge(&results).self_check.is_none());
}

#[test]
fn an_a_a_run_whose_boots_all_stopped_made_no_self_check() {
    let mut results = smoke();
    results.series.patches.clear();
    for v in &mut results.variants {
        v.patches = 0;
    }
    for boot in &mut results.boots {
        boot.samples.clear();
        boot.complete = false;
    }
    let j = judge(&results);
    assert!(
        j.headlines[0].text.starts_with("A/A self-check not made"),
        "{}",
        j.headlines[0].text
    );
    let check = j.self_check.expect("an A/A run has a self-check record");
    assert!(
        check.sentence().contains("self-check not made"),
        "{}",
        check.sentence()
    );
}

#[test]
/// Judged, saved and loaded: the judgement as stored, bit for bit (here,
/// not in `results`, which must not import the judge).
fn schema_5_round_trips() {
    let mut results = crate::results::tests::with_control(None);
    judge_into(&mut results);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    results.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""schema_version": 5"#), "{text}");
    let rule = format!(r#""rule": {}"#, stats::RULE_VERSION);
    assert!(text.contains(&rule), "{text}");
    assert!(text.contains(r#""condition": "unlimited""#), "{text}");
    assert!(!text.contains(r#""warmup""#), "{text}");
    let back = Results::load(&path).unwrap();
    assert_eq!(back.controls, results.controls);
    assert_eq!(back.variants, results.variants);
    // Bit for bit (serde_json's float_roundtrip): a re-rendered report
    // is the same bytes.
    assert_eq!(back.judgement, results.judgement, "stored as judged");
    // A judgement under rule 2 (before "negligible" had a word of its own)
    // loads as stored, for `patchbench judge` to bring up to date.
    let rule_2 = text.replace(&rule, r#""rule": 2"#);
    let older = dir.path().join("rule-2.json");
    std::fs::write(&older, rule_2).unwrap();
    assert_eq!(Results::load(&older).unwrap().judgement.unwrap().rule, 2);
    // A schema 3 document loads, its comparisons (of that day's rule)
    // dropped: it is unjudged until `patchbench judge`.
    let mut v3: serde_json::Value = serde_json::from_str(&text).unwrap();
    let doc = v3.as_object_mut().unwrap();
    doc.remove("judgement");
    doc.insert("schema_version".into(), 3.into());
    doc.insert("comparisons".into(), serde_json::json!([{"metric": "x"}]));
    // Schemas before 5 stored the lane as its parts.
    let host = doc["host"].as_object_mut().unwrap();
    host.remove("lane");
    host.insert("accel".into(), "tcg".into());
    host.insert("icount".into(), true.into());
    std::fs::write(&path, serde_json::to_string(&v3).unwrap()).unwrap();
    let old = Results::load(&path).unwrap();
    assert_eq!(old.schema_version, crate::results::SCHEMA_VERSION);
    assert!(old.judgement.is_none());
    assert_eq!(old.host.lane, Lane::Icount);
    let names: Vec<_> = back
        .conditions()
        .iter()
        .map(|c| c.map(|c| &c.name))
        .collect();
    assert_eq!(names, [None, Some(&"unlimited".to_string())]);
    for condition in [None, Some("unlimited")] {
        let by_boot = back.samples_by_boot("A", condition);
        assert_eq!(by_boot.len(), 2);
        assert!(by_boot.iter().all(
            |(_, s)| s.len() == 3 && s.iter().all(|s| s.condition.as_deref() == condition)
        ));
    }
}

#[test]
fn a_diagnostic_with_the_patch_as_a_never_calls_the_base_s_slowdown_a_regression_of_the_patch() {
    let kept = Results::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results/seeds/004-anon-random-margin-first/results.json"),
    )
    .unwrap();
    let j = judge(&kept);
    // The base's real_ns is called worse than the patch's, in the row's
    // own words a regression of B against A.
    assert_eq!(row(&j, "real_ns").verdict, VerdictRecord::Regression);
    let text = &j.headlines[0].text;
    assert!(
        text.starts_with("base vs swapin-margin, the base against the patch (A): real_ns +17."),
        "{text}"
    );
    assert!(text.contains("(worse on the base)"), "{text}");
    assert!(text.contains("no regression of the patch"), "{text}");
    assert!(!text.contains("REGRESSION"), "{text}");
    assert!(j.regressed.is_empty(), "exits 0: {:?}", j.regressed);
}

#[test]
fn with_the_patch_as_a_what_the_base_does_better_is_the_patch_s_regression() {
    // The smoke run's B improves pageout_cpu_ns; told that A is the patch
    // and B the base, that is the base doing better.
    let mut reversed = smoke();
    reversed.variants[0].patches = 1;
    reversed.variants[1].patches = 0;
    let j = judge(&reversed);
    let text = &j.headlines[0].text;
    assert!(
        text.starts_with("B vs A, the base against the patch (A): pageout_cpu_ns \u{2212}18."),
        "{text}"
    );
    assert!(text.contains("(better on the base)"), "{text}");
    assert!(
        text.contains("REGRESSION of the patch: pageout_cpu_ns"),
        "{text}"
    );
    assert!(
        j.regressed.contains(&"pageout_cpu_ns".to_string()),
        "{:?}",
        j.regressed
    );
    assert!(!j.regressed.is_empty() && judge(&smoke()).regressed.is_empty());
}
