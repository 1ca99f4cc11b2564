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
//!
//! Direction guest → cost-model plugin: phase markers in the instruction
//! stream ([`marker`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod bench;
pub mod cputime;
pub mod feature;
pub mod kind;
pub mod kinds;
pub mod marker;
pub mod memory;
pub mod staged;
pub mod sysfs;

pub use kind::{Kind, PerCallCost};
pub use kinds::Workload;
pub use kinds::exec::Exec;
pub use kinds::guest_fault::Fault;
pub use kinds::kernel_build::{
    BuildDriver, KBUILD_STAGE_GUEST, RECORDED_MAKEFILE, kbuild_command, kbuild_stage,
    kbuild_stage_archive,
};
pub use kinds::reclaim_refault::{REFAULT_QUARTER, REREAD_SEED, RefaultMemory, RefaultOrder};
pub use memory::{Limit, RAM_SWAP_DEVICE, SwapBackend, ram_swap_cmdline};

/// Bumped on any incompatible change to [`Job`] or [`Message`].
///
/// 2: the `rstat-flush` and `reclaim-refault` workloads, `count_flushes` on
/// `zswap-pageout`, and [`GuestFacts::profiled_symbol`].
/// 3: control conditions in the same boot ([`Job::controls`] and
/// [`Sample::condition`]), [`Job::host_root`], the `kernel-build`
/// workload, and `random_percent` on `zswap-pageout`.
/// 4: runtime settings ([`Job::settings`], read back into
/// [`GuestFacts::settings`]).
/// 5: [`GuestFacts::cputime`] (how the kernel splits CPU time), and every
/// workload's samples carry the whole guest's CPU time by mode.
/// 6: [`GuestFacts::clocksource`], [`cputime::CputimeFacts::paravirt_steal`],
/// and every workload's samples carry the whole guest's steal time
/// (`guest_steal_ns`).
pub const PROTOCOL_VERSION: u32 = 6;

/// Where the host places the job description inside the initramfs.
pub const JOB_PATH: &str = "/patchbench/job.json";

/// The name of the virtio-serial port that carries [`Message`]s.
pub const PORT_NAME: &str = "org.patchbench.agent";

/// The 9p mount tag of the host's `/` in host-root mode ([`Job::host_root`]).
pub const HOST_ROOT_TAG: &str = "hostroot";

/// The `PATH` programs run with in the host root and in a kernel build's
/// staged root: a usual Debian one. The host traces the build with it, so
/// that the programs it finds are the ones the guest's build finds.
pub const HOST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

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
    /// Host-root mode: the host exports its `/` read-only over 9p (tag
    /// [`HOST_ROOT_TAG`]), and the agent mounts it under a tmpfs overlay, so
    /// workloads can run the host's programs (a compiler) on the host's
    /// files (a kernel tree) without writing to either.
    #[serde(default)]
    pub host_root: bool,
    pub workload: Workload,
    /// Control conditions, run in this same boot after the main workload's
    /// warm-ups and samples, in order, each with as many warm-ups and
    /// samples. Each is the main workload's kind with some parameters
    /// changed (the host checks that). Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<Control>,
    /// Files under `/sys` or `/proc/sys` and the values to write to them,
    /// in order, after the swap, zswap and THP setup and before the
    /// workload; each must read back ([`reads_back`]). Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<Setting>,
    /// The boot's memory layout (`protocol.layouts: varied`): before the
    /// workload, the agent scatters the free page lists by a permutation
    /// drawn from this number (`layout::scatter`), so that this boot's
    /// allocations land on other physical pages than another layout's.
    /// Absent: the layout the boot's inputs give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<u32>,
}

/// A runtime setting: a file under `/sys` or `/proc/sys` (the host checks
/// the path) and the text to write to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    pub path: String,
    pub value: String,
}

/// Whether the text `read` back from a setting's file shows the value
/// `written`: the same text; or, in a sysfs choice file, the value as the
/// bracketed choice (`always [madvise] never`); or, for a boolean module
/// parameter, the same truth (`Y` after `1`, `N` after `false`).
pub fn reads_back(written: &str, read: &str) -> bool {
    let (written, read) = (written.trim(), read.trim());
    if written == read || read.split_whitespace().any(|w| w == format!("[{written}]")) {
        return true;
    }
    let truth = |s: &str| match s.to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Some(true),
        "0" | "n" | "no" | "false" | "off" => Some(false),
        _ => None,
    };
    matches!((truth(written), truth(read)), (Some(a), Some(b)) if a == b)
}

/// A control condition: a named variant of the main workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// A short name (letters, digits, `-`, `_`), unique in the job; it tags
    /// the control's samples ([`Sample::condition`]).
    pub name: String,
    pub workload: Workload,
}

impl Job {
    /// Every condition the boot runs, in order: the main workload (no
    /// name), then each control by name.
    pub fn conditions(&self) -> Vec<(Option<&str>, &Workload)> {
        std::iter::once((None, &self.workload))
            .chain(
                self.controls
                    .iter()
                    .map(|c| (Some(c.name.as_str()), &c.workload)),
            )
            .collect()
    }
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
    Facts(Box<GuestFacts>),
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
    /// The kernel function the function profiler counts for this workload
    /// (the first of [`Workload::profile_candidates`] found in
    /// `available_filter_functions`); `None` when nothing is profiled.
    #[serde(default)]
    pub profiled_symbol: Option<String>,
    /// Each of the job's [`Job::settings`] as read back after writing it,
    /// by path. Absent: none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// How the kernel splits CPU time between user and system mode, from
    /// its own `/proc/config.gz` ([`cputime`]). Absent before protocol 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cputime: Option<cputime::CputimeFacts>,
    /// The guest's clocksource
    /// (`/sys/devices/system/clocksource/clocksource0/current_clocksource`:
    /// `tsc`, `kvm-clock`, `hpet`); absent when the kernel does not say,
    /// and before protocol 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
    /// The kernel features ([`feature::Feature`]) this kernel reads back,
    /// each from its own file; absent before the mm library.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<feature::Feature>,
    /// Whether the kernel runs `rcu_barrier()` on request
    /// (`rcutree.do_rcu_barrier`, in 6.12 and not in 6.1), which the mm
    /// library's windows use at both edges; absent before they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcu_barrier: Option<bool>,
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
    /// The control condition ([`Control::name`]) this sample measured;
    /// absent for the main workload (and in documents of protocol 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
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
            condition: Some("unlimited".into()),
        });
        let line = serde_json::to_string(&msg).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), msg);
    }

    #[test]
    fn main_samples_and_jobs_without_controls_keep_their_old_shape() {
        let json = r#"{"index":0,"warmup":false,"metrics":{}}"#;
        let sample: Sample = serde_json::from_str(json).unwrap();
        assert_eq!(sample.condition, None);
        assert_eq!(serde_json::to_string(&sample).unwrap(), json);
    }

    #[test]
    fn a_job_runs_its_main_workload_then_each_control() {
        // Built from its wire form, so that the test holds the JSON's shape.
        let pageout = |zswap_max: Limit| -> Workload {
            serde_json::from_value(serde_json::json!({
                "kind": "zswap-pageout", "workers": 1, "mib_per_worker": 32,
                "zswap_max": zswap_max, "memory_max": "max", "swap_max": "max",
                "count_flushes": true,
            }))
            .unwrap()
        };
        let json = serde_json::json!({
            "protocol": PROTOCOL_VERSION, "boot_label": "A",
            "swap": {"device": "/dev/vda"},
            "zswap": {"enabled": true, "compressor": "lzo", "zpool": "zsmalloc", "max_pool_percent": 20},
            "thp": "never", "warmups": 1, "samples": 5,
            "workload": serde_json::to_value(pageout(Limit::Bytes(64 << 20))).unwrap(),
        });
        // The disk, the only device before, and compaction off, the only
        // behaviour before, stay out of the JSON.
        assert!(json["workload"].get("swap").is_none(), "{json}");
        assert!(json["workload"].get("compact").is_none(), "{json}");
        let mut job: Job = serde_json::from_value(json).unwrap();
        assert_eq!(job.conditions(), [(None, &job.workload)]);
        job.controls.push(Control {
            name: "unlimited".into(),
            workload: pageout(Limit::Max),
        });
        let back: Job = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
        assert_eq!(back, job);
        let names: Vec<_> = job.conditions().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, [None, Some("unlimited")]);
        assert_eq!(job.conditions()[1].1, &pageout(Limit::Max));
    }

    #[test]
    fn job_rejects_unknown_fields() {
        let err = serde_json::from_str::<Job>(r#"{"protocol":1,"bogus":true}"#).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }

    #[test]
    fn facts_without_a_profiled_symbol_still_parse() {
        let json = r#"{"kernel_release":"6.12","kernel_version":"v1","possible_cpus":"0-1",
            "online_cpus":"0-1","mem_total_kib":1,"zswap":{},"thp":"never","swaps":[]}"#;
        let facts: GuestFacts = serde_json::from_str(json).unwrap();
        assert_eq!(facts.profiled_symbol, None);
    }

    #[test]
    fn limit_renders_cgroup_text() {
        assert_eq!(Limit::Bytes(67_108_864).cgroup_value(), "67108864");
        assert_eq!(Limit::Max.cgroup_value(), "max");
    }
}
