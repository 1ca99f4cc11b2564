//! The wire protocol between the patchbench host and its guest agent.
//!
//! This crate is a contract of its own: the host (`patchbench`) and the guest
//! agent (this crate's binary, PID 1 inside the VM) are built from it, and a
//! change here is a protocol change (bump [`PROTOCOL_VERSION`]).
//!
//! Direction host → guest: one [`Job`], as JSON, in the initramfs at
//! [`JOB_PATH`]. Nothing is passed through the kernel command line or by
//! string interpolation into a script.
//!
//! Direction guest → host: one JSON [`Message`] per line on the virtio-serial
//! port named [`PORT_NAME`]. Every message is written the moment it exists, so
//! a sample measured before a crash is never lost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Bumped on any incompatible change to [`Job`] or [`Message`].
pub const PROTOCOL_VERSION: u32 = 1;

/// Where the host places the job description inside the initramfs.
pub const JOB_PATH: &str = "/patchbench/job.json";

/// The name of the virtio-serial port that carries [`Message`]s.
pub const PORT_NAME: &str = "org.patchbench.agent";

/// Everything the guest is asked to do during one boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub protocol: u32,
    /// A human label for this boot, such as `A`, `B` or `A'` (for logs only).
    pub boot_label: String,
    pub swap: SwapSetup,
    pub zswap: ZswapSetup,
    pub thp: ThpMode,
    /// Samples run and discarded before the measured ones.
    pub warmups: u32,
    /// Samples measured and reported.
    pub samples: u32,
    pub workload: Workload,
}

/// The swap device the guest formats and enables before the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapSetup {
    /// A block device path, such as `/dev/vda` (the host attaches a sparse
    /// file as a virtio-blk disk).
    pub device: String,
}

/// zswap module parameters, written to `/sys/module/zswap/parameters` and
/// read back; a value that does not stick fails the boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZswapSetup {
    pub enabled: bool,
    pub compressor: String,
    pub zpool: String,
    pub max_pool_percent: u32,
}

/// `/sys/kernel/mm/transparent_hugepage/enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThpMode {
    Never,
    Madvise,
    Always,
}

impl ThpMode {
    /// The word the kernel's sysfs file takes.
    pub fn sysfs_word(self) -> &'static str {
        match self {
            ThpMode::Never => "never",
            ThpMode::Madvise => "madvise",
            ThpMode::Always => "always",
        }
    }
}

/// A cgroup v2 limit: a byte count, or `max` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    Bytes(u64),
    Max,
}

impl Limit {
    /// The text a cgroup v2 limit file takes.
    pub fn cgroup_value(self) -> String {
        match self {
            Limit::Bytes(n) => n.to_string(),
            Limit::Max => "max".to_string(),
        }
    }
}

/// The workload the agent runs, with its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Workload {
    /// Seed 000: MADV_PAGEOUT over compressible anonymous memory in a private
    /// cgroup with a zswap limit.
    ZswapPageout {
        /// Worker processes, each pinned to its own online CPU.
        workers: u32,
        /// Anonymous memory per worker, in MiB.
        mib_per_worker: u64,
        /// `memory.zswap.max` of the private cgroup.
        zswap_max: Limit,
        /// `memory.max` of the private cgroup.
        memory_max: Limit,
        /// `memory.swap.max` of the private cgroup.
        swap_max: Limit,
    },
    /// A deliberately broken guest, used to test the host's failure handling.
    GuestFault { fault: Fault },
    /// Run one command (`patchbench boot -- CMD`), its output on the
    /// console; a non-zero exit is a workload error. For debugging a kernel.
    Exec {
        /// The program and its arguments, run without a shell.
        argv: Vec<String>,
    },
}

/// What [`Workload::GuestFault`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// PID 1 exits, so the kernel panics ("Attempted to kill init").
    ExitInit,
    /// The agent stops answering forever; the host's run deadline must fire.
    Hang,
    /// The workload reports an error message.
    Fail,
}

/// One line from the guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Message {
    /// The agent is running and the channel works: the readiness signal.
    Hello {
        protocol: u32,
        agent_version: String,
    },
    /// What the guest looks like, after setup.
    Facts(GuestFacts),
    /// One measured (or warm-up) sample.
    Sample(Sample),
    /// The workload or the setup failed; the boot's results are unusable.
    Error { message: String },
    /// Every sample was sent; the agent is about to power off.
    Done,
}

/// Facts about the booted guest, read back after setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestFacts {
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (holds the build number and date).
    pub kernel_version: String,
    /// `/sys/devices/system/cpu/possible`, such as `0-19`.
    pub possible_cpus: String,
    /// `/sys/devices/system/cpu/online`, such as `0-1`.
    pub online_cpus: String,
    /// `MemTotal` from `/proc/meminfo`, in KiB.
    pub mem_total_kib: u64,
    /// The zswap parameters as read back from sysfs, by name.
    pub zswap: BTreeMap<String, String>,
    /// The THP mode line as read back, such as `always madvise [never]`.
    pub thp: String,
    /// `/proc/swaps`, without its header line.
    pub swaps: Vec<String>,
}

/// One sample of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// 0-based, counting warm-ups first.
    pub index: u32,
    pub warmup: bool,
    /// Metric name → value. Units are part of the name's definition in the
    /// workload's spec (`workloads/<name>.yaml`); times are nanoseconds.
    pub metrics: BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_lines_round_trip() {
        let msg = Message::Sample(Sample {
            index: 2,
            warmup: false,
            metrics: BTreeMap::from([("pageout_cpu_ns".to_string(), 17_180_000)]),
        });
        let line = serde_json::to_string(&msg).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), msg);
    }

    #[test]
    fn job_rejects_unknown_fields() {
        let err = serde_json::from_str::<Job>(r#"{"protocol":1,"bogus":true}"#).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }

    #[test]
    fn limit_renders_cgroup_text() {
        assert_eq!(Limit::Bytes(67_108_864).cgroup_value(), "67108864");
        assert_eq!(Limit::Max.cgroup_value(), "max");
    }
}
