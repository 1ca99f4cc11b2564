//! The fake `qemu-system-x86_64`: the arguments patchbench builds
//! (src/vm/args.rs) checked, the job read from the initramfs, and the
//! guest agent's side of the protocol spoken on the virtio-serial socket.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use patchbench_agent::{GuestFacts, Job, Message, PORT_NAME, PROTOCOL_VERSION, Sample, Workload};

use crate::{FakeKernel, Refused, refuse};

/// What a boot's command line says, once checked.
#[derive(Debug, Default)]
pub struct Boot {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub append: Vec<String>,
    pub console: PathBuf,
    pub agent: PathBuf,
    pub memory_mib: u64,
    pub cpus: u32,
    /// `-accel kvm`: the boot runs in real time, with a boot-to-boot
    /// effect of up to [`crate::ENV_BOOT_NOISE`] percent.
    pub kvm: bool,
}

/// A QEMU option value's comma-separated parts (`,,` is a literal comma).
fn parts(value: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' {
            if chars.peek() == Some(&',') {
                chars.next();
                out.last_mut().expect("never empty").push(',');
            } else {
                out.push(String::new());
            }
        } else {
            out.last_mut().expect("never empty").push(c);
        }
    }
    out
}

/// Check every argument and gather what the boot needs.
pub fn parse(args: &[String]) -> Result<Boot, Refused> {
    let mut boot = Boot::default();
    let mut port = None;
    let mut serial = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Refused(format!("{flag} without its value")))
        };
        match flag.as_str() {
            "-nodefaults" | "-no-user-config" | "-no-reboot" | "-mem-prealloc" => {}
            "-name" => {
                let v = value()?;
                if v != "patchbench,debug-threads=on" {
                    refuse!("-name {v} is not faked");
                }
            }
            "-display" | "-nic" => {
                let v = value()?;
                if v != "none" {
                    refuse!("{flag} {v}: only `none` is faked");
                }
            }
            "-accel" => {
                let v = value()?;
                if !["kvm", "tcg,thread=single", "tcg,thread=multi"].contains(&v.as_str()) {
                    refuse!("-accel {v} is not faked");
                }
                boot.kvm = v == "kvm";
            }
            "-cpu" => {
                let v = value()?;
                if v != "max" && v != "host" {
                    refuse!("-cpu {v} is not faked");
                }
            }
            "-icount" => {
                let v = value()?;
                if v != "shift=0,sleep=off" {
                    refuse!("-icount {v} is not faked");
                }
            }
            "-machine" => {
                let v = value()?;
                if v != "q35" && v != "mem-merge=off" {
                    refuse!("-machine {v} is not faked");
                }
            }
            "-m" => {
                let v = value()?;
                boot.memory_mib = v
                    .strip_suffix('M')
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| Refused(format!("-m {v}: MiB expected")))?;
            }
            "-smp" => {
                let v = value()?;
                boot.cpus = v
                    .parse()
                    .map_err(|_| Refused(format!("-smp {v}: a count expected")))?;
            }
            "-kernel" => boot.kernel = value()?.into(),
            "-initrd" => boot.initrd = value()?.into(),
            "-append" => boot.append = value()?.split_whitespace().map(String::from).collect(),
            "-serial" => {
                let v = value()?;
                if v != "chardev:console" {
                    refuse!("-serial {v}: the console chardev expected");
                }
                serial = true;
            }
            "-chardev" => {
                let v = parts(&value()?);
                let field = |name: &str| {
                    v.iter()
                        .find_map(|p| p.strip_prefix(&format!("{name}=")))
                        .map(String::from)
                };
                match (v[0].as_str(), field("id").as_deref(), field("path")) {
                    ("file", Some("console"), Some(path)) => boot.console = path.into(),
                    ("socket", Some("agent"), Some(path)) => boot.agent = path.into(),
                    _ => refuse!("-chardev {}: not a chardev patchbench makes", v.join(",")),
                }
            }
            "-device" => {
                let v = parts(&value()?);
                let known = ["virtio-serial-pci", "virtio-blk-pci", "virtio-9p-pci"];
                match v[0].as_str() {
                    "virtserialport" => {
                        for p in &v[1..] {
                            match p.split_once('=') {
                                Some(("name", name)) => port = Some(name.to_string()),
                                Some(("bus", "vser0.0") | ("chardev", "agent")) => {}
                                _ => refuse!("virtserialport option {p} is not faked"),
                            }
                        }
                    }
                    d if known.contains(&d) => {}
                    d => refuse!("-device {d} is not faked"),
                }
            }
            "-blockdev" => {
                let v = value()?;
                let json: serde_json::Value = serde_json::from_str(&v)
                    .map_err(|e| Refused(format!("-blockdev {v}: not JSON ({e})")))?;
                let file = json["file"]["filename"].as_str().unwrap_or_default();
                if json["driver"] != "raw" || !Path::new(file).is_file() {
                    refuse!("-blockdev {v}: a raw swap file that exists expected");
                }
            }
            "-fsdev" => {
                value()?;
            }
            "-plugin" | "-seed" => refuse!("{flag}: the cost lane's plugin is not faked"),
            other => refuse!("does not understand the argument {other:?}"),
        }
    }
    if port.as_deref() != Some(PORT_NAME) {
        refuse!("no virtserialport named {PORT_NAME}: the agent could not talk");
    }
    if !serial || boot.console.as_os_str().is_empty() || boot.agent.as_os_str().is_empty() {
        refuse!("a boot needs the console chardev on -serial and the agent's socket");
    }
    if boot.kernel.as_os_str().is_empty() || boot.initrd.as_os_str().is_empty() {
        refuse!("a boot needs -kernel and -initrd");
    }
    for word in ["console=ttyS0", "rdinit=/init"] {
        if !boot.append.iter().any(|w| w == word) {
            refuse!(
                "the kernel command line lacks {word}: {}",
                boot.append.join(" ")
            );
        }
    }
    if boot.memory_mib == 0 || boot.cpus == 0 {
        refuse!("a boot needs -m and -smp");
    }
    Ok(boot)
}

/// The initramfs's `/init` and job, from its first newc archive.
fn read_initramfs(path: &Path) -> Result<Job, Refused> {
    let mut file = std::io::BufReader::new(
        std::fs::File::open(path)
            .map_err(|e| Refused(format!("-initrd {}: {e}", path.display())))?,
    );
    let (mut init, mut job) = (false, None);
    loop {
        let mut entry = cpio::newc::Reader::new(file)
            .map_err(|e| Refused(format!("{} is not a newc archive: {e}", path.display())))?;
        if entry.entry().is_trailer() {
            break;
        }
        let name = entry.entry().name().to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        if name == "init" {
            init = data.starts_with(b"\x7fELF");
        }
        if name == patchbench_agent::JOB_PATH.trim_start_matches('/') {
            job = Some(serde_json::from_slice::<Job>(&data).map_err(|e| {
                Refused(format!("the job in {} does not parse: {e}", path.display()))
            })?);
        }
        file = entry.finish()?;
    }
    if !init {
        refuse!(
            "{} has no executable /init: nothing would run",
            path.display()
        );
    }
    job.ok_or_else(|| {
        Refused(format!(
            "{} holds no {}",
            path.display(),
            patchbench_agent::JOB_PATH
        ))
    })
}

/// Under KVM, QEMU's vCPU threads as `-name ...,debug-threads=on` names
/// them (`CPU 0/KVM`, ...), one per `-smp` CPU, parked until the fake
/// exits; their thread IDs, in vCPU order. patchbench finds them in
/// `/proc/<pid>/task/*/comm` and pins each to a core of its own, as it
/// would a real QEMU's.
fn vcpu_threads(cpus: u32) -> Result<Vec<libc::pid_t>, Refused> {
    // Each thread names itself (PR_SET_NAME sets the caller's comm) and
    // then says it runs, with its thread ID: a real QEMU's vCPU threads
    // are named before its guest starts.
    let (started, running) = std::sync::mpsc::channel();
    for i in 0..cpus {
        let started = started.clone();
        let name = std::ffi::CString::new(format!("CPU {i}/KVM")).expect("no NUL");
        std::thread::Builder::new().spawn(move || {
            // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most
            // 16 bytes from a pointer valid for the call; gettid has no
            // preconditions.
            let named = unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) } == 0;
            let tid = unsafe { libc::gettid() };
            let _ = started.send((i, named, tid));
            loop {
                std::thread::park();
            }
        })?;
    }
    let mut tids = vec![0; cpus as usize];
    for _ in 0..cpus {
        match running.recv() {
            Ok((i, true, tid)) => tids[i as usize] = tid,
            Ok((i, false, _)) => refuse!("vCPU thread {i}: PR_SET_NAME failed"),
            Err(_) => refuse!("a vCPU thread ended before it ran"),
        }
    }
    Ok(tids)
}

/// Under KVM, after the hello: wait until patchbench has pinned each
/// online vCPU's thread to one host CPU (`vm::pin`), as it must before the
/// guest measures anything; refused after 10 s. This also keeps the fake
/// alive while patchbench reads its threads: a fake that ran its samples
/// and exited would leave a zombie with no vCPU threads to pin.
fn wait_pinned(tids: &[libc::pid_t]) -> Result<(), Refused> {
    let pinned = |tid: libc::pid_t| {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, and
        // sched_getaffinity writes at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
        ok == 0 && unsafe { libc::CPU_COUNT(&set) } == 1
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !tids.iter().all(|&t| pinned(t)) {
        if std::time::Instant::now() > deadline {
            refuse!(
                "patchbench did not pin the online vCPU threads {tids:?} within 10 s of the hello"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(())
}

pub fn main(args: &[String]) -> Result<(), Refused> {
    let boot = parse(args)?;
    let kernel_text = std::fs::read_to_string(&boot.kernel)
        .map_err(|e| Refused(format!("-kernel {}: {e}", boot.kernel.display())))?;
    let kernel = FakeKernel::parse(&kernel_text)?;
    let job = read_initramfs(&boot.initrd)?;
    if job.protocol != PROTOCOL_VERSION {
        refuse!(
            "the job speaks protocol {}, the fake agent {PROTOCOL_VERSION}",
            job.protocol
        );
    }
    crate::log(&format!(
        "qemu {} {} {}",
        job.boot_label,
        kernel.release,
        &kernel.digest[..12]
    ))?;
    let kill = kill_after(&job.boot_label)?;
    let vcpus = if boot.kvm {
        vcpu_threads(boot.cpus)?
    } else {
        Vec::new()
    };
    let mut console = std::fs::OpenOptions::new()
        .write(true)
        .open(&boot.console)
        .map_err(|e| Refused(format!("console {}: {e}", boot.console.display())))?;
    writeln!(
        console,
        "Linux version {} (patchbench fake) #1\nCommand line: {}\nRun /init as init process",
        kernel.release,
        boot.append.join(" ")
    )?;
    let stream = std::os::unix::net::UnixStream::connect(&boot.agent)
        .map_err(|e| Refused(format!("agent socket {}: {e}", boot.agent.display())))?;
    let mut port = std::io::BufWriter::new(stream);
    let send = |port: &mut std::io::BufWriter<std::os::unix::net::UnixStream>,
                message: &Message|
     -> Result<(), Refused> {
        serde_json::to_writer(&mut *port, message)?;
        port.write_all(b"\n")?;
        port.flush()?;
        Ok(())
    };
    send(
        &mut port,
        &Message::Hello {
            protocol: PROTOCOL_VERSION,
            agent_version: "fake".into(),
        },
    )?;
    writeln!(
        console,
        "job boot={} warmups={} samples={}",
        job.boot_label, job.warmups, job.samples
    )?;
    let facts = facts(&boot, &job, &kernel)?;
    if boot.kvm {
        let online = facts
            .online_cpus
            .split('-')
            .next_back()
            .and_then(|n| n.parse::<usize>().ok());
        wait_pinned(&vcpus[..online.map_or(1, |n| n + 1).min(vcpus.len())])?;
    }
    send(&mut port, &Message::Facts(Box::new(facts)))?;
    let factor = boot_factor(boot.kvm, &kernel, &job.boot_label)?;
    for (condition, workload) in job.conditions() {
        for index in 0..job.warmups + job.samples {
            let warmup = index < job.warmups;
            let metrics = metrics(workload, &kernel, &job.boot_label, condition, index, factor)?;
            send(
                &mut port,
                &Message::Sample(Sample {
                    index,
                    warmup,
                    metrics,
                    condition: condition.map(String::from),
                }),
            )?;
            let measured = index + 1 - job.warmups.min(index + 1);
            if condition.is_none() && !warmup && kill == Some(measured) {
                writeln!(
                    console,
                    "fake qemu: killing itself as {} asked",
                    crate::ENV_KILL
                )?;
                read_by_host(port.get_ref())?;
                // SAFETY: kill(2) of this very process.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
        }
    }
    writeln!(console, "done, rebooting")?;
    send(&mut port, &Message::Done)?;
    read_by_host(port.get_ref())
}

/// Wait until the host has read every byte sent on `socket`, as it always
/// has by the time a real guest has powered off (or a real QEMU died
/// mid-run): a fake that exits the moment it has written would race the
/// host's accept of its connection against its own exit.
fn read_by_host(socket: &std::os::unix::net::UnixStream) -> Result<(), Refused> {
    use std::os::fd::AsRawFd;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let mut unread: libc::c_int = 0;
        // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one int: the bytes the peer
        // has not read yet.
        if unsafe { libc::ioctl(socket.as_raw_fd(), libc::TIOCOUTQ, &mut unread) } != 0 {
            refuse!(
                "SIOCOUTQ on the agent socket: {}",
                std::io::Error::last_os_error()
            );
        }
        if unread == 0 {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            refuse!("the host left {unread} bytes unread on the agent socket for 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The measured sample after which this boot dies, if [`crate::ENV_KILL`] asks.
fn kill_after(label: &str) -> Result<Option<u32>, Refused> {
    let Ok(spec) = std::env::var(crate::ENV_KILL) else {
        return Ok(None);
    };
    let (who, n) = spec
        .rsplit_once(':')
        .ok_or_else(|| Refused(format!("{}={spec}: LABEL:N expected", crate::ENV_KILL)))?;
    let n: u32 = n
        .parse()
        .map_err(|_| Refused(format!("{}={spec}: LABEL:N expected", crate::ENV_KILL)))?;
    Ok((who == label).then_some(n))
}

/// The facts the agent reads: from the command line, the job (what the
/// agent wrote and read back) and the kernel's embedded `.config`.
fn facts(boot: &Boot, job: &Job, kernel: &FakeKernel) -> Result<GuestFacts, Refused> {
    let online: u32 = boot
        .append
        .iter()
        .find_map(|w| w.strip_prefix("maxcpus="))
        .map_or(Ok(boot.cpus), |n| n.parse())
        .map_err(|_| Refused("maxcpus= is not a number".into()))?;
    let range = |n: u32| {
        if n == 1 {
            "0".to_string()
        } else {
            format!("0-{}", n - 1)
        }
    };
    let z = &job.zswap;
    let zswap = BTreeMap::from([
        (
            "enabled".to_string(),
            if z.enabled { "Y" } else { "N" }.to_string(),
        ),
        ("compressor".to_string(), z.compressor.clone()),
        ("zpool".to_string(), z.zpool.clone()),
        (
            "max_pool_percent".to_string(),
            z.max_pool_percent.to_string(),
        ),
    ]);
    let thp = ["always", "madvise", "never"]
        .map(|m| {
            if m == job.thp.sysfs_word() {
                format!("[{m}]")
            } else {
                m.to_string()
            }
        })
        .join(" ");
    Ok(GuestFacts {
        kernel_release: kernel.release.clone(),
        kernel_version: "#1 SMP PREEMPT_DYNAMIC (patchbench fake)".into(),
        possible_cpus: range(boot.cpus),
        online_cpus: range(online.min(boot.cpus)),
        mem_total_kib: boot.memory_mib * 1024 - 40_000,
        zswap,
        thp,
        swaps: vec![format!("{} partition {} 0 -2", job.swap.device, 512 * 1024)],
        profiled_symbol: job
            .workload
            .profile_candidates()
            .first()
            .map(|s| s.to_string()),
        settings: job
            .settings
            .iter()
            .map(|s| (s.path.clone(), s.value.clone()))
            .collect(),
        cputime: Some(patchbench_agent::cputime::from_kconfig(&kernel.config)),
        clocksource: Some("tsc".into()),
        // A feature reads back where the fake kernel's configuration
        // builds it, as a real kernel's sysfs shows it.
        features: patchbench_agent::feature::Feature::ALL
            .into_iter()
            .filter(|f| {
                kernel
                    .config
                    .lines()
                    .any(|l| l.trim() == format!("{}=y", f.config()))
            })
            .collect(),
        // rcutree.do_rcu_barrier came after 6.1, as in the real trees.
        rcu_barrier: Some(!kernel.release.starts_with("6.1.")),
    })
}

/// splitmix64: the noise's source, a pure function of its seed.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn seed(words: &[&str]) -> u64 {
    words.iter().fold(0x7061_7463_6862_656e, |h, w| {
        w.bytes().fold(mix(h), |h, b| mix(h ^ u64::from(b)))
    })
}

/// How the fake makes one metric's base figure, from the workload's size
/// in pages (`pages`: its data set, [`Workload::zram_bytes`] in 4 KiB
/// pages).
#[derive(Debug, Clone, Copy)]
enum Figure {
    /// A time that grows with the work: ns per page, noisy.
    PerPage(f64),
    /// A count of pages: one per page, no noise.
    Pages,
    /// A figure that does not grow with the work, and carries no noise.
    Fixed(f64),
    /// One per page, made only when the workload profiles (its
    /// [`Workload::profile_candidates`] is not empty): zswap-pageout's
    /// flushes without `count_flushes` are not counted.
    Profiled,
}

/// The figures the fake makes by name: zswap-pageout's (the hermetic
/// tests hold its numbers) and the whole guest's, which every kind
/// reports. A metric not named here takes [`default_figure`], by its
/// spec's unit. Names, not kinds: a new kind's metrics need no line here.
const FIGURES: &[(&str, Figure)] = &[
    ("pageout_cpu_ns", Figure::PerPage(22_000.0)),
    ("verify_cpu_ns", Figure::PerPage(18_000.0)),
    ("total_cpu_ns", Figure::PerPage(57_000.0)),
    ("elapsed_ns", Figure::PerPage(57_500.0)),
    ("zswpout_pages", Figure::Pages),
    ("zswpin_pages", Figure::Pages),
    ("pageout_flushes", Figure::Profiled),
    ("user_ns", Figure::PerPage(13_000.0)),
    ("sys_ns", Figure::PerPage(44_000.0)),
    ("guest_user_ns", Figure::PerPage(13_100.0)),
    ("guest_sys_ns", Figure::PerPage(44_500.0)),
    ("guest_irq_ns", Figure::Fixed(3_000_000.0)),
    ("guest_softirq_ns", Figure::Fixed(1_000_000.0)),
    // No host steals from the fake's guest.
    ("guest_steal_ns", Figure::Fixed(0.0)),
    ("kswapd_ns", Figure::Fixed(0.0)),
    ("kcompactd_ns", Figure::Fixed(0.0)),
    ("kworker_ns", Figure::Fixed(200_000.0)),
];

/// A metric's figure by its spec's unit (`ns`, `pages`, `count`,
/// `bytes`, `per-second`) and negligible level: a figure the spec calls
/// negligible stays a tenth of the way inside its level.
fn default_figure(unit: &str, negligible: Option<f64>) -> Figure {
    match (unit, negligible) {
        (_, Some(level)) => Figure::Fixed(level / 10.0),
        ("ns", None) => Figure::PerPage(10_000.0),
        ("bytes", None) => Figure::PerPage(4096.0),
        ("per-second", None) => Figure::Fixed(100_000.0),
        _ => Figure::Pages,
    }
}

/// The metrics the agent makes for `kind`, from its spec
/// (`workloads/<kind>.yaml`): each metric of no `lane` (the plugin's lanes
/// make those on the host), with its unit and negligible level.
fn spec_metrics(kind: &str) -> Result<Vec<(String, String, Option<f64>)>, Refused> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workloads")
        .join(format!("{kind}.yaml"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => refuse!(
            "the fake agent runs a kind from its spec; {}: {e}",
            path.display()
        ),
    };
    let spec: yaml_serde::Value =
        yaml_serde::from_str(&text).map_err(|e| Refused(format!("{}: {e}", path.display())))?;
    let mut metrics = spec
        .get("metrics")
        .and_then(|m| m.as_sequence())
        .cloned()
        .unwrap_or_default();
    // A benchmark of the mm library: the harness's metrics follow its own.
    if spec.get("harness").and_then(|h| h.as_str()) == Some("ops") {
        let shared = path.with_file_name("common/ops-metrics.yaml");
        let text = std::fs::read_to_string(&shared)
            .map_err(|e| Refused(format!("{}: {e}", shared.display())))?;
        let shared: yaml_serde::Value = yaml_serde::from_str(&text)
            .map_err(|e| Refused(format!("{}: {e}", shared.display())))?;
        if let Some(more) = shared.get("metrics").and_then(|m| m.as_sequence()) {
            metrics.extend(more.iter().cloned());
        }
    }
    if metrics.is_empty() {
        refuse!("{}: no metrics", path.display());
    }
    let text =
        |m: &yaml_serde::Value, key: &str| m.get(key).and_then(|v| v.as_str()).map(str::to_string);
    Ok(metrics
        .iter()
        .filter(|m| m.get("lane").is_none())
        .filter_map(|m| {
            let name = text(m, "name")?;
            let unit = text(m, "unit")?;
            Some((name, unit, m.get("negligible").and_then(|v| v.as_f64())))
        })
        .collect())
}

/// Every figure of one sample of `workload`, one for each metric its spec
/// lists for the agent: a base from the workload's size ([`Figure`]),
/// times the kernel's effect, times a noise of up to [`crate::ENV_NOISE`]
/// percent drawn from the kernel, the boot's label, the condition, the
/// index and the metric, times the boot's `boot_factor` ([`boot_factor`]).
/// Counts carry no noise, and the figures a spec calls negligible stay
/// inside their level.
fn metrics(
    workload: &Workload,
    kernel: &FakeKernel,
    label: &str,
    condition: Option<&str>,
    index: u32,
    boot_factor: f64,
) -> Result<BTreeMap<String, u64>, Refused> {
    let noise_pct: f64 = match std::env::var(crate::ENV_NOISE) {
        Ok(v) => v
            .parse()
            .map_err(|_| Refused(format!("{}={v}: a percent expected", crate::ENV_NOISE)))?,
        Err(_) => 0.2,
    };
    let pages = (workload.zram_bytes() >> 12).max(1);
    let p = pages as f64;
    let profiles = !workload.profile_candidates().is_empty();
    // (metric, base, noisy)
    let mut figures: Vec<(String, f64, bool)> = Vec::new();
    for (metric, unit, negligible) in spec_metrics(workload.kind())? {
        let figure = FIGURES
            .iter()
            .find(|(name, _)| *name == metric)
            .map_or_else(|| default_figure(&unit, negligible), |(_, f)| *f);
        let (base, noisy) = match figure {
            Figure::PerPage(ns) => (p * ns, true),
            Figure::Pages => (p, false),
            Figure::Fixed(value) => (value, false),
            Figure::Profiled if profiles => (p, false),
            Figure::Profiled => continue,
        };
        figures.push((metric, base, noisy));
    }
    let condition = condition.unwrap_or("");
    let index = index.to_string();
    Ok(figures
        .into_iter()
        .map(|(metric, base, noisy)| {
            let (noise, boot) = if noisy {
                let u = mix(seed(&[&kernel.digest, label, condition, &index, &metric])) as f64
                    / u64::MAX as f64;
                ((2.0 * u - 1.0) * noise_pct / 100.0, boot_factor)
            } else {
                (0.0, 1.0)
            };
            let value = base * (1.0 + kernel.effect(&metric) / 100.0) * (1.0 + noise) * boot;
            (metric, value.max(0.0).round() as u64)
        })
        .collect())
}

/// Under KVM (`kvm`), the factor every time of a boot is moved by: one
/// offset of up to [`crate::ENV_BOOT_NOISE`] percent, drawn from the
/// kernel and the boot's label, so that the whole boot lands higher or
/// lower, as a real host's placement, memory and state move it; 1 under
/// TCG.
fn boot_factor(kvm: bool, kernel: &FakeKernel, label: &str) -> Result<f64, Refused> {
    let pct: f64 = match std::env::var(crate::ENV_BOOT_NOISE) {
        Ok(v) if kvm => v
            .parse()
            .map_err(|_| Refused(format!("{}={v}: a percent expected", crate::ENV_BOOT_NOISE)))?,
        _ => return Ok(1.0),
    };
    let u = mix(seed(&[&kernel.digest, label, "boot-effect"])) as f64 / u64::MAX as f64;
    Ok(1.0 + (2.0 * u - 1.0) * pct / 100.0)
}

/// The metrics the fake agent reports for `workload`, by name (for tests
/// that hold them to the workload's spec).
pub fn metric_names(workload: &Workload) -> Result<Vec<String>, Refused> {
    let kernel = FakeKernel {
        release: "0".into(),
        digest: "0".into(),
        effects: Vec::new(),
        config: String::new(),
    };
    Ok(metrics(workload, &kernel, "A", None, 0, 1.0)?
        .into_keys()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_commas_stay_in_their_part() {
        assert_eq!(
            parts("socket,id=agent,path=/tmp/a,,b/agent.sock"),
            ["socket", "id=agent", "path=/tmp/a,b/agent.sock"]
        );
    }

    #[test]
    fn an_unknown_argument_is_refused() {
        let err = parse(&["-vnc".to_string(), ":0".to_string()]).unwrap_err();
        assert!(err.0.contains("-vnc"), "{}", err.0);
        let err = parse(&[]).unwrap_err();
        assert!(err.0.contains(PORT_NAME), "{}", err.0);
    }
}
