//! The one `ExecutionPlan` both scans are: a leaf with a [`ScanCore`] whose chunks come
//! from a [`ChunkSource`]. `ScanExec` and `CScanExec` differ only in their source (and
//! so in name, declared order and how `execute` starts the feeder).

use std::fmt;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SortOrderPushdownResult,
};

use crate::plan_common::{Order, ScanCore};
use crate::runtime_filter::{filtered, is_dynamic};
use crate::statistics::partition_share;

/// Where a leaf scan's chunks come from.
pub trait ChunkSource: Send + Sync + 'static {
    /// The plan's name in `EXPLAIN`.
    const NAME: &'static str;
    /// The output order the plan may promise.
    const ORDER: Order;
    /// Starts reading `core`'s tuples of output partition `partition` into a stream.
    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream>;

    /// Output partitions (1 unless the source splits the scan among workers).
    fn partitions(&self) -> usize {
        1
    }

    /// What `EXPLAIN` shows of the source beside the scan's shape, if anything.
    fn detail(&self) -> Option<String> {
        None
    }

    /// The same scan delivering in table order, for a plan that needs `_rowid` order
    /// (`None`: this source cannot). Sources that are ordered already return `None`.
    fn in_order(_core: &ScanCore, _source: &Arc<Self>) -> Option<Arc<dyn ExecutionPlan>> {
        None
    }
}

pub struct LeafScanExec<S: ChunkSource> {
    core: ScanCore,
    source: Arc<S>,
    properties: Arc<PlanProperties>,
    /// Filters a join above fills in while the query runs (DataFusion's dynamic
    /// filters: the build side's keys), applied to every delivered batch.
    runtime_filters: Vec<Arc<dyn PhysicalExpr>>,
}

impl<S: ChunkSource> LeafScanExec<S> {
    pub fn new(core: ScanCore, source: Arc<S>) -> Self {
        let properties = core.properties(S::ORDER, source.partitions());
        LeafScanExec {
            core,
            source,
            properties,
            runtime_filters: Vec::new(),
        }
    }

    pub fn core(&self) -> &ScanCore {
        &self.core
    }

    /// Where its chunks come from.
    pub fn source(&self) -> &Arc<S> {
        &self.source
    }

    /// Whether a join above handed it dynamic filters (`handle_child_pushdown_result`).
    pub fn has_runtime_filters(&self) -> bool {
        !self.runtime_filters.is_empty()
    }

    fn clone_plan(&self) -> Self {
        LeafScanExec {
            core: self.core.clone(),
            source: Arc::clone(&self.source),
            properties: Arc::clone(&self.properties),
            runtime_filters: self.runtime_filters.clone(),
        }
    }
}

impl<S: ChunkSource> fmt::Debug for LeafScanExec<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(S::NAME).field("core", &self.core).finish()
    }
}

impl<S: ChunkSource> DisplayAs for LeafScanExec<S> {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.core.fmt_as(S::NAME, f)?;
        if let Some(detail) = self.source.detail() {
            write!(f, ", {detail}")?;
        }
        if !self.runtime_filters.is_empty() {
            write!(f, ", runtime_filters={}", self.runtime_filters.len())?;
        }
        Ok(())
    }
}

impl<S: ChunkSource> ExecutionPlan for LeafScanExec<S> {
    fn name(&self) -> &str {
        S::NAME
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for filter in &self.runtime_filters {
            if f(filter)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    /// Takes the dynamic filters a join pushes to its probe side after planning
    /// (DataFusion's `Post` phase): the scan drops the tuples they rule out before any
    /// operator above sees them, where that is cheap (`runtime_filter`) — TPC-H Q18's
    /// lineitem then reaches its joins as the 57 wanted orders' tuples, not 6 M. The
    /// filters stay the
    /// parents' too (`PushedDown::No`): dropping a tuple here is only an early copy of
    /// what the join would do. Static filters are the provider's business
    /// (`supports_filters_pushdown`).
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters = child_pushdown_result.parent_filters;
        let verdicts = vec![PushedDown::No; filters.len()];
        let dynamic: Vec<Arc<dyn PhysicalExpr>> = (filters.into_iter())
            .map(|f| f.filter)
            .filter(is_dynamic)
            .collect();
        let propagation = FilterPushdownPropagation::with_parent_pushdown_result(verdicts);
        if phase != FilterPushdownPhase::Post || dynamic.is_empty() {
            return Ok(propagation);
        }
        let mut updated = self.clone_plan();
        updated.runtime_filters.extend(dynamic);
        Ok(propagation.with_updated_node(Arc::new(updated)))
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    /// DataFusion's sort pushdown asks whether this leaf can deliver `order`: when it
    /// starts with `_rowid` ascending (ORDER BY _rowid, or anything needing table
    /// order), a scan in table order satisfies it exactly, so the sort goes. An
    /// ordered source already says so in its properties; an unordered one (CScan)
    /// becomes the ordered scan over the same shared buffer: the plan picks Scan or
    /// CScan per query (2012 paper §2.3).
    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
    ) -> Result<SortOrderPushdownResult<Arc<dyn ExecutionPlan>>> {
        if !self.core.is_rowid_order(order) {
            return Ok(SortOrderPushdownResult::Unsupported);
        }
        let ordered = match S::ORDER {
            Order::RowId => Some(Arc::new(self.clone_plan()) as Arc<dyn ExecutionPlan>),
            Order::Any => S::in_order(&self.core, &self.source),
        };
        Ok(
            ordered.map_or(SortOrderPushdownResult::Unsupported, |inner| {
                SortOrderPushdownResult::Exact { inner }
            }),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let stream = Arc::clone(&self.source).execute(&self.core, partition, context)?;
        Ok(filtered(stream, &self.runtime_filters))
    }

    /// The scan's statistics (`crate::statistics`), or a partition's even share.
    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let partitions = self.properties.partitioning.partition_count();
        Ok(match args.partition() {
            None => Arc::clone(&self.core.statistics),
            Some(p) if p < partitions => {
                Arc::new(partition_share(&self.core.statistics, partitions))
            }
            Some(p) => {
                return Err(DataFusionError::Internal(format!(
                    "statistics of partition {p} of {partitions}"
                )))
            }
        })
    }
}
