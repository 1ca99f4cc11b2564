//! Pinning a KVM guest's vCPUs, each to a physical core of its own.
//!
//! Under KVM a vCPU is a host thread, and its guest's CPU time is the time
//! the host gives that thread. Two vCPUs on one core's SMT siblings share
//! its execution units and caches, and a vCPU the scheduler moves between
//! cores refills its caches each time: both show up in the measured figures
//! as noise, different from boot to boot. So, as the field's KVM
//! benchmarks do, each online vCPU runs on a core of its own (one hardware
//! thread of it; its siblings stay out of the plan), and QEMU's main loop,
//! its I/O threads and its vCPUs the guest never brings up run on the
//! cores left, at least one whole core, kept for them.
//!
//! The host's topology is read from sysfs into a [`Topology`] (parsing is
//! pure); [`check_fits`] makes the [`PinPlan`] or refuses a guest with more
//! online vCPUs than the host has cores to spare, before any build; and
//! [`pin_qemu`] applies it once QEMU runs, finding the vCPU threads by the
//! names QEMU gives them with `-name ...,debug-threads=on` (`CPU 0/KVM`,
//! `CPU 1/KVM`, ...) under an injectable `/proc`.
//!
//! patchbench's own process is not pinned: its children inherit its
//! affinity, and a hunt or a sequential campaign builds kernels between
//! boots, which must keep every core. During a sample it waits on the
//! agent's socket, so it takes little from the vCPUs' cores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The sysfs directory of the host's CPUs.
pub const SYSFS_CPU: &str = "/sys/devices/system/cpu";

/// A physical core: its package and its `core_id` within it.
type CoreKey = (u32, u32);

/// The host's online CPUs, grouped by physical core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Each physical core's online CPUs (its SMT siblings), ascending; the
    /// cores in the order of their first CPU.
    cores: Vec<Vec<usize>>,
}

/// Where each online vCPU runs, and where everything else of QEMU does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinPlan {
    /// The host CPU of online vCPU `i` (`CPU i/KVM`), each on a physical
    /// core of its own.
    pub vcpus: Vec<usize>,
    /// The host CPUs of QEMU's main loop, its I/O threads and the vCPUs
    /// the guest never brings up: every CPU of the cores no vCPU runs on.
    pub rest: Vec<usize>,
}

/// Why a guest's vCPUs cannot be pinned.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(
        "the guest has {vcpus} online vCPUs but this host has only {free} physical cores free \
         after keeping one for QEMU's main loop and patchbench\n\
         lower vm.cpus or run on a larger host"
    )]
    TooFewCores { vcpus: usize, free: usize },
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {what}", path.display())]
    Parse { path: PathBuf, what: String },
    #[error(
        "QEMU (PID {pid}) has no thread named `CPU {missing}/KVM` of the {wanted} online vCPUs; \
         its threads are: {}\nQEMU must run with `-name ...,debug-threads=on`",
        found.join(", ")
    )]
    MissingVcpu {
        pid: u32,
        missing: usize,
        wanted: usize,
        found: Vec<String>,
    },
    #[error("cannot pin thread {tid} ({comm}) to host CPUs {cpus:?}")]
    Affinity {
        tid: u32,
        comm: String,
        cpus: Vec<usize>,
        #[source]
        source: std::io::Error,
    },
}

/// A kernel CPU list such as `0-3,5` (`/sys/devices/system/cpu/online`,
/// `thread_siblings_list`), as host CPU numbers.
pub fn cpu_list(text: &str) -> Result<Vec<usize>, String> {
    Ok(patchbench_agent::sysfs::cpu_list(text)?
        .into_iter()
        .map(|c| c as usize)
        .collect())
}

impl Topology {
    /// The topology from sysfs texts: `online` is `cpu/online`'s, and
    /// `core_of(cpu)` gives that CPU's `topology/physical_package_id` and
    /// `topology/core_id` texts. An error names the file at fault.
    pub fn parse(
        online: &str,
        mut core_of: impl FnMut(usize) -> Result<(String, String), PinError>,
    ) -> Result<Topology, PinError> {
        let parse_error = |path: String, what: String| PinError::Parse {
            path: PathBuf::from(path),
            what,
        };
        let cpus =
            cpu_list(online).map_err(|what| parse_error(format!("{SYSFS_CPU}/online"), what))?;
        if cpus.is_empty() {
            return Err(parse_error(
                format!("{SYSFS_CPU}/online"),
                "no CPU is online".into(),
            ));
        }
        let mut by_core: BTreeMap<CoreKey, Vec<usize>> = BTreeMap::new();
        for cpu in cpus {
            let (package, core) = core_of(cpu)?;
            let number = |file: &str, text: &str| {
                text.trim().parse::<u32>().map_err(|_| {
                    parse_error(
                        format!("{SYSFS_CPU}/cpu{cpu}/topology/{file}"),
                        format!("not a number: {:?}", text.trim()),
                    )
                })
            };
            let key = (
                number("physical_package_id", &package)?,
                number("core_id", &core)?,
            );
            by_core.entry(key).or_default().push(cpu);
        }
        let mut cores: Vec<Vec<usize>> = by_core.into_values().collect();
        for core in &mut cores {
            core.sort_unstable();
        }
        cores.sort_unstable_by_key(|c| c[0]);
        Ok(Topology { cores })
    }

    /// The topology of the host, from the sysfs CPU directory `sysfs`
    /// ([`SYSFS_CPU`] on a real host).
    pub fn read(sysfs: &Path) -> Result<Topology, PinError> {
        let read = |path: PathBuf| {
            std::fs::read_to_string(&path).map_err(|source| PinError::Read { path, source })
        };
        let online = read(sysfs.join("online"))?;
        Topology::parse(&online, |cpu| {
            let dir = sysfs.join(format!("cpu{cpu}/topology"));
            Ok((
                read(dir.join("physical_package_id"))?,
                read(dir.join("core_id"))?,
            ))
        })
    }

    /// How many physical cores have an online CPU.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }
}

/// The plan for a guest with `online_vcpus` online vCPUs: the host's first
/// core (the one holding its lowest CPU, which most interrupts land on)
/// kept for QEMU's main loop, its I/O threads and patchbench; each vCPU on
/// the first CPU of one of the next cores; every CPU of the cores left
/// over added to the rest. Refused when the cores do not suffice.
pub fn check_fits(topology: &Topology, online_vcpus: usize) -> Result<PinPlan, PinError> {
    let free = topology.cores.len().saturating_sub(1);
    if online_vcpus > free {
        return Err(PinError::TooFewCores {
            vcpus: online_vcpus,
            free,
        });
    }
    let (vcpu_cores, rest_cores) = (
        &topology.cores[1..=online_vcpus],
        [&topology.cores[..1], &topology.cores[online_vcpus + 1..]].concat(),
    );
    let mut rest: Vec<usize> = rest_cores.into_iter().flatten().collect();
    rest.sort_unstable();
    Ok(PinPlan {
        vcpus: vcpu_cores.iter().map(|core| core[0]).collect(),
        rest,
    })
}

/// The vCPU index of a thread QEMU named `CPU <i>/KVM`.
pub fn vcpu_index(comm: &str) -> Option<usize> {
    comm.trim()
        .strip_prefix("CPU ")?
        .strip_suffix("/KVM")?
        .parse()
        .ok()
}

/// One thread of QEMU and the host CPUs it is to run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub tid: u32,
    pub comm: String,
    pub cpus: Vec<usize>,
}

/// Every thread of process `pid` under `proc_root` (`/proc` on a real
/// host) with its name, by thread ID. A thread that exits while listed is
/// left out.
pub fn threads(proc_root: &Path, pid: u32) -> Result<BTreeMap<u32, String>, PinError> {
    let dir = proc_root.join(pid.to_string()).join("task");
    let entries = std::fs::read_dir(&dir).map_err(|source| PinError::Read {
        path: dir.clone(),
        source,
    })?;
    let mut found = BTreeMap::new();
    for entry in entries {
        let entry = entry.map_err(|source| PinError::Read {
            path: dir.clone(),
            source,
        })?;
        let Some(tid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) {
            found.insert(tid, comm.trim_end().to_string());
        }
    }
    Ok(found)
}

/// Which of QEMU's `threads` runs where under `plan`: online vCPU `i` on
/// `plan.vcpus[i]`, every other thread (the main loop, which is `pid`'s own
/// task, the I/O and worker threads, the vCPUs the guest never brings up)
/// on `plan.rest`. Every online vCPU must have its thread.
pub fn assignments(
    pid: u32,
    threads: &BTreeMap<u32, String>,
    plan: &PinPlan,
) -> Result<Vec<Assignment>, PinError> {
    let mut vcpu_threads = vec![None; plan.vcpus.len()];
    let mut out = Vec::new();
    for (&tid, comm) in threads {
        let cpus = match vcpu_index(comm) {
            Some(i) if i < plan.vcpus.len() => {
                vcpu_threads[i] = Some(tid);
                vec![plan.vcpus[i]]
            }
            _ => plan.rest.clone(),
        };
        out.push(Assignment {
            tid,
            comm: comm.clone(),
            cpus,
        });
    }
    if let Some(missing) = vcpu_threads.iter().position(Option::is_none) {
        return Err(PinError::MissingVcpu {
            pid,
            missing,
            wanted: plan.vcpus.len(),
            found: threads
                .iter()
                .map(|(tid, comm)| format!("{tid} `{comm}`"))
                .collect(),
        });
    }
    Ok(out)
}

/// Where a boot's threads ran: kept in the boot's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The host CPU of each online vCPU, in vCPU order.
    pub vcpus: Vec<usize>,
    /// The host CPUs of QEMU's other threads.
    pub rest: Vec<usize>,
}

/// Pins QEMU (process `pid`, its threads read under `proc_root`) as `plan`
/// says, each thread through `set_affinity(tid, cpus)`.
pub fn pin_with(
    proc_root: &Path,
    pid: u32,
    plan: &PinPlan,
    mut set_affinity: impl FnMut(u32, &[usize]) -> std::io::Result<()>,
) -> Result<Pinned, PinError> {
    let threads = threads(proc_root, pid)?;
    for a in assignments(pid, &threads, plan)? {
        match set_affinity(a.tid, &a.cpus) {
            Ok(()) => {}
            // A worker thread that exited since it was listed.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) && vcpu_index(&a.comm).is_none() => {}
            Err(source) => {
                return Err(PinError::Affinity {
                    tid: a.tid,
                    comm: a.comm,
                    cpus: a.cpus,
                    source,
                });
            }
        }
    }
    Ok(Pinned {
        vcpus: plan.vcpus.clone(),
        rest: plan.rest.clone(),
    })
}

/// [`pin_with`] the real `sched_setaffinity(2)`.
pub fn pin_qemu(proc_root: &Path, pid: u32, plan: &PinPlan) -> Result<Pinned, PinError> {
    pin_with(proc_root, pid, plan, set_affinity)
}

/// Sets thread `tid`'s CPU affinity to `cpus`.
fn set_affinity(tid: u32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write within it
    // (CPU_SET ignores numbers past CPU_SETSIZE), and sched_setaffinity
    // reads size_of::<cpu_set_t>() bytes of it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A topology from `online` and each CPU's (package, core_id).
    fn topology(online: &str, cores: &[(u32, u32)]) -> Topology {
        Topology::parse(online, |cpu| {
            let (p, c) = cores[cpu];
            Ok((format!("{p}\n"), format!("{c}\n")))
        })
        .unwrap()
    }

    /// 4 cores with SMT: siblings 0,4 1,5 2,6 3,7, as Intel numbers them.
    fn smt4() -> Topology {
        topology(
            "0-7\n",
            &[
                (0, 0),
                (0, 1),
                (0, 2),
                (0, 3),
                (0, 0),
                (0, 1),
                (0, 2),
                (0, 3),
            ],
        )
    }

    #[test]
    fn smt_siblings_make_one_core() {
        let t = smt4();
        assert_eq!(t.cores, [vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(t.cores(), 4);
        let plain = topology("0-1\n", &[(0, 0), (0, 1)]);
        assert_eq!(plain.cores, [vec![0], vec![1]]);
        // Two packages whose core_ids repeat are four cores.
        let two = topology("0-3", &[(0, 0), (0, 1), (1, 0), (1, 1)]);
        assert_eq!(two.cores(), 4);
        // An offline CPU is not in the plan.
        let sparse = topology("0,2-3", &[(0, 0), (0, 1), (0, 2), (0, 3)]);
        assert_eq!(sparse.cores, [vec![0], vec![2], vec![3]]);
    }

    #[test]
    fn a_bad_sysfs_text_names_its_file() {
        let err = Topology::parse("0-x", |_| unreachable!()).unwrap_err();
        assert!(err.to_string().contains("cpu/online"), "{err}");
        let err = Topology::parse("\n", |_| unreachable!()).unwrap_err();
        assert!(err.to_string().contains("no CPU is online"), "{err}");
        let err = Topology::parse("0", |_| Ok(("0".into(), "zero".into()))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/sys/devices/system/cpu/cpu0/topology/core_id: not a number: \"zero\""
        );
    }

    #[test]
    fn the_topology_is_read_from_a_sysfs_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("online"), "0-3\n").unwrap();
        for (cpu, core) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
            let t = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), "0\n").unwrap();
            std::fs::write(t.join("core_id"), format!("{core}\n")).unwrap();
        }
        let t = Topology::read(dir.path()).unwrap();
        assert_eq!(t.cores, [vec![0, 2], vec![1, 3]]);
        std::fs::remove_file(dir.path().join("cpu3/topology/core_id")).unwrap();
        let err = Topology::read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("cpu3/topology/core_id"), "{err}");
    }

    #[test]
    fn each_vcpu_gets_a_core_of_its_own_and_one_core_stays_for_qemu() {
        let smt = smt4();
        let two_cores = topology("0-1", &[(0, 0), (0, 1)]);
        // (topology, online vCPUs, vCPUs' CPUs, the rest)
        let cases: &[(&Topology, usize, &[usize], &[usize])] = &[
            (&smt, 1, &[1], &[0, 2, 3, 4, 6, 7]),
            (&smt, 2, &[1, 2], &[0, 3, 4, 7]),
            // Never a vCPU on a sibling of another's core.
            (&smt, 3, &[1, 2, 3], &[0, 4]),
            (&two_cores, 1, &[1], &[0]),
            (&two_cores, 0, &[], &[0, 1]),
        ];
        for (t, n, vcpus, rest) in cases {
            let plan = check_fits(t, *n).unwrap();
            assert_eq!(plan.vcpus, *vcpus, "{n} vCPUs on {t:?}");
            assert_eq!(plan.rest, *rest, "{n} vCPUs on {t:?}");
        }
    }

    #[test]
    fn more_vcpus_than_free_cores_is_refused_with_the_numbers() {
        let two_cores = topology("0-1", &[(0, 0), (0, 1)]);
        let err = check_fits(&two_cores, 2).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the guest has 2 online vCPUs but this host has only 1 physical cores free after \
             keeping one for QEMU's main loop and patchbench\nlower vm.cpus or run on a larger host"
        );
        // SMT threads are not cores: 8 CPUs, 3 free cores.
        assert!(matches!(
            check_fits(&smt4(), 4),
            Err(PinError::TooFewCores { vcpus: 4, free: 3 })
        ));
    }

    #[test]
    fn vcpu_threads_are_known_by_their_names() {
        assert_eq!(vcpu_index("CPU 0/KVM\n"), Some(0));
        assert_eq!(vcpu_index("CPU 13/KVM"), Some(13));
        for other in [
            "qemu-system-x86",
            "worker",
            "CPU 0/TCG",
            "CPU x/KVM",
            "IO mon_iothread",
        ] {
            assert_eq!(vcpu_index(other), None, "{other}");
        }
    }

    /// A fake `/proc/<pid>/task/<tid>/comm` tree.
    fn fake_proc(pid: u32, threads: &[(u32, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (tid, comm) in threads {
            let task = dir.path().join(format!("{pid}/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("comm"), format!("{comm}\n")).unwrap();
        }
        dir
    }

    #[test]
    fn qemus_threads_are_pinned_by_name() {
        let proc = fake_proc(
            100,
            &[
                (100, "qemu-system-x86"),
                (101, "qemu-system-x86"),
                (102, "CPU 0/KVM"),
                (103, "CPU 1/KVM"),
                // A possible vCPU the guest never brings up (maxcpus=2).
                (104, "CPU 2/KVM"),
                (105, "worker"),
            ],
        );
        let plan = check_fits(&smt4(), 2).unwrap();
        let mut calls = Vec::new();
        let pinned = pin_with(proc.path(), 100, &plan, |tid, cpus| {
            calls.push((tid, cpus.to_vec()));
            Ok(())
        })
        .unwrap();
        let rest = vec![0, 3, 4, 7];
        assert_eq!(
            calls,
            [
                (100, rest.clone()),
                (101, rest.clone()),
                (102, vec![1]),
                (103, vec![2]),
                (104, rest.clone()),
                (105, rest.clone()),
            ]
        );
        assert_eq!(pinned.vcpus, [1, 2]);
        assert_eq!(pinned.rest, rest);
    }

    #[test]
    fn a_missing_vcpu_thread_names_what_was_found() {
        let proc = fake_proc(7, &[(7, "qemu-system-x86"), (8, "CPU 0/KVM")]);
        let plan = check_fits(&smt4(), 2).unwrap();
        let err = pin_with(proc.path(), 7, &plan, |_, _| Ok(())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "QEMU (PID 7) has no thread named `CPU 1/KVM` of the 2 online vCPUs; its threads \
             are: 7 `qemu-system-x86`, 8 `CPU 0/KVM`\nQEMU must run with `-name ...,debug-threads=on`"
        );
        let err = pin_with(proc.path(), 9, &plan, |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("9/task"), "{err}");
    }

    #[test]
    fn a_refused_affinity_names_the_thread_and_a_vanished_worker_is_skipped() {
        let proc = fake_proc(
            7,
            &[(7, "qemu-system-x86"), (8, "CPU 0/KVM"), (9, "worker")],
        );
        let plan = check_fits(&smt4(), 1).unwrap();
        let gone = |tid, _: &[usize]| match tid {
            9 => Err(std::io::Error::from_raw_os_error(libc::ESRCH)),
            _ => Ok(()),
        };
        assert!(pin_with(proc.path(), 7, &plan, gone).is_ok());
        let refused = |tid, _: &[usize]| match tid {
            8 => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            _ => Ok(()),
        };
        let err = pin_with(proc.path(), 7, &plan, refused).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot pin thread 8 (CPU 0/KVM) to host CPUs [1]"
        );
    }

    /// The real syscall, on this test's own thread, to every CPU (the
    /// kernel keeps those this thread may use): proves the call's
    /// encoding, changes nothing.
    #[test]
    fn the_real_affinity_call_accepts_every_cpu() {
        let all: Vec<usize> = (0..libc::CPU_SETSIZE as usize).collect();
        // SAFETY: gettid(2) takes no arguments and touches no memory.
        let tid = unsafe { libc::gettid() } as u32;
        set_affinity(tid, &all).unwrap();
    }
}
