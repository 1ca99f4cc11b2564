//! Pure builders of QEMU's argument vector, one small function per concern,
//! each flag commented with why it is there. Nothing here touches the host.

use std::path::Path;

use crate::config::CpuShape;
use crate::model::Accel;
use crate::model::TcgThreads;

/// QEMU option values are comma-separated; a literal comma is written twice.
pub fn escape(value: &str) -> String {
    value.replace(',', ",,")
}

fn s(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// Devices and behaviour every boot shares.
pub fn base_args() -> Vec<String> {
    s(&[
        // Only the devices we add: no default NIC, VGA, floppy or CD-ROM.
        "-nodefaults",
        // Ignore any host-wide QEMU config file.
        "-no-user-config",
        "-display",
        "none",
        // Without a NIC QEMU does not look for iPXE option ROMs.
        "-nic",
        "none",
        // A guest reboot (the agent's power-off, or panic=-1) exits QEMU.
        "-no-reboot",
    ])
}

/// The accelerator and the CPU model that goes with it.
pub fn accel_args(accel: Accel, icount: bool, threads: TcgThreads) -> Vec<String> {
    match (accel, icount) {
        // The host CPU, as the patch will meet it in production. (icount is
        // a TCG mode; the campaign refuses it with KVM before any boot.)
        (Accel::Kvm, _) => s(&["-accel", "kvm", "-cpu", "host"]),
        // Every feature TCG can emulate; one host thread per vCPU (MTTCG)
        // or one for all (`vm.tcg_threads`, docs/tcg-noise.md).
        (Accel::Tcg, false) => vec![
            "-accel".into(),
            format!("tcg,thread={}", threads.as_str()),
            "-cpu".into(),
            "max".into(),
        ],
        (Accel::Tcg, true) => s(&[
            // icount cannot run one thread per vCPU: QEMU refuses MTTCG.
            "-accel",
            "tcg,thread=single",
            "-cpu",
            "max",
            // Guest time advances 2^0 ns per instruction, and the guest
            // never sleeps in host time: timings become a deterministic
            // function of the instructions executed (about 5x slower).
            "-icount",
            "shift=0,sleep=off",
        ]),
    }
}

/// Under KVM, where guest time is host time: the host's own memory
/// management kept out of the measured windows, and the vCPU threads
/// findable (what the field's KVM benchmarks set, as libvirt's
/// `<memoryBacking>` does).
pub fn kvm_host_args() -> Vec<String> {
    s(&[
        // The host's KSM never merges (or unmerges, on a write) guest
        // pages during a sample: QEMU marks guest RAM mergeable by
        // default (`mem-merge=on`). A second -machine merges into q35.
        "-machine",
        "mem-merge=off",
        // Every guest page is faulted in on the host before the guest
        // starts, so no host page fault lands in a measured window.
        "-mem-prealloc",
        // QEMU names its threads ("CPU 0/KVM", ...), so the vCPU threads
        // can be told from the main loop's and pinned.
        "-name",
        "patchbench,debug-threads=on",
    ])
}

/// Machine type, memory, and the number of *possible* CPUs.
pub fn machine_args(memory_mib: u64, cpus: CpuShape) -> Vec<String> {
    vec![
        // q35: PCIe and ACPI tables that let Linux count possible CPUs.
        "-machine".into(),
        "q35".into(),
        "-m".into(),
        format!("{memory_mib}M"),
        // All `possible` CPUs are present; the kernel's maxcpus= brings only
        // `online` of them up (QEMU's own maxcpus= is not seen by Linux under
        // TCG, see domain-notes).
        "-smp".into(),
        cpus.possible.to_string(),
    ]
}

/// The kernel command line, one parameter per reason.
pub fn kernel_cmdline(cpus: CpuShape) -> Vec<String> {
    vec![
        // The 8250 UART is the earliest console: it shows a boot that dies
        // before userspace.
        "console=ttyS0".into(),
        // Reboot at once on a panic; with -no-reboot QEMU then exits.
        "panic=-1".into(),
        // An oops in the workload's context is a failed run, not a limp.
        "oops=panic".into(),
        // Bring up only `online` CPUs of the `possible` ones.
        format!("maxcpus={}", cpus.online),
        // The agent is /init in the initramfs.
        "rdinit=/init".into(),
    ]
}

/// Kernel parameters of every boot under icount (the icount and cost
/// lanes), added after [`kernel_cmdline`].
pub fn icount_kernel_params() -> Vec<String> {
    // No local APIC timer. TCG has no TSC-deadline timer, so the kernel
    // calibrates the APIC timer against a 100 ms busy loop of `rdtsc`, and
    // under icount every `rdtsc` ends a translation block: 216 M guest
    // instructions, 65.4 s from start to exit of a smoke boot against
    // 30.5 s without. The tick then comes from the HPET, broadcast to the
    // online CPUs, the same way on every kernel a campaign compares.
    //
    // No ACPI PM timer (`pmtmr=0`). Its clocksource's init checks the
    // timer against the PIT: 56 ms of guest time reading I/O ports in a
    // loop. In that window 6 of 27 icount boots of the smoke stalled for
    // 13-16 s of host time: QEMU 7.2's vCPU thread spun at 100% CPU in its
    // round-robin loop (cpu_exec_start/end, icount_update, the BQL taken
    // and dropped) running no guest instruction, until, most often,
    // another QEMU on the host exited. Without the PM timer 0 of 30 boots
    // stalled, and a boot reaches the agent 1-3 s sooner. The HPET is the
    // TSC's watchdog and reference instead, on every kernel alike.
    //
    // No check that the IO-APIC's timer interrupt works (`no_timer_check`,
    // as virtual machines commonly boot): timer_irq_works() spins on
    // `rdtsc` for 40 M cycles or 4 ticks, and each `rdtsc` ends a
    // translation block under icount. Sampling a smoke boot's RIP through
    // QEMU's monitor found it in 7.0% of the host time to the agent's
    // hello; without it the hello came 0.7 s sooner (8.2 s to 7.5 s).
    vec![
        "noapictimer".into(),
        "pmtmr=0".into(),
        "no_timer_check".into(),
    ]
}

/// The loops per jiffy every CPU takes under icount, for a kernel of
/// `hz` ticks a second (`lpj=`, which skips the delay-loop calibration).
///
/// Under icount (shift 0) TCG's TSC counts guest nanoseconds: 10^9 a
/// second, so a jiffy holds 10^9 / HZ cycles, which is what the boot CPU
/// derives from the TSC's frequency anyway (lpj=1000007 at HZ=1000). Each
/// other CPU calibrates its delay loop afresh (`calibrate_delay_direct`),
/// reading the TSC in a loop, and under icount every `rdtsc` ends a
/// translation block: with two vCPUs, sampling the guest's RIP through
/// QEMU's monitor found CPU 1 in `calibrate_delay` or
/// `read_current_timer` in 34 of 90 samples of a boot, and the library
/// kernel reached the agent in 8.9 s against 3.9 s with `lpj=`. The
/// calibration was also wrong: CPU 1 came out at 100,000 BogoMIPS against
/// CPU 0's 2,000, so every `udelay` on it spun 50 times too long.
pub fn lpj_param(hz: u32) -> String {
    format!("lpj={}", 1_000_000_000 / hz.max(1))
}

/// Kernel, initramfs, and command line.
pub fn boot_args(kernel: &Path, initrd: &Path, cmdline: &[String]) -> Vec<String> {
    vec![
        "-kernel".into(),
        kernel.display().to_string(),
        "-initrd".into(),
        initrd.display().to_string(),
        "-append".into(),
        cmdline.join(" "),
    ]
}

/// The serial console, written into the FIFO patchbench reads, which
/// copies it to the console log kept as evidence, with a cap (`conlog`).
pub fn console_args(fifo: &Path) -> Vec<String> {
    vec![
        // A file backend on a FIFO with room for 1 MiB unread: QEMU's
        // writes complete at once, so the guest's console never waits for
        // the host's reader (a socket filled after a few hundred bytes, and
        // the time the guest then spent polling the UART made icount boots
        // diverge, docs/cost-model.md).
        "-chardev".into(),
        format!(
            "file,id=console,path={}",
            escape(&fifo.display().to_string())
        ),
        "-serial".into(),
        "chardev:console".into(),
    ]
}

/// A virtio PCI device's `-device` value: `device` (its driver and
/// options), and under icount `ioeventfd=off`.
///
/// With ioeventfd (QEMU's default, under TCG too), the guest's write to a
/// queue's notify register only signals an eventfd, and QEMU's main loop
/// processes the queue, and raises the interrupt that answers, whenever the
/// host schedules it: two icount boots of one kernel took the virtio-serial
/// interrupt that answers the driver's DRIVER_OK at different instructions,
/// and diverged from there (docs/cost-model.md, Determinism). Off, the
/// vCPU processes the queue inside the register write, at the same
/// instruction in every boot. Without icount nothing is repeatable anyway,
/// and ioeventfd spares KVM an exit to the vCPU thread per notification.
pub fn virtio_pci(device: &str, icount: bool) -> String {
    if icount {
        format!("{device},ioeventfd=off")
    } else {
        device.to_string()
    }
}

/// The virtio-serial port that carries the agent's messages to our socket.
pub fn channel_args(socket: &Path, port_name: &str, icount: bool) -> Vec<String> {
    vec![
        "-device".into(),
        virtio_pci("virtio-serial-pci,id=vser0", icount),
        // QEMU connects to the socket patchbench listens on.
        "-chardev".into(),
        format!(
            "socket,id=agent,path={}",
            escape(&socket.display().to_string())
        ),
        "-device".into(),
        format!("virtserialport,bus=vser0.0,chardev=agent,name={port_name}"),
    ]
}

/// A raw sparse file as a virtio-blk disk, the guest's swap device (`/dev/vda`).
pub fn swap_disk_args(file: &Path, icount: bool) -> Vec<String> {
    // JSON syntax: the file name needs no escaping of its own.
    let blockdev = serde_json::json!({
        "driver": "raw",
        "node-name": "swap0",
        // Swap content need not survive the guest; skip host flushes.
        "cache": {"direct": false, "no-flush": true},
        "file": {"driver": "file", "filename": file.display().to_string()},
    });
    vec![
        "-blockdev".into(),
        blockdev.to_string(),
        "-device".into(),
        virtio_pci("virtio-blk-pci,drive=swap0", icount),
    ]
}

/// Host-root mode: the host's `/` as a read-only 9p export the agent mounts
/// by its tag (`patchbench_agent::HOST_ROOT_TAG`).
pub fn host_root_args(tag: &str, icount: bool) -> Vec<String> {
    vec![
        "-fsdev".into(),
        format!(
            "local,id={tag},path=/,{}",
            [
                // The guest can never write to the host: QEMU refuses it.
                "readonly=on",
                // Pass the host's owners and modes through unchanged; QEMU
                // accesses files as the user it runs as.
                "security_model=none",
                // / spans several host file systems (/proc, /sys, tmpfs):
                // give their inodes distinct numbers in the guest.
                "multidevs=remap",
            ]
            .join(",")
        ),
        "-device".into(),
        virtio_pci(
            &format!("virtio-9p-pci,fsdev={tag},mount_tag={tag}"),
            icount,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: CpuShape = CpuShape {
        possible: 20,
        online: 2,
    };

    #[test]
    fn possible_and_online_cpus_go_to_qemu_and_the_kernel() {
        assert_eq!(
            machine_args(1024, SHAPE),
            ["-machine", "q35", "-m", "1024M", "-smp", "20"]
        );
        assert!(kernel_cmdline(SHAPE).contains(&"maxcpus=2".to_string()));
    }

    #[test]
    fn kvm_and_tcg_pick_their_cpu_models() {
        assert_eq!(
            accel_args(Accel::Kvm, false, TcgThreads::Multi),
            ["-accel", "kvm", "-cpu", "host"]
        );
        assert_eq!(
            // icount is single-threaded whatever vm.tcg_threads says.
            accel_args(Accel::Tcg, true, TcgThreads::Multi),
            [
                "-accel",
                "tcg,thread=single",
                "-cpu",
                "max",
                "-icount",
                "shift=0,sleep=off"
            ]
        );
        assert_eq!(
            accel_args(Accel::Tcg, false, TcgThreads::Multi),
            ["-accel", "tcg,thread=multi", "-cpu", "max"]
        );
        assert_eq!(
            accel_args(Accel::Tcg, false, TcgThreads::Single),
            ["-accel", "tcg,thread=single", "-cpu", "max"]
        );
    }

    #[test]
    fn a_guest_panic_or_reboot_ends_qemu() {
        assert!(base_args().contains(&"-no-reboot".to_string()));
        assert!(kernel_cmdline(SHAPE).contains(&"panic=-1".to_string()));
        assert!(base_args().windows(2).any(|w| w == ["-nic", "none"]));
    }

    #[test]
    fn commas_in_paths_are_escaped() {
        let args = console_args(Path::new("/tmp/a,b/console.fifo"));
        assert_eq!(args[1], "file,id=console,path=/tmp/a,,b/console.fifo");
        let args = channel_args(Path::new("/s,ock"), "org.patchbench.agent", false);
        assert_eq!(args[3], "socket,id=agent,path=/s,,ock");
        assert_eq!(
            args[5],
            "virtserialport,bus=vser0.0,chardev=agent,name=org.patchbench.agent"
        );
    }

    #[test]
    fn the_swap_disk_is_json_and_survives_odd_names() {
        let args = swap_disk_args(Path::new("/x/sw\"ap,1.img"), false);
        let v: serde_json::Value = serde_json::from_str(&args[1]).unwrap();
        assert_eq!(v["file"]["filename"], "/x/sw\"ap,1.img");
        assert_eq!(args[3], "virtio-blk-pci,drive=swap0");
    }

    #[test]
    fn the_host_root_is_exported_read_only() {
        assert_eq!(
            host_root_args("hostroot", false),
            [
                "-fsdev",
                "local,id=hostroot,path=/,readonly=on,security_model=none,multidevs=remap",
                "-device",
                "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot"
            ]
        );
    }

    #[test]
    fn under_icount_every_virtio_device_notifies_synchronously() {
        assert_eq!(
            channel_args(Path::new("/s"), "p", true)[1],
            "virtio-serial-pci,id=vser0,ioeventfd=off"
        );
        assert_eq!(
            swap_disk_args(Path::new("/x"), true)[3],
            "virtio-blk-pci,drive=swap0,ioeventfd=off"
        );
        assert_eq!(
            host_root_args("hostroot", true)[3],
            "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot,ioeventfd=off"
        );
        assert_eq!(
            channel_args(Path::new("/s"), "p", false)[1],
            "virtio-serial-pci,id=vser0"
        );
    }

    #[test]
    fn the_command_line_is_joined_with_spaces() {
        let args = boot_args(Path::new("/k"), Path::new("/i"), &kernel_cmdline(SHAPE));
        assert_eq!(
            args[5],
            "console=ttyS0 panic=-1 oops=panic maxcpus=2 rdinit=/init"
        );
    }
}
