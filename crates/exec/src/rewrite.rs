//! Two statements planned as a coopscan session means them, rewritten before DataFusion
//! plans them:
//! - `INSERT INTO t VALUES (…)` without a column list names every column of `t`, and a
//!   coopscan table has the virtual `_rowid` beside its stored columns, which no INSERT
//!   gives (DataFusion would answer "Column count doesn't match insert query!"): for a
//!   coopscan table it is planned as if it listed the stored columns;
//!   a source that yields the stored columns and then `_rowid` — `INSERT INTO t SELECT *
//!   FROM t` — lists `_rowid` too, whose value an INSERT ignores (the row's position is
//!   where it lands);
//! - `BEGIN` (DataFusion plans only `START TRANSACTION`) is planned as that.

use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Ident, ObjectName, Query, Statement, TableObject};

use crate::provider::CoopTable;
use crate::pushdown::ROWID_COLUMN;

/// The logical plan of `sql`, rewritten as the module says.
pub async fn plan_statement(ctx: &SessionContext, sql: &str) -> Result<LogicalPlan> {
    let state = ctx.state();
    let dialect = state.config().options().sql_parser.dialect;
    let mut statement = state.sql_to_statement(sql, &dialect)?;
    if let DfStatement::Statement(inner) = &mut statement {
        match inner.as_mut() {
            Statement::Insert(insert) if insert.columns.is_empty() => {
                if let TableObject::TableName(name) = &insert.table {
                    let mut columns = stored_columns(ctx, name).await.unwrap_or_default();
                    let source = insert.source.as_deref();
                    if !columns.is_empty() && ends_with_rowid(ctx, source, columns.len()).await {
                        columns.push(ObjectName::from(vec![Ident::new(ROWID_COLUMN)]));
                    }
                    insert.columns = columns;
                }
            }
            Statement::StartTransaction { begin, .. } => *begin = false,
            _ => {}
        }
    }
    state.statement_to_plan(statement).await
}

/// Whether `source` yields `stored` columns and then `_rowid` (a `SELECT *` of a
/// coopscan table): planned alone for its schema; a source that does not plan is left
/// for the INSERT's own planning to report.
async fn ends_with_rowid(ctx: &SessionContext, source: Option<&Query>, stored: usize) -> bool {
    let Some(source) = source else {
        return false;
    };
    let query = DfStatement::Statement(Box::new(Statement::Query(Box::new(source.clone()))));
    let Ok(plan) = ctx.state().statement_to_plan(query).await else {
        return false;
    };
    let fields = plan.schema().fields();
    fields.len() == stored + 1 && fields.last().is_some_and(|f| f.name() == ROWID_COLUMN)
}

/// The stored columns of table `name` if it is a coopscan table, quoted as they are named.
async fn stored_columns(ctx: &SessionContext, name: &ObjectName) -> Option<Vec<ObjectName>> {
    let provider = ctx.table_provider(name.to_string()).await.ok()?;
    let table = provider.downcast_ref::<CoopTable>()?;
    let columns = table.table().schema().columns.iter();
    Some(
        columns
            .map(|c| ObjectName::from(vec![Ident::with_quote('"', c.name.clone())]))
            .collect(),
    )
}
