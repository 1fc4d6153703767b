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

/// What a generator worker sends: the batches of its parts, each part closed by
/// `PartEnd`, so one channel per worker (not per part) keeps the parts in order.
enum Message {
    Batch(Generated),
    PartEnd,
}

/// Rows per generated batch.
pub const GEN_BATCH_ROWS: usize = 16 * 1024;
/// Rows per generator part: small enough to balance the workers, large enough that
/// part start-up costs nothing.
const ROWS_PER_PART: f64 = 500_000.0;
/// Batches a worker may have generated ahead of the writer.
const CHANNEL_BATCHES: usize = 8;
/// Largest scale factor: TPC-H's largest official one (about 600 G lineitem rows).
/// Beyond it tpchgen's row arithmetic and our part count are untested.
pub const MAX_SCALE_FACTOR: f64 = 100_000.0;
/// Most generator threads (each holds up to CHANNEL_BATCHES batches).
pub const MAX_THREADS: usize = 256;

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
    check_scale_factor(opts.sf)?;
    let start = Instant::now();
    let dir = opts.out_dir.join(table.name());
    let mut wo = WriteOptions::new(opts.layout).with_chunk_bytes(opts.chunk_bytes);
    wo.overwrite = opts.overwrite;
    wo.source = Some(source(table, opts.sf));
    // The writer packs DSM columns on as many threads as generate: one writer thread
    // bounds an import otherwise (lineitem's 16 columns).
    wo.threads = opts.threads.clamp(1, MAX_THREADS);
    let mut writer = TableWriter::create(&dir, table.name(), table.schema()?, wo)?;
    // At most MAX_SCALE_FACTOR × 6 M / ROWS_PER_PART = 1.2 M parts: fits i32.
    let parts = ((table.estimated_rows(opts.sf) as f64 / ROWS_PER_PART).ceil() as i32).max(1);
    let workers = opts.threads.clamp(1, MAX_THREADS).min(parts as usize);
    std::thread::scope(|scope| -> Result<()> {
        let mut receivers: Vec<Receiver<Message>> = Vec::with_capacity(workers);
        for w in 0..workers {
            let (tx, rx) = sync_channel(CHANNEL_BATCHES);
            receivers.push(rx);
            let sf = opts.sf;
            scope.spawn(move || generate_parts(table, sf, parts, w, workers, tx));
        }
        // Part p comes from worker (p - 1) % workers, each part ending with PartEnd.
        for part in 0..parts as usize {
            loop {
                let batch = match receivers[part % workers].recv() {
                    Ok(Message::PartEnd) => break,
                    Ok(Message::Batch(b)) => b.map_err(|e| TpchError::Generator(e.to_string()))?,
                    // The worker ended before its part did (it panicked): not a table.
                    Err(_) => {
                        return Err(TpchError::Generator(format!(
                            "worker stopped in part {}",
                            part + 1
                        )))
                    }
                };
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

/// Worker `w` of `workers`: generates parts `w + 1, w + 1 + workers, …` into `tx`.
fn generate_parts(
    table: TpchTable,
    sf: f64,
    parts: i32,
    w: usize,
    workers: usize,
    tx: SyncSender<Message>,
) {
    for part in (w + 1..=parts as usize).step_by(workers) {
        for batch in generate(table, sf, part as i32, parts, GEN_BATCH_ROWS) {
            if tx.send(Message::Batch(batch)).is_err() {
                return; // the writer stopped (it failed): stop generating
            }
        }
        if tx.send(Message::PartEnd).is_err() {
            return;
        }
    }
}

fn check_scale_factor(sf: f64) -> Result<()> {
    if sf > 0.0 && sf <= MAX_SCALE_FACTOR {
        return Ok(());
    }
    Err(TpchError::Invalid(format!(
        "scale factor must be in (0, {MAX_SCALE_FACTOR}], got {sf}"
    )))
}

/// The manifest's `source`: what generated the table, to recognise it later.
pub fn source(table: TpchTable, sf: f64) -> String {
    format!("tpchgen {table} sf={sf}")
}

/// The scale factor a [`source`] names, if it is one of ours.
pub fn sf_of_source(source: &str) -> Option<f64> {
    let rest = source.strip_prefix("tpchgen ")?;
    let (_, sf) = rest.rsplit_once(" sf=")?;
    sf.parse::<f64>()
        .ok()
        .filter(|sf| *sf > 0.0 && sf.is_finite())
}

#[cfg(test)]
mod source_tests {
    use super::*;

    #[test]
    fn the_scale_factor_is_read_back_from_the_source() {
        for sf in [0.01, 0.1, 1.0, 10.0] {
            assert_eq!(sf_of_source(&source(TpchTable::Lineitem, sf)), Some(sf));
        }
        assert_eq!(sf_of_source("synthetic 8 columns"), None);
        assert_eq!(sf_of_source("tpchgen lineitem sf=-1"), None);
    }
}
