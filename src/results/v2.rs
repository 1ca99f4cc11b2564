//! Reading `results.json` of schema 2 (and 1), as patchbench wrote it
//! before schema 3: the types of that format, frozen here, and their
//! conversion into today's [`Results`]. Stored runs keep rendering and
//! comparing. The stored comparisons are dropped: reports recompute them
//! from the samples, as they always did.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::document::{Results, SCHEMA_VERSION};
use super::record::*;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResultsV2 {
    #[allow(dead_code)] // checked by the caller before this type is chosen
    schema_version: u32,
    patchbench_version: String,
    campaign: String,
    campaign_file: Option<PathBuf>,
    started_at: jiff::Timestamp,
    host: Host,
    tree: TreeInfo,
    series: SeriesInfo,
    kernels: Vec<KernelV2>,
    workload: serde_json::Value,
    #[serde(default)]
    controls: Vec<ControlV2>,
    protocol: ProtocolV2,
    boots: Vec<BootV2>,
    timings: Vec<Timing>,
    #[serde(default)]
    #[allow(dead_code)] // recomputed by every report
    comparisons: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelV2 {
    variant: String,
    commit: String,
    build_dir: PathBuf,
    bzimage: PathBuf,
    bzimage_sha256: String,
    config_sha256: String,
    compiler: String,
    key: String,
    #[serde(default)]
    series_sha256: Option<String>,
    build_seconds: f64,
    incremental: bool,
    #[serde(default)]
    started_from: Option<String>,
    reused: bool,
    objects_rebuilt: usize,
    #[serde(default)]
    rebuilt: Vec<RebuiltRecord>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlV2 {
    name: String,
    set: BTreeMap<String, String>,
    workload: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProtocolV2 {
    boots: Vec<String>,
    #[serde(default)]
    order_seed: Option<u64>,
    warmups: u32,
    samples: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BootV2 {
    index: usize,
    label: String,
    variant: String,
    initramfs_sha256: String,
    console_log: PathBuf,
    facts: Option<Facts>,
    warmups: Vec<SampleV2>,
    samples: Vec<SampleV2>,
    hello_seconds: Option<f64>,
    total_seconds: Option<f64>,
    complete: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleV2 {
    index: u32,
    #[allow(dead_code)] // the list a sample is in says it
    warmup: bool,
    metrics: BTreeMap<String, u64>,
    #[serde(default)]
    condition: Option<String>,
}

impl From<SampleV2> for SampleRecord {
    fn from(s: SampleV2) -> Self {
        SampleRecord {
            index: s.index,
            condition: s.condition,
            metrics: s.metrics,
            profile: BTreeMap::new(),
            split: BTreeMap::new(),
        }
    }
}

/// A schema-2 workload (the guest protocol's JSON of its day) as a record:
/// its `kind` and every other field as text.
fn workload(value: serde_json::Value) -> WorkloadRecord {
    let mut kind = String::new();
    let mut params = BTreeMap::new();
    if let serde_json::Value::Object(map) = value {
        for (key, value) in map {
            if key == "kind" {
                kind = value.as_str().unwrap_or_default().to_string();
            } else {
                params.insert(key, param_text(&value));
            }
        }
    }
    WorkloadRecord { kind, params }
}

/// A parameter of that JSON as text: a limit `{"bytes": N}` as N, a
/// duration `{"secs", "nanos"}` as humantime writes it.
fn param_text(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map) => match (map.get("bytes"), map.get("secs"), map.get("nanos")) {
            (Some(bytes), _, _) => bytes.to_string(),
            (_, Some(Value::Number(secs)), Some(Value::Number(nanos))) => {
                let d = std::time::Duration::new(
                    secs.as_u64().unwrap_or(0),
                    nanos.as_u64().unwrap_or(0) as u32,
                );
                humantime::format_duration(d).to_string()
            }
            _ => value.to_string(),
        },
        Value::Array(items) => items.iter().map(param_text).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

impl From<ResultsV2> for Results {
    fn from(old: ResultsV2) -> Results {
        let series_len = old.series.patches.len();
        let variants = old
            .kernels
            .into_iter()
            .map(|k| VariantRecord {
                description: match k.variant.as_str() {
                    "A" => "the base".to_string(),
                    _ => "the base + the series".to_string(),
                },
                patches: if k.variant == "A" { 0 } else { series_len },
                fragments: Vec::new(),
                cmdline: Vec::new(),
                settings: BTreeMap::new(),
                name: k.variant,
                kernel: KernelRecord {
                    commit: k.commit,
                    build_dir: k.build_dir,
                    bzimage: k.bzimage,
                    bzimage_sha256: k.bzimage_sha256,
                    config_sha256: k.config_sha256,
                    compiler: k.compiler,
                    key: k.key,
                    series_sha256: k.series_sha256,
                    build_seconds: k.build_seconds,
                    incremental: k.incremental,
                    started_from: k.started_from,
                    reused: k.reused,
                    objects_rebuilt: k.objects_rebuilt,
                    rebuilt: k.rebuilt,
                },
            })
            .collect();
        Results {
            schema_version: SCHEMA_VERSION,
            patchbench_version: old.patchbench_version,
            campaign: old.campaign,
            campaign_file: old.campaign_file,
            started_at: old.started_at,
            host: old.host,
            tree: old.tree,
            series: old.series,
            variants,
            workload: workload(old.workload),
            controls: old
                .controls
                .into_iter()
                .map(|c| ControlRecord {
                    name: c.name,
                    set: c.set,
                    workload: workload(c.workload),
                })
                .collect(),
            protocol: Protocol {
                boots: old.protocol.boots,
                order_seed: old.protocol.order_seed,
                warmups: old.protocol.warmups,
                samples: old.protocol.samples,
                layouts: Default::default(),
                sequential: None,
            },
            boots: old
                .boots
                .into_iter()
                .map(|b| Boot {
                    index: b.index,
                    label: b.label,
                    variant: b.variant,
                    layout: None,
                    initramfs_sha256: b.initramfs_sha256,
                    console_log: b.console_log,
                    facts: b.facts,
                    warmups: b.warmups.into_iter().map(Into::into).collect(),
                    samples: b.samples.into_iter().map(Into::into).collect(),
                    hello_seconds: b.hello_seconds,
                    total_seconds: b.total_seconds,
                    failure: None,
                    replayed: false,
                    pinned: None,
                    complete: b.complete,
                })
                .collect(),
            timings: old.timings,
            judgement: None,
            reach: None,
            boots_wall_seconds: None,
            shard: None,
        }
    }
}
