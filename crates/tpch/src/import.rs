//! Importing a TPC-H table: tpchgen generates on worker threads, the caller's thread
//! writes the coopscan table, in row order.
//!
//! The table is split into generator parts; worker `w` generates parts `w, w + W, …`
//! and hands each part's batches over its own bounded channel, so the writer can take
//! the parts in order while the workers run ahead by at most one part each.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use coopscan_storage::{Layout, Manifest, TableWriter, WriteOptions};

use crate::tables::{generate, TpchTable};
use crate::{Result, TpchError};

type Generated = std::result::Result<RecordBatch, arrow_schema::ArrowError>;

/// Rows per generated batch.
pub const GEN_BATCH_ROWS: usize = 16 * 1024;
/// Rows per generator part: small enough to balance the workers, large enough that
/// part start-up costs nothing.
const ROWS_PER_PART: f64 = 500_000.0;
/// Batches a worker may have generated ahead of the writer, per part.
const CHANNEL_BATCHES: usize = 8;

#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub sf: f64,
    pub layout: Layout,
    pub chunk_bytes: u64,
    pub out_dir: PathBuf,
    pub overwrite: bool,
    /// Generator threads (the writer runs on the calling thread).
    pub threads: usize,
}

#[derive(Debug, Clone)]
pub struct ImportSummary {
    pub table: TpchTable,
    pub manifest: Manifest,
    pub elapsed: Duration,
}

/// Generates `table` and writes it to `opts.out_dir/<table>`. `progress` is called with
/// the rows written so far after every batch.
pub fn import_table(
    table: TpchTable,
    opts: &ImportOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ImportSummary> {
    if !(opts.sf > 0.0 && opts.sf.is_finite()) {
        return Err(TpchError::Invalid(format!(
            "scale factor must be positive, got {}",
            opts.sf
        )));
    }
    let start = Instant::now();
    let dir = opts.out_dir.join(table.name());
    let mut wo = WriteOptions::new(opts.layout).with_chunk_bytes(opts.chunk_bytes);
    wo.overwrite = opts.overwrite;
    let mut writer = TableWriter::create(&dir, table.name(), table.schema()?, wo)?;
    let parts = ((table.estimated_rows(opts.sf) as f64 / ROWS_PER_PART).ceil() as i32).max(1);
    let workers = opts.threads.clamp(1, parts as usize);
    std::thread::scope(|scope| -> Result<()> {
        let mut receivers: Vec<Receiver<Generated>> = Vec::with_capacity(parts as usize);
        let mut senders: Vec<Vec<(i32, SyncSender<Generated>)>> =
            (0..workers).map(|_| Vec::new()).collect();
        for part in 1..=parts {
            let (tx, rx) = sync_channel(CHANNEL_BATCHES);
            receivers.push(rx);
            senders[(part - 1) as usize % workers].push((part, tx));
        }
        for jobs in senders {
            let sf = opts.sf;
            scope.spawn(move || {
                for (part, tx) in jobs {
                    for batch in generate(table, sf, part, parts, GEN_BATCH_ROWS) {
                        if tx.send(batch).is_err() {
                            return; // the writer stopped (it failed): stop generating
                        }
                    }
                }
            });
        }
        for rx in receivers {
            for batch in rx {
                let batch = batch.map_err(|e| TpchError::Generator(e.to_string()))?;
                writer.write_batch(&batch)?;
                progress(writer.rows_written());
            }
        }
        Ok(())
    })?;
    let manifest = writer.finish()?;
    Ok(ImportSummary {
        table,
        manifest,
        elapsed: start.elapsed(),
    })
}
