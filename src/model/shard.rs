//! Shards: one campaign's boots split over runners, for the lanes whose
//! figures do not depend on the host (icount, the cost lane), and merged
//! again (`patchbench merge`). The assignment is a pure function of the
//! boot's place in its round, so every runner agrees on it.

use serde::{Deserialize, Serialize};

/// Shard `index` of `of` (1-based), of round `round` of the boot order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    pub index: u32,
    pub of: u32,
    /// 1 for the first round (a fixed protocol has only that one).
    pub round: u32,
}

impl Shard {
    /// `I/N` as `--shard` takes it, in round `round`.
    pub fn parse(text: &str, round: u32) -> Result<Shard, String> {
        let bad = || format!("`{text}` is not a shard such as `2/4` (the second of four, 1-based)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, of): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if of == 0 || index == 0 || index > of {
            return Err(bad());
        }
        if round == 0 {
            return Err("rounds count from 1".into());
        }
        Ok(Shard { index, of, round })
    }

    /// The places, in the whole boot order, of this shard's boots: the
    /// round's boots dealt out in turn (its p-th boot to shard p mod N + 1).
    pub fn boots(&self, per_round: usize) -> Vec<usize> {
        let first = (self.round as usize - 1) * per_round;
        (0..per_round)
            .filter(|p| p % self.of as usize == self.index as usize - 1)
            .map(|p| first + p)
            .collect()
    }
}

/// Why a shard cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error(
        "--shard splits a campaign over runners only in a lane whose figures do not depend on the host (vm.icount: true under TCG, or vm.cost_model: cache); this campaign runs on the host's clock ({lane}), where boots on different machines would measure the machines: run it whole on one runner"
    )]
    TimingLane { lane: String },
    #[error(
        "--round {round}: this campaign has {rounds} round(s) (a fixed protocol has one; a sequential one protocol.sequential's rounds)"
    )]
    NoSuchRound { round: u32, rounds: u32 },
    #[error(
        "shard {shard} holds no boot: a round has {boots} boot(s), so use at most {boots} shards"
    )]
    Empty { shard: String, boots: usize },
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} of round {}", self.index, self.of, self.round)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_deal_a_rounds_boots_in_turn() {
        let s = |text: &str, round| Shard::parse(text, round).unwrap();
        // A, B, A' over two runners: A and A' on the first.
        assert_eq!(s("1/2", 1).boots(3), [0, 2]);
        assert_eq!(s("2/2", 1).boots(3), [1]);
        // The second round's boots come after the first round's.
        assert_eq!(s("1/3", 2).boots(3), [3]);
        assert_eq!(s("3/3", 2).boots(3), [5]);
        // More shards than boots: some shards have none.
        assert!(s("4/4", 1).boots(3).is_empty());
        let every: Vec<usize> = (1..=4)
            .flat_map(|i| s(&format!("{i}/4"), 1).boots(4))
            .collect();
        assert_eq!(every, [0, 1, 2, 3]);
        for bad in ["0/2", "3/2", "1/0", "x/2", "2", "1/2/3"] {
            assert!(Shard::parse(bad, 1).is_err(), "{bad}");
        }
        assert!(Shard::parse("1/2", 0).is_err());
    }
}
