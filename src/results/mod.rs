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
use crate::controls::Control;
use crate::vm::accel::Accel;

/// 2: `controls`, `samples[].condition` and `comparisons[].condition`.
pub const SCHEMA_VERSION: u32 = 2;

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
    /// Control conditions, run in every boot after the main workload; their
    /// samples carry their name as `condition`. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<Control>,
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
    /// The control condition compared; absent for the main workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
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

impl Boot {
    /// The measured samples of one condition (`None`: the main workload).
    pub fn samples_of(&self, condition: Option<&str>) -> Vec<&Sample> {
        self.samples
            .iter()
            .filter(|s| s.condition.as_deref() == condition)
            .collect()
    }
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
            && earlier.controls == self.controls
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

    /// The measured samples of one condition (`None`: the main workload, else
    /// a control's name) in every complete boot of a variant, by boot.
    pub fn samples_by_boot(
        &self,
        variant: Variant,
        condition: Option<&str>,
    ) -> Vec<(&Boot, Vec<&Sample>)> {
        self.boots
            .iter()
            .filter(|b| b.variant == variant && b.complete)
            .map(|b| (b, b.samples_of(condition)))
            .collect()
    }

    /// Every condition: the main workload (`None`), then each control.
    pub fn conditions(&self) -> Vec<Option<&Control>> {
        std::iter::once(None)
            .chain(self.controls.iter().map(Some))
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
pub(crate) mod tests {
    use super::*;

    /// The stored smoke run with a control `unlimited` whose samples are the
    /// main ones, tagged, with B's `pageout_cpu_ns` about `b_pageout_ns` when
    /// given.
    pub(crate) fn with_control(b_pageout_ns: Option<u64>) -> Results {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        let mut workload = results.workload.clone();
        if let Workload::ZswapPageout { zswap_max, .. } = &mut workload {
            *zswap_max = patchbench_agent::Limit::Max;
        }
        results.controls.push(Control {
            name: "unlimited".into(),
            set: [("zswap_max".to_string(), "max".to_string())].into(),
            workload,
        });
        for boot in &mut results.boots {
            let tagged: Vec<Sample> = boot
                .samples
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    s.condition = Some("unlimited".into());
                    if let (Variant::B, Some(ns)) = (boot.variant, b_pageout_ns) {
                        s.metrics
                            .insert("pageout_cpu_ns".into(), ns + u64::from(s.index) * 1000);
                    }
                    s
                })
                .collect();
            boot.samples.extend(tagged);
        }
        results
    }

    #[test]
    fn controls_and_conditions_round_trip_and_split_the_samples() {
        let results = with_control(None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        results.save(&path).unwrap();
        let back = Results::load(&path).unwrap();
        assert_eq!(back.controls, results.controls);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""condition": "unlimited""#), "{text}");
        let names: Vec<_> = back
            .conditions()
            .iter()
            .map(|c| c.map(|c| &c.name))
            .collect();
        assert_eq!(names, [None, Some(&"unlimited".to_string())]);
        for condition in [None, Some("unlimited")] {
            let by_boot = back.samples_by_boot(Variant::A, condition);
            assert_eq!(by_boot.len(), 2);
            assert!(by_boot.iter().all(
                |(_, s)| s.len() == 3 && s.iter().all(|s| s.condition.as_deref() == condition)
            ));
        }
    }

    #[test]
    fn resuming_needs_the_same_controls() {
        let with = with_control(None);
        let mut without = with.clone();
        without.controls.clear();
        assert!(with.can_resume_from(&with));
        assert!(!with.can_resume_from(&without));
        assert!(!without.can_resume_from(&with));
        let mut renamed = with.clone();
        renamed.controls[0].name = "other".into();
        assert!(!with.can_resume_from(&renamed));
    }

    #[test]
    fn the_return_to_a_is_primed() {
        let order = [Variant::A, Variant::B, Variant::A, Variant::B];
        let labels: Vec<_> = (0..4).map(|i| boot_label(&order, i)).collect();
        assert_eq!(labels, ["A", "B", "A'", "B'"]);
    }
}
