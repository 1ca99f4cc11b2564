//! One set-associative cache of 64-byte lines with true LRU replacement.
//!
//! Addresses here are line numbers (byte address >> [`LINE_SHIFT`]). The set
//! is the line number modulo the number of sets (a power of two); real
//! last-level caches hash the address over slices, which this ignores.
//! Every operation is O(associativity) and allocation-free.

/// Lines are 64 bytes on every level of the modelled machine.
pub const LINE_SHIFT: u32 = 6;
/// Bytes in a line.
pub const LINE_BYTES: u64 = 1 << LINE_SHIFT;

/// A cache's size and associativity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub size_bytes: u64,
    pub ways: u32,
}

impl Geometry {
    /// The number of sets: size / line / ways.
    pub const fn sets(&self) -> u64 {
        self.size_bytes / LINE_BYTES / self.ways as u64
    }
}

/// The coherence state of a line in one cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The way holds nothing.
    Invalid,
    /// Other vCPUs may hold copies: a write must invalidate them first.
    Shared,
    /// No other vCPU holds a copy (MESI's E and M, which this model does
    /// not tell apart: write-backs cost nothing here).
    Owned,
    /// Invalidated by another vCPU's write; the tag stays, so that the next
    /// miss on this line is known to be a coherence miss.
    Stale,
}

impl State {
    const fn bits(self) -> u64 {
        match self {
            State::Invalid => 0,
            State::Shared => 1,
            State::Owned => 2,
            State::Stale => 3,
        }
    }

    const fn from_bits(bits: u64) -> State {
        match bits & 3 {
            0 => State::Invalid,
            1 => State::Shared,
            2 => State::Owned,
            _ => State::Stale,
        }
    }
}

const STATE_BITS: u64 = 3;

/// A tag: the line number above two bits of [`State`].
#[inline]
fn tag(line: u64, state: State) -> u64 {
    line << 2 | state.bits()
}

/// Whether a tag holds `line` validly (Shared or Owned).
#[inline]
fn holds(tag: u64, line: u64) -> bool {
    tag & !STATE_BITS == line << 2 && (tag & STATE_BITS).wrapping_sub(1) < 2
}

/// A line pushed out of a cache to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    pub line: u64,
    pub sharers: u64,
}

/// One cache. A set's tags are contiguous (a set of 8 ways is one host
/// cache line), apart from the LRU stamps and the directory, which only
/// hits and fills touch.
#[derive(Debug, Clone)]
pub struct Cache {
    set_mask: u64,
    ways: usize,
    /// Per way: [`tag`].
    tags: Vec<u64>,
    /// Per way: the cache's clock when the line was last used (larger is
    /// newer).
    stamps: Vec<u64>,
    /// Per way, for a shared last level: the vCPUs whose private caches may
    /// hold the line (one bit each). Empty for private caches.
    sharers: Vec<u64>,
    clock: u64,
}

impl Cache {
    /// An empty cache; `directory` gives it per-line sharer bits. Panics
    /// unless the geometry gives a power-of-two number of sets (every real
    /// cache this models does).
    pub fn new(geometry: Geometry, directory: bool) -> Cache {
        let sets = geometry.sets();
        assert!(
            sets.is_power_of_two() && geometry.ways > 0,
            "cache geometry {geometry:?} does not give a power-of-two number of sets"
        );
        let slots = (sets * u64::from(geometry.ways)) as usize;
        Cache {
            set_mask: sets - 1,
            ways: geometry.ways as usize,
            tags: vec![0; slots],
            stamps: vec![0; slots],
            sharers: if directory {
                vec![0; slots]
            } else {
                Vec::new()
            },
            clock: 0,
        }
    }

    #[inline]
    fn base(&self, line: u64) -> usize {
        (line & self.set_mask) as usize * self.ways
    }

    #[inline]
    fn find(&self, line: u64) -> Option<usize> {
        let base = self.base(line);
        self.tags[base..base + self.ways]
            .iter()
            .position(|&t| holds(t, line))
            .map(|i| base + i)
    }

    /// The valid way holding `line`, marked most recently used.
    #[inline]
    pub fn lookup(&mut self, line: u64) -> Option<usize> {
        let way = self.find(line)?;
        self.clock += 1;
        self.stamps[way] = self.clock;
        Some(way)
    }

    /// Whether `line` is held (valid), without touching the LRU order.
    pub fn contains(&self, line: u64) -> bool {
        self.find(line).is_some()
    }

    /// Whether the set keeps `line`'s tag from a coherence invalidation.
    pub fn is_stale(&self, line: u64) -> bool {
        let base = self.base(line);
        self.tags[base..base + self.ways].contains(&tag(line, State::Stale))
    }

    pub fn state(&self, way: usize) -> State {
        State::from_bits(self.tags[way])
    }

    /// The directory bits of a way (0 in a cache without a directory).
    pub fn sharers(&self, way: usize) -> u64 {
        self.sharers.get(way).copied().unwrap_or(0)
    }

    /// Sets the directory bits of a way; panics in a cache without one.
    pub fn set_sharers(&mut self, way: usize, sharers: u64) {
        self.sharers[way] = sharers;
    }

    /// Sets the state of `line` if it is held; returns whether it was.
    pub fn set_state(&mut self, line: u64, state: State) -> bool {
        match self.find(line) {
            Some(way) => {
                self.tags[way] = tag(line, state);
                true
            }
            None => false,
        }
    }

    /// Puts `line` (not held yet) in its set as most recently used, in
    /// `state`. The victim is the way keeping `line`'s stale tag, else the
    /// first way holding nothing, else the least recently used line, which
    /// is returned.
    pub fn fill(&mut self, line: u64, state: State) -> (usize, Option<Evicted>) {
        #[cfg(test)]
        assert!(!self.contains(line), "line {line:#x} filled twice");
        let base = self.base(line);
        let tags = &self.tags[base..base + self.ways];
        let stale = tag(line, State::Stale);
        let victim = base
            + tags
                .iter()
                .position(|&t| t == stale)
                .or_else(|| {
                    tags.iter()
                        .position(|&t| (t & STATE_BITS).wrapping_sub(1) >= 2)
                })
                .unwrap_or_else(|| {
                    let stamps = &self.stamps[base..base + self.ways];
                    (0..self.ways)
                        .min_by_key(|&i| stamps[i])
                        .expect("a set has at least one way")
                });
        let old = self.tags[victim];
        let evicted = (old & STATE_BITS).wrapping_sub(1) < 2;
        let evicted = evicted.then(|| Evicted {
            line: old >> 2,
            sharers: self.sharers(victim),
        });
        self.clock += 1;
        self.tags[victim] = tag(line, state);
        self.stamps[victim] = self.clock;
        if let Some(bits) = self.sharers.get_mut(victim) {
            *bits = 0;
        }
        (victim, evicted)
    }

    /// Drops `line` if held: as [`State::Stale`] when another vCPU's write
    /// caused it, else as [`State::Invalid`]. Returns whether it was held.
    pub fn invalidate(&mut self, line: u64, coherence: bool) -> bool {
        match self.find(line) {
            Some(way) => {
                self.tags[way] = if coherence {
                    tag(line, State::Stale)
                } else {
                    tag(0, State::Invalid)
                };
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 sets of 4 ways: lines with the same parity share a set.
    fn small() -> Cache {
        Cache::new(
            Geometry {
                size_bytes: 8 * LINE_BYTES,
                ways: 4,
            },
            false,
        )
    }

    #[test]
    fn the_least_recently_used_line_is_evicted_first() {
        let mut c = small();
        for line in [0, 2, 4, 6] {
            assert_eq!(c.fill(line, State::Owned).1, None);
        }
        // Touch 0 and 4: 2 is now the oldest, then 6.
        assert!(c.lookup(0).is_some());
        assert!(c.lookup(4).is_some());
        let evicted = |c: &mut Cache, line| c.fill(line, State::Owned).1.map(|e| e.line);
        assert_eq!(evicted(&mut c, 8), Some(2));
        assert_eq!(evicted(&mut c, 10), Some(6));
        assert_eq!(evicted(&mut c, 12), Some(0));
        assert_eq!(evicted(&mut c, 14), Some(4));
        assert_eq!(evicted(&mut c, 16), Some(8));
    }

    #[test]
    fn associativity_bounds_what_one_set_holds() {
        let mut c = small();
        // Five lines of one set cycled: with 4 ways and LRU, every access
        // misses (the classic LRU worst case), while the other set is free.
        for round in 0..3 {
            for line in [1, 3, 5, 7, 9] {
                assert!(c.lookup(line).is_none(), "round {round} line {line}");
                c.fill(line, State::Owned);
            }
        }
        // Four lines of one set fit: after one cold round, all hit.
        let mut c = small();
        for line in [1, 3, 5, 7] {
            c.fill(line, State::Owned);
        }
        for line in [1, 3, 5, 7, 1, 3] {
            assert!(c.lookup(line).is_some(), "line {line}");
        }
    }

    #[test]
    fn a_stale_tag_marks_a_coherence_miss_until_refilled() {
        let mut c = small();
        c.fill(2, State::Shared);
        assert!(c.invalidate(2, true));
        assert!(c.lookup(2).is_none());
        assert!(c.is_stale(2));
        // The refill reuses the stale way, so the tag is not stale twice.
        let (way, evicted) = c.fill(2, State::Owned);
        assert_eq!(evicted, None);
        assert_eq!(c.state(way), State::Owned);
        assert!(!c.is_stale(2));
        // A plain invalidation (an inclusion victim) keeps no tag.
        assert!(c.invalidate(2, false));
        assert!(!c.is_stale(2) && !c.contains(2));
        assert!(!c.invalidate(2, true), "nothing left to invalidate");
    }

    #[test]
    fn the_skylake_geometries_have_power_of_two_sets() {
        for (size_kib, ways, sets) in [(32, 8, 64), (256, 4, 1024), (8192, 16, 8192)] {
            let g = Geometry {
                size_bytes: size_kib << 10,
                ways,
            };
            assert_eq!(g.sets(), sets);
            Cache::new(g, ways == 16);
        }
    }
}
