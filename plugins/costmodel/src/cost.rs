//! Event counts and the modeled-cycles arithmetic.
//!
//! modeled cycles = instructions
//!                + (L1D + L1I misses) × (L2 latency − L1 latency)
//!                + L2 misses × (LLC latency − L2 latency)
//!                + LLC misses × (DRAM latency − LLC latency)
//!
//! so an access served by a level costs that level's load-to-use latency
//! beyond an L1 hit, and every instruction costs one cycle. Coherence
//! misses are a subset of the L1 misses, counted apart; they cost what the
//! level that serves them costs (the LLC, in this model).

use crate::machine::{Access, Latency, Outcome};

/// Cumulative event counts of one symbol, one vCPU or one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub insns: u64,
    pub l1d_misses: u64,
    pub l1i_misses: u64,
    pub l2_misses: u64,
    pub llc_misses: u64,
    pub coherence_misses: u64,
}

impl Counts {
    /// Adds what one access did.
    #[inline]
    pub fn add(&mut self, kind: Access, outcome: Outcome) {
        if outcome.l1_miss {
            match kind {
                Access::Fetch => self.l1i_misses += 1,
                Access::Read | Access::Write => self.l1d_misses += 1,
            }
            self.l2_misses += u64::from(outcome.l2_miss);
            self.llc_misses += u64::from(outcome.llc_miss);
            self.coherence_misses += u64::from(outcome.coherence);
        }
    }

    /// The model's cycles for these counts.
    pub fn modeled_cycles(&self, latency: &Latency) -> u64 {
        self.insns
            + (self.l1d_misses + self.l1i_misses) * latency.l1_miss_penalty()
            + self.l2_misses * latency.l2_miss_penalty()
            + self.llc_misses * latency.llc_miss_penalty()
    }

    /// What happened between `earlier` and `self` (counts only grow).
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            insns: self.insns - earlier.insns,
            l1d_misses: self.l1d_misses - earlier.l1d_misses,
            l1i_misses: self.l1i_misses - earlier.l1i_misses,
            l2_misses: self.l2_misses - earlier.l2_misses,
            llc_misses: self.llc_misses - earlier.llc_misses,
            coherence_misses: self.coherence_misses - earlier.coherence_misses,
        }
    }

    pub fn merge(&mut self, other: &Counts) {
        self.insns += other.insns;
        self.l1d_misses += other.l1d_misses;
        self.l1i_misses += other.l1i_misses;
        self.l2_misses += other.l2_misses;
        self.llc_misses += other.llc_misses;
        self.coherence_misses += other.coherence_misses;
    }

    pub fn is_zero(&self) -> bool {
        *self == Counts::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::SKYLAKE_CLIENT;

    #[test]
    fn cycles_are_instructions_plus_miss_penalties() {
        let latency = SKYLAKE_CLIENT.latency;
        let counts = Counts {
            insns: 1_000,
            l1d_misses: 10,
            l1i_misses: 2,
            l2_misses: 5,
            llc_misses: 1,
            coherence_misses: 3,
        };
        // 1000 + 12 × 8 + 5 × 30 + 1 × 204
        assert_eq!(counts.modeled_cycles(&latency), 1_000 + 96 + 150 + 204);
        assert_eq!(Counts::default().modeled_cycles(&latency), 0);
        let only_insns = Counts {
            insns: 7,
            ..Counts::default()
        };
        assert_eq!(only_insns.modeled_cycles(&latency), 7);
    }

    #[test]
    fn outcomes_count_by_level_and_side() {
        let mut c = Counts::default();
        let dram = Outcome {
            l1_miss: true,
            l2_miss: true,
            llc_miss: true,
            coherence: false,
        };
        let coherence = Outcome {
            l1_miss: true,
            l2_miss: true,
            llc_miss: false,
            coherence: true,
        };
        c.add(Access::Read, dram);
        c.add(Access::Fetch, dram);
        c.add(Access::Write, coherence);
        c.add(Access::Write, Outcome::default());
        let want = Counts {
            insns: 0,
            l1d_misses: 2,
            l1i_misses: 1,
            l2_misses: 3,
            llc_misses: 2,
            coherence_misses: 1,
        };
        assert_eq!(c, want);
        let mut twice = want;
        twice.merge(&want);
        assert_eq!(twice.since(&want), want);
        assert!(want.since(&want).is_zero());
    }
}
