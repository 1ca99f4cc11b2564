//! Programs the host stages into a boot's initramfs for a workload that
//! runs them (`stress-ng`, `mm-selftest`): the host writes a newc cpio
//! archive whose members are under [`STAGED_GUEST`]`/<name>`, `<name>`
//! being the archive's file name without `.cpio` (a content key, so that
//! two archives never share a directory), and appends it to every boot's
//! initramfs. The kernel unpacks it before the agent starts: the program
//! is in guest memory from the first instruction, and nothing a sample
//! runs is read from the host.

/// Where the kernel unpacks staged archives in the guest.
pub const STAGED_GUEST: &str = "/staged";

/// The guest directory the staged archive `archive` (a host path ending
/// in `.cpio`) unpacks into: `/staged/<file stem>`.
pub fn staged_root(archive: &str) -> String {
    let name = archive.rsplit('/').next().unwrap_or(archive);
    let stem = name.strip_suffix(".cpio").unwrap_or(name);
    format!("{STAGED_GUEST}/{stem}")
}

/// The archive's members' prefix, as the host writes it (no leading `/`).
pub fn staged_prefix(archive: &str) -> String {
    staged_root(archive).trim_start_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_unpacks_under_its_own_name() {
        assert_eq!(
            staged_root("/c/staged/stress-ng-0123abcd.cpio"),
            "/staged/stress-ng-0123abcd"
        );
        assert_eq!(
            staged_prefix("/c/staged/stress-ng-0123abcd.cpio"),
            "staged/stress-ng-0123abcd"
        );
    }
}
