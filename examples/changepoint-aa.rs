//! The false-alarm rate of `patchbench watch`'s change points
//! (`stats::change_points`) in the deterministic lane, from the noise of
//! real A/A runs: the five kept runs `results/seeds/000-counter-aa-1` …
//! `-5` (seed 000 under icount, five nights' worth of the same kernel)
//! give, for each primary metric the lane measures, the spread of a
//! night's samples (within-night CV) and of the nights' means
//! (between-night CV). A night is what a watch night measures of its
//! head: the candidate's samples of the main workload, 3 of them. Then
//! 1 000 histories of 100 nights with that noise and no true step are
//! searched, and every change point found is false; a noisy lane and a
//! few true steps are shown for context. docs/statistics.md, "Change
//! points", quotes its tables, which it writes to
//! `results/error-rates/changepoint.md`.
//!
//!   cargo run --release --example changepoint-aa

use patchbench::results::{Results, VerdictRecord};
use patchbench::stats::{ChangePointOptions, FalseAlarms, change_points, false_alarm_rate};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use statrs::distribution::{ChiSquared, ContinuousCDF};

#[path = "common/out.rs"]
mod out;
use out::Out;

const RUNS: [&str; 5] = [
    "results/seeds/000-counter-aa-1/results.json",
    "results/seeds/000-counter-aa-2/results.json",
    "results/seeds/000-counter-aa-3/results.json",
    "results/seeds/000-counter-aa-4/results.json",
    "results/seeds/000-counter-aa-5/results.json",
];
const HISTORIES: usize = 1000;
const NIGHTS: usize = 100;
const SAMPLES: usize = 3;

/// One night of a run: the candidate's samples of `metric` in the main
/// workload (no control).
fn night(results: &Results, metric: &str) -> Vec<f64> {
    let candidate = &results.candidates()[0].name;
    results
        .samples_by_boot(candidate, None)
        .iter()
        .flat_map(|(_, samples)| samples.iter().filter_map(|s| s.metrics.get(metric)))
        .map(|v| *v as f64)
        .collect()
}

/// The noise of a set of nights, in percent of the grand mean.
struct Noise {
    /// The pooled within-night CV.
    within: f64,
    /// The CV of the nights' means.
    of_means: f64,
    /// The between-night CV: the spread of the means beyond what the
    /// within-night noise of `n` samples explains, `√(s²_means − s²_within
    /// / n)`, 0 when that is negative.
    between: f64,
    /// A pessimistic between-night CV: the CV of the nights' means at its
    /// one-sided 95% upper bound (χ² with nights − 1 degrees of freedom;
    /// five nights pin it only roughly), all of it taken as between-night
    /// noise on top of the within-night noise.
    between_upper: f64,
}

fn noise(nights: &[Vec<f64>]) -> Noise {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    };
    let grand = mean(&nights.concat());
    let within = nights.iter().map(|n| var(n)).sum::<f64>() / nights.len() as f64;
    let means: Vec<f64> = nights.iter().map(|n| mean(n)).collect();
    let per_night = nights.iter().map(Vec::len).min().unwrap_or(1) as f64;
    let df = (means.len() - 1) as f64;
    let chi2 = ChiSquared::new(df).expect("at least two nights");
    let upper = var(&means) * df / chi2.inverse_cdf(0.05);
    let pct = |v: f64| v.max(0.0).sqrt() / grand * 100.0;
    Noise {
        within: pct(within),
        of_means: pct(var(&means)),
        between: pct(var(&means) - within / per_night),
        between_upper: pct(upper),
    }
}

/// A standard normal draw (Box-Muller), for the histories with a true
/// step, drawn as `false_alarm_rate` draws its own.
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let unit = |rng: &mut ChaCha8Rng| (rng.next_u64() >> 11) as f64 / (1_u64 << 53) as f64;
    let (u1, u2) = (1.0 - unit(rng), unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A history of `NIGHTS` nights of `SAMPLES` samples around 100, with a
/// step of `step_pct` at night `NIGHTS / 2`.
fn draw(rng: &mut ChaCha8Rng, between: f64, within: f64, step_pct: f64) -> Vec<Vec<f64>> {
    (0..NIGHTS)
        .map(|i| {
            let level = if i >= NIGHTS / 2 {
                100.0 + step_pct
            } else {
                100.0
            };
            let centre = level * (1.0 + between / 100.0 * normal(rng));
            (0..SAMPLES)
                .map(|_| centre * (1.0 + within / 100.0 * normal(rng)))
                .collect()
        })
        .collect()
}

/// `watch` searches the history again after every night. Of `histories`
/// A/A histories searched night by night (the first night alone, then
/// the first two, …, then all `NIGHTS`): the false steps ever reported
/// (each night index counted once per history), and the histories with
/// any.
fn watched(histories: usize, between: f64, within: f64) -> (usize, usize) {
    let opts = ChangePointOptions::default();
    let mut rng = ChaCha8Rng::seed_from_u64(0x6e69_6768_746c_7921); // "nightly!"
    let (mut steps, mut with) = (0, 0);
    for _ in 0..histories {
        let nights = draw(&mut rng, between, within, 0.0);
        let mut reported = std::collections::BTreeSet::new();
        for last in 1..=NIGHTS {
            for step in change_points(&nights[..last], &opts).expect("finite nights") {
                reported.insert(step.index);
            }
        }
        steps += reported.len();
        with += usize::from(!reported.is_empty());
    }
    (steps, with)
}

/// Of `histories` histories with a true step of `step_pct` at night
/// `NIGHTS / 2`: how many had a change point within one night of it, and
/// how many had change points but none there, and how many had more than
/// one.
fn detections(histories: usize, between: f64, within: f64, step_pct: f64) -> [usize; 3] {
    let opts = ChangePointOptions::default();
    let mut rng = ChaCha8Rng::seed_from_u64(0x7374_6570_7374_6570); // "stepstep"
    let at = NIGHTS / 2;
    let mut counts = [0; 3];
    for _ in 0..histories {
        let nights = draw(&mut rng, between, within, step_pct);
        let steps = change_points(&nights, &opts).expect("finite nights");
        counts[0] += usize::from(!steps.is_empty());
        counts[1] += usize::from(steps.iter().any(|s| s.index.abs_diff(at) <= 1));
        counts[2] += usize::from(steps.len() > 1);
    }
    counts
}

fn row(
    out: &mut Out,
    label: &str,
    between: f64,
    within: f64,
    opts: &ChangePointOptions,
) -> FalseAlarms {
    let r = false_alarm_rate(HISTORIES, NIGHTS, SAMPLES, between, within, opts)
        .expect("a valid scenario");
    out.line(&format!(
        "| {label} | {between:.3}% | {within:.3}% | {} | {} | {} | {:.5} | {:.5} |",
        r.nights,
        r.steps,
        r.histories_with_steps,
        r.rate_per_night * 100.0,
        r.upper_95_per_night * 100.0,
    ));
    r
}

fn main() {
    let mut out = Out::new(
        "results/error-rates/changepoint.md",
        "cargo run --release --example changepoint-aa",
    );
    let runs: Vec<Results> = RUNS
        .iter()
        .map(|path| Results::load(std::path::Path::new(path)).expect("a kept A/A run"))
        .collect();
    let judged = runs[0].judgement.as_ref().expect("a judged run");
    // The primary metrics of the main workload that the lane measures (not
    // context), and that vary: a constant count has no false steps.
    let metrics: Vec<&str> = judged
        .rows
        .iter()
        .filter(|r| r.primary && r.condition.is_none() && r.verdict != VerdictRecord::Context)
        .map(|r| r.metric.as_str())
        .collect();
    out.line(&format!(
        "Nights: the candidate's samples of the main workload in {} A/A runs ({}).\n",
        runs.len(),
        runs[0].campaign
    ));
    out.line("| metric | samples a night | within-night CV | CV of the night means | between-night CV | its 95% upper bound |");
    out.line("|---|---|---|---|---|---|");
    let mut lanes = Vec::new();
    for metric in &metrics {
        let nights: Vec<Vec<f64>> = runs.iter().map(|r| night(r, metric)).collect();
        if nights.iter().any(|n| n.len() < 2) {
            eprintln!("{metric}: a night with fewer than two samples");
            continue;
        }
        let n = noise(&nights);
        out.line(&format!(
            "| `{metric}` | {} | {:.4}% | {:.4}% | {:.4}% | {:.4}% |",
            nights.iter().map(Vec::len).min().unwrap_or(0),
            n.within,
            n.of_means,
            n.between,
            n.between_upper
        ));
        if n.within > 0.0 || n.of_means > 0.0 {
            lanes.push((metric.to_string(), n));
        }
    }
    let opts = ChangePointOptions::default();
    out.line(&format!(
        "\nFalse change points: {HISTORIES} A/A histories of {NIGHTS} nights, {SAMPLES} samples a night, \
         alpha {}, band ±{}%, min_nights {}, {} permutations, the default seed.\n",
        opts.alpha, opts.noise_pct, opts.min_nights, opts.permutations
    ));
    out.line("| noise | between-night CV | within-night CV | nights | false steps | histories with one | per 100 nights | 95% upper bound per 100 nights |");
    out.line("|---|---|---|---|---|---|---|---|");
    for (metric, n) in &lanes {
        row(&mut out, &format!("`{metric}`"), n.between, n.within, &opts);
        row(
            &mut out,
            &format!("`{metric}`, between at its upper bound"),
            n.between_upper,
            n.within,
            &opts,
        );
    }
    row(&mut out, "a noisy lane", 3.0, 3.0, &opts);
    let no_band = ChangePointOptions {
        noise_pct: 0.0,
        ..opts
    };
    if let Some((metric, n)) = lanes.first() {
        row(
            &mut out,
            &format!("`{metric}`, no band (the permutation test alone)"),
            n.between,
            n.within,
            &no_band,
        );
    }
    row(&mut out, "a noisy lane, no band", 3.0, 3.0, &no_band);

    let histories = 200;
    out.line(&format!(
        "\nSearched night by night, as `watch` does: {histories} A/A histories of {NIGHTS} nights, \
         each searched after every night; every step ever reported is counted once.\n"
    ));
    out.line("| noise | between-night CV | within-night CV | nights | false steps | histories with one | per 100 nights |");
    out.line("|---|---|---|---|---|---|---|");
    let mut watches: Vec<(String, f64, f64)> = Vec::new();
    if let Some((metric, n)) = lanes.first() {
        watches.push((format!("`{metric}`"), n.between, n.within));
        watches.push((
            format!("`{metric}`, between at its upper bound"),
            n.between_upper,
            n.within,
        ));
    }
    watches.push(("a noisy lane".to_string(), 3.0, 3.0));
    for (label, between, within) in &watches {
        let (steps, with) = watched(histories, *between, *within);
        out.line(&format!(
            "| {label} | {between:.3}% | {within:.3}% | {} | {steps} | {with} | {:.5} |",
            histories * NIGHTS,
            steps as f64 / (histories * NIGHTS) as f64 * 100.0
        ));
    }

    out.line(&format!(
        "\nTrue steps, for context: {histories} histories of {NIGHTS} nights with one step at night {}; \
         the histories with a change point, with one within a night of the step, and with more than one.\n",
        NIGHTS / 2
    ));
    out.line("| noise | step | a change point | within a night of the step | more than one |");
    out.line("|---|---|---|---|---|");
    let mut contexts: Vec<(String, f64, f64)> = lanes
        .iter()
        .take(1)
        .map(|(m, n)| (format!("`{m}`"), n.between, n.within))
        .collect();
    contexts.push(("a noisy lane (3% / 3%)".to_string(), 3.0, 3.0));
    let pct = |k: usize| format!("{:.1}%", k as f64 / histories as f64 * 100.0);
    for (label, between, within) in &contexts {
        for step in [2.5, 3.0, 5.0, 10.0] {
            let [any, near, several] = detections(histories, *between, *within, step);
            out.line(&format!(
                "| {label} | +{step}% | {} | {} | {} |",
                pct(any),
                pct(near),
                pct(several)
            ));
        }
    }
    out.finish();
}
