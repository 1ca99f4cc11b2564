//! The error rates of the sequential rule, from the noise of real runs:
//! for each `RESULTS.json:METRIC` given, the baseline's within-boot and
//! between-boot coefficients of variation are measured, and that many
//! simulated campaigns (rounds of A, B, A′ with that noise) are judged by
//! the sequential rule, by naive peeking (the fixed rules after every
//! round, stopping at the first change) and by the fixed protocol of the
//! same size, with no true change (false calls) and with B shifted (power;
//! and, at twice the ±2% band, how often each ends in "no clear
//! difference": false reassurance). docs/statistics.md, "Sequential
//! campaigns", quotes its output.
//!
//!   cargo run --release --example sequential-aa -- \
//!       results/seeds/000-counter/results.json:pageout_cpu_ns ...

use patchbench::model::Spending;
use patchbench::results::Results;
use patchbench::stats::{CompareOptions, RoundsScenario, sequential_rates};

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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: sequential-aa RESULTS.json:METRIC ...");
        std::process::exit(2);
    }
    let simulations = 2000;
    let options = CompareOptions {
        resamples: patchbench::stats::MIN_RESAMPLES,
        ..CompareOptions::default()
    };
    println!(
        "| source | within CV | between CV | rounds × samples | true change | sequential calls | peeking calls | fixed calls | sequential no clear difference | fixed no clear difference | decided early | mean rounds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for arg in &args {
        let (path, metric) = arg.rsplit_once(':').expect("RESULTS.json:METRIC");
        let results = Results::load(std::path::Path::new(path)).expect("a results document");
        let Some((within, between, _)) = noise(&results, metric) else {
            eprintln!("{path}: {metric} has too few A boots with samples");
            continue;
        };
        for shift in [0.0, -2.0, -3.0, -4.0, 4.0, -5.0] {
            let scenario = RoundsScenario {
                a_boots: 2,
                b_boots: 1,
                per_boot: 3,
                rounds: 3,
                spending: Spending::Pocock,
                within_cv_pct: within,
                between_cv_pct: between,
                shift_pct: shift,
                simulations,
                seed: 0x7365_7175_656e_7469, // "sequenti"
            };
            let r = sequential_rates(&scenario, &options).expect("a valid scenario");
            let pct = |x: f64| format!("{:.2}%", x * 100.0);
            println!(
                "| {} `{metric}` | {within:.3}% | {between:.3}% | 3 × 3 | {shift:+.0}% | {} | {} | {} | {} | {} | {} | {:.2} |",
                results.campaign,
                pct(r.sequential_calls),
                pct(r.peeking_calls),
                pct(r.fixed_calls),
                pct(r.sequential_same),
                pct(r.fixed_same),
                pct(r.stopped_early),
                r.mean_rounds
            );
        }
    }
    println!(
        "\n{simulations} simulated campaigns per row; binomial standard error of a 5% rate: {:.2}%.",
        (0.05_f64 * 0.95 / simulations as f64).sqrt() * 100.0
    );
}
