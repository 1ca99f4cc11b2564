//! Renderings of a [`Results`] document. Pure functions from the model to
//! text: the same document always renders the same report. They render
//! the stored judgement (`judge` made it) and never judge.
//!
//! - `rows`: the judgement's rows by condition, and the lines about them;
//! - `markdown` and `terminal`: the two text renderings;
//! - `waterfall`: what each patch of a series did;
//! - `hunt`: a bisection's steps, the patch it found and its own interval;
//! - `profile`: the cost lane's top symbols by Δ modeled cycles, and its
//!   banner;
//! - `failures`: the boots a guest failure stopped;
//! - `format`: values, percentages and untrusted text.

mod failures;
mod format;
pub mod hunt;
mod markdown;
pub mod profile;
mod rows;
mod terminal;
pub mod waterfall;

pub use failures::{FailedBoot, failed_boots, nothing_compared};
pub use format::{
    Scale, boot_order, code_span, control_title, cputime_line, format_value, lane_short,
    max_time_cv, noise_line, noisy_host, row_scale, scale, short, show, signed_pct, tcg_mode,
};
pub use markdown::markdown;
pub use profile::{ProfileTable, cost_banner, profile_tables};
pub use rows::{
    by_condition, context_lines, context_why, judged_by_boot, judgement, layouts_line,
    repeats_line, rows, undecided_note, unjudged,
};
pub use terminal::terminal;

#[cfg(test)]
mod tests {
    use crate::results::ComparisonRecord;

    /// `r` as judged.
    fn judged(r: &Results) -> Results {
        let mut r = r.clone();
        crate::judge::judge_into(&mut r);
        r
    }

    fn jrows(r: &Results) -> Vec<ComparisonRecord> {
        crate::judge::judge(r).rows
    }

    #[test]
    fn the_method_line_says_when_boots_ran_side_by_side() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        let one_at_a_time = markdown(&judged(&results));
        assert!(!one_at_a_time.contains("side by side"), "{one_at_a_time}");
        results.host.parallel_boots = Some(2);
        let side_by_side = markdown(&judged(&results));
        assert!(
            side_by_side.contains("in the order A/B/A' (up to 2 side by side under icount)"),
            "{side_by_side}"
        );
    }

    #[test]
    fn an_a_a_run_reports_its_self_check_and_false_positive_rate() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        results.series.patches.clear();
        for v in &mut results.variants {
            v.patches = 0;
        }
        let text = markdown(&judged(&results));
        assert!(text.contains("A/A self-check: A = B = the base"), "{text}");
        assert!(text.contains("**A/A self-check passed**"), "{text}");
        assert!(text.contains("simulated: "), "{text}");
    }
    use super::*;
    use crate::model::Unit;
    use crate::results::Results;

    #[test]
    fn each_condition_has_its_own_table_and_a_control_regression_counts() {
        let results = crate::results::tests::with_control(Some(2_000_000_000));
        let rows = jrows(&results);
        let main = jrows(&results)
            .into_iter()
            .filter(|r| r.condition.is_none())
            .collect::<Vec<_>>();
        assert_eq!(rows.len(), 2 * main.len());
        assert!(rows[..main.len()].iter().all(|r| r.condition.is_none()));
        let text = markdown(&judged(&results));
        let heading = "#### Control `unlimited` (zswap_max: max)";
        assert_eq!(text.matches("| metric | unit |").count(), 2, "{text}");
        let (before, after) = text.split_once(heading).expect(&text);
        // The main table first, as without controls; then the control's.
        assert!(before.contains("| pageout_cpu_ns |"), "{text}");
        assert!(after.contains("| pageout_cpu_ns |"), "{text}");
        assert!(after.contains("- pageout_cpu_ns: regression"), "{text}");
        // No regression verdict in the main table; the headline names
        // the control's.
        assert!(!before.contains("| regression \u{2717} |"), "{text}");
        assert!(
            before.contains("REGRESSION: pageout_cpu_ns (control unlimited)"),
            "{text}"
        );
        assert!(
            text.contains("Each control ran in the same boots"),
            "{text}"
        );
        // The exit code sees the control's regression, named with it.
        assert_eq!(
            crate::judge::judge(&results).regressed,
            ["pageout_cpu_ns (control unlimited)"]
        );
        let terminal = terminal(&judged(&results));
        assert!(
            terminal.contains("\nControl unlimited (zswap_max: max)\nmetric"),
            "{terminal}"
        );
        // A table row in each condition's table.
        let table_rows = terminal
            .lines()
            .filter(|l| l.starts_with("pageout_cpu_ns "))
            .count();
        assert_eq!(table_rows, 2, "{terminal}");
    }

    #[test]
    fn boots_in_layouts_of_their_own_are_judged_by_boot_and_every_report_says_so() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        // Boots A, B, A′: layouts 1, 1, 2.
        for (boot, layout) in results.boots.iter_mut().zip([1, 1, 2]) {
            boot.layout = Some(layout);
        }
        let all = jrows(&results);
        let row = all.iter().find(|r| r.metric == "pageout_cpu_ns").unwrap();
        assert!(row.options.by_boot);
        assert_eq!((row.a.n, row.b.n), (2, 1));
        assert_eq!((row.a_samples, row.b_samples), (6, 3));
        // One B boot is one observation: too few for a verdict.
        assert_eq!(row.kind(), crate::model::Verdict::Inconclusive);
        assert_eq!(row.coverage(), None, "every sample has the metric");
        let line =
            layouts_line(crate::model::Lane::Icount, &all.iter().collect::<Vec<_>>()).unwrap();
        assert!(line.starts_with("Judged by boot: each boot ran in a memory layout of its own"));
        assert!(line.contains("(2 A boots, 1 B boots)"), "{line}");
        let text = markdown(&judged(&results));
        assert!(text.contains(&line));
        assert!(terminal(&judged(&results)).contains(&line));
        // The method paragraph says what an observation was, not the
        // bootstrap's pooled samples.
        assert!(
            text.contains("its mean is one observation (no drift")
                && !text.contains("percentile-bootstrap"),
            "{text}"
        );
        // A campaign of several variants says it too.
        let mut several = crate::results::tests::per_patch();
        for (boot, layout) in several.boots.iter_mut().zip([1, 1, 1, 1, 2]) {
            boot.layout = Some(layout);
        }
        let text = markdown(&judged(&several));
        assert!(
            text.contains("mean of its boots' means") && !text.contains("percentile-bootstrap"),
            "{text}"
        );
        // Without layouts, none of it.
        let plain = Results::load(&path).unwrap();
        let plain_rows = jrows(&plain);
        assert!(
            layouts_line(
                crate::model::Lane::Icount,
                &plain_rows.iter().collect::<Vec<_>>()
            )
            .is_none()
        );
        assert!(!markdown(&judged(&plain)).contains("Judged by boot"));
    }

    #[test]
    fn a_metric_missing_from_some_samples_is_compared_on_the_rest_and_counted() {
        // A workload leaves out a value it did not measure (rstat-flush's
        // mean per call when the function never ran): the statistics use
        // the samples that have it, and every report says how many.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        let full = jrows(&results);
        let before = full
            .iter()
            .find(|r| r.metric == "pageout_cpu_ns")
            .unwrap()
            .clone();
        assert_eq!((before.a_samples, before.b_samples), (6, 3));
        assert_eq!(before.coverage(), None);
        // One sample of the second A boot and one of B lose the metric.
        let mut kept = Vec::new();
        for (boot, sample) in [(2, 0), (1, 1)] {
            let metrics = &mut results.boots[boot].samples[sample].metrics;
            kept.push(metrics.remove("pageout_cpu_ns").unwrap() as f64);
        }
        let after = jrows(&results);
        let row = after.iter().find(|r| r.metric == "pageout_cpu_ns").unwrap();
        assert_eq!((row.a.n, row.b.n), (5, 2));
        assert_eq!((row.a_samples, row.b_samples), (6, 3));
        // The means are over the samples that have the metric, not a 0 in
        // place of the missing ones.
        let b_all = before.b.mean * 3.0;
        assert!((row.b.mean - (b_all - kept[1]) / 2.0).abs() < 1e-6);
        let coverage = row.coverage().unwrap();
        assert!(
            coverage.contains("5 of 6 A samples") && coverage.contains("2 of 3 B samples"),
            "{coverage}"
        );
        // Metrics every sample has say nothing of it.
        let other = after.iter().find(|r| r.metric == "elapsed_ns").unwrap();
        assert_eq!(other.coverage(), None);
        // A boot that repeats an earlier one value for value counts once,
        // and the reports say so.
        let mut repeated = results.clone();
        let first = repeated.boots[0].samples.clone();
        repeated.boots[2].samples = first;
        let rows_repeated = jrows(&repeated);
        let row = rows_repeated
            .iter()
            .find(|r| r.metric == "elapsed_ns")
            .unwrap();
        assert_eq!((row.a.n, row.a_repeated), (3, 3));
        assert_eq!(row.coverage(), None);
        let note = row.repeat_note().unwrap();
        assert!(
            note.contains("3 A samples repeat an earlier A boot value for value")
                && note.contains("stand on 3"),
            "{note}"
        );
        // The reports say it once for every metric it concerns.
        let line = repeats_line(&rows_repeated.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            line.starts_with("A boots that repeat")
                && line.contains(
                    "for 4 of 6 metrics the statistics stand on one boot's samples: pageout_cpu_ns,"
                )
                && line.contains("elapsed_ns. Those")
                && line.contains("does not cover the layout"),
            "{line}"
        );
        // When every metric repeats, it says so rather than naming them all.
        let only_repeated: Vec<&ComparisonRecord> = rows_repeated
            .iter()
            .filter(|r| r.repeat_note().is_some())
            .collect();
        let all = repeats_line(&only_repeated).unwrap();
        assert!(
            all.contains("for all 4 metrics the statistics") && !all.contains("elapsed_ns"),
            "{all}"
        );
        assert!(markdown(&judged(&repeated)).contains(&line));
        assert!(terminal(&judged(&repeated)).contains(&line));
        let text = markdown(&judged(&results));
        assert!(
            text.contains("- pageout_cpu_ns: ") && text.contains(&coverage),
            "{text}"
        );
        assert!(
            !text.contains("- elapsed_ns: no clear difference"),
            "{text}"
        );
        let term = terminal(&judged(&results));
        assert!(
            term.contains(&format!("pageout_cpu_ns: {coverage}")),
            "{term}"
        );
    }

    #[test]
    fn a_metric_no_sample_of_one_side_has_is_named_not_dropped() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        assert!(crate::judge::judge(&results).uncompared.is_empty());
        for sample in &mut results.boots[1].samples {
            sample.metrics.remove("verify_cpu_ns");
        }
        assert!(
            !jrows(&results).iter().any(|r| r.metric == "verify_cpu_ns"),
            "no comparison without B samples"
        );
        let missing = crate::judge::judge(&results).uncompared;
        assert_eq!(missing.len(), 1, "{missing:?}");
        let line = missing[0].sentence();
        assert_eq!(
            line,
            "verify_cpu_ns: not compared, B vs A: measured in 6 of 6 A samples and 0 of 3 B samples"
        );
        assert!(markdown(&judged(&results)).contains(&format!("- {line}")));
        assert!(terminal(&judged(&results)).contains(&line));
        // A metric no sample has at all (another lane's) is not missing.
        for boot in &mut results.boots {
            for sample in &mut boot.samples {
                sample.metrics.remove("verify_cpu_ns");
            }
        }
        assert!(crate::judge::judge(&results).uncompared.is_empty());
    }

    #[test]
    fn a_verdict_of_the_negligible_level_is_explained() {
        let mut results = crate::results::tests::with_control(None);
        // Background flushes in the control only: 0 or 1 per sample.
        for boot in &mut results.boots {
            for s in boot.samples.iter_mut().filter(|s| s.condition.is_some()) {
                s.metrics
                    .insert("pageout_flushes".into(), u64::from(s.index % 2));
            }
        }
        let text = markdown(&judged(&results));
        let (_, control) = text.split_once("#### Control").expect(&text);
        assert!(
            control.contains("| pageout_flushes | count |")
                && control.contains(
                    "- pageout_flushes: negligible \u{2014} both within \u{b1}80, the metric's negligible level, in every sample"
                ),
            "{text}"
        );
    }

    #[test]
    fn more_variants_get_a_column_each_and_a_per_patch_run_its_waterfall() {
        let results = crate::results::tests::per_patch();
        assert!(crate::judge::is_prefix_chain(&results));
        let rows = jrows(&results);
        assert!(rows.iter().all(|r| r.baseline == "base"));
        let text = markdown(&judged(&results));
        eprintln!("{text}");
        assert!(
            text.contains("### patchbench: zswap-pageout, 3 variants against `base`"),
            "{text}"
        );
        assert!(
            text.contains("| metric | unit | base mean | p1 vs base | p2 vs base | p3 vs base |"),
            "{text}"
        );
        assert!(
            text.contains("| `p2` | `+ patch 2/3: mm: memcg: the counter` |"),
            "{text}"
        );
        // The waterfall puts the change on p2 alone.
        let (_, waterfall) = text.split_once("#### What each patch did").expect(&text);
        let block: Vec<&str> = waterfall
            .lines()
            .skip_while(|l| !l.starts_with("| pageout_cpu_ns |"))
            .take_while(|l| !l.contains("sum of the steps"))
            .collect();
        let line = |step: &str| {
            block
                .iter()
                .find(|l| l.contains(step))
                .unwrap_or_else(|| panic!("no {step} in {waterfall}"))
                .to_string()
        };
        assert!(
            line("p1 `mm: first`").contains("no clear difference"),
            "{waterfall}"
        );
        assert!(
            line("p2 `mm: memcg: the counter`").contains("improvement"),
            "{waterfall}"
        );
        assert!(
            line("p3 `mm: third`").contains("no clear difference"),
            "{waterfall}"
        );
        let steps = crate::judge::judge(&results).steps;
        let metrics = waterfall::metrics(&results, &steps, &rows);
        let cpu = metrics
            .iter()
            .find(|m| m.metric == "pageout_cpu_ns")
            .unwrap();
        let whole = cpu.whole.unwrap().change_pct().unwrap();
        assert!((cpu.sum_points.unwrap() - whole).abs() < 1e-9, "{cpu:?}");
        assert!((whole + 20.0).abs() < 0.2, "{whole}");
        let terminal = terminal(&judged(&results));
        assert!(terminal.contains("\np2 vs base\nmetric"), "{terminal}");
        // An A/B document has no steps.
        assert!(steps_of_fixture().is_empty());
    }

    fn steps_of_fixture() -> Vec<ComparisonRecord> {
        let results = crate::results::tests::fixture();
        crate::judge::judge(&results).steps
    }

    /// The report opens with the headline, made of the primary metrics'
    /// verdicts; it has no geometric mean, which once showed +36.79% for a
    /// series that improved its primary metric by 18% (issue 37). A
    /// background flush in one of B's samples (issue 17) does not move it.
    #[test]
    fn the_report_opens_with_a_headline_of_the_primary_verdicts_and_no_summary_figure() {
        let headline = |results: &Results| {
            let text = markdown(&judged(results));
            assert!(!text.contains("Geometric mean"), "{text}");
            let first = text.lines().find(|l| l.starts_with("**")).unwrap();
            let term = terminal(&judged(results));
            assert!(term.starts_with(first.trim_matches('*')), "{term}");
            first.to_string()
        };
        let mut results = crate::results::tests::fixture();
        for boot in &mut results.boots {
            for s in &mut boot.samples {
                let flushes = if boot.variant == "A" { 8192 } else { 0 };
                s.metrics.insert("pageout_flushes".into(), flushes);
            }
        }
        let before = headline(&results);
        assert!(
            before.starts_with("**B: pageout_flushes 8192 \u{2192} 0 (changed)"),
            "{before}"
        );
        let b = results.boots.iter_mut().find(|b| b.variant == "B").unwrap();
        b.samples[0].metrics.insert("pageout_flushes".into(), 1);
        let after = headline(&results);
        assert!(
            after.contains("pageout_flushes \u{2212}100.00% (changed)"),
            "{after}"
        );
        // The rest of it is the same.
        let tail = |h: &str| h.split_once("(changed)").unwrap().1.to_string();
        assert_eq!(tail(&after), tail(&before));
    }

    #[test]
    fn the_hosts_noise_floor_is_reported_and_named_in_noisy_verdicts() {
        let mut results = crate::results::tests::fixture();
        // Without a measurement (a stored run), no line.
        assert!(!markdown(&judged(&results)).contains("Host noise floor"));
        results.host.noise = Some(crate::results::HostNoise {
            method: "xorshift64, 1 steps".into(),
            samples_ms: vec![90.0, 100.0, 110.0],
        });
        let text = markdown(&judged(&results));
        assert!(
            text.contains("Host noise floor: a fixed CPU loop on the host varied by 10.0% (CV of 3 timings before, between and after the boots, mean 100 ms); the guest's within-boot CVs of times and rates reach"),
            "{text}"
        );
        // The stored run's inconclusive rows say the host was noisy.
        let noisy =
            ". The host was noisy: its own fixed CPU loop varied by 10.0% (CV) in this run.";
        assert_eq!(text.matches(noisy).count(), 4, "{text}");
        assert!(terminal(&judged(&results)).contains("Host noise floor"));
        // Under icount the host's noise does not reach guest times.
        results.host.lane = crate::model::Lane::Icount;
        let text = markdown(&judged(&results));
        assert!(!text.contains(noisy), "{text}");
        assert!(text.contains("does not reach them"), "{text}");
    }

    #[test]
    fn the_guests_cv_beside_the_hosts_is_of_times_and_rates_only() {
        use crate::model::Unit;
        // The smoke run's rows: PAGEOUT CPU steady, a rare flush count
        // (0, 0, 1 in one boot) with a CV of 173%.
        let lower = Some(crate::model::Direction::LowerIsBetter);
        let rows = [
            (Some(Unit::Ns), lower, Some(0.02)),
            (Some(Unit::Ns), lower, Some(0.12)),
            (Some(Unit::Count), lower, Some(173.21)),
            (None, None, Some(50.0)),
            (Some(Unit::Ns), lower, None),
            // A kworker's time, which explains rather than measures.
            (
                Some(Unit::Ns),
                Some(crate::model::Direction::Neither),
                Some(160.0),
            ),
        ];
        assert_eq!(max_time_cv(rows), Some(0.12));
        assert_eq!(max_time_cv([(Some(Unit::Count), lower, Some(1.0))]), None);
    }

    #[test]
    fn untrusted_subjects_render_literally_in_markdown() {
        let hostile = "mm: <img src=x onerror=alert(1)> @maintainer [x](javascript:1) `a`\n# b";
        assert_eq!(
            code_span(hostile),
            "`mm: <img src=x onerror=alert(1)> @maintainer [x](javascript:1) 'a' # b`"
        );
    }

    #[test]
    fn times_read_in_a_unit_that_fits_their_size() {
        assert_eq!(format_value(23_903_000.0, Some(Unit::Ns)), "23.903 ms");
        // Seed 002's flush of 1.5 µs reads so, not 0.001516 ms.
        assert_eq!(format_value(1_515.7, Some(Unit::Ns)), "1.516 \u{b5}s");
        assert_eq!(format_value(512.0, Some(Unit::Ns)), "512.0 ns");
        assert_eq!(format_value(1_343_326_000.0, Some(Unit::Ns)), "1.343 s");
        assert_eq!(format_value(500_000.0, Some(Unit::Ns)), "500.000 \u{b5}s");
        assert_eq!(format_value(0.0, Some(Unit::Ns)), "0.000 ms");
        // Below 1 Mcycles, four significant digits.
        assert_eq!(
            format_value(10_072.0, Some(Unit::Cycles)),
            "0.01007 Mcycles"
        );
        assert_eq!(
            format_value(-2_000.0, Some(Unit::Cycles)),
            "-0.002000 Mcycles"
        );
        assert_eq!(format_value(8192.0, Some(Unit::Pages)), "8192 pages");
        assert_eq!(format_value(8191.5, Some(Unit::Pages)), "8191.5 pages");
        assert_eq!(format_value(100_663_296.0, Some(Unit::Bytes)), "96.0 MiB");
        // A row shows both means in the unit of the larger.
        let s = scale(Some(Unit::Ns), 1_519.0);
        assert_eq!((s.label, show(900.0, s)), ("\u{b5}s", "0.9000".to_string()));
        assert_eq!(signed_pct(Some(-44.694)), "\u{2212}44.69%");
        assert_eq!(signed_pct(Some(0.8)), "+0.80%");
        assert_eq!(signed_pct(None), "n/a");
    }
}
