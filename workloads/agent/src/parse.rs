//! Pure parsers for the kernel text files the agent reads.
//!
//! Nothing here touches the file system: each function takes the file's text,
//! so each is unit-tested against real kernel output.

use std::collections::BTreeMap;

/// Parses a flat `key value` file such as a cgroup's `memory.stat`.
pub fn flat_keyed(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut map = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut fields = line.split_whitespace();
        let (Some(key), Some(value), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(format!("malformed line {line:?}"));
        };
        let value = value
            .parse::<u64>()
            .map_err(|_| format!("non-numeric value in line {line:?}"))?;
        map.insert(key.to_string(), value);
    }
    Ok(map)
}

/// `MemTotal` from `/proc/meminfo`, in KiB.
pub fn mem_total_kib(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.strip_prefix("MemTotal:")?;
        let mut fields = rest.split_whitespace();
        let value = fields.next()?.parse().ok()?;
        (fields.next() == Some("kB")).then_some(value)
    })
}

/// `/proc/swaps` without its header line, one entry per active swap area.
pub fn swap_lines(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// The name and start time (`starttime`, ticks since boot) of a task from
/// its `/proc/<pid>/stat` line; the name is between the first `(` and the
/// last `)`, as it may hold spaces and parentheses.
pub fn proc_pid_stat(text: &str) -> Option<(&str, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?;
    // After the name: state (field 3) ... starttime (field 22).
    let started = text
        .get(close + 1..)?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    Some((comm, started))
}

/// The whole machine's CPU time by mode from `/proc/stat`'s first line
/// (`cpu  user nice system idle iowait irq softirq steal ...`), in the
/// file's unit (`USER_HZ` ticks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStatCpu {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    /// Time the hypervisor ran something else while a vCPU wanted to run
    /// (KVM's steal-time MSR; 0 under TCG).
    pub steal: u64,
}

/// Parses `/proc/stat`'s aggregate `cpu` line.
pub fn proc_stat_cpu(text: &str) -> Result<ProcStatCpu, String> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .ok_or("no `cpu` line in /proc/stat")?;
    let values = line
        .split_whitespace()
        .skip(1)
        .map(|v| {
            v.parse::<u64>()
                .map_err(|_| format!("non-numeric value {v:?} in /proc/stat line {line:?}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // steal is the 8th value since Linux 2.6.11.
    let [user, nice, system, idle, iowait, irq, softirq, steal, ..] = values[..] else {
        return Err(format!("/proc/stat line {line:?} has fewer than 8 values"));
    };
    Ok(ProcStatCpu {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_keyed_parses_memory_stat() {
        let text = "anon 4096\nfile 0\nzswap 123\nzswpin 7\nzswpout 8192\nzswpwb 0\n";
        let map = flat_keyed(text).unwrap();
        assert_eq!(map["zswpout"], 8192);
        assert_eq!(map["zswpin"], 7);
        assert_eq!(map.len(), 6);
    }

    #[test]
    fn flat_keyed_rejects_malformed_lines() {
        assert!(flat_keyed("anon\n").unwrap_err().contains("anon"));
        assert!(flat_keyed("anon 1 2\n").is_err());
        assert!(flat_keyed("anon x\n").unwrap_err().contains("non-numeric"));
    }

    #[test]
    fn proc_pid_stat_gives_the_name_and_start_time() {
        let text = "57 (kworker/0:1-mm_percpu_wq) I 2 0 0 0 -1 69238880 0 0 0 0 0 45 0 0 20 0 1 0 118 0 0 \
                    18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0\n";
        assert_eq!(proc_pid_stat(text), Some(("kworker/0:1-mm_percpu_wq", 118)));
        let odd = "9 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0\n";
        assert_eq!(proc_pid_stat(odd), Some(("a (b) c", 7)));
        assert_eq!(proc_pid_stat("9 (x) S 1\n"), None);
    }

    #[test]
    fn proc_stat_cpu_reads_the_aggregate_line() {
        let text = "cpu  12 3 456 7890 11 22 33 44 0 0\ncpu0 6 1 228 3945 5 11 16 22 0 0\n\
                    intr 1234 0\nctxt 99\n";
        let cpu = proc_stat_cpu(text).unwrap();
        assert_eq!(
            cpu,
            ProcStatCpu {
                user: 12,
                nice: 3,
                system: 456,
                idle: 7890,
                iowait: 11,
                irq: 22,
                softirq: 33,
                steal: 44
            }
        );
        assert!(
            proc_stat_cpu("cpu0 1 2 3\n")
                .unwrap_err()
                .contains("no `cpu`")
        );
        assert!(
            proc_stat_cpu("cpu 1 2 3 4 5 6 7\n")
                .unwrap_err()
                .contains("fewer than 8")
        );
        assert!(
            proc_stat_cpu("cpu 1 x 3 4 5 6 7 8\n")
                .unwrap_err()
                .contains("non-numeric")
        );
    }

    #[test]
    fn mem_total_reads_kib() {
        let text = "MemTotal:         493416 kB\nMemFree:          470000 kB\n";
        assert_eq!(mem_total_kib(text), Some(493_416));
        assert_eq!(mem_total_kib("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total_kib("MemTotal: 1 MB\n"), None);
    }

    #[test]
    fn swap_lines_drop_the_header() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/vda                                partition\t262140\t\t0\t\t-2\n";
        let lines = swap_lines(text);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("/dev/vda"));
        assert!(swap_lines("Filename Type Size Used Priority\n").is_empty());
    }
}
