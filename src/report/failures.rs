//! Boots a guest failure stopped (`Boot::failure`): every report names
//! them, so a run that stopped early (the base's memcg OOM-killed the
//! workload, say) says so next to what it did measure.

use crate::results::Results;

/// A boot that stopped before its last sample.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedBoot {
    pub label: String,
    pub variant: String,
    /// Samples it measured, of every condition, and the protocol's number.
    pub measured: usize,
    pub planned: usize,
    /// What stopped it: the guest's own words, untrusted.
    pub what: String,
    pub console_log: String,
}

impl FailedBoot {
    /// One line for the reports, with `what` rendered by `quote` (a code
    /// span for Markdown, control characters removed for a terminal).
    pub fn sentence(&self, quote: impl Fn(&str) -> String) -> String {
        let boot = if self.label == self.variant {
            format!("Boot {}", self.label)
        } else {
            format!("Boot {} (variant {})", self.label, self.variant)
        };
        format!(
            "{boot} stopped after {} of {} samples: {} (console log: {}). A stopped boot's samples are left out of the comparison.",
            self.measured,
            self.planned,
            quote(&self.what),
            self.console_log
        )
    }
}

/// Every boot of `results` that a guest failure stopped, in boot order.
pub fn failed_boots(results: &Results) -> Vec<FailedBoot> {
    let planned = results.protocol.samples as usize * results.conditions().len();
    results
        .boots
        .iter()
        .filter_map(|boot| {
            let failure = boot.failure.as_ref()?;
            Some(FailedBoot {
                label: boot.label.clone(),
                variant: boot.variant.clone(),
                measured: boot.samples.len(),
                planned,
                what: failure.what.clone(),
                console_log: boot.console_log.display().to_string(),
            })
        })
        .collect()
}

/// The variants not compared because they have no complete boot (a guest
/// failure stopped them all, or none has run yet), in one sentence.
/// `None` when every variant has one.
pub fn nothing_compared(results: &Results) -> Option<String> {
    let missing: Vec<&str> = results
        .variants
        .iter()
        .map(|v| v.name.as_str())
        .filter(|name| results.samples_by_boot(name, None).is_empty())
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "Not compared: no complete boot of {}.",
        missing.join(", ")
    ))
}

/// Text from a guest for a terminal: control characters (escape sequences
/// among them) become spaces.
pub fn plain(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::BootFailure;

    #[test]
    fn a_stopped_boot_is_named_with_how_far_it_got_and_why() {
        let mut results = crate::results::tests::fixture();
        assert!(failed_boots(&results).is_empty());
        let planned = results.protocol.samples as usize * results.conditions().len();
        let boot = &mut results.boots[1];
        boot.samples.truncate(1);
        boot.failure = Some(BootFailure {
            what: "OOM kill (worker 0 was killed by SIGKILL)\u{1b}[31m `x`".into(),
            excerpt: "Memory cgroup out of memory".into(),
        });
        let failed = failed_boots(&results);
        assert_eq!(failed.len(), 1);
        let line = failed[0].sentence(plain);
        assert!(
            line.starts_with(&format!(
                "Boot B stopped after 1 of {planned} samples: OOM kill"
            )),
            "{line}"
        );
        assert!(!line.contains('\u{1b}'), "{line}");
        assert_eq!(nothing_compared(&results), None);
        results.boots[1].complete = false;
        assert_eq!(
            nothing_compared(&results).as_deref(),
            Some("Not compared: no complete boot of B.")
        );
        let md = failed[0].sentence(crate::report::code_span);
        assert!(
            md.contains("`OOM kill (worker 0 was killed by SIGKILL) [31m 'x'`"),
            "{md}"
        );
    }
}
