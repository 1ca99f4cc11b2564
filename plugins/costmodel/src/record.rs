//! The plugin's output: one JSON object per line, written and flushed the
//! moment a window closes, so the host has it before the guest agent's
//! sample message arrives. A documented wire format between the plugin and
//! patchbench (docs/cost-model.md), like the agent's protocol.

use serde::{Deserialize, Serialize};

use crate::cost::Counts;
use crate::insn::ClassCounts;
use crate::machine::Latency;

/// One output line.
// A line is made once per closed window and written at once: its size
// costs nothing, and a box would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Line {
    /// A window closed.
    Window(WindowRecord),
    /// The plugin saw something that makes the windows untrustworthy (an
    /// end marker without its begin, a window still open at exit, a write
    /// that failed).
    Error { message: String },
}

impl Line {
    /// The line as written: JSON and a newline.
    pub fn to_json_line(&self) -> String {
        let mut text = serde_json::to_string(self).expect("records serialize");
        text.push('\n');
        text
    }
}

/// What a window cost: counts and the model's cycles for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub insns: u64,
    pub l1d_misses: u64,
    pub l1i_misses: u64,
    pub l2_misses: u64,
    pub llc_misses: u64,
    pub coherence_misses: u64,
    pub modeled_cycles: u64,
    /// Instructions of each class of the cost table that ran (only those
    /// that did; absent when none did, and in the counting lane).
    #[serde(default, skip_serializing_if = "ClassCounts::is_zero")]
    pub classes: ClassCounts,
    /// The cycles those classes were charged beyond one per instruction
    /// (absent when zero): `modeled_cycles` is `insns + class_cycles` plus
    /// the misses' penalties.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub class_cycles: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Cost {
    pub fn of(counts: &Counts, latency: &Latency) -> Cost {
        Cost {
            insns: counts.insns,
            l1d_misses: counts.l1d_misses,
            l1i_misses: counts.l1i_misses,
            l2_misses: counts.l2_misses,
            llc_misses: counts.llc_misses,
            coherence_misses: counts.coherence_misses,
            modeled_cycles: counts.modeled_cycles(latency),
            classes: counts.classes,
            class_cycles: counts.extra_cycles,
        }
    }
}

/// One vCPU's share of a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcpuCost {
    pub vcpu: u32,
    #[serde(flatten)]
    pub cost: Cost,
}

/// One kernel symbol's share of a window (`user` for all of user space,
/// `kernel-unknown` for kernel code outside any symbol).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolCost {
    pub symbol: String,
    #[serde(flatten)]
    pub cost: Cost,
}

/// One closed window: a phase of a sample, on every vCPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowRecord {
    /// Windows closed in this boot so far, this one included.
    pub seq: u64,
    /// The phase, as the agent's marker names it (`pageout`...).
    pub phase: String,
    /// The machine model ([`crate::machine::Model::name`]).
    pub model: String,
    pub total: Cost,
    /// vCPUs that did anything in the window, by index.
    pub vcpus: Vec<VcpuCost>,
    /// Symbols with a non-zero count, most modeled cycles first (ties by
    /// name); symbols of one name are merged.
    pub symbols: Vec<SymbolCost>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_name_their_type() {
        let cost = Cost {
            insns: 5,
            modeled_cycles: 13,
            l1d_misses: 1,
            ..Cost::default()
        };
        let line = Line::Window(WindowRecord {
            seq: 1,
            phase: "pageout".into(),
            model: "skylake-client".into(),
            total: cost,
            vcpus: vec![VcpuCost { vcpu: 1, cost }],
            symbols: vec![SymbolCost {
                symbol: "do_flush_stats".into(),
                cost,
            }],
        });
        let text = line.to_json_line();
        assert!(text.ends_with('\n') && text.matches('\n').count() == 1);
        assert!(
            text.starts_with(r#"{"type":"window","seq":1,"phase":"pageout""#),
            "{text}"
        );
        assert!(
            text.contains(r#"{"symbol":"do_flush_stats","insns":5,"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Line>(&text).unwrap(), line);
        let error = Line::Error {
            message: "end of pageout without a begin".into(),
        };
        assert_eq!(
            serde_json::from_str::<Line>(&error.to_json_line()).unwrap(),
            error
        );
    }

    #[test]
    fn class_counts_are_written_only_where_some_ran() {
        use crate::insn::Class;
        let mut classes = ClassCounts::default();
        classes.add(Class::Pause, 8_192);
        let cost = Cost {
            insns: 1,
            classes,
            ..Cost::default()
        };
        let symbol = SymbolCost {
            symbol: "cgroup_rstat_flush_locked".into(),
            cost,
        };
        let text = serde_json::to_string(&symbol).unwrap();
        assert!(text.ends_with(r#""classes":{"pause":8192}}"#), "{text}");
        let charged = SymbolCost {
            cost: Cost {
                class_cycles: 8_192 * 139,
                ..cost
            },
            ..symbol.clone()
        };
        let text_charged = serde_json::to_string(&charged).unwrap();
        assert!(
            text_charged.ends_with(r#""classes":{"pause":8192},"class_cycles":1138688}"#),
            "{text_charged}"
        );
        assert_eq!(
            serde_json::from_str::<SymbolCost>(&text_charged).unwrap(),
            charged
        );
        assert_eq!(serde_json::from_str::<SymbolCost>(&text).unwrap(), symbol);
        let plain = serde_json::to_string(&Cost::default()).unwrap();
        assert!(!plain.contains("class"), "{plain}");
        // Windows written before the classes existed still read.
        assert_eq!(
            serde_json::from_str::<Cost>(&plain).unwrap(),
            Cost::default()
        );
    }

    #[test]
    fn unknown_fields_in_a_window_are_rejected() {
        let text = r#"{"type":"window","seq":1,"phase":"p","model":"m","bogus":1,
            "total":{"insns":0,"l1d_misses":0,"l1i_misses":0,"l2_misses":0,"llc_misses":0,
            "coherence_misses":0,"modeled_cycles":0},"vcpus":[],"symbols":[]}"#;
        let err = serde_json::from_str::<Line>(text).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }
}
