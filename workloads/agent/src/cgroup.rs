//! cgroup v2 helpers shared by the workloads: a parent with the memory
//! controller enabled for its children, children, and limits read back.

use std::path::{Path, PathBuf};

use patchbench_agent::Limit;

use crate::error::{Context, Result, bail};
use crate::files;
use crate::sys;

pub const ROOT: &str = "/sys/fs/cgroup";

/// Creates `dir` if needed.
pub fn create(dir: &Path) -> Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating {}", dir.display())),
    }
}

/// Creates `/sys/fs/cgroup/<name>` with the memory controller enabled for
/// it and for its children, then `children` children `cg0`, `cg1`, ...
/// Returns the parent and the children's directories.
pub fn tree(name: &str, children: u32) -> Result<(PathBuf, Vec<PathBuf>)> {
    files::write(format!("{ROOT}/cgroup.subtree_control"), "+memory")?;
    let parent = Path::new(ROOT).join(name);
    create(&parent)?;
    files::write(parent.join("cgroup.subtree_control"), "+memory")?;
    let mut dirs = Vec::with_capacity(children as usize);
    for i in 0..children {
        let dir = parent.join(format!("cg{i}"));
        create(&dir)?;
        dirs.push(dir);
    }
    Ok((parent, dirs))
}

/// Writes a limit file and checks what it reads back.
pub fn set_limit(dir: &Path, file: &str, limit: Limit) -> Result<String> {
    let path = dir.join(file);
    files::write(&path, &limit.cgroup_value())?;
    let got = files::read_value(&path)?;
    let want = limit_readback(limit, sys::page_size() as u64);
    if got != want {
        bail!(
            "{} reads {got:?} after writing {:?}",
            path.display(),
            limit.cgroup_value()
        );
    }
    Ok(got)
}

/// What a cgroup limit file reads after `limit` is written: the kernel keeps
/// limits in whole pages.
pub fn limit_readback(limit: Limit, page_size: u64) -> String {
    match limit {
        Limit::Bytes(n) => (n / page_size * page_size).to_string(),
        Limit::Max => "max".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_back_in_whole_pages() {
        assert_eq!(limit_readback(Limit::Max, 4096), "max");
        assert_eq!(limit_readback(Limit::Bytes(67_108_864), 4096), "67108864");
        assert_eq!(limit_readback(Limit::Bytes(5000), 4096), "4096");
    }
}
