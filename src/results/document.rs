//! The document itself: [`Results`], its parts (in [`super::record`] and
//! [`super::comparison`]), and what can be asked of it. Reading it from
//! disk, in any schema, is the parent module's.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::judgement::JudgementRecord;
use super::record::*;

/// 5: `host.lane` (`kvm`, `tcg`, `icount`, `count`, `cost`) replaces
/// `host.accel` and `host.icount`, and `host.cost_model` names only the
/// cost lane's machine; schema 4 loads with its lane. 4: `judgement` (the stored comparisons, headline and verdicts, with
/// the rule's version) replaces `comparisons`. 3: types of the format's
/// own; `variants` (name, description, kernel) replace `kernels`;
/// `workload` is `{kind, params}`; samples lose `warmup` (the list says
/// it). Schemas 1 to 3 still load, unjudged: `patchbench judge` judges
/// them.
pub const SCHEMA_VERSION: u32 = 5;

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
    /// Every variant, the baseline first.
    pub variants: Vec<VariantRecord>,
    pub workload: WorkloadRecord,
    /// Control conditions, run in every boot after the main workload; their
    /// samples carry their name as `condition`. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<ControlRecord>,
    pub protocol: Protocol,
    pub boots: Vec<Boot>,
    /// Wall time of every stage, in the order they ran.
    pub timings: Vec<Timing>,
    /// Wall time of all the boots, from the first one's start to the last
    /// one's end, waits between waves of boots side by side included (the
    /// boots' own `timings` overlap when they run side by side); kept
    /// across a resume. Absent in documents from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boots_wall_seconds: Option<f64>,
    /// A shard's results (`run --shard`): only its own boots, each at its
    /// place in the whole order; `patchbench merge` combines the shards.
    /// Absent for a whole run and for a merged one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::model::Shard>,
    /// The judgement (`judge`): every comparison, the headline, what is
    /// undecided and what regressed, written when the last boot is done
    /// (and at every look of a sequential campaign); absent until then,
    /// for a shard, and in documents of older schemas. Every report
    /// renders it as stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<JudgementRecord>,
    /// Why this campaign ran for the series, when `run --series` chose it
    /// (absent when a campaign file was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<ReachRecord>,
}

impl Results {
    /// The baseline's name (the first variant).
    pub fn baseline(&self) -> &str {
        self.variants.first().map_or("A", |v| v.name.as_str())
    }

    /// The variants compared with the baseline, in order.
    pub fn candidates(&self) -> &[VariantRecord] {
        self.variants.get(1..).unwrap_or_default()
    }

    /// Whether `earlier` is a previous, interrupted run of the same
    /// campaign on the same kernels, whose complete boots can be kept.
    pub fn can_resume_from(&self, earlier: &Results) -> bool {
        let kernels = |r: &Results| {
            r.variants
                .iter()
                .map(|v| (v.name.clone(), v.kernel.bzimage_sha256.clone()))
                .collect::<Vec<_>>()
        };
        earlier.schema_version == self.schema_version
            && earlier.campaign == self.campaign
            && self.protocol.resumable_from(&earlier.protocol)
            && earlier.shard == self.shard
            && earlier.workload == self.workload
            && earlier.controls == self.controls
            && earlier.host.lane == self.host.lane
            && earlier.host.tcg_threads == self.host.tcg_threads
            && earlier.host.cost_model == self.host.cost_model
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

    /// Make every path the document names portable, so that a kept run
    /// names no path of one machine: the build cache's (the kernels' build
    /// directories and images, a kernel build's trees in the workload's
    /// parameters) relative to `cache_dir`, each boot's console log
    /// relative to `run_dir`, the campaign file relative to the working
    /// directory. Without the directories (a document kept elsewhere), a
    /// path is cut at the component that starts its part of the cache or
    /// of the run (`builds`, `kbuild`, `boots`, `ci`).
    pub fn portable_paths(&mut self, cache_dir: Option<&Path>, run_dir: Option<&Path>) {
        use crate::fsutil::portable;
        for v in &mut self.variants {
            v.kernel.build_dir = portable(&v.kernel.build_dir, cache_dir, "builds");
            v.kernel.bzimage = portable(&v.kernel.bzimage, cache_dir, "builds");
        }
        let params = |w: &mut WorkloadRecord| {
            for value in w.params.values_mut() {
                let path = Path::new(value.as_str());
                if path.is_absolute() {
                    let kept = portable(path, cache_dir, "kbuild");
                    *value = kept.display().to_string();
                }
            }
        };
        params(&mut self.workload);
        for c in &mut self.controls {
            params(&mut c.workload);
        }
        for b in &mut self.boots {
            b.console_log = portable(&b.console_log, run_dir, "boots");
        }
        if let Some(file) = &self.campaign_file {
            let cwd = std::env::current_dir().ok();
            let kept = portable(file, cwd.as_deref(), "ci");
            self.campaign_file = Some(if kept.is_absolute() {
                kept.file_name().map(PathBuf::from).unwrap_or(kept)
            } else {
                kept
            });
        }
    }

    /// Write the document atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("results serialize");
        text.push('\n');
        crate::fsutil::write_atomic(path, text.as_bytes())
    }

    /// The measured samples of one condition (`None`: the main workload,
    /// else a control's name) in every complete boot of a variant, by boot.
    pub fn samples_by_boot(
        &self,
        variant: &str,
        condition: Option<&str>,
    ) -> Vec<(&Boot, Vec<&SampleRecord>)> {
        self.boots
            .iter()
            .filter(|b| b.variant == variant && b.complete)
            .map(|b| (b, b.samples_of(condition)))
            .collect()
    }

    /// Every condition: the main workload (`None`), then each control.
    pub fn conditions(&self) -> Vec<Option<&ControlRecord>> {
        std::iter::once(None)
            .chain(self.controls.iter().map(Some))
            .collect()
    }
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
