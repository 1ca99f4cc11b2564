//! Formatting shared by the report's renderings: values in the units
//! people read, signed percentages, intervals, p-values, and untrusted text
//! made inert for Markdown.

use crate::model::Unit;
use crate::results::{ComparisonRecord, ControlRecord};

/// `Control `unlimited` (zswap_max: max)`: a control's table title.
pub fn control_title(control: &ControlRecord) -> String {
    format!("Control `{}` ({})", control.name, control.describe_set())
}

/// The change with its interval, bold when a change was called.
pub fn change_cell(c: &ComparisonRecord) -> String {
    let Some(change) = &c.mean_change else {
        return "n/a".into();
    };
    let called = c.kind().is_change();
    let pct = signed_pct(Some(change.pct));
    let pct = if called { format!("**{pct}**") } else { pct };
    match &change.ci {
        Some(ci) => format!(
            "{pct} [{}, {}]",
            signed_pct(Some(ci.lo)),
            signed_pct(Some(ci.hi))
        ),
        None => pct,
    }
}

pub fn p_cell(c: &ComparisonRecord) -> String {
    match &c.welch {
        Some(w) if w.p < 0.001 => "<0.001".into(),
        Some(w) => format!("{:.3}", w.p),
        None => "n/a".into(),
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The unit a row's values are shown in: a time in ns, µs, ms or s as
/// the size of what it is shown beside asks (a flush of 1.5 µs reads
/// `1.519 µs`, not `0.001519 ms`), bytes in MiB, cycles in millions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub label: &'static str,
    divisor: f64,
    unit: Option<Unit>,
}

/// The [`Scale`] for values of `unit` the size of `reference` (a row's
/// larger mean).
pub fn scale(unit: Option<Unit>, reference: f64) -> Scale {
    let r = reference.abs();
    let (label, divisor) = match unit {
        Some(Unit::Ns) if r == 0.0 => ("ms", 1e6),
        Some(Unit::Ns) if r < 1e3 => ("ns", 1.0),
        Some(Unit::Ns) if r < 1e6 => ("\u{b5}s", 1e3),
        Some(Unit::Ns) if r < 1e9 => ("ms", 1e6),
        Some(Unit::Ns) => ("s", 1e9),
        Some(Unit::Cycles) => ("Mcycles", 1e6),
        Some(Unit::Insns) => ("Minsns", 1e6),
        Some(Unit::Bytes) => ("MiB", MIB),
        Some(u) => (u.label(), 1.0),
        None => ("", 1.0),
    };
    Scale {
        label,
        divisor,
        unit,
    }
}

impl Scale {
    /// What a raw value is multiplied by to read in this scale.
    pub fn factor(&self) -> f64 {
        1.0 / self.divisor
    }
}

/// The scale of a row: its unit at the size of its larger mean.
pub fn row_scale(row: &ComparisonRecord) -> Scale {
    scale(row.unit, row.a.mean.abs().max(row.b.mean.abs()))
}

/// `v` in `scale`.
pub fn show(v: f64, scale: Scale) -> String {
    let x = v / scale.divisor;
    match scale.unit {
        Some(Unit::Ns) if scale.divisor == 1.0 => format!("{x:.1}"),
        Some(Unit::Ns | Unit::Cycles | Unit::Insns) => millions(x),
        Some(Unit::Bytes) => format!("{x:.1}"),
        _ if x.fract() == 0.0 => format!("{x:.0}"),
        _ => format!("{x:.1}"),
    }
}

/// A value in a unit that fits its own size (see [`scale`]).
pub fn format_value(v: f64, unit: Option<Unit>) -> String {
    let s = scale(unit, v);
    match s.label {
        "" => show(v, s),
        label => format!("{} {label}", show(v, s)),
    }
}

/// Three decimals, or four significant digits below 1: a flush of 1,516 ns
/// reads 0.001516 ms, not 0.002.
fn millions(x: f64) -> String {
    if x == 0.0 || x.abs() >= 1.0 {
        return format!("{x:.3}");
    }
    let decimals = (3 - x.abs().log10().floor() as i32).clamp(3, 12) as usize;
    format!("{x:.decimals$}")
}

pub fn signed_pct(p: Option<f64>) -> String {
    match p {
        // U+2212 MINUS SIGN, as the mails write it.
        Some(p) if p < 0.0 => format!("\u{2212}{:.2}%", -p),
        Some(p) => format!("+{p:.2}%"),
        None => "n/a".into(),
    }
}

/// Untrusted text (a patch subject) for Markdown: a code span renders
/// literally, so the text can carry no HTML, link, image or @mention into a
/// PR comment. Backticks become quotes and control characters spaces, so
/// the span cannot be closed early or broken across lines.
pub fn code_span(text: &str) -> String {
    let inner: String = text
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("`{inner}`")
}

/// The first 12 characters of a hash or commit id.
pub fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// How TCG ran, for the accelerator banners of every report: the lane's
/// label after "TCG" (icount, or single-threaded plain TCG; nothing for
/// MTTCG).
pub fn tcg_mode(results: &crate::results::Results) -> &'static str {
    match (results.host.lane.icount(), results.host.tcg_threads) {
        (true, _) => " with icount (deterministic guest clock)",
        (false, Some(crate::model::TcgThreads::Single)) => " (one host thread for all vCPUs)",
        (false, _) => "",
    }
}

/// How the boots' kernels split CPU time, for every report: one sentence,
/// or `None` for a document from before the guest said. A run in which
/// any boot split by ticks says so first: its user and system times are
/// then samples of timer ticks, never called precise.
pub fn cputime_line(results: &crate::results::Results) -> Option<String> {
    use crate::results::CputimeAccounting;
    let boots: Vec<(&str, &crate::results::Cputime)> = results
        .boots
        .iter()
        .filter_map(|b| Some((b.label.as_str(), b.facts.as_ref()?.cputime.as_ref()?)))
        .collect();
    if boots.is_empty() {
        return None;
    }
    let hz = |c: &crate::results::Cputime| c.hz.map_or("?".to_string(), |h| h.to_string());
    let not_precise: Vec<&(&str, &crate::results::Cputime)> =
        boots.iter().filter(|(_, c)| !c.is_precise()).collect();
    if let Some((_, first)) = not_precise.first() {
        let labels: Vec<&str> = not_precise.iter().map(|(l, _)| *l).collect();
        let how = match first.accounting {
            CputimeAccounting::Tick => format!("split by timer ticks (HZ {})", hz(first)),
            CputimeAccounting::Unknown => "accounted in a way its kernel does not say".to_string(),
            CputimeAccounting::Precise => {
                "charged precisely, but with interrupts in the tasks' time".to_string()
            }
        };
        return Some(format!(
            "CPU time: {how} in boot{} {}, so user and system times there are not exact (it lacks {}; kconfigs/cputime.config).",
            if labels.len() == 1 { "" } else { "s" },
            labels.join(", "),
            first.missing.join(", ")
        ));
    }
    let hzs: std::collections::BTreeSet<String> = boots.iter().map(|(_, c)| hz(c)).collect();
    let hz = hzs.into_iter().collect::<Vec<_>>().join(" and ");
    Some(format!(
        "CPU time: precise in every boot (charged at each kernel entry and exit, interrupts apart; HZ {hz}, so a task's user/system split is exact to one tick per mode){}.",
        if results.host.lane.icount() {
            ", and under icount as exact as the instruction count"
        } else {
            ""
        }
    ))
}

/// Seconds as people read a run's length: `41 s`, `3m12s`, `1h05m`.
pub fn span(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// How long the boots took, for every report: their wall time, and,
/// summed over boots, the time to boot (QEMU's start to the agent's hello)
/// and the rest (setup and samples); in a sequential campaign also the
/// rounds run and the time a stop before the budget's end saved, against
/// running every round at the mean round's time. `None` for a document
/// from before the wall time was recorded.
pub fn time_line(results: &crate::results::Results) -> Option<String> {
    let wall = results.boots_wall_seconds?;
    let booting: f64 = results.boots.iter().filter_map(|b| b.hello_seconds).sum();
    let total: f64 = results.boots.iter().filter_map(|b| b.total_seconds).sum();
    let mut line = format!(
        "Time: {} of boots, wall clock ({} boots{}); summed over boots, {} booting and {} running the workload.",
        span(wall),
        results.boots.len(),
        results
            .host
            .parallel_boots
            .map(|n| format!(", up to {n} side by side"))
            .unwrap_or_default(),
        span(booting),
        span((total - booting).max(0.0)),
    );
    if let Some(s) = &results.protocol.sequential
        && let Some(last) = s.looks.last()
    {
        use crate::results::SequentialStop;
        let why = match s.stop() {
            SequentialStop::Decided => "every primary metric decided",
            SequentialStop::Rounds => "the budget's rounds spent",
            SequentialStop::Time => "the time budget spent",
            SequentialStop::Running => "not finished",
        };
        line.push_str(&format!(
            " Sequential: {} round(s) of {} ({why})",
            last.round, s.rounds
        ));
        if last.round < s.rounds && last.round > 0 {
            let per_round = last.boot_seconds / f64::from(last.round);
            line.push_str(&format!(
                ", about {} of boots saved against the whole budget ({} a round)",
                span(per_round * f64::from(s.rounds - last.round)),
                span(per_round)
            ));
        }
        line.push('.');
    }
    let replayed: Vec<&str> = results
        .boots
        .iter()
        .filter(|b| b.replayed)
        .map(|b| b.label.as_str())
        .collect();
    if !replayed.is_empty() {
        line.push_str(&format!(
            " Replayed from the cache, not booted: {} (under icount a boot with the same inputs repeats instruction for instruction; its times are the earlier boot's; `run --fresh-boots` boots every kernel).",
            replayed.join(", ")
        ));
    }
    Some(line)
}

/// The method of a sequential campaign's intervals and verdicts, for the
/// reports; `None` for the fixed protocol.
pub fn sequential_line(rows: &[&ComparisonRecord]) -> Option<String> {
    let s = rows.iter().find_map(|r| r.options.sequential)?;
    Some(format!(
        "Sequential look {} of {} ({} spending): each interval is a repeated 95% confidence interval (Welch's t at the look's nominal level {:.4}, boundary {:.3} on the normal scale), which covers the changes of every look at once; a primary metric is decided when its interval clears the band (a change) or lies wholly inside ±{}% (no clear difference); docs/statistics.md.",
        s.look,
        s.of,
        s.spending.name(),
        s.level,
        s.critical,
        rows.first().map_or(2.0, |r| r.options.noise_pct),
    ))
}

/// What a campaign judged by boot could detect, as its first round stated
/// it (`protocol.sequential.detectable`): one line per primary metric.
pub fn detectable_lines(results: &crate::results::Results) -> Vec<String> {
    let Some(s) = results.protocol.sequential.as_ref() else {
        return Vec::new();
    };
    s.detectable
        .iter()
        .map(|d| format!("Detectable: {}", d.line(s.rounds)))
        .collect()
}

/// The lane in a word or two, for places with room for no more (the
/// pages' index): `KVM`, `TCG`, `TCG · one thread`, `TCG · icount`,
/// `TCG · counting`, `TCG · cost model`.
pub fn lane_short(results: &crate::results::Results) -> String {
    results
        .host
        .lane
        .index_label(results.host.tcg_threads == Some(crate::model::TcgThreads::Single))
}

/// The largest within-boot CV among the metrics a summary covers (times
/// and rates, [`crate::model::Unit::is_time_or_rate`], that are better one way):
/// a count of rare events (0 in two samples, 1 in the third) has a CV of
/// 173% that says nothing about how steady the guest's timing was, and
/// neither has a kworker's time, which a periodic work item lands in one
/// sample of three.
pub fn max_time_cv(
    rows: impl IntoIterator<
        Item = (
            Option<crate::model::Unit>,
            Option<crate::model::Direction>,
            Option<f64>,
        ),
    >,
) -> Option<f64> {
    rows.into_iter()
        .filter(|(unit, direction, _)| {
            unit.is_some_and(crate::model::Unit::is_time_or_rate)
                && *direction != Some(crate::model::Direction::Neither)
        })
        .filter_map(|(_, _, cv)| cv)
        .reduce(f64::max)
}

/// The host's noise floor beside the guest's within-boot CVs, or `None`
/// for a document without it: "Host noise floor: a fixed CPU loop on the
/// host varied by 3.1% (CV of 12 timings before, between and after the
/// boots, mean 104 ms); the guest's within-boot CVs of times and rates
/// reach 24.5%."
pub fn noise_line(results: &crate::results::Results, max_boot_cv: Option<f64>) -> Option<String> {
    let noise = results.host.noise.as_ref()?;
    let cv = noise
        .cv_pct()
        .map_or_else(|| "n/a".to_string(), |cv| format!("{cv:.1}%"));
    let guest = max_boot_cv.map_or_else(String::new, |g| {
        format!("; the guest's within-boot CVs of times and rates reach {g:.1}%")
    });
    let icount = if results.host.lane.icount() {
        " Under icount guest times count instructions, so the host's noise does not reach them."
    } else {
        ""
    };
    Some(format!(
        "Host noise floor: a fixed CPU loop on the host varied by {cv} (CV of {} timings before, between and after the boots, mean {:.0} ms){guest}.{icount}",
        noise.samples_ms.len(),
        noise.mean_ms(),
    ))
}

/// For an inconclusive verdict under plain TCG on a host whose own CPU
/// loop varied beyond the noise band: the sentence that says so.
pub fn noisy_host(
    results: &crate::results::Results,
    verdict: crate::model::Verdict,
) -> Option<String> {
    if verdict != crate::model::Verdict::Inconclusive || results.host.lane.icount() {
        return None;
    }
    let cv = results.host.noise.as_ref()?.cv_pct()?;
    let band = results.judgement.as_ref().map_or(2.0, |j| j.noise_pct);
    (cv > band).then(|| {
        format!("The host was noisy: its own fixed CPU loop varied by {cv:.1}% (CV) in this run.")
    })
}

/// The boots' order, `A/B/A'`, and how many ran at once when they ran
/// side by side (icount, `host.parallel_boots`).
pub fn boot_order(results: &crate::results::Results) -> String {
    let order: Vec<String> = (0..results.protocol.boots.len())
        .map(|i| crate::model::boot_label(&results.protocol.boots, i))
        .collect();
    match results.host.parallel_boots {
        Some(n) => format!("{} (up to {n} side by side under icount)", order.join("/")),
        None => order.join("/"),
    }
}
