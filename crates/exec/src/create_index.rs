//! `CREATE INDEX [name] ON table (column)`: builds the secondary index of one integer,
//! date or decimal column of a coopscan table (`coopscan_storage::index`), which the
//! table's scans may use from then on (`IndexScanExec`). DataFusion plans no index
//! statements, so a session recognizes this one before planning. The index's name is
//! accepted and ignored: a column has at most one index, named by the column.

use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{CreateIndex, Expr, Statement};

use crate::error::{ExecError, Result};
use crate::provider::CoopTable;

/// The `CREATE INDEX` statement `sql` is, if it is one (`None`: another statement, or
/// one that does not parse, left for the planner to report).
pub fn create_index_statement(ctx: &SessionContext, sql: &str) -> Option<CreateIndex> {
    let state = ctx.state();
    let dialect = state.config().options().sql_parser.dialect;
    match state.sql_to_statement(sql, &dialect).ok()? {
        DfStatement::Statement(inner) => match *inner {
            Statement::CreateIndex(create) => Some(create),
            _ => None,
        },
        _ => None,
    }
}

/// Builds the index `create` asks for; what is refused says why.
pub async fn create_index(ctx: &SessionContext, create: &CreateIndex) -> Result<()> {
    let refuse = |why: String| Err(ExecError::Invalid(format!("CREATE INDEX: {why}")));
    if create.unique
        || create.concurrently
        || create.predicate.is_some()
        || !create.include.is_empty()
    {
        return refuse("only a plain index of one column is supported".into());
    }
    let [column] = create.columns.as_slice() else {
        return refuse(format!(
            "{} columns: an index has exactly one",
            create.columns.len()
        ));
    };
    let Expr::Identifier(name) = &column.column.expr else {
        return refuse(format!(
            "{}: only a column can be indexed",
            column.column.expr
        ));
    };
    let table = create.table_name.to_string();
    let provider = ctx.table_provider(table.as_str()).await?;
    let Some(coop) = provider.downcast_ref::<CoopTable>() else {
        return refuse(format!("{table} is not a coopscan table"));
    };
    let schema = coop.table().schema();
    let Some(c) = schema.columns.iter().position(|c| c.name == name.value) else {
        return refuse(format!("{table} has no stored column {}", name.value));
    };
    if create.if_not_exists && coop.indexed_columns().contains(&c) {
        return Ok(());
    }
    let built = tokio::task::spawn_blocking({
        let coop = coop.clone();
        move || coop.create_index(c)
    });
    built
        .await
        .map_err(|e| ExecError::Invalid(format!("CREATE INDEX: {e}")))?
}
