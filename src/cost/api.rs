//! Which plugin API a QEMU speaks, read from the `qemu_plugin_*` functions
//! its binary exports, so that a QEMU the plugin cannot run in is refused
//! before any boot.
//!
//! QEMU accepts a plugin whose declared version lies in
//! `[QEMU_PLUGIN_MIN_VERSION, QEMU_PLUGIN_VERSION]`; neither number is in
//! the binary, but each version added (or removed) functions, so the
//! exported set tells them (qemu-plugin-sys's per-version `.def` lists):
//!
//! | version | QEMU | telltale export |
//! |---|---|---|
//! | 0 | 4.2 | `qemu_plugin_register_vcpu_tb_trans_cb` (plugins at all) |
//! | 1 | 6.0 | `qemu_plugin_hwaddr_phys_addr` |
//! | 2 | 9.0 | `qemu_plugin_get_registers`; `qemu_plugin_n_vcpus` removed and the minimum raised to 2 |
//! | 3 | 9.1 | `qemu_plugin_register_vcpu_tb_exec_cond_cb` |
//! | 4 | 9.2 | `qemu_plugin_read_memory_vaddr` |
//! | 5 | 10.1 | `qemu_plugin_write_register` |

use std::path::{Path, PathBuf};

pub use super::error::ApiRange;
use super::error::CostError;

/// The range a QEMU exporting `names` accepts; `None` when it exports no
/// plugin API (built without TCG plugins).
pub fn api_from_exports<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<ApiRange> {
    let names: std::collections::BTreeSet<&str> = names
        .into_iter()
        .filter(|n| n.starts_with("qemu_plugin_"))
        .collect();
    if !names.contains("qemu_plugin_register_vcpu_tb_trans_cb") {
        return None;
    }
    let max = [
        (5, "qemu_plugin_write_register"),
        (4, "qemu_plugin_read_memory_vaddr"),
        (3, "qemu_plugin_register_vcpu_tb_exec_cond_cb"),
        (2, "qemu_plugin_get_registers"),
        (1, "qemu_plugin_hwaddr_phys_addr"),
    ]
    .into_iter()
    .find(|(_, name)| names.contains(name))
    .map_or(0, |(v, _)| v);
    let min = if names.contains("qemu_plugin_n_vcpus") {
        0
    } else {
        2
    };
    Some(ApiRange { min, max })
}

/// `qemu-system-x86_64` on `PATH`, the QEMU every boot runs.
pub fn qemu_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("qemu-system-x86_64"))
        .find(|p| p.is_file())
}

/// The plugin API range of the QEMU binary at `qemu`.
pub fn qemu_api(qemu: &Path) -> Result<Option<ApiRange>, CostError> {
    let bytes = std::fs::read(qemu).map_err(|source| CostError::Read {
        path: qemu.to_owned(),
        source,
    })?;
    let elf = goblin::elf::Elf::parse(&bytes).map_err(|e| CostError::NotElf {
        path: qemu.to_owned(),
        message: e.to_string(),
    })?;
    let names = elf
        .dynsyms
        .iter()
        .filter(|s| s.st_shndx != 0) // defined here, not imported
        .filter_map(|s| elf.dynstrtab.get_at(s.st_name));
    Ok(api_from_exports(names))
}

/// Refuses a QEMU that cannot load a plugin of API version `needed`.
pub fn check(qemu: &Path, found: Option<ApiRange>, needed: u32) -> Result<ApiRange, CostError> {
    match found {
        Some(range) if range.accepts(needed) => Ok(range),
        Some(range) => Err(CostError::ApiMismatch {
            qemu: qemu.to_owned(),
            found: range,
            needed,
        }),
        None => Err(CostError::NoPlugins {
            qemu: qemu.to_owned(),
        }),
    }
}

/// [`qemu_api`] and [`check`] against the plugin this patchbench builds:
/// what a campaign in the cost lane calls before its first boot.
pub fn check_qemu(qemu: &Path) -> Result<ApiRange, CostError> {
    check(
        qemu,
        qemu_api(qemu)?,
        patchbench_costmodel::PLUGIN_API_VERSION,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &[&str] = &[
        "qemu_plugin_register_vcpu_tb_trans_cb",
        "qemu_plugin_hwaddr_phys_addr",
        "qemu_plugin_n_vcpus",
        "qemu_plugin_insn_data",
    ];

    #[test]
    fn exports_tell_the_version_range() {
        assert_eq!(
            api_from_exports(V1.iter().copied()),
            Some(ApiRange { min: 0, max: 1 })
        );
        let v0 = [
            "qemu_plugin_register_vcpu_tb_trans_cb",
            "qemu_plugin_n_vcpus",
        ];
        assert_eq!(api_from_exports(v0), Some(ApiRange { min: 0, max: 0 }));
        let v4 = [
            "qemu_plugin_register_vcpu_tb_trans_cb",
            "qemu_plugin_hwaddr_phys_addr",
            "qemu_plugin_get_registers",
            "qemu_plugin_register_vcpu_tb_exec_cond_cb",
            "qemu_plugin_read_memory_vaddr",
            "qemu_plugin_num_vcpus",
        ];
        assert_eq!(api_from_exports(v4), Some(ApiRange { min: 2, max: 4 }));
        assert_eq!(api_from_exports(["main", "qemu_init"]), None);
    }

    #[test]
    fn a_qemu_outside_the_plugins_version_is_refused_with_both_versions() {
        let qemu = Path::new("/usr/bin/qemu-system-x86_64");
        assert!(check(qemu, Some(ApiRange { min: 0, max: 1 }), 1).is_ok());
        let err = check(qemu, Some(ApiRange { min: 2, max: 5 }), 1).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("versions 2 to 5") && text.contains("version 1"),
            "{text}"
        );
        let err = check(qemu, None, 1).unwrap_err().to_string();
        assert!(err.contains("no TCG plugin support"), "{err}");
    }

    /// Debian 12's QEMU 7.2 (ci/setup-host.sh installs it) speaks v1.
    #[test]
    fn this_hosts_qemu_speaks_the_plugins_version() {
        let qemu = Path::new("/usr/bin/qemu-system-x86_64");
        assert!(
            qemu.exists(),
            "{} is missing: run ci/setup-host.sh (Debian package qemu-system-x86)",
            qemu.display()
        );
        let range = check_qemu(qemu).unwrap();
        assert_eq!(range, ApiRange { min: 0, max: 1 });
    }
}
