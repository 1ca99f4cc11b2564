//! The host's facts as the results document stores them (`host.host_facts`,
//! docs/results-schema.md): what the host was when it measured. Its own
//! type, converted at the edge (`campaign`) from the gatherer's.

use serde::{Deserialize, Serialize};

/// The host's clocksource, QEMU's version, the host kernel, THP, KSM and
/// the CPU frequency governor, each absent when the host did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostFactsRecord {
    /// The host kernel's release (`/proc/sys/kernel/osrelease`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The host's clocksource (`tsc`, `hpet`, `kvm-clock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
    /// QEMU's version (`7.2.22`), from `qemu-system-x86_64 --version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qemu_version: Option<String>,
    /// Transparent huge pages' `enabled` choice (`always`, `madvise`,
    /// `never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp_enabled: Option<String>,
    /// Transparent huge pages' `defrag` choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp_defrag: Option<String>,
    /// KSM's state (`/sys/kernel/mm/ksm/run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ksm: Option<KsmRecord>,
    /// The distinct CPU frequency governors; absent when no CPU has
    /// cpufreq (as in many VMs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governors: Option<Vec<String>>,
}

/// [`HostFactsRecord::ksm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KsmRecord {
    /// Not merging.
    Off,
    /// Merging pages marked mergeable.
    Merging,
    /// Unmerging every merged page.
    Unmerging,
}

impl KsmRecord {
    /// The word a report prints.
    pub fn word(self) -> &'static str {
        match self {
            KsmRecord::Off => "off",
            KsmRecord::Merging => "merging",
            KsmRecord::Unmerging => "unmerging",
        }
    }
}

impl HostFactsRecord {
    /// One line for a report: `host: Linux 6.1.0, clocksource tsc, QEMU
    /// 7.2.0, THP always/madvise, KSM off, governor performance`; what the
    /// host did not say is left out, and a host without cpufreq says so.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(kernel) = &self.kernel {
            parts.push(format!("Linux {kernel}"));
        }
        if let Some(clocksource) = &self.clocksource {
            parts.push(format!("clocksource {clocksource}"));
        }
        if let Some(qemu) = &self.qemu_version {
            parts.push(format!("QEMU {qemu}"));
        }
        match (&self.thp_enabled, &self.thp_defrag) {
            (Some(enabled), Some(defrag)) => parts.push(format!("THP {enabled}/{defrag}")),
            (Some(enabled), None) => parts.push(format!("THP {enabled}")),
            (None, Some(defrag)) => parts.push(format!("THP defrag {defrag}")),
            (None, None) => {}
        }
        if let Some(ksm) = self.ksm {
            parts.push(format!("KSM {}", ksm.word()));
        }
        parts.push(match &self.governors {
            Some(governors) => format!("governor {}", governors.join("/")),
            None => "no cpufreq".to_string(),
        });
        format!("host: {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> HostFactsRecord {
        HostFactsRecord {
            kernel: Some("6.1.0".into()),
            clocksource: Some("tsc".into()),
            qemu_version: Some("7.2.0".into()),
            thp_enabled: Some("always".into()),
            thp_defrag: Some("madvise".into()),
            ksm: Some(KsmRecord::Off),
            governors: Some(vec!["performance".into()]),
        }
    }

    #[test]
    fn the_line_names_every_fact_the_host_gave() {
        assert_eq!(
            full().line(),
            "host: Linux 6.1.0, clocksource tsc, QEMU 7.2.0, THP always/madvise, KSM off, \
             governor performance"
        );
        let sparse = HostFactsRecord {
            qemu_version: None,
            thp_defrag: None,
            ksm: None,
            governors: None,
            ..full()
        };
        assert_eq!(
            sparse.line(),
            "host: Linux 6.1.0, clocksource tsc, THP always, no cpufreq"
        );
    }

    #[test]
    fn the_record_round_trips_and_leaves_absent_facts_out() {
        let text = serde_json::to_string(&full()).unwrap();
        assert!(text.contains(r#""ksm":"off""#), "{text}");
        assert_eq!(
            serde_json::from_str::<HostFactsRecord>(&text).unwrap(),
            full()
        );
        assert_eq!(
            serde_json::to_string(&HostFactsRecord::default()).unwrap(),
            "{}"
        );
        assert!(serde_json::from_str::<HostFactsRecord>(r#"{"bogus":1}"#).is_err());
    }
}
