//! The vocabulary every stage speaks: variant names, boot orders, CPU
//! shapes, cgroup limits, metric units and directions, and the one verdict
//! enum. These modules import nothing of the crate (a test checks it), so
//! every other module can depend on them without a cycle: config, controls,
//! workload, stats, results, report and html all sit above this layer.

pub mod accel;
pub mod draw;
pub mod guest;
pub mod lane;
pub mod layout;
pub mod metric;
pub mod order;
pub mod profile;
pub mod sequential;
pub mod shard;
pub mod variant;
pub mod verdict;

pub use accel::Accel;
pub use guest::{CpuShape, GuestShape, Limit, ParallelBoots, TcgThreads};
pub use lane::{AccelChoice, CostModel, Lane, LaneRefused, LaneRequest};
pub use layout::Layouts;
pub use metric::{Direction, Unit};
pub use order::BootOrder;
pub use profile::{SymbolDelta, SymbolProfile};
pub use sequential::{Sequential, Spending};
pub use shard::Shard;
pub use variant::{NameError, VariantName, boot_label, valid_name};
pub use verdict::Verdict;
