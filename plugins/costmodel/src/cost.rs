//! Event counts and the modeled-cycles arithmetic.
//!
//! modeled cycles = instructions
//!                + (L1D + L1I misses) × (L2 latency − L1 latency)
//!                + L2 misses × (LLC latency − L2 latency)
//!                + LLC misses × (DRAM latency − LLC latency)
//!                + (cycles − 1) for each classified instruction
//!
//! so an access served by a level costs that level's load-to-use latency
//! beyond an L1 hit, and every instruction costs one cycle except the
//! classes of the cost table ([`crate::insn`]), charged only in the cache
//! model (the counting lane counts instructions). Coherence
//! misses are a subset of the L1 misses, counted apart; they cost what the
//! level that serves them costs (the LLC, in this model).

use crate::insn::{ClassCounts, Insn};
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
    /// Cycles charged beyond one per instruction: each classified
    /// instruction's cost minus the one its count already stands for.
    pub extra_cycles: u64,
    /// Instructions of each class.
    pub classes: ClassCounts,
}

impl Counts {
    /// `n` executions of the classified instruction `insn` (already
    /// counted as instructions): its class and its cost beyond one cycle.
    #[inline]
    pub fn charge(&mut self, insn: Insn, n: u64) {
        if let Some(class) = insn.class() {
            self.classes.add(class, n);
        }
        self.extra_cycles += (insn.cycles() - 1) * n;
    }

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
            + self.extra_cycles
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
            extra_cycles: self.extra_cycles - earlier.extra_cycles,
            classes: self.classes.since(&earlier.classes),
        }
    }

    pub fn merge(&mut self, other: &Counts) {
        self.insns += other.insns;
        self.l1d_misses += other.l1d_misses;
        self.l1i_misses += other.l1i_misses;
        self.l2_misses += other.l2_misses;
        self.llc_misses += other.llc_misses;
        self.coherence_misses += other.coherence_misses;
        self.extra_cycles += other.extra_cycles;
        self.classes.merge(&other.classes);
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
            ..Counts::default()
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
    fn classified_instructions_add_their_cost_beyond_one_cycle() {
        use crate::insn::{Class, Rep, classify};
        let latency = SKYLAKE_CLIENT.latency;
        let mut c = Counts {
            insns: 10,
            ..Counts::default()
        };
        c.charge(classify(&[0xf3, 0x90]), 1); // PAUSE: 140
        c.charge(classify(&[0xf0, 0x0f, 0xb1, 0x0f]), 2); // LOCK CMPXCHG: 18
        c.charge(Insn::Rep(Rep::Lods), 3); // 2 per iteration
        c.charge(Insn::Other, 4); // one cycle: nothing beyond its count
        assert_eq!(c.extra_cycles, 139 + 2 * 17 + 3);
        assert_eq!(c.modeled_cycles(&latency), 10 + 139 + 34 + 3);
        assert_eq!(c.classes.get(Class::Pause), 1);
        assert_eq!(c.classes.get(Class::Locked), 2);
        assert_eq!(c.classes.get(Class::RepString), 3);
        let mut twice = c;
        twice.merge(&c);
        assert_eq!(twice.since(&c), c);
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
            ..Counts::default()
        };
        assert_eq!(c, want);
        let mut twice = want;
        twice.merge(&want);
        assert_eq!(twice.since(&want), want);
        assert!(want.since(&want).is_zero());
    }
}
