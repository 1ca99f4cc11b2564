//! The host's facts (`hostfacts`) converted at the edge into the results
//! document's own record (`results::HostFactsRecord`).

use crate::hostfacts::{HostFacts, Ksm};
use crate::results::HostFactsRecord;
use crate::results::hostfacts::KsmRecord;

/// The record of `facts`.
pub(super) fn record(facts: &HostFacts) -> HostFactsRecord {
    HostFactsRecord {
        kernel: facts.kernel.clone(),
        clocksource: facts.clocksource.clone(),
        qemu_version: facts.qemu_version.clone(),
        thp_enabled: facts.thp_enabled.clone(),
        thp_defrag: facts.thp_defrag.clone(),
        ksm: facts.ksm.map(|k| match k {
            Ksm::Off => KsmRecord::Off,
            Ksm::Merging => KsmRecord::Merging,
            Ksm::Unmerging => KsmRecord::Unmerging,
        }),
        governors: facts
            .governors
            .as_ref()
            .map(|g| g.iter().cloned().collect()),
    }
}

/// This host's facts, as the results record them.
pub(super) async fn gather() -> HostFactsRecord {
    record(&crate::hostfacts::gather().await)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_fact_reaches_the_record() {
        let facts = HostFacts {
            kernel: Some("6.1.0".into()),
            clocksource: Some("tsc".into()),
            qemu_version: Some("7.2.22".into()),
            thp_enabled: Some("always".into()),
            thp_defrag: Some("madvise".into()),
            ksm: Some(Ksm::Unmerging),
            governors: Some(BTreeSet::from(["performance".into(), "powersave".into()])),
        };
        assert_eq!(
            record(&facts).line(),
            "host: Linux 6.1.0, clocksource tsc, QEMU 7.2.22, THP always/madvise, \
             KSM unmerging, governor performance/powersave"
        );
        assert_eq!(record(&HostFacts::default()), HostFactsRecord::default());
    }
}
