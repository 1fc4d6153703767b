//! INSERT, DELETE and UPDATE on a coopscan table: each statement becomes changes in the
//! table's [`Pdt`] (never a rewrite of stable pages), published whole when it succeeds.
//!
//! A statement holds its table's writer lock from reading the rows it changes until it
//! publishes: the RIDs it found are the RIDs it changes. DELETE and UPDATE find their rows
//! with a scan of the table (changes merged) and DataFusion's own evaluation of the
//! WHERE conjuncts and SET expressions, as `MemTable` does.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use coopscan_delta::log::Op;
use coopscan_delta::{Pdt, Rid};
use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, UInt64Array,
};
use datafusion::arrow::compute::{and, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_datafusion_err, internal_err, plan_err, DFSchema, ScalarValue};
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    collect, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr,
    PlanProperties,
};
use futures::StreamExt;

use super::transaction::TransactionSlot;
use super::{TableDelta, Writer};
use crate::error::external;
use crate::pushdown::ROWID_COLUMN;

/// What every DML statement returns: one row, the number of rows it changed.
fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

fn count_batch(rows: u64) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(
        count_schema(),
        vec![Arc::new(UInt64Array::from(vec![rows]))],
    )?)
}

/// Where `INSERT` writes: appends every row after the table's last one.
#[derive(Debug)]
pub struct DeltaSink {
    pub delta: Arc<TableDelta>,
    /// The provider's schema: the stored columns, then `_rowid` (ignored).
    pub schema: SchemaRef,
}

impl DisplayAs for DeltaSink {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeltaSink: append to the table's delta tree")
    }
}

#[async_trait]
impl DataSink for DeltaSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let stored = self.schema.fields().len().saturating_sub(1);
        let mut rows: Vec<Vec<ScalarValue>> = Vec::new();
        while let Some(batch) = data.next().await {
            let batch = batch?;
            for row in 0..batch.num_rows() {
                rows.push(row_values(&batch, row, stored, &self.schema)?);
            }
        }
        let transaction = open_transaction(context);
        let mut writer = self.delta.writer().await;
        let mut next = starting_tree(&self.delta, transaction.as_deref())?;
        let mut ops = Vec::with_capacity(rows.len());
        for row in rows {
            let op = Op::Insert {
                rid: Rid(next.rows()),
                row,
            };
            op.apply(&mut next).map_err(external)?;
            ops.push(op);
        }
        let count = ops.len() as u64;
        conclude(&self.delta, &mut writer, transaction.as_deref(), next, ops)?;
        Ok(count)
    }
}

/// The session's open transaction, if any.
fn open_transaction(context: &TaskContext) -> Option<Arc<TransactionSlot>> {
    let slot = context.session_config().get_extension::<TransactionSlot>();
    slot.filter(|t| t.is_open())
}

/// The tree a statement starts from: its transaction's copy of the table once the
/// transaction changed it, else the committed tree.
fn starting_tree(
    delta: &Arc<TableDelta>,
    transaction: Option<&TransactionSlot>,
) -> Result<Pdt<ScalarValue>> {
    match transaction.and_then(|t| t.snapshot_of(delta)) {
        Some(own) => Ok(own),
        None => Ok(delta.snapshot()?),
    }
}

/// Ends a statement (holding the table's writer): its changes go to its transaction,
/// or are committed.
fn conclude(
    delta: &Arc<TableDelta>,
    writer: &mut Writer,
    transaction: Option<&TransactionSlot>,
    next: Pdt<ScalarValue>,
    ops: Vec<Op<ScalarValue>>,
) -> Result<()> {
    match transaction {
        Some(t) => Ok(t.record(delta, next, ops)?),
        None => Ok(delta.commit(writer, next, &ops)?),
    }
}

/// The stored columns' values of one inserted row; NULL is refused (stored columns are
/// NOT NULL).
fn row_values(
    batch: &RecordBatch,
    row: usize,
    stored: usize,
    schema: &Schema,
) -> Result<Vec<ScalarValue>> {
    (0..stored)
        .map(|c| {
            let value = ScalarValue::try_from_array(batch.column(c), row)?;
            not_null(value, schema.field(c).name())
        })
        .collect()
}

fn not_null(value: ScalarValue, column: &str) -> Result<ScalarValue> {
    if value.is_null() {
        return Err(DataFusionError::Execution(format!(
            "column {column} cannot be NULL"
        )));
    }
    Ok(value)
}

/// The table a DELETE or UPDATE changes: what it reads and where it commits (the
/// provider, kept behind this trait so that it may build these plans without this module
/// depending on it).
pub trait ChangedTable: fmt::Debug + Send + Sync {
    /// The provider's schema: the stored columns, then `_rowid`.
    fn columns(&self) -> SchemaRef;
    fn changes(&self) -> &Arc<TableDelta>;
    /// Every column and `_rowid` of the committed state now, on one worker, chunks
    /// pruned by `filters` (which the statement still evaluates).
    fn scan_for_change(
        &self,
        filters: &[Expr],
        snapshot: Pdt<ScalarValue>,
    ) -> Result<Arc<dyn ExecutionPlan>>;
}

/// What a DELETE or UPDATE does to the rows its WHERE selects.
#[derive(Debug, Clone)]
enum Action {
    Delete,
    /// Table column and the expression of its new value (cast to the column's type).
    Update(Vec<(usize, Arc<dyn PhysicalExpr>)>),
}

/// A DELETE or UPDATE: runs when executed (so `EXPLAIN` changes nothing), holding the
/// table's writer lock from its scan to its publication; yields the count of rows.
#[derive(Debug)]
pub struct DmlExec {
    statement: Statement,
    properties: Arc<PlanProperties>,
}

/// What a DELETE or UPDATE does, ready to run.
#[derive(Debug, Clone)]
struct Statement {
    table: Arc<dyn ChangedTable>,
    action: Action,
    /// The WHERE conjuncts: as given (they prune the scan's chunks) and over the
    /// provider's schema (they select its rows).
    filters: Vec<Expr>,
    predicates: Vec<Arc<dyn PhysicalExpr>>,
}

impl DmlExec {
    pub fn delete(
        table: Arc<dyn ChangedTable>,
        state: &dyn Session,
        filters: &[Expr],
    ) -> Result<DmlExec> {
        DmlExec::new(table, Action::Delete, state, filters)
    }

    pub fn update(
        table: Arc<dyn ChangedTable>,
        state: &dyn Session,
        assignments: &[(String, Expr)],
        filters: &[Expr],
    ) -> Result<DmlExec> {
        let schema = table.columns();
        let df_schema = DFSchema::try_from(Arc::clone(&schema))?;
        let mut targets = Vec::with_capacity(assignments.len());
        for (name, expr) in assignments {
            if name == ROWID_COLUMN {
                return plan_err!("UPDATE cannot set {ROWID_COLUMN}: it is the row's position");
            }
            let column = schema.index_of(name)?;
            let expr = expr
                .clone()
                .cast_to(schema.field(column).data_type(), &df_schema)?;
            targets.push((column, state.create_physical_expr(expr, &df_schema)?));
        }
        DmlExec::new(table, Action::Update(targets), state, filters)
    }

    fn new(
        table: Arc<dyn ChangedTable>,
        action: Action,
        state: &dyn Session,
        filters: &[Expr],
    ) -> Result<DmlExec> {
        let df_schema = DFSchema::try_from(table.columns())?;
        let predicates = filters
            .iter()
            .map(|f| state.create_physical_expr(f.clone(), &df_schema))
            .collect::<Result<_>>()?;
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        let filters = filters.to_vec();
        let statement = Statement {
            table,
            action,
            filters,
            predicates,
        };
        Ok(DmlExec {
            statement,
            properties,
        })
    }
}

impl Statement {
    /// Finds the rows, changes them on a copy of the committed tree, commits it.
    async fn run(self, context: Arc<TaskContext>) -> Result<RecordBatch> {
        let Statement {
            table,
            action,
            filters,
            predicates,
        } = self;
        let delta = Arc::clone(table.changes());
        let transaction = open_transaction(&context);
        let mut writer = delta.writer().await;
        let mut next = starting_tree(&delta, transaction.as_deref())?;
        let plan = table.scan_for_change(&filters, next.clone())?;
        let mut ops = Vec::new();
        let mut rows = 0u64;
        for batch in collect(plan, context).await? {
            let batch = selected(&batch, &predicates)?;
            match &action {
                Action::Delete => {
                    ops.extend(rids(&batch)?.into_iter().map(|rid| Op::Delete { rid }))
                }
                Action::Update(targets) => update_ops(&mut ops, &batch, targets, &table.columns())?,
            }
            rows += batch.num_rows() as u64;
        }
        // Deletes from the last row back: a delete moves only the RIDs after it.
        ops.sort_by_key(|op| std::cmp::Reverse(op_rid(op)));
        for op in &ops {
            op.apply(&mut next).map_err(external)?;
        }
        conclude(&delta, &mut writer, transaction.as_deref(), next, ops)?;
        count_batch(rows)
    }
}

impl DisplayAs for DmlExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.statement.action {
            Action::Delete => "DELETE",
            Action::Update(_) => "UPDATE",
        };
        write!(
            f,
            "DmlExec: {what} where {} conditions",
            self.statement.predicates.len()
        )
    }
}

impl ExecutionPlan for DmlExec {
    fn name(&self) -> &str {
        "DmlExec"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            internal_err!("DmlExec has no children")
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("DmlExec has one partition, not {partition}");
        }
        let run = self.statement.clone().run(context);
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            count_schema(),
            futures::stream::once(run),
        )))
    }
}

/// The rows of `batch` for which every predicate is true (NULL counts as false, SQL's
/// three-valued logic).
fn selected(batch: &RecordBatch, predicates: &[Arc<dyn PhysicalExpr>]) -> Result<RecordBatch> {
    let mut mask: Option<BooleanArray> = None;
    for predicate in predicates {
        let values = predicate.evaluate(batch)?.into_array(batch.num_rows())?;
        let Some(values) = values.as_any().downcast_ref::<BooleanArray>().cloned() else {
            return plan_err!("a WHERE condition that is not boolean");
        };
        mask = Some(match mask {
            Some(m) => and(&m, &values)?,
            None => values,
        });
    }
    match mask {
        Some(m) => Ok(filter_record_batch(batch, &m)?),
        None => Ok(batch.clone()),
    }
}

fn rids(batch: &RecordBatch) -> Result<Vec<Rid>> {
    let Some(column) = batch.column_by_name(ROWID_COLUMN) else {
        return internal_err!("a full scan without {ROWID_COLUMN}");
    };
    let Some(ids) = column.as_any().downcast_ref::<Int64Array>() else {
        return internal_err!("{ROWID_COLUMN} is not Int64");
    };
    ids.values()
        .iter()
        .map(|&id| {
            u64::try_from(id)
                .map(Rid)
                .map_err(|_| internal_datafusion_err!("negative {ROWID_COLUMN}"))
        })
        .collect()
}

/// The modifications giving every row of `batch` its new values (`targets` evaluated
/// on it).
fn update_ops(
    ops: &mut Vec<Op<ScalarValue>>,
    batch: &RecordBatch,
    targets: &[(usize, Arc<dyn PhysicalExpr>)],
    schema: &Schema,
) -> Result<()> {
    let values: Vec<ArrayRef> = targets
        .iter()
        .map(|(_, e)| e.evaluate(batch)?.into_array(batch.num_rows()))
        .collect::<Result<_>>()?;
    for (row, rid) in rids(batch)?.into_iter().enumerate() {
        let mut changes = Vec::with_capacity(targets.len());
        for ((column, _), array) in targets.iter().zip(&values) {
            let value = ScalarValue::try_from_array(array, row)?;
            changes.push((*column, not_null(value, schema.field(*column).name())?));
        }
        ops.push(Op::Modify {
            rid,
            values: changes,
        });
    }
    Ok(())
}

fn op_rid<T>(op: &Op<T>) -> Rid {
    match op {
        Op::Insert { rid, .. } | Op::Delete { rid } | Op::Modify { rid, .. } => *rid,
    }
}
