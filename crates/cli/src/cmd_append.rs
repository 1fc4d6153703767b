//! `coopscan append`: a bulk append (2012 paper §2.1): the rows of a query written as
//! new pages after a table's stable tuples, instead of as inserts into its delta tree,
//! with the table's delta log carried to the new image in the same commit. The query
//! runs in a session over the same tables (`--db`, `--table`), so it may read the
//! table it appends to; it may only read.
//!
//! ```text
//! coopscan append --db DIR --into lineitem --sql "SELECT * FROM lineitem WHERE l_orderkey < 1000"
//! ```

use std::sync::Arc;

use anyhow::Context;
use coopscan_exec::datafusion::execution::context::SQLOptions;
use coopscan_exec::delta::append::bulk_append;
use coopscan_storage::device::Device;

use crate::session_args::SessionArgs;

#[derive(clap::Args, Debug)]
pub struct AppendArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// The table of the session the rows are appended to.
    #[arg(long)]
    pub into: String,
    /// A query whose rows (the table's columns, in order) are appended.
    #[arg(long)]
    pub sql: String,
}

pub fn run(args: &AppendArgs) -> anyhow::Result<()> {
    let open = args.session.open_tables()?;
    let Some(at) = open.names.iter().position(|n| *n == args.into) else {
        anyhow::bail!(
            "--into {}: no such table (the session has {})",
            args.into,
            open.names.join(", ")
        );
    };
    let target = open.tables[at].clone();
    let device = Arc::new(Device::new(args.session.device.config()?));
    let (ctx, _runtime) = args
        .session
        .open_with(open, args.session.policy, Arc::clone(&device))?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let read_only = SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let done = tokio.block_on(async {
        let frame = ctx.sql_with_options(&args.sql, read_only).await?;
        let rows = frame.execute_stream().await?;
        Ok::<_, anyhow::Error>(bulk_append(target, device, rows).await?)
    })?;
    for lost in &done.lost_indexes {
        eprintln!("warning: {}: {lost}", args.into);
    }
    println!(
        "{}: {} rows appended in {} chunks, {} rows before, {} after, {:.2} s",
        args.into,
        done.rows_after - done.rows_before,
        done.chunks_added,
        done.rows_before,
        done.rows_after,
        done.elapsed.as_secs_f64()
    );
    Ok(())
}
