//! Windows: what the machine did during a phase of a sample.
//!
//! The hot path only adds to cumulative counts ([`Tally`]), per symbol and
//! per vCPU. A window is global: it opens with a snapshot of the tally at
//! the phase's first begin marker, on any vCPU, and closes at the matching
//! end; its counts are the difference, over every vCPU, whatever ran there
//! (the workload, the agent, kernel threads, interrupts). Begins of one
//! phase nest: with two workers each marking their PAGEOUT, the window runs
//! from the first worker's begin to the last one's end. Windows of
//! different phases are independent and may overlap (`total` holds
//! `pageout`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cost::Counts;
use crate::insn::Insn;
use crate::machine::{Access, Model, Outcome};
use crate::record::{Cost, SymbolCost, VcpuCost, WindowRecord};
use crate::symbols::Symbols;

/// Cumulative counts since the boot, per symbol id and per vCPU.
///
/// Instructions may also be counted by code QEMU generates (an inline
/// op: no call into the plugin, which is most of the counting lane's
/// cost), into [`Tally::inline_counters`]. Those counters say nothing of
/// the vCPU, so a tally that uses them keeps no per-vCPU split
/// ([`Tally::counting_inline`]); [`Tally::settle`] folds them into the
/// per-symbol counts before a window reads them.
#[derive(Debug)]
pub struct Tally {
    per_symbol: Vec<Counts>,
    per_vcpu: Vec<Counts>,
    /// Instructions per symbol id added by generated code since the last
    /// settle; `None` where every count goes through [`Tally::insns`].
    inline: Option<Box<[AtomicU64]>>,
}

impl Clone for Tally {
    /// A snapshot of the settled counts (the inline counters are not part
    /// of it: settle first).
    fn clone(&self) -> Tally {
        Tally {
            per_symbol: self.per_symbol.clone(),
            per_vcpu: self.per_vcpu.clone(),
            inline: None,
        }
    }
}

impl Tally {
    pub fn new(symbols: usize, vcpus: usize) -> Tally {
        Tally {
            per_symbol: vec![Counts::default(); symbols],
            per_vcpu: vec![Counts::default(); vcpus],
            inline: None,
        }
    }

    /// A tally whose instructions are counted mostly by generated code,
    /// per symbol only (the counting lane).
    pub fn counting_inline(symbols: usize) -> Tally {
        Tally {
            per_symbol: vec![Counts::default(); symbols],
            per_vcpu: Vec::new(),
            inline: Some((0..symbols).map(|_| AtomicU64::new(0)).collect()),
        }
    }

    /// Where generated code adds the instructions of each symbol id: one
    /// `u64` per symbol that lives as long as the tally and never moves.
    /// `None` for a tally that is not [`Tally::counting_inline`].
    pub fn inline_counters(&self) -> Option<&[AtomicU64]> {
        self.inline.as_deref()
    }

    /// Moves what generated code counted into the per-symbol counts. The
    /// counters are written by the thread that runs the guest, which is
    /// the thread that settles, between blocks.
    pub fn settle(&mut self) {
        let Some(counters) = &self.inline else { return };
        for (counts, counter) in self.per_symbol.iter_mut().zip(counters.iter()) {
            counts.insns += counter.swap(0, Ordering::Relaxed);
        }
    }

    /// `n` instructions of symbol `sym` executed on `vcpu`.
    #[inline]
    pub fn insns(&mut self, vcpu: usize, sym: u32, n: u64) {
        self.per_symbol[sym as usize].insns += n;
        if let Some(counts) = self.per_vcpu.get_mut(vcpu) {
            counts.insns += n;
        }
    }

    /// `n` executions of the classified instruction `insn` of symbol `sym`
    /// on `vcpu` (counted as instructions by [`Tally::insns`]).
    #[inline]
    pub fn charge(&mut self, vcpu: usize, sym: u32, insn: Insn, n: u64) {
        self.per_symbol[sym as usize].charge(insn, n);
        self.per_vcpu[vcpu].charge(insn, n);
    }

    /// An instruction of symbol `sym` on `vcpu` made an access.
    #[inline]
    pub fn access(&mut self, vcpu: usize, sym: u32, kind: Access, outcome: Outcome) {
        if outcome.l1_miss {
            self.per_symbol[sym as usize].add(kind, outcome);
            self.per_vcpu[vcpu].add(kind, outcome);
        }
    }

    /// Everything settled, over every vCPU.
    pub fn total(&self) -> Counts {
        let mut total = Counts::default();
        for c in &self.per_symbol {
            total.merge(c);
        }
        total
    }
}

/// An end marker whose phase has no open window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOpen {
    pub phase: String,
}

impl std::fmt::Display for NotOpen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the end of phase {} came without its begin", self.phase)
    }
}

impl std::error::Error for NotOpen {}

#[derive(Debug)]
struct Open {
    depth: u32,
    since: Tally,
}

/// The open windows, by phase.
#[derive(Debug, Default)]
pub struct Windows {
    open: BTreeMap<String, Open>,
    closed: u64,
}

impl Windows {
    /// A begin marker of `phase`.
    pub fn begin(&mut self, phase: &str, now: &Tally) {
        self.open
            .entry(phase.to_string())
            .and_modify(|w| w.depth += 1)
            .or_insert_with(|| Open {
                depth: 1,
                since: now.clone(),
            });
    }

    /// An end marker of `phase`: the window's record when this closes it,
    /// `None` while other begins of the phase are still open.
    pub fn end(
        &mut self,
        phase: &str,
        now: &Tally,
        symbols: &Symbols,
        model: &Model,
    ) -> Result<Option<WindowRecord>, NotOpen> {
        let open = self.open.get_mut(phase).ok_or_else(|| NotOpen {
            phase: phase.to_string(),
        })?;
        open.depth -= 1;
        if open.depth > 0 {
            return Ok(None);
        }
        let open = self.open.remove(phase).expect("present");
        self.closed += 1;
        Ok(Some(record(
            self.closed,
            phase,
            &open.since,
            now,
            symbols,
            model,
        )))
    }

    /// Phases whose window is open, in name order.
    pub fn still_open(&self) -> Vec<&str> {
        self.open.keys().map(String::as_str).collect()
    }
}

fn record(
    seq: u64,
    phase: &str,
    since: &Tally,
    now: &Tally,
    symbols: &Symbols,
    model: &Model,
) -> WindowRecord {
    let latency = &model.latency;
    let mut by_name: BTreeMap<&str, Counts> = BTreeMap::new();
    for (id, (now, then)) in now.per_symbol.iter().zip(&since.per_symbol).enumerate() {
        let delta = now.since(then);
        if !delta.is_zero() {
            by_name
                .entry(symbols.name(id as u32))
                .or_default()
                .merge(&delta);
        }
    }
    let mut total = Counts::default();
    let mut symbol_costs: Vec<SymbolCost> = by_name
        .into_iter()
        .map(|(name, counts)| {
            total.merge(&counts);
            SymbolCost {
                symbol: name.to_string(),
                cost: Cost::of(&counts, latency),
            }
        })
        .collect();
    // Most cycles first; the sort is stable, so ties keep name order.
    symbol_costs.sort_by_key(|s| std::cmp::Reverse(s.cost.modeled_cycles));
    let vcpus = now
        .per_vcpu
        .iter()
        .zip(&since.per_vcpu)
        .enumerate()
        .filter_map(|(v, (now, then))| {
            let delta = now.since(then);
            (!delta.is_zero()).then(|| VcpuCost {
                vcpu: v as u32,
                cost: Cost::of(&delta, latency),
            })
        })
        .collect();
    WindowRecord {
        seq,
        phase: phase.to_string(),
        model: model.name.to_string(),
        total: Cost::of(&total, latency),
        vcpus,
        symbols: symbol_costs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::SKYLAKE_CLIENT;
    use crate::symbols::{KERNEL_UNKNOWN, USER};

    const MAP: &str = "\
ffffffff81000000 T do_flush_stats
ffffffff81000100 T memcpy
ffffffff81000200 t helper
ffffffff81000300 t helper
";

    const MISS: Outcome = Outcome {
        l1_miss: true,
        l2_miss: true,
        llc_miss: true,
        coherence: false,
    };

    fn setup() -> (Symbols, Tally, Windows) {
        let symbols = Symbols::parse(MAP).unwrap();
        let tally = Tally::new(symbols.len(), 2);
        (symbols, tally, Windows::default())
    }

    #[test]
    fn a_window_counts_what_happened_between_its_markers_on_every_vcpu() {
        let (symbols, mut tally, mut windows) = setup();
        let flush = symbols.lookup(0xffff_ffff_8100_0000);
        tally.insns(0, USER, 1_000); // before: not in the window
        windows.begin("pageout", &tally);
        tally.insns(0, USER, 10);
        tally.insns(1, flush, 100);
        tally.access(1, flush, Access::Read, MISS);
        tally.access(0, USER, Access::Read, Outcome::default()); // a hit
        let r = windows
            .end("pageout", &tally, &symbols, &SKYLAKE_CLIENT)
            .unwrap()
            .unwrap();
        assert_eq!((r.seq, r.phase.as_str()), (1, "pageout"));
        assert_eq!(r.total.insns, 110);
        assert_eq!(r.total.l1d_misses, 1);
        assert_eq!(r.total.modeled_cycles, 110 + 8 + 30 + 204);
        let symbols_seen: Vec<(&str, u64)> = r
            .symbols
            .iter()
            .map(|s| (s.symbol.as_str(), s.cost.modeled_cycles))
            .collect();
        assert_eq!(symbols_seen, [("do_flush_stats", 342), ("user", 10)]);
        let vcpus: Vec<(u32, u64)> = r.vcpus.iter().map(|v| (v.vcpu, v.cost.insns)).collect();
        assert_eq!(vcpus, [(0, 10), (1, 100)]);
        assert!(windows.still_open().is_empty());
    }

    /// Generated code adds to the inline counters as the guest runs; a
    /// settle before each marker puts them in the window they ran in.
    #[test]
    fn inline_counts_land_in_the_window_they_were_added_in() {
        use crate::machine::COUNTING;
        let symbols = Symbols::parse(MAP).unwrap();
        let mut tally = Tally::counting_inline(symbols.len());
        let mut windows = Windows::default();
        let flush = symbols.lookup(0xffff_ffff_8100_0000);
        let add = |tally: &Tally, sym: u32, n: u64| {
            let counter = tally.inline_counters().unwrap()[sym as usize].as_ptr();
            // SAFETY: the counter lives in `tally`; QEMU's generated code
            // does exactly this add, on this thread.
            unsafe { *counter += n };
        };
        add(&tally, USER, 1_000); // before: not in the window
        tally.settle();
        windows.begin("p", &tally);
        add(&tally, USER, 10);
        add(&tally, flush, 90);
        tally.insns(1, flush, 10); // a marker's segment, by callback
        add(&tally, flush, 5);
        tally.settle();
        let r = windows
            .end("p", &tally, &symbols, &COUNTING)
            .unwrap()
            .unwrap();
        assert_eq!(r.total.insns, 115);
        let seen: Vec<(&str, u64)> = r
            .symbols
            .iter()
            .map(|s| (s.symbol.as_str(), s.cost.insns))
            .collect();
        assert_eq!(seen, [("do_flush_stats", 105), ("user", 10)]);
        // The counters say nothing of the vCPU, so neither does the record.
        assert!(r.vcpus.is_empty());
        assert_eq!(tally.total().insns, 1_115);
        // A tally counting by callback only has no inline counters.
        assert!(Tally::new(symbols.len(), 2).inline_counters().is_none());
    }

    #[test]
    fn a_window_charges_and_counts_its_classified_instructions() {
        use crate::insn::Class;
        let (symbols, mut tally, mut windows) = setup();
        let flush = symbols.lookup(0xffff_ffff_8100_0000);
        tally.insns(0, flush, 1);
        tally.charge(0, flush, Insn::Pause, 1); // before: not in the window
        windows.begin("p", &tally);
        tally.insns(1, flush, 3);
        tally.charge(1, flush, Insn::Pause, 2);
        tally.charge(1, flush, Insn::Cli, 1);
        let r = windows
            .end("p", &tally, &symbols, &SKYLAKE_CLIENT)
            .unwrap()
            .unwrap();
        // 3 instructions, two PAUSEs at 140, a CLI at 1.
        assert_eq!(r.total.modeled_cycles, 3 + 2 * 139);
        assert_eq!(r.total.classes.get(Class::Pause), 2);
        assert_eq!(r.total.classes.get(Class::InterruptFlag), 1);
        assert_eq!(r.symbols[0].cost.classes, r.total.classes);
        assert_eq!(r.vcpus[0].cost.classes, r.total.classes);
    }

    #[test]
    fn begins_of_one_phase_nest_and_phases_overlap() {
        let (symbols, mut tally, mut windows) = setup();
        let model = &SKYLAKE_CLIENT;
        windows.begin("total", &tally);
        windows.begin("pageout", &tally); // worker 1
        tally.insns(0, USER, 5);
        windows.begin("pageout", &tally); // worker 2
        tally.insns(1, USER, 7);
        assert_eq!(windows.end("pageout", &tally, &symbols, model), Ok(None));
        tally.insns(1, USER, 11);
        let pageout = windows
            .end("pageout", &tally, &symbols, model)
            .unwrap()
            .unwrap();
        assert_eq!(pageout.total.insns, 23);
        tally.insns(0, USER, 1);
        assert_eq!(windows.still_open(), ["total"]);
        let total = windows
            .end("total", &tally, &symbols, model)
            .unwrap()
            .unwrap();
        assert_eq!((total.seq, total.total.insns), (2, 24));
        assert_eq!(
            windows.end("total", &tally, &symbols, model),
            Err(NotOpen {
                phase: "total".into()
            })
        );
    }

    #[test]
    fn symbols_of_one_name_merge_and_ties_sort_by_name() {
        let (symbols, mut tally, mut windows) = setup();
        windows.begin("p", &tally);
        tally.insns(0, symbols.lookup(0xffff_ffff_8100_0200), 3);
        tally.insns(0, symbols.lookup(0xffff_ffff_8100_0300), 4);
        tally.insns(0, symbols.lookup(0xffff_ffff_8100_0100), 7);
        tally.insns(0, KERNEL_UNKNOWN, 1);
        let r = windows
            .end("p", &tally, &symbols, &SKYLAKE_CLIENT)
            .unwrap()
            .unwrap();
        let seen: Vec<(&str, u64)> = r
            .symbols
            .iter()
            .map(|s| (s.symbol.as_str(), s.cost.insns))
            .collect();
        assert_eq!(seen, [("helper", 7), ("memcpy", 7), ("kernel-unknown", 1)]);
        assert_eq!(tally.total().insns, 15);
    }
}
