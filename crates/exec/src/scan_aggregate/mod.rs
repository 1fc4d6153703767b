//! Aggregation pushed into the cooperative scan.
//!
//! [`ScanAggregates`] is a physical optimizer rule. Where an aggregation (`GROUP BY`
//! stored columns; `count`, `sum` and `avg` of decimal arithmetic) reads a CScan of a
//! table without changes through nothing but projections, one filter of comparisons
//! and DataFusion's cooperative wrapper, the scan does the partial aggregation itself:
//! each worker counts and sums the tuples of every chunk it is handed, straight from
//! the decoded stored integers (`coopscan_storage::aggregate`), and emits a batch of
//! partial states at its end (and whenever it holds more than `flush_groups` groups); DataFusion's final aggregation merges the workers'
//! states and computes the results. The filter is evaluated by the scan too, whatever
//! share of the tuples it passes, since no batch is built that it would save copying.
//!
//! TPC-H Q1 spent about half its CPU above the scan (grouping two `CHAR(1)` columns
//! through DataFusion's row-wise group values, filtering and copying 98.6 % of the
//! tuples, widening decimals to 128 bits): docs/performance.md has the measurements.
//! DuckDB, the peer, runs Q1 in a fifth of coopscan's CPU.

mod translate;

use std::sync::Arc;

use coopscan_storage::aggregate::{AggregateSpec, ValueExpr};
use coopscan_storage::filter::RowFilter;
use coopscan_storage::zonemap::Zonemap;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, Statistics};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;

pub use crate::partial_states::{ScanAggregation, StateColumn, FLUSH_GROUPS};
use translate::{substitute, ScanColumns};

use crate::cscan_exec::CScanExec;
use crate::partial_states;
use crate::plan_common::ScanCore;
use crate::shape::{FilterAt, OutputShape};

/// The rule; [`crate::query_session`] adds it (with the default limit).
#[derive(Debug, Clone, Copy)]
pub struct ScanAggregates {
    /// A worker holding more groups than this sends them and starts afresh
    /// ([`FLUSH_GROUPS`] by default; smaller only to test the flushes).
    pub flush_groups: usize,
}

impl Default for ScanAggregates {
    fn default() -> Self {
        ScanAggregates {
            flush_groups: FLUSH_GROUPS,
        }
    }
}

impl PhysicalOptimizerRule for ScanAggregates {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            Ok(match pushed_down(&node, self.flush_groups)? {
                Some(plan) => Transformed::yes(plan),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "scan_aggregates"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The plan that replaces `node` when it is an aggregation the scan below can do.
fn pushed_down(
    node: &Arc<dyn ExecutionPlan>,
    flush_groups: usize,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    let mode = *aggregate.mode();
    let partial = match mode {
        AggregateMode::Partial => true,
        AggregateMode::Single | AggregateMode::SinglePartitioned => false,
        AggregateMode::Final | AggregateMode::FinalPartitioned | AggregateMode::PartialReduce => {
            return Ok(None)
        }
    };
    let group_by = aggregate.group_expr();
    if group_by.has_grouping_set()
        || !group_by.null_expr().is_empty()
        || aggregate.filter_expr().iter().any(Option::is_some)
        || aggregate.limit_options().is_some()
    {
        return Ok(None);
    }
    let Some(chain) = Chain::below(aggregate.input()) else {
        return Ok(None);
    };
    let Some((aggregation, shape)) = chain.aggregation(aggregate, flush_groups)? else {
        return Ok(None);
    };
    let core = ScanCore {
        shape,
        statistics: Arc::new(Statistics::new_unknown(&aggregation.schema)),
        aggregate: Some(Arc::new(aggregation)),
        ..chain.scan.core().clone()
    };
    let mut leaf: Arc<dyn ExecutionPlan> =
        Arc::new(CScanExec::new(core, Arc::clone(chain.scan.source())));
    if chain.cooperative {
        leaf = Arc::new(CooperativeExec::new(leaf));
    }
    if partial {
        return Ok(Some(leaf));
    }
    if leaf.properties().partitioning.partition_count() > 1 {
        leaf = Arc::new(CoalescePartitionsExec::new(leaf));
    }
    let final_aggregate = AggregateExec::try_new(
        AggregateMode::Final,
        group_by.as_final(),
        aggregate.aggr_expr().to_vec(),
        aggregate.filter_expr().to_vec(),
        leaf,
        aggregate.input_schema(),
    )?;
    Ok(Some(Arc::new(final_aggregate)))
}

/// The nodes between an aggregation and its CScan, top down.
struct Chain<'a> {
    layers: Vec<&'a dyn ExecutionPlan>,
    /// The filter's predicate over the scan's output, once resolved.
    filter: Option<Arc<dyn PhysicalExpr>>,
    cooperative: bool,
    scan: &'a CScanExec,
}

impl<'a> Chain<'a> {
    /// Projections, at most one filter and the cooperative wrapper down to a CScan of a
    /// table without changes, with no runtime filters and no aggregation yet.
    fn below(input: &'a Arc<dyn ExecutionPlan>) -> Option<Chain<'a>> {
        let mut layers: Vec<&dyn ExecutionPlan> = Vec::new();
        let mut node = input;
        let mut filter_at = None;
        let mut cooperative = false;
        let scan = loop {
            if let Some(scan) = node.downcast_ref::<CScanExec>() {
                break scan;
            }
            if let Some(p) = node.downcast_ref::<ProjectionExec>() {
                layers.push(p);
                node = p.input();
            } else if let Some(f) = node.downcast_ref::<FilterExec>() {
                // A filter that also stops after some rows (DataFusion's limit pushdown
                // puts a LIMIT there) passes fewer tuples than its predicate does.
                if filter_at.is_some() || f.fetch().is_some() {
                    return None;
                }
                filter_at = Some(layers.len());
                layers.push(f);
                node = f.input();
            } else if let Some(c) = node.downcast_ref::<CooperativeExec>() {
                cooperative = true;
                node = c.input();
            } else {
                return None;
            }
        };
        let core = scan.core();
        if core.delta.is_some() || core.aggregate.is_some() || scan.has_runtime_filters() {
            return None;
        }
        let mut chain = Chain {
            layers,
            filter: None,
            cooperative,
            scan,
        };
        if let Some(at) = filter_at {
            let f = chain.layers[at].downcast_ref::<FilterExec>()?;
            chain.filter = Some(chain.resolve_from(f.predicate(), at + 1)?);
        }
        Some(chain)
    }

    /// `expr` over the output of layer `from` (the aggregation's input for 0) as an
    /// expression over the scan's output.
    fn resolve_from(
        &self,
        expr: &Arc<dyn PhysicalExpr>,
        from: usize,
    ) -> Option<Arc<dyn PhysicalExpr>> {
        let mut expr = Arc::clone(expr);
        for layer in &self.layers[from..] {
            expr = if let Some(p) = layer.downcast_ref::<ProjectionExec>() {
                let exprs = p.expr();
                substitute(&expr, &|i| exprs.get(i).map(|e| Arc::clone(&e.expr)))?
            } else if let Some(f) = layer.downcast_ref::<FilterExec>() {
                match f.projection() {
                    Some(projection) => {
                        let input = f.input().schema();
                        substitute(&expr, &|i| {
                            let at = *projection.get(i)?;
                            let name = input.fields().get(at)?.name();
                            Some(Arc::new(Column::new(name, at)) as Arc<dyn PhysicalExpr>)
                        })?
                    }
                    None => expr,
                }
            } else {
                return None;
            };
        }
        Some(expr)
    }

    /// What the scan computes for `aggregate`, and the shape it decodes, if it can.
    fn aggregation(
        &self,
        aggregate: &AggregateExec,
        flush_groups: usize,
    ) -> Result<Option<(ScanAggregation, OutputShape)>> {
        let core = self.scan.core();
        let pooled = &self.scan.source().pooled;
        let Some(table) = pooled.runtime.table_at(pooled.table) else {
            return Ok(None);
        };
        let table_schema = table.schema();
        let scan_schema = core.shape.schema.as_ref();
        let stored = (scan_schema.fields().iter().enumerate())
            .map(|(i, f)| {
                let c = *core.shape.storage_projection.get(i)?;
                (table_schema.columns.get(c)?.name == *f.name()).then_some(c)
            })
            .collect();
        let scan = ScanColumns {
            schema: scan_schema,
            stored,
            table: table_schema,
        };
        let resolve = |e: &Arc<dyn PhysicalExpr>| self.resolve_from(e, 0);
        let mut groups = Vec::new();
        for (expr, _) in aggregate.group_expr().expr() {
            match resolve(expr).and_then(|e| scan.stored_column(&e)) {
                Some(c) => groups.push(c),
                None => return Ok(None),
            }
        }
        let mut values: Vec<ValueExpr> = Vec::new();
        let mut value_of = |v: ValueExpr| match values.iter().position(|x| *x == v) {
            Some(i) => i,
            None => {
                values.push(v);
                values.len() - 1
            }
        };
        let mut states = Vec::new();
        for function in aggregate.aggr_expr() {
            let args = function
                .expressions()
                .iter()
                .map(resolve)
                .collect::<Option<Vec<_>>>();
            let found =
                args.and_then(|args| translate::states(function, &args, &scan, &mut value_of));
            match found {
                Some(s) => states.extend(s),
                None => return Ok(None),
            }
        }
        if estimated_groups(&table, &groups).is_none_or(|g| g > MAX_GROUPS) {
            return Ok(None);
        }
        let Some(filter) = self.row_filter(&scan) else {
            return Ok(None);
        };
        let spec = AggregateSpec { groups, values };
        let partial = AggregateExec::try_new(
            AggregateMode::Partial,
            aggregate.group_expr().clone(),
            aggregate.aggr_expr().to_vec(),
            aggregate.filter_expr().to_vec(),
            Arc::clone(aggregate.input()),
            aggregate.input_schema(),
        )?;
        let schema = partial.schema();
        let mut expected = (spec.groups.iter()).map(|&c| table_schema.columns[c].ty.arrow_type());
        let mut expected: Vec<_> = expected.by_ref().collect();
        expected.extend(states.iter().map(|&s| partial_states::state_type(s)));
        let types: Vec<_> = schema
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        if types != expected || spec.check(table_schema).is_err() {
            return Ok(None);
        }
        let mut columns = spec.columns();
        let shown = table_schema.arrow_projection(&columns);
        let mut shape = OutputShape::new(shown, &columns, table_schema.columns.len());
        let text = describe(&spec, &states, table_schema);
        if !filter.is_empty() {
            shape = shape.with_filter(
                filter.clone(),
                FilterAt::Decoding,
                filter.describe(table_schema),
            );
        }
        columns = shape.storage_projection.clone();
        let aggregation = ScanAggregation {
            spec,
            filter,
            columns,
            schema,
            states,
            table: table_schema.clone(),
            text,
            flush_groups: flush_groups.max(1),
        };
        Ok(Some((aggregation, shape)))
    }

    /// The scan's own comparisons and the absorbed filter's, as one filter (empty when
    /// there are none); `None` if the filter has a conjunct the scan cannot evaluate.
    fn row_filter(&self, scan: &ScanColumns<'_>) -> Option<RowFilter> {
        let own = self.scan.core().shape.decoding_filter();
        let mut comparisons = own.map(|f| f.conjuncts().to_vec()).unwrap_or_default();
        let mut strings = own.map(|f| f.strings().to_vec()).unwrap_or_default();
        if let Some(predicate) = &self.filter {
            let (c, s) = scan.filter(predicate)?;
            comparisons.extend(c);
            strings.extend(s);
        }
        RowFilter::new(scan.table, comparisons)
            .and_then(|f| f.with_strings(scan.table, strings))
            .ok()
    }
}

/// The most groups an aggregation known to have more of is left to DataFusion. Each
/// worker sends one row a group, which DataFusion's final aggregation hashes again:
/// with TPC-H Q18's 1.5 M orders the scan's grouping and that second pass took 1.3×
/// DataFusion's one pass (docs/performance.md); with Q1's four groups the second pass
/// is free.
pub const MAX_GROUPS: u64 = 1 << 16;

/// The most groups `columns` can form in `table`: the product of each integer, date or
/// decimal column's zonemap range (`None`: unknown, for a column without zonemaps). A
/// string column's groups are unknown to zonemaps and not counted.
fn estimated_groups(table: &coopscan_storage::Table, columns: &[usize]) -> Option<u64> {
    let mut product = 1u64;
    for &c in columns {
        if matches!(
            table.schema().columns.get(c)?.ty,
            coopscan_storage::ColumnType::Char { .. } | coopscan_storage::ColumnType::Utf8
        ) {
            continue;
        }
        let mut range: Option<(i64, i64)> = None;
        for k in 0..table.chunk_count() {
            let Some(Zonemap::Int { min, max }) = &table.chunk(k).columns[c].zonemap else {
                return None;
            };
            range = Some(range.map_or((*min, *max), |(lo, hi)| (lo.min(*min), hi.max(*max))));
        }
        let (lo, hi) = range.unwrap_or((0, 0));
        let values = u64::try_from(i128::from(hi) - i128::from(lo) + 1).ok()?;
        product = product.checked_mul(values)?;
    }
    Some(product)
}

/// `EXPLAIN`'s words for what the scan aggregates.
fn describe(
    spec: &AggregateSpec,
    states: &[StateColumn],
    table: &coopscan_storage::TableSchema,
) -> String {
    let groups: Vec<&str> = (spec.groups.iter())
        .map(|&c| table.columns[c].name.as_str())
        .collect();
    format!(
        "aggregate=[groups=[{}], sums={}, states={}]",
        groups.join(", "),
        spec.values.len(),
        states.len()
    )
}
