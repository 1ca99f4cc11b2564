//! The guest's shape and the limits a workload puts on it: how many CPUs
//! are possible and online, and cgroup limits (`max` or a byte size).

use std::fmt;
use std::str::FromStr;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

/// How plain TCG (without icount) runs the vCPUs: one host thread per vCPU
/// (MTTCG, `thread=multi`) or all vCPUs on one host thread
/// (`thread=single`, the default: on a quiet 2-core host, A drifted 9-22%
/// between its own boots in every MTTCG run and within 2% in four of six
/// single-threaded ones, docs/tcg-noise.md). icount always runs
/// single-threaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcgThreads {
    Multi,
    #[default]
    Single,
}

impl TcgThreads {
    /// The value of QEMU's `-accel tcg,thread=`.
    pub fn as_str(self) -> &'static str {
        match self {
            TcgThreads::Multi => "multi",
            TcgThreads::Single => "single",
        }
    }
}

/// `vm.parallel_boots`: how many boots may run at once. Only a lane whose
/// guest time does not depend on the host (icount, the cost lane) can
/// boot side by side without the boots measuring each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "RawParallelBoots")]
pub enum ParallelBoots {
    /// As many as the host has cores and memory for, in a lane that
    /// allows it; one at a time in any other.
    #[default]
    Auto,
    /// At most this many (at least 1).
    AtMost(u32),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawParallelBoots {
    Count(u32),
    Word(String),
}

impl TryFrom<RawParallelBoots> for ParallelBoots {
    type Error = String;
    fn try_from(raw: RawParallelBoots) -> Result<Self, String> {
        match raw {
            RawParallelBoots::Word(w) if w == "auto" => Ok(ParallelBoots::Auto),
            RawParallelBoots::Count(n) if n >= 1 => Ok(ParallelBoots::AtMost(n)),
            RawParallelBoots::Count(_) => Err(
                "vm.parallel_boots: 0 boots at a time runs nothing; write 1 or more, or auto"
                    .into(),
            ),
            RawParallelBoots::Word(w) => Err(format!(
                "vm.parallel_boots: expected `auto` or a number of boots (1 or more), found {w:?}"
            )),
        }
    }
}

/// QEMU `-smp possible` with the kernel's `maxcpus=online`. Read from a
/// campaign only through [`CpuShape::new`]'s check: `1 <= online <=
/// possible`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawCpuShape")]
pub struct CpuShape {
    pub possible: u32,
    pub online: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCpuShape {
    possible: u32,
    online: u32,
}

impl TryFrom<RawCpuShape> for CpuShape {
    type Error = String;
    fn try_from(raw: RawCpuShape) -> Result<Self, String> {
        CpuShape::new(raw.possible, raw.online)
    }
}

impl CpuShape {
    /// `online` must be between 1 and `possible`.
    pub fn new(possible: u32, online: u32) -> Result<CpuShape, String> {
        if online == 0 || online > possible {
            return Err(format!(
                "online ({online}) must be between 1 and possible ({possible})"
            ));
        }
        Ok(CpuShape { possible, online })
    }

    pub fn possible(self) -> u32 {
        self.possible
    }

    pub fn online(self) -> u32 {
        self.online
    }

    /// The online CPUs as the kernel lists them (`0`, `0-1`): the guest's
    /// `/sys/devices/system/cpu/online`, since `maxcpus=` brings up the
    /// first ones.
    pub fn online_list(self) -> String {
        match self.online {
            0 | 1 => "0".to_string(),
            n => format!("0-{}", n - 1),
        }
    }
}

/// What a workload can count on in the guest: its memory and CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestShape {
    pub memory: ByteSize,
    pub cpus: CpuShape,
}

/// A cgroup v2 limit: `max` (none) or a byte size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Max,
    Size(ByteSize),
}

impl Limit {
    /// The limit in bytes; `None` for `max`.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Limit::Max => None,
            Limit::Size(b) => Some(b.as_u64()),
        }
    }
}

impl FromStr for Limit {
    type Err = String;
    fn from_str(text: &str) -> Result<Limit, String> {
        if text.trim() == "max" {
            return Ok(Limit::Max);
        }
        text.parse::<ByteSize>()
            .map(Limit::Size)
            .map_err(|e| format!("`{text}` is neither `max` nor a byte size such as `64 MiB`: {e}"))
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Max => f.write_str("max"),
            Limit::Size(b) => f.write_str(&size_text(*b)),
        }
    }
}

/// A size as people write it: `64 MiB`, `256 KiB`, `1.5 GiB`, `100 B`.
pub fn size_text(size: ByteSize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let bytes = size.as_u64();
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1 << (10 * (unit + 1)) {
        unit += 1;
    }
    let scale = 1u64 << (10 * unit);
    if bytes % scale == 0 {
        format!("{} {}", bytes / scale, UNITS[unit])
    } else {
        format!("{:.1} {}", bytes as f64 / scale as f64, UNITS[unit])
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_take_sizes_or_max() {
        assert_eq!("max".parse(), Ok(Limit::Max));
        assert_eq!("64 MiB".parse(), Ok(Limit::Size(ByteSize::mib(64))));
        assert_eq!("64M".parse(), Ok(Limit::Size(ByteSize::b(64_000_000))));
        assert!("lots".parse::<Limit>().unwrap_err().contains("`lots`"));
        assert_eq!(Limit::Size(ByteSize::mib(64)).to_string(), "64 MiB");
        assert_eq!(size_text(ByteSize::kib(256)), "256 KiB");
        assert_eq!(size_text(ByteSize::b(1536 << 20)), "1.5 GiB");
        assert_eq!(size_text(ByteSize::b(100)), "100 B");
        assert_eq!(size_text(ByteSize::b(0)), "0 B");
        assert_eq!(Limit::Max.bytes(), None);
    }

    #[test]
    fn a_cpu_shape_has_at_least_one_online_cpu_and_no_more_than_possible() {
        assert!(CpuShape::new(20, 2).is_ok());
        assert!(CpuShape::new(2, 0).unwrap_err().contains("online (0)"));
        assert!(CpuShape::new(2, 3).unwrap_err().contains("possible (2)"));
    }

    #[test]
    fn online_cpus_are_listed_as_the_kernel_lists_them() {
        assert_eq!(CpuShape::new(20, 1).unwrap().online_list(), "0");
        assert_eq!(CpuShape::new(20, 2).unwrap().online_list(), "0-1");
        assert_eq!(CpuShape::new(20, 20).unwrap().online_list(), "0-19");
    }
}
