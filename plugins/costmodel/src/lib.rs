//! patchbench's cost model, as plain Rust with no QEMU in it: the QEMU
//! plugin (`plugins/qemu`) drives it from TCG callbacks, and patchbench
//! reads what it writes. Everything here is deterministic: no hash-map
//! iteration in outputs, no randomness, no host time.
//!
//! - [`cache`]: one set-associative cache with true LRU;
//! - [`machine`]: per-vCPU L1I/L1D/L2, a shared inclusive LLC with a
//!   directory, write-invalidate coherence, and the Skylake-client model;
//! - [`cost`]: event counts and modeled cycles;
//! - [`insn`]: instruction classes from their bytes, and their cost;
//! - [`symbols`]: `System.map` lookup and code addresses;
//! - [`window`]: per-phase windows over cumulative counts;
//! - [`record`]: the plugin's output lines;
//! - [`args`]: the plugin's arguments.
//!
//! See docs/cost-model.md for the model, its sources and its limits.

pub mod args;
pub mod cache;
pub mod cost;
pub mod insn;
pub mod machine;
pub mod record;
pub mod symbols;
pub mod window;

/// The QEMU plugin API version the plugin is built for (`plugin-api-v1`
/// of `qemu-plugin-sys`: QEMU 6.0 to 8.2; Debian 12 ships 7.2).
pub const PLUGIN_API_VERSION: u32 = 1;

/// The plugin's file name as `cargo build` leaves it in `target/<profile>`.
pub const PLUGIN_FILE: &str = "libpatchbench_cost_plugin.so";
