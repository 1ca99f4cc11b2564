//! SVG plots, drawn with plotters' SVG backend into strings. Pure and
//! deterministic: sample points are spread by their index, not at random.
//!
//! Text in the SVG: plotters-svg 0.3.7 escapes `<>&"'` in every text node
//! and attribute it writes (`SVGBackend::escape_and_push`), so boot labels
//! reach the axis escaped exactly once; the one text this module adds itself,
//! the `<title>`, goes through [`xml_escape`]. The HTML tests feed hostile
//! labels through both paths. Without plotters' `ttf` feature, text is laid
//! out with a rough width estimate and drawn as SVG `<text>`; the browser
//! picks the font.

use std::fmt;

use plotters::prelude::*;

use crate::model::{Unit, Verdict};
use crate::results::ComparisonRecord;

/// An SVG document this module drew. Only this module makes one, so a
/// template may embed it unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Svg(String);

impl Svg {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Svg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot draw the plot of {metric}")]
pub struct PlotError {
    pub metric: String,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Variant A's colour (blue), as in the page's legend.
pub const A_COLOUR: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
/// Variant B's colour (orange), as in the page's legend.
pub const B_COLOUR: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
/// The colours of further variants, in order (Tableau 10's next ones).
const MORE_COLOURS: [RGBColor; 4] = [
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
];

const SAMPLES_SIZE: (u32, u32) = (640, 280);
const TREND_SIZE: (u32, u32) = (640, 260);
// plotters-svg writes text at size / 1.24: 16 becomes about 13 px.
const FONT: (&str, u32) = ("sans-serif", 16);

/// The colour of the variant at `index` in the results (0: the baseline).
fn colour(index: usize) -> RGBColor {
    match index {
        0 => A_COLOUR,
        1 => B_COLOUR,
        i => MORE_COLOURS[(i - 2) % MORE_COLOURS.len()],
    }
}

/// A run's point on a trend plot: its verdict's colour (light grey for a
/// context row, which has none), or blue when the run did not measure the
/// metric.
fn verdict_colour(verdict: Option<Verdict>) -> RGBColor {
    match verdict {
        Some(Verdict::Improvement) => RGBColor(0x1a, 0x7f, 0x37),
        Some(Verdict::Regression) => RGBColor(0xcf, 0x22, 0x2e),
        Some(Verdict::NoClearDifference) => RGBColor(0x6e, 0x77, 0x81),
        Some(Verdict::Negligible) => RGBColor(0xaf, 0xb8, 0xc1),
        Some(Verdict::Inconclusive) => RGBColor(0xbf, 0x87, 0x00),
        Some(Verdict::Changed) => RGBColor(0x09, 0x69, 0xda),
        Some(Verdict::Context) => RGBColor(0xd0, 0xd7, 0xde),
        None => RGBColor(0x1f, 0x77, 0xb4),
    }
}

/// Escape text for an XML text node or a quoted attribute.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The factor from a metric's raw unit to the unit pages show
/// (nanoseconds as milliseconds), and that unit's name.
pub fn display_unit(unit: Option<Unit>, reference: f64) -> (f64, &'static str) {
    let s = crate::report::scale(unit, reference);
    (s.factor(), s.label)
}

/// Where sample `j` of `n` in one boot sits, relative to the boot's slot.
fn spread(j: usize, n: usize) -> f64 {
    if n < 2 {
        0.0
    } else {
        -0.25 + 0.5 * j as f64 / (n - 1) as f64
    }
}

/// The boot or run an x-axis tick stands for. Slots sit at whole numbers
/// from 0; with at most as many ticks as slots, plotters puts its ticks on
/// whole numbers, and any other tick gets no label.
fn slot(x: f64) -> Option<usize> {
    let r = x.round();
    (r >= 0.0 && (x - r).abs() < 1e-6).then_some(r as usize)
}

/// A y range holding every value, padded so nothing sits on the frame, and
/// never empty.
fn y_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (-1.0, 1.0);
    }
    let span = hi - lo;
    let pad = if span > 0.0 {
        span * 0.1
    } else if lo != 0.0 {
        lo.abs() * 0.05
    } else {
        1.0
    };
    (lo - pad, hi + pad)
}

/// An axis tick: at most three decimals, no trailing zeros.
fn tick(v: &f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// Put a `<title>` (the accessible name and the hover text) right after
/// the `<svg ...>` opening tag.
fn with_title(svg: String, title: &str) -> Svg {
    let Some(end) = svg.find('>') else {
        return Svg(svg);
    };
    let mut out = String::with_capacity(svg.len() + title.len() + 20);
    out.push_str(&svg[..=end]);
    out.push_str("\n<title>");
    out.push_str(&xml_escape(title));
    out.push_str("</title>");
    out.push_str(&svg[end + 1..]);
    Svg(out)
}

fn err(metric: &str) -> impl Fn(Box<dyn std::error::Error + Send + Sync>) -> PlotError + '_ {
    move |source| PlotError {
        metric: metric.to_string(),
        source,
    }
}

/// A variant's mean on a samples plot: its index in the results (its
/// colour), the mean, and the mean's confidence interval when there is one.
pub type Mean = (usize, f64, Option<(f64, f64)>);

/// The means of an A/B row: A's and B's.
pub fn row_means(row: &ComparisonRecord) -> Vec<Mean> {
    let ci = |s: &crate::results::comparison::SummaryRecord| s.mean_ci.map(|i| (i.lo, i.hi));
    vec![(0, row.a.mean, ci(&row.a)), (1, row.b.mean, ci(&row.b))]
}

/// Every measured sample of one metric by boot, coloured by variant, with
/// each variant's mean (`means`) as a line across the plot and its
/// confidence interval, when it has one, as a band.
///
/// `boots` is [`super::view::samples_by_boot`]'s answer for `name`, of
/// `unit`, shown in the unit that fits the means' size.
pub fn samples_plot(
    name: &str,
    unit: Option<Unit>,
    boots: &[(&str, usize, Vec<f64>)],
    means: &[Mean],
) -> Result<Svg, PlotError> {
    let reference = means.iter().map(|(_, m, _)| m.abs()).fold(0.0, f64::max);
    let (scale, unit) = display_unit(unit, reference);
    let mut buf = String::new();
    draw_samples(&mut buf, boots, means, scale, unit).map_err(err(name))?;
    Ok(with_title(buf, &format!("{name}: every sample by boot")))
}

fn draw_samples(
    buf: &mut String,
    boots: &[(&str, usize, Vec<f64>)],
    means: &[Mean],
    scale: f64,
    unit: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let n = boots.len().max(1);
    let (y_lo, y_hi) = y_range(
        boots
            .iter()
            .flat_map(|(_, _, v)| v.iter().copied())
            .chain(means.iter().flat_map(|(_, m, ci)| {
                let (lo, hi) = ci.unwrap_or((*m, *m));
                [*m, lo, hi]
            }))
            .map(|v| v * scale),
    );
    let labels: Vec<String> = boots.iter().map(|(l, _, _)| l.to_string()).collect();
    let x_lo = -0.5;
    let x_hi = n as f64 - 0.5;

    let root = SVGBackend::with_string(buf, SAMPLES_SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(64)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    let label_of = |x: &f64| {
        slot(*x)
            .and_then(|i| labels.get(i))
            .cloned()
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&label_of)
        .y_labels(6)
        .y_label_formatter(&tick)
        .y_desc(unit)
        .label_style(FONT)
        .axis_desc_style(FONT)
        .light_line_style(TRANSPARENT)
        .draw()?;

    for &(variant, mean, ci) in means {
        let c = colour(variant);
        if let Some((lo, hi)) = ci {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x_lo, lo * scale), (x_hi, hi * scale)],
                c.mix(0.15).filled(),
            )))?;
        }
        chart.draw_series(LineSeries::new(
            [(x_lo, mean * scale), (x_hi, mean * scale)],
            c.stroke_width(2),
        ))?;
    }
    for (i, (_, variant, values)) in boots.iter().enumerate() {
        let c = colour(*variant);
        chart.draw_series(values.iter().enumerate().map(|(j, v)| {
            Circle::new(
                (i as f64 + spread(j, values.len()), v * scale),
                4,
                c.mix(0.85).filled(),
            )
        }))?;
    }
    root.present()?;
    Ok(())
}

/// One run's place on a trend plot.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendPoint {
    /// The x-axis label (a date).
    pub label: String,
    /// What the plot's [`TrendAxis`] shows of the run, with its interval.
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// `None` when the run did not measure the metric.
    pub verdict: Option<Verdict>,
}

/// What a trend plot's points are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TrendAxis {
    /// Each run's B against its A, in percent, around a line at 0: a run
    /// that steps stands out alone, since the next one's A has stepped
    /// too.
    Change,
    /// Each run's own B mean, in the metric's unit (`None`: the spec does
    /// not say), shown in the unit that fits: a step stays up, a drift is
    /// a slope.
    Level(Option<Unit>),
}

impl TrendAxis {
    /// What the plot's `<title>` says it is, after the metric.
    fn title(self) -> &'static str {
        match self {
            TrendAxis::Change => "B vs A across runs",
            TrendAxis::Level(_) => "B's level across runs",
        }
    }
}

/// A change point on a trend plot: a vertical dashed line at `x` (in
/// slots: point `i` sits at `i`, so a step between points 2 and 3 is at
/// 2.5) across the plot, with a short label at its top.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendMarker {
    pub x: f64,
    pub label: String,
}

/// The CSS class of a change point's line and label on a trend plot:
/// `templates/base.html` gives it its colour, defined there once.
pub const CHANGE_POINT_CLASS: &str = "change-point";

/// Roughly how wide one character of an axis label is drawn, in px
/// (`FONT` at 13 px, sans-serif, digits and lower case).
const LABEL_CHAR_PX: f64 = 8.0;
/// The trend plot's frame, inside its margin and y label area, in px.
const TREND_PLOT_PX: f64 = TREND_SIZE.0 as f64 - 2.0 * 12.0 - 64.0;
/// At most this many x labels on a trend plot, however many runs.
const TREND_TICKS: usize = 8;

/// Whether x labels of up to `chars` characters fit side by side under a
/// trend plot of `n` points without running into each other.
pub fn trend_labels_fit(chars: usize, n: usize) -> bool {
    let ticks = n.clamp(1, TREND_TICKS) as f64;
    chars as f64 * LABEL_CHAR_PX <= TREND_PLOT_PX / ticks - 8.0
}

/// One metric across runs, oldest first, as `axis` says: each run's point
/// with its interval as an error bar when it has one, and each of
/// `markers` as a dashed line of [`CHANGE_POINT_CLASS`].
pub fn trend_plot(
    metric: &str,
    axis: TrendAxis,
    points: &[TrendPoint],
    markers: &[TrendMarker],
) -> Result<Svg, PlotError> {
    let mut buf = String::new();
    let marks = draw_trend(&mut buf, axis, points, markers).map_err(err(metric))?;
    Ok(with_title(
        with_markers(buf, &marks),
        &format!("{metric}: {}", axis.title()),
    ))
}

/// A marker placed in the SVG's pixels: its line's x, its top and bottom,
/// and its label.
struct PlacedMarker {
    x: i32,
    top: i32,
    bottom: i32,
    label: String,
}

/// `svg` with each marker's line and label added last (on top of the
/// points), as elements of [`CHANGE_POINT_CLASS`]: their colour and dash
/// come from the page's CSS. The label's text is escaped here.
fn with_markers(mut svg: String, marks: &[PlacedMarker]) -> String {
    if marks.is_empty() {
        return svg;
    }
    let Some(end) = svg.rfind("</svg>") else {
        return svg;
    };
    let mut add = String::new();
    for m in marks {
        // The label reads rightwards from the line, or leftwards when the
        // line is in the plot's right quarter.
        let right = f64::from(m.x) > f64::from(TREND_SIZE.0) * 0.75;
        let (dx, anchor) = if right { (-5, "end") } else { (5, "start") };
        add.push_str(&format!(
            "<line class=\"{CHANGE_POINT_CLASS}\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\"/>\n\
             <text class=\"{CHANGE_POINT_CLASS}\" x=\"{lx}\" y=\"{ly}\" text-anchor=\"{anchor}\">{text}</text>\n",
            x = m.x,
            top = m.top,
            bottom = m.bottom,
            lx = m.x + dx,
            ly = m.top + 13,
            text = xml_escape(&m.label),
        ));
    }
    svg.insert_str(end, &add);
    svg
}

/// A run's point as a trend plot draws it: its slot, its value and
/// interval in the axis's unit, its verdict.
struct Drawn {
    x: f64,
    y: f64,
    ci: Option<(f64, f64)>,
    verdict: Option<Verdict>,
}

fn draw_trend(
    buf: &mut String,
    axis: TrendAxis,
    points: &[TrendPoint],
    markers: &[TrendMarker],
) -> Result<Vec<PlacedMarker>, Box<dyn std::error::Error + Send + Sync>> {
    let n = points.len().max(1);
    // A change is drawn around 0, its line included; a level in the unit
    // that fits its size, over its own range.
    let (scale, y_desc, zero) = match axis {
        TrendAxis::Change => (1.0, "B vs A, %", Some(0.0)),
        TrendAxis::Level(unit) => {
            let reference = points
                .iter()
                .filter_map(|p| p.value)
                .map(f64::abs)
                .fold(0.0, f64::max);
            let (scale, label) = display_unit(unit, reference);
            (scale, label, None)
        }
    };
    let judged: Vec<Drawn> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            Some(Drawn {
                x: i as f64,
                y: p.value? * scale,
                ci: p.ci.map(|(lo, hi)| (lo * scale, hi * scale)),
                verdict: p.verdict,
            })
        })
        .collect();
    let (y_lo, y_hi) = y_range(
        judged
            .iter()
            .flat_map(|d| {
                let (lo, hi) = d.ci.unwrap_or((d.y, d.y));
                [lo, hi]
            })
            .chain(zero),
    );
    let x_lo = -0.5;
    let x_hi = n as f64 - 0.5;
    let root = SVGBackend::with_string(buf, TREND_SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(64)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    let label_of = |x: &f64| {
        slot(*x)
            .and_then(|i| points.get(i))
            .map(|p| p.label.clone())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        // At most eight labels, however many runs there are.
        .x_labels(n.min(TREND_TICKS))
        .x_label_formatter(&label_of)
        .y_labels(6)
        .y_label_formatter(&tick)
        .y_desc(y_desc)
        .label_style(FONT)
        .axis_desc_style(FONT)
        .light_line_style(TRANSPARENT)
        .draw()?;
    if let Some(zero) = zero {
        chart.draw_series(LineSeries::new(
            [(x_lo, zero), (x_hi, zero)],
            RGBColor(0x99, 0x99, 0x99).stroke_width(1),
        ))?;
    }
    chart.draw_series(LineSeries::new(
        judged.iter().map(|d| (d.x, d.y)),
        RGBColor(0x6e, 0x77, 0x81).stroke_width(1),
    ))?;
    for Drawn { x, ci, verdict, .. } in &judged {
        if let Some((lo, hi)) = *ci {
            let style = verdict_colour(*verdict).stroke_width(2);
            chart.draw_series([
                PathElement::new(vec![(*x, lo), (*x, hi)], style),
                PathElement::new(vec![(x - 0.08, lo), (x + 0.08, lo)], style),
                PathElement::new(vec![(x - 0.08, hi), (x + 0.08, hi)], style),
            ])?;
        }
    }
    chart.draw_series(
        judged
            .iter()
            .map(|d| Circle::new((d.x, d.y), 5, verdict_colour(d.verdict).filled())),
    )?;
    let placed = markers
        .iter()
        .map(|m| {
            // Inside the frame, even for a step before the first point.
            let x = m.x.clamp(x_lo + 0.05, x_hi - 0.05);
            let (px, top) = chart.backend_coord(&(x, y_hi));
            let (_, bottom) = chart.backend_coord(&(x, y_lo));
            PlacedMarker {
                x: px,
                top,
                bottom,
                label: m.label.clone(),
            }
        })
        .collect();
    root.present()?;
    Ok(placed)
}

/// One step of a waterfall: its label, its contribution (in points of the
/// base's mean) and its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct WaterfallStep {
    pub label: String,
    pub points: Option<f64>,
    pub verdict: Option<Verdict>,
}

/// Each step's contribution as a bar from the running total before it to
/// the total after it, coloured by the step's verdict; then the whole
/// series' change as a bar from 0 (`whole`).
pub fn waterfall_plot(
    metric: &str,
    steps: &[WaterfallStep],
    whole: &WaterfallStep,
) -> Result<Svg, PlotError> {
    let mut buf = String::new();
    draw_waterfall(&mut buf, steps, whole).map_err(err(metric))?;
    Ok(with_title(
        buf,
        &format!("{metric}: what each patch did, in points of the base"),
    ))
}

fn draw_waterfall(
    buf: &mut String,
    steps: &[WaterfallStep],
    whole: &WaterfallStep,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut bars = Vec::new();
    let mut total = 0.0;
    for step in steps {
        let p = step.points.unwrap_or(0.0);
        bars.push((step.label.clone(), total, total + p, step.verdict));
        total += p;
    }
    bars.push((
        whole.label.clone(),
        0.0,
        whole.points.unwrap_or(total),
        whole.verdict,
    ));
    let n = bars.len();
    let (y_lo, y_hi) = y_range(bars.iter().flat_map(|(_, a, b, _)| [*a, *b, 0.0]));
    let (x_lo, x_hi) = (-0.5, n as f64 - 0.5);
    let root = SVGBackend::with_string(buf, TREND_SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(64)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    let labels: Vec<String> = bars.iter().map(|(l, ..)| l.clone()).collect();
    let label_of = |x: &f64| {
        slot(*x)
            .and_then(|i| labels.get(i))
            .cloned()
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&label_of)
        .y_labels(6)
        .y_label_formatter(&tick)
        .y_desc("points of the base, %")
        .label_style(FONT)
        .axis_desc_style(FONT)
        .light_line_style(TRANSPARENT)
        .draw()?;
    chart.draw_series(LineSeries::new(
        [(x_lo, 0.0), (x_hi, 0.0)],
        RGBColor(0x99, 0x99, 0x99).stroke_width(1),
    ))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, from, to, verdict))| {
        let x = i as f64;
        Rectangle::new(
            [(x - 0.3, from.min(*to)), (x + 0.3, from.max(*to))],
            verdict_colour(*verdict).filled(),
        )
    }))?;
    root.present()?;
    Ok(())
}

/// One bar of a symbol-Δ chart: a symbol and its Δ in millions of cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolBar {
    pub symbol: String,
    pub delta_mcycles: f64,
}

const SYMBOLS_WIDTH: u32 = 640;
/// Symbol labels longer than this are cut, with an ellipsis.
const SYMBOL_LABEL_CHARS: usize = 30;

/// The cost lane's "top symbols by Δ modeled cycles" as horizontal bars,
/// one per symbol from the top, green where B spends fewer cycles, red
/// where it spends more.
pub fn symbol_delta_plot(title: &str, bars: &[SymbolBar]) -> Result<Svg, PlotError> {
    let mut buf = String::new();
    draw_symbol_deltas(&mut buf, bars).map_err(err(title))?;
    Ok(with_title(buf, title))
}

fn draw_symbol_deltas(
    buf: &mut String,
    bars: &[SymbolBar],
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let n = bars.len().max(1);
    // The bars, the tick labels and the axis description under them.
    let height = 60 + 26 * n as u32;
    let (x_lo, x_hi) = y_range(bars.iter().flat_map(|b| [b.delta_mcycles, 0.0]));
    // Bar i from the top: y = n - 1 - i.
    let (y_lo, y_hi) = (-0.5, n as f64 - 0.5);
    let root = SVGBackend::with_string(buf, (SYMBOLS_WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(220)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    let labels: Vec<String> = bars
        .iter()
        .map(|b| {
            if b.symbol.chars().count() > SYMBOL_LABEL_CHARS {
                let cut: String = b.symbol.chars().take(SYMBOL_LABEL_CHARS - 1).collect();
                format!("{cut}\u{2026}")
            } else {
                b.symbol.clone()
            }
        })
        .collect();
    let label_of = |y: &f64| {
        slot(*y)
            .and_then(|j| n.checked_sub(1 + j))
            .and_then(|i| labels.get(i))
            .cloned()
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&label_of)
        .x_labels(6)
        .x_label_formatter(&tick)
        .x_desc("\u{394} Mcycles per sample")
        .label_style(FONT)
        .axis_desc_style(FONT)
        .light_line_style(TRANSPARENT)
        .draw()?;
    chart.draw_series(LineSeries::new(
        [(0.0, y_lo), (0.0, y_hi)],
        RGBColor(0x99, 0x99, 0x99).stroke_width(1),
    ))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let y = (n - 1 - i) as f64;
        let colour = if b.delta_mcycles < 0.0 {
            verdict_colour(Some(Verdict::Improvement))
        } else {
            verdict_colour(Some(Verdict::Regression))
        };
        Rectangle::new(
            [
                (b.delta_mcycles.min(0.0), y - 0.35),
                (b.delta_mcycles.max(0.0), y + 0.35),
            ],
            colour.filled(),
        )
    }))?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A's and B's means (2 ms and 3 ms), A's with an interval when given.
    fn means(a_ci: Option<(f64, f64)>) -> Vec<Mean> {
        vec![(0, 2.0e6, a_ci), (1, 3.0e6, None)]
    }

    #[test]
    fn samples_are_spread_evenly_and_centred() {
        assert_eq!(spread(0, 1), 0.0);
        assert_eq!(
            (spread(0, 3), spread(1, 3), spread(2, 3)),
            (-0.25, 0.0, 0.25)
        );
    }

    #[test]
    fn ticks_drop_trailing_zeros_and_slots_are_whole_numbers() {
        let ticks: Vec<_> = [2.0, 2.5, 0.125, -0.0001, 641.308, 10.0]
            .iter()
            .map(tick)
            .collect();
        assert_eq!(ticks, ["2", "2.5", "0.125", "0", "641.308", "10"]);
        assert_eq!(slot(2.0000000001), Some(2));
        assert_eq!(slot(1.5), None);
        assert_eq!(slot(-1.0), None);
    }

    #[test]
    fn a_flat_or_empty_range_is_still_a_range() {
        assert_eq!(
            y_range([8192.0, 8192.0].into_iter()),
            (8192.0 - 409.6, 8192.0 + 409.6)
        );
        assert_eq!(y_range([0.0].into_iter()), (-1.0, 1.0));
        assert_eq!(y_range(std::iter::empty()), (-1.0, 1.0));
    }

    #[test]
    fn the_samples_plot_draws_every_sample_and_a_band_only_with_an_interval() {
        let boots = vec![
            ("A", 0, vec![1.0e6, 2.0e6, 3.0e6]),
            ("B", 1, vec![3.0e6, 3.0e6]),
        ];
        let ns = Some(Unit::Ns);
        let plain = samples_plot("pageout_cpu_ns", ns, &boots, &means(None)).unwrap();
        assert!(plain.as_str().starts_with("<svg"));
        assert_eq!(plain.as_str().matches("<circle").count(), 5);
        let banded =
            samples_plot("pageout_cpu_ns", ns, &boots, &means(Some((1.5e6, 2.5e6)))).unwrap();
        assert!(banded.as_str().matches("<rect").count() > plain.as_str().matches("<rect").count());
        assert!(plain.as_str().contains(">ms<") || plain.as_str().contains("\nms\n"));
    }

    #[test]
    fn the_symbol_chart_draws_a_bar_per_symbol_with_escaped_names() {
        let bars = [
            SymbolBar {
                symbol: "do_flush_stats".into(),
                delta_mcycles: -300.0,
            },
            SymbolBar {
                symbol: "<b>&evil".into(),
                delta_mcycles: 1.0,
            },
        ];
        let svg = symbol_delta_plot("pageout: B vs A", &bars).unwrap();
        let text = svg.as_str();
        assert_eq!(text.matches("<rect").count() - 1, 2, "{text}");
        assert!(text.contains("\ndo_flush_stats\n"), "{text}");
        assert!(text.contains("&lt;b&gt;&amp;evil"), "{text}");
        assert!(!text.contains("<b>"), "{text}");
        assert!(text.contains("<title>pageout: B vs A</title>"), "{text}");
    }

    #[test]
    fn svg_text_is_escaped_once() {
        let boots = vec![("<b>&\"'", 0, vec![1.0])];
        let svg = samples_plot("<script>", Some(Unit::Ns), &boots, &means(None)).unwrap();
        let s = svg.as_str();
        assert!(!s.contains("<b>") && !s.contains("<script"));
        assert!(s.contains("&lt;b&gt;&amp;&quot;&apos;"), "{s}");
        assert!(s.contains("<title>&lt;script&gt;: every sample by boot</title>"));
        assert!(!s.contains("&amp;lt;"));
    }

    #[test]
    fn the_waterfall_draws_a_bar_per_step_and_one_for_the_whole() {
        let step = |label: &str, points, verdict| WaterfallStep {
            label: label.into(),
            points,
            verdict,
        };
        let svg = waterfall_plot(
            "m",
            &[
                step("p1", Some(0.1), Some(Verdict::NoClearDifference)),
                step("p2", Some(-17.9), Some(Verdict::Improvement)),
            ],
            &step("whole", Some(-17.8), Some(Verdict::Improvement)),
        )
        .unwrap();
        let s = svg.as_str().to_ascii_lowercase();
        // The improvement's green fills p2's bar and the whole's.
        assert_eq!(s.matches("#1a7f37").count(), 2, "{s}");
        assert!(s.contains("points of the base"));
    }

    #[test]
    fn the_trend_plot_draws_error_bars_for_intervals() {
        let p = |c: Option<f64>, ci| TrendPoint {
            label: "11-30".into(),
            value: c,
            ci,
            verdict: Some(Verdict::Regression),
        };
        let svg = trend_plot(
            "m",
            TrendAxis::Change,
            &[
                p(Some(1.0), Some((0.5, 1.5))),
                p(None, None),
                p(Some(-2.0), None),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(svg.as_str().matches("<circle").count(), 2);
        assert!(svg.as_str().contains("#CF222E") || svg.as_str().contains("#cf222e"));
        assert!(!svg.as_str().contains(CHANGE_POINT_CLASS));
    }

    /// The whole number in attribute `name` of the SVG element whose tag
    /// (what follows its `<`) is `tag`.
    fn attr(tag: &str, name: &str) -> i32 {
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    }

    /// The x of the `<line>` of class change-point, and of every circle.
    fn marker_and_circles(svg: &str) -> (i32, Vec<i32>) {
        let line = svg
            .split('<')
            .find(|t| t.starts_with("line class=\"change-point\""))
            .expect("a marker");
        let circles = svg
            .split('<')
            .filter(|t| t.starts_with("circle"))
            .map(|t| attr(t, "cx"))
            .collect();
        (attr(line, "x1"), circles)
    }

    #[test]
    fn a_marker_is_a_dashed_line_between_its_two_points_with_an_escaped_label() {
        let p = |c: f64| TrendPoint {
            label: "abc1234".into(),
            value: Some(c),
            ci: None,
            verdict: Some(Verdict::NoClearDifference),
        };
        let marker = TrendMarker {
            x: 1.5,
            label: "<b>+5.00%".into(),
        };
        let svg = trend_plot(
            "m",
            TrendAxis::Change,
            &[p(0.1), p(-0.2), p(5.0), p(4.8)],
            &[marker],
        )
        .unwrap();
        let s = svg.as_str();
        let (x, circles) = marker_and_circles(s);
        assert_eq!(circles.len(), 4, "{s}");
        assert!(circles[1] < x && x < circles[2], "{x} {circles:?}");
        assert!(s.contains(">&lt;b&gt;+5.00%</text>"), "{s}");
        assert!(!s.contains("<b>"), "{s}");
        // The colour is the page's CSS's: the SVG names only the class.
        assert!(!s.contains("stroke-dasharray"), "{s}");
        // A step before the first point stays inside the frame.
        let early = TrendMarker {
            x: -0.5,
            label: String::new(),
        };
        let svg = trend_plot("m", TrendAxis::Change, &[p(0.1), p(0.2)], &[early]).unwrap();
        let (x, circles) = marker_and_circles(svg.as_str());
        assert!(x < circles[0], "{x} {circles:?}");
    }

    /// The y of every circle in `svg`.
    fn circle_ys(svg: &str) -> Vec<i32> {
        svg.split('<')
            .filter(|t| t.starts_with("circle"))
            .map(|t| attr(t, "cy"))
            .collect()
    }

    #[test]
    fn a_level_plot_keeps_a_step_up_in_the_unit_that_fits_without_a_zero_line() {
        // Two nights at about 151 ms, then two at about 184 ms (the
        // synthetic history's step), in nanoseconds.
        let p = |ns: f64| TrendPoint {
            label: "abc1234".into(),
            value: Some(ns),
            ci: Some((ns - 2e5, ns + 2e5)),
            verdict: Some(Verdict::NoClearDifference),
        };
        let points = [p(151.1e6), p(151.0e6), p(184.4e6), p(184.5e6)];
        let svg = trend_plot("m", TrendAxis::Level(Some(Unit::Ns)), &points, &[]).unwrap();
        let s = svg.as_str();
        assert!(
            s.contains("<title>m: B&apos;s level across runs</title>"),
            "{s}"
        );
        assert!(s.contains("\nms\n</text>"), "{s}");
        let ys = circle_ys(s);
        assert_eq!(ys.len(), 4, "{s}");
        // Up is smaller y: both nights after the step sit far above both
        // before it, and stay level with each other.
        let (before, after) = (ys[0].min(ys[1]), ys[2].max(ys[3]));
        assert!(after + 100 < before, "{ys:?}");
        assert!(
            ys[2].abs_diff(ys[3]) < 10 && ys[0].abs_diff(ys[1]) < 10,
            "{ys:?}"
        );
        // Its range is the level's own, so no line at 0 is drawn.
        assert!(!s.contains("\n0\n</text>"), "{s}");
    }

    #[test]
    fn short_ids_fit_under_eight_ticks_and_long_labels_do_not() {
        assert!(trend_labels_fit(7, 5));
        assert!(trend_labels_fit(7, 40));
        assert!(!trend_labels_fit(40, 8));
        assert!(trend_labels_fit(40, 1));
    }
}
