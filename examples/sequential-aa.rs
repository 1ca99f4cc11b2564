//! The error rates of the sequential rule, from the noise of real runs:
//! for each `RESULTS.json:METRIC` given, the baseline's within-boot and
//! between-boot coefficients of variation are measured, and that many
//! simulated campaigns (rounds of A, B, A′ with that noise) are judged by
//! the sequential rule, by naive peeking (the fixed rules after every
//! round, stopping at the first change) and by the fixed protocol of the
//! same size, with no true change (false calls) and with B shifted (power;
//! and, at twice the ±2% band, how often each ends in "no clear
//! difference": false reassurance). First, the fixed protocol's own A/A
//! rate at a few CVs (`aa_false_positive_rate`). docs/statistics.md,
//! "Verdict rules" and "Sequential campaigns", quotes its tables, which it
//! writes to `results/error-rates/sequential.md` (`--out FILE` elsewhere).
//!
//!   cargo run --release --example sequential-aa -- \
//!       results/seeds/000-counter/results.json:pageout_cpu_ns ...

use patchbench::model::{Lane, Spending, TcgThreads};
use patchbench::results::Results;
use patchbench::stats::{
    CompareOptions, NullScenario, RoundsScenario, aa_false_positive_rate, sequential_rates,
};

#[path = "common/out.rs"]
mod out;
use out::Out;

/// Simulated campaigns per row: a 5% rate has a binomial standard error of
/// 0.49 points.
const SIMULATIONS: usize = 2000;
/// The true changes each source is simulated at: none (false calls), the
/// band's edge, and beyond it.
const SHIFTS: [f64; 6] = [0.0, -2.0, -3.0, -4.0, 4.0, -5.0];

/// The baseline's within-boot CV (the mean of its boots' CVs) and
/// between-boot CV (the spread of its boots' means beyond what the
/// within-boot noise explains), both in percent.
fn noise(results: &Results, metric: &str) -> Option<(f64, f64, usize)> {
    let boots = results.samples_by_boot(results.baseline(), None);
    let values: Vec<Vec<f64>> = boots
        .iter()
        .map(|(_, s)| {
            s.iter()
                .filter_map(|x| x.metrics.get(metric).map(|v| *v as f64))
                .collect::<Vec<_>>()
        })
        .filter(|v: &Vec<f64>| v.len() >= 2)
        .collect();
    if values.len() < 2 {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    };
    let grand = mean(&values.concat());
    let within = values.iter().map(|v| var(v)).sum::<f64>() / values.len() as f64;
    let means: Vec<f64> = values.iter().map(|v| mean(v)).collect();
    let per_boot = values.iter().map(Vec::len).min()?;
    let between = (var(&means) - within / per_boot as f64).max(0.0);
    Some((
        within.sqrt() / grand * 100.0,
        between.sqrt() / grand * 100.0,
        per_boot,
    ))
}

/// A source's name in the tables: its kept run's directory and the lane it
/// ran in, then the metric.
fn label(path: &str, results: &Results, metric: &str) -> String {
    let dir = std::path::Path::new(path)
        .parent()
        .and_then(|d| d.file_name())
        .map_or_else(|| path.to_string(), |d| d.to_string_lossy().into_owned());
    let lane = match (results.host.lane, results.host.tcg_threads) {
        (Lane::Tcg, Some(TcgThreads::Single)) => "one thread",
        (Lane::Tcg, _) => "plain TCG",
        (lane, _) => lane.short(),
    };
    format!("`{dir}`, {lane}, `{metric}`")
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// The fixed protocol's A/A false-call rate: one boot of 9 samples a
/// variant, every sample from one normal distribution.
fn fixed_protocol(out: &mut Out, options: &CompareOptions) {
    out.line(&format!(
        "Fixed protocol, A/A: 9 samples a variant, one boot each, {SIMULATIONS} comparisons a row.\n"
    ));
    out.line("| CV | false calls |");
    out.line("|---|---|");
    for cv in [1.0, 3.0, 5.0, 10.0] {
        let scenario = NullScenario {
            a_boots: 1,
            b_boots: 1,
            per_boot: 9,
            cv_pct: cv,
            simulations: SIMULATIONS,
            seed: 7,
        };
        let rate = aa_false_positive_rate(&scenario, options).expect("a valid scenario");
        out.line(&format!("| {cv}% | {} |", pct(rate)));
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut path = "results/error-rates/sequential.md".to_string();
    if let Some(i) = args.iter().position(|a| a == "--out") {
        path = args.get(i + 1).cloned().unwrap_or_default();
        args.drain(i..(i + 2).min(args.len()));
    }
    if args.is_empty() || path.is_empty() {
        eprintln!("usage: sequential-aa [--out FILE] RESULTS.json:METRIC ...");
        std::process::exit(2);
    }
    let mut out = Out::new(
        &path,
        &format!(
            "cargo run --release --example sequential-aa -- {}",
            args.join(" ")
        ),
    );
    let options = CompareOptions {
        resamples: patchbench::stats::MIN_RESAMPLES,
        ..CompareOptions::default()
    };
    fixed_protocol(&mut out, &options);
    let mut summary = Vec::new();
    let mut detail = Vec::new();
    for arg in &args {
        let (file, metric) = arg.rsplit_once(':').expect("RESULTS.json:METRIC");
        let results = Results::load(std::path::Path::new(file)).expect("a results document");
        let Some((within, between, _)) = noise(&results, metric) else {
            eprintln!("{file}: {metric} has too few A boots with samples");
            continue;
        };
        let source = label(file, &results, metric);
        let mut by_shift = Vec::new();
        for shift in SHIFTS {
            let scenario = RoundsScenario {
                a_boots: 2,
                b_boots: 1,
                per_boot: 3,
                rounds: 3,
                spending: Spending::Pocock,
                within_cv_pct: within,
                between_cv_pct: between,
                shift_pct: shift,
                simulations: SIMULATIONS,
                seed: 0x7365_7175_656e_7469, // "sequenti"
            };
            let r = sequential_rates(&scenario, &options).expect("a valid scenario");
            detail.push(format!(
                "| {source} | {within:.3}% | {between:.3}% | 3 × 3 | {shift:+.0}% | {} | {} | {} | {} | {} | {} | {:.2} |",
                pct(r.sequential_calls),
                pct(r.peeking_calls),
                pct(r.fixed_calls),
                pct(r.sequential_same),
                pct(r.fixed_same),
                pct(r.stopped_early),
                r.mean_rounds
            ));
            by_shift.push((shift, r));
        }
        let at = |s: f64| &by_shift.iter().find(|(x, _)| *x == s).expect("simulated").1;
        let (null, minus4, plus4, minus5) = (at(0.0), at(-4.0), at(4.0), at(-5.0));
        summary.push(format!(
            "| {source} | {within:.2}% / {between:.2}% | {} / {} / {} | {} / {} | {} / {} | {} / {} |",
            pct(null.sequential_calls),
            pct(null.peeking_calls),
            pct(null.fixed_calls),
            pct(minus4.sequential_same),
            pct(minus4.fixed_same),
            pct(plus4.sequential_same),
            pct(plus4.fixed_same),
            pct(minus5.sequential_calls),
            pct(minus5.fixed_calls),
        ));
    }
    out.line(&format!(
        "\nSequential campaigns: 3 rounds of A, B, A′ with 3 samples a boot, Pocock spending, {SIMULATIONS} campaigns a row.\n"
    ));
    out.line("| source (baseline's noise) | within / between-boot CV | false calls: sequential / peeking / fixed | false reassurance at −4%: sequential / fixed | at +4% | called at −5%: sequential / fixed |");
    out.line("|---|---|---|---|---|---|");
    summary.iter().for_each(|l| out.line(l));
    out.line("\nEvery true change simulated:\n");
    out.line(
        "| source | within CV | between CV | rounds × samples | true change | sequential calls | peeking calls | fixed calls | sequential no clear difference | fixed no clear difference | decided early | mean rounds |",
    );
    out.line("|---|---|---|---|---|---|---|---|---|---|---|---|");
    detail.iter().for_each(|l| out.line(l));
    out.line(&format!(
        "\n{SIMULATIONS} simulated campaigns per row; binomial standard error of a 5% rate: {:.2}%.",
        (0.05_f64 * 0.95 / SIMULATIONS as f64).sqrt() * 100.0
    ));
    out.finish();
}
