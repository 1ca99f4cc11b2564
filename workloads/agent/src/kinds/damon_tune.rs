//! `damon-tune`: DAMON's sysfs interface driven whole, the way damo (its
//! user-space tool) starts, inspects and tunes a kdamond: `damo start`
//! writes a context with its target regions and a scheme with an access
//! pattern, quotas and a quota goal, watermarks and filters; `damo
//! status` reads the whole tree back; `damo tune` writes new values and
//! commits them; `damo report` has the kdamond update the schemes' stats,
//! tried regions and effective quotas, and reads them. `damon` runs the
//! monitoring itself with a minimal tree; this is the interface's code,
//! mm/damon/sysfs.c and sysfs-schemes.c, where most of DAMON's patches
//! land.
//!
//! Each operation, in the task's own process, on a region of `size` it
//! wrote before its window:
//! 1. builds a kdamond with one vaddr context (DAMON's default intervals,
//!    10 to 1000 regions) targeting this process, with one initial target
//!    region (the task's region), and one `stat` scheme: every region's
//!    access pattern, a quota of 10 ms and `size` per second with weights
//!    and a `user_input` goal, watermarks on free memory that keep it
//!    active (1000, 999, 0 per mille), and two filters (anonymous pages;
//!    the region's address range);
//! 2. turns it on, writes the region again and sleeps `monitor_ms`;
//! 3. reads every file of the kdamond's tree;
//! 4. writes new quota values and a new goal, and `commit` and
//!    `commit_schemes_quota_goals`;
//! 5. writes `update_schemes_stats`, `update_schemes_tried_bytes`,
//!    `update_schemes_tried_regions` and `update_schemes_effective_quotas`,
//!    reads the scheme's tree again (stats, tried regions, effective
//!    quota), checks that the scheme tried some region, and writes
//!    `clear_schemes_tried_regions`;
//! 6. turns it off and removes the context and the kdamond.
//!
//! Spec: `workloads/damon-tune.yaml`.

use std::io;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::damon::{KDAMONDS, check_monitor_ms};
use crate::bench::sys::{Map, page_size, read_u64, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held, check_one_task};
use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DamonTune {
    pub tasks: u32,
    pub ops: u32,
    /// The region the kdamond monitors, which its target region and the
    /// address filter name.
    pub size: Bytes,
    /// How long each operation lets the kdamond monitor before reading
    /// its tree, in milliseconds of guest time.
    pub monitor_ms: u32,
}

impl Default for DamonTune {
    fn default() -> Self {
        DamonTune {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(16),
            monitor_ms: 200,
        }
    }
}

impl Kind for DamonTune {
    fn describe(&self) -> String {
        format!("size={} monitor={}ms", self.size, self.monitor_ms)
    }
}

impl Bench for DamonTune {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(self.tasks, "DAMON's sysfs tree is one per kernel")?;
        check_monitor_ms(self.monitor_ms)?;
        check_held("size", self.size, self.tasks, guest)
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let mut region = Map::anon(self.size.bytes())?;
        region.touch(page_size());
        Ok(Box::new(Tuner {
            region,
            monitor: Duration::from_millis(u64::from(self.monitor_ms)),
        }))
    }
}

struct Tuner {
    region: Map,
    monitor: Duration,
}

/// Writes each `(file, value)` under `dir`.
fn write_all(dir: &Path, files: &[(&str, String)]) -> io::Result<()> {
    for (file, value) in files {
        write_file(dir.join(file), value)?;
    }
    Ok(())
}

/// Reads every file under `dir`, as `damo status` reads the tree: the
/// number of files read.
fn read_tree(dir: &Path) -> io::Result<usize> {
    let mut read = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", dir.display())))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            read += read_tree(&path)?;
        } else if kind.is_file() {
            std::fs::read(&path).map_err(|e| {
                io::Error::new(e.kind(), format!("reading {}: {e}", path.display()))
            })?;
            read += 1;
        }
    }
    Ok(read)
}

impl Tuner {
    fn build(&self, kdamond: &Path) -> io::Result<()> {
        let (start, end) = (
            self.region.ptr as usize,
            self.region.ptr as usize + self.region.len,
        );
        write_file(Path::new(KDAMONDS).join("nr_kdamonds"), "1")?;
        write_file(kdamond.join("contexts/nr_contexts"), "1")?;
        let ctx = kdamond.join("contexts/0");
        write_all(
            &ctx,
            &[
                ("operations", "vaddr".into()),
                ("monitoring_attrs/intervals/sample_us", "5000".into()),
                ("monitoring_attrs/intervals/aggr_us", "100000".into()),
                ("monitoring_attrs/intervals/update_us", "1000000".into()),
                ("monitoring_attrs/nr_regions/min", "10".into()),
                ("monitoring_attrs/nr_regions/max", "1000".into()),
                ("targets/nr_targets", "1".into()),
                ("targets/0/pid_target", std::process::id().to_string()),
                ("targets/0/regions/nr_regions", "1".into()),
                ("targets/0/regions/0/start", start.to_string()),
                ("targets/0/regions/0/end", end.to_string()),
                ("schemes/nr_schemes", "1".into()),
            ],
        )?;
        let scheme = ctx.join("schemes/0");
        write_all(
            &scheme,
            &[
                ("action", "stat".into()),
                ("apply_interval_us", "0".into()),
                ("access_pattern/sz/max", u64::MAX.to_string()),
                ("access_pattern/nr_accesses/max", u32::MAX.to_string()),
                ("access_pattern/age/max", u32::MAX.to_string()),
                ("quotas/ms", "10".into()),
                ("quotas/bytes", self.region.len.to_string()),
                ("quotas/reset_interval_ms", "1000".into()),
                ("quotas/weights/sz_permil", "0".into()),
                ("quotas/weights/nr_accesses_permil", "500".into()),
                ("quotas/weights/age_permil", "500".into()),
                ("quotas/goals/nr_goals", "1".into()),
                ("quotas/goals/0/target_metric", "user_input".into()),
                ("quotas/goals/0/target_value", "10000".into()),
                ("quotas/goals/0/current_value", "5000".into()),
                ("watermarks/metric", "free_mem_rate".into()),
                ("watermarks/interval_us", "100000".into()),
                ("watermarks/high", "1000".into()),
                ("watermarks/mid", "999".into()),
                ("watermarks/low", "0".into()),
                ("filters/nr_filters", "2".into()),
                ("filters/0/type", "anon".into()),
                ("filters/0/matching", "N".into()),
                ("filters/1/type", "addr".into()),
                ("filters/1/addr_start", start.to_string()),
                ("filters/1/addr_end", end.to_string()),
                ("filters/1/matching", "N".into()),
            ],
        )
    }

    fn tune(&self, state: &Path, scheme: &Path) -> io::Result<()> {
        write_all(
            scheme,
            &[
                ("quotas/ms", "20".into()),
                ("quotas/weights/age_permil", "400".into()),
                ("quotas/goals/0/current_value", "6000".into()),
            ],
        )?;
        write_file(state, "commit")?;
        write_file(state, "commit_schemes_quota_goals")
    }
}

impl Task for Tuner {
    fn op(&mut self) -> io::Result<()> {
        let kdamond = Path::new(KDAMONDS).join("0");
        let state = kdamond.join("state");
        let scheme = kdamond.join("contexts/0/schemes/0");
        self.build(&kdamond)?;
        write_file(&state, "on")?;
        self.region.touch(page_size());
        std::thread::sleep(self.monitor);
        read_tree(&kdamond)?;
        self.tune(&state, &scheme)?;
        for command in [
            "update_schemes_stats",
            "update_schemes_tried_bytes",
            "update_schemes_tried_regions",
            "update_schemes_effective_quotas",
        ] {
            write_file(&state, command)?;
        }
        read_tree(&scheme)?;
        let tried = read_u64(scheme.join("stats/nr_tried"))?;
        write_file(&state, "clear_schemes_tried_regions")?;
        write_file(&state, "off")?;
        write_file(kdamond.join("contexts/nr_contexts"), "0")?;
        write_file(Path::new(KDAMONDS).join("nr_kdamonds"), "0")?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::damon::MAX_MONITOR_MS;

    #[test]
    fn a_tree_is_read_file_by_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/x"), "1").unwrap();
        std::fs::write(dir.path().join("a/b/y"), "2").unwrap();
        std::fs::write(dir.path().join("z"), "3").unwrap();
        assert_eq!(read_tree(dir.path()).unwrap(), 3);
    }

    #[test]
    fn one_task_and_bounded_monitoring() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(DamonTune::default().check(guest).is_ok());
        let two = DamonTune {
            tasks: 2,
            ..DamonTune::default()
        };
        assert_eq!(two.check(guest).unwrap_err().param, "tasks");
        let long = DamonTune {
            monitor_ms: MAX_MONITOR_MS + 1,
            ..DamonTune::default()
        };
        assert_eq!(long.check(guest).unwrap_err().param, "monitor_ms");
    }
}
