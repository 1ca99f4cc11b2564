//! The mm benchmark library's shared shape: a fixed amount of work, `ops`
//! operations in each of `tasks` processes, all timed in one window (the
//! `ops` phase), as will-it-scale's testcases and vm-scalability's cases
//! run theirs. A benchmark is one module under `kinds`: its
//! parameters (flattening [`Load`]), its [`Kind`] answers and its
//! [`Bench`] answers: what to set up once per boot, what each task sets
//! up untimed, and one operation. The agent binary's harness forks the
//! tasks, opens the window when all are ready, and reports the metrics
//! every benchmark shares (`workloads/common/ops-metrics.yaml`); the host
//! reads its campaign section straight into the same parameters.
//!
//! The code here runs in the guest only (it is in this crate so that a
//! benchmark is one file); it needs nothing but libc.

use std::fmt;
use std::io;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::kind::Kind;

/// The work every benchmark does: `ops` operations in each of `tasks`
/// processes, at once, in one timed window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// Processes running the operation at once (will-it-scale's tasks).
    pub tasks: u32,
    /// Operations each task does in a sample: the fixed amount of work.
    pub ops: u32,
}

impl Load {
    /// Every task's operations together.
    pub fn total_ops(self) -> u64 {
        u64::from(self.tasks) * u64::from(self.ops)
    }
}

/// The most tasks a benchmark runs: one fork each, inside one guest.
pub const MAX_TASKS: u32 = 64;
/// The most operations a task does in a sample.
pub const MAX_OPS: u32 = 1_000_000;

/// What a benchmark's parameters are checked against on the host, before
/// any kernel is built: the guest's online CPUs and memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestSize {
    pub online_cpus: u32,
    pub memory: u64,
}

/// A parameter out of range: its name, its value, and what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    pub param: &'static str,
    pub value: String,
    pub problem: String,
}

impl ParamError {
    pub fn new(param: &'static str, value: impl fmt::Display, problem: impl Into<String>) -> Self {
        ParamError {
            param,
            value: value.to_string(),
            problem: problem.into(),
        }
    }
}

/// A memory cgroup per task: `/sys/fs/cgroup/patchbench-bench/cg<i>`,
/// with this `memory.max`, which the harness creates before the first
/// sample and task `i` joins before it is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskCgroups {
    /// `memory.max` of each; `None`: no limit.
    pub memory_max: Option<u64>,
}

/// One benchmark of the library. [`Kind::describe`] says its own
/// parameters; the harness adds the load.
pub trait Bench: Kind {
    /// Its tasks and operations.
    fn load(&self) -> Load;

    /// Checks its own parameters (the load is checked by the host against
    /// [`MAX_TASKS`] and [`MAX_OPS`]): the host calls it when it plans a
    /// campaign, and the agent before the first sample.
    fn check(&self, guest: GuestSize) -> Result<(), ParamError>;

    /// Once per boot, in the agent, before the first sample and untimed:
    /// mounting a file system, enabling KSM, reserving huge pages.
    fn prepare(&self) -> io::Result<()> {
        Ok(())
    }

    /// Each task in its own memory cgroup; `None`: the tasks stay in the
    /// agent's.
    fn task_cgroups(&self) -> Option<TaskCgroups> {
        None
    }

    /// In task `index`'s own process, before the window and untimed: the
    /// state its operations work on.
    fn task(&self, index: usize) -> io::Result<Box<dyn Task>>;
}

/// One task's state: [`Task::op`] runs `ops` times inside the window;
/// dropping it (after the window) tears down what it holds.
pub trait Task {
    fn op(&mut self) -> io::Result<()>;
}

/// A byte count a campaign writes as `64 MiB` (or `4096`, `2 GiB`, `512
/// KiB`), the wire carries in the same words, and the results document
/// records as people write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const fn kib(n: u64) -> Bytes {
        Bytes(n << 10)
    }

    pub const fn mib(n: u64) -> Bytes {
        Bytes(n << 20)
    }

    pub fn get(self) -> u64 {
        self.0
    }

    /// As a length in memory.
    pub fn bytes(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }

    /// Whole pages of `page` bytes in it.
    pub fn pages(self, page: usize) -> usize {
        self.bytes() / page.max(1)
    }

    pub fn parse(text: &str) -> Result<Bytes, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (digits, unit) = text.split_at(split);
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("`{text}` is not a size such as `64 MiB`"))?;
        let shift = match unit.trim() {
            "" | "B" => 0,
            "KiB" => 10,
            "MiB" => 20,
            "GiB" => 30,
            other => {
                return Err(format!(
                    "`{text}`: unknown unit `{other}` (B, KiB, MiB or GiB)"
                ));
            }
        };
        n.checked_mul(1 << shift)
            .map(Bytes)
            .ok_or_else(|| format!("`{text}` is too large"))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n != 0 && n.trailing_zeros() >= shift {
                return write!(f, "{} {unit}", n >> shift);
            }
        }
        write!(f, "{n} B")
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(u64),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Number(n) => Ok(Bytes(n)),
            Either::Text(t) => Bytes::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// Checks a size parameter: at least `min`, at most `max`.
pub fn check_size(
    param: &'static str,
    size: Bytes,
    min: Bytes,
    max: Bytes,
) -> Result<(), ParamError> {
    if size < min || size > max {
        return Err(ParamError::new(
            param,
            size,
            format!("must be between {min} and {max}"),
        ));
    }
    Ok(())
}

/// Half the guest's memory: what a benchmark's tasks may hold at once.
pub fn half_memory(guest: GuestSize) -> Bytes {
    Bytes(guest.memory / 2)
}

/// Checks that a benchmark whose state is the kernel's (one sysfs tree,
/// one pool, one device) runs one task; `why` says what two would share.
pub fn check_one_task(tasks: u32, why: &str) -> Result<(), ParamError> {
    if tasks == 1 {
        Ok(())
    } else {
        Err(ParamError::new("tasks", tasks, format!("must be 1: {why}")))
    }
}

/// Checks that every task holding `each` fits in half the guest's memory.
pub fn check_held(
    param: &'static str,
    each: Bytes,
    tasks: u32,
    guest: GuestSize,
) -> Result<(), ParamError> {
    let held = each.get().saturating_mul(u64::from(tasks));
    let half = half_memory(guest);
    if each.get() < 4096 || held > half.get() {
        return Err(ParamError::new(
            param,
            each,
            format!(
                "must be at least 4 KiB, and with {tasks} tasks hold at most half the guest's memory ({half})"
            ),
        ));
    }
    Ok(())
}

/// Checks [`check_held`] for `each`, and that every task holding twice
/// `each` (`twice`: what the second copy is) fits in half the guest's
/// memory.
pub fn check_held_twice(
    param: &'static str,
    each: Bytes,
    tasks: u32,
    guest: GuestSize,
    twice: &str,
) -> Result<(), ParamError> {
    check_held(param, each, tasks, guest)?;
    let held = each
        .get()
        .saturating_mul(2)
        .saturating_mul(u64::from(tasks));
    let half = half_memory(guest);
    if held > half.get() {
        return Err(ParamError::new(
            param,
            each,
            format!(
                "with {tasks} tasks, twice it ({twice}) must fit in half the guest's memory ({half})"
            ),
        ));
    }
    Ok(())
}

pub mod sys;

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel file the kernel lacks is named as missing, and nothing is
    /// created in its place; an existing file is written.
    #[test]
    fn write_file_creates_nothing_and_names_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("apply_interval_us");
        let err = sys::write_file(&missing, "0").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        assert!(
            err.to_string().contains("which this kernel does not have"),
            "{err}"
        );
        assert!(!missing.exists());
        std::fs::write(&missing, "").unwrap();
        sys::write_file(&missing, "7").unwrap();
        assert_eq!(std::fs::read_to_string(&missing).unwrap(), "7");
    }

    #[test]
    fn sizes_read_and_write_as_people_write_them() {
        assert_eq!(Bytes::parse("64 MiB"), Ok(Bytes::mib(64)));
        assert_eq!(Bytes::parse("4096"), Ok(Bytes(4096)));
        assert_eq!(Bytes::parse("2GiB"), Ok(Bytes(2 << 30)));
        assert!(Bytes::parse("64 MB").unwrap_err().contains("unknown unit"));
        assert!(Bytes::parse("lots").is_err());
        assert_eq!(Bytes::mib(64).to_string(), "64 MiB");
        assert_eq!(Bytes(1536).to_string(), "1536 B");
        assert_eq!(Bytes::kib(1536).to_string(), "1536 KiB");
        let json = serde_json::to_string(&Bytes::mib(2)).unwrap();
        assert_eq!(json, "\"2 MiB\"");
        assert_eq!(serde_json::from_str::<Bytes>(&json).unwrap(), Bytes::mib(2));
        assert_eq!(serde_json::from_str::<Bytes>("8192").unwrap(), Bytes(8192));
    }

    #[test]
    fn held_memory_is_checked_against_half_the_guest() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(check_held("size", Bytes::mib(64), 2, guest).is_ok());
        let e = check_held("size", Bytes::mib(300), 2, guest).unwrap_err();
        assert_eq!(e.param, "size");
        assert!(e.problem.contains("512 MiB"), "{e:?}");
    }

    #[test]
    fn an_aligned_mapping_starts_on_its_alignment() {
        let mut map = sys::Map::anon_aligned(4 << 20, 2 << 20).unwrap();
        assert_eq!(map.ptr as usize % (2 << 20), 0);
        map.touch(4096);
        assert_eq!(map.read(4096), (4 << 20) / 4096);
        map.unmap().unwrap();
    }

    #[test]
    fn freeing_alternate_pages_leaves_every_even_page_resident() {
        let page = sys::page_size();
        let mut map = sys::Map::anon(64 * page).unwrap();
        map.advise(libc::MADV_NOHUGEPAGE).unwrap();
        map.touch(page);
        map.free_alternate_pages(page).unwrap();
        let mut vec = vec![0u8; 64];
        // SAFETY: the mapping's range, and a vector of one byte a page.
        let ret = unsafe { libc::mincore(map.ptr.cast(), map.len, vec.as_mut_ptr()) };
        assert_eq!(ret, 0);
        let resident: Vec<bool> = vec.iter().map(|v| v & 1 == 1).collect();
        let expected: Vec<bool> = (0..64).map(|i| i % 2 == 0).collect();
        assert_eq!(resident, expected);
        assert!(sys::read_u64("/proc/sys/vm/overcommit_memory").unwrap() <= 2);
    }
}
