//! The guest's swap counters, read around a sample: `/proc/vmstat`'s
//! pswpin and pswpout (pages; a large folio counts all its pages), and the
//! mTHP per-size stats under
//! `/sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/stats/` (large
//! folios faulted in, swapped out whole, split before swap-out). Both are
//! global: the guest runs nothing but the workload. 6.12 has no per-size
//! swap-in counter; pswpin against the faults that swapped in gives the
//! mean folio size.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Context, Error, Result, bail};
use crate::files;
use crate::pageout::{read_stat, source_delta as delta};

const VMSTAT: &str = "/proc/vmstat";
const MTHP: &str = "/sys/kernel/mm/transparent_hugepage";
/// The mTHP sizes whose swap-outs are reported one by one: the ones seed
/// 004 enables.
const MTHP_SWPOUT_SIZES: [u32; 3] = [16, 32, 64];

/// One reading of the swap counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwapCounters {
    pub vmstat: BTreeMap<String, u64>,
    /// Summed over sizes as `<counter>`, per size as `<counter>@<KiB>`.
    pub mthp: BTreeMap<String, u64>,
}

impl SwapCounters {
    pub fn read() -> Result<SwapCounters> {
        Ok(SwapCounters {
            vmstat: read_stat(Path::new(VMSTAT))?,
            mthp: read_mthp(Path::new(MTHP))?,
        })
    }
}

/// Every `hugepages-<N>kB/stats/<counter>` under `root` ([`MTHP`]), summed
/// over the sizes as `<counter>` and kept per size as `<counter>@<N>`. A
/// size without a counter's file is skipped for that counter: 6.12 gives
/// the sizes only anonymous memory can have (16 KiB and up) the anonymous
/// stats, and 8 KiB (shmem only) none of them.
fn read_mthp(root: &Path) -> Result<BTreeMap<String, u64>> {
    let entries = std::fs::read_dir(root).with_context(|| {
        format!(
            "reading {} (a kernel without CONFIG_TRANSPARENT_HUGEPAGE has no mTHP stats)",
            root.display()
        )
    })?;
    let mut out = BTreeMap::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", root.display()))?;
        let name = entry.file_name();
        let Some(kib) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hugepages-"))
            .and_then(|n| n.strip_suffix("kB"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        for counter in ["anon_fault_alloc", "swpout", "swpout_fallback"] {
            let path = entry.path().join("stats").join(counter);
            if !path.exists() {
                continue;
            }
            let value: u64 = files::read_value(&path)?
                .parse()
                .map_err(|_| Error::msg(format!("{} is not a count", path.display())))?;
            *out.entry(counter.to_string()).or_insert(0) += value;
            out.insert(format!("{counter}@{kib}"), value);
        }
    }
    if out.is_empty() {
        bail!(
            "{} has no hugepages-<size>kB/stats with anonymous counters",
            root.display()
        );
    }
    Ok(out)
}

/// A sample's swap metrics: pswpin, pswpout, mthp_fault_alloc,
/// mthp_swpout, mthp_swpout_fallback (summed over sizes) and
/// mthp_swpout_<N>k for 16, 32 and 64 KiB.
pub fn metrics(before: &SwapCounters, after: &SwapCounters) -> Result<BTreeMap<String, u64>> {
    let vm = |name| delta(VMSTAT, name, &before.vmstat, &after.vmstat);
    let mthp = |name: &str| delta("the mTHP stats", name, &before.mthp, &after.mthp);
    let mut metrics = BTreeMap::from([
        ("pswpin".to_string(), vm("pswpin")?),
        ("pswpout".to_string(), vm("pswpout")?),
        ("mthp_fault_alloc".to_string(), mthp("anon_fault_alloc")?),
        ("mthp_swpout".to_string(), mthp("swpout")?),
        ("mthp_swpout_fallback".to_string(), mthp("swpout_fallback")?),
    ]);
    for kib in MTHP_SWPOUT_SIZES {
        metrics.insert(
            format!("mthp_swpout_{kib}k"),
            mthp(&format!("swpout@{kib}"))?,
        );
    }
    Ok(metrics)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Counters whose every value is a multiple of `scale`: pswpin 40,
    /// pswpout 50; each mTHP counter `base x KiB` for 16, 32, 64 and 128
    /// KiB (base 1 for anon_fault_alloc, 2 swpout, 3 swpout_fallback).
    pub fn counters(scale: u64) -> SwapCounters {
        let vmstat = BTreeMap::from([
            ("pswpin".to_string(), 40 * scale),
            ("pswpout".to_string(), 50 * scale),
        ]);
        let mut mthp = BTreeMap::new();
        for (counter, base) in [
            ("anon_fault_alloc", 1),
            ("swpout", 2),
            ("swpout_fallback", 3),
        ] {
            let mut sum = 0;
            for kib in [16, 32, 64, 128] {
                let value = base * kib * scale;
                mthp.insert(format!("{counter}@{kib}"), value);
                sum += value;
            }
            mthp.insert(counter.to_string(), sum);
        }
        SwapCounters { vmstat, mthp }
    }

    #[test]
    fn sums_over_sizes_and_keeps_three_sizes() {
        let m = metrics(&counters(1), &counters(2)).unwrap();
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                ("mthp_fault_alloc", 240),
                ("mthp_swpout", 480),
                ("mthp_swpout_16k", 32),
                ("mthp_swpout_32k", 64),
                ("mthp_swpout_64k", 128),
                ("mthp_swpout_fallback", 720),
                ("pswpin", 40),
                ("pswpout", 50),
            ]
        );
    }

    /// Sysfs as 6.12 lays it out: 8 KiB has shmem stats only.
    #[test]
    fn reads_every_size_that_has_the_counter() {
        let root = tempfile::tempdir().unwrap();
        let write = |kib: u32, counter: &str, value: u64| {
            let dir = root.path().join(format!("hugepages-{kib}kB/stats"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(counter), format!("{value}\n")).unwrap();
        };
        write(8, "shmem_alloc", 5);
        for kib in [16, 32, 64] {
            write(kib, "anon_fault_alloc", u64::from(kib));
            write(kib, "swpout", u64::from(kib) + 1);
            write(kib, "swpout_fallback", 0);
        }
        std::fs::write(root.path().join("enabled"), "never\n").unwrap();
        let got = read_mthp(root.path()).unwrap();
        assert_eq!(got["anon_fault_alloc"], 16 + 32 + 64);
        assert_eq!(got["swpout"], 17 + 33 + 65);
        assert_eq!(got["swpout@32"], 33);
        assert!(!got.contains_key("swpout@8"));
    }

    #[test]
    fn no_anonymous_stats_is_an_error() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("hugepages-8kB/stats")).unwrap();
        let err = read_mthp(root.path()).unwrap_err();
        assert!(err.to_string().contains("no hugepages"), "{err}");
        let missing = root.path().join("nothing");
        let err = read_mthp(&missing).unwrap_err();
        assert!(
            err.to_string().contains("CONFIG_TRANSPARENT_HUGEPAGE"),
            "{err}"
        );
    }

    #[test]
    fn a_counter_going_backwards_is_an_error() {
        let err = metrics(&counters(2), &counters(1)).unwrap_err();
        assert!(err.to_string().contains("went backwards"), "{err}");
    }
}
