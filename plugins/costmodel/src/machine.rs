//! The modelled machine: per vCPU an L1I, an L1D and an L2; one last-level
//! cache shared by all, inclusive of the private caches, whose lines carry
//! the directory (which vCPUs may hold a copy); write-invalidate coherence.
//!
//! One access, in order:
//! 1. The vCPU's L1 (L1I for a fetch, L1D otherwise). A hit ends the access;
//!    a write that hits a line held [`State::Shared`] first invalidates the
//!    other vCPUs' copies (an upgrade, which costs nothing itself: its
//!    effect is the coherence misses it causes elsewhere).
//! 2. On an L1 miss, the vCPU's L2, then the LLC. The miss is a *coherence
//!    miss* when the L1 still keeps the line's tag from an invalidation by
//!    another vCPU's write.
//! 3. An LLC miss fills the LLC; its victim is dropped from every private
//!    cache that may hold it (inclusion).
//! 4. The line is filled into the L2 and the L1. A write invalidates every
//!    other vCPU's private copies and takes the line [`State::Owned`]; a
//!    read or fetch takes it Owned when no other vCPU holds it, else
//!    Shared, downgrading the others' Owned copies to Shared.
//!
//! Private-cache evictions are silent: the directory may keep a vCPU's bit
//! after its copy is gone, which only makes a later invalidation look in a
//! cache that no longer holds the line.

use crate::cache::{Cache, Geometry, LINE_SHIFT, State};

/// The most vCPUs a directory entry (one bit per vCPU) can track.
pub const MAX_VCPUS: usize = 64;

/// Load-to-use latencies in core cycles, each for an access served by
/// that level (as measured by a pointer chase).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    pub l1: u64,
    pub l2: u64,
    pub llc: u64,
    pub dram: u64,
}

/// A machine's caches and latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Model {
    /// Names the model in every output record.
    pub name: &'static str,
    pub l1i: Geometry,
    pub l1d: Geometry,
    pub l2: Geometry,
    pub llc: Geometry,
    pub latency: Latency,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// Intel Skylake client (Core i7-6700, 4 GHz, DDR4-2400), from
/// 7-cpu.com's Skylake page and Intel's optimization reference manual
/// (table "Cache Parameters of the Skylake Microarchitecture"); see
/// docs/cost-model.md. Chosen before any A/B run; never tune it to a result.
pub const SKYLAKE_CLIENT: Model = Model {
    name: "skylake-client",
    l1i: Geometry {
        size_bytes: 32 * KIB,
        ways: 8,
    },
    l1d: Geometry {
        size_bytes: 32 * KIB,
        ways: 8,
    },
    l2: Geometry {
        size_bytes: 256 * KIB,
        ways: 4,
    },
    llc: Geometry {
        size_bytes: 8 * MIB,
        ways: 16,
    },
    latency: Latency {
        l1: 4,
        l2: 12,
        llc: 42,
        // 42 cycles + 51 ns at 4 GHz.
        dram: 42 + 51 * 4,
    },
};

/// No cache at all: the counting lane (`model=count`). Its windows carry
/// instructions only, and with no miss a window's modeled cycles are its
/// instructions; no [`Machine`] is built for it (the geometry is never
/// used).
pub const COUNTING: Model = Model {
    name: "count",
    l1i: Geometry {
        size_bytes: 64,
        ways: 1,
    },
    l1d: Geometry {
        size_bytes: 64,
        ways: 1,
    },
    l2: Geometry {
        size_bytes: 64,
        ways: 1,
    },
    llc: Geometry {
        size_bytes: 64,
        ways: 1,
    },
    latency: Latency {
        l1: 0,
        l2: 0,
        llc: 0,
        dram: 0,
    },
};

impl Latency {
    /// Extra cycles of an L1 miss (I or D): the access is served one
    /// level further out. An access served by level k costs exactly k's
    /// latency minus the L1 hit latency, which the base of one cycle per
    /// instruction stands for.
    pub const fn l1_miss_penalty(&self) -> u64 {
        self.l2 - self.l1
    }
    pub const fn l2_miss_penalty(&self) -> u64 {
        self.llc - self.l2
    }
    pub const fn llc_miss_penalty(&self) -> u64 {
        self.dram - self.llc
    }
}

/// What one access did, level by level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub l1_miss: bool,
    pub l2_miss: bool,
    pub llc_miss: bool,
    /// The L1 miss was caused by another vCPU's write.
    pub coherence: bool,
}

/// What kind of access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    /// An instruction fetch (goes to the L1I).
    Fetch,
}

#[derive(Debug, Clone)]
struct Core {
    l1i: Cache,
    l1d: Cache,
    l2: Cache,
}

impl Core {
    fn l1(&mut self, kind: Access) -> &mut Cache {
        match kind {
            Access::Fetch => &mut self.l1i,
            Access::Read | Access::Write => &mut self.l1d,
        }
    }

    /// Drops `line` from every private cache.
    fn invalidate(&mut self, line: u64, coherence: bool) {
        self.l1i.invalidate(line, coherence);
        self.l1d.invalidate(line, coherence);
        self.l2.invalidate(line, coherence);
    }

    fn set_state(&mut self, line: u64, state: State) {
        self.l1i.set_state(line, state);
        self.l1d.set_state(line, state);
        self.l2.set_state(line, state);
    }
}

/// The caches of every vCPU and the shared LLC.
#[derive(Debug, Clone)]
pub struct Machine {
    cores: Vec<Core>,
    llc: Cache,
}

impl Machine {
    /// Empty caches for `vcpus` vCPUs (at most [`MAX_VCPUS`]).
    pub fn new(model: &Model, vcpus: usize) -> Machine {
        assert!(
            (1..=MAX_VCPUS).contains(&vcpus),
            "the model tracks 1 to {MAX_VCPUS} vCPUs, not {vcpus}"
        );
        let core = Core {
            l1i: Cache::new(model.l1i, false),
            l1d: Cache::new(model.l1d, false),
            l2: Cache::new(model.l2, false),
        };
        Machine {
            cores: vec![core; vcpus],
            llc: Cache::new(model.llc, true),
        }
    }

    pub fn vcpus(&self) -> usize {
        self.cores.len()
    }

    /// One access by `vcpu` to the line holding byte address `addr`.
    pub fn access(&mut self, vcpu: usize, addr: u64, kind: Access) -> Outcome {
        let line = addr >> LINE_SHIFT;
        let me = 1u64 << vcpu;
        let core = &mut self.cores[vcpu];
        let l1 = core.l1(kind);
        if let Some(way) = l1.lookup(line) {
            if kind == Access::Write && l1.state(way) == State::Shared {
                self.upgrade(vcpu, line);
            }
            return Outcome::default();
        }
        let mut outcome = Outcome {
            l1_miss: true,
            coherence: l1.is_stale(line),
            ..Outcome::default()
        };
        if let Some(way) = core.l2.lookup(line) {
            let state = core.l2.state(way);
            core.l1(kind).fill(line, state);
            if kind == Access::Write && state == State::Shared {
                self.upgrade(vcpu, line);
            }
            return outcome;
        }
        outcome.l2_miss = true;
        let (way, sharers) = match self.llc.lookup(line) {
            Some(way) => (way, self.llc.sharers(way)),
            None => {
                outcome.llc_miss = true;
                let (way, evicted) = self.llc.fill(line, State::Shared);
                if let Some(victim) = evicted {
                    // Inclusion: the LLC's victim leaves every private cache.
                    for (v, core) in self.cores.iter_mut().enumerate() {
                        if victim.sharers & (1 << v) != 0 {
                            core.invalidate(victim.line, false);
                        }
                    }
                }
                (way, 0)
            }
        };
        let others = sharers & !me;
        let state = match kind {
            Access::Write => {
                self.invalidate_others(others, line);
                self.llc.set_sharers(way, me);
                State::Owned
            }
            Access::Read | Access::Fetch => {
                self.llc.set_sharers(way, sharers | me);
                if others == 0 {
                    State::Owned
                } else {
                    for (v, core) in self.cores.iter_mut().enumerate() {
                        if others & (1 << v) != 0 {
                            core.set_state(line, State::Shared);
                        }
                    }
                    State::Shared
                }
            }
        };
        let core = &mut self.cores[vcpu];
        core.l2.fill(line, state);
        core.l1(kind).fill(line, state);
        outcome
    }

    /// A write to a line this vCPU holds Shared: invalidate the others'
    /// copies through the directory and own the line.
    fn upgrade(&mut self, vcpu: usize, line: u64) {
        let me = 1u64 << vcpu;
        let way = self
            .llc
            .lookup(line)
            .expect("the LLC is inclusive: a privately held line is in it");
        let others = self.llc.sharers(way) & !me;
        self.invalidate_others(others, line);
        self.llc.set_sharers(way, me);
        self.cores[vcpu].set_state(line, State::Owned);
    }

    fn invalidate_others(&mut self, others: u64, line: u64) {
        for (v, core) in self.cores.iter_mut().enumerate() {
            if others & (1 << v) != 0 {
                core.invalidate(line, true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::LINE_BYTES;

    const HIT: Outcome = Outcome {
        l1_miss: false,
        l2_miss: false,
        llc_miss: false,
        coherence: false,
    };
    const FROM_LLC: Outcome = Outcome {
        l1_miss: true,
        l2_miss: true,
        llc_miss: false,
        coherence: false,
    };
    const FROM_DRAM: Outcome = Outcome {
        l1_miss: true,
        l2_miss: true,
        llc_miss: true,
        coherence: false,
    };
    const COHERENCE: Outcome = Outcome {
        coherence: true,
        ..FROM_LLC
    };

    fn machine() -> Machine {
        Machine::new(&SKYLAKE_CLIENT, 2)
    }

    #[test]
    fn a_cold_line_comes_from_dram_then_hits() {
        let mut m = machine();
        assert_eq!(m.access(0, 0x1000, Access::Read), FROM_DRAM);
        assert_eq!(m.access(0, 0x1038, Access::Write), HIT, "same line");
        assert_eq!(m.access(0, 0x1040, Access::Read), FROM_DRAM, "next line");
        // The other vCPU finds it in the shared LLC.
        assert_eq!(m.access(1, 0x1000, Access::Read), FROM_LLC);
    }

    #[test]
    fn a_write_on_one_vcpu_invalidates_the_others_copy() {
        let mut m = machine();
        m.access(0, 0x2000, Access::Read);
        m.access(1, 0x2000, Access::Read);
        assert_eq!(m.access(0, 0x2000, Access::Read), HIT);
        assert_eq!(m.access(1, 0x2000, Access::Read), HIT);
        // vCPU 1 writes its Shared copy: an upgrade, itself a hit...
        assert_eq!(m.access(1, 0x2000, Access::Write), HIT);
        // ...after which vCPU 0's next access is a coherence miss, served
        // by the LLC, and only the first one.
        assert_eq!(m.access(0, 0x2000, Access::Read), COHERENCE);
        assert_eq!(m.access(0, 0x2000, Access::Read), HIT);
        // Both hold it Shared again; vCPU 0's write upgrades and takes it.
        assert_eq!(m.access(0, 0x2000, Access::Write), HIT);
        // A line bouncing between two writers misses on every turn.
        for _ in 0..3 {
            assert_eq!(m.access(1, 0x2000, Access::Write), COHERENCE);
            assert_eq!(m.access(0, 0x2000, Access::Write), COHERENCE);
        }
    }

    #[test]
    fn private_lines_never_cause_coherence_misses() {
        let mut m = machine();
        // Each vCPU writes its own line (per-CPU data): no invalidations.
        for round in 0..4 {
            for v in 0..2 {
                let want = if round == 0 { FROM_DRAM } else { HIT };
                assert_eq!(m.access(v, 0x10_000 * (v as u64 + 1), Access::Write), want);
            }
        }
    }

    #[test]
    fn a_read_downgrades_an_owner_so_its_next_write_invalidates() {
        let mut m = machine();
        m.access(0, 0x3000, Access::Write);
        assert_eq!(m.access(1, 0x3000, Access::Read), FROM_LLC);
        // vCPU 0 still hits, but must now invalidate vCPU 1's copy.
        assert_eq!(m.access(0, 0x3000, Access::Write), HIT);
        assert_eq!(m.access(1, 0x3000, Access::Read), COHERENCE);
    }

    #[test]
    fn l1_conflicts_fall_back_to_the_l2() {
        let mut m = Machine::new(&SKYLAKE_CLIENT, 1);
        // The L1D has 64 sets of 8 ways: 9 lines 4 KiB apart share a set.
        let lines: Vec<u64> = (0..9).map(|i| i * 64 * LINE_BYTES).collect();
        for &a in &lines {
            assert_eq!(m.access(0, a, Access::Read), FROM_DRAM);
        }
        // The first was evicted from the L1D (LRU), but the L2 holds it.
        let from_l2 = Outcome {
            l1_miss: true,
            ..HIT
        };
        assert_eq!(m.access(0, lines[0], Access::Read), from_l2);
        assert_eq!(m.access(0, lines[8], Access::Read), HIT);
    }

    #[test]
    fn code_and_data_use_separate_l1s_and_a_common_l2() {
        let mut m = Machine::new(&SKYLAKE_CLIENT, 1);
        assert_eq!(m.access(0, 0x4000, Access::Fetch), FROM_DRAM);
        assert_eq!(m.access(0, 0x4000, Access::Fetch), HIT);
        let from_l2 = Outcome {
            l1_miss: true,
            ..HIT
        };
        assert_eq!(m.access(0, 0x4000, Access::Read), from_l2);
    }

    #[test]
    fn an_llc_victim_leaves_the_private_caches() {
        // A tiny machine: 1-set, 2-way LLC and larger private caches, so
        // that the LLC evicts lines the L1 still holds.
        let model = Model {
            l1d: Geometry {
                size_bytes: 4 * LINE_BYTES,
                ways: 4,
            },
            l2: Geometry {
                size_bytes: 4 * LINE_BYTES,
                ways: 4,
            },
            llc: Geometry {
                size_bytes: 2 * LINE_BYTES,
                ways: 2,
            },
            ..SKYLAKE_CLIENT
        };
        let mut m = Machine::new(&model, 1);
        for a in [0, 64, 128] {
            assert_eq!(m.access(0, a, Access::Read), FROM_DRAM);
        }
        // Line 0 was the LLC's LRU victim, so the L1D lost it too.
        assert_eq!(m.access(0, 0, Access::Read), FROM_DRAM);
        assert_eq!(m.access(0, 128, Access::Read), HIT);
    }

    #[test]
    fn penalties_are_latency_differences() {
        let l = SKYLAKE_CLIENT.latency;
        assert_eq!(
            (
                l.l1_miss_penalty(),
                l.l2_miss_penalty(),
                l.llc_miss_penalty()
            ),
            (8, 30, 204)
        );
        // An access served by DRAM costs DRAM's latency beyond an L1 hit.
        assert_eq!(
            l.l1_miss_penalty() + l.l2_miss_penalty() + l.llc_miss_penalty(),
            l.dram - l.l1
        );
    }
}
