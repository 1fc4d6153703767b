//! A checkpoint (2012 paper §2.1, "PDT Checkpoints"): the table with its committed
//! changes merged, written as a new stable image that replaces the old one, which takes
//! its delta log with it. The storage writer stages the new image and swaps it in (the
//! old one or the new one after a crash, never a mix); the log stays locked throughout,
//! so no statement commits to the old image meanwhile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use coopscan_buffer::Split;
use coopscan_storage::device::Device;
use coopscan_storage::index::build_index;
use coopscan_storage::write::{TableWriter, WriteOptions};
use coopscan_storage::Table;
use datafusion::execution::TaskContext;
use futures::StreamExt;

use crate::error::Result;
use crate::index_scan::{IndexPageCost, IndexScans};
use crate::provider::{CoopTable, ScanMode};

/// What a checkpoint did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpointed {
    /// Changes (tree entries) merged into the new image; 0: nothing to do, nothing written.
    pub changes: usize,
    pub rows_before: u64,
    pub rows_after: u64,
    pub elapsed: Duration,
}

/// Merges the committed changes of the table at `table.dir()` into a new stable image
/// there, reading through `device`.
pub async fn checkpoint(table: Table, device: Arc<Device>) -> Result<Checkpointed> {
    let start = Instant::now();
    let rows_before = table.rows();
    let provider = CoopTable::new(table.clone(), device, ScanMode::Scan)?;
    let delta = Arc::clone(provider.delta());
    // Lock the log: no statement commits to this image until it is replaced.
    let _writer = delta.writer().await;
    // A table with no log has no changes to lose to a writer meanwhile (and is not
    // written): no log is created for it.
    let spec = delta.log_spec().filter(|spec| spec.exists());
    let _log = spec.map(|spec| spec.open(delta.records())).transpose()?;
    let snapshot = delta.snapshot()?;
    let changes = snapshot.entry_count();
    if changes == 0 {
        return Ok(Checkpointed {
            changes,
            rows_before,
            rows_after: rows_before,
            elapsed: start.elapsed(),
        });
    }
    let indexed = provider.indexed_columns();
    let rows_after = write_merged(&table, &provider).await?;
    rebuild_indexes(&table, provider.device(), &indexed)?;
    Ok(Checkpointed {
        changes,
        rows_before,
        rows_after,
        elapsed: start.elapsed(),
    })
}

/// Builds again, over the new image, the indexes `columns` had over the old one (a
/// new image has a new identity, so the old indexes, left behind with the old image's
/// files, would be refused as stale).
fn rebuild_indexes(old: &Table, device: Arc<Device>, columns: &[usize]) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    let table = Table::open(old.dir())?;
    for &column in columns {
        build_index(&table, &device, column)?;
    }
    Ok(())
}

/// Writes the provider's rows (changes merged, in RID order) as the table's new image.
async fn write_merged(table: &Table, provider: &CoopTable) -> Result<u64> {
    let manifest = table.manifest();
    let mut options = WriteOptions::new(manifest.layout).with_chunk_bytes(manifest.chunk_bytes);
    options.page_bytes = manifest.page_bytes;
    options.overwrite = true;
    options.source = Some(match &manifest.source {
        Some(source) => format!("{source}, checkpointed"),
        None => "checkpointed".into(),
    });
    let mut writer =
        TableWriter::create(table.dir(), &manifest.name, table.schema().clone(), options)?;
    let stored: Vec<usize> = (0..table.schema().len()).collect();
    let snapshot = provider.delta().snapshot()?;
    let how = (
        1,
        Split::Dynamic,
        (IndexScans::Never, IndexPageCost::default()),
    );
    let plan = provider.scan_plan(&stored, &[], None, how, snapshot)?;
    let mut stream = plan.execute(0, Arc::new(TaskContext::default()))?;
    while let Some(batch) = stream.next().await {
        writer.write_batch(&batch?)?;
    }
    let rows = writer.rows_written();
    writer.finish()?;
    Ok(rows)
}
