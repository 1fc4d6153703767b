//! The tables a session reads and how: `--db`, `--table`, `--policy`, the one buffer's
//! size, scan workers and the device; shared by `coopscan sql` and `coopscan tpch`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use coopscan_buffer::{BufferBudget, CpuShares, TableId, MAX_WORKERS};
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::{
    query_session, query_session_config, CoopTable, IndexPageCost, IndexScans, ScanMode,
    ScanWorkers, StaticSplit, PAGE_FETCH_COST_BYTES,
};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::{database_tables, DecodeBudget, Table};

use crate::device_args::DeviceArgs;

/// ABM frames (of the largest chunk of any table) when neither `--frames` nor
/// `--buffer-mb` is given: one buffer for all tables.
const DEFAULT_FRAMES: u32 = 64;
/// Largest `--buffer-mb`: 1 TiB, far above any memory this runs on, and far below a
/// byte count's overflow.
const MAX_BUFFER_MB: u64 = 1 << 20;
/// Largest `--threads`: far above the cores of any machine this runs on; DataFusion
/// plans one partition per thread, so the bound also bounds a plan's size.
const MAX_THREADS: i64 = 1024;
/// `--small-table-chunks` by default: a table of one chunk gives a CScan nothing to
/// reorder or share beyond what the pool's residency already does. Measured on the 22
/// TPC-H queries at SF1 (power run and 4 streams at 50 MB/s) with 0, 1 and 8 chunks:
/// no difference beyond the runs' noise (docs/performance.md).
const DEFAULT_SMALL_TABLE_CHUNKS: usize = 1;

/// How queries read their tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlPolicy {
    /// In-order Scan straight from storage, no buffer manager.
    Scan,
    /// CScans under this ABM policy.
    Cooperative(PolicyKind),
}

impl std::fmt::Display for SqlPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SqlPolicy::Scan => write!(f, "scan"),
            SqlPolicy::Cooperative(p) => write!(f, "{p}"),
        }
    }
}

/// `--decode-budget-mb`: 1 MiB to [`DecodeBudget::MAX_MIB`].
pub fn parse_decode_budget(s: &str) -> Result<u64, String> {
    let mib: u64 = s.trim().parse().map_err(|e| format!("{e}"))?;
    DecodeBudget::from_mib(mib).map(|_| mib)
}

pub fn parse_policy(s: &str) -> Result<SqlPolicy, String> {
    if s.trim().eq_ignore_ascii_case("scan") {
        return Ok(SqlPolicy::Scan);
    }
    s.parse::<PolicyKind>()
        .map(SqlPolicy::Cooperative)
        .map_err(|e| format!("{e}, or scan"))
}

#[derive(clap::Args, Debug, Clone)]
pub struct SessionArgs {
    /// A table to query, as NAME=DIR (repeatable).
    #[arg(
        long = "table",
        value_name = "NAME=DIR",
        required_unless_present = "db"
    )]
    pub tables: Vec<String>,
    /// A database directory (`coopscan gen --tables …` writes one): every table it
    /// lists, by its name; with `--table`, those too.
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// normal | attach | elevator | relevance | pbm | pbm-lru | mixed | pbm-throttle |
    /// pbm-opportunistic (one buffer for all tables: CScans, or in-order Scans for
    /// plans that need `_rowid` order), or scan (in-order scans straight from storage,
    /// no buffer manager).
    #[arg(long, default_value = "relevance", value_parser = parse_policy)]
    pub policy: SqlPolicy,
    /// The buffer for all tables together, in ABM frames: this many of the largest
    /// chunk of any table.
    #[arg(long, default_value_t = DEFAULT_FRAMES)]
    pub frames: u32,
    /// The buffer for all tables together, in MiB (instead of --frames).
    #[arg(long, value_name = "MB", conflicts_with = "frames", value_parser = clap::value_parser!(u64).range(1..=MAX_BUFFER_MB))]
    pub buffer_mb: Option<u64>,
    /// Cores one query may use, 1 to 1024: DataFusion plans this many partitions, and
    /// each cooperative scan has this many workers unless --scan-workers says otherwise.
    /// With 1, a query's scans take turns with its operators on one core (the 2007
    /// paper's execution model). Default: the machine's cores.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
    pub threads: Option<u16>,
    /// Workers of each cooperative scan, 1 to 64: more makes every CScan a parallel
    /// CScan of that many partitions sharing one ABM scan (2012 paper §2.2). Default:
    /// --threads (at most 64).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_WORKERS)))]
    pub scan_workers: Option<u16>,
    /// With --scan-workers: the 2012 paper's static split (each worker its own scan of
    /// a fixed run of chunks) instead of one scan whose workers take any ready chunk.
    #[arg(long)]
    pub static_split: bool,
    /// equal | short-first: how the cores are shared among scans decoding at once.
    /// short-first (the default) lowers a scan's share one nice level per doubling of
    /// the chunks it reads, so short queries are not held up behind long ones; equal is
    /// the papers' model.
    #[arg(long, default_value = "short-first")]
    pub cpu_shares: CpuShares,
    /// Tables of at most this many chunks are read by in-order Scans in the shared
    /// buffer instead of CScans (the thesis's fallback for small tables, §7.5.1);
    /// 0 reads every table by CScans.
    #[arg(long, default_value_t = DEFAULT_SMALL_TABLE_CHUNKS)]
    pub small_table_chunks: usize,
    /// The most MiB one decoded batch (a chunk's tuples of the columns a scan reads)
    /// may take; a batch that would take more is an error. Bounds the memory a
    /// damaged or hostile table can make a scan use.
    #[arg(long, value_name = "MB", default_value_t = DecodeBudget::DEFAULT_MIB, value_parser = parse_decode_budget)]
    pub decode_budget_mb: u64,
    /// auto | always | never: whether scans may read through a secondary index
    /// (`coopscan index`, `CREATE INDEX`): auto where the index estimates fewer bytes'
    /// worth of page fetches than the scan reads.
    #[arg(long, default_value = "auto")]
    pub index_scans: IndexScans,
    /// What one page fetched through an index costs beyond its bytes, in KiB a scan
    /// streams in the same time (the break-even). Default: on an emulated disk its
    /// latency × bandwidth, else 1024 (a 4 ms seek at ~250 MB/s); a few for flash.
    #[arg(long, value_name = "KB", value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub index_page_cost_kb: Option<u64>,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// The buffer in bytes, set by a caller that sizes it itself (the TPC-H throughput
    /// presets): overrides --buffer-mb and --frames.
    #[arg(skip)]
    pub buffer_bytes: Option<u64>,
}

/// A session's tables, opened: their names and the tables in the same order.
#[derive(Clone)]
pub struct OpenTables {
    pub names: Vec<String>,
    pub tables: Vec<Table>,
}

impl SessionArgs {
    /// The flags' defaults over the database `db`, with `flags` as on a command line
    /// (`["--threads", "2"]`): a session for a command that has no session flags of
    /// its own (`bench --preset tpch-…`).
    pub fn for_database(db: &Path, flags: &[String]) -> anyhow::Result<SessionArgs> {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            session: SessionArgs,
        }
        let mut argv: Vec<std::ffi::OsString> = vec!["coopscan".into(), "--db".into()];
        argv.push(db.as_os_str().to_owned());
        argv.extend(flags.iter().map(Into::into));
        Ok(<Flags as clap::Parser>::try_parse_from(argv)?.session)
    }

    /// The tables of `--db` then `--table`, each name once.
    pub fn open_tables(&self) -> anyhow::Result<OpenTables> {
        let mut names = Vec::with_capacity(self.tables.len());
        let mut tables = Vec::with_capacity(self.tables.len());
        let in_db = match &self.db {
            Some(db) => database_tables(db).with_context(|| format!("--db {}", db.display()))?,
            None => Vec::new(),
        };
        let given = self.tables.iter().map(|spec| parse_table_arg(spec));
        for named in in_db.into_iter().map(Ok).chain(given) {
            let (name, dir) = named?;
            anyhow::ensure!(!names.contains(&name), "table {name} is named twice");
            let table = Table::open(&dir).with_context(|| format!("table {name}"))?;
            tables.push(table.with_decode_budget(
                DecodeBudget::from_mib(self.decode_budget_mb).map_err(anyhow::Error::msg)?,
            ));
            names.push(name);
        }
        Ok(OpenTables { names, tables })
    }

    /// A read-only DataFusion session over tables already opened, every table
    /// registered under `policy` (all cooperative ones in one buffer), reading through
    /// `device`; with the buffer manager's runtime when the policy has one.
    pub fn open_with(
        &self,
        open: OpenTables,
        policy: SqlPolicy,
        device: Arc<Device>,
    ) -> anyhow::Result<(SessionContext, Option<Arc<Runtime>>)> {
        let OpenTables { names, tables } = open;
        let mut config = query_session_config(self.threads())
            .with_extension(Arc::new(self.index_scans))
            .with_extension(Arc::new(index_page_cost(
                self.index_page_cost_kb,
                device.config(),
            )));
        config = config.with_extension(Arc::new(self.cpu_shares));
        let workers = self.scan_workers();
        if workers > 1 {
            config = config.with_extension(Arc::new(ScanWorkers(workers)));
            if self.static_split {
                config = config.with_extension(Arc::new(StaticSplit));
            }
        }
        let ctx = query_session(config);
        let mut runtime_of_session = None;
        let providers = match policy {
            SqlPolicy::Scan => tables
                .into_iter()
                .map(|t| CoopTable::new(t, Arc::clone(&device), ScanMode::Scan))
                .collect::<Result<Vec<_>, _>>()?,
            SqlPolicy::Cooperative(policy) => {
                let runtime =
                    Runtime::with_tables(tables, Arc::clone(&device), self.runtime(policy))
                        .context("starting the buffer manager")?;
                let runtime = Arc::new(runtime);
                runtime_of_session = Some(Arc::clone(&runtime));
                let small = |p: &CoopTable| p.table().chunk_count() <= self.small_table_chunks;
                (0..names.len() as u32)
                    .map(|i| {
                        let p = CoopTable::cooperative_of(Arc::clone(&runtime), TableId(i))?;
                        Ok::<_, coopscan_exec::ExecError>(if small(&p) { p.in_order() } else { p })
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
        };
        for (name, provider) in names.iter().zip(providers) {
            ctx.register_table(name.as_str(), Arc::new(provider))?;
        }
        Ok((ctx, runtime_of_session))
    }

    /// The runtime's configuration: one buffer of `--buffer-mb` or `--frames`.
    /// `--threads`, or the machine's cores.
    pub fn threads(&self) -> usize {
        self.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, usize::from),
            usize::from,
        )
    }

    /// `--scan-workers`, or `--threads` up to the most workers one scan may have.
    pub fn scan_workers(&self) -> usize {
        self.scan_workers
            .map_or_else(|| self.threads().min(usize::from(MAX_WORKERS)), usize::from)
    }

    fn runtime(&self, policy: PolicyKind) -> RuntimeConfig {
        let mut config = RuntimeConfig::new(self.frames, policy);
        if let Some(bytes) = self.buffer_bytes {
            config.abm.budget = BufferBudget::Bytes(bytes);
        } else if let Some(mb) = self.buffer_mb {
            // In range by the flag's parser: at most 2^40 bytes.
            config.abm.budget = BufferBudget::Bytes(mb << 20);
        }
        config
    }
}

/// `NAME=DIR` → (NAME, DIR).
fn parse_table_arg(spec: &str) -> anyhow::Result<(String, PathBuf)> {
    let (name, dir) = spec
        .split_once('=')
        .with_context(|| format!("--table {spec:?}: expected NAME=DIR"))?;
    anyhow::ensure!(
        !name.is_empty() && !dir.is_empty(),
        "--table {spec:?}: expected NAME=DIR"
    );
    Ok((name.to_string(), PathBuf::from(dir)))
}

/// `--index-page-cost-kb`, or what the device says a request costs: on an emulated
/// disk the bytes it streams during one request's latency, else the default.
fn index_page_cost(flag_kb: Option<u64>, device: &DeviceConfig) -> IndexPageCost {
    if let Some(kb) = flag_kb {
        return IndexPageCost(kb << 10);
    }
    let latency = device.latency_per_request.as_secs_f64();
    match device.bandwidth {
        Some(b) if latency > 0.0 => IndexPageCost((latency * b.bytes_per_sec()).max(1.0) as u64),
        _ => IndexPageCost(PAGE_FETCH_COST_BYTES),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emulated_disk_prices_a_page_fetch_at_its_latency_times_its_bandwidth() {
        use coopscan_storage::device::Bandwidth;
        let disk = DeviceConfig {
            bandwidth: Some(Bandwidth::mb_per_s(150.0).expect("bandwidth")),
            latency_per_request: std::time::Duration::from_millis(4),
            ..DeviceConfig::default()
        };
        // 4 ms at 150 MB/s: 600 000 bytes.
        assert_eq!(index_page_cost(None, &disk), IndexPageCost(600_000));
        assert_eq!(index_page_cost(Some(64), &disk), IndexPageCost(64 << 10));
        let raw = DeviceConfig::default();
        assert_eq!(
            index_page_cost(None, &raw),
            IndexPageCost(PAGE_FETCH_COST_BYTES)
        );
    }

    #[test]
    fn table_args_and_policies_parse() {
        let (name, dir) = parse_table_arg("lineitem=/data/li").expect("valid");
        assert_eq!(
            (name.as_str(), dir),
            ("lineitem", PathBuf::from("/data/li"))
        );
        assert!(parse_table_arg("lineitem").is_err());
        assert!(parse_table_arg("=dir").is_err());
        assert_eq!(parse_policy("scan"), Ok(SqlPolicy::Scan));
        assert_eq!(
            parse_policy("Elevator"),
            Ok(SqlPolicy::Cooperative(PolicyKind::Elevator))
        );
        assert!(parse_policy("lru").is_err());
    }

    #[test]
    fn scan_workers_follow_threads_unless_given() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            session: SessionArgs,
        }
        let parse = |extra: &[&str]| {
            let args = ["coopscan", "--table", "t=/d"].iter().chain(extra);
            <Cli as clap::Parser>::try_parse_from(args).map(|cli| cli.session)
        };
        let one = parse(&["--threads", "1"]).expect("parses");
        assert_eq!((one.threads(), one.scan_workers()), (1, 1));
        let many = parse(&["--threads", "200"]).expect("parses");
        assert_eq!((many.threads(), many.scan_workers()), (200, 64));
        let given = parse(&["--threads", "8", "--scan-workers", "2"]).expect("parses");
        assert_eq!((given.threads(), given.scan_workers()), (8, 2));
        let machine = parse(&[]).expect("parses");
        assert_eq!(machine.scan_workers(), machine.threads().min(64));
        assert!(parse(&["--threads", "0"]).is_err());
        assert!(parse(&["--threads", "1025"]).is_err());
    }
}
