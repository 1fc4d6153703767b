//! `IndexScanExec`: Clotho's SI-scan (§6.1, §7.2.3) — a scan driven by a secondary
//! index. The index gives the rows whose key satisfies the query's comparisons on the
//! indexed column; only the pages holding those rows are read, for only the columns
//! the query needs (`Table::fetch_rows`), and the scan's whole filter is evaluated on
//! them. The planner takes it over a full scan when the index says few rows qualify
//! ([`choose`]); a table with uncommitted or committed changes not yet checkpointed is
//! always scanned (the index knows the stable tuples only).

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::Arc;

use coopscan_buffer::{ChunkId, RowRanges, ScanPages};
use coopscan_storage::device::Device;
use coopscan_storage::filter::{positions, CmpOp};
use coopscan_storage::index::{SecondaryIndex, ENTRIES_PER_LEAF};
use coopscan_storage::read::PageMap;
use coopscan_storage::{Layout, Table, TableFiles};
use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};

use crate::error::external;
use crate::feed::BatchSink;
use crate::leaf_plan::{ChunkSource, LeafScanExec};
use crate::plan_common::{Order, ScanCore};
use crate::pushdown::{bounds, Pushed};
use crate::shape::OutputShape;
use crate::statistics::chunks_read;

/// Rows fetched per output batch.
const FETCH_ROWS: usize = 8192;

/// What one page fetched at random costs, in bytes a full scan streams in the same
/// time: the planner's break-even between an SI-scan and a scan. A random 4 KiB read
/// takes about as long as streaming 1 MiB on a disk of ~4 ms and ~250 MB/s (the
/// 2004 report's Figure 7 puts NSM's break-even near 0.1 % of the tuples).
pub const PAGE_FETCH_COST_BYTES: u64 = 1 << 20;

/// [`PAGE_FETCH_COST_BYTES`] for a session's device, when it differs (a flash device's
/// random read costs far less). Put into a query's `SessionConfig`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexPageCost(pub u64);

impl Default for IndexPageCost {
    fn default() -> Self {
        IndexPageCost(PAGE_FETCH_COST_BYTES)
    }
}

/// Whether a session's scans may use indexes. Put into a query's `SessionConfig`
/// (`with_extension(Arc::new(IndexScans::Never))`); without it, `Auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexScans {
    /// An index scan where the index estimates it cheaper than a scan.
    #[default]
    Auto,
    /// An index scan wherever an index applies (for tests and experiments).
    Always,
    /// Never an index scan.
    Never,
}

impl std::str::FromStr for IndexScans {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(IndexScans::Auto),
            "always" => Ok(IndexScans::Always),
            "never" => Ok(IndexScans::Never),
            other => Err(format!("{other:?}: expected auto, always or never")),
        }
    }
}

/// An index scan's table, device and the keys it looks up.
pub struct IndexSource {
    pub table: Table,
    pub device: Arc<Device>,
    pub files: TableFiles,
    pub index: Arc<SecondaryIndex>,
    /// The rows to fetch, ascending (looked up when the scan was planned).
    pub rows: Arc<Vec<u64>>,
}

impl fmt::Debug for IndexSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexSource")
            .field("table", &self.table.dir())
            .field("column", &self.index.meta().column_name)
            .field("rows", &self.rows.len())
            .finish()
    }
}

/// The SI-scan: a leaf plan fetching the rows an index names, in table order.
pub type IndexScanExec = LeafScanExec<IndexSource>;

impl ChunkSource for IndexSource {
    const NAME: &'static str = "IndexScanExec";
    const ORDER: Order = Order::RowId;

    fn detail(&self) -> Option<String> {
        let column = &self.index.meta().column_name;
        Some(format!("index={column}, fetched={}", self.rows.len()))
    }

    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        core.feed("coopscan-index-scan", &context, move |core, sink| {
            produce(core, &self, sink)
        })
    }
}

/// Sends the rows fetched and filtered, [`FETCH_ROWS`] at a time.
fn produce(core: &ScanCore, source: &IndexSource, sink: &BatchSink) -> Result<()> {
    let load = core.shape.load_columns();
    for part in source.rows.chunks(FETCH_ROWS) {
        if sink.is_closed() {
            return Ok(());
        }
        let fetched = source
            .table
            .fetch_rows(
                &source.device,
                &source.files,
                source.index.page_map(),
                part,
                &load,
            )
            .map_err(external)?;
        core.counters.chunk_delivered(fetched.num_rows());
        let batch = filtered(&core.shape, &load, &fetched, part)?;
        if !sink.send(batch) {
            return Ok(());
        }
    }
    Ok(())
}

/// The rows of `rows` (ascending) inside `ranges`.
fn within(rows: &[u64], ranges: &RowRanges) -> Vec<u64> {
    let mut out = Vec::with_capacity(rows.len());
    let mut at = 0usize;
    for range in ranges.ranges() {
        at += rows[at..].partition_point(|&r| r < range.start);
        let n = rows[at..].partition_point(|&r| r < range.end);
        out.extend_from_slice(&rows[at..at + n]);
        at += n;
    }
    out
}

/// The output batch of the fetched tuples (columns `load`, rows `rows`) that pass the
/// scan's filter.
fn filtered(
    shape: &OutputShape,
    load: &[usize],
    fetched: &RecordBatch,
    rows: &[u64],
) -> Result<RecordBatch> {
    let n = fetched.num_rows();
    let keep = match shape.decoding_filter() {
        Some(filter) => filter
            .select_arrays(n, |c| {
                let at = load.iter().position(|&l| l == c)?;
                Some(fetched.column(at).as_ref())
            })
            .map_err(external)?,
        None => vec![true; n],
    };
    let kept = positions(&keep);
    let indices = UInt32Array::from(kept.clone());
    let projected = shape.storage_projection.len();
    let columns = fetched.columns()[..projected]
        .iter()
        .map(|c| take(c, &indices, None))
        .collect::<std::result::Result<Vec<ArrayRef>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(kept.len()));
    let schema = fetched
        .schema()
        .project(&(0..projected).collect::<Vec<_>>())?;
    let tuples = RecordBatch::try_new_with_options(Arc::new(schema), columns, &options)?;
    Ok(shape.assemble_ids(&tuples, kept.iter().map(|&p| rows[p as usize]))?)
}

/// The key range the pushed comparisons on `column` allow (`None`: none constrain it).
/// All of them count, evaluated by the scan or not: the index only narrows what is
/// read, and a comparison the scan leaves to DataFusion is applied above it anyway.
pub fn key_range(pushed: &[Pushed], column: usize) -> Option<RangeInclusive<i64>> {
    let on_column: Vec<(CmpOp, i128)> = pushed
        .iter()
        .filter_map(|p| match *p {
            Pushed::Value {
                column: c,
                op,
                value,
            } if c == column => Some((op, i128::from(value))),
            _ => None,
        })
        .collect();
    if on_column.is_empty() {
        return None;
    }
    let keys = bounds(
        on_column.into_iter(),
        i128::from(i64::MIN)..i128::from(i64::MAX) + 1,
    );
    // Both ends fit: they lie within `i64`'s range (an empty range as 1..=0).
    Some(
        match (i64::try_from(keys.start), i64::try_from(keys.end - 1)) {
            (Ok(lo), Ok(hi)) if keys.start < keys.end => lo..=hi,
            _ => RangeInclusive::new(1, 0),
        },
    )
}

/// The column of an index that failed when it was read (a damaged leaf): the scan goes
/// without it (`coopscan index DIR` says what is wrong with it).
#[derive(Debug)]
pub struct IndexFailed {
    pub column: usize,
}

/// What an index does for a scan ([`choose`]).
pub enum IndexPlan {
    /// Fetch the pages of these rows (ascending), and only those: an SI-scan.
    Fetch {
        index: Arc<SecondaryIndex>,
        rows: Arc<Vec<u64>>,
    },
    /// Read only the chunks holding rows the index names, as any scan reads chunks:
    /// in a cooperative session through the Active Buffer Manager, which loads each
    /// of them once for every scan that needs it, in any order (the 2004 report's
    /// §4.2: an index selection past the break-even registers like a CScan and picks
    /// its tuples from the chunks as they arrive). On NSM/PAX it names the pages
    /// holding those rows, so that a chunk only such selections need is read as the
    /// union of their pages (the report's scatter read); DSM/CSM chunks are read whole.
    Chunks {
        ranges: RowRanges,
        pages: Option<ScanPages>,
    },
}

/// A lookup the index estimates at this many rows or fewer (16 leaves, 64 KiB read) is
/// always made: its exact rows decide better than the estimate, which counts whole
/// leaves (a point lookup is one or two leaves, hundreds of rows).
const CHEAP_LOOKUP_ROWS: u64 = 16 * ENTRIES_PER_LEAF as u64;

/// When the index estimates this many rows per chunk of the scan or more, it is not
/// looked up at all: rows spread over the table at that density leave hardly a chunk
/// without one (4 per chunk, uniformly: about 2 % of the chunks), and fetching them
/// costs at least a page each. Clustered rows are what zonemaps already prune.
const LOOKUP_ROWS_PER_CHUNK: u64 = 4;

/// What the best index the `pushed` comparisons bound does for a scan of `ranges` with
/// `shape`, if anything. `Always`: fetch its rows. `Auto`: the cheapest of fetching the rows'
/// pages (each request costing `page_cost`, beside its bytes) and reading the chunks
/// holding them (on NSM/PAX naming the rows' pages) — or nothing, when those are all
/// the chunks of a DSM/CSM table or the index estimates (by whole leaves, without
/// reading them) its rows too many to leave any chunk out.
pub fn choose(
    table: &Table,
    indexes: &[Arc<SecondaryIndex>],
    pushed: &[Pushed],
    shape: &OutputShape,
    ranges: &RowRanges,
    ((mode, page_cost), device): ((IndexScans, IndexPageCost), &Device),
) -> Result<Option<IndexPlan>, IndexFailed> {
    if mode == IndexScans::Never {
        return Ok(None);
    }
    let best = indexes
        .iter()
        .filter_map(|i| {
            let keys = key_range(pushed, i.column())?;
            Some((Arc::clone(i), keys.clone(), i.estimate(&keys)))
        })
        .min_by_key(|(_, _, rows)| *rows);
    let Some((index, keys, estimate)) = best else {
        return Ok(None);
    };
    if keys.is_empty() {
        // Comparisons no key satisfies: nothing to read.
        let rows = Arc::new(Vec::new());
        return Ok(Some(IndexPlan::Fetch { index, rows }));
    }
    let load = shape.load_columns();
    let chunks = chunks_read(table, ranges).len() as u64;
    let dense = estimate >= chunks.saturating_mul(LOOKUP_ROWS_PER_CHUNK);
    if mode == IndexScans::Auto && estimate > CHEAP_LOOKUP_ROWS && dense {
        return Ok(None);
    }
    let failed = |_| IndexFailed {
        column: index.column(),
    };
    let rows = within(&index.lookup(device, &keys).map_err(failed)?, ranges);
    if mode == IndexScans::Always {
        let rows = Arc::new(rows);
        return Ok(Some(IndexPlan::Fetch { index, rows }));
    }
    let cost = table.fetch_cost_of(index.page_map(), &rows, &load);
    let (requests, bytes) = cost.map_err(failed)?;
    let fetch = requests.saturating_mul(page_cost.0).saturating_add(bytes);
    let touched = chunks_holding(table, &rows, ranges);
    let chunks = chunk_bytes(table, &touched, &load);
    Ok(if fetch < chunks {
        let rows = Arc::new(rows);
        Some(IndexPlan::Fetch { index, rows })
    } else {
        // Reading only the chunks holding the rows pays when it leaves some out; on
        // NSM/PAX, naming the rows' pages pays even when it does not: a chunk only
        // index selections need is then read as their pages (the scatter read).
        let pages = scan_pages(table, index.page_map(), &rows).map_err(failed)?;
        (touched.rows() < ranges.rows() || pages.is_some()).then_some(IndexPlan::Chunks {
            ranges: touched,
            pages,
        })
    })
}

/// NSM/PAX: the pages of each chunk holding `rows` (ascending), numbered within the
/// chunk; `None` for DSM/CSM, whose chunks are read as column pieces.
fn scan_pages(
    table: &Table,
    map: &PageMap,
    rows: &[u64],
) -> coopscan_storage::Result<Option<ScanPages>> {
    if !matches!(table.layout(), Layout::Nsm | Layout::Pax) {
        return Ok(None);
    }
    let starts = table.chunk_row_starts();
    let page_bytes = u64::from(table.manifest().page_bytes);
    let mut pages: Vec<(ChunkId, Vec<u32>)> = Vec::new();
    for &row in rows {
        let k = starts.partition_point(|&s| s <= row).saturating_sub(1);
        let at = map.page_of(table, k, 0, row)?;
        let first = table.chunk(k).columns[0].extent.offset;
        let page =
            u32::try_from(at.page.offset.saturating_sub(first) / page_bytes).unwrap_or(u32::MAX);
        let chunk = ChunkId(u32::try_from(k).unwrap_or(u32::MAX));
        match pages.last_mut() {
            Some((c, list)) if *c == chunk => list.push(page),
            _ => pages.push((chunk, vec![page])),
        }
    }
    Ok(Some(ScanPages::new(pages)))
}

/// The bytes a scan of `ranges` reads for columns `load`.
fn chunk_bytes(table: &Table, ranges: &RowRanges, load: &[usize]) -> u64 {
    chunks_read(table, ranges)
        .into_iter()
        .map(|k| {
            table
                .chunk_extents(k, load)
                .iter()
                .map(|e| e.len)
                .sum::<u64>()
        })
        .sum()
}

/// `ranges` cut to the chunks holding any of `rows` (ascending, inside `ranges`).
fn chunks_holding(table: &Table, rows: &[u64], ranges: &RowRanges) -> RowRanges {
    let starts = table.chunk_row_starts();
    let mut chunks: Vec<std::ops::Range<u64>> = Vec::new();
    for &row in rows {
        if chunks.last().is_some_and(|c| c.contains(&row)) {
            continue;
        }
        let k = starts.partition_point(|&s| s <= row).saturating_sub(1);
        chunks.push(table.chunk(k).rows());
    }
    let touched = RowRanges::new(chunks);
    RowRanges::new(touched.ranges().iter().flat_map(|t| ranges.within(t)))
}
