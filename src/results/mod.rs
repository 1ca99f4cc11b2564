//! The results model: one versioned document, `results.json`, written
//! atomically after every sample. Every report is a rendering of it.
//!
//! The document is made of types of its own ([`record`], [`comparison`]),
//! converted at the edge from the build's, the guest protocol's, the
//! workload's and the statistics' types, so that none of those can change
//! the published format by accident. The format is documented in
//! `docs/results-schema.md`; bump [`SCHEMA_VERSION`] on any incompatible
//! change, and keep reading the old ones ([`v2`]).

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod compares;
pub mod comparison;
mod document;
pub mod history;
pub mod hostfacts;
pub mod hunt;
pub mod judgement;
pub mod merge;
pub mod record;
mod v2;

pub use compares::{Compares, DIAGNOSTIC_PREFIX, Turned, What};
pub use comparison::{ComparisonRecord, ToDecideRecord, VerdictRecord};
pub use document::{Results, SCHEMA_VERSION, cpu_model};
pub use hostfacts::HostFactsRecord;
pub use judgement::{HeadlineRecord, JudgementRecord, SelfCheckRecord, UncomparedRecord};
pub use record::*;

/// A results document that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a results document (at byte {offset}, line {line}, column {column})", path.display())]
    Parse {
        path: PathBuf,
        offset: usize,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} has results schema {found}; this patchbench reads schemas 1 to {SCHEMA_VERSION}", path.display())]
    Schema { path: PathBuf, found: u64 },
    /// A renderer that publishes was given a document with no judgement:
    /// it renders what `judge` stored, and there is nothing stored.
    #[error("{} holds no judgement (a shard, a run cut short, or a schema before 4); judge it first: patchbench judge {}", path.display(), path.display())]
    Unjudged { path: PathBuf },
    /// The output directory holds results of another campaign, or of
    /// other kernels: resuming into it would mix two experiments.
    #[error("{} holds results of a different campaign, protocol or kernels; resume only with the same campaign and series, or choose another --out", path.display())]
    Foreign { path: PathBuf },
    /// Its boots brought another set of CPUs online than this run's would
    /// (`run --online`, or `vm.cpus.online`, changed in between).
    #[error("{} was measured with CPUs {earlier} online, and this run would bring {now} online; resume with the same --online (or vm.cpus.online), or choose another --out", path.display())]
    OtherCpus {
        path: PathBuf,
        earlier: String,
        now: String,
    },
}

impl Results {
    /// Read a document of any schema this version knows, as today's.
    pub fn load(path: &Path) -> Result<Results, ResultsError> {
        let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let parse_error = |source: serde_json::Error| {
            let (line, column) = (source.line(), source.column());
            ResultsError::Parse {
                path: path.to_owned(),
                offset: byte_offset(&text, line, column),
                line,
                column,
                source,
            }
        };
        #[derive(Deserialize)]
        struct Version {
            schema_version: u64,
        }
        let version: Version = serde_json::from_str(&text).map_err(parse_error)?;
        match version.schema_version {
            // Schema 4 stored the lane as its parts, which `Host` reads.
            4 | 5 => serde_json::from_str(&text)
                .map(|r: Results| Results {
                    schema_version: SCHEMA_VERSION,
                    ..r
                })
                .map_err(parse_error),
            // Schema 3 stored its comparisons under the rules of their
            // day; they are dropped, and the document loads unjudged.
            3 => {
                let mut value: serde_json::Value =
                    serde_json::from_str(&text).map_err(parse_error)?;
                if let Some(doc) = value.as_object_mut() {
                    doc.remove("comparisons");
                    doc.insert("schema_version".into(), SCHEMA_VERSION.into());
                }
                serde_json::from_value(value).map_err(parse_error)
            }
            1 | 2 => serde_json::from_str::<v2::ResultsV2>(&text)
                .map(Results::from)
                .map_err(parse_error),
            found => Err(ResultsError::Schema {
                path: path.to_owned(),
                found,
            }),
        }
    }
}

/// The byte offset of serde_json's 1-based `line` and `column` in `text`
/// (column 0, as for an unexpected end, is the line's start).
fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    pub(crate) fn fixture_path() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json")
    }

    /// The stored smoke run (schema 2), as today's model.
    pub(crate) fn fixture() -> Results {
        Results::load(&fixture_path()).unwrap()
    }

    /// The stored smoke run with a control `unlimited` whose samples are the
    /// main ones, tagged, with B's `pageout_cpu_ns` about `b_pageout_ns` when
    /// given.
    pub(crate) fn with_control(b_pageout_ns: Option<u64>) -> Results {
        let mut results = fixture();
        let mut workload = results.workload.clone();
        workload.params.insert("zswap_max".into(), "max".into());
        results.controls.push(ControlRecord {
            name: "unlimited".into(),
            set: [("zswap_max".to_string(), "max".to_string())].into(),
            workload,
        });
        for boot in &mut results.boots {
            let tagged: Vec<SampleRecord> = boot
                .samples
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    s.condition = Some("unlimited".into());
                    if let ("B", Some(ns)) = (boot.variant.as_str(), b_pageout_ns) {
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

    /// The stored smoke run as if measured in the cost lane: every sample
    /// has `pageout_`/`verify_` cost metrics and profiles. B's flush
    /// (`do_flush_stats`, 300 M cycles a sample in A) is gone, and its
    /// `mod_memcg_state` costs 1 M more; `verify` is the same in both.
    pub(crate) fn cost_lane() -> Results {
        let mut results = fixture();
        results.host.cost_model = Some("skylake-client".into());
        results.host.lane = crate::model::Lane::Cost;
        results.host.accel_reason = "cost model: TCG forced (single-threaded, -icount shift=0,sleep=off, so that the modeled counts repeat); KVM is not usable here anyway: /dev/kvm: No such file".into();
        for boot in &mut results.boots {
            let b = boot.variant == "B";
            for s in &mut boot.samples {
                let i = u64::from(s.index);
                let pageout: BTreeMap<String, u64> = [
                    ("do_flush_stats", if b { 0 } else { 300_000_000 + i * 1000 }),
                    ("lzo1x_1_do_compress_safe", 330_000_000),
                    ("mod_memcg_state", if b { 2_000_000 } else { 1_000_000 }),
                    ("user", 10_000),
                ]
                .into_iter()
                .filter(|(_, c)| *c > 0)
                .map(|(k, c)| (k.to_string(), c))
                .collect();
                let verify: BTreeMap<String, u64> = [("user".to_string(), 50_000_000)].into();
                let cycles: u64 = pageout.values().sum();
                s.metrics.insert("pageout_modeled_cycles".into(), cycles);
                s.metrics.insert("pageout_insns".into(), cycles / 2);
                s.metrics
                    .insert("verify_modeled_cycles".into(), 50_000_000 + i);
                s.profile = [
                    ("pageout".to_string(), pageout),
                    ("verify".to_string(), verify),
                ]
                .into();
            }
        }
        results
    }

    /// [`cost_lane`] with each sample's split of its `pageout` profile:
    /// the flush (`do_flush_stats`) a fifth instructions, 8192 PAUSEs at
    /// 139 cycles beyond one each, the rest misses; every other symbol
    /// instructions alone.
    pub(crate) fn cost_lane_with_splits() -> Results {
        use crate::model::profile::{Class, ClassCounts, CycleSplit};
        let mut results = cost_lane();
        for boot in &mut results.boots {
            for s in &mut boot.samples {
                let split = s.profile["pageout"]
                    .iter()
                    .map(|(symbol, &cycles)| {
                        let mut classes = ClassCounts::default();
                        let split = if symbol == "do_flush_stats" {
                            classes.add(Class::Pause, 8192);
                            CycleSplit {
                                insns: cycles / 5,
                                class_cycles: 8192 * 139,
                                classes,
                            }
                        } else {
                            CycleSplit {
                                insns: cycles,
                                class_cycles: 0,
                                classes,
                            }
                        };
                        (symbol.clone(), split)
                    })
                    .collect();
                s.split = [("pageout".to_string(), split)].into();
            }
        }
        results
    }

    /// A per-patch run made from the stored smoke run: variants base, p1,
    /// p2, p3 in boots base/p1/p2/p3/base', three samples each. p2 (the
    /// counter) drops PAGEOUT CPU by 20% and the flushes to 0; p1 and p3
    /// change nothing.
    pub(crate) fn per_patch() -> Results {
        let mut results = fixture();
        let kernel = results.variants[0].kernel.clone();
        let subjects = ["mm: first", "mm: memcg: the counter", "mm: third"];
        results.series.patches = (0..3)
            .map(|i| PatchInfo {
                subject: subjects[i].into(),
                ..results.series.patches[0].clone()
            })
            .collect();
        results.variants = ["base", "p1", "p2", "p3"]
            .iter()
            .enumerate()
            .map(|(i, name)| VariantRecord {
                name: name.to_string(),
                description: if i == 0 {
                    "the base".into()
                } else {
                    format!("+ patch {i}/3: {}", subjects[i - 1])
                },
                patches: i,
                fragments: Vec::new(),
                cmdline: Vec::new(),
                settings: Default::default(),
                kernel: KernelRecord {
                    bzimage_sha256: format!("{i}"),
                    ..kernel.clone()
                },
            })
            .collect();
        let order = ["base", "p1", "p2", "p3", "base"];
        let template = results.boots[0].clone();
        results.boots = order
            .iter()
            .enumerate()
            .map(|(index, variant)| {
                let counter = matches!(*variant, "p2" | "p3");
                let samples = (0..3u32)
                    .map(|s| SampleRecord {
                        index: s,
                        condition: None,
                        metrics: [
                            (
                                "pageout_cpu_ns".to_string(),
                                if counter { 80_000_000 } else { 100_000_000 }
                                    + u64::from(s) * 100_000
                                    + index as u64 * 10_000,
                            ),
                            (
                                "pageout_flushes".to_string(),
                                if counter { 0 } else { 8192 + u64::from(s) },
                            ),
                        ]
                        .into(),
                        profile: Default::default(),
                        split: Default::default(),
                    })
                    .collect();
                Boot {
                    index,
                    label: crate::model::boot_label(&order, index),
                    variant: variant.to_string(),
                    samples,
                    warmups: Vec::new(),
                    ..template.clone()
                }
            })
            .collect();
        results.protocol.boots = order.iter().map(|s| s.to_string()).collect();
        results
    }

    #[test]
    fn a_schema_2_document_loads_as_today_s() {
        let results = fixture();
        assert_eq!(results.schema_version, SCHEMA_VERSION);
        assert_eq!(results.baseline(), "A");
        let names: Vec<_> = results.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["A", "B"]);
        assert_eq!(results.variants[1].kernel.objects_rebuilt, 35);
        assert_eq!(results.workload.kind, "zswap-pageout");
        assert_eq!(results.workload.params["zswap_max"], "67108864");
        assert_eq!(results.workload.params["memory_max"], "max");
        assert_eq!(results.protocol.boots, ["A", "B", "A"]);
        assert_eq!(results.boots[0].samples.len(), 3);
        assert!(results.judgement.is_none(), "judged again, not carried");
    }

    #[test]
    fn a_truncated_document_is_refused_naming_the_file_and_the_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let text = std::fs::read_to_string(fixture_path()).unwrap();
        std::fs::write(&path, &text[..1000]).unwrap();
        let err = Results::load(&path).unwrap_err();
        let ResultsError::Parse { offset, .. } = &err else {
            panic!("{err}")
        };
        // The end of the text, give or take the last token.
        assert!((990..=1000).contains(offset), "{err}");
        let message = err.to_string();
        assert!(
            message.contains(&path.display().to_string())
                && message.contains(&format!("at byte {offset}")),
            "{message}"
        );
        std::fs::write(&path, r#"{"schema_version": 9}"#).unwrap();
        let err = Results::load(&path).unwrap_err().to_string();
        assert!(err.contains("schema 9"), "{err}");
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

    /// `results` saved to a file and loaded back, with the file's text.
    fn saved_and_loaded(results: &Results) -> (Results, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        results.save(&path).unwrap();
        (
            Results::load(&path).unwrap(),
            std::fs::read_to_string(&path).unwrap(),
        )
    }

    #[test]
    fn resuming_never_mixes_fixed_and_varied_layouts() {
        let fixed = fixture();
        let mut varied = fixed.clone();
        varied.protocol.layouts = crate::model::Layouts::Varied;
        for (boot, layout) in varied.boots.iter_mut().zip(1..) {
            boot.layout = Some(layout);
        }
        assert!(varied.can_resume_from(&varied));
        assert!(!varied.can_resume_from(&fixed));
        assert!(!fixed.can_resume_from(&varied));
        // Both round-trip; a fixed document writes neither field.
        let (back, _) = saved_and_loaded(&varied);
        assert_eq!(back.protocol.layouts, crate::model::Layouts::Varied);
        assert_eq!(back.boots[1].layout, Some(2));
        let (_, text) = saved_and_loaded(&fixed);
        assert!(!text.contains("layout"), "{text}");
    }

    #[test]
    fn resuming_never_mixes_the_cost_lane_with_another() {
        let cost = cost_lane();
        let plain = fixture();
        assert!(cost.can_resume_from(&cost));
        assert!(!cost.can_resume_from(&plain));
        assert!(!plain.can_resume_from(&cost));
        // Profiles and the model survive a round trip; a plain document
        // writes neither.
        let (back, _) = saved_and_loaded(&cost);
        assert_eq!(back.host.cost_model.as_deref(), Some("skylake-client"));
        assert_eq!(back.boots[0].samples, cost.boots[0].samples);
        let (_, text) = saved_and_loaded(&plain);
        assert!(!text.contains(r#""cost_model""#) && !text.contains(r#""profile""#));
    }

    #[test]
    fn byte_offsets_count_from_the_start_of_the_text() {
        assert_eq!(byte_offset("ab\ncd", 2, 2), 4);
        assert_eq!(byte_offset("ab\ncd", 1, 0), 0);
        assert_eq!(byte_offset("ab", 5, 9), 2);
    }
}
