//! `coopscan sql`: run SQL over coopscan tables with DataFusion, reading through
//! in-order Scans or through CScans sharing one Active Buffer Manager: one buffer (one
//! byte budget, eviction across tables) for all the session's tables.
//!
//! With a SQL argument it runs that statement; without, it reads statements from stdin
//! (each ends with `;`, may span lines) until end of input or `\q`. Results are printed
//! as tables while they are computed; timings and errors go to stderr so stdout stays
//! the results only. A session in which a statement failed exits with status 1 (after
//! running the rest), so a script piped in cannot fail unnoticed.
//!
//! The session is read-only over its tables (`coopscan_exec::plan_read_only`): no
//! `COPY … TO`, `CREATE EXTERNAL TABLE`, `INSERT` or `SET`. Before, `COPY` wrote any
//! path the process could write, and an external table read any file it could read.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use coopscan_buffer::{BufferBudget, TableId, MAX_WORKERS};
use coopscan_exec::datafusion::prelude::{SessionConfig, SessionContext};
use coopscan_exec::{plan_read_only, query_session, CoopTable, ScanMode, ScanWorkers};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::device::Device;
use coopscan_storage::{database_tables, Table};

use crate::device_args::DeviceArgs;
use crate::table_printer::TablePrinter;

/// ABM frames (of the largest chunk of any table) when neither `--frames` nor
/// `--buffer-mb` is given: one buffer for all tables.
const DEFAULT_FRAMES: u32 = 64;
/// Largest `--buffer-mb`: 1 TiB, far above any memory this runs on, and far below a
/// byte count's overflow.
const MAX_BUFFER_MB: u64 = 1 << 20;
const PROMPT: &str = "coopscan> ";
const CONTINUATION_PROMPT: &str = "      ... ";
const QUIT_COMMAND: &str = "\\q";
/// Longest statement (all its lines) read from stdin: what the input may make the
/// prompt hold. Input without a newline (`< /dev/zero`) used to grow until the
/// process aborted on allocation.
pub const MAX_STATEMENT_BYTES: u64 = 16 << 20;

/// How queries read their tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlPolicy {
    /// In-order Scan straight from storage, no buffer manager.
    Scan,
    /// CScans under this ABM policy.
    Cooperative(PolicyKind),
}

fn parse_policy(s: &str) -> Result<SqlPolicy, String> {
    if s.trim().eq_ignore_ascii_case("scan") {
        return Ok(SqlPolicy::Scan);
    }
    s.parse::<PolicyKind>()
        .map(SqlPolicy::Cooperative)
        .map_err(|e| format!("{e}, or scan"))
}

#[derive(clap::Args, Debug, Clone)]
pub struct SqlArgs {
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
    /// Workers of each cooperative scan, 1 to 64: more makes every CScan a parallel
    /// CScan of that many partitions sharing one ABM scan (2012 paper §2.2).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_WORKERS)))]
    pub scan_workers: u16,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// The statement to run; without it, read statements from stdin.
    pub sql: Option<String>,
}

pub fn run(args: &SqlArgs) -> anyhow::Result<()> {
    let device = Arc::new(Device::new(args.device.config()?));
    let mut config = SessionConfig::new();
    if args.scan_workers > 1 {
        config = config.with_extension(Arc::new(ScanWorkers(usize::from(args.scan_workers))));
    }
    let ctx = query_session(config);
    let mut names = Vec::with_capacity(args.tables.len());
    let mut tables = Vec::with_capacity(args.tables.len());
    let in_db = match &args.db {
        Some(db) => database_tables(db).with_context(|| format!("--db {}", db.display()))?,
        None => Vec::new(),
    };
    let given = args.tables.iter().map(|spec| parse_table_arg(spec));
    for named in in_db.into_iter().map(Ok).chain(given) {
        let (name, dir) = named?;
        anyhow::ensure!(!names.contains(&name), "table {name} is named twice");
        tables.push(Table::open(&dir).with_context(|| format!("table {name}"))?);
        names.push(name);
    }
    let providers = match args.policy {
        SqlPolicy::Scan => tables
            .into_iter()
            .map(|t| CoopTable::new(t, Arc::clone(&device), ScanMode::Scan))
            .collect::<Result<Vec<_>, _>>()?,
        SqlPolicy::Cooperative(policy) => {
            let runtime = Runtime::with_tables(tables, Arc::clone(&device), args.runtime(policy))
                .context("starting the buffer manager")?;
            let runtime = Arc::new(runtime);
            (0..names.len() as u32)
                .map(|i| CoopTable::cooperative_of(Arc::clone(&runtime), TableId(i)))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    for (name, provider) in names.iter().zip(providers) {
        ctx.register_table(name.as_str(), Arc::new(provider))?;
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    match &args.sql {
        Some(sql) => tokio.block_on(execute(&ctx, sql)),
        None => tokio.block_on(interactive(&ctx)),
    }
}

impl SqlArgs {
    /// The runtime's configuration: one buffer of `--buffer-mb` or `--frames`.
    fn runtime(&self, policy: PolicyKind) -> RuntimeConfig {
        let mut config = RuntimeConfig::new(self.frames, policy);
        if let Some(mb) = self.buffer_mb {
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

/// Runs one statement and prints its result, batch by batch as it is computed (memory
/// stays bounded by a batch), then its timing.
async fn execute(ctx: &SessionContext, sql: &str) -> anyhow::Result<()> {
    use futures::StreamExt;
    let start = Instant::now();
    let frame = plan_read_only(ctx, sql.trim().trim_end_matches(';')).await?;
    let mut stream = frame.execute_stream().await?;
    let stdout = std::io::stdout();
    let mut printer = TablePrinter::new(stdout.lock(), stream.schema());
    let printed = async {
        while let Some(batch) = stream.next().await {
            printer.print_batch(&batch?)?;
        }
        printer.finish()
    };
    match printed.await {
        Ok(rows) => eprintln!("{rows} row(s) in {:.3} s", start.elapsed().as_secs_f64()),
        // The reader went away (`| head`): dropping the stream stops the query.
        Err(e) if is_broken_pipe(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(())
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Reads statements from stdin until EOF or `\q`; an error ends the statement, not
/// the session — including a line that is not UTF-8, which discards its statement.
/// The session fails at the end if any statement did; a statement longer than
/// [`MAX_STATEMENT_BYTES`] ends it at once.
async fn interactive(ctx: &SessionContext) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    // Prompts only for a person at a terminal, not for piped scripts.
    let show_prompt = stdin.is_terminal();
    let mut input = stdin.lock();
    let mut statement = String::new();
    let mut raw = Vec::new();
    let mut failed: u64 = 0;
    for line_no in 1u64.. {
        if show_prompt {
            prompt(if statement.is_empty() {
                PROMPT
            } else {
                CONTINUATION_PROMPT
            })?;
        }
        raw.clear();
        // At most one byte more than the statement may still grow by: reading an
        // endless line stops there.
        let room = MAX_STATEMENT_BYTES.saturating_sub(statement.len() as u64);
        let read = (&mut input)
            .take(room.saturating_add(1))
            .read_until(b'\n', &mut raw)
            .context("reading stdin")?;
        if read == 0 {
            break;
        }
        if raw.len() as u64 > room {
            anyhow::bail!(
                "input line {line_no}: statement longer than {MAX_STATEMENT_BYTES} bytes \
                 (the limit for a statement read from stdin)"
            );
        }
        let Ok(line) = std::str::from_utf8(&raw) else {
            eprintln!("error: input line {line_no} is not UTF-8; statement discarded");
            failed = failed.saturating_add(1);
            statement.clear();
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        if statement.is_empty() && line.trim() == QUIT_COMMAND {
            break;
        }
        statement.push_str(line);
        statement.push('\n');
        if line.trim_end().ends_with(';')
            && !run_reporting(ctx, &std::mem::take(&mut statement)).await
        {
            failed = failed.saturating_add(1);
        }
    }
    // End of input: a last statement without `;` still runs.
    if !statement.trim().is_empty() && !run_reporting(ctx, &statement).await {
        failed = failed.saturating_add(1);
    }
    anyhow::ensure!(failed == 0, "{failed} statement(s) failed");
    Ok(())
}

/// Runs `sql`, reporting an error on stderr; `false` if it failed.
async fn run_reporting(ctx: &SessionContext, sql: &str) -> bool {
    match execute(ctx, sql).await {
        Ok(()) => true,
        Err(e) => {
            eprintln!("error: {}", crate::error_report::error_chain(&e));
            false
        }
    }
}

fn prompt(text: &str) -> anyhow::Result<()> {
    let mut err = std::io::stderr();
    write!(err, "{text}")?;
    err.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
