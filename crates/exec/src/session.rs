//! Small helpers to run SQL over coopscan tables.

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::Result;

/// A DataFusion session with the default configuration (target partitions = cores).
/// Register tables with `ctx.register_table(name, Arc::new(CoopTable::…))`.
pub fn session_context() -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new())
}

/// Plans and runs `sql`, collecting all result batches.
pub async fn run_sql(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}
