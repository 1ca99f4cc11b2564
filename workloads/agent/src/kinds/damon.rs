//! `damon`: DAMON, the data access monitor, driven the way its own users
//! drive it: the sysfs interface as DAMON's user-space tool damo and the
//! kernel's selftests (tools/testing/selftests/damon/) write it, and
//! DAMON_RECLAIM through its module parameters, as
//! Documentation/admin-guide/mm/damon/reclaim.rst does.
//!
//! Each operation, in the task's own process:
//! 1. builds a kdamond under `/sys/kernel/mm/damon/admin/kdamonds` (one
//!    kdamond, one context, `vaddr` operations, DAMON's default intervals
//!    written out: sample 5 ms, aggregation 100 ms, update 1 s; 10 to 1000
//!    regions), targeting this process, with one `stat` scheme over every
//!    region;
//! 2. turns it on, writes every page of the task's `size` region once
//!    (accesses for the page-table walks to find), and sleeps `monitor`;
//! 3. writes `commit` (the kdamond rebuilds its context from the files at
//!    its next aggregation: `damon_commit_ctx()`), `update_schemes_stats`,
//!    and, where the kernel has them (6.2 and later),
//!    `update_schemes_tried_regions` and `clear_schemes_tried_regions`;
//!    checks that the scheme tried some region;
//! 4. turns it off and removes the context and the kdamond;
//! 5. enables DAMON_RECLAIM (physical address monitoring of the largest
//!    System RAM range), has it re-read its parameters
//!    (`commit_inputs`, which it clears at its next aggregation), and
//!    disables it.
//!
//! Once per boot, untimed: DAMON_RECLAIM's watermarks are set to high
//! 1000, mid 999 and low 0 (per mille of free memory), so that it monitors
//! whenever any memory is in use. Its defaults (500, 400, 200) keep it
//! inactive above 50% free memory, where an idle guest always is, and an
//! inactive kdamond only checks its watermarks every 5 s. Its `min_age`
//! stays 120 s, so no region is ever old enough to page out within a
//! window: the reclaim kdamond samples, and reclaims nothing.
//!
//! DAMON's sampling is timed by the guest's clock; under the counting
//! lane's icount (`sleep=off`) that clock is the instruction count, so a
//! sample's sampling passes repeat. Its regions split at random points,
//! which the page-table walks follow. Spec: `workloads/damon.yaml`.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size, poll, read_file, read_u64, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held, check_one_task};
use crate::kind::Kind;
use crate::memory::SwapBackend;

pub const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";
const RECLAIM: &str = "/sys/module/damon_reclaim/parameters";
/// How long DAMON_RECLAIM may take to clear `commit_inputs`: a hundred of
/// its 100 ms aggregations.
const COMMIT_LIMIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(10);
/// The longest monitoring an operation may ask for.
pub const MAX_MONITOR_MS: u32 = 10_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Damon {
    pub tasks: u32,
    pub ops: u32,
    /// The region each operation writes while DAMON monitors it.
    pub size: Bytes,
    /// How long each operation lets the vaddr kdamond monitor before its
    /// commit, in milliseconds of guest time.
    pub monitor_ms: u32,
}

impl Default for Damon {
    fn default() -> Self {
        Damon {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(16),
            monitor_ms: 200,
        }
    }
}

impl Kind for Damon {
    /// DAMON_RECLAIM's scheme pages anonymous memory out, which needs swap
    /// (the campaign's watermarks keep it from reclaiming, a patch may not).
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        format!("size={} monitor={}ms", self.size, self.monitor_ms)
    }
}

impl Bench for Damon {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        // One sysfs tree, one DAMON_RECLAIM: two tasks would take each
        // other's kdamond.
        check_one_task(
            self.tasks,
            "DAMON's sysfs tree and DAMON_RECLAIM are one per kernel",
        )?;
        check_monitor_ms(self.monitor_ms)?;
        check_held("size", self.size, self.tasks, guest)
    }

    /// The spec's `needs: [damon, damon-reclaim]` has the host refuse a
    /// kernel without either before this runs.
    fn prepare(&self) -> io::Result<()> {
        for (param, value) in [
            ("wmarks_high", "1000"),
            ("wmarks_mid", "999"),
            ("wmarks_low", "0"),
        ] {
            write_file(format!("{RECLAIM}/{param}"), value)?;
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let mut region = Map::anon(self.size.bytes())?;
        region.touch(page_size());
        Ok(Box::new(Monitored {
            region,
            monitor: Duration::from_millis(u64::from(self.monitor_ms)),
        }))
    }
}

/// `monitor_ms` within 1 ms and [`MAX_MONITOR_MS`].
pub fn check_monitor_ms(monitor_ms: u32) -> Result<(), ParamError> {
    if monitor_ms == 0 || monitor_ms > MAX_MONITOR_MS {
        return Err(ParamError::new(
            "monitor_ms",
            monitor_ms,
            format!("must be 1 to {MAX_MONITOR_MS} (ms of guest time)"),
        ));
    }
    Ok(())
}

struct Monitored {
    region: Map,
    monitor: Duration,
}

impl Task for Monitored {
    fn op(&mut self) -> io::Result<()> {
        self.monitor_vaddr()?;
        reclaim_on_and_off()
    }
}

impl Monitored {
    fn monitor_vaddr(&mut self) -> io::Result<()> {
        let kdamonds = Path::new(KDAMONDS);
        let kdamond = kdamonds.join("0");
        let contexts = kdamond.join("contexts");
        let ctx = contexts.join("0");
        write_file(kdamonds.join("nr_kdamonds"), "1")?;
        write_file(contexts.join("nr_contexts"), "1")?;
        write_file(ctx.join("operations"), "vaddr")?;
        let attrs = ctx.join("monitoring_attrs");
        for (file, value) in [
            ("intervals/sample_us", "5000"),
            ("intervals/aggr_us", "100000"),
            ("intervals/update_us", "1000000"),
            ("nr_regions/min", "10"),
            ("nr_regions/max", "1000"),
        ] {
            write_file(attrs.join(file), value)?;
        }
        write_file(ctx.join("targets/nr_targets"), "1")?;
        write_file(
            ctx.join("targets/0/pid_target"),
            &std::process::id().to_string(),
        )?;
        write_file(ctx.join("schemes/nr_schemes"), "1")?;
        let scheme = ctx.join("schemes/0");
        write_file(scheme.join("action"), "stat")?;
        // The access pattern's ranges are 0 to 0 until written: a scheme
        // that takes every region says so.
        for (range, max) in [
            ("sz", u64::MAX.to_string()),
            ("nr_accesses", u32::MAX.to_string()),
            ("age", u32::MAX.to_string()),
        ] {
            write_file(scheme.join(format!("access_pattern/{range}/max")), &max)?;
        }

        let state = kdamond.join("state");
        write_file(&state, "on")?;
        self.region.touch(page_size());
        std::thread::sleep(self.monitor);
        write_file(&state, "commit")?;
        write_file(&state, "update_schemes_stats")?;
        let tried = read_u64(scheme.join("stats/nr_tried"))?;
        if scheme.join("tried_regions").exists() {
            write_file(&state, "update_schemes_tried_regions")?;
            write_file(&state, "clear_schemes_tried_regions")?;
        }
        write_file(&state, "off")?;
        write_file(contexts.join("nr_contexts"), "0")?;
        write_file(kdamonds.join("nr_kdamonds"), "0")?;
        if tried == 0 {
            return Err(io::Error::other(format!(
                "DAMON's stat scheme tried no region in {:?} of monitoring: {} reads 0",
                self.monitor,
                scheme.join("stats/nr_tried").display()
            )));
        }
        Ok(())
    }
}

/// Enables DAMON_RECLAIM, has it commit its parameters again, and
/// disables it.
fn reclaim_on_and_off() -> io::Result<()> {
    let param = |name: &str| PathBuf::from(RECLAIM).join(name);
    write_file(param("enabled"), "Y")?;
    // 6.12 starts the kdamond inside the write; 6.1 from a work item
    // (damon_reclaim_timer), so there kdamond_pid reads -1 a moment.
    wait_for(&param("kdamond_pid"), |pid| pid != "-1", "has no kdamond")?;
    write_file(param("commit_inputs"), "Y")?;
    wait_for(
        &param("commit_inputs"),
        |v| v == "N",
        "did not take its inputs",
    )?;
    write_file(param("enabled"), "N")?;
    // Stopped before the next operation starts the sysfs kdamond, which
    // DAMON refuses (EBUSY) while DAMON_RECLAIM's runs; 6.1 stops it from
    // the work item too.
    wait_for(&param("kdamond_pid"), |pid| pid == "-1", "kept its kdamond")
}

/// Polls one of DAMON_RECLAIM's parameters until `done` holds, within
/// [`COMMIT_LIMIT`]; else the error says DAMON_RECLAIM `what`.
fn wait_for(path: &std::path::Path, done: impl Fn(&str) -> bool, what: &str) -> io::Result<()> {
    poll(|| read_file(path), |v| done(v), COMMIT_LIMIT, POLL)?.map_err(|value| {
        io::Error::other(format!(
            "DAMON_RECLAIM {what} within {COMMIT_LIMIT:?}: {} reads {value}",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guest() -> GuestSize {
        GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        }
    }

    #[test]
    fn the_defaults_fit_and_one_task_is_the_limit() {
        assert!(Damon::default().check(guest()).is_ok());
        let two = Damon {
            tasks: 2,
            ..Damon::default()
        };
        assert_eq!(two.check(guest()).unwrap_err().param, "tasks");
    }

    #[test]
    fn monitoring_is_bounded() {
        for monitor_ms in [0, MAX_MONITOR_MS + 1] {
            let bench = Damon {
                monitor_ms,
                ..Damon::default()
            };
            assert_eq!(bench.check(guest()).unwrap_err().param, "monitor_ms");
        }
    }
}
