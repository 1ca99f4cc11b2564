//! Variant identity: the name each kernel-and-settings combination goes by
//! in a campaign (`A`, `B`, or a campaign's own), and the labels of its
//! boots (`A`, `B`, `A'`).

use std::fmt;

/// The longest name of a variant or a control.
pub const MAX_NAME_LEN: usize = 32;

/// Whether `name` may name a variant or a control: non-empty, at most
/// [`MAX_NAME_LEN`] characters, only ASCII letters, digits, `-` and `_`
/// (it goes into reports, HTML anchors and file names).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A name that is not a valid [`VariantName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a name: use 1 to {MAX_NAME_LEN} ASCII letters, digits, `-` or `_`")]
pub struct NameError {
    pub name: String,
}

/// The name of a variant, valid by construction ([`valid_name`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VariantName(String);

impl VariantName {
    pub fn new(name: impl Into<String>) -> Result<VariantName, NameError> {
        let name = name.into();
        if valid_name(&name) {
            Ok(VariantName(name))
        } else {
            Err(NameError { name })
        }
    }

    /// `A`: the base, in a two-kernel campaign.
    pub fn a() -> VariantName {
        VariantName("A".into())
    }

    /// `B`: the base plus the series, in a two-kernel campaign.
    pub fn b() -> VariantName {
        VariantName("B".into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for VariantName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The label of the boot at `index` in `order`: a variant's second boot is
/// primed (`A'`), its third double-primed, and so on.
pub fn boot_label<T: PartialEq + fmt::Display>(order: &[T], index: usize) -> String {
    format!(
        "{}{}",
        order[index],
        "'".repeat(earlier_boots(order, index))
    )
}

/// How many boots of boot `index`'s variant come before it in `order`: 0
/// for its first boot (the label's primes, and the memory layout's number
/// minus one).
pub fn earlier_boots<T: PartialEq>(order: &[T], index: usize) -> usize {
    order[..index]
        .iter()
        .filter(|v| **v == order[index])
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_safe() {
        assert!(valid_name("unlimited"));
        assert!(valid_name("zswap-max_2"));
        for bad in ["", "a b", "<b>", "é", &"x".repeat(33)] {
            assert!(!valid_name(bad), "{bad:?}");
            assert!(VariantName::new(bad).is_err());
        }
        assert_eq!(VariantName::a().as_str(), "A");
    }

    #[test]
    fn the_return_to_a_is_primed() {
        let order = ["A", "B", "A", "B"];
        let labels: Vec<_> = (0..4).map(|i| boot_label(&order, i)).collect();
        assert_eq!(labels, ["A", "B", "A'", "B'"]);
    }
}
