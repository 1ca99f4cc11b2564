//! End-to-end test of the cost lane: the smoke campaign's kernel A (built or
//! reused through the real `patchbench build`), booted twice with the
//! cost-model plugin through the real `patchbench boot --cost-model` and
//! once in the counting lane (`--cost-model=count`), running a marked loop
//! of a known instruction count. It never skips: on a
//! host without QEMU or the kernel source it fails, naming what is missing
//! (`ci/setup-host.sh` installs it), and without the plugin built it fails
//! naming `cargo build --workspace`.

use std::path::{Path, PathBuf};
use std::process::Command;

use patchbench::cost::{self, WindowRecord};

mod common;
use common::{cache_dir, require_host_tools};

/// Iterations of the guest's `dec; jnz` loop.
const ITERATIONS: u64 = 100_000;

fn patchbench() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchbench"));
    cmd.env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .env("PATCHBENCH_COST_PLUGIN", cost::find_plugin().unwrap())
        .env("PATCHBENCH_CACHE", cache_dir());
    cmd
}

/// Kernel A of the smoke campaign, as `patchbench build` leaves it.
fn smoke_kernel(dir: &Path) -> PathBuf {
    let output = patchbench()
        .arg("build")
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "patchbench build failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("kernels.json")).unwrap()).unwrap();
    PathBuf::from(
        manifest[0]["bzimage"]
            .as_str()
            .expect("kernels.json names kernel A's bzImage"),
    )
}

/// One boot in the cost lane (`model` "cache") or the counting lane
/// ("count") running the marked loop, in memory layout `layout` if given:
/// its windows.
fn marked_loop(kernel: &Path, out: &Path, model: &str, layout: Option<u32>) -> Vec<WindowRecord> {
    let mut command = patchbench();
    command
        .args(["boot", &format!("--cost-model={model}"), "--out"])
        .arg(out);
    if let Some(n) = layout {
        command.args(["--layout", &n.to_string()]);
    }
    let output = command
        .arg(kernel)
        .args(["--", "/init", "marked-loop", &ITERATIONS.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "patchbench boot --cost-model failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let name = if model == "count" {
        "count"
    } else {
        "skylake-client"
    };
    assert!(
        stdout.contains(&format!("window 1 probe ({name})")),
        "{stdout}"
    );
    if let Some(n) = layout {
        // The agent scattered the free pages before the command, and the
        // kernel was told the layout.
        let console = std::fs::read_to_string(out.join("boot1").join("console.log")).unwrap();
        assert!(
            console.contains(&format!("memory layout {n}"))
                && console.contains(&format!("patchbench.layout={n}")),
            "{console}"
        );
    }
    let path = out.join("boot1").join(cost::WINDOWS_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    cost::parse_windows(&text, &path).unwrap()
}

/// The loop's window holds exactly its user instructions, 2 per iteration
/// plus the end marker, on every boot, and in any memory layout (the
/// second boot runs layout 3: a layout moves pages, not instructions), and
/// in the counting lane as in the cost lane.
#[test]
fn the_cost_model_counts_a_marked_loop_exactly_on_every_boot() {
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let kernel = smoke_kernel(dir.path());
    let boots: Vec<Vec<WindowRecord>> = (0..2)
        .map(|i| {
            let layout = (i == 1).then_some(3);
            marked_loop(
                &kernel,
                &dir.path().join(format!("run{i}")),
                "cache",
                layout,
            )
        })
        .collect();
    let user_insns: Vec<u64> = boots
        .iter()
        .map(|windows| {
            assert_eq!(windows.len(), 1, "{windows:?}");
            let w = &windows[0];
            assert_eq!((w.seq, w.phase.as_str()), (1, "probe"));
            let user = w
                .symbols
                .iter()
                .find(|s| s.symbol == "user")
                .expect("the loop runs in user space");
            // Whatever else ran meanwhile (a timer interrupt) is kernel
            // code, counted in the window's total but not as `user`.
            assert!(w.total.insns >= user.cost.insns);
            assert!(w.total.modeled_cycles >= w.total.insns);
            // The kernel/user split of modeled cycles sums to the window's
            // total, and its user part is the loop's.
            let (kernel, user_cycles) = cost::mode_split(w).unwrap();
            assert_eq!(kernel + user_cycles, w.total.modeled_cycles);
            assert_eq!(user_cycles, user.cost.modeled_cycles);
            let metrics = cost::sample_metrics(windows, cost::PluginModel::Cache).unwrap();
            assert_eq!(metrics["probe_user_modeled_cycles"], user_cycles);
            assert_eq!(metrics["probe_kernel_modeled_cycles"], kernel);
            user.cost.insns
        })
        .collect();
    assert_eq!(user_insns, [2 * ITERATIONS + 1, 2 * ITERATIONS + 1]);

    // The counting lane counts a block's instructions by code QEMU
    // generates, not by a call into the plugin: the same exact count.
    let windows = marked_loop(&kernel, &dir.path().join("count"), "count", None);
    assert_eq!(windows.len(), 1, "{windows:?}");
    let user = windows[0]
        .symbols
        .iter()
        .find(|s| s.symbol == "user")
        .expect("the loop runs in user space");
    assert_eq!(user.cost.insns, 2 * ITERATIONS + 1);
    assert!(windows[0].total.insns >= user.cost.insns);
}
