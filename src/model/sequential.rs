//! The vocabulary of a sequential campaign: rounds of the boot order,
//! sampled until every primary metric is decided or the budget is spent,
//! with the overall error held by an alpha-spending function
//! (docs/statistics.md, "Sequential campaigns"; the boundaries are
//! `stats::sequential`'s).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the two-sided alpha is spent over the looks (Lan & DeMets 1983).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spending {
    /// Pocock-type, `α·ln(1 + (e − 1)·t)`: nearly even boundaries, so a
    /// clear result stops at the first look. The default: the lanes that
    /// sample sequentially repeat to a fraction of a percent, and their
    /// results are clear at the first look or not at all.
    #[default]
    Pocock,
    /// O'Brien-Fleming-type, each side spending `2 − 2·Φ(z_{1−α/4}/√t)` as
    /// ldbounds, rpact and gsDesign do (`stats::sequential`): almost nothing
    /// spent early, the last look close to a fixed test's.
    #[serde(rename = "obrien-fleming")]
    OBrienFleming,
}

impl Spending {
    /// The name campaign files and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Spending::Pocock => "pocock",
            Spending::OBrienFleming => "obrien-fleming",
        }
    }
}

/// A sequential protocol: at most `rounds` rounds of the boot order, each
/// boot with the protocol's warm-ups and `samples` samples, and a look
/// after each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sequential {
    /// The budget in rounds; the information fraction at round k is
    /// k / rounds.
    pub rounds: u32,
    /// Samples per boot, per condition, in every round.
    pub samples: u32,
    /// Stop after the round during which this much time has passed since
    /// the first boot, decided or not.
    pub time: Option<Duration>,
    pub spending: Spending,
}

/// The most rounds an automatic schedule splits a campaign's samples
/// into: each look costs boundary height (Pocock's K = 4 boundary is 2.36
/// against a fixed test's 1.96), so a few looks suffice where the first is
/// expected to decide.
pub const AUTO_MAX_ROUNDS: u32 = 4;

/// The samples a round's boot takes at the least: the verdict rules need
/// three on a side (docs/statistics.md, `min_samples`).
pub const AUTO_ROUND_SAMPLES: u32 = 3;

/// `protocol.sequential: auto` in a lane whose boots repeat (icount, the
/// cost lane): `samples` per boot becomes a budget of rounds of at least
/// three samples each, at most [`AUTO_MAX_ROUNDS`], with the same samples
/// per boot position in all (9 samples: 3 rounds of 3; 70: 4 rounds of
/// 18). `None` when one round would hold them all: the fixed protocol.
pub fn auto(samples: u32) -> Option<Sequential> {
    let rounds = samples.div_ceil(AUTO_ROUND_SAMPLES).min(AUTO_MAX_ROUNDS);
    (rounds >= 2).then(|| Sequential {
        rounds,
        samples: samples.div_ceil(rounds),
        time: None,
        spending: Spending::default(),
    })
}

/// Rounds of the boot order a KVM campaign's `protocol.sequential: auto`
/// budgets. Under KVM a boot is the unit (samples within one boot share
/// its memory layout, its host placement and its host's state, so they
/// are not independent), and the judge takes each boot's mean as one
/// observation: B needs three boots before any verdict (the rules'
/// `min_samples`). Eight rounds (8 B boots, 16 A boots) is twice the
/// icount schedule's most ([`AUTO_MAX_ROUNDS`]): at a 3% CV within and
/// between boots, near the 2.7% measured on hosted runners, its last look
/// detects about a 7% change (docs/statistics.md, "Under KVM").
pub const KVM_ROUNDS: u32 = 8;

/// `protocol.sequential: auto` under KVM: [`KVM_ROUNDS`] rounds of the
/// boot order, each boot with [`AUTO_ROUND_SAMPLES`] of the protocol's
/// `samples` (all of them when fewer): a boot's mean is one observation,
/// so samples beyond a few narrow only its own noise, not the boots'
/// spread; this is the protocol docs/statistics.md simulates.
pub fn kvm_auto(samples: u32) -> Sequential {
    Sequential {
        rounds: KVM_ROUNDS,
        samples: samples.clamp(1, AUTO_ROUND_SAMPLES),
        time: None,
        spending: Spending::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_splits_the_samples_into_rounds_of_three_or_more() {
        let split = |samples| auto(samples).map(|s| (s.rounds, s.samples));
        assert_eq!(split(9), Some((3, 3)));
        assert_eq!(split(5), Some((2, 3)));
        assert_eq!(split(6), Some((2, 3)));
        assert_eq!(split(70), Some((4, 18)));
        assert_eq!(split(3), None);
        assert_eq!(split(1), None);
        assert_eq!(auto(9).unwrap().spending, Spending::Pocock);
    }
}
