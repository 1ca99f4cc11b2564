//! Boot-time setup of the guest: file systems, swap, zswap and THP, each
//! written and then read back, plus the [`GuestFacts`] read after setup.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use patchbench_agent::{GuestFacts, Setting, SwapSetup, ThpMode, ZswapSetup};

use crate::console;
use crate::error::{Context, Error, Result, bail};
use crate::files;
use crate::parse;
use crate::sys;

const BUSYBOX: &str = "/bin/busybox";
const ZSWAP_PARAMS: &str = "/sys/module/zswap/parameters";
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const CPU_DIR: &str = "/sys/devices/system/cpu";
const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

const SAFE: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

/// Creates the mount point `target` if needed and mounts on it, naming the
/// file system and the place in any error. Every mount of the agent goes
/// through here.
pub fn mount_on(
    source: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<()> {
    std::fs::create_dir_all(target)
        .with_context(|| format!("creating mount point {}", target.display()))?;
    sys::mount(source, target, fstype, flags, data)
        .with_context(|| format!("mounting {fstype} on {}", target.display()))
}

fn mount(source: &str, target: &str, fstype: &str, flags: libc::c_ulong) -> Result<()> {
    mount_on(source, Path::new(target), fstype, flags, None)
}

/// The file systems the port needs: proc, sysfs and devtmpfs.
pub fn mount_early() -> Result<()> {
    mount("proc", "/proc", "proc", SAFE)?;
    mount("sysfs", "/sys", "sysfs", SAFE)?;
    mount(
        "devtmpfs",
        "/dev",
        "devtmpfs",
        libc::MS_NOSUID | libc::MS_NOEXEC,
    )
}

/// cgroup2 (required), then tracefs (wanted for the function profiler)
/// and debugfs (for the hwpoison injector's files), whose absence only
/// costs a console note: a kernel without them runs every other workload.
pub fn mount_late() -> Result<()> {
    mount("cgroup2", "/sys/fs/cgroup", "cgroup2", SAFE)?;
    let mut note = String::from("mounted proc sysfs devtmpfs cgroup2");
    for (fstype, target) in [
        ("tracefs", "/sys/kernel/tracing"),
        ("debugfs", "/sys/kernel/debug"),
    ] {
        match mount(fstype, target, fstype, SAFE) {
            Ok(()) => note.push_str(&format!(" {fstype}")),
            Err(e) => note.push_str(&format!("; no {fstype}: {e}")),
        }
    }
    console::say(note);
    Ok(())
}

const ZRAM: &str = "/sys/block/zram0";
const ZRAM_DEVICE: &str = "/dev/zram0";

/// `mkswap` then `swapon` the job's device, and check `/proc/swaps`.
pub fn swap(setup: &SwapSetup) -> Result<()> {
    enable_swap(setup.device.as_str(), None)
}

/// Sizes `/dev/zram0` to `bytes` and swaps on it (instead of the job's
/// device), as seed 003's script does.
pub fn zram(bytes: u64) -> Result<()> {
    if !Path::new(ZRAM).exists() {
        bail!("{ZRAM} is missing: is the kernel built with ZRAM (kconfigs/mm.config)?");
    }
    let disksize = format!("{ZRAM}/disksize");
    files::write(&disksize, &bytes.to_string())?;
    let got = files::read_value(&disksize)?;
    if got != bytes.to_string() {
        bail!("{disksize} reads {got:?} after writing {bytes}");
    }
    let algorithm = files::read_value(format!("{ZRAM}/comp_algorithm"))?;
    console::say(format!("zram0 disksize={bytes} comp_algorithm {algorithm}"));
    enable_swap(ZRAM_DEVICE, Some(32767))
}

/// Swaps on the RAM block device the host's kernel parameters made
/// ([`patchbench_agent::ram_swap_cmdline`]).
pub fn ram() -> Result<()> {
    let device = patchbench_agent::RAM_SWAP_DEVICE;
    if !Path::new(device).exists() {
        bail!(
            "{device} is missing: `swap: ram` needs a kernel built with BLK_DEV_RAM \
             (kconfigs/variants/ram-swap.config in the campaign's fragments)"
        );
    }
    let size = files::read_value("/sys/block/ram0/size")?;
    console::say(format!(
        "{device}: RAM block device of {size} sectors, swap on it"
    ));
    enable_swap(device, None)
}

fn enable_swap(device: &str, priority: Option<u16>) -> Result<()> {
    let run = || format!("running {BUSYBOX} mkswap {device}");
    let out = Command::new(BUSYBOX)
        .arg("mkswap")
        .arg(device)
        .output()
        .with_context(run)?;
    if !out.status.success() {
        bail!(
            "{}: {}: {}",
            run(),
            out.status,
            tail(&String::from_utf8_lossy(&out.stderr))
        );
    }
    match priority {
        None => sys::swapon(Path::new(device)),
        Some(p) => sys::swapon_with_priority(Path::new(device), p),
    }
    .with_context(|| format!("swapon {device}"))?;
    let swaps = parse::swap_lines(&files::read("/proc/swaps")?);
    let Some(entry) = swaps
        .iter()
        .find(|l| l.split_whitespace().next() == Some(device))
    else {
        bail!("{device} is not in /proc/swaps after swapon");
    };
    console::say(format!("swap on {device}: {}", squeeze(entry)));
    Ok(())
}

/// The zswap parameters to write, in order, as sysfs takes them.
pub fn zswap_values(z: &ZswapSetup) -> [(&'static str, String); 4] {
    [
        ("compressor", z.compressor.clone()),
        ("zpool", z.zpool.clone()),
        ("max_pool_percent", z.max_pool_percent.to_string()),
        ("enabled", if z.enabled { "Y" } else { "N" }.to_string()),
    ]
}

/// The zswap parameters to write: those that do not already read as
/// wanted. Writing an unchanged value is not harmless on 6.12: writing
/// `enabled` (even `N`) to a zswap that was off since boot runs
/// zswap_setup(), whose first pool marks zswap as ever enabled
/// (`zswap_pool_create()` enables the `zswap_ever_enabled` static key), and
/// from then on `alloc_swap_folio()` swaps in only order-0 folios for the
/// rest of the boot (`zswap_never_enabled()`, seed 004).
pub fn zswap_writes<'a>(
    wanted: &'a [(&'static str, String)],
    current: &dyn Fn(&str) -> Result<String>,
) -> Result<Vec<&'a (&'static str, String)>> {
    let mut writes = Vec::new();
    for entry in wanted {
        if current(entry.0)? != entry.1 {
            writes.push(entry);
        }
    }
    Ok(writes)
}

/// Writes the zswap parameters that differ from what is wanted, then reads
/// each back.
pub fn zswap(z: &ZswapSetup) -> Result<()> {
    let wanted = zswap_values(z);
    let dir = Path::new(ZSWAP_PARAMS);
    let current = |name: &str| files::read_value(dir.join(name));
    for (name, value) in zswap_writes(&wanted, &current)? {
        files::write(dir.join(name), value)?;
    }
    let mut shown = Vec::new();
    for (name, value) in &wanted {
        let path = dir.join(name);
        let got = files::read_value(&path)?;
        if &got != value {
            bail!("{} reads {got:?} after writing {value:?}", path.display());
        }
        shown.push(format!("{name}={got}"));
    }
    // The kernel's order (enabled first) reads best.
    shown.rotate_right(1);
    console::say(format!("zswap {}", shown.join(" ")));
    Ok(())
}

/// Sets the THP mode and checks that it is the one selected.
pub fn thp(mode: ThpMode) -> Result<()> {
    let word = mode.sysfs_word();
    files::write(THP_ENABLED, word)?;
    let line = files::read_value(THP_ENABLED)?;
    match patchbench_agent::sysfs::selected_choice(&line) {
        Some(selected) if selected == word => {}
        Some(selected) => bail!("{THP_ENABLED} selects {selected:?} after writing {word:?}"),
        None => bail!("{THP_ENABLED} reads {line:?}, with no [selected] mode"),
    }
    console::say(format!("thp {line}"));
    Ok(())
}

/// Writes each runtime setting in order and reads it back; a value the
/// kernel did not keep fails the boot, naming the file. Returns what each
/// file read back, by path.
pub fn settings(settings: &[Setting]) -> Result<BTreeMap<String, String>> {
    let mut read = BTreeMap::new();
    for setting in settings {
        files::write(&setting.path, &setting.value)?;
        let got = files::read_value(&setting.path)?;
        if !patchbench_agent::reads_back(&setting.value, &got) {
            bail!(
                "setting {}: wrote {:?}, reads back {got:?}",
                setting.path,
                setting.value
            );
        }
        console::say(format!("setting {} = {got}", setting.path));
        read.insert(setting.path.clone(), got);
    }
    Ok(read)
}

/// The online CPUs, in order.
pub fn online_cpus() -> Result<Vec<u32>> {
    let path = format!("{CPU_DIR}/online");
    patchbench_agent::sysfs::cpu_list(&files::read(&path)?)
        .map_err(Error::msg)
        .with_context(|| format!("parsing {path}"))
}

/// What the guest looks like after setup.
pub fn facts() -> Result<GuestFacts> {
    let (kernel_release, kernel_version) = sys::uname().context("uname")?;
    let mem_total_kib = parse::mem_total_kib(&files::read("/proc/meminfo")?)
        .ok_or_else(|| Error::msg("no MemTotal line in /proc/meminfo"))?;
    Ok(GuestFacts {
        kernel_release,
        kernel_version,
        possible_cpus: files::read_value(format!("{CPU_DIR}/possible"))?,
        online_cpus: files::read_value(format!("{CPU_DIR}/online"))?,
        mem_total_kib,
        zswap: zswap_parameters()?,
        thp: files::read_value(THP_ENABLED)?,
        swaps: parse::swap_lines(&files::read("/proc/swaps")?),
        profiled_symbol: None,
        cputime: None,
        settings: BTreeMap::new(),
        // A kernel without a clocksource device in sysfs has no such file:
        // the fact is absent, not an error.
        clocksource: std::fs::read_to_string(CLOCKSOURCE)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
        features: patchbench_agent::feature::Feature::read_back(),
        rcu_barrier: Some(crate::settle::has_rcu_barrier()),
    })
}

/// Every zswap parameter, by name.
fn zswap_parameters() -> Result<BTreeMap<String, String>> {
    let entries =
        std::fs::read_dir(ZSWAP_PARAMS).with_context(|| format!("listing {ZSWAP_PARAMS}"))?;
    let mut params = BTreeMap::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {ZSWAP_PARAMS}"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        params.insert(name, files::read_value(entry.path())?);
    }
    Ok(params)
}

/// Collapses runs of whitespace (for `/proc/swaps` lines on the console).
fn squeeze(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last part of a tool's output, on one line.
fn tail(output: &str) -> String {
    let line = squeeze(output);
    let skip = line.chars().count().saturating_sub(300);
    line.chars().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zswap_values_are_sysfs_words() {
        let z = ZswapSetup {
            enabled: true,
            compressor: "lzo".into(),
            zpool: "zsmalloc".into(),
            max_pool_percent: 20,
        };
        let values = zswap_values(&z);
        assert_eq!(values[3], ("enabled", "Y".to_string()));
        assert_eq!(values[2], ("max_pool_percent", "20".to_string()));
        let off = ZswapSetup {
            enabled: false,
            ..z
        };
        assert_eq!(zswap_values(&off)[3].1, "N");
    }

    #[test]
    fn zswap_writes_only_what_differs() {
        let z = ZswapSetup {
            enabled: false,
            compressor: "lzo".into(),
            zpool: "zsmalloc".into(),
            max_pool_percent: 20,
        };
        let wanted = zswap_values(&z);
        let current = |name: &str| -> Result<String> {
            Ok(match name {
                "compressor" => "lzo",
                "zpool" => "zbud",
                "max_pool_percent" => "20",
                // Off since boot: writing N here would mark zswap as ever
                // enabled and end large-folio swap-in.
                "enabled" => "N",
                other => panic!("unexpected {other}"),
            }
            .to_string())
        };
        let writes = zswap_writes(&wanted, &current).unwrap();
        assert_eq!(writes, [&("zpool", "zsmalloc".to_string())]);
        let on = ZswapSetup { enabled: true, ..z };
        let wanted = zswap_values(&on);
        let writes = zswap_writes(&wanted, &current).unwrap();
        assert_eq!(
            writes,
            [
                &("zpool", "zsmalloc".to_string()),
                &("enabled", "Y".to_string())
            ]
        );
    }

    #[test]
    fn tail_keeps_the_end_on_one_line() {
        assert_eq!(
            tail("mkswap: can't open\n'/dev/vda'\n"),
            "mkswap: can't open '/dev/vda'"
        );
        let long = "x".repeat(1000) + " end";
        assert!(tail(&long).ends_with(" end"));
        assert_eq!(tail(&long).chars().count(), 300);
    }
}
