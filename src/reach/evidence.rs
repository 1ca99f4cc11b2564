//! What a committed run saw the base kernel execute: from a results
//! document's base boots (variants applying none of the series), the
//! symbols of its cost-lane profiles (modeled cycles per kernel symbol, in
//! every marked phase) and the function its function profiler counted
//! (`facts.profiled_symbol`, counted by the metric the campaign names).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::results::Results;

/// How a run saw a function run on the base kernel.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// In the cost lane's profiles: modeled cycles summed over `samples`
    /// base samples.
    Profile { cycles: u64, samples: usize },
    /// Counted by the function profiler: `metric`'s mean per base sample.
    Counted { metric: String, per_sample: f64 },
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Seen::Profile { cycles, samples } => write!(
                f,
                "in the cost profile, {} modeled cycles a sample on the base",
                cycles / (*samples).max(1) as u64
            ),
            Seen::Counted { metric, per_sample } => write!(
                f,
                "counted by the function profiler, {metric} {per_sample:.1} a sample on the base"
            ),
        }
    }
}

/// One committed run, read.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceFile {
    /// The results.json as the campaign names it, resolved.
    pub path: PathBuf,
    /// Whether its base samples carry cost-lane profiles (so that a
    /// function with a symbol of its own would show in them).
    pub profiled: bool,
    /// Symbol (without a `.part.0`-style suffix) → how it was seen.
    pub symbols: BTreeMap<String, Seen>,
    /// The function profiler's function and its mean count, even when 0.
    pub counted: Option<(String, Seen)>,
}

/// Why a campaign's evidence cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("campaign {campaign}: evidence {}", path.display())]
    Results {
        campaign: String,
        path: PathBuf,
        #[source]
        source: crate::results::ResultsError,
    },
    #[error("campaign {campaign}: evidence {} is a run of campaign {found:?}, not of this one", path.display())]
    Foreign {
        campaign: String,
        path: PathBuf,
        found: String,
    },
    #[error("campaign {campaign}: evidence {} has no base boot with samples", path.display())]
    NoBase { campaign: String, path: PathBuf },
    #[error("campaign {campaign}: evidence {} names `calls: {metric}`, but its base boots have no profiled symbol or no such metric", path.display())]
    NoCount {
        campaign: String,
        path: PathBuf,
        metric: String,
    },
}

/// A symbol's name as a function's: `foo.part.0`, `foo.isra.0` and
/// `foo.cold` are GCC's copies of `foo`.
pub fn function_of_symbol(symbol: &str) -> &str {
    symbol.split('.').next().unwrap_or(symbol)
}

/// Read `path`, a run of `campaign`; `calls` names the metric counting its
/// profiled symbol, if it has one.
pub fn read(
    campaign: &str,
    path: &Path,
    calls: Option<&str>,
) -> Result<EvidenceFile, EvidenceError> {
    let results = Results::load(path).map_err(|source| EvidenceError::Results {
        campaign: campaign.into(),
        path: path.to_owned(),
        source,
    })?;
    if results.campaign != campaign {
        return Err(EvidenceError::Foreign {
            campaign: campaign.into(),
            path: path.to_owned(),
            found: results.campaign,
        });
    }
    of_results(campaign, path, &results, calls)
}

/// [`read`] on a document already loaded.
pub fn of_results(
    campaign: &str,
    path: &Path,
    results: &Results,
    calls: Option<&str>,
) -> Result<EvidenceFile, EvidenceError> {
    let base: Vec<&str> = results
        .variants
        .iter()
        .filter(|v| v.patches == 0)
        .map(|v| v.name.as_str())
        .collect();
    let boots: Vec<_> = results
        .boots
        .iter()
        .filter(|b| b.complete && base.contains(&b.variant.as_str()))
        .collect();
    let samples: Vec<_> = boots.iter().flat_map(|b| b.samples_of(None)).collect();
    if samples.is_empty() {
        return Err(EvidenceError::NoBase {
            campaign: campaign.into(),
            path: path.to_owned(),
        });
    }
    let mut cycles: BTreeMap<String, u64> = BTreeMap::new();
    let mut profiled = 0;
    for s in &samples {
        if !s.profile.is_empty() {
            profiled += 1;
        }
        for phase in s.profile.values() {
            for (symbol, c) in phase {
                *cycles
                    .entry(function_of_symbol(symbol).to_string())
                    .or_default() += c;
            }
        }
    }
    let mut symbols: BTreeMap<String, Seen> = cycles
        .into_iter()
        .filter(|(_, c)| *c > 0)
        .map(|(symbol, cycles)| {
            (
                symbol,
                Seen::Profile {
                    cycles,
                    samples: profiled,
                },
            )
        })
        .collect();
    let counted = match calls {
        None => None,
        Some(metric) => {
            let symbol = boots
                .iter()
                .find_map(|b| b.facts.as_ref().and_then(|f| f.profiled_symbol.clone()));
            let values: Vec<u64> = samples
                .iter()
                .filter_map(|s| s.metrics.get(metric).copied())
                .collect();
            let (Some(symbol), false) = (symbol, values.is_empty()) else {
                return Err(EvidenceError::NoCount {
                    campaign: campaign.into(),
                    path: path.to_owned(),
                    metric: metric.into(),
                });
            };
            let per_sample = values.iter().sum::<u64>() as f64 / values.len() as f64;
            let seen = Seen::Counted {
                metric: metric.into(),
                per_sample,
            };
            if per_sample > 0.0 {
                symbols.insert(symbol.clone(), seen.clone());
            }
            Some((symbol, seen))
        }
    };
    Ok(EvidenceFile {
        path: path.to_owned(),
        profiled: profiled > 0,
        symbols,
        counted,
    })
}

impl EvidenceFile {
    /// How this run saw `function` run on the base, if it did. A system
    /// call `sys_x` is seen as any of its entry symbols.
    pub fn saw(&self, function: &str) -> Option<&Seen> {
        if let Some(seen) = self.symbols.get(function) {
            return Some(seen);
        }
        let call = function.strip_prefix("sys_")?;
        ["__x64_sys_", "__do_sys_", "__se_sys_"]
            .iter()
            .find_map(|p| self.symbols.get(&format!("{p}{call}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_file(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
    }

    #[test]
    fn the_smoke_run_counted_do_flush_stats_on_the_base() {
        let path = repo_file("results/smoke/results.json");
        let e = read("smoke", &path, Some("pageout_flushes")).unwrap();
        let Some(Seen::Counted { per_sample, .. }) = e.saw("do_flush_stats") else {
            panic!("{:?}", e.counted)
        };
        assert!(*per_sample >= 8192.0, "{per_sample}");
        assert!(!e.profiled);
    }

    #[test]
    fn a_cost_run_saw_every_profiled_symbol_of_its_base_boots() {
        let path = repo_file("results/seeds/003-reclaim-refault-cost/results.json");
        let e = read("seed-003-reclaim-refault-cost", &path, None).unwrap();
        assert!(e.profiled);
        assert!(matches!(
            e.saw("mem_cgroup_css_rstat_flush"),
            Some(Seen::Profile { cycles, samples: 6 }) if *cycles > 0
        ));
        assert_eq!(e.saw("no_such_function_here"), None);
    }

    #[test]
    fn a_run_of_another_campaign_is_refused_naming_both() {
        let path = repo_file("results/smoke/results.json");
        let err = read("seed-000-counter", &path, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a run of campaign \"smoke\""), "{err}");
        let err = read("smoke", &path, Some("no_such_metric"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("calls: no_such_metric"), "{err}");
    }

    #[test]
    fn gcc_copies_are_their_function() {
        assert_eq!(
            function_of_symbol("mem_cgroup_css_rstat_flush.part.0"),
            "mem_cgroup_css_rstat_flush"
        );
        assert_eq!(function_of_symbol("zswap_store"), "zswap_store");
    }
}
