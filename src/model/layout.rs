//! Memory layouts: whether every boot of a variant lands its memory the
//! same way, or each boot in a layout of its own.
//!
//! In a deterministic lane (the cost model, icount without host-timed
//! devices) two boots with the same inputs run the same machine, so every
//! sample of a boot, and every boot of a variant, shares one physical
//! placement of the kernel's and the workload's data. Which cache sets that
//! placement shares decides a few percent of a cache-bound metric
//! (docs/cost-model.md, "Layout"), and an interval over samples cannot see
//! it. `varied` gives the k-th boot of every variant layout k, so that the
//! boots sample layouts and the boots, not the samples, are what a
//! comparison counts (Stabilizer's answer, Curtsinger and Berger, ASPLOS
//! 2013).

use serde::{Deserialize, Serialize};

/// The kernel command-line parameter that names a boot's layout. The
/// kernel ignores it (it mixes the whole command line into its entropy
/// pool, which is part of the point); the guest agent reads the layout from
/// its job.
pub const CMDLINE_KEY: &str = "patchbench.layout";

/// The fewest boots per variant `varied` takes: the statistics' default
/// minimum of observations per side, and with `varied` a boot is one.
pub const MIN_LAYOUT_BOOTS: u32 = 3;

/// `protocol.layouts`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Layouts {
    /// Every boot in the one layout its inputs give (the default).
    #[default]
    Fixed,
    /// The k-th boot of every variant in layout k (from 1).
    Varied,
}

impl Layouts {
    /// `fixed`: serialized by leaving the field out.
    pub fn is_fixed(&self) -> bool {
        *self == Layouts::Fixed
    }

    /// Each boot's layout, for boots given as variant indexes in boot
    /// order: `None` for `fixed`; for `varied`, how many boots of the same
    /// variant came before it, plus one. So with A, B, A, B the layouts
    /// are 1, 1, 2, 2: each layout number is run by every variant.
    pub fn of_boots(self, order: &[usize]) -> Vec<Option<u32>> {
        (0..order.len())
            .map(|i| match self {
                Layouts::Fixed => None,
                Layouts::Varied => Some(super::variant::earlier_boots(order, i) as u32 + 1),
            })
            .collect()
    }
}

/// The command-line word for layout `layout`.
pub fn cmdline_word(layout: u32) -> String {
    format!("{CMDLINE_KEY}={layout}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_runs_layouts_one_to_n_in_its_own_boot_order() {
        assert_eq!(Layouts::Fixed.of_boots(&[0, 1, 0]), [None, None, None]);
        assert_eq!(
            Layouts::Varied.of_boots(&[0, 1, 0, 1, 0, 1]),
            [Some(1), Some(1), Some(2), Some(2), Some(3), Some(3)]
        );
        // A shuffled order still gives each variant layouts 1, 2, 3 in turn.
        assert_eq!(
            Layouts::Varied.of_boots(&[1, 1, 0, 2, 0, 1, 0, 2, 2]),
            [
                Some(1),
                Some(2),
                Some(1),
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(3)
            ]
        );
        assert_eq!(cmdline_word(3), "patchbench.layout=3");
    }
}
