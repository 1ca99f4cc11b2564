//! Pure builders of the cost lane's QEMU arguments and kernel parameters,
//! each flag commented with why it is there (as in `vm::args`). They live
//! in `vm`, which builds every QEMU command, so that `cost` (the plugin's
//! host side: windows, metrics, profiles) never imports `vm`.

use std::path::Path;

use patchbench_costmodel::args::PluginArgs;

use super::args::{accel_args, escape};
use crate::model::Accel;

/// The accelerator of every cost-lane boot, whatever the campaign or the
/// host asks for: the model's counts repeat only under TCG, one thread for
/// all vCPUs, with the instruction-count clock.
pub fn accel() -> Vec<String> {
    accel_args(Accel::Tcg, true, crate::model::TcgThreads::Single)
}

/// Loads the plugin, and makes the guest's randomness repeatable.
pub fn qemu_args(lane: &crate::cost::CostLane, windows: &Path) -> Vec<String> {
    let args = PluginArgs {
        out: windows.to_owned(),
        system_map: lane.system_map.clone(),
        // Promised by `vm::qemu_command`, which runs every boot with a
        // plugin under TCG, single-threaded, with icount.
        icount: true,
        model: lane.model,
        boot: lane.boot,
    };
    let mut option = escape(&lane.plugin.display().to_string());
    for arg in args.to_args() {
        option.push(',');
        option.push_str(&escape(&arg));
    }
    vec![
        // The plugin, its window file and the kernel's symbol map.
        "-plugin".into(),
        option,
        // RDRAND and RDSEED come from a PRNG with this seed instead of the
        // host's entropy: the kernel's random choices (and so the pages it
        // allocates, hence the physical addresses the caches see) repeat
        // from boot to boot.
        "-seed".into(),
        "1".into(),
        // The guest's wall clock starts at a fixed date and runs on the
        // instruction-count clock: the time the kernel reads at boot (and
        // mixes into its randomness) repeats too.
        "-rtc".into(),
        "base=2020-01-01T00:00:00,clock=vm".into(),
    ]
}

/// Kernel parameters the cost lane adds to the command line.
pub fn kernel_params() -> Vec<String> {
    // The kernel where System.map says it is, so that instructions are
    // attributed to the right symbols.
    vec!["nokaslr".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_option_escapes_commas_and_promises_icount() {
        let lane = crate::cost::CostLane {
            plugin: "/t/libpatchbench_cost_plugin.so".into(),
            system_map: "/k,1/System.map".into(),
            model: crate::cost::PluginModel::Count,
            boot: false,
        };
        let args = qemu_args(&lane, Path::new("/b/cost-windows.jsonl"));
        assert_eq!(
            args,
            [
                "-plugin",
                "/t/libpatchbench_cost_plugin.so,out=/b/cost-windows.jsonl,system_map=/k,,1/System.map,icount=on,model=count",
                "-seed",
                "1",
                "-rtc",
                "base=2020-01-01T00:00:00,clock=vm"
            ]
        );
        assert_eq!(kernel_params(), ["nokaslr"]);
    }
}
