//! The steal-time rule (docs/statistics.md, "Steal time under KVM"): a
//! sample whose guest lost more than [`STEAL_LIMIT_PERCENT`] of its
//! wall-clock time to the host is flagged.
//!
//! Under KVM a vCPU is a host thread, and while the host runs something
//! else on its core the guest's clocks run on. With
//! `CONFIG_PARAVIRT_TIME_ACCOUNTING` (kconfigs/cputime.config) the task's
//! CPU time leaves that out; its wall-clock time, the reclaim daemons'
//! work it waited on and the cache it comes back to do not. The threshold
//! was set before any KVM sample was seen: the verdicts' band is ±2%
//! (`noise_pct`), and steal of half the band would move a wall-clock
//! figure by half of what the band tolerates, so it is flagged at 1%.
//! Steal is summed over the vCPUs, which the threshold compares with one
//! wall-clock time: with several vCPUs it flags early, never late.

use std::collections::BTreeMap;

use super::WorkloadSpec;

/// Steal above this share of a sample's wall-clock time flags the sample.
pub const STEAL_LIMIT_PERCENT: f64 = 1.0;

/// The metric every workload's samples carry: the whole guest's steal
/// time across the sample (the agent's `cpustat`).
pub const STEAL_METRIC: &str = "guest_steal_ns";

/// Why a sample whose guest lost `steal_ns` of its `wall_ns` wall-clock
/// time to the host is suspect; `None` when the share is within
/// [`STEAL_LIMIT_PERCENT`].
pub fn steal_flag(steal_ns: u64, wall_ns: u64) -> Option<String> {
    if steal_ns == 0 {
        return None;
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    if wall_ns == 0 {
        return Some(format!(
            "the host stole {:.1} ms from the guest in a sample of no wall-clock time",
            ms(steal_ns)
        ));
    }
    let percent = steal_ns as f64 * 100.0 / wall_ns as f64;
    (percent > STEAL_LIMIT_PERCENT).then(|| {
        format!(
            "the host stole {:.1} ms from the guest, {percent:.1}% of the sample's {:.1} ms \
             (above {STEAL_LIMIT_PERCENT}%): something else ran on its vCPUs' cores",
            ms(steal_ns),
            ms(wall_ns)
        )
    })
}

impl WorkloadSpec {
    /// [`steal_flag`] of a sample's metrics: its [`STEAL_METRIC`] against
    /// the spec's [`WorkloadSpec::wall`] metric. `None` when either is
    /// absent (an agent before protocol 6).
    pub fn steal_flag(&self, metrics: &BTreeMap<String, u64>) -> Option<String> {
        steal_flag(*metrics.get(STEAL_METRIC)?, *metrics.get(&self.wall)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Scope, Unit, spec_for_kind};

    #[test]
    fn steal_above_one_percent_of_the_wall_time_is_flagged() {
        // (steal, wall, flagged)
        let cases = [
            (0, 1_000_000_000, false),
            (0, 0, false),
            // Exactly 1%: within.
            (10_000_000, 1_000_000_000, false),
            (10_000_001, 1_000_000_000, true),
            (20_000_000, 1_000_000_000, true),
            (10_000_000, 0, true),
        ];
        for (steal, wall, flagged) in cases {
            assert_eq!(
                steal_flag(steal, wall).is_some(),
                flagged,
                "{steal} of {wall}"
            );
        }
        assert_eq!(
            steal_flag(20_000_000, 1_000_000_000).unwrap(),
            "the host stole 20.0 ms from the guest, 2.0% of the sample's 1000.0 ms \
             (above 1%): something else ran on its vCPUs' cores"
        );
    }

    #[test]
    fn every_spec_names_a_wall_clock_metric_and_carries_steal() {
        for kind in [
            "zswap-pageout",
            "rstat-flush",
            "reclaim-refault",
            "kernel-build",
        ] {
            let spec = spec_for_kind(kind).unwrap();
            let wall = spec.metrics.iter().find(|m| m.name == spec.wall);
            let wall = wall.unwrap_or_else(|| panic!("{kind}: no metric {}", spec.wall));
            assert!(
                wall.unit == Unit::Ns && wall.scope == Scope::Elapsed,
                "{kind}: {} is not a wall-clock time",
                spec.wall
            );
            assert!(
                spec.metrics.iter().any(|m| m.name == STEAL_METRIC),
                "{kind}"
            );
            let metrics = BTreeMap::from([
                (spec.wall.clone(), 1_000_000_000),
                (STEAL_METRIC.to_string(), 30_000_000),
            ]);
            assert!(spec.steal_flag(&metrics).is_some(), "{kind}");
            assert_eq!(spec.steal_flag(&BTreeMap::new()), None, "{kind}");
        }
    }
}
