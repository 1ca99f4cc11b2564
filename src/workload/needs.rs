//! The kernel features a workload needs (its spec's `needs:`), checked
//! twice: against the campaign's configuration before anything is built
//! ([`unmet_in_config`]), and against what each boot's kernel reads back
//! (`GuestFacts::features`, [`missing_at_boot`]), so that a workload the
//! kernel cannot run is refused by name, with the option that builds it.

use patchbench_agent::feature::Feature;

use crate::kconfig::Values;

/// A workload's needed features that a configuration does not set `y`.
/// `values` is what the campaign's base and fragments set, merged in
/// order; `complete` says whether that is the whole configuration (a
/// tinyconfig base, whose every other option is off) or only what the
/// fragments add to a base this cannot read (defconfig), in which case a
/// feature it does not set is left to the boot's read-back.
pub fn unmet_in_config(needs: &[Feature], values: &Values, complete: bool) -> Vec<Feature> {
    needs
        .iter()
        .copied()
        .filter(|f| {
            let option = f.config().trim_start_matches("CONFIG_");
            match values.get(option).map(String::as_str) {
                Some("y") => false,
                Some(_) => true,
                None => complete,
            }
        })
        .collect()
}

/// The needed features a boot's kernel did not read back.
pub fn missing_at_boot(needs: &[Feature], present: &[Feature]) -> Vec<Feature> {
    needs
        .iter()
        .copied()
        .filter(|f| !present.contains(f))
        .collect()
}

/// A boot whose kernel lacks a feature its workload needs: the
/// campaign's configuration is at fault (exit 2), not the host.
#[derive(Debug, thiserror::Error)]
#[error(
    "boot {boot}: workload {kind} needs {}, which this kernel does not have (its boot did not read it back); build it with a fragment that sets it, such as kconfigs/mm-all.config",
    names(.missing)
)]
pub struct Missing {
    pub boot: String,
    pub kind: String,
    pub missing: Vec<Feature>,
}

/// `ksm (CONFIG_KSM), hugetlb (CONFIG_HUGETLBFS)`.
pub fn names(features: &[Feature]) -> String {
    features
        .iter()
        .map(|f| format!("{} ({})", f.name(), f.config()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feature_is_unmet_unless_the_configuration_sets_it() {
        let values = Values::from([
            ("KSM".to_string(), "y".to_string()),
            ("HUGETLBFS".to_string(), "n".to_string()),
        ]);
        let needs = [Feature::Ksm, Feature::Hugetlb, Feature::Numa];
        assert_eq!(
            unmet_in_config(&needs, &values, true),
            [Feature::Hugetlb, Feature::Numa]
        );
        // Over a base it cannot read, only what a fragment turns off.
        assert_eq!(unmet_in_config(&needs, &values, false), [Feature::Hugetlb]);
        assert_eq!(
            missing_at_boot(&needs, &[Feature::Ksm, Feature::Numa]),
            [Feature::Hugetlb]
        );
        assert_eq!(
            names(&[Feature::Ksm, Feature::Hugetlb]),
            "ksm (CONFIG_KSM), hugetlb (CONFIG_HUGETLBFS)"
        );
    }
}
