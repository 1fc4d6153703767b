//! `INSERT INTO t SELECT …` in a session as a bulk append (2012 paper §2.1, "Bulk
//! Appends"): a statement that reads a table to insert its rows, outside a
//! transaction, writes them as new pages after the table's stable tuples
//! ([`bulk_append`], as `coopscan append` does) rather than as inserts into its
//! Positional Delta Tree, which would hold every row in memory and merge it into every
//! later scan. The session's provider is then replaced by one over the new version
//! (handed to the shared buffer with [`coopscan_runtime::Runtime::append`] for a
//! cooperative table); plans made before keep their snapshot.
//!
//! Left to the tree: `INSERT … VALUES` and other inputs that read no table (a few rows,
//! cheaper as changes than as a new chunk), and every `INSERT` inside a transaction (an
//! appended chunk would be visible to all at once: transaction-local chunks are not
//! built).

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::tree_node::TreeNode;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{DmlStatement, LogicalPlan, WriteOp};
use datafusion::prelude::{DataFrame, SessionContext};

use super::append::bulk_append;
use super::transaction::TransactionSlot;
use crate::error::{ExecError, Result};
use crate::provider::CoopTable;

/// A session extension that makes its `INSERT … SELECT`s bulk appends (`coopscan sql`
/// sets it). Without it every `INSERT` goes to the tree: a caller that keeps its
/// changes apart from the table's files (the benchmark's refresh stream logs them in a
/// temporary directory, `CoopTable::with_log_at`) must not write pages into them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkInserts;

/// The coopscan table `dml` appends to as a bulk append, if it is one: an `INSERT`
/// (not an overwrite) into a coopscan table, its input reading some table, in a
/// session with [`BulkInserts`] and no transaction open.
pub(crate) fn bulk_target(ctx: &SessionContext, dml: &DmlStatement) -> Option<CoopTable> {
    if dml.op != WriteOp::Insert(InsertOp::Append) || !reads_a_table(&dml.input) {
        return None;
    }
    let state = ctx.state();
    let config = state.config();
    let open = config.get_extension::<TransactionSlot>();
    if config.get_extension::<BulkInserts>().is_none() || open.is_some_and(|s| s.is_open()) {
        return None;
    }
    let provider = source_as_provider(&dml.target).ok()?;
    provider.downcast_ref::<CoopTable>().cloned()
}

/// Whether `plan` scans any table (an `INSERT … SELECT … FROM`), rather than only
/// listing values.
fn reads_a_table(plan: &LogicalPlan) -> bool {
    plan.exists(|p| Ok(matches!(p, LogicalPlan::TableScan(_))))
        .unwrap_or(false)
}

/// Runs `dml` (checked read-only on its input by the caller) as a bulk append into
/// `target`, then registers the table's new version in `ctx` under the statement's
/// name: DataFusion's `INSERT` result, the count of rows appended.
pub(crate) async fn bulk_insert(
    ctx: &SessionContext,
    dml: &DmlStatement,
    target: CoopTable,
) -> Result<DataFrame> {
    let input = ctx.execute_logical_plan(dml.input.as_ref().clone()).await?;
    let rows = input.execute_stream().await?;
    // The session's own commits keep the table's log locked between statements; the
    // append takes it (and carries it), so this session lets go of it first and commits
    // nothing meanwhile.
    let mut writer = target.delta().writer().await;
    writer.close_log();
    let done = bulk_append(target.table().clone(), target.device(), rows).await?;
    drop(writer);
    for lost in &done.lost_indexes {
        eprintln!("warning: {}: {lost}", dml.table_name);
    }
    let appended = target.appended()?;
    ctx.deregister_table(dml.table_name.clone())?;
    ctx.register_table(dml.table_name.clone(), Arc::new(appended))?;
    let count = done.rows_after.saturating_sub(done.rows_before);
    let schema = Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]));
    let counted = RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from(vec![count]))]);
    let batch = counted.map_err(|e| ExecError::Invalid(e.to_string()))?;
    Ok(ctx.read_batch(batch)?)
}
