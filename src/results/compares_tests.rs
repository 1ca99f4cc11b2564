use std::path::Path;

use super::*;
use crate::results::tests::{fixture, per_patch};

/// A kept run, as stored.
fn kept(dir: &str) -> Results {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(dir)
        .join("results.json");
    Results::load(&path).unwrap()
}

#[test]
fn an_a_a_run_says_a_a_not_an_empty_series() {
    let run = kept("results/seeds/000-counter-aa-1");
    assert_eq!(run.compares().what, What::SelfCheck);
    assert_eq!(run.compares().label(), "A/A");
}

#[test]
fn a_knob_names_the_setting_it_turns_and_both_values() {
    let run = kept("results/seeds/001-shrinker");
    assert_eq!(run.compares().label(), "knob: shrinker N \u{2192} Y");
    let diag = kept("results/seeds/001-shrinker-peak");
    assert_eq!(
        diag.compares().label(),
        "diagnostic: knob: shrinker N \u{2192} Y"
    );
}

#[test]
fn a_diagnostic_whose_a_is_the_patch_says_so() {
    let run = kept("results/seeds/004-anon-random-margin-first");
    let compares = run.compares();
    assert!(compares.diagnostic && compares.patch_first());
    assert_eq!(
        compares.label(),
        "diagnostic: A = patch, B = base: mm: memcg: keep a swap-in margin for large folios near the memcg limit"
    );
    // The seed campaign it reverses: the base first, no diagnostic.
    let seed = kept("results/seeds/004-swapin-margin-anon-random").compares();
    assert!(!seed.diagnostic && !seed.patch_first());
}

#[test]
fn an_ordinary_patch_run_is_named_by_its_series() {
    let run = kept("results/smoke");
    assert_eq!(
        run.compares().label(),
        "mm: memcg: hierarchical per-CPU zswap counter for the zswap limit check"
    );
    let mut two = fixture();
    two.series.patches.push(two.series.patches[0].clone());
    two.variants[1].patches = 2;
    assert!(two.compares().label().ends_with(" (+1 more)"));
}

#[test]
fn a_per_patch_run_and_one_of_many_variants_say_how_many_things_they_compare() {
    assert_eq!(
        per_patch().compares().label(),
        "per patch: mm: first (+2 more)"
    );
    let price = kept("results/seeds/cputime-price").compares();
    assert_eq!(
        price.label(),
        "diagnostic: 6 variants: mm: memcg: hierarchical per-CPU zswap counter for the zswap limit check"
    );
}

#[test]
fn a_switch_is_named_by_what_it_enables() {
    assert_eq!(
        knob_name("/sys/module/zswap/parameters/shrinker_enabled"),
        "shrinker"
    );
    assert_eq!(
        knob_name("/sys/kernel/mm/transparent_hugepage/hugepages-16kB/enabled"),
        "hugepages-16kB"
    );
    assert_eq!(knob_name("/proc/sys/vm/swappiness"), "swappiness");
    assert_eq!(knob_name("enabled"), "enabled");
}

#[test]
fn a_knob_on_the_command_line_or_in_kconfig_names_both_sides() {
    let mut run = fixture();
    run.variants[1].patches = 0;
    run.variants[1].cmdline = vec!["zswap.enabled=1".into()];
    run.variants[1].fragments = vec!["kconfigs/hz250.config".into()];
    run.variants[1]
        .settings
        .insert("/proc/sys/vm/swappiness".into(), "10".into());
    assert_eq!(
        run.compares().label(),
        "knob: swappiness unset \u{2192} 10, cmdline none \u{2192} zswap.enabled=1, kconfig none \u{2192} hz250.config"
    );
}

/// The headings' words for what A and B are: the series' title, untrusted,
/// only through `show`.
#[test]
fn the_sides_say_what_a_and_b_are_and_render_the_title_through_show() {
    let quote = |t: &str| format!("<{t}>");
    assert_eq!(
        kept("results/seeds/000-counter-aa-1")
            .compares()
            .sides(quote),
        "A/A self-check: A = B = the base"
    );
    assert_eq!(
        kept("results/seeds/001-shrinker").compares().sides(quote),
        "knob: shrinker N (A) \u{2192} Y (B), one kernel"
    );
    assert_eq!(
        kept("results/seeds/004-anon-random-margin-first")
            .compares()
            .sides(quote),
        "diagnostic: A = base + <mm: memcg: keep a swap-in margin for large folios near the memcg limit>, B = base: the patch first"
    );
    assert_eq!(
        kept("results/smoke").compares().sides(quote),
        "A = base, B = base + <mm: memcg: hierarchical per-CPU zswap counter for the zswap limit check>"
    );
}

/// A hunt's step applies a prefix of the night's series: its label says
/// which, not the whole series' title alone.
#[test]
fn a_hunt_step_says_which_prefix_of_the_series_it_applies() {
    let step = kept("results/watch-synthetic/hunts/smoke-n006/bisect/p2");
    assert_eq!(
        step.compares().label(),
        "the first 2 patches of mm: vmscan: the first of night 6 (+3 more)"
    );
    let whole = kept("results/smoke");
    assert!(
        !whole.compares().label().starts_with("the first"),
        "{}",
        whole.compares().label()
    );
}
