//! What a run compares, read from its stored document alone: an A/A run
//! (every variant the same kernel run the same way), a knob (one kernel, a
//! setting turned), the series against the base (either way round: a
//! diagnostic may make the patched kernel its baseline), the series patch
//! by patch, or several variants; and whether its campaign is a diagnostic
//! (named `diag-…`, under `ci/seeds/diagnostics/`). The index, the run
//! page, the Markdown, the terminal report and the headline say it in the
//! same words ([`Compares::label`]). Pure.

use super::document::Results;
use super::record::{SeriesInfo, VariantRecord};

/// How a diagnostic campaign's name starts (`ci/seeds/diagnostics/*.yaml`,
/// checked by tests/seeds.rs).
pub const DIAGNOSTIC_PREFIX: &str = "diag-";

/// What a run compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compares {
    /// A diagnostic campaign: a question about a seed's measurement (a
    /// lane, an order, a limit), not a seed's figure.
    pub diagnostic: bool,
    pub what: What,
}

/// The variants' relation to each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// Every variant the same kernel run the same way: any change called
    /// is a false one.
    SelfCheck,
    /// One kernel, run two ways: what the candidate turns, each from the
    /// baseline's value.
    Knob(Vec<Turned>),
    /// The series against the base. With `patch_first`, the patched
    /// kernel is the baseline (A) and the base the candidate (B): every
    /// change is the base's against the patch. `prefix`: the patched
    /// kernel applies only the first K patches of the series (a hunt's
    /// step), `None` when it applies them all.
    Series {
        title: String,
        patch_first: bool,
        prefix: Option<usize>,
    },
    /// The base, then each prefix of the series in turn.
    PerPatch { title: String },
    /// Three or more variants told apart otherwise (kernels, patches and
    /// settings together), with the series' title if it has patches.
    Variants { count: usize, title: Option<String> },
}

/// A knob the candidate turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turned {
    /// Its short name: a setting's file named by what it enables
    /// (`shrinker` for `…/shrinker_enabled`), `cmdline` or `kconfig`.
    pub knob: String,
    pub from: String,
    pub to: String,
}

impl Results {
    /// What this run compares (see [`Compares`]).
    pub fn compares(&self) -> Compares {
        Compares {
            diagnostic: self.campaign.starts_with(DIAGNOSTIC_PREFIX),
            what: what(&self.series, &self.variants),
        }
    }
}

fn what(series: &SeriesInfo, variants: &[VariantRecord]) -> What {
    let title = series_title(series);
    let same_kernel_and_run = |a: &VariantRecord, b: &VariantRecord| {
        a.patches == b.patches
            && a.fragments == b.fragments
            && a.cmdline == b.cmdline
            && a.settings == b.settings
    };
    let prefix_chain = variants.len() > 2
        && variants.iter().enumerate().all(|(i, v)| {
            v.patches == i
                && v.fragments.is_empty()
                && v.cmdline.is_empty()
                && v.settings.is_empty()
        });
    let self_check = variants.len() > 1
        && variants
            .windows(2)
            .all(|w| same_kernel_and_run(&w[0], &w[1]));
    match variants {
        _ if self_check => What::SelfCheck,
        _ if prefix_chain => What::PerPatch { title },
        [a, b] if a.patches == b.patches => What::Knob(turned(a, b)),
        [a, b] => What::Series {
            title,
            patch_first: a.patches > b.patches,
            prefix: Some(a.patches.max(b.patches)).filter(|k| *k < series.patches.len()),
        },
        _ => What::Variants {
            count: variants.len(),
            title: (!series.patches.is_empty()).then_some(title),
        },
    }
}

/// Everything `b` runs differently from `a` on the same patches: each
/// setting, the command line, the kconfig fragments.
fn turned(a: &VariantRecord, b: &VariantRecord) -> Vec<Turned> {
    const UNSET: &str = "unset";
    let mut out: Vec<Turned> = Vec::new();
    let paths: std::collections::BTreeSet<&String> =
        a.settings.keys().chain(b.settings.keys()).collect();
    for path in paths {
        let (from, to) = (a.settings.get(path), b.settings.get(path));
        if from != to {
            out.push(Turned {
                knob: knob_name(path),
                from: from.map_or(UNSET, String::as_str).to_string(),
                to: to.map_or(UNSET, String::as_str).to_string(),
            });
        }
    }
    let words = |w: &[String]| {
        if w.is_empty() {
            "none".to_string()
        } else {
            w.join(" ")
        }
    };
    if a.cmdline != b.cmdline {
        out.push(Turned {
            knob: "cmdline".into(),
            from: words(&a.cmdline),
            to: words(&b.cmdline),
        });
    }
    if a.fragments != b.fragments {
        let names = |f: &[String]| -> Vec<String> {
            f.iter()
                .map(|p| {
                    std::path::Path::new(p)
                        .file_name()
                        .map_or(p.clone(), |n| n.to_string_lossy().into_owned())
                })
                .collect()
        };
        out.push(Turned {
            knob: "kconfig".into(),
            from: words(&names(&a.fragments)),
            to: words(&names(&b.fragments)),
        });
    }
    out
}

/// A setting's short name: its file's, named by what it enables when it
/// is an on/off switch (`shrinker` for `…/parameters/shrinker_enabled`,
/// `hugepages-16kB` for `…/hugepages-16kB/enabled`), since the values
/// already say on or off.
fn knob_name(path: &str) -> String {
    let mut parts = path.rsplit('/').filter(|p| !p.is_empty());
    let last = parts.next().unwrap_or(path);
    if last == "enabled" {
        if let Some(parent) = parts.next() {
            return parent.to_string();
        }
    }
    last.strip_suffix("_enabled")
        .filter(|s| !s.is_empty())
        .unwrap_or(last)
        .to_string()
}

/// Each knob turned, said by `say`, joined by commas.
fn each(turned: &[Turned], say: impl Fn(&Turned) -> String) -> String {
    turned.iter().map(say).collect::<Vec<_>>().join(", ")
}

/// `the first K patches of ` for a prefix of the series, else nothing.
fn first(prefix: Option<usize>) -> String {
    prefix.map_or_else(String::new, |k| match k {
        1 => "the first patch of ".to_string(),
        k => format!("the first {k} patches of "),
    })
}

/// The series' headline: its first subject, and how many patches follow.
pub fn series_title(series: &SeriesInfo) -> String {
    let patches = &series.patches;
    match patches.first() {
        None => "an empty series".into(),
        Some(p) if patches.len() == 1 => p.subject.clone(),
        Some(p) => format!("{} (+{} more)", p.subject, patches.len() - 1),
    }
}

impl Compares {
    /// What the run compares, in a few words: `A/A`, `knob: shrinker N →
    /// Y`, the series' title, `A = patch, B = base: <title>`, each led by
    /// `diagnostic: ` for a diagnostic.
    pub fn label(&self) -> String {
        self.label_with(str::to_string)
    }

    /// [`Compares::label`], with the series' title (a patch's subject,
    /// untrusted) rendered by `show`, e.g. as a Markdown code span.
    pub fn label_with(&self, show: impl Fn(&str) -> String) -> String {
        let what = match &self.what {
            What::SelfCheck => "A/A".to_string(),
            What::Knob(turned) => format!(
                "knob: {}",
                each(turned, |t| format!(
                    "{} {} \u{2192} {}",
                    t.knob, t.from, t.to
                ))
            ),
            What::Series {
                title,
                patch_first: false,
                prefix,
            } => format!("{}{}", first(*prefix), show(title)),
            What::Series {
                title,
                patch_first: true,
                prefix,
            } => format!("A = patch, B = base: {}{}", first(*prefix), show(title)),
            What::PerPatch { title } => format!("per patch: {}", show(title)),
            What::Variants { count, title: None } => format!("{count} variants"),
            What::Variants {
                count,
                title: Some(title),
            } => format!("{count} variants: {}", show(title)),
        };
        self.led(what)
    }

    /// `what`, led by `diagnostic: ` for a diagnostic.
    fn led(&self, what: String) -> String {
        if self.diagnostic {
            format!("diagnostic: {what}")
        } else {
            what
        }
    }

    /// What A and B are, for a two-variant run's heading: `A = base, B =
    /// base + <title>`, `A/A self-check: A = B = the base`, `knob:
    /// shrinker N (A) → Y (B), one kernel`, `A = base + <title>, B = base:
    /// the patch first`, each led by `diagnostic: ` for a diagnostic.
    /// `show` renders the series' title, a patch's subject and so
    /// untrusted (a Markdown code span; the pages escape it anyway).
    pub fn sides(&self, show: impl Fn(&str) -> String) -> String {
        let what = match &self.what {
            What::SelfCheck => "A/A self-check: A = B = the base".to_string(),
            What::Knob(turned) => format!(
                "knob: {}, one kernel",
                each(turned, |t| format!(
                    "{} {} (A) \u{2192} {} (B)",
                    t.knob, t.from, t.to
                ))
            ),
            What::Series {
                title,
                patch_first: false,
                prefix,
            } => format!("A = base, B = base + {}{}", first(*prefix), show(title)),
            What::Series {
                title,
                patch_first: true,
                prefix,
            } => format!(
                "A = base + {}{}, B = base: the patch first",
                first(*prefix),
                show(title)
            ),
            What::PerPatch { title } => format!("the base, then each patch of {}", show(title)),
            What::Variants { count, title: None } => format!("{count} variants"),
            What::Variants {
                count,
                title: Some(title),
            } => format!("{count} variants of {}", show(title)),
        };
        self.led(what)
    }

    /// Whether the patched kernel is the baseline and the base the
    /// candidate: a change called is the base's against the patch.
    pub fn patch_first(&self) -> bool {
        matches!(
            self.what,
            What::Series {
                patch_first: true,
                ..
            }
        )
    }
}

#[cfg(test)]
#[path = "compares_tests.rs"]
mod tests;
