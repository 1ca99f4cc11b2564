//! Reading the guest's serial console log for signs of trouble. Pure.

/// Something the kernel said that makes a boot's results untrustworthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trouble {
    pub kind: &'static str,
    /// The lines around the first sign, for the error message.
    pub excerpt: String,
}

/// Console patterns, most specific first, with the name of what they mean.
const PATTERNS: [(&str, &str); 9] = [
    ("Kernel panic - not syncing", "kernel panic"),
    ("BUG: soft lockup", "soft lockup"),
    ("Watchdog detected hard LOCKUP", "hard lockup"),
    ("blocked for more than", "hung task"),
    ("BUG:", "kernel BUG"),
    ("Oops:", "kernel oops"),
    ("WARNING:", "kernel warning"),
    ("Out of memory: Killed process", "OOM kill"),
    ("Memory cgroup out of memory: Killed process", "OOM kill"),
];

/// Why a kernel that never let the agent say hello stopped, where its
/// console says: a hint for the boot-timeout error, or `None`.
pub fn stall_hint(console: &str) -> Option<&'static str> {
    let last = console
        .lines()
        .rev()
        .find(|l| !l.contains("random: crng init done"))?;
    // x86's "Booting SMP configuration" line lists each CPU as it comes up;
    // "Brought up" follows once every one has.
    (last.contains(" CPUs: ") && !console.contains("smp: Brought up")).then_some(
        "the console stops while the kernel brings up its second CPU (x86: Booting SMP configuration): under icount, QEMU before 8.1 never runs a CPU that another waits for without yielding, as Linux before 6.5 waits here (src/vm/smp_icount.rs); set vm.cpus.online: 1 (or run --online 1), as ci/smoke-6.1.yaml does, or use QEMU 8.1 or later",
    )
}

/// How many lines before and after the first sign an excerpt keeps.
const BEFORE: usize = 3;
const AFTER: usize = 12;

/// The first sign of trouble in a console log, if any.
pub fn find_trouble(console: &str) -> Option<Trouble> {
    let lines: Vec<&str> = console.lines().collect();
    let (at, kind) = lines.iter().enumerate().find_map(|(i, line)| {
        PATTERNS
            .iter()
            .find(|(needle, _)| line.contains(needle))
            .map(|(_, kind)| (i, *kind))
    })?;
    Some(Trouble {
        kind,
        excerpt: excerpt(&lines, at),
    })
}

fn excerpt(lines: &[&str], at: usize) -> String {
    let start = at.saturating_sub(BEFORE);
    let end = (at + AFTER + 1).min(lines.len());
    lines[start..end].join("\n")
}

/// The last `n` lines of a console log.
pub fn tail(console: &str, n: usize) -> String {
    let lines: Vec<&str> = console.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_found_with_context() {
        let log = "booting\n[    2.1] Run /init as init process\n[    2.3] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100\n[    2.3] CPU: 0 PID: 1\n";
        let t = find_trouble(log).unwrap();
        assert_eq!(t.kind, "kernel panic");
        assert!(t.excerpt.starts_with("booting\n"));
        assert!(t.excerpt.contains("Attempted to kill init"));
    }

    #[test]
    fn the_most_specific_name_wins_on_a_line() {
        let t = find_trouble("x\nwatchdog: BUG: soft lockup - CPU#0 stuck for 22s!\n").unwrap();
        assert_eq!(t.kind, "soft lockup");
        let t = find_trouble("Memory cgroup out of memory: Killed process 77 (init)\n").unwrap();
        assert_eq!(t.kind, "OOM kill");
    }

    #[test]
    fn a_clean_log_has_no_trouble() {
        assert_eq!(
            find_trouble("Linux version 6.12\nzswap: loaded using pool lzo/zsmalloc\n"),
            None
        );
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
    }

    #[test]
    fn a_kernel_stuck_bringing_up_a_cpu_is_named() {
        let stuck = "[    0.069791] smp: Bringing up secondary CPUs ...\n[    0.070061] x86: Booting SMP configuration:\n[    0.070069] .... node  #0, CPUs:        #1\n[   17.101335] random: crng init done\n";
        assert!(stall_hint(stuck).unwrap().contains("vm.cpus.online: 1"));
        let up = format!(
            "{stuck}[    0.2] smp: Brought up 1 node, 2 CPUs\n[    0.3] Run /init as init process\n"
        );
        assert_eq!(stall_hint(&up), None);
        assert_eq!(stall_hint(""), None);
    }
}
