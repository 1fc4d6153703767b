//! Small helpers to run SQL over coopscan tables.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::Result;
use crate::feed::FeedPacing;
use crate::narrow_decimal::NarrowDecimals;

/// A DataFusion session with the default configuration (target partitions = cores).
/// Register tables with `ctx.register_table(name, Arc::new(CoopTable::…))`.
pub fn session_context() -> SessionContext {
    query_session(SessionConfig::new())
}

/// A session with `config`, DataFusion's default rules and ours: decimal arithmetic in
/// 64 bits where the values fit ([`NarrowDecimals`]). Every coopscan session is made
/// here; the tests' in-memory reference is plain DataFusion.
pub fn query_session(config: SessionConfig) -> SessionContext {
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(NarrowDecimals))
        .build();
    SessionContext::new_with_state(state)
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
