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
    /// Indexes that could not be built again over the new image, each with why (the
    /// merge itself is done: the table is checkpointed, only these indexes are gone;
    /// `coopscan index` builds them).
    pub lost_indexes: Vec<String>,
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
            lost_indexes: Vec::new(),
        });
    }
    let indexed = provider.indexed_columns();
    let rows_after = write_merged(&table, &provider).await?;
    let (dir, device) = (table.dir().to_path_buf(), provider.device());
    let rebuilt = tokio::task::spawn_blocking(move || rebuild_indexes(&dir, &device, &indexed));
    let lost_indexes = rebuilt
        .await
        .unwrap_or_else(|e| vec![format!("building the indexes again: {e}")]);
    Ok(Checkpointed {
        changes,
        rows_before,
        rows_after,
        elapsed: start.elapsed(),
        lost_indexes,
    })
}

/// Builds again, over the new image in `dir`, the indexes `columns` had over the old
/// one (the old image's files went with the old image); what could not be built, each
/// with why.
pub(super) fn rebuild_indexes(
    dir: &std::path::Path,
    device: &Device,
    columns: &[usize],
) -> Vec<String> {
    if columns.is_empty() {
        return Vec::new();
    }
    let table = match Table::open(dir) {
        Ok(table) => table,
        Err(e) => return vec![format!("the new image: {e}")],
    };
    columns
        .iter()
        .filter_map(|&c| {
            let name = table
                .schema()
                .columns
                .get(c)
                .map_or("?", |d| d.name.as_str());
            build_index(&table, device, c)
                .err()
                .map(|e| format!("index of {name}: {e}"))
        })
        .collect()
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
