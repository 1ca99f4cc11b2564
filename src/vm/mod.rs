//! Booting a kernel in QEMU and talking to the guest agent.
//!
//! One boot: build the argument vector (`args`), spawn QEMU in its own
//! process group, wait for the agent's hello under the boot deadline, then
//! for its messages under the run deadline. Every failure is a [`VmError`]
//! naming the boot and its console log, with an excerpt when the console
//! shows why. QEMU never outlives a boot.

pub mod accel;
pub mod args;
pub mod conlog;
pub mod console;
pub mod cost_args;
pub mod pin;
pub mod smp_icount;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use patchbench_agent::{GuestFacts, Message, PORT_NAME};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixListener;

use crate::config::CpuShape;
use crate::cost::{self, CostLane};
use crate::model::TcgThreads;
use crate::process::{Cmd, Daemon, ProcessError};
use accel::Accel;

/// How long QEMU gets to exit by itself after the agent said it is done.
const EXIT_GRACE: Duration = Duration::from_secs(30);

/// [`EXIT_GRACE`], or in the cost lane the boot timeout if longer: going
/// down is kernel work like coming up, and the modeled guest runs it 4 to
/// 9 times slower than icount (docs/cost-model.md); 30 s was too short for
/// a cost-lane guest's reboot on a host running three other QEMUs.
fn exit_grace(spec: &BootSpec, cost_lane: bool) -> Duration {
    if cost_lane {
        EXIT_GRACE.max(spec.boot_timeout)
    } else {
        EXIT_GRACE
    }
}
/// Under KVM, a boot that prints nothing this long is a KVM that does not work.
const KVM_FIRST_OUTPUT: Duration = Duration::from_secs(20);

/// How a boot's vCPUs run and what its guest's clock counts: the lane, as
/// QEMU is told it. `campaign::lane` decides it once for a campaign, and
/// every QEMU argument and kernel word that depends on it comes from here.
#[derive(Debug, Clone, PartialEq)]
pub enum Clock {
    /// KVM: the guest runs on the host's CPU, in real time.
    Kvm,
    /// Plain TCG, with this threading: the host's time.
    Tcg(TcgThreads),
    /// TCG single-threaded with `-icount shift=0,sleep=off`: guest time
    /// counts instructions.
    Icount,
    /// As [`Clock::Icount`], with the cost lane's plugin (the cache model,
    /// or counting alone) writing its windows.
    Plugin(CostLane),
}

impl Clock {
    /// The accelerator.
    pub fn accel(&self) -> Accel {
        match self {
            Clock::Kvm => Accel::Kvm,
            _ => Accel::Tcg,
        }
    }

    /// Whether guest time counts instructions.
    pub fn icount(&self) -> bool {
        matches!(self, Clock::Icount | Clock::Plugin(_))
    }

    /// The plugin's lane, when one is loaded.
    pub fn plugin(&self) -> Option<&CostLane> {
        match self {
            Clock::Plugin(lane) => Some(lane),
            _ => None,
        }
    }
}

/// Everything one boot needs.
#[derive(Debug, Clone)]
pub struct BootSpec {
    /// `A`, `B`, `A'`: names the boot in messages.
    pub label: String,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// Where the console log, QEMU's stderr and the swap file go.
    pub dir: PathBuf,
    /// The accelerator, the clock and the plugin, if any.
    pub clock: Clock,
    pub memory_mib: u64,
    pub cpus: CpuShape,
    /// The size of the swap disk (`/dev/vda`); 0 attaches none, for
    /// workloads that swap to zram in the guest, so that no disk I/O
    /// reaches the host.
    pub swap_bytes: u64,
    pub boot_timeout: Duration,
    pub run_timeout: Duration,
    /// Export the host's `/` read-only over 9p (host-root mode).
    pub host_root: bool,
    /// Words added to the kernel command line (the campaign's and the
    /// variant's), after patchbench's own.
    pub extra_cmdline: Vec<String>,
    /// The kernel's CONFIG_HZ where its build directory says
    /// (`build::kernel_hz`): under icount, every CPU's delay loop is then
    /// preset ([`args::lpj_param`]) rather than calibrated.
    pub hz: Option<u32>,
}

impl BootSpec {
    pub fn console_log(&self) -> PathBuf {
        self.dir.join("console.log")
    }
    pub fn qemu_stderr(&self) -> PathBuf {
        self.dir.join("qemu-stderr.log")
    }
    fn swap_file(&self) -> PathBuf {
        self.dir.join("swap.img")
    }
    /// Where the cost-model plugin writes its windows (cost lane only).
    pub fn cost_windows(&self) -> PathBuf {
        self.dir.join(cost::WINDOWS_FILE)
    }
}

/// The longest a boot can legitimately last: the boot timeout, the run
/// timeout (which starts at the agent's hello), the grace for QEMU's own
/// exit, and a minute more. `converse` enforces the specific deadlines and
/// explains them; this one only guarantees that QEMU cannot outlive them.
pub fn qemu_deadline(spec: &BootSpec) -> Duration {
    spec.boot_timeout + spec.run_timeout + exit_grace(spec, true) + Duration::from_secs(60)
}

/// The agent's socket in a boot's socket directory.
const AGENT_SOCKET: &str = "agent.sock";
/// The serial console's FIFO in a boot's socket directory.
const CONSOLE_FIFO: &str = "console.fifo";

/// The full QEMU command for a boot whose sockets are in `sockets`, in
/// the lane its [`Clock`] says.
pub fn qemu_command(spec: &BootSpec, sockets: &Path) -> Cmd {
    let mut cmdline = [args::kernel_cmdline(spec.cpus), spec.extra_cmdline.clone()].concat();
    let icount = spec.clock.icount();
    let lane = spec.clock.plugin();
    let accel = match &spec.clock {
        Clock::Kvm => [
            args::accel_args(Accel::Kvm, false, TcgThreads::Multi),
            args::kvm_host_args(),
        ]
        .concat(),
        Clock::Tcg(threads) => args::accel_args(Accel::Tcg, false, *threads),
        Clock::Icount => args::accel_args(Accel::Tcg, true, TcgThreads::Single),
        Clock::Plugin(_) => {
            cmdline.extend(cost_args::kernel_params());
            cost_args::accel()
        }
    };
    if icount {
        cmdline.extend(args::icount_kernel_params());
        cmdline.extend(spec.hz.map(args::lpj_param));
    }
    Cmd::new("qemu-system-x86_64", qemu_deadline(spec))
        .args(args::base_args())
        .args(accel)
        .args(args::machine_args(spec.memory_mib, spec.cpus))
        .args(args::boot_args(&spec.kernel, &spec.initrd, &cmdline))
        .args(args::console_args(&sockets.join(CONSOLE_FIFO)))
        .args(args::channel_args(
            &sockets.join(AGENT_SOCKET),
            PORT_NAME,
            icount,
        ))
        .args(if spec.swap_bytes > 0 {
            args::swap_disk_args(&spec.swap_file(), icount)
        } else {
            Vec::new()
        })
        .args(if spec.host_root {
            args::host_root_args(patchbench_agent::HOST_ROOT_TAG, icount)
        } else {
            Vec::new()
        })
        .args(lane.map_or_else(Vec::new, |l| cost_args::qemu_args(l, &spec.cost_windows())))
}

/// What a boot produced.
#[derive(Debug)]
pub struct BootOutcome {
    pub facts: Option<GuestFacts>,
    /// From QEMU's start to the agent's hello.
    pub hello_after: Duration,
    /// From QEMU's start to its exit.
    pub total: Duration,
    /// Under KVM, the host CPUs its vCPUs and QEMU's other threads were
    /// pinned to (`pin`); `None` in the TCG lanes.
    pub pinned: Option<pin::Pinned>,
}

#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error("boot {label}: cannot prepare ({what})")]
    Setup {
        label: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("boot {label}: cannot start QEMU")]
    Spawn {
        label: String,
        #[source]
        source: ProcessError,
    },
    #[error("boot {label}: {what} (console log: {})\n{excerpt}", console_log.display())]
    Guest {
        label: String,
        /// What went wrong, in a few words.
        what: String,
        console_log: PathBuf,
        excerpt: String,
    },
    /// QEMU died of a signal patchbench did not send (an operator's kill,
    /// the host's OOM killer): the host failed, not the guest. The samples
    /// recorded before it stay where the handler put them.
    #[error("boot {label}: QEMU was killed ({status}) in the middle of the boot (console log: {})\n{excerpt}", console_log.display())]
    Killed {
        label: String,
        status: std::process::ExitStatus,
        console_log: PathBuf,
        excerpt: String,
    },
    /// The console log could not be written (a full disk): the boot's
    /// evidence is incomplete.
    #[error("boot {label}: the console log is incomplete")]
    ConsoleLog {
        label: String,
        #[source]
        source: conlog::LogError,
    },
    /// Under KVM, QEMU's threads could not be pinned (`pin`): the host
    /// is not what the measurement needs.
    #[error("boot {label}: cannot pin QEMU's threads")]
    Pin {
        label: String,
        #[source]
        source: pin::PinError,
    },
    /// The caller's handler refused a message (it could not write the
    /// results, say); the boot was stopped.
    #[error("boot {label}: cannot record the agent's message")]
    Record {
        label: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Boot, collect every message through `on_message`, and return the outcome.
/// In the cost lane ([`Clock::Plugin`]) the plugin writes its windows to
/// [`BootSpec::cost_windows`].
///
/// `on_message` sees each message the moment it arrives (the campaign writes
/// samples to disk there); an error it returns aborts the boot.
pub async fn boot(
    spec: &BootSpec,
    mut on_message: impl FnMut(&Message) -> anyhow::Result<()>,
) -> Result<BootOutcome, VmError> {
    let lane = spec.clock.plugin();
    let setup = |what: &str| {
        let label = spec.label.clone();
        let what = what.to_string();
        move |source| VmError::Setup {
            label,
            what,
            source,
        }
    };
    std::fs::create_dir_all(&spec.dir).map_err(setup("create the boot directory"))?;
    if spec.swap_bytes > 0 {
        let swap =
            std::fs::File::create(spec.swap_file()).map_err(setup("create the swap file"))?;
        swap.set_len(spec.swap_bytes)
            .map_err(setup("size the swap file"))?;
    }
    // A short socket path: sun_path holds 108 bytes, a cache path may not fit.
    let sock_dir = tempfile::Builder::new()
        .prefix("patchbench-")
        .tempdir()
        .map_err(setup("create the socket directory"))?;
    let listener = UnixListener::bind(sock_dir.path().join(AGENT_SOCKET))
        .map_err(setup("listen on the agent socket"))?;
    let console_fifo = conlog::fifo(&sock_dir.path().join(CONSOLE_FIFO))
        .map_err(setup("make the console FIFO"))?;
    let log = std::fs::File::create(spec.console_log()).map_err(setup("create the console log"))?;
    let log_path = spec.console_log();
    let mut console = Console(tokio::spawn(async move {
        conlog::copy(console_fifo, log, &log_path).await
    }));

    let started = Instant::now();
    let cmd = qemu_command(spec, sock_dir.path());
    let mut qemu = Daemon::spawn(&cmd, &spec.qemu_stderr()).map_err(|source| VmError::Spawn {
        label: spec.label.clone(),
        source,
    })?;
    let result = converse(spec, &listener, &mut qemu, started, &mut on_message).await;
    match result {
        Ok((facts, hello_after, pinned)) => {
            let exited = tokio::time::timeout(exit_grace(spec, lane.is_some()), qemu.wait()).await;
            let total = started.elapsed();
            if exited.is_err() {
                qemu.stop().await;
                let _ = console.closed().await;
                return Err(guest_error(
                    spec,
                    "QEMU did not exit after the agent finished",
                ));
            }
            console
                .closed()
                .await
                .map_err(|source| VmError::ConsoleLog {
                    label: spec.label.clone(),
                    source,
                })?;
            // A warning or oops during the run makes the samples suspect even
            // if the agent finished.
            if let Some(trouble) = console::find_trouble(&read_console(spec)) {
                return Err(VmError::Guest {
                    label: spec.label.clone(),
                    what: format!("the console shows a {} during the run", trouble.kind),
                    console_log: spec.console_log(),
                    excerpt: trouble.excerpt,
                });
            }
            Ok(BootOutcome {
                facts,
                hello_after,
                total,
                pinned,
            })
        }
        Err(stop) => {
            qemu.stop().await;
            // The excerpt comes from the whole log, the console's last
            // words included.
            let _ = console.closed().await;
            Err(match stop {
                Stop::Error(e) => e,
                Stop::Guest(what) => guest_error(spec, &what),
                Stop::Killed(status) => VmError::Killed {
                    label: spec.label.clone(),
                    status,
                    console_log: spec.console_log(),
                    excerpt: console::tail(&read_console(spec), 5),
                },
            })
        }
    }
}

/// Why a conversation with the guest stopped early. The error is made
/// once the console log is complete.
enum Stop {
    Error(VmError),
    /// A guest error: what went wrong, when the console does not say.
    Guest(String),
    /// QEMU died of a signal patchbench did not send (patchbench only
    /// signals QEMU after the conversation).
    Killed(std::process::ExitStatus),
}

impl From<VmError> for Stop {
    fn from(e: VmError) -> Stop {
        Stop::Error(e)
    }
}

/// Whether a signal ended QEMU, as opposed to an exit of its own.
fn killed(status: &std::io::Result<std::process::ExitStatus>) -> Option<Stop> {
    use std::os::unix::process::ExitStatusExt;
    let status = *status.as_ref().ok()?;
    status.signal().map(|_| Stop::Killed(status))
}

/// The task copying the console to its log.
struct Console(tokio::task::JoinHandle<Result<(), conlog::LogError>>);

/// How long the console copy may take to finish after QEMU exited.
const CONSOLE_DRAIN: Duration = Duration::from_secs(5);

impl Console {
    /// Wait for the copy to finish (QEMU has exited, or is about to), so
    /// the log is complete. A copy still running after [`CONSOLE_DRAIN`]
    /// (QEMU never opened the console FIFO) is stopped.
    async fn closed(&mut self) -> Result<(), conlog::LogError> {
        match tokio::time::timeout(CONSOLE_DRAIN, &mut self.0).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Ok(()),
            Err(_) => {
                self.0.abort();
                Ok(())
            }
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn read_console(spec: &BootSpec) -> String {
    std::fs::read(spec.console_log())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// A guest error whose excerpt is the console's first sign of trouble, or
/// its last lines; the console's diagnosis wins over `fallback`.
fn guest_error(spec: &BootSpec, fallback: &str) -> VmError {
    let console = read_console(spec);
    let (what, excerpt) = match console::find_trouble(&console) {
        Some(t) => (format!("{} ({fallback})", t.kind), t.excerpt),
        None if console.is_empty() => (
            format!("{fallback}; the console is empty"),
            format!(
                "QEMU stderr:\n{}",
                console::tail(
                    &std::fs::read_to_string(spec.qemu_stderr()).unwrap_or_default(),
                    10
                )
            ),
        ),
        None => (fallback.to_string(), console::tail(&console, 15)),
    };
    VmError::Guest {
        label: spec.label.clone(),
        what,
        console_log: spec.console_log(),
        excerpt,
    }
}

/// Accept the agent's connection and read its messages until `Done`.
async fn converse(
    spec: &BootSpec,
    listener: &UnixListener,
    qemu: &mut Daemon,
    started: Instant,
    on_message: &mut impl FnMut(&Message) -> anyhow::Result<()>,
) -> Result<(Option<GuestFacts>, Duration, Option<pin::Pinned>), Stop> {
    let boot_deadline = tokio::time::Instant::from_std(started + spec.boot_timeout);
    // Biased, the connection first: a guest that connected, wrote its
    // lines and powered off at once has both ready, and its lines are in
    // the socket, waiting to be read (the hermetic tier's fake QEMU showed
    // the race: an exit taken first misread such a boot as never having
    // connected).
    let stream = tokio::select! {
        biased;
        accepted = listener.accept() => accepted.map_err(|e| VmError::Setup {
            label: spec.label.clone(),
            what: "accept the agent connection".into(),
            source: e,
        })?.0,
        status = qemu.wait() => {
            if let Some(killed) = killed(&status) {
                return Err(killed);
            }
            return Err(Stop::Guest(format!("QEMU exited ({}) before the guest connected", describe(status))));
        }
        _ = tokio::time::sleep_until(boot_deadline) => {
            return Err(Stop::Guest("QEMU never opened the agent channel".into()));
        }
    };
    let mut lines = BufReader::new(stream).lines();
    let mut hello_after = None;
    let mut run_deadline = boot_deadline;
    let mut facts = None;
    let mut pinned = None;
    let mut watchdog = tokio::time::interval(Duration::from_secs(1));
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            _ = tokio::time::sleep_until(run_deadline) => {
                let what = match hello_after {
                    None => {
                        let hint = console::stall_hint(&read_console(spec))
                            .map_or(String::new(), |h| format!(": {h}"));
                        format!("no hello from the agent within the boot timeout ({}){hint}", humantime::format_duration(spec.boot_timeout))
                    }
                    Some(_) => format!("the workload did not finish within the run timeout ({})", humantime::format_duration(spec.run_timeout)),
                };
                return Err(Stop::Guest(what));
            }
            _ = watchdog.tick(), if spec.clock == Clock::Kvm && hello_after.is_none() => {
                if started.elapsed() > KVM_FIRST_OUTPUT && read_console(spec).is_empty() {
                    return Err(Stop::Guest(format!(
                        "no console output after {}s under KVM: this host's KVM does not run guests; use --accel tcg",
                        KVM_FIRST_OUTPUT.as_secs()
                    )));
                }
                continue;
            }
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => {
                // The channel closed before Done: the guest died, or QEMU
                // was killed. Give QEMU a moment to exit so the console log
                // is complete and its status says which.
                if let Ok(status) = tokio::time::timeout(Duration::from_secs(5), qemu.wait()).await
                    && let Some(killed) = killed(&status)
                {
                    return Err(killed);
                }
                return Err(Stop::Guest(
                    "the guest stopped before the workload finished".into(),
                ));
            }
        };
        let message: Message = serde_json::from_str(&line).map_err(|e| VmError::Guest {
            label: spec.label.clone(),
            what: format!("the agent sent a line that is not a protocol message ({e})"),
            console_log: spec.console_log(),
            excerpt: line.chars().take(500).collect(),
        })?;
        match &message {
            Message::Hello { protocol, .. } => {
                if *protocol != patchbench_agent::PROTOCOL_VERSION {
                    return Err(Stop::Guest(format!(
                        "the agent speaks protocol {protocol}, the host {}; rebuild both",
                        patchbench_agent::PROTOCOL_VERSION
                    )));
                }
                hello_after = Some(started.elapsed());
                // Before the first sample: the agent samples only after
                // its facts, which follow the hello.
                if spec.clock == Clock::Kvm {
                    let Some(pid) = qemu.pid() else {
                        return Err(Stop::Guest("QEMU exited at the agent's hello".into()));
                    };
                    pinned = Some(pin_vcpus(spec, pid).await?);
                }
                run_deadline = tokio::time::Instant::now() + spec.run_timeout;
            }
            Message::Facts(f) => facts = Some(GuestFacts::clone(f)),
            Message::Error { message } => {
                return Err(Stop::Guest(format!("the workload failed: {message}")));
            }
            Message::Sample(_) | Message::Done => {}
        }
        on_message(&message).map_err(|e| VmError::Record {
            label: spec.label.clone(),
            source: e.into(),
        })?;
        if message == Message::Done {
            return Ok((facts, hello_after.unwrap_or_default(), pinned));
        }
    }
}

/// Pins a KVM boot's QEMU (`pin`): each of the guest's online vCPUs on a
/// physical core of its own, QEMU's other threads on the cores left.
async fn pin_vcpus(spec: &BootSpec, pid: u32) -> Result<pin::Pinned, VmError> {
    let pin_error = |source| VmError::Pin {
        label: spec.label.clone(),
        source,
    };
    let online = spec.cpus.online as usize;
    crate::blocking::unblock(move || {
        let topology = pin::Topology::read(Path::new(pin::SYSFS_CPU))?;
        let plan = pin::check_fits(&topology, online)?;
        pin::pin_qemu(Path::new("/proc"), pid, &plan)
    })
    .await
    .map_err(pin_error)
}

fn describe(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("wait failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_qemu_command_has_every_part() {
        let spec = BootSpec {
            label: "A".into(),
            kernel: "/k/bzImage".into(),
            initrd: "/b/initramfs.cpio".into(),
            dir: "/b".into(),
            clock: Clock::Tcg(TcgThreads::Multi),
            memory_mib: 1024,
            cpus: CpuShape {
                possible: 4,
                online: 2,
            },
            swap_bytes: 1 << 29,
            boot_timeout: Duration::from_secs(60),
            run_timeout: Duration::from_secs(600),
            host_root: false,
            extra_cmdline: vec!["zswap.enabled=0".into()],
            hz: None,
        };
        let cmd = qemu_command(&spec, Path::new("/tmp/s")).to_string();
        assert!(!cmd.contains("9p"), "{cmd}");
        let with_root = BootSpec {
            host_root: true,
            ..spec.clone()
        };
        let root_cmd = qemu_command(&with_root, Path::new("/tmp/s")).to_string();
        let icount = BootSpec {
            clock: Clock::Icount,
            ..spec.clone()
        };
        let icount_cmd = qemu_command(&icount, Path::new("/tmp/s")).to_string();
        assert!(
            icount_cmd.contains("-icount shift=0,sleep=off")
                && icount_cmd
                    .contains("rdinit=/init zswap.enabled=0 noapictimer pmtmr=0 no_timer_check"),
            "{icount_cmd}"
        );
        assert!(!icount_cmd.contains("lpj="), "{icount_cmd}");
        // A kernel whose HZ is known: every CPU's delay loop preset, a
        // jiffy of TSC cycles at icount's 1 GHz; never off icount.
        let hz = |clock| BootSpec {
            clock,
            hz: Some(250),
            ..spec.clone()
        };
        let icount_hz = qemu_command(&hz(Clock::Icount), Path::new("/tmp/s")).to_string();
        assert!(
            icount_hz.contains("no_timer_check lpj=4000000"),
            "{icount_hz}"
        );
        let tcg_hz = qemu_command(&hz(Clock::Tcg(TcgThreads::Multi)), Path::new("/tmp/s"));
        assert!(!tcg_hz.to_string().contains("lpj="));
        assert!(root_cmd.contains("mount_tag=hostroot"), "{root_cmd}");
        // No swap disk for workloads that swap to zram.
        let no_disk = BootSpec {
            swap_bytes: 0,
            ..spec.clone()
        };
        let no_disk_cmd = qemu_command(&no_disk, Path::new("/tmp/s")).to_string();
        assert!(
            !no_disk_cmd.contains("swap.img") && !no_disk_cmd.contains("virtio-blk"),
            "{no_disk_cmd}"
        );
        assert!(
            !cmd.contains("-plugin")
                && !cmd.contains("nokaslr")
                && !cmd.contains("noapictimer")
                && !cmd.contains("pmtmr"),
            "{cmd}"
        );
        for part in [
            "qemu-system-x86_64 -nodefaults",
            "-accel tcg,thread=multi",
            "-smp 4",
            "-kernel /k/bzImage -initrd /b/initramfs.cpio",
            "maxcpus=2",
            "rdinit=/init zswap.enabled=0",
            "file,id=console,path=/tmp/s/console.fifo",
            "path=/tmp/s/agent.sock",
            "name=org.patchbench.agent",
            "/b/swap.img",
        ] {
            assert!(cmd.contains(part), "missing {part} in {cmd}");
        }
    }

    #[test]
    fn a_cost_lane_boot_is_tcg_icount_with_the_plugin_and_nokaslr() {
        let spec = BootSpec {
            label: "A".into(),
            kernel: "/k/bzImage".into(),
            initrd: "/b/initramfs.cpio".into(),
            dir: "/b".into(),
            clock: Clock::Plugin(CostLane {
                plugin: "/t/libpatchbench_cost_plugin.so".into(),
                system_map: "/k/System.map".into(),
                model: cost::PluginModel::Cache,
                boot: false,
            }),
            memory_mib: 1024,
            cpus: CpuShape {
                possible: 20,
                online: 2,
            },
            swap_bytes: 1 << 29,
            boot_timeout: Duration::from_secs(60),
            run_timeout: Duration::from_secs(600),
            host_root: false,
            extra_cmdline: Vec::new(),
            hz: None,
        };
        // Going down gets the boot timeout in the cost lane, 30 s elsewhere.
        assert_eq!(exit_grace(&spec, true), Duration::from_secs(60));
        assert_eq!(exit_grace(&spec, false), EXIT_GRACE);
        let quick = BootSpec {
            boot_timeout: Duration::from_secs(10),
            ..spec.clone()
        };
        assert_eq!(exit_grace(&quick, true), EXIT_GRACE);
        let cmd = qemu_command(&spec, Path::new("/tmp/s")).to_string();
        for part in [
            "-accel tcg,thread=single",
            "-icount shift=0,sleep=off",
            "maxcpus=2 rdinit=/init nokaslr noapictimer",
            "-plugin /t/libpatchbench_cost_plugin.so,out=/b/cost-windows.jsonl,system_map=/k/System.map,icount=on,model=cache",
            "-seed 1",
            "virtio-serial-pci,id=vser0,ioeventfd=off",
            "virtio-blk-pci,drive=swap0,ioeventfd=off",
        ] {
            assert!(cmd.contains(part), "missing {part} in {cmd}");
        }
        assert!(!cmd.contains("kvm"), "{cmd}");
    }

    /// A KVM boot's whole command line: the host CPU, guest memory
    /// neither merged by the host's KSM nor faulted in during a sample,
    /// named threads, and none of TCG's or icount's flags.
    #[test]
    fn a_kvm_boots_whole_command_line() {
        let spec = BootSpec {
            label: "A".into(),
            kernel: "/k/bzImage".into(),
            initrd: "/b/initramfs.cpio".into(),
            dir: "/b".into(),
            clock: Clock::Kvm,
            memory_mib: 2048,
            cpus: CpuShape {
                possible: 20,
                online: 2,
            },
            swap_bytes: 0,
            boot_timeout: Duration::from_secs(60),
            run_timeout: Duration::from_secs(600),
            host_root: false,
            extra_cmdline: Vec::new(),
            hz: None,
        };
        let cmd = qemu_command(&spec, Path::new("/tmp/s")).to_string();
        assert_eq!(
            cmd,
            "qemu-system-x86_64 -nodefaults -no-user-config -display none -nic none -no-reboot \
             -accel kvm -cpu host -machine mem-merge=off -mem-prealloc -name patchbench,debug-threads=on \
             -machine q35 -m 2048M -smp 20 \
             -kernel /k/bzImage -initrd /b/initramfs.cpio \
             -append 'console=ttyS0 panic=-1 oops=panic maxcpus=2 rdinit=/init' \
             -chardev file,id=console,path=/tmp/s/console.fifo -serial chardev:console \
             -device virtio-serial-pci,id=vser0 \
             -chardev socket,id=agent,path=/tmp/s/agent.sock \
             -device virtserialport,bus=vser0.0,chardev=agent,name=org.patchbench.agent"
        );
    }

    /// The pinning a KVM boot's command line leads to: `-smp 20` makes 20
    /// vCPU threads, named for `debug-threads=on`; the guest brings up 2
    /// (`maxcpus=2`), which get a physical core each, and the 18 it never
    /// brings up go with QEMU's main loop to the core kept for it and the
    /// cores left.
    #[test]
    fn a_kvm_boots_online_vcpus_are_pinned_by_the_names_its_command_line_gives() {
        let spec = BootSpec {
            label: "A".into(),
            kernel: "/k/bzImage".into(),
            initrd: "/b/initramfs.cpio".into(),
            dir: "/b".into(),
            clock: Clock::Kvm,
            memory_mib: 2048,
            cpus: CpuShape {
                possible: 20,
                online: 2,
            },
            swap_bytes: 0,
            boot_timeout: Duration::from_secs(60),
            run_timeout: Duration::from_secs(600),
            host_root: false,
            extra_cmdline: Vec::new(),
            hz: None,
        };
        let cmd = qemu_command(&spec, Path::new("/tmp/s")).to_string();
        assert!(
            cmd.contains("-name patchbench,debug-threads=on")
                && cmd.contains("-smp 20")
                && cmd.contains("maxcpus=2"),
            "{cmd}"
        );
        // QEMU's threads as /proc shows them: the main loop, an RCU
        // thread, one per possible vCPU.
        let proc = tempfile::tempdir().unwrap();
        let pid = 4000;
        let mut threads = vec![
            (pid, "qemu-system-x86".to_string()),
            (pid + 1, "qemu-system-x86".into()),
        ];
        threads.extend((0..spec.cpus.possible).map(|i| (pid + 2 + i, format!("CPU {i}/KVM"))));
        for (tid, comm) in &threads {
            let task = proc.path().join(format!("{pid}/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("comm"), format!("{comm}\n")).unwrap();
        }
        // Four cores with SMT siblings 0,4 1,5 2,6 3,7.
        let topology =
            pin::Topology::parse("0-7", |cpu| Ok(("0".into(), (cpu % 4).to_string()))).unwrap();
        let plan = pin::check_fits(&topology, spec.cpus.online as usize).unwrap();
        let mut pinned = std::collections::BTreeMap::new();
        pin::pin_with(proc.path(), pid, &plan, |tid, cpus| {
            pinned.insert(tid, cpus.to_vec());
            Ok(())
        })
        .unwrap();
        let rest = vec![0, 3, 4, 7];
        assert_eq!(pinned.len(), 22);
        assert_eq!(pinned[&pid], rest);
        assert_eq!(pinned[&(pid + 1)], rest);
        assert_eq!(pinned[&(pid + 2)], [1]);
        assert_eq!(pinned[&(pid + 3)], [2]);
        for i in 2..spec.cpus.possible {
            assert_eq!(pinned[&(pid + 2 + i)], rest, "CPU {i}/KVM");
        }
    }
}
