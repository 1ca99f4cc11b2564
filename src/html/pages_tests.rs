//! Tests of the page views (`pages.rs`).

use super::*;

#[test]
fn log_links_stay_below_the_run_directory_and_are_encoded() {
    let run = Path::new("/out");
    assert_eq!(
        log_href(run, Path::new("/out/boots/2-Ap/console.log")).as_deref(),
        Some("boots/2-Ap/console.log")
    );
    assert_eq!(
        log_href(run, Path::new("/out/javascript:alert(1)/a b#c")).as_deref(),
        Some("javascript%3Aalert%281%29/a%20b%23c")
    );
    assert_eq!(log_href(run, Path::new("/elsewhere/console.log")), None);
    assert_eq!(log_href(run, Path::new("/out/../etc/passwd")), None);
    assert_eq!(log_href(run, Path::new("/out")), None);
}

#[test]
fn a_per_patch_run_has_a_variant_column_a_plot_per_metric_and_waterfalls() {
    let mut results = crate::results::tests::per_patch();
    crate::judge::judge_into(&mut results);
    let run = Run::new(&results, Path::new("/out"));
    let page = crate::html::render_run(&run).unwrap();
    assert!(page.contains("p1, p2, p3 against base"), "{page}");
    assert!(page.contains("<th>variant</th>"));
    // 2 metrics x 3 variants in the table, one samples plot per metric,
    // and a waterfall per metric.
    assert_eq!(page.matches(r#"<tr class="metric-row">"#).count(), 6);
    assert_eq!(page.matches(r#"<figure id="m-"#).count(), 2);
    assert_eq!(page.matches(r#"<figure id="w-"#).count(), 2);
    assert!(
        page.contains(r#"<span class="dot v2"></span><code>p2</code>"#),
        "{page}"
    );
}

#[test]
fn percentages_are_signed_with_a_true_minus() {
    assert_eq!(signed_pct(-44.694), "\u{2212}44.69%");
    assert_eq!(signed_pct(0.8), "+0.80%");
}

#[test]
fn a_stopped_boot_is_a_warning_whose_guest_text_is_escaped() {
    let mut results = crate::results::tests::fixture();
    let boot = &mut results.boots[1];
    boot.samples.truncate(1);
    boot.failure = Some(crate::results::BootFailure {
        what: "OOM kill <script>alert(1)</script>".into(),
        excerpt: String::new(),
    });
    // The page, and how many stopped-boot warnings it has.
    let render = |results: &crate::results::Results| {
        let mut results = results.clone();
        crate::judge::judge_into(&mut results);
        let run = Run::new(&results, Path::new("/out"));
        let page = crate::html::render_run(&run).unwrap();
        let warnings = page.matches(r#"<p class="warn stopped">"#).count();
        (page, warnings)
    };
    let (page, warnings) = render(&results);
    assert_eq!(warnings, 1, "{page}");
    assert!(
        page.contains("Boot B stopped after 1 of 3 samples: OOM kill &#60;script&#62;"),
        "{page}"
    );
    assert!(!page.contains("<script>"), "{page}");
    let tables = page.matches("<table").count();
    // With B's only boot stopped, nothing is compared: a line says so, and
    // the comparison table is not drawn empty.
    results.boots[1].complete = false;
    let (page, warnings) = render(&results);
    assert_eq!(warnings, 2, "{page}");
    assert!(
        page.contains("Not compared: no complete boot of B."),
        "{page}"
    );
    assert_eq!(page.matches("<table").count(), tables - 1, "{page}");
    // The index shows the stopped boot beside the run's verdicts.
    crate::judge::judge_into(&mut results);
    let run = Run::new(&results, Path::new("/out"));
    let index = crate::html::render_index(&[run], |_| "r/".into()).unwrap();
    assert!(
        index.contains(r#"<span class="badge v-regression stopped">boot B stopped</span>"#),
        "{index}"
    );
}

#[test]
fn rows_are_grouped_by_role_in_their_own_order_with_one_group_per_context_reason() {
    let row = |name: &str| RowView {
        anchor: String::new(),
        name: name.into(),
        variant: String::new(),
        unit: "",
        better: "",
        a_mean: String::new(),
        b_mean: String::new(),
        change: String::new(),
        change_ci: String::new(),
        p: String::new(),
        verdict: Verdict::Context,
        note: String::new(),
    };
    let groups = groups(vec![
        (Role::Context, "ticks", row("irq")),
        (Role::Other, "", row("b")),
        (Role::Context, "icount", row("cpu")),
        (Role::Primary, "", row("a")),
        (Role::Other, "", row("c")),
        (Role::Context, "ticks", row("softirq")),
        (Role::Primary, "", row("d")),
    ]);
    let shown: Vec<(&str, &str, Vec<&str>)> = groups
        .iter()
        .map(|g| {
            let names = g.rows.iter().map(|r| r.name.as_str()).collect();
            (g.role, g.heading.as_str(), names)
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                "primary",
                "Primary: the figures the headline is made of",
                vec!["a", "d"]
            ),
            ("other", "Other metrics", vec!["b", "c"]),
            (
                "context",
                "Context, no verdict: ticks.",
                vec!["irq", "softirq"]
            ),
            ("context", "Context, no verdict: icount.", vec!["cpu"]),
        ]
    );
}

#[test]
fn a_cost_lane_page_says_where_each_rows_delta_went() {
    let mut results = crate::results::tests::cost_lane_with_splits();
    crate::judge::judge_into(&mut results);
    let run = Run::new(&results, Path::new("/out"));
    let page = crate::html::render_run(&run).unwrap();
    assert!(page.contains(r#"<table class="profile split">"#), "{page}");
    assert!(
        page.contains(
            "<tr><td><code>do_flush_stats</code></td><td class=\"num\">\u{2212}60.000</td><td class=\"num\">\u{2212}1.139</td><td class=\"num\">\u{2212}238.863</td><td>pause \u{2212}8192</td></tr>"
        ),
        "{page}"
    );
    assert!(page.contains("<tr><td>(whole phase)</td>"), "{page}");
    // Without splits (runs before the cost table): no such table.
    let mut plain = crate::results::tests::cost_lane();
    crate::judge::judge_into(&mut plain);
    let page = crate::html::render_run(&Run::new(&plain, Path::new("/out"))).unwrap();
    assert!(!page.contains("profile split"), "{page}");
}
