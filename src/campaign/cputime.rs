//! The check every boot of a `kernel.cputime: precise` campaign passes
//! before its first sample: its kernel, by its own `/proc/config.gz`,
//! charges CPU time at every kernel entry and exit. Otherwise its user and
//! system times would be samples of timer ticks reported as exact.

use patchbench_agent::cputime::{Accounting, CputimeFacts};

use crate::config::CputimeChoice;

/// A boot whose kernel cannot give the precise CPU time its campaign asks
/// for.
#[derive(Debug, thiserror::Error)]
#[error(
    "boot {boot}: the campaign measures precise user and system time (kernel.cputime: precise), but {why}; build the kernel with kconfigs/cputime.config (patchbench merges it by default), or set kernel.cputime: tick to accept tick-sampled times"
)]
pub struct CputimeRefused {
    pub boot: String,
    pub why: String,
}

/// Whether boot `boot`, whose agent reported `facts` (`None`: an agent
/// that does not say), may measure under `choice`.
pub fn check(
    choice: CputimeChoice,
    boot: &str,
    facts: Option<&CputimeFacts>,
) -> Result<(), CputimeRefused> {
    if choice == CputimeChoice::Tick {
        return Ok(());
    }
    let refuse = |why: String| {
        Err(CputimeRefused {
            boot: boot.to_string(),
            why,
        })
    };
    let Some(facts) = facts else {
        return refuse("its guest agent did not report how the kernel accounts CPU time".into());
    };
    if facts.is_precise() {
        return Ok(());
    }
    let missing = facts.missing.join(", ");
    match facts.accounting {
        Accounting::Unknown => refuse(format!(
            "its kernel does not publish its configuration, so nothing shows how it accounts CPU time (it lacks {missing})"
        )),
        Accounting::Tick => refuse(format!(
            "its kernel splits CPU time by timer ticks (it lacks {missing})"
        )),
        Accounting::Precise => refuse(format!(
            "its kernel charges interrupt time to the tasks it interrupts (it lacks {missing})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbench_agent::cputime::{from_kconfig, unknown};

    const TICK: &str = "CONFIG_HZ=250\nCONFIG_TICK_CPU_ACCOUNTING=y\n";
    const PRECISE: &str = "CONFIG_HZ=1000\nCONFIG_VIRT_CPU_ACCOUNTING_GEN=y\n\
        CONFIG_CONTEXT_TRACKING_USER_FORCE=y\nCONFIG_IRQ_TIME_ACCOUNTING=y\n";

    #[test]
    fn a_precise_campaign_refuses_a_tick_kernel_naming_the_missing_option() {
        let err = check(CputimeChoice::Precise, "A", Some(&from_kconfig(TICK))).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("boot A: "), "{text}");
        assert!(text.contains("splits CPU time by timer ticks"), "{text}");
        assert!(
            text.contains("CONFIG_VIRT_CPU_ACCOUNTING_GEN=y"),
            "the option is named: {text}"
        );
        assert!(text.contains("kernel.cputime: tick"), "{text}");
    }

    #[test]
    fn a_kernel_that_does_not_say_is_refused_too() {
        let err = check(CputimeChoice::Precise, "B", Some(&unknown())).unwrap_err();
        assert!(err.to_string().contains("CONFIG_IKCONFIG_PROC=y"), "{err}");
        let err = check(CputimeChoice::Precise, "B", None).unwrap_err();
        assert!(err.to_string().contains("did not report"), "{err}");
        let no_irq = from_kconfig(&PRECISE.replace("CONFIG_IRQ_TIME_ACCOUNTING=y", ""));
        let err = check(CputimeChoice::Precise, "B", Some(&no_irq)).unwrap_err();
        assert!(err.to_string().contains("interrupt time"), "{err}");
    }

    #[test]
    fn precise_kernels_pass_and_tick_campaigns_take_anything() {
        check(CputimeChoice::Precise, "A", Some(&from_kconfig(PRECISE))).unwrap();
        check(CputimeChoice::Tick, "A", Some(&from_kconfig(TICK))).unwrap();
        check(CputimeChoice::Tick, "A", None).unwrap();
    }
}
