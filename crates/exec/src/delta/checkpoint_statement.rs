//! `CHECKPOINT [table]` in a session (`coopscan sql`): each coopscan table's committed
//! changes merged into a new stable image ([`checkpoint`]), and the session's provider
//! replaced by one over that image ([`CoopTable::checkpointed`]: in the shared buffer a
//! version of its own, the 2012 paper's case (iv)). Plans made before keep reading the
//! old image with its changes, and the shared buffer keeps the old version for them
//! until they are gone. DataFusion's parser knows no `CHECKPOINT`, so the statement is
//! recognized before planning (as `CREATE INDEX` is).

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::{DataFrame, SessionContext};

use super::checkpoint::checkpoint;
use super::transaction::TransactionSlot;
use crate::error::{ExecError, Result};
use crate::provider::CoopTable;

const KEYWORD: &str = "checkpoint";

/// Whether `sql` is a `CHECKPOINT` statement: `Some(None)` for every coopscan table of
/// the session's default schema, `Some(Some(name))` for one, the name as written (the
/// session resolves it as any table reference: unquoted in lower case, quoted as is);
/// `None` for any other statement.
pub(crate) fn checkpoint_statement(sql: &str) -> Option<Option<String>> {
    let statement = sql.trim().trim_end_matches(';');
    let words: Vec<&str> = statement.split_whitespace().collect();
    match words.as_slice() {
        [word] if word.eq_ignore_ascii_case(KEYWORD) => Some(None),
        [word, name] if word.eq_ignore_ascii_case(KEYWORD) => Some(Some(name.to_string())),
        _ => None,
    }
}

/// Checkpoints table `name` (every coopscan table of the default schema if `None`) and
/// registers its new image under the same name. The result: one row per table, with
/// the changes merged and its rows after.
pub(crate) async fn run_checkpoint(ctx: &SessionContext, name: Option<&str>) -> Result<DataFrame> {
    let state = ctx.state();
    let slot = state.config().get_extension::<TransactionSlot>();
    if slot.is_some_and(|s| s.is_open()) {
        let why = "CHECKPOINT inside a transaction: COMMIT or ROLLBACK first";
        return Err(ExecError::Invalid(why.into()));
    }
    let names = match name {
        Some(name) => vec![name.to_string()],
        None => default_schema_tables(ctx).await,
    };
    let (mut tables, mut changes, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    for name in names {
        let provider = ctx.table_provider(name.as_str()).await?;
        let Some(coop) = provider.downcast_ref::<CoopTable>() else {
            let why = format!("CHECKPOINT: {name} is not a coopscan table");
            return Err(ExecError::Invalid(why));
        };
        let merged = checkpoint_one(ctx, &name, coop).await?;
        tables.push(name);
        changes.push(merged.0);
        rows.push(merged.1);
    }
    let schema = Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("changes", DataType::UInt64, false),
        Field::new("rows", DataType::UInt64, false),
    ]);
    let columns = vec![
        Arc::new(StringArray::from(tables)) as _,
        Arc::new(UInt64Array::from(changes)) as _,
        Arc::new(UInt64Array::from(rows)) as _,
    ];
    let batch = RecordBatch::try_new(Arc::new(schema), columns)
        .map_err(|e| ExecError::Invalid(e.to_string()))?;
    Ok(ctx.read_batch(batch)?)
}

/// Checkpoints `coop`, registered as `name`: its changes merged and its rows after.
async fn checkpoint_one(ctx: &SessionContext, name: &str, coop: &CoopTable) -> Result<(u64, u64)> {
    // The session's own commits keep the log locked between statements; the
    // checkpoint takes it, so this session lets go of it first and commits nothing
    // meanwhile (as a bulk insert does).
    let mut writer = coop.delta().writer().await;
    writer.close_log();
    let done = checkpoint(coop.table().clone(), coop.device()).await?;
    drop(writer);
    for lost in &done.lost_indexes {
        eprintln!("warning: {name}: {lost}");
    }
    if done.changes > 0 {
        let new = coop.checkpointed()?;
        ctx.deregister_table(name)?;
        ctx.register_table(name, Arc::new(new))?;
    }
    Ok((done.changes as u64, done.rows_after))
}

/// The coopscan tables of the session's default catalog and schema, by name.
async fn default_schema_tables(ctx: &SessionContext) -> Vec<String> {
    let options = ctx.state().config_options().catalog.clone();
    let schema = ctx
        .catalog(&options.default_catalog)
        .and_then(|c| c.schema(&options.default_schema));
    let Some(schema) = schema else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for name in schema.table_names() {
        if let Ok(Some(table)) = schema.table(&name).await {
            if table.downcast_ref::<CoopTable>().is_some() {
                names.push(name);
            }
        }
    }
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::checkpoint_statement;

    #[test]
    fn checkpoint_statements_are_told_from_others() {
        assert_eq!(checkpoint_statement("CHECKPOINT"), Some(None));
        assert_eq!(checkpoint_statement("  checkpoint ; "), Some(None));
        let one = Some(Some("lineitem".to_string()));
        assert_eq!(checkpoint_statement("Checkpoint lineitem;"), one);
        let quoted = Some(Some("\"LineItem\"".to_string()));
        assert_eq!(checkpoint_statement("CHECKPOINT \"LineItem\""), quoted);
        assert_eq!(checkpoint_statement("SELECT checkpoint FROM t"), None);
        assert_eq!(checkpoint_statement("CHECKPOINT a b"), None);
        assert_eq!(checkpoint_statement("checkpoints"), None);
    }
}
