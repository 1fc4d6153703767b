//! What Scan and CScan plans share: output shape, tuple ranges, plan properties, and
//! how they print in `EXPLAIN`.

use coopscan_buffer::RowRanges;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use coopscan_storage::Selected;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Statistics;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{Partitioning, PlanProperties};

use datafusion::arrow::array::RecordBatch;
use datafusion::error::Result;

use crate::counters::ScanCounters;
use crate::delta::{merge_chunk, DeltaScan};
use crate::feed::{spawn_feeder, BatchSink};
use crate::partial_states::ScanAggregation;
use crate::pushdown::ROWID_COLUMN;
use crate::shape::OutputShape;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};

/// The part of a scan plan that does not depend on where chunks come from.
#[derive(Debug, Clone)]
pub struct ScanCore {
    pub shape: OutputShape,
    /// Tuple ranges to read (after `_rowid` bounds and zonemap pruning): sorted,
    /// disjoint, non-empty.
    pub ranges: RowRanges,
    pub counters: Arc<ScanCounters>,
    /// What the planner is told about the scan's output (`crate::statistics`).
    pub statistics: Arc<Statistics>,
    /// The table's changes as this scan sees them, when it has any: `ranges` are then
    /// stable positions (SIDs) and the output is merged with them (`crate::delta`).
    pub delta: Option<Arc<DeltaScan>>,
    /// What the scan aggregates itself, when it does (`crate::scan_aggregate`): it then
    /// emits partial aggregate states, not tuples.
    pub aggregate: Option<Arc<ScanAggregation>>,
}

/// Whether the plan promises its output in `_rowid` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// In table order (Scan): declared as ordered by `_rowid` when it is projected.
    RowId,
    /// Any order (CScan): no ordering is declared, so DataFusion never relies on one.
    Any,
}

impl ScanCore {
    pub fn schema(&self) -> SchemaRef {
        match &self.aggregate {
            Some(aggregate) => Arc::clone(&aggregate.schema),
            None => Arc::clone(&self.shape.schema),
        }
    }

    /// One partition, bounded, emitting as chunks arrive.
    /// The plan's properties: `order` as declared, `partitions` output partitions.
    pub fn properties(&self, order: Order, partitions: usize) -> Arc<PlanProperties> {
        let schema = self.schema();
        let mut eq = EquivalenceProperties::new(Arc::clone(&schema));
        if order == Order::RowId {
            if let Ok(index) = schema.index_of(ROWID_COLUMN) {
                let rowid = Arc::new(Column::new(ROWID_COLUMN, index));
                eq.add_ordering([PhysicalSortExpr::new_default(rowid)]);
            }
        }
        Arc::new(PlanProperties::new(
            eq,
            Partitioning::UnknownPartitioning(partitions.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ))
    }

    /// Whether `order` asks first of all for `_rowid` ascending, which a scan in table
    /// order delivers (`_rowid` is unique, so later keys never matter).
    pub fn is_rowid_order(&self, order: &[PhysicalSortExpr]) -> bool {
        let Some(first) = order.first() else {
            return false;
        };
        let Some(column) = first.expr.downcast_ref::<Column>() else {
            return false;
        };
        let ours = self.shape.schema.index_of(ROWID_COLUMN).ok();
        column.name() == ROWID_COLUMN && Some(column.index()) == ours && !first.options.descending
    }

    /// Rows the plan will deliver (at most, for a changed table: its chunks pruned by
    /// zonemaps may drop some of the wanted RIDs).
    pub fn rows(&self) -> u64 {
        match &self.delta {
            Some(delta) => delta.wanted.rows(),
            None => self.ranges.rows(),
        }
    }

    /// What the scan yields after its last chunk: the inserted rows of an empty stable
    /// image (`DeltaScan::tail`), if that is what it reads.
    pub fn tail(&self) -> Option<Result<RecordBatch>> {
        self.delta.as_ref()?.tail(&self.shape)
    }

    /// The output batch of tuples a decoding filter selected (a stable table's scan).
    pub fn assemble_selected(&self, selected: &Selected) -> Result<RecordBatch> {
        Ok(self
            .shape
            .assemble_ids(&selected.batch, selected.rows.iter().copied())?)
    }

    /// The output batch of a decoded batch holding stable tuples `rows` (sorted ranges,
    /// in that order): merged with the table's changes when the scan sees any.
    pub fn assemble(&self, decoded: &RecordBatch, rows: &[Range<u64>]) -> Result<RecordBatch> {
        match &self.delta {
            Some(delta) => merge_chunk(delta, &self.shape, decoded, rows),
            None => Ok(self.shape.assemble(decoded, rows)?),
        }
    }

    /// Starts the scan's feeder thread `name` running `produce` over this scan, counted
    /// as a running scan until `produce` returns (what every leaf's `execute` does).
    pub fn feed(
        &self,
        name: &str,
        context: &TaskContext,
        produce: impl FnOnce(&ScanCore, &BatchSink) -> Result<()> + Send + 'static,
    ) -> Result<SendableRecordBatchStream> {
        let running = self.counters.scan_started();
        let core = self.clone();
        spawn_feeder(name.into(), core.schema(), context, move |sink| {
            // Dropped once `produce` has dropped (unregistered) its scan.
            let _running = running;
            produce(&core, sink)
        })
    }

    pub fn fmt_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns: Vec<&str> = self
            .shape
            .schema
            .fields()
            .iter()
            .map(|c| c.name().as_str())
            .collect();
        write!(
            f,
            "{name}: columns=[{}], ranges={}, rows={}",
            columns.join(", "),
            fmt_ranges(self.ranges.ranges()),
            self.rows()
        )?;
        match self.shape.filter_text() {
            "" => {}
            text => write!(f, ", filter=[{text}]")?,
        }
        match &self.aggregate {
            Some(aggregate) => write!(f, ", {}", aggregate.text),
            None => Ok(()),
        }
    }
}

/// At most a few ranges, so EXPLAIN stays readable.
fn fmt_ranges(ranges: &[Range<u64>]) -> String {
    const SHOWN: usize = 4;
    let mut parts: Vec<String> = ranges
        .iter()
        .take(SHOWN)
        .map(|r| format!("{}..{}", r.start, r.end))
        .collect();
    if ranges.len() > SHOWN {
        parts.push(format!("… {} more", ranges.len() - SHOWN));
    }
    format!("[{}]", parts.join(", "))
}
