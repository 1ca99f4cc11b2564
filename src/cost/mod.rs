//! The cost lane, host side: boots that load the cost-model plugin
//! (`plugins/qemu`, model in `plugins/costmodel`, docs/cost-model.md), and
//! what patchbench makes of the windows it writes.
//!
//! - `vm::cost_args` (in `vm`, which builds every QEMU command): the QEMU
//!   arguments and kernel parameters of the lane (pure);
//! - [`api`]: which plugin API a QEMU speaks, and refusing one the plugin
//!   cannot run in;
//! - here: finding the plugin, reading its window file, turning a sample's
//!   windows into metrics and symbol profiles, and the "top symbols by
//!   Δ modeled cycles" table (pure).

pub mod api;

mod error;

pub use error::{ApiRange, CostError};

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub use patchbench_costmodel::args::ModelChoice as PluginModel;
pub use patchbench_costmodel::record::{Cost, Line, SymbolCost, WindowRecord};

/// The window file's name in a boot's directory.
pub const WINDOWS_FILE: &str = "cost-windows.jsonl";

/// What a boot with the plugin needs besides its `vm::BootSpec`: the cost
/// lane (`model: Cache`) or the counting lane (`model: Count`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostLane {
    /// The plugin (`libpatchbench_cost_plugin.so`).
    pub plugin: PathBuf,
    /// The booted kernel's `System.map`.
    pub system_map: PathBuf,
    /// The cache model, or counting alone.
    pub model: PluginModel,
    /// Count the boot too, in a `boot` window ending at the agent's start
    /// (the workload asks for it: `Kind::counts_boot`, kernel-boot).
    pub boot: bool,
}

/// Find the plugin: `$PATCHBENCH_COST_PLUGIN`, else next to the running
/// executable (as `cargo build --workspace` leaves it), else one folder up
/// (test binaries live in `target/<profile>/deps`).
pub fn find_plugin() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("PATCHBENCH_COST_PLUGIN") {
        let path = PathBuf::from(path);
        anyhow::ensure!(
            path.is_file(),
            "PATCHBENCH_COST_PLUGIN={} is not a file",
            path.display()
        );
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let file = patchbench_costmodel::PLUGIN_FILE;
    for candidate in [dir.join(file), dir.join("..").join(file)] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    anyhow::bail!(
        "the cost-model plugin {file} is not next to {}; build it with `cargo build --release --workspace` or set PATCHBENCH_COST_PLUGIN",
        exe.display()
    )
}

/// The window records in `text` (a window file, or the part of it read so
/// far); a plugin error line is an error. `path` names the file in errors.
pub fn parse_windows(text: &str, path: &Path) -> Result<Vec<WindowRecord>, CostError> {
    let mut windows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Window(w)) => windows.push(w),
            Ok(Line::Error { message }) => {
                return Err(CostError::Plugin {
                    path: path.to_owned(),
                    message,
                });
            }
            Err(source) => {
                return Err(CostError::Parse {
                    path: path.to_owned(),
                    line: i + 1,
                    source,
                });
            }
        }
    }
    Ok(windows)
}

/// Reads a window file as it grows: each call returns the windows whose
/// lines were completed since the last call. The plugin writes a window
/// before the guest runs on, so after the agent's sample message the
/// sample's windows are all there.
#[derive(Debug)]
pub struct WindowReader {
    path: PathBuf,
    offset: u64,
    lines_before: usize,
}

impl WindowReader {
    pub fn new(path: &Path) -> WindowReader {
        WindowReader {
            path: path.to_owned(),
            offset: 0,
            lines_before: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The windows completed since the last call.
    pub fn read_new(&mut self) -> Result<Vec<WindowRecord>, CostError> {
        let read_err = |source| CostError::Read {
            path: self.path.clone(),
            source,
        };
        let mut file = std::fs::File::open(&self.path).map_err(read_err)?;
        file.seek(SeekFrom::Start(self.offset)).map_err(read_err)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(read_err)?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let text = String::from_utf8_lossy(&bytes[..complete]);
        let windows = parse_windows(&text, &self.path).map_err(|e| match e {
            CostError::Parse { path, line, source } => CostError::Parse {
                path,
                line: line + self.lines_before,
                source,
            },
            other => other,
        })?;
        self.offset += complete as u64;
        self.lines_before += text.lines().count();
        Ok(windows)
    }
}

/// The metric names of a phase, in the order [`sample_metrics`] makes them:
/// `<phase>_insns`, `_l1d_misses`, `_llc_misses`, `_coherence_misses`,
/// `_modeled_cycles`, then that last split by the mode of the code that
/// ran: `_kernel_modeled_cycles` and `_user_modeled_cycles`.
pub fn metric_names(phase: &str) -> [String; 7] {
    [
        format!("{phase}_insns"),
        format!("{phase}_l1d_misses"),
        format!("{phase}_llc_misses"),
        format!("{phase}_coherence_misses"),
        format!("{phase}_modeled_cycles"),
        format!("{phase}_kernel_modeled_cycles"),
        format!("{phase}_user_modeled_cycles"),
    ]
}

/// A window's modeled cycles in kernel code and in user code: the plugin
/// gives every user-space instruction the symbol `user` (by its virtual
/// address), and every kernel one a kernel symbol or `kernel-unknown`. The
/// two must sum to the window's total, or the record is not what the
/// plugin promised.
pub fn mode_split(w: &WindowRecord) -> Result<(u64, u64), CostError> {
    let (mut kernel, mut user) = (0u64, 0u64);
    for s in &w.symbols {
        if s.symbol == patchbench_costmodel::symbols::USER_NAME {
            user += s.cost.modeled_cycles;
        } else {
            kernel += s.cost.modeled_cycles;
        }
    }
    if kernel + user != w.total.modeled_cycles {
        return Err(CostError::SplitMismatch {
            seq: w.seq,
            phase: w.phase.clone(),
            symbols: kernel + user,
            total: w.total.modeled_cycles,
        });
    }
    Ok((kernel, user))
}

/// The metric names of a phase in the counting lane, in the order
/// [`sample_metrics`] makes them: `<phase>_insns`, then split by the mode
/// of the code that ran, `_kernel_insns` and `_user_insns`; every vCPU's
/// own instructions, counted on that vCPU.
pub fn count_metric_names(phase: &str) -> [String; 3] {
    [
        format!("{phase}_insns"),
        format!("{phase}_kernel_insns"),
        format!("{phase}_user_insns"),
    ]
}

/// A sample's metrics from the windows that closed during it (the records
/// since the previous sample): seven per phase in the cost lane (see
/// [`metric_names`]), three in the counting lane
/// ([`count_metric_names`]), to merge into the sample's metrics map.
pub fn sample_metrics(
    windows: &[WindowRecord],
    model: PluginModel,
) -> Result<BTreeMap<String, u64>, CostError> {
    if windows.is_empty() {
        return Err(CostError::NoWindows);
    }
    let mut metrics = BTreeMap::new();
    for w in windows {
        let t = &w.total;
        // With no cache, a window's modeled cycles are its instructions
        // (`machine::COUNTING`), so the split is the instructions'.
        let (kernel, user) = mode_split(w)?;
        let named: Vec<(String, u64)> = if model == PluginModel::Count {
            count_metric_names(&w.phase)
                .into_iter()
                .zip([t.insns, kernel, user])
                .collect()
        } else {
            metric_names(&w.phase)
                .into_iter()
                .zip([
                    t.insns,
                    t.l1d_misses,
                    t.llc_misses,
                    t.coherence_misses,
                    t.modeled_cycles,
                    kernel,
                    user,
                ])
                .collect()
        };
        for (name, value) in named {
            if metrics.insert(name, value).is_some() {
                return Err(CostError::DuplicatePhase {
                    phase: w.phase.clone(),
                });
            }
        }
    }
    Ok(metrics)
}

/// The counting lane's kernel instructions per operation of a benchmark of
/// the mm library (`workloads/common/ops-metrics.yaml`):
/// `ops_kernel_insns` over the sample's `ops`, rounded down; `None` for a
/// sample without both.
pub fn kernel_insns_per_op(metrics: &BTreeMap<String, u64>) -> Option<(&'static str, u64)> {
    let ops = *metrics.get("ops").filter(|&&n| n > 0)?;
    let insns = metrics.get("ops_kernel_insns")?;
    Some(("ops_kernel_insns_per_op", insns / ops))
}

/// `symbol`'s own modeled cycles in `phase`'s window per call, rounded
/// down; `None` without calls or without that window. A window lists every
/// symbol that ran, so one missing from it had no cycles.
pub fn per_call_cycles(
    windows: &[WindowRecord],
    phase: &str,
    symbol: &str,
    calls: u64,
) -> Option<u64> {
    if calls == 0 {
        return None;
    }
    let window = windows.iter().find(|w| w.phase == phase)?;
    let cycles = window
        .symbols
        .iter()
        .filter(|s| s.symbol == symbol)
        .map(|s| s.cost.modeled_cycles)
        .sum::<u64>();
    Some(cycles / calls)
}

pub use crate::model::profile::{SymbolDelta, SymbolProfile, function_deltas, top_symbol_deltas};

/// A sample's symbol profile per phase.
pub fn sample_profiles(windows: &[WindowRecord]) -> BTreeMap<String, SymbolProfile> {
    windows
        .iter()
        .map(|w| {
            let profile = w
                .symbols
                .iter()
                .map(|s| (s.symbol.clone(), s.cost.modeled_cycles))
                .collect();
            (w.phase.clone(), profile)
        })
        .collect()
}

/// A cost-lane sample's splits per phase: for every symbol of its
/// profile, its instructions, its classes and the cycles they were
/// charged beyond one each ([`crate::model::profile::CycleSplit`]).
pub fn sample_splits(
    windows: &[WindowRecord],
) -> BTreeMap<String, crate::model::profile::SplitProfile> {
    windows
        .iter()
        .map(|w| {
            let split = w
                .symbols
                .iter()
                .map(|s| {
                    let split = crate::model::profile::CycleSplit {
                        insns: s.cost.insns,
                        class_cycles: s.cost.class_cycles,
                        classes: s.cost.classes,
                    };
                    (s.symbol.clone(), split)
                })
                .collect();
            (w.phase.clone(), split)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbench_costmodel::record::VcpuCost;

    fn cost(insns: u64, cycles: u64) -> Cost {
        Cost {
            insns,
            l1d_misses: 2,
            l1i_misses: 0,
            l2_misses: 1,
            llc_misses: 1,
            coherence_misses: 1,
            modeled_cycles: cycles,
            classes: Default::default(),
            class_cycles: 0,
        }
    }

    fn window(seq: u64, phase: &str, symbols: &[(&str, u64)]) -> WindowRecord {
        let cycles = symbols.iter().map(|s| s.1).sum();
        WindowRecord {
            seq,
            phase: phase.into(),
            model: "skylake-client".into(),
            total: cost(cycles / 2, cycles),
            vcpus: vec![VcpuCost {
                vcpu: 0,
                cost: cost(cycles / 2, cycles),
            }],
            symbols: symbols
                .iter()
                .map(|&(s, c)| SymbolCost {
                    symbol: s.into(),
                    cost: cost(c / 2, c),
                })
                .collect(),
        }
    }

    #[test]
    fn a_benchmarks_kernel_instructions_are_divided_by_its_operations() {
        let m = BTreeMap::from([
            ("ops".to_string(), 4),
            ("ops_kernel_insns".to_string(), 4003),
        ]);
        assert_eq!(
            kernel_insns_per_op(&m),
            Some(("ops_kernel_insns_per_op", 1000))
        );
        let none = BTreeMap::from([("ops".to_string(), 0), ("ops_kernel_insns".to_string(), 1)]);
        assert_eq!(kernel_insns_per_op(&none), None);
        assert_eq!(kernel_insns_per_op(&BTreeMap::new()), None);
    }

    #[test]
    fn per_call_cycles_divide_the_symbols_own_cycles_in_its_phase() {
        let windows = [
            window(1, "read_loop", &[("flush", 1001), ("other", 500)]),
            window(2, "verify", &[("flush", 7000)]),
        ];
        assert_eq!(
            per_call_cycles(&windows, "read_loop", "flush", 10),
            Some(100)
        );
        // Not in the window: it did not run there.
        assert_eq!(per_call_cycles(&windows, "read_loop", "absent", 4), Some(0));
        assert_eq!(per_call_cycles(&windows, "read_loop", "flush", 0), None);
        assert_eq!(per_call_cycles(&windows, "pageout", "flush", 3), None);
    }

    #[test]
    fn a_samples_windows_become_seven_metrics_per_phase() {
        let windows = [
            window(1, "pageout", &[("do_flush_stats", 300), ("user", 100)]),
            window(2, "verify", &[("user", 50)]),
        ];
        let m = sample_metrics(&windows, PluginModel::Cache).unwrap();
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                ("pageout_coherence_misses", 1),
                ("pageout_insns", 200),
                ("pageout_kernel_modeled_cycles", 300),
                ("pageout_l1d_misses", 2),
                ("pageout_llc_misses", 1),
                ("pageout_modeled_cycles", 400),
                ("pageout_user_modeled_cycles", 100),
                ("verify_coherence_misses", 1),
                ("verify_insns", 25),
                ("verify_kernel_modeled_cycles", 0),
                ("verify_l1d_misses", 2),
                ("verify_llc_misses", 1),
                ("verify_modeled_cycles", 50),
                ("verify_user_modeled_cycles", 50),
            ]
        );
        // Symbols that do not add up to the total are not what the plugin
        // promised, and are refused.
        let mut short = window(3, "total", &[("user", 10)]);
        short.total.modeled_cycles = 11;
        assert!(matches!(
            sample_metrics(&[short], PluginModel::Cache),
            Err(CostError::SplitMismatch {
                total: 11,
                symbols: 10,
                ..
            })
        ));
        assert!(matches!(
            sample_metrics(&[], PluginModel::Cache),
            Err(CostError::NoWindows)
        ));
        let twice = [window(1, "pageout", &[]), window(2, "pageout", &[])];
        assert!(matches!(
            sample_metrics(&twice, PluginModel::Cache),
            Err(CostError::DuplicatePhase { .. })
        ));
        let profiles = sample_profiles(&windows);
        assert_eq!(profiles["pageout"]["do_flush_stats"], 300);
        assert_eq!(profiles["verify"].len(), 1);
        // The counting lane's window: instructions, split by mode.
        // With no cache, a window's cycles are its instructions.
        let mut counted = window(4, "pageout", &[("do_flush_stats", 300), ("user", 100)]);
        counted.model = PluginModel::Count.machine().name.into();
        counted.total.insns = 400;
        for s in &mut counted.symbols {
            s.cost.insns = s.cost.modeled_cycles;
        }
        let m = sample_metrics(&[counted], PluginModel::Count).unwrap();
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                ("pageout_insns", 400),
                ("pageout_kernel_insns", 300),
                ("pageout_user_insns", 100)
            ]
        );
    }

    /// The names made here are the ones the workload specs declare.
    #[test]
    fn the_specs_declare_the_metrics_made_here() {
        let spec = crate::workload::spec_for_kind("zswap-pageout").unwrap();
        for phase in ["total", "pageout", "verify"] {
            for name in metric_names(phase) {
                let m = spec.metrics.iter().find(|m| m.name == name);
                use crate::workload::MetricLane::{Cost, Plugin};
                assert!(
                    m.is_some_and(|m| matches!(m.lane, Some(Cost | Plugin))),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn the_reader_returns_only_complete_new_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(WINDOWS_FILE);
        let line = |w: WindowRecord| Line::Window(w).to_json_line();
        let first = line(window(1, "pageout", &[("user", 10)]));
        let second = line(window(2, "verify", &[("user", 20)]));
        std::fs::write(&path, format!("{first}{}", &second[..10])).unwrap();
        let mut reader = WindowReader::new(&path);
        let got = reader.read_new().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].phase, "pageout");
        assert!(reader.read_new().unwrap().is_empty(), "half a line waits");
        std::fs::write(&path, format!("{first}{second}")).unwrap();
        let got = reader.read_new().unwrap();
        assert_eq!((got.len(), got[0].seq), (1, 2));
        // A plugin error line is an error, and a broken line names its number.
        let error = Line::Error {
            message: "the end of phase pageout came without its begin".into(),
        };
        std::fs::write(&path, format!("{first}{second}{}", error.to_json_line())).unwrap();
        let err = reader.read_new().unwrap_err().to_string();
        assert!(err.contains("without its begin"), "{err}");
        std::fs::write(&path, format!("{first}{second}{{nope\n")).unwrap();
        let err = reader.read_new().unwrap_err();
        assert!(matches!(err, CostError::Parse { line: 3, .. }), "{err:?}");
    }
}
