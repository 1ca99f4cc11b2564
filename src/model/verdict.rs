//! The one verdict vocabulary: the Markdown and terminal tables, the HTML
//! badges, the commit status and the exit code all speak it. The rules that
//! choose a verdict are in `stats::verdict` and docs/statistics.md.

/// What the statistics concluded about one metric, B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// B is worse than A by more than the noise band, significantly.
    Regression,
    /// B is better than A by more than the noise band, significantly.
    Improvement,
    /// B differs from A by more than the noise band, significantly, for a
    /// metric with no better direction.
    Changed,
    /// No change beyond the noise band was found, and the data were good
    /// enough to have found one of about that size.
    NoClearDifference,
    /// Every A and B sample is within the metric's negligible level (rule
    /// 3): too small to matter whatever its percentage, which may be large.
    Negligible,
    /// The data cannot support any of the above: too few samples, a
    /// baseline that drifted between boots, or too much noise.
    Inconclusive,
    /// Not this lane's measurement (an icount time in the cost lane, a
    /// whole-guest time with several vCPUs under icount, a count of 10 ms
    /// ticks): shown for context, with no verdict; it enters no headline,
    /// badge count or exit code.
    Context,
}

impl Verdict {
    /// Every verdict, in the order summaries count them (worst news
    /// first); context rows last.
    pub const ALL: [Verdict; 7] = [
        Verdict::Regression,
        Verdict::Improvement,
        Verdict::Changed,
        Verdict::NoClearDifference,
        Verdict::Negligible,
        Verdict::Inconclusive,
        Verdict::Context,
    ];

    /// The words, everywhere a verdict is shown.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improvement => "improvement",
            Verdict::Regression => "regression",
            Verdict::Changed => "changed",
            Verdict::NoClearDifference => "no clear difference",
            Verdict::Negligible => "negligible",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Context => "context",
        }
    }

    /// The words with the mark the seeds put on their headline: ✓ for an
    /// improvement, ✗ for a regression.
    pub fn marked(self) -> &'static str {
        match self {
            Verdict::Improvement => "improvement \u{2713}",
            Verdict::Regression => "regression \u{2717}",
            other => other.label(),
        }
    }

    /// Whether the row is a verdict at all: a context row is not.
    pub fn is_verdict(self) -> bool {
        self != Verdict::Context
    }

    /// Whether the rules called a change (improvement, regression, changed).
    pub fn is_change(self) -> bool {
        matches!(
            self,
            Verdict::Improvement | Verdict::Regression | Verdict::Changed
        )
    }

    /// Whether the rules found no change that matters: no clear
    /// difference, or both sides negligible.
    pub fn is_unchanged(self) -> bool {
        matches!(self, Verdict::NoClearDifference | Verdict::Negligible)
    }

    /// A fixed identifier for styling (a CSS class), never user text.
    pub fn css_class(self) -> &'static str {
        match self {
            Verdict::Improvement => "v-improvement",
            Verdict::Regression => "v-regression",
            Verdict::Changed => "v-changed",
            Verdict::NoClearDifference => "v-nochange",
            Verdict::Negligible => "v-negligible",
            Verdict::Inconclusive => "v-inconclusive",
            Verdict::Context => "v-context",
        }
    }

    /// The snake_case name results.json stores.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Improvement => "improvement",
            Verdict::Regression => "regression",
            Verdict::Changed => "changed",
            Verdict::NoClearDifference => "no_clear_difference",
            Verdict::Negligible => "negligible",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Context => "context",
        }
    }

    /// The inverse of [`Verdict::key`].
    pub fn from_key(key: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.key() == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_classes_are_identifiers() {
        for v in Verdict::ALL {
            assert_eq!(Verdict::from_key(v.key()), Some(v));
            assert!(
                v.css_class()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
            );
        }
        assert_eq!(Verdict::Improvement.marked(), "improvement \u{2713}");
        assert_eq!(Verdict::Inconclusive.marked(), "inconclusive");
    }
}
