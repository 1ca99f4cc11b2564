//! How the guest kernel splits CPU time between user and system mode, read
//! from its own configuration (`/proc/config.gz`), so that a figure of
//! user or system time is only called precise when it is.
//!
//! Linux has two ways on x86 (init/Kconfig, "Cputime accounting"):
//!
//! - `TICK_CPU_ACCOUNTING` (tinyconfig's default): at every timer tick the
//!   whole tick goes to the mode the CPU happened to be in. User and system
//!   time are a sample of a few hundred ticks a second, whatever the clock.
//! - `VIRT_CPU_ACCOUNTING_GEN`: the context-tracking hooks charge the time
//!   at every user/kernel transition, from the scheduler clock. It runs on
//!   every CPU only with `CONTEXT_TRACKING_USER_FORCE` (the default
//!   without `NO_HZ_FULL`); otherwise only on `nohz_full=` CPUs, and the
//!   others fall back to ticks. A task's time is still handed over in
//!   chunks: what it ran in a mode is kept apart until it reaches one tick
//!   (`TICK_NSEC`, 1/HZ: `vtime_account_system()` and `vtime_user_exit()`
//!   in kernel/sched/cputime.c), and what is pending when the task exits
//!   never reaches its rusage. So a task's split is exact to 1/HZ per mode.
//!
//! `IRQ_TIME_ACCOUNTING` keeps interrupt time apart from the task it
//! interrupted (the `irq` and `softirq` columns of `/proc/stat`).
//!
//! `PARAVIRT_TIME_ACCOUNTING` keeps the time the host stole from a vCPU
//! (KVM's steal-time MSR) out of the task that was running: without it,
//! under KVM, a task's CPU time includes the host's other work.
//!
//! The classification is pure, so that the host can apply it to a built
//! `.config` and the agent to the booted kernel's own.

use serde::{Deserialize, Serialize};

/// How a kernel splits CPU time between user and system mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Accounting {
    /// Charged at every user/kernel transition on every CPU
    /// (`VIRT_CPU_ACCOUNTING_GEN` with `CONTEXT_TRACKING_USER_FORCE`).
    Precise,
    /// Split by timer ticks (`TICK_CPU_ACCOUNTING`, or the generic
    /// accounting without forced context tracking, which leaves every CPU
    /// outside `nohz_full=` on ticks).
    Tick,
    /// The kernel does not say: no `/proc/config.gz`
    /// (`CONFIG_IKCONFIG_PROC`).
    Unknown,
}

impl Accounting {
    /// The word reports use.
    pub fn word(self) -> &'static str {
        match self {
            Accounting::Precise => "precise",
            Accounting::Tick => "tick",
            Accounting::Unknown => "unknown",
        }
    }
}

/// What a kernel's configuration says about its CPU time accounting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CputimeFacts {
    pub accounting: Accounting,
    /// `CONFIG_HZ`: the tick, and under precise accounting the chunk a
    /// task's time is handed over in. Absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
    /// `CONFIG_IRQ_TIME_ACCOUNTING`: interrupt time is kept apart.
    pub irq_time: bool,
    /// The options precise accounting needs that this kernel lacks, as
    /// `CONFIG_X=y` (empty when precise). With [`Accounting::Unknown`],
    /// `CONFIG_IKCONFIG_PROC=y`, which would have told.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// `CONFIG_PARAVIRT_TIME_ACCOUNTING`: under KVM, time the host stole
    /// from a vCPU is not charged to the task it interrupted. Absent when
    /// unknown, and from agents before protocol 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paravirt_steal: Option<bool>,
}

/// The options precise accounting needs, all `=y`.
pub const PRECISE_OPTIONS: [&str; 3] = [
    "CONFIG_VIRT_CPU_ACCOUNTING_GEN",
    "CONFIG_CONTEXT_TRACKING_USER_FORCE",
    "CONFIG_IRQ_TIME_ACCOUNTING",
];

/// What `.config` text (a build's, or the booted kernel's
/// `/proc/config.gz` decompressed) says.
pub fn from_kconfig(text: &str) -> CputimeFacts {
    let value = |name: &str| {
        text.lines().find_map(|line| {
            let (key, value) = line.trim().split_once('=')?;
            (key == name).then(|| value.trim_matches('"').to_string())
        })
    };
    let on = |name: &str| value(name).as_deref() == Some("y");
    let missing: Vec<String> = PRECISE_OPTIONS
        .iter()
        .filter(|name| !on(name))
        .map(|name| format!("{name}=y"))
        .collect();
    // The generic accounting without forced tracking still splits by ticks
    // on every CPU outside nohz_full=, and patchbench never sets that.
    let precise = on("CONFIG_VIRT_CPU_ACCOUNTING_GEN") && on("CONFIG_CONTEXT_TRACKING_USER_FORCE");
    CputimeFacts {
        accounting: if precise {
            Accounting::Precise
        } else {
            Accounting::Tick
        },
        hz: value("CONFIG_HZ").and_then(|v| v.parse().ok()),
        irq_time: on("CONFIG_IRQ_TIME_ACCOUNTING"),
        missing,
        paravirt_steal: Some(on("CONFIG_PARAVIRT_TIME_ACCOUNTING")),
    }
}

/// The facts of a kernel that does not publish its configuration.
pub fn unknown() -> CputimeFacts {
    CputimeFacts {
        accounting: Accounting::Unknown,
        hz: None,
        irq_time: false,
        missing: vec!["CONFIG_IKCONFIG_PROC=y".to_string()],
        paravirt_steal: None,
    }
}

impl CputimeFacts {
    /// Whether user and system times from this kernel are exact (to 1/HZ
    /// per task and mode), interrupts kept apart.
    pub fn is_precise(&self) -> bool {
        self.accounting == Accounting::Precise && self.irq_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of a 6.12 tinyconfig-based `.config` that matter here.
    const TICK: &str = "CONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_TICK_CPU_ACCOUNTING=y\n\
        # CONFIG_VIRT_CPU_ACCOUNTING_GEN is not set\n# CONFIG_IRQ_TIME_ACCOUNTING is not set\n";
    const PRECISE: &str = "CONFIG_HZ_1000=y\nCONFIG_HZ=1000\nCONFIG_CONTEXT_TRACKING_USER=y\n\
        CONFIG_CONTEXT_TRACKING_USER_FORCE=y\nCONFIG_VIRT_CPU_ACCOUNTING=y\n\
        CONFIG_VIRT_CPU_ACCOUNTING_GEN=y\nCONFIG_IRQ_TIME_ACCOUNTING=y\n\
        CONFIG_PARAVIRT_TIME_ACCOUNTING=y\n";

    #[test]
    fn a_tick_kernel_is_tick_and_names_what_precise_needs() {
        let facts = from_kconfig(TICK);
        assert_eq!(facts.accounting, Accounting::Tick);
        assert_eq!(facts.hz, Some(250));
        assert!(!facts.irq_time && !facts.is_precise());
        assert_eq!(
            facts.missing,
            [
                "CONFIG_VIRT_CPU_ACCOUNTING_GEN=y",
                "CONFIG_CONTEXT_TRACKING_USER_FORCE=y",
                "CONFIG_IRQ_TIME_ACCOUNTING=y"
            ]
        );
    }

    #[test]
    fn a_precise_kernel_is_precise() {
        let facts = from_kconfig(PRECISE);
        assert_eq!(facts.accounting, Accounting::Precise);
        assert_eq!(facts.hz, Some(1000));
        assert!(facts.is_precise() && facts.missing.is_empty());
    }

    #[test]
    fn generic_accounting_without_forced_tracking_is_still_ticks() {
        let text = PRECISE.replace(
            "CONFIG_CONTEXT_TRACKING_USER_FORCE=y",
            "# CONFIG_CONTEXT_TRACKING_USER_FORCE is not set\nCONFIG_NO_HZ_FULL=y",
        );
        let facts = from_kconfig(&text);
        assert_eq!(facts.accounting, Accounting::Tick);
        assert_eq!(facts.missing, ["CONFIG_CONTEXT_TRACKING_USER_FORCE=y"]);
    }

    #[test]
    fn precise_without_irq_time_is_not_called_precise() {
        let facts = from_kconfig(&PRECISE.replace("CONFIG_IRQ_TIME_ACCOUNTING=y", ""));
        assert_eq!(facts.accounting, Accounting::Precise);
        assert!(!facts.is_precise());
        assert_eq!(facts.missing, ["CONFIG_IRQ_TIME_ACCOUNTING=y"]);
    }

    #[test]
    fn paravirt_steal_accounting_is_read_when_the_config_is() {
        assert_eq!(from_kconfig(PRECISE).paravirt_steal, Some(true));
        assert_eq!(from_kconfig(TICK).paravirt_steal, Some(false));
        assert_eq!(unknown().paravirt_steal, None);
        // An older agent's facts say nothing of it.
        let old = r#"{"accounting":"tick","irq_time":false}"#;
        let facts: CputimeFacts = serde_json::from_str(old).unwrap();
        assert_eq!(facts.paravirt_steal, None);
    }

    #[test]
    fn facts_round_trip_and_unknown_names_the_option_that_would_tell() {
        for facts in [from_kconfig(PRECISE), from_kconfig(TICK), unknown()] {
            let text = serde_json::to_string(&facts).unwrap();
            assert_eq!(serde_json::from_str::<CputimeFacts>(&text).unwrap(), facts);
        }
        assert_eq!(unknown().missing, ["CONFIG_IKCONFIG_PROC=y"]);
        assert!(!unknown().is_precise());
    }
}
