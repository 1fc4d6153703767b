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
//! Besides queries it runs `INSERT INTO`, `UPDATE` and `DELETE` on its tables
//! (`coopscan_exec::plan_read_or_change`): each statement's changes go to the table's
//! Positional Delta Tree and, synced before the statement reports, to its delta log
//! (`TABLE/delta.log`), which every later session replays — but for an `INSERT … SELECT`
//! outside a transaction, whose rows are appended as new pages (`BulkInserts`). Nothing
//! else writes: no `COPY … TO`, `CREATE EXTERNAL TABLE` or `SET` (but of how `EXPLAIN`
//! prints). Before, `COPY` wrote any path the process could write, and an external
//! table read any file it could read.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::delta::BulkInserts;
use coopscan_exec::plan_read_or_change;
use coopscan_runtime::Runtime;
use coopscan_storage::device::Device;

use crate::session_args::SessionArgs;
use crate::table_printer::TablePrinter;

const PROMPT: &str = "coopscan> ";
const CONTINUATION_PROMPT: &str = "      ... ";
const QUIT_COMMAND: &str = "\\q";
/// Longest statement (all its lines) read from stdin: what the input may make the
/// prompt hold. Input without a newline (`< /dev/zero`) used to grow until the
/// process aborted on allocation.
pub const MAX_STATEMENT_BYTES: u64 = 16 << 20;

#[derive(clap::Args, Debug, Clone)]
pub struct SqlArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// The statement to run; without it, read statements from stdin.
    pub sql: Option<String>,
    /// At the end, print to stderr what the session read from the device and, with a
    /// buffer manager, what its buffer loaded and kept.
    #[arg(long)]
    pub stats: bool,
}

pub fn run(args: &SqlArgs) -> anyhow::Result<()> {
    let device = Arc::new(Device::new(args.session.device.config()?));
    let open = args.session.open_tables()?;
    let (ctx, runtime) =
        (args.session).open_with(open, args.session.policy, Arc::clone(&device))?;
    // `INSERT … SELECT` outside a transaction appends pages (`BulkInserts`).
    (ctx.state_ref().write().config_mut()).set_extension(Arc::new(BulkInserts));
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let ran = match &args.sql {
        Some(sql) => tokio.block_on(execute(&ctx, sql)),
        None => tokio.block_on(interactive(&ctx)),
    };
    if args.stats {
        eprintln!("{}", session_stats(&device, runtime.as_deref()));
    }
    ran
}

/// What `--stats` prints: the device's requests and bytes, and the buffer's loads, the
/// bytes they read and kept (less than read where a scattered load dropped pages).
fn session_stats(device: &Device, runtime: Option<&Runtime>) -> String {
    const MB: f64 = 1e6;
    let d = device.stats();
    let mut line = format!(
        "device: {} requests, {:.1} MB read",
        d.requests,
        d.bytes as f64 / MB
    );
    if let Some(runtime) = runtime {
        let b = runtime.abm_stats();
        line.push_str(&format!(
            "; buffer: {} loads ({} scattered), {:.1} MB read, {:.1} MB kept, {} evictions",
            b.loads,
            b.scatter_loads,
            b.bytes_read as f64 / MB,
            b.bytes_loaded as f64 / MB,
            b.evictions
        ));
    }
    line
}

/// Runs one statement and prints its result, batch by batch as it is computed (memory
/// stays bounded by a batch), then its timing.
async fn execute(ctx: &SessionContext, sql: &str) -> anyhow::Result<()> {
    use futures::StreamExt;
    let start = Instant::now();
    let frame = plan_read_or_change(ctx, sql.trim().trim_end_matches(';')).await?;
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
