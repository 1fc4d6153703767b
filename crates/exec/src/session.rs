//! Small helpers to run SQL over coopscan tables.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::Result;
use crate::feed::FeedPacing;

/// A DataFusion session with the default configuration (target partitions = cores).
/// Register tables with `ctx.register_table(name, Arc::new(CoopTable::…))`.
pub fn session_context() -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new())
}

/// The configuration of a session whose queries may use `threads` cores: DataFusion
/// plans `threads` partitions. With one, the scans also take turns with the operators
/// ([`FeedPacing::Alternate`]), so a query keeps one core busy, decoding included: the
/// 2007 paper's execution model, where each query ran on one CPU. `0` counts as 1.
pub fn query_session_config(threads: usize) -> SessionConfig {
    let config = SessionConfig::new().with_target_partitions(threads.max(1));
    if threads <= 1 {
        config.with_extension(Arc::new(FeedPacing::Alternate))
    } else {
        config
    }
}

/// Plans and runs `sql`, collecting all result batches.
pub async fn run_sql(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}
