//! Combining the results of a campaign's shards (`run --shard`, one per
//! runner) into one document, as if one runner had run every boot: the
//! same campaign, kernels (by sha256), protocol and lane in every shard,
//! every boot of every round present once, and nothing else. Pure: the
//! caller reads the files and judges the merged document.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{HostNoise, Results};

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge: give the results of every shard")]
    Empty,
    #[error("{} is not a shard's results (it has no `shard`: a whole run, or a merged one)", path.display())]
    NotShard { path: PathBuf },
    #[error(
        "{} is not a shard of the same experiment as {}: its {what} differs{}",
        path.display(),
        first.display(),
        detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default()
    )]
    Mismatch {
        path: PathBuf,
        first: PathBuf,
        what: &'static str,
        detail: Option<String>,
    },
    #[error("boot {label} (place {index}) is in both {} and {}", first.display(), second.display())]
    Duplicate {
        label: String,
        index: usize,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(
        "boot {label} (place {index}, round {round}) is in no shard, or did not finish{}: run that shard again (`run --shard ... --round {round}` with the same --out resumes it)",
        failure.as_ref().map(|f| format!(" ({f})")).unwrap_or_default()
    )]
    Missing {
        label: String,
        index: usize,
        round: u32,
        failure: Option<String>,
    },
}

/// The merged document, and each round's wall time (the slowest shard of
/// that round's), in order.
pub fn merge(shards: Vec<(PathBuf, Results)>) -> Result<(Results, Vec<f64>), MergeError> {
    let mut shards = shards.into_iter();
    let (first_path, first) = shards.next().ok_or(MergeError::Empty)?;
    let Some(first_shard) = first.shard else {
        return Err(MergeError::NotShard { path: first_path });
    };
    let kernels = |r: &Results| {
        r.variants
            .iter()
            .map(|v| (v.name.clone(), v.kernel.bzimage_sha256.clone()))
            .collect::<Vec<_>>()
    };
    let mut merged = first.clone();
    let mut from: BTreeMap<usize, PathBuf> = BTreeMap::new();
    let mut walls: BTreeMap<u32, f64> = BTreeMap::new();
    let mut noise: Vec<f64> = Vec::new();
    let mut take = |path: &PathBuf, r: &Results, merged: &mut Results| -> Result<(), MergeError> {
        let shard = r.shard.expect("checked");
        let wall = walls.entry(shard.round).or_insert(0.0);
        *wall = wall.max(r.boots_wall_seconds.unwrap_or_default());
        if let Some(n) = &r.host.noise {
            noise.extend(&n.samples_ms);
        }
        for boot in r.boots.iter().filter(|b| b.complete) {
            if let Some(other) = from.get(&boot.index) {
                return Err(MergeError::Duplicate {
                    label: boot.label.clone(),
                    index: boot.index,
                    first: other.clone(),
                    second: path.clone(),
                });
            }
            from.insert(boot.index, path.clone());
            merged.boots.push(boot.clone());
        }
        // Each runner's stages, one after another.
        merged.timings.extend(r.timings.iter().cloned());
        if r.protocol.boots.len() > merged.protocol.boots.len() {
            merged.protocol.boots = r.protocol.boots.clone();
        }
        if r.started_at < merged.started_at {
            merged.started_at = r.started_at;
        }
        Ok(())
    };
    merged.boots.clear();
    merged.timings.clear();
    take(&first_path, &first, &mut merged)?;
    let mut incomplete: Vec<super::Boot> = first
        .boots
        .iter()
        .filter(|b| !b.complete)
        .cloned()
        .collect();
    for (path, r) in shards {
        let mismatch = |what, detail: Option<String>| MergeError::Mismatch {
            path: path.clone(),
            first: first_path.clone(),
            what,
            detail,
        };
        let Some(shard) = r.shard else {
            return Err(MergeError::NotShard { path });
        };
        if r.campaign != first.campaign {
            return Err(mismatch(
                "campaign",
                Some(format!("{} against {}", r.campaign, first.campaign)),
            ));
        }
        if kernels(&r) != kernels(&first) {
            return Err(mismatch("kernels (their sha256)", None));
        }
        if !first.protocol.resumable_from(&r.protocol)
            && !r.protocol.resumable_from(&first.protocol)
        {
            return Err(mismatch("protocol", None));
        }
        if r.workload != first.workload || r.controls != first.controls {
            return Err(mismatch("workload", None));
        }
        if (r.host.lane, &r.host.cost_model) != (first.host.lane, &first.host.cost_model) {
            return Err(mismatch("lane", None));
        }
        if r.patchbench_version != first.patchbench_version {
            return Err(mismatch(
                "patchbench version",
                Some(format!(
                    "{} against {}",
                    r.patchbench_version, first.patchbench_version
                )),
            ));
        }
        if shard.of != first_shard.of {
            return Err(mismatch(
                "shard count",
                Some(format!("{} shards against {}", shard.of, first_shard.of)),
            ));
        }
        take(&path, &r, &mut merged)?;
        incomplete.extend(r.boots.iter().filter(|b| !b.complete).cloned());
    }
    // Every boot of every round up to the last one run.
    let rounds = walls.keys().copied().max().unwrap_or(1);
    let per_round = merged.protocol.boots.len() / rounds.max(1) as usize;
    for index in 0..per_round * rounds as usize {
        if !from.contains_key(&index) {
            let failed = incomplete.iter().find(|b| b.index == index);
            return Err(MergeError::Missing {
                label: failed.map_or_else(|| format!("#{index}"), |b| b.label.clone()),
                index,
                round: (index / per_round.max(1)) as u32 + 1,
                failure: failed.and_then(|b| b.failure.as_ref().map(|f| f.what.clone())),
            });
        }
    }
    merged.boots.sort_by_key(|b| b.index);
    merged.shard = None;
    merged.judgement = None;
    merged.host.noise = (!noise.is_empty()).then(|| HostNoise {
        method: first
            .host
            .noise
            .as_ref()
            .map_or_else(String::new, |n| n.method.clone()),
        samples_ms: noise,
    });
    let round_walls: Vec<f64> = (1..=rounds)
        .map(|r| walls.get(&r).copied().unwrap_or_default())
        .collect();
    merged.boots_wall_seconds = Some(round_walls.iter().sum());
    Ok((merged, round_walls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Shard;

    /// The stored smoke run (A, B, A') dealt into `of` shards, as `run
    /// --shard` would have written them.
    fn shards(of: u32) -> Vec<(PathBuf, Results)> {
        let whole = crate::results::tests::fixture();
        (1..=of)
            .map(|index| {
                let shard = Shard {
                    index,
                    of,
                    round: 1,
                };
                let mine = shard.boots(whole.boots.len());
                let mut r = whole.clone();
                r.shard = Some(shard);
                r.boots.retain(|b| mine.contains(&b.index));
                r.boots_wall_seconds = Some(10.0 * f64::from(index));
                (PathBuf::from(format!("s{index}/results.json")), r)
            })
            .collect()
    }

    #[test]
    fn shards_merge_into_the_whole_run() {
        let whole = crate::results::tests::fixture();
        let mut given = shards(2);
        given.reverse();
        let (merged, walls) = merge(given).unwrap();
        assert_eq!(merged.shard, None);
        let labels: Vec<&str> = merged.boots.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["A", "B", "A'"]);
        for (m, w) in merged.boots.iter().zip(&whole.boots) {
            assert_eq!(m.samples, w.samples);
        }
        // The round took as long as its slowest shard.
        assert_eq!(walls, [20.0]);
        assert_eq!(merged.boots_wall_seconds, Some(20.0));
    }

    #[test]
    fn a_shard_of_other_kernels_another_protocol_or_twice_is_refused() {
        let mut other_kernel = shards(2);
        other_kernel[1].1.variants[1].kernel.bzimage_sha256 = "0".repeat(64);
        let err = merge(other_kernel).unwrap_err().to_string();
        assert!(err.contains("kernels (their sha256)"), "{err}");
        let mut other_protocol = shards(2);
        other_protocol[1].1.protocol.samples = 9;
        let err = merge(other_protocol).unwrap_err().to_string();
        assert!(err.contains("protocol"), "{err}");
        let mut twice = shards(2);
        twice.push(twice[0].clone());
        let err = merge(twice).unwrap_err().to_string();
        assert!(err.contains("is in both"), "{err}");
        let mut missing = shards(3);
        missing.remove(1);
        let err = merge(missing).unwrap_err().to_string();
        assert!(err.contains("boot #1") && err.contains("round 1"), "{err}");
        let mut whole = shards(1);
        whole[0].1.shard = None;
        let err = merge(whole).unwrap_err().to_string();
        assert!(err.contains("is not a shard"), "{err}");
    }
}
