//! The kernel features a workload needs (its spec's `needs:`), checked
//! twice: against the campaign's configuration before anything is built
//! ([`unmet_in_config`]), and against what each boot's kernel reads back
//! (`GuestFacts::features`, [`missing_at_boot`]), so that a workload the
//! kernel cannot run is refused by name, with the option that builds it.
//!
//! A kernel version adds interfaces no option builds (a prctl, an ioctl, a
//! sysfs file): a workload names those in its spec's `requires:`, each as
//! a file of the tree and a word it holds ([`SourceNeed`]), and the tree
//! under test is read for them before anything is built
//! ([`unmet_in_tree`]). The source, not a version number, is the test: a
//! distribution's tree may carry an interface back to an older version.

use std::collections::BTreeMap;

use patchbench_agent::feature::Feature;
use serde::Deserialize;

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

/// An interface the workload uses that the tree's source must have (a
/// spec's `requires:` entry).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceNeed {
    /// What the workload uses, as a refusal names it, with the version
    /// that added it: "process-wide merging (PR_SET_MEMORY_MERGE, Linux 6.4)".
    pub what: String,
    /// A file of the tree, from its top: `include/uapi/linux/prctl.h`.
    pub file: String,
    /// A word the file holds only where the tree has the interface.
    pub has: String,
    /// Only for a workload whose parameters have these values (as the
    /// results document writes them); absent: always.
    #[serde(default)]
    pub when: BTreeMap<String, String>,
}

impl SourceNeed {
    /// Whether it applies to a workload with these parameters.
    pub fn applies(&self, params: &BTreeMap<String, String>) -> bool {
        self.when.iter().all(|(k, v)| params.get(k) == Some(v))
    }
}

/// The needs a tree does not meet, with why: `read` gives a file of the
/// tree (None where it has no such file).
pub fn unmet_in_tree(
    needs: &[SourceNeed],
    params: &BTreeMap<String, String>,
    read: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    needs
        .iter()
        .filter(|n| n.applies(params))
        .filter_map(|n| match read(&n.file) {
            Some(text) if text.contains(&n.has) => None,
            Some(_) => Some(format!(
                "{}: the tree's {} has no {}",
                n.what, n.file, n.has
            )),
            None => Some(format!("{}: the tree has no {}", n.what, n.file)),
        })
        .collect()
}

/// A workload the tree under test cannot run, refused before anything is
/// built (exit 2): the campaign asked for what this tree does not have.
/// A list of campaigns (`run --suite`) names it and runs the next.
#[derive(Debug, thiserror::Error)]
#[error(
    "workload {kind}{} needs what this tree does not have, so it is refused before any build: {}",
    if .set.is_empty() { String::new() } else { format!(" ({})", .set) },
    .unmet.join("; ")
)]
pub struct Unsupported {
    pub kind: String,
    /// The parameters that made a need apply (`via: prctl`); may be empty.
    pub set: String,
    pub unmet: Vec<String>,
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
    fn a_source_need_applies_by_parameter_and_names_what_the_tree_lacks() {
        let need = |has: &str, when: &[(&str, &str)]| SourceNeed {
            what: format!("the {has} interface"),
            file: "include/uapi/linux/x.h".into(),
            has: has.into(),
            when: when
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let needs = [need("X_MOVE", &[]), need("X_MERGE", &[("via", "prctl")])];
        let params = |via: &str| BTreeMap::from([("via".to_string(), via.to_string())]);
        let header = |_: &str| Some("#define X_MERGE 1\n".to_string());
        assert_eq!(
            unmet_in_tree(&needs, &params("prctl"), header),
            ["the X_MOVE interface: the tree's include/uapi/linux/x.h has no X_MOVE"]
        );
        let none = |_: &str| None;
        assert_eq!(
            unmet_in_tree(&needs, &params("madvise"), none),
            ["the X_MOVE interface: the tree has no include/uapi/linux/x.h"]
        );
        assert_eq!(unmet_in_tree(&needs, &params("prctl"), none).len(), 2);
        let both = |_: &str| Some("X_MOVE X_MERGE".to_string());
        assert!(unmet_in_tree(&needs, &params("prctl"), both).is_empty());
    }

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
