//! CPU time around a sample: the workload's own user and system time, the
//! whole guest's by mode, and the reclaim daemons' and kworkers', so that
//! a figure stays whole when reclaim moves from the workers to kswapd.
//!
//! Sources, each the finest the kernel offers without perturbing the
//! workload:
//!
//! - the workload's own: `getrusage()` of the reaped children (or of the
//!   agent's thread, when the agent itself is the workload), in µs;
//! - the whole guest's user and system time: the root cgroup's `cpu.stat`
//!   (`user_usec`, `system_usec`; the kernel's system figure includes
//!   interrupts), in µs. A non-root cgroup's `cpu.stat` is never read: it
//!   flushes the subtree's rstat, memcg's stats included, which is what
//!   seeds 000 and 002 measure;
//! - steal: `/proc/stat`, in `USER_HZ` ticks, summed over the vCPUs:
//!   the time the host ran something else while a vCPU wanted to run
//!   (KVM's steal-time MSR; always 0 under TCG). The host flags a sample
//!   whose steal is a noticeable share of its wall-clock time
//!   (docs/statistics.md, "Steal time under KVM");
//! - interrupts: `/proc/stat`, in `USER_HZ` ticks (10 ms). Not idle: the
//!   generic accounting charges an idle CPU's time only when it leaves
//!   idle (`vtime_task_switch_generic()`), so a CPU idle through a whole
//!   sample shows none of it (measured: 300 ms a sample on one boot, 10 ms
//!   on the next, of the same kernel);
//! - kswapd, kcompactd and every kworker: each thread's scheduler runtime
//!   (`clock_getcpuclockid()`), in ns. A kernel thread runs in kernel mode
//!   only, so that is its system time. A kworker that exits during the
//!   sample takes its time with it.
//!
//! With precise accounting (`lib`'s `cputime`) the user/system split is
//! exact to 1/HZ per task and mode; with tick accounting it is a sample of
//! ticks, and the reports say so.

use std::collections::BTreeMap;
use std::io::Read;

use patchbench_agent::cputime::{self, CputimeFacts};

use crate::error::{Context, Error, Result};
use crate::files;
use crate::parse::{self, ProcStatCpu};
use crate::report::Fields;
use crate::sys;

/// The booted kernel's own configuration, gzipped (`CONFIG_IKCONFIG_PROC`).
const CONFIG_GZ: &str = "/proc/config.gz";
/// The root cgroup's CPU time (cgroup v2 is mounted here at boot).
const ROOT_CPU_STAT: &str = "/sys/fs/cgroup/cpu.stat";
const PROC_STAT: &str = "/proc/stat";

/// How this kernel splits CPU time, from `/proc/config.gz`; unknown when
/// the kernel does not publish its configuration.
pub fn facts() -> Result<CputimeFacts> {
    let file = match std::fs::File::open(CONFIG_GZ) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cputime::unknown()),
        Err(e) => return Err(e).with_context(|| format!("opening {CONFIG_GZ}")),
    };
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .with_context(|| format!("decompressing {CONFIG_GZ}"))?;
    Ok(cputime::from_kconfig(&text))
}

/// Whose CPU time is the workload's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The children the agent forked and reaped during the sample (the
    /// workers, make and everything it ran).
    Children,
    /// The agent's own thread (it is the workload: rstat-flush's reader).
    ThisThread,
}

/// A kernel thread whose CPU time a sample reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Daemon {
    Kswapd,
    Kcompactd,
    Kworker,
}

impl Daemon {
    /// The daemon a thread's `comm` names, if any.
    pub fn of(comm: &str) -> Option<Daemon> {
        if comm.starts_with("kswapd") {
            Some(Daemon::Kswapd)
        } else if comm.starts_with("kcompactd") {
            Some(Daemon::Kcompactd)
        } else if comm.starts_with("kworker/") {
            Some(Daemon::Kworker)
        } else {
            None
        }
    }

    fn metric(self) -> &'static str {
        match self {
            Daemon::Kswapd => "kswapd_ns",
            Daemon::Kcompactd => "kcompactd_ns",
            Daemon::Kworker => "kworker_ns",
        }
    }
}

/// One daemon thread at one moment: what it is, when it started (so that
/// a PID reused by another thread is not taken for the first: a kworker's
/// name changes with the work it runs), its runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonTime {
    pub daemon: Daemon,
    /// `/proc/<pid>/stat`'s `starttime`, in ticks since boot.
    pub started: u64,
    pub ns: u64,
}

/// Everything read at one end of a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The workload's own user and system time, ns.
    pub own: (u64, u64),
    /// The root cgroup's `user_usec` and `system_usec`.
    pub guest_user_us: u64,
    pub guest_sys_us: u64,
    pub stat: ProcStatCpu,
    /// `USER_HZ`, the unit of [`Snapshot::stat`].
    pub user_hz: u64,
    /// Daemon threads by PID.
    pub daemons: BTreeMap<i32, DaemonTime>,
}

/// A sample's CPU-time meter: started right before the timed work, stopped
/// right after it.
pub struct Meter {
    whose: Whose,
    before: Snapshot,
}

impl Meter {
    /// Reads the daemons first and the guest's counters last, so the
    /// counters' window is the tightest.
    pub fn start(whose: Whose) -> Result<Meter> {
        let own = own_ns(whose)?;
        let daemons = daemons()?;
        let stat = proc_stat()?;
        let (guest_user_us, guest_sys_us) = root_cpu_stat()?;
        Ok(Meter {
            whose,
            before: Snapshot {
                own,
                guest_user_us,
                guest_sys_us,
                stat,
                user_hz: sys::clock_ticks_per_second(),
                daemons,
            },
        })
    }

    /// Reads in the reverse order of [`Meter::start`] and gives the
    /// sample's metrics (names and units as in `workloads/*.yaml`).
    pub fn stop(self) -> Result<Fields> {
        let (guest_user_us, guest_sys_us) = root_cpu_stat()?;
        let stat = proc_stat()?;
        let daemons = daemons()?;
        let own = own_ns(self.whose)?;
        let after = Snapshot {
            own,
            guest_user_us,
            guest_sys_us,
            stat,
            user_hz: self.before.user_hz,
            daemons,
        };
        metrics(&self.before, &after).map_err(Error::msg)
    }
}

/// The metrics between two snapshots; an error if a counter went
/// backwards.
pub fn metrics(before: &Snapshot, after: &Snapshot) -> std::result::Result<Fields, String> {
    let delta = |name: &str, b: u64, a: u64| {
        a.checked_sub(b)
            .ok_or_else(|| format!("{name} went backwards during the sample ({b} to {a})"))
    };
    let tick_ns = 1_000_000_000 / before.user_hz.max(1);
    let (b, a) = (&before.stat, &after.stat);
    let mut fields = Fields::from([
        (
            "user_ns".to_string(),
            delta("user time", before.own.0, after.own.0)?,
        ),
        (
            "sys_ns".to_string(),
            delta("system time", before.own.1, after.own.1)?,
        ),
        (
            "guest_user_ns".to_string(),
            delta(
                "cpu.stat user_usec",
                before.guest_user_us,
                after.guest_user_us,
            )? * 1_000,
        ),
        (
            "guest_sys_ns".to_string(),
            delta(
                "cpu.stat system_usec",
                before.guest_sys_us,
                after.guest_sys_us,
            )? * 1_000,
        ),
        (
            "guest_irq_ns".to_string(),
            delta("/proc/stat irq", b.irq, a.irq)? * tick_ns,
        ),
        (
            "guest_softirq_ns".to_string(),
            delta("/proc/stat softirq", b.softirq, a.softirq)? * tick_ns,
        ),
        (
            "guest_steal_ns".to_string(),
            delta("/proc/stat steal", b.steal, a.steal)? * tick_ns,
        ),
    ]);
    for daemon in [Daemon::Kswapd, Daemon::Kcompactd, Daemon::Kworker] {
        fields.insert(daemon.metric().to_string(), 0);
    }
    for (pid, now) in &after.daemons {
        // A thread born during the sample ran all its time in it; a PID
        // reused by another thread is a new thread.
        let since = match before.daemons.get(pid) {
            Some(then) if then.started == now.started => then.ns,
            _ => 0,
        };
        *fields.get_mut(now.daemon.metric()).expect("inserted above") +=
            now.ns.saturating_sub(since);
    }
    Ok(fields)
}

fn own_ns(whose: Whose) -> Result<(u64, u64)> {
    match whose {
        Whose::Children => sys::children_cpu_ns().context("getrusage(RUSAGE_CHILDREN)"),
        Whose::ThisThread => sys::thread_cpu_ns().context("getrusage(RUSAGE_THREAD)"),
    }
}

fn root_cpu_stat() -> Result<(u64, u64)> {
    let map = parse::flat_keyed(&files::read(ROOT_CPU_STAT)?)
        .map_err(Error::msg)
        .with_context(|| format!("parsing {ROOT_CPU_STAT}"))?;
    let get = |key: &str| {
        map.get(key)
            .copied()
            .ok_or_else(|| Error::msg(format!("{ROOT_CPU_STAT} has no {key}")))
    };
    Ok((get("user_usec")?, get("system_usec")?))
}

fn proc_stat() -> Result<ProcStatCpu> {
    parse::proc_stat_cpu(&files::read(PROC_STAT)?).map_err(Error::msg)
}

/// Every kswapd, kcompactd and kworker thread now, with its runtime.
fn daemons() -> Result<BTreeMap<i32, DaemonTime>> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").context("listing /proc")? {
        let entry = entry.context("listing /proc")?;
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // A thread that exits while we look is simply not there.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((comm, started)) = parse::proc_pid_stat(&stat) else {
            continue;
        };
        let Some(daemon) = Daemon::of(comm) else {
            continue;
        };
        if let Some(ns) = sys::other_process_cpu_ns(pid)
            .with_context(|| format!("reading the CPU clock of {comm} (PID {pid})"))?
        {
            found.insert(
                pid,
                DaemonTime {
                    daemon,
                    started,
                    ns,
                },
            );
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(own: (u64, u64), user_us: u64, sys_us: u64, irq: u64) -> Snapshot {
        Snapshot {
            own,
            guest_user_us: user_us,
            guest_sys_us: sys_us,
            stat: ProcStatCpu {
                irq,
                idle: 10 * irq,
                steal: 5 * irq,
                ..ProcStatCpu::default()
            },
            user_hz: 100,
            daemons: BTreeMap::new(),
        }
    }

    fn daemon(daemon: Daemon, started: u64, ns: u64) -> DaemonTime {
        DaemonTime {
            daemon,
            started,
            ns,
        }
    }

    #[test]
    fn daemons_are_named_by_their_threads() {
        assert_eq!(Daemon::of("kswapd0"), Some(Daemon::Kswapd));
        assert_eq!(Daemon::of("kcompactd0"), Some(Daemon::Kcompactd));
        assert_eq!(
            Daemon::of("kworker/1:2-mm_percpu_wq"),
            Some(Daemon::Kworker)
        );
        assert_eq!(Daemon::of("kworker"), None);
        assert_eq!(Daemon::of("ksoftirqd/0"), None);
        assert_eq!(Daemon::of("patchbench-agent"), None);
    }

    #[test]
    fn a_sample_gives_every_cpu_time_in_ns() {
        let before = snapshot((1_000, 2_000), 10, 20, 1);
        let after = snapshot((4_000, 9_000), 15, 120, 3);
        let m = metrics(&before, &after).unwrap();
        assert_eq!(m["user_ns"], 3_000);
        assert_eq!(m["sys_ns"], 7_000);
        assert_eq!(m["guest_user_ns"], 5_000);
        assert_eq!(m["guest_sys_ns"], 100_000);
        // Two USER_HZ ticks of 10 ms.
        assert_eq!(m["guest_irq_ns"], 20_000_000);
        assert_eq!(m["guest_softirq_ns"], 0);
        // Ten ticks stolen by the host.
        assert_eq!(m["guest_steal_ns"], 100_000_000);
        assert_eq!(m["kswapd_ns"], 0);
        assert_eq!(m.len(), 10);
    }

    #[test]
    fn daemon_time_counts_threads_born_and_reused_in_the_sample() {
        let mut before = snapshot((0, 0), 0, 0, 0);
        let mut after = before.clone();
        let insert = |s: &mut Snapshot, pid: i32, d: Daemon, started: u64, ns: u64| {
            s.daemons.insert(pid, daemon(d, started, ns));
        };
        insert(&mut before, 30, Daemon::Kswapd, 1, 100);
        insert(&mut before, 40, Daemon::Kworker, 2, 50);
        insert(&mut before, 41, Daemon::Kworker, 2, 70);
        insert(&mut before, 43, Daemon::Kworker, 3, 1_000);
        insert(&mut after, 30, Daemon::Kswapd, 1, 600);
        // 40 is a new kworker in a reused PID; 41 exited; 42 was born;
        // 43 is the same thread (its name changed with its work).
        insert(&mut after, 40, Daemon::Kworker, 90, 5);
        insert(&mut after, 42, Daemon::Kworker, 91, 9);
        insert(&mut after, 43, Daemon::Kworker, 3, 1_020);
        insert(&mut after, 50, Daemon::Kcompactd, 4, 3);
        let m = metrics(&before, &after).unwrap();
        assert_eq!(m["kswapd_ns"], 500);
        assert_eq!(m["kworker_ns"], 34);
        assert_eq!(m["kcompactd_ns"], 3);
    }

    #[test]
    fn a_counter_going_backwards_is_an_error() {
        let before = snapshot((0, 0), 10, 20, 0);
        let after = snapshot((0, 0), 10, 19, 0);
        let err = metrics(&before, &after).unwrap_err();
        assert!(err.contains("system_usec went backwards"), "{err}");
    }
}
