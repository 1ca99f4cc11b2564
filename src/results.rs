//! The results model: one versioned document, `results.json`, written
//! atomically after every sample. Every report is a rendering of it.
//!
//! The wire format is documented in `docs/results-schema.md`; bump
//! [`SCHEMA_VERSION`] on any incompatible change.

use std::path::{Path, PathBuf};

use patchbench_agent::{GuestFacts, Sample, Workload};
use serde::{Deserialize, Serialize};

use crate::build::KernelArtifact;
use crate::config::Variant;
use crate::vm::accel::Accel;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Results {
    pub schema_version: u32,
    pub patchbench_version: String,
    pub campaign: String,
    /// The campaign file, absent for the built-in default.
    pub campaign_file: Option<PathBuf>,
    pub started_at: jiff::Timestamp,
    pub host: Host,
    pub tree: TreeInfo,
    pub series: SeriesInfo,
    /// Kernels by variant: `A` (base) and `B` (base + series).
    pub kernels: Vec<KernelRecord>,
    pub workload: Workload,
    pub protocol: Protocol,
    pub boots: Vec<Boot>,
    /// Wall time of every stage, in the order they ran.
    pub timings: Vec<Timing>,
    /// Every metric's comparison (summaries, intervals, tests, verdict),
    /// written when the last boot is done; empty until then. Reports
    /// recompute them from the samples, so this is a record, not an input.
    #[serde(default)]
    pub comparisons: Vec<MetricComparison>,
}

/// One metric's comparison as the report judged it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricComparison {
    pub metric: String,
    pub comparison: crate::stats::Comparison,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub cpu_model: String,
    pub cores: usize,
    pub accel: Accel,
    /// Why this accelerator: "KVM is usable", or why it fell back to TCG.
    pub accel_reason: String,
    /// TCG ran with `-icount` (a deterministic guest clock).
    #[serde(default)]
    pub icount: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeInfo {
    pub origin: String,
    pub base_commit: String,
    /// How the base was chosen: the campaign's ref, the series'
    /// `base-commit:` trailer, or the tree's HEAD (and why).
    pub base_choice: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesInfo {
    /// A path or `lore:<message-id>`.
    pub source: String,
    pub sha256: String,
    pub patches: Vec<PatchInfo>,
    /// The commit of variant B.
    pub head_commit: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchInfo {
    pub subject: String,
    pub author: String,
    /// The patch's file, or its place in an mbox or a lore thread.
    pub origin: String,
    pub message_id: Option<String>,
    /// The commit this patch became.
    pub commit: String,
    /// `exact`, `3-way merge ...`, or `fuzzy (...)` with offsets and fuzz.
    pub applied: String,
    /// Context lines were ignored to apply it: the report warns.
    pub fuzz: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRecord {
    pub variant: Variant,
    #[serde(flatten)]
    pub artifact: KernelArtifact,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    pub boots: Vec<Variant>,
    /// The seed that shuffled `boots` (order `random`), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    pub warmups: u32,
    pub samples: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    /// Position in the boot order, from 0.
    pub index: usize,
    /// `A`, `B`, `A'`...
    pub label: String,
    pub variant: Variant,
    pub initramfs_sha256: String,
    pub console_log: PathBuf,
    pub facts: Option<GuestFacts>,
    /// Warm-up samples, kept for inspection; statistics ignore them.
    pub warmups: Vec<Sample>,
    pub samples: Vec<Sample>,
    /// Seconds from QEMU's start to the agent's hello.
    pub hello_seconds: Option<f64>,
    /// Seconds from QEMU's start to its exit.
    pub total_seconds: Option<f64>,
    pub complete: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    pub stage: String,
    pub seconds: f64,
}

impl Results {
    /// Whether `earlier` is a previous, interrupted run of the same
    /// campaign on the same kernels, whose complete boots can be kept.
    pub fn can_resume_from(&self, earlier: &Results) -> bool {
        let kernels = |r: &Results| {
            r.kernels
                .iter()
                .map(|k| (k.variant, k.artifact.bzimage_sha256.clone()))
                .collect::<Vec<_>>()
        };
        earlier.schema_version == self.schema_version
            && earlier.campaign == self.campaign
            && earlier.protocol == self.protocol
            && earlier.workload == self.workload
            && earlier.host.accel == self.host.accel
            && earlier.host.icount == self.host.icount
            && kernels(earlier) == kernels(self)
    }

    /// The boots of `earlier` to keep: the complete ones from the start of
    /// the boot order (a boot after an incomplete one runs again, so the
    /// order stays the protocol's).
    pub fn completed_prefix(earlier: &Results) -> Vec<Boot> {
        earlier
            .boots
            .iter()
            .take_while(|b| b.complete)
            .cloned()
            .collect()
    }

    /// Write the document atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("results serialize");
        text.push('\n');
        crate::fsutil::write_atomic(path, text.as_bytes())
    }

    pub fn load(path: &Path) -> anyhow::Result<Results> {
        use anyhow::Context;
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read results {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a results document", path.display()))
    }

    /// The measured samples of every complete boot of a variant, by boot.
    pub fn samples_by_boot(&self, variant: Variant) -> Vec<(&Boot, &[Sample])> {
        self.boots
            .iter()
            .filter(|b| b.variant == variant && b.complete)
            .map(|b| (b, b.samples.as_slice()))
            .collect()
    }
}

/// The label of the boot at `index` in `order`: a variant's second boot is
/// primed (`A'`), its third double-primed, and so on.
pub fn boot_label(order: &[Variant], index: usize) -> String {
    let variant = order[index];
    let earlier = order[..index].iter().filter(|v| **v == variant).count();
    format!("{variant:?}{}", "'".repeat(earlier))
}

/// The host's CPU model from /proc/cpuinfo.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_return_to_a_is_primed() {
        let order = [Variant::A, Variant::B, Variant::A, Variant::B];
        let labels: Vec<_> = (0..4).map(|i| boot_label(&order, i)).collect();
        assert_eq!(labels, ["A", "B", "A'", "B'"]);
    }
}
