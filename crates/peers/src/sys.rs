//! The operating-system side of a fair comparison: CPU and read counters of peer
//! processes (`/proc`), dropping files from the page cache (`posix_fadvise`), and the
//! cgroup-v1 "device" every peer's reads go through in the I/O-bound regime (a `blkio`
//! read throttle on the disk and a `memory` limit that also charges the page cache).

use crate::error::PeerError;
use crate::leftovers::{self, Change, Record};
use crate::proc_stat;
use std::collections::BTreeSet;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// CPU time and read-syscall counters of a set of processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcStats {
    /// User + system time of the processes (their live threads and reaped children).
    pub cpu: Duration,
    /// Bytes returned by read syscalls (`rchar`): what came from below the engine's
    /// own buffer (the page cache or the disk).
    pub read_bytes: u64,
    /// Read syscalls (`syscr`).
    pub read_calls: u64,
}

impl ProcStats {
    fn add(&mut self, other: ProcStats) {
        self.cpu += other.cpu;
        self.read_bytes = self.read_bytes.saturating_add(other.read_bytes);
        self.read_calls = self.read_calls.saturating_add(other.read_calls);
    }
}

/// Clock ticks per second of `/proc/PID/stat`'s times (100 on every Linux we run on;
/// `getconf CLK_TCK`).
const CLOCK_TICKS_PER_S: u64 = 100;

/// `pid` and every process below it: their summed counters. Processes that vanish
/// while being read are skipped.
pub fn tree_stats(root: u32) -> ProcStats {
    let mut total = ProcStats::default();
    for pid in process_tree(root) {
        if let Some(s) = process_stats(pid) {
            total.add(s);
        }
    }
    total
}

/// The resident set of `pid` (`VmRSS` of `/proc/PID/status`), in bytes.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    coopscan_bench::memory::status_bytes(&status, "VmRSS:")
}

/// `root` and its descendants (by parent pid), from `/proc`.
pub fn process_tree(root: u32) -> BTreeSet<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|pid| Some((pid, proc_stat::stat(pid)?.ppid)))
                .collect()
        })
        .unwrap_or_default();
    let mut tree = BTreeSet::from([root]);
    loop {
        let before = tree.len();
        for (pid, ppid) in &parents {
            if tree.contains(ppid) {
                tree.insert(*pid);
            }
        }
        if tree.len() == before {
            return tree;
        }
    }
}

/// The parent of process `pid`, if it exists.
pub fn parent_pid(pid: u32) -> Option<u32> {
    proc_stat::stat(pid).map(|s| s.ppid)
}

fn process_stats(pid: u32) -> Option<ProcStats> {
    let stat = proc_stat::stat(pid)?;
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    let field = |name: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(ProcStats {
        cpu: Duration::from_millis(stat.cpu_ticks * 1000 / CLOCK_TICKS_PER_S),
        read_bytes: field("rchar:"),
        read_calls: field("syscr:"),
    })
}

/// Drops every file under `path` (a file or a directory tree) from the page cache, so
/// the next run reads it from the disk (`/proc/sys/vm/drop_caches` is not writable in
/// containers; `POSIX_FADV_DONTNEED` per file is).
pub fn drop_from_page_cache(path: &Path) -> Result<(), PeerError> {
    for file in files_under(path)? {
        let f = std::fs::File::open(&file).map_err(|e| PeerError::io(&file, e))?;
        // DONTNEED skips dirty pages: write them back first (a server loaded with
        // fsync=off leaves its files dirty for a while).
        f.sync_all().map_err(|e| PeerError::io(&file, e))?;
        rustix::fs::fadvise(&f, 0, None::<NonZeroU64>, rustix::fs::Advice::DontNeed)
            .map_err(|e| PeerError::io(&file, e.into()))?;
    }
    Ok(())
}

/// Reads every file under `path` once, so it is in the page cache (the all-cached
/// regime starts warm).
pub fn warm_page_cache(path: &Path) -> Result<u64, PeerError> {
    let mut total = 0u64;
    for file in files_under(path)? {
        let mut f = std::fs::File::open(&file).map_err(|e| PeerError::io(&file, e))?;
        total +=
            std::io::copy(&mut f, &mut std::io::sink()).map_err(|e| PeerError::io(&file, e))?;
    }
    Ok(total)
}

/// Total size of the regular files under `path`.
pub fn bytes_under(path: &Path) -> Result<u64, PeerError> {
    files_under(path)?.iter().try_fold(0u64, |sum, f| {
        let len = std::fs::metadata(f).map_err(|e| PeerError::io(f, e))?.len();
        Ok(sum + len)
    })
}

pub(crate) fn files_under(path: &Path) -> Result<Vec<PathBuf>, PeerError> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| PeerError::io(path, e))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !meta.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| PeerError::io(path, e))? {
        let entry = entry.map_err(|e| PeerError::io(path, e))?;
        out.extend(files_under(&entry.path())?);
    }
    Ok(out)
}

/// `major:minor` of the whole disk holding `path` (a partition's parent disk), as
/// `blkio.throttle.*_device` wants it.
pub fn disk_of(path: &Path) -> Result<String, PeerError> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path)
        .map_err(|e| PeerError::io(path, e))?
        .dev();
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    // /sys/dev/block/M:m/partition exists for partitions; the parent directory is the disk.
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if sys.join("partition").exists() {
        let disk = std::fs::read_to_string(sys.join("../dev"))
            .map_err(|e| PeerError::io(&sys.join("../dev"), e))?;
        return Ok(disk.trim().to_string());
    }
    if !sys.exists() {
        return Err(PeerError::Cgroup(format!(
            "{} is on device {major}:{minor}, which is not a block device (overlay or tmpfs?): \
             a blkio throttle cannot apply",
            path.display()
        )));
    }
    Ok(format!("{major}:{minor}"))
}

/// The effective user is root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The search path when `PATH` is unset: glibc's `execvp` default, which is what a
/// `Command` then finds programs on.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Where `program` is found on `PATH` as `Command::new(program)` would find it: the
/// first executable regular file of that name in a `PATH` directory (an empty entry
/// is the current directory, as for `execvp`).
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Fails naming `program` (and the `PATH` searched) unless [`find_program`] finds it:
/// what `peer` runs, checked before anything is set up.
pub fn require_program(peer: &'static str, program: &'static str) -> Result<PathBuf, PeerError> {
    find_program(program).ok_or_else(|| PeerError::ProgramMissing {
        peer,
        program,
        path: match std::env::var_os("PATH") {
            None => format!("PATH is unset, so {DEFAULT_PATH}"),
            Some(p) if p.is_empty() => "PATH is empty".to_string(),
            Some(p) => format!("PATH={}", p.to_string_lossy()),
        },
    })
}

/// What an I/O-bound peer is confined to.
#[derive(Clone, Debug)]
pub struct DeviceLimits {
    /// Read bandwidth of the emulated device, bytes per second.
    pub read_bps: u64,
    /// Memory of the whole process tree, page cache included.
    pub memory_bytes: u64,
    /// `major:minor` of the disk the peer's files are on.
    pub disk: String,
}

/// A pair of cgroup-v1 groups (`blkio`, `memory`) created below this process's own
/// groups; removed on drop (after its processes are gone). Processes join through
/// [`Cgroup::join_command`].
pub struct Cgroup {
    /// Each directory with its record (`leftovers`), removed with it.
    dirs: Vec<(PathBuf, Record)>,
    blkio: PathBuf,
    memory: PathBuf,
    disk: String,
}

const V1_ROOT: &str = "/sys/fs/cgroup";

impl Cgroup {
    /// Creates the groups `name` with `limits`, or says why it cannot.
    pub fn create(name: &str, limits: &DeviceLimits) -> Result<Cgroup, PeerError> {
        let blkio = own_group("blkio")?.join(name);
        let memory = own_group("memory")?.join(name);
        let mut group = Cgroup {
            dirs: Vec::new(),
            blkio: blkio.clone(),
            memory: memory.clone(),
            disk: limits.disk.clone(),
        };
        for dir in [&blkio, &memory] {
            let recording = leftovers::begin()?;
            let record = recording.record(&Change::Cgroup { dir: dir.clone() })?;
            if !dir.exists() {
                std::fs::create_dir(dir).map_err(|e| {
                    PeerError::Cgroup(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
            group.dirs.push((dir.clone(), record));
        }
        write_control(
            &blkio.join("blkio.throttle.read_bps_device"),
            &format!("{} {}", limits.disk, limits.read_bps),
        )?;
        write_control(
            &memory.join("memory.limit_in_bytes"),
            &limits.memory_bytes.to_string(),
        )?;
        Ok(group)
    }

    /// A shell prefix that moves the shell into these groups before it `exec`s the
    /// peer, so every process the peer forks is inside from its first instruction.
    pub fn join_command(&self) -> String {
        self.dirs
            .iter()
            .map(|(d, _)| format!("echo $$ > '{}/cgroup.procs'; ", d.display()))
            .collect()
    }

    /// `major:minor` of the disk the group's reads are throttled on.
    pub fn disk(&self) -> &str {
        &self.disk
    }

    /// Bytes the group's processes read from the disk (`blkio.throttle.io_service_bytes`).
    pub fn disk_read_bytes(&self) -> u64 {
        let path = self.blkio.join("blkio.throttle.io_service_bytes");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (dev, op, n) = (f.next()?, f.next()?, f.next()?);
                (dev == self.disk && op == "Read").then(|| n.parse::<u64>().ok())?
            })
            .sum()
    }
}

impl Cgroup {
    /// How many of the group's processes its memory cap has killed
    /// (`memory.oom_control`'s `oom_kill`).
    pub fn oom_kills(&self) -> u64 {
        let text = std::fs::read_to_string(self.memory.join("memory.oom_control"));
        text.unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The most memory the group's processes held at once, page cache included
    /// (`memory.max_usage_in_bytes`); `None` when it cannot be read.
    pub fn memory_peak_bytes(&self) -> Option<u64> {
        std::fs::read_to_string(self.memory.join("memory.max_usage_in_bytes"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for (dir, record) in self.dirs.drain(..) {
            // Fails while a process is still inside (a server being torn down) past
            // the retries; then it is left to the next run (its record stays).
            if leftovers::remove_cgroup(&dir).is_err() {
                record.keep();
            }
        }
    }
}

/// This process's group directory of a v1 controller.
fn own_group(controller: &str) -> Result<PathBuf, PeerError> {
    let mount = Path::new(V1_ROOT).join(controller);
    if !mount.join("cgroup.procs").exists() {
        return Err(PeerError::Cgroup(format!(
            "no cgroup v1 {controller} controller at {} (cgroup v2 only, or not mounted)",
            mount.display()
        )));
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let rel = own
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            controllers
                .split(',')
                .any(|c| c == controller)
                .then(|| path.trim_start_matches('/').to_string())
        })
        .unwrap_or_default();
    Ok(mount.join(rel))
}

fn write_control(path: &Path, value: &str) -> Result<(), PeerError> {
    std::fs::write(path, value).map_err(|e| {
        PeerError::Cgroup(format!("cannot write {value:?} to {}: {e}", path.display()))
    })
}

/// Whether peers can be confined here: cgroup v1 `blkio` and `memory` below this
/// process's groups accept a new group (created and removed again).
pub fn check_cgroups() -> Result<(), PeerError> {
    for controller in ["blkio", "memory"] {
        let probe = own_group(controller)?.join(format!("coopscan-probe-{}", std::process::id()));
        std::fs::create_dir(&probe).map_err(|e| {
            PeerError::Cgroup(format!(
                "cannot create {} ({e}); run as root",
                probe.display()
            ))
        })?;
        let _ = std::fs::remove_dir(&probe);
    }
    Ok(())
}

/// How often `reap` looks whether a child has exited.
const REAP_POLL: Duration = Duration::from_millis(20);

/// Gives a child that was told to stop `grace` to exit on its own, then kills it; never
/// leaves a zombie. Both peers' drops end this way.
pub fn reap(child: &mut Child, grace: Duration) {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(REAP_POLL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_the_search_path_or_named_when_not() {
        let sh = find_program("sh").expect("every test machine has sh");
        assert!(sh.ends_with("sh") && sh.is_file(), "{}", sh.display());
        assert_eq!(find_program("coopscan-no-such-program"), None);
        let e = require_program("Peer", "coopscan-no-such-program")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Peer needs the program `coopscan-no-such-program`"),
            "{e}"
        );
    }
}
