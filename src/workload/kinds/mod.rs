//! Each kind's campaign section on the host, one module per kind: its
//! `Config` (the parameters as campaign files write them, each with its
//! default), checked against the guest into a [`Planned`] workload
//! (`param::HostKind`), and the wire's parameters written back as people
//! write them for the results document (`planned::Params`).
//!
//! The kinds are the agent's one list (`patchbench_agent::with_kinds!`):
//! [`WorkloadConfig`], its dispatch and the specs' table are generated
//! from it, so a kind listed there without a module here does not
//! compile, and no match over kinds is written by hand.

use serde::Deserialize;

use super::param::{Guest, HostKind, WorkloadError};
use super::planned::Planned;
use crate::model::GuestShape;

pub mod guest_fault;
pub mod kernel_boot;
pub mod kernel_build;
pub mod mm_selftest;
pub mod reclaim_refault;
pub mod rstat_flush;
pub mod stress_ng;
pub mod zswap_pageout;

/// A kind's spec text, `workloads/<name>.yaml`, or `None` for a kind
/// listed `unspecified`.
macro_rules! spec_text {
    ($name:literal, spec) => {
        Some(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/workloads/",
            $name,
            ".yaml"
        )))
    };
    ($name:literal, bench) => {
        spec_text!($name, spec)
    };
    ($name:literal, unspecified) => {
        None
    };
}

/// A kind's campaign section: its host module's `Config`, or for a
/// benchmark of the mm library its wire parameters as they are.
macro_rules! config_type {
    (bench, $module:ident::$ty:ident) => {
        super::bench::BenchConfig<patchbench_agent::kinds::$module::$ty>
    };
    ($spec:ident, $module:ident::$ty:ident) => {
        $module::Config
    };
}

/// Generates [`WorkloadConfig`] and every host dispatch over kinds from
/// the agent's list.
macro_rules! host_kinds {
    ($($variant:ident($name:literal, $module:ident::$ty:ident, $spec:ident)),* $(,)?) => {
        /// The campaign's `workload:` section: `kind:` names the kind, beside
        /// its parameters. Every parameter is documented, with its default
        /// and unit, in the kind's spec (`workloads/<kind>.yaml`).
        #[derive(Debug, Deserialize)]
        #[serde(tag = "kind")]
        pub enum WorkloadConfig {
            $(
                #[serde(rename = $name)]
                $variant(config_type!($spec, $module::$ty)),
            )*
        }

        impl WorkloadConfig {
            /// Checks the parameters against the guest and resolves
            /// per-CPU counts.
            pub fn into_workload(self, guest: &GuestShape) -> Result<Planned, WorkloadError> {
                let guest = Guest::of(guest);
                match self {
                    $(WorkloadConfig::$variant(config) => config.plan(&guest),)*
                }
            }
        }

        /// Every listed kind's name and spec text (`None`: it measures
        /// nothing).
        pub const SPECS: &[(&str, Option<&str>)] = &[$(($name, spec_text!($name, $spec)),)*];
    };
}

patchbench_agent::with_kinds!(host_kinds);
