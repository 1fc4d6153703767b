//! What both peers share: the regime a run is in, the device confinement of a peer's
//! processes, and the [`PolicyRun`] counters read from `/proc`.

use crate::error::PeerError;
use crate::page_cache::NoPageCache;
use crate::sys::{self, Cgroup, DeviceLimits, ProcStats};
use coopscan_bench::{IoStats, LoadRecord, PolicyRun, PolicySetup, QueryEngine, QueryInstance};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Renders the benchmark's SQL for a query (DataFusion's text, table `lineitem`,
/// row range as `_rowid` bounds); the peers rewrite it (`canonical::peer_sql`).
pub type SqlFor = Arc<dyn Fn(&QueryInstance) -> String + Send + Sync>;

/// What every peer's `prepare` needs: the table it loads (or finds cached), how to
/// write the queries, and the regime it will run in.
#[derive(Clone)]
pub struct PeerSetup<'a> {
    pub table: &'a coopscan_storage::Table,
    /// The dataset's cache directory (the peer keeps its files below it).
    pub cache: &'a std::path::Path,
    pub sql: SqlFor,
    /// Bytes a full scan of `table` reads in coopscan (sizes the peer's memory budget).
    pub table_bytes: u64,
    pub regime: Regime,
    /// Confine the peer in a blkio + memory cgroup (the I/O-bound regime).
    pub use_cgroups: bool,
}

/// The two regimes of issue 11: the paper's balance on an emulated device, and every
/// byte in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// Reads below each engine's buffer go through the same throttled device; the page
    /// cache a peer may use is capped (cgroup v1 `blkio` + `memory`), and its files are
    /// dropped from the page cache before every run.
    IoBound,
    /// No throttle, no cap, files warm in the page cache: CPU bound.
    Cached,
}

impl Regime {
    pub fn name(self) -> &'static str {
        match self {
            Regime::IoBound => "I/O bound",
            Regime::Cached => "all cached",
        }
    }
}

impl std::str::FromStr for Regime {
    type Err = String;
    fn from_str(s: &str) -> Result<Regime, String> {
        match s {
            "io" => Ok(Regime::IoBound),
            "cached" => Ok(Regime::Cached),
            other => Err(format!("unknown regime {other:?} (known: io, cached)")),
        }
    }
}

/// The buffer a run gets: `buffer_pct` of the benchmark's table (coopscan's bytes), the
/// same for every engine.
pub fn buffer_bytes(setup: &PolicySetup<'_>, table_bytes: u64) -> u64 {
    (table_bytes as f64 * setup.params.buffer_pct / 100.0).round() as u64
}

/// Prepares the page cache and, in the I/O-bound regime, the cgroup a fresh peer
/// process tree runs in: `files` dropped from the page cache (I/O bound) or read once
/// (cached); the group limits reads to `bandwidth_mb_s` (none: unthrottled, no group)
/// and memory to `memory_bytes`.
pub fn confine(
    name: &str,
    regime: Regime,
    use_cgroups: bool,
    bandwidth_mb_s: Option<f64>,
    files: &Path,
    memory_bytes: u64,
) -> Result<Option<Arc<Cgroup>>, PeerError> {
    match regime {
        Regime::Cached => {
            sys::warm_page_cache(files)?;
            Ok(None)
        }
        Regime::IoBound => {
            let Some(mb_s) = bandwidth_mb_s.filter(|_| use_cgroups) else {
                sys::drop_from_page_cache(files)?;
                return Ok(None);
            };
            let limits = DeviceLimits {
                read_bps: (mb_s * 1e6).round() as u64,
                memory_bytes,
                disk: sys::disk_of(files)?,
            };
            let group =
                Cgroup::create(&format!("coopscan-{name}-{}", std::process::id()), &limits)?;
            sys::drop_from_page_cache(files)?;
            Ok(Some(Arc::new(group)))
        }
    }
}

/// CPU and reads of a peer's process tree since its run started.
pub struct Counters {
    root: u32,
    start: ProcStats,
}

impl Counters {
    pub fn new(root: u32) -> Counters {
        Counters {
            root,
            start: sys::tree_stats(root),
        }
    }

    /// Since [`Counters::new`].
    pub fn since_start(&self) -> ProcStats {
        let now = sys::tree_stats(self.root);
        ProcStats {
            cpu: now.cpu.saturating_sub(self.start.cpu),
            read_bytes: now.read_bytes.saturating_sub(self.start.read_bytes),
            read_calls: now.read_calls.saturating_sub(self.start.read_calls),
        }
    }
}

/// One policy run of a peer: a fresh process (driver or server) behind `engine`, its
/// counters from `/proc`, the cgroup confining it (I/O-bound regime) and, for a peer
/// whose page cache is kept at zero, what keeps it there.
pub struct PeerRun<E> {
    pub engine: E,
    pub counters: Counters,
    pub cgroup: Option<Arc<Cgroup>>,
    pub no_page_cache: Option<NoPageCache>,
}

impl<E: QueryEngine> PolicyRun for PeerRun<E> {
    fn engine(&self) -> &dyn QueryEngine {
        &self.engine
    }

    /// A peer has no chunk loads to log.
    fn load_log(&self) -> Vec<LoadRecord> {
        Vec::new()
    }

    /// Read calls and bytes of the peer's processes: what came from below its buffer.
    fn io_stats(&self) -> IoStats {
        let s = self.counters.since_start();
        IoStats {
            requests: s.read_calls,
            bytes: s.read_bytes,
        }
    }

    fn external_cpu_time(&self) -> Duration {
        self.counters.since_start().cpu
    }

    /// Bytes read from the disk itself (only when confined in a cgroup).
    fn disk_read_bytes(&self) -> Option<u64> {
        self.cgroup.as_ref().map(|c| c.disk_read_bytes())
    }
}
