//! Small helpers to run SQL over coopscan tables.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::config::OptimizerOptions;
use datafusion::datasource::source_as_provider;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SQLOptions;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{
    AggregateUDF, DmlStatement, LogicalPlan, Statement, TransactionConclusion, WriteOp,
};
use datafusion::physical_optimizer::join_selection::JoinSelection;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};

use crate::checked_arithmetic::CheckedArithmetic;
use crate::checked_sum::CheckedSum;
use crate::create_index::{create_index, create_index_statement};
use crate::delta::bulk_insert::{bulk_insert, bulk_target};
use crate::delta::checkpoint_statement::{checkpoint_statement, run_checkpoint};
use crate::delta::transaction::TransactionSlot;
use crate::delta::TableDelta;
use crate::error::{ExecError, Result};
use crate::feed::FeedPacing;
use crate::join_sides::JoinSides;
use crate::like_segments::LikeSegments;
use crate::narrow_decimal::NarrowDecimals;
use crate::provider::CoopTable;
use crate::rewrite::plan_statement;
use crate::scan_aggregate::ScanAggregates;
use crate::semi_join_pushdown::PushSemiJoins;

/// A DataFusion session with the default configuration (target partitions = cores).
/// Register tables with `ctx.register_table(name, Arc::new(CoopTable::…))`.
pub fn session_context() -> SessionContext {
    query_session(SessionConfig::new())
}

/// A session with `config`, DataFusion's default rules and ours: semi joins against an
/// aggregation's keys moved below the joins above their table ([`PushSemiJoins`]), hash
/// joins built on their smaller input where DataFusion misjudges a join's size
/// ([`JoinSides`]), integer arithmetic
/// and integer `sum` that fail on overflow instead of wrapping ([`CheckedArithmetic`],
/// [`CheckedSum`]), aggregations done by the cooperative scans below them
/// ([`ScanAggregates`]), then decimal arithmetic in 64 bits where the values fit
/// ([`NarrowDecimals`]). Every coopscan session is made here; the tests' in-memory
/// reference is plain DataFusion.
pub fn query_session(config: SessionConfig) -> SessionContext {
    // Its own transaction slot: `BEGIN` … `COMMIT` of this session (`plan_read_or_change`).
    let config = config.with_extension(Arc::new(TransactionSlot::default()));
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_optimizer_rule(Arc::new(PushSemiJoins))
        .with_physical_optimizer_rules(physical_rules())
        .build();
    let ctx = SessionContext::new_with_state(state);
    // Under the built-in's name, so SQL's `sum` is this one.
    ctx.register_udaf(AggregateUDF::from(CheckedSum::default()));
    ctx
}

/// DataFusion's physical optimizer rules with ours: [`JoinSides`] right after
/// `JoinSelection`, whose choice it revisits (before any repartitioning is planned);
/// the rest last, on the finished plan.
fn physical_rules() -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    let mut rules = PhysicalOptimizer::new().rules;
    let selection = JoinSelection::new();
    let after = (rules.iter())
        .position(|r| r.name() == selection.name())
        .map_or(rules.len(), |i| i + 1);
    rules.insert(after, Arc::new(JoinSides));
    rules.push(Arc::new(CheckedArithmetic));
    rules.push(Arc::new(ScanAggregates::default()));
    rules.push(Arc::new(NarrowDecimals));
    rules.push(Arc::new(LikeSegments));
    rules
}

/// The configuration of a session whose queries may use `threads` cores: DataFusion
/// plans `threads` partitions. With one, the scans also take turns with the operators
/// ([`FeedPacing::Alternate`]), so a query keeps one core busy, decoding included: the
/// 2007 paper's execution model, where each query ran on one CPU. `0` counts as 1.
/// Hash joins are built on one partition up to larger inputs than DataFusion's
/// defaults ([`COLLECT_LEFT_ROWS_ALL_CORES`]).
pub fn query_session_config(threads: usize) -> SessionConfig {
    let mut config = SessionConfig::new().with_target_partitions(threads.max(1));
    few_core_joins(&mut config.options_mut().optimizer, threads.max(1));
    if threads <= 1 {
        config.with_extension(Arc::new(FeedPacing::Alternate))
    } else {
        config
    }
}

/// The build input of a hash join is built whole, once, and probed by every partition
/// (`CollectLeft`) when DataFusion estimates it under these tuples or bytes, per core
/// of the session: past them both inputs are hash-repartitioned and each partition
/// builds its share. Repartitioning hashes and copies every tuple of both inputs —
/// TPC-H's 6 M lineitem tuples on the probe side of Q5, Q7, Q9 — which on few cores
/// costs more than building on one core saves: the 22 queries at SF1 on 2 cores took
/// 0.84-0.97 × the CPU-seconds with 4 M tuples / 64 MB against DataFusion's 128 Ki / 1 MiB
/// (docs/performance.md). On more cores the one-core build weighs more, so the limits
/// shrink with the cores, never below DataFusion's.
const COLLECT_LEFT_ROWS_ALL_CORES: usize = 8_000_000;
const COLLECT_LEFT_BYTES_ALL_CORES: usize = 128 << 20;

/// `optimizer`, holding DataFusion's defaults, set for a session of `threads` cores:
/// - build inputs of up to [`COLLECT_LEFT_ROWS_ALL_CORES`] tuples or
///   [`COLLECT_LEFT_BYTES_ALL_CORES`] bytes shared among the cores built on one
///   partition, never less than DataFusion's limits;
/// - the most distinct keys such a join hands its probe side's scans as an IN list
///   (past it, a lookup in its hash table, which the scans skip as costly:
///   `runtime_filter`): DataFusion's limit per partition times the cores, the keys a
///   partitioned join of the same input would hand over in all its partitions together
///   (`runtime_filter::unrouted` applies those as one list). TPC-H Q17's semi join has
///   204 keys: one list on 2 cores, as when it was partitioned.
fn few_core_joins(optimizer: &mut OptimizerOptions, threads: usize) {
    let rows = &mut optimizer.hash_join_single_partition_threshold_rows;
    *rows = (COLLECT_LEFT_ROWS_ALL_CORES / threads).max(*rows);
    let bytes = &mut optimizer.hash_join_single_partition_threshold;
    *bytes = (COLLECT_LEFT_BYTES_ALL_CORES / threads).max(*bytes);
    let keys = &mut optimizer.hash_join_inlist_pushdown_max_distinct_values;
    *keys = keys.saturating_mul(threads);
}

/// What SQL may do in a coopscan session: read the tables registered with it, nothing
/// else. No DDL (`CREATE EXTERNAL TABLE` reads any file the process can: it printed
/// `/etc/shadow` as root; `CREATE VIEW`, `DROP`), no DML (`COPY … TO` writes any path
/// the process can, `INSERT`), no statements (`SET` would change the execution model
/// the benchmark's numbers rest on, `PREPARE`). DataFusion checks these on the logical
/// plan, subqueries and `EXPLAIN`'s input included (`SQLOptions::verify_plan`).
pub fn read_only_sql_options() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// Plans `sql` for `ctx` if it only reads ([`read_only_sql_options`]): every user's SQL
/// goes through here (`coopscan sql`, [`run_sql`]). These are the steps of
/// DataFusion's `SessionContext::sql_with_options` (datafusion 55.2,
/// `execution/context/mod.rs`), split so that a refusal is its own error,
/// [`ExecError::ReadOnly`], rather than one more planning error.
pub async fn plan_read_only(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    let plan = ctx.state().create_logical_plan(sql).await?;
    read_only_sql_options()
        .verify_plan(&plan)
        .map_err(|e| match e {
            DataFusionError::Plan(message) => ExecError::ReadOnly(message),
            other => ExecError::DataFusion(other),
        })?;
    Ok(ctx.execute_logical_plan(plan).await?)
}

/// Plans `sql` for `ctx` if it only reads ([`plan_read_only`]) or is an INSERT, UPDATE
/// or DELETE of a coopscan table whose input only reads, or runs it if it is a `CREATE
/// INDEX` on a coopscan table ([`crate::create_index`]) or a `CHECKPOINT [table]`
/// (`delta::checkpoint_statement`): what `coopscan sql` runs. A
/// change to any other table (a `COPY … TO` is DML too) is refused like any write.
pub async fn plan_read_or_change(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    if let Some(table) = checkpoint_statement(sql) {
        return run_checkpoint(ctx, table.as_deref()).await;
    }
    if let Some(create) = create_index_statement(ctx, sql) {
        create_index(ctx, &create).await?;
        return Ok(ctx.read_empty()?);
    }
    let plan = plan_statement(ctx, sql).await?;
    if let LogicalPlan::Statement(statement) = &plan {
        if let Some(done) = transaction_statement(ctx, statement).await {
            done?;
            return Ok(ctx.read_empty()?);
        }
        if sets_explain_output(statement) {
            return Ok(ctx.execute_logical_plan(plan).await?);
        }
    }
    let checked = match &plan {
        LogicalPlan::Dml(dml) if changes_a_coop_table(dml) => dml.input.as_ref(),
        other => other,
    };
    read_only_sql_options()
        .verify_plan(checked)
        .map_err(|e| match e {
            DataFusionError::Plan(message) => ExecError::ReadOnly(message),
            other => ExecError::DataFusion(other),
        })?;
    if let LogicalPlan::Dml(dml) = &plan {
        if let Some(target) = bulk_target(ctx, dml) {
            return bulk_insert(ctx, dml, target).await;
        }
    }
    Ok(ctx.execute_logical_plan(plan).await?)
}

/// DataFusion's options that only say how `EXPLAIN` prints a plan (its statistics,
/// schemas, format): a `SET` of one changes nothing a query computes or reads, so
/// `coopscan sql` takes it while refusing every other `SET`.
const EXPLAIN_OPTIONS: &str = "datafusion.explain.";

/// Whether `statement` is a `SET` of an [`EXPLAIN_OPTIONS`] option.
fn sets_explain_output(statement: &Statement) -> bool {
    match statement {
        Statement::SetVariable(set) => set
            .variable
            .to_ascii_lowercase()
            .starts_with(EXPLAIN_OPTIONS),
        _ => false,
    }
}

/// Runs `BEGIN`, `COMMIT` or `ROLLBACK` on the session's transaction (`None`: another
/// statement).
async fn transaction_statement(ctx: &SessionContext, statement: &Statement) -> Option<Result<()>> {
    let slot = ctx.state().config().get_extension::<TransactionSlot>();
    let done = match (statement, slot) {
        (Statement::TransactionStart(_), Some(slot)) => slot.begin(&coop_tables(ctx).await),
        (Statement::TransactionEnd(end), Some(slot)) => match end.conclusion {
            TransactionConclusion::Commit => slot.commit().await,
            TransactionConclusion::Rollback => slot.rollback(),
        },
        (Statement::TransactionStart(_) | Statement::TransactionEnd(_), None) => Err(
            ExecError::Invalid("this session has no transactions".into()),
        ),
        _ => return None,
    };
    Some(done)
}

/// The changes of every coopscan table registered in the session (what a transaction's
/// snapshot pins at `BEGIN`).
async fn coop_tables(ctx: &SessionContext) -> Vec<Arc<TableDelta>> {
    let mut out: Vec<Arc<TableDelta>> = Vec::new();
    let catalogs = ctx
        .catalog_names()
        .into_iter()
        .filter_map(|c| ctx.catalog(&c));
    for catalog in catalogs {
        let schemas = catalog.schema_names().into_iter();
        for schema in schemas.filter_map(|s| catalog.schema(&s)) {
            for name in schema.table_names() {
                let Ok(Some(table)) = schema.table(&name).await else {
                    continue;
                };
                let Some(coop) = table.downcast_ref::<CoopTable>() else {
                    continue;
                };
                if !out.iter().any(|d| Arc::ptr_eq(d, coop.delta())) {
                    out.push(Arc::clone(coop.delta()));
                }
            }
        }
    }
    out
}

fn changes_a_coop_table(dml: &DmlStatement) -> bool {
    let change = matches!(
        dml.op,
        WriteOp::Insert(InsertOp::Append) | WriteOp::Update | WriteOp::Delete
    );
    let ours = source_as_provider(&dml.target).is_ok_and(|p| p.is::<CoopTable>());
    change && ours
}

/// Plans (read-only, [`plan_read_only`]) and runs `sql`, collecting all result batches.
pub async fn run_sql(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(plan_read_only(ctx, sql).await?.collect().await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::datasource::MemTable;
    use std::sync::Arc;

    /// A session with one in-memory table `t` of the numbers 1..=3.
    fn session() -> SessionContext {
        use datafusion::arrow::array::Int64Array;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int64Array::from(vec![1, 2, 3]))],
        )
        .unwrap();
        let ctx = session_context();
        let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        ctx
    }

    /// The partition mode of the hash join planned for a join of 400 000 tuples (3.2 MB:
    /// past DataFusion's limits for building on one partition) with 800 000, in a
    /// session of `threads` cores.
    async fn join_mode(threads: usize) -> String {
        use datafusion::arrow::array::Int64Array;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let ctx = query_session(query_session_config(threads));
        for (name, rows) in [("small", 400_000), ("large", 800_000)] {
            let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
            // Two partitions, as a scan on two cores delivers them.
            let halves = [0..rows / 2, rows / 2..rows].map(|keys| {
                let keys = Arc::new(Int64Array::from_iter_values(keys));
                vec![RecordBatch::try_new(Arc::clone(&schema), vec![keys]).unwrap()]
            });
            let table = MemTable::try_new(schema, halves.to_vec()).unwrap();
            ctx.register_table(name, Arc::new(table)).unwrap();
        }
        let sql = "EXPLAIN SELECT count(*) FROM small JOIN large ON small.k = large.k";
        let plan = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        let mode = text
            .split("HashJoinExec: mode=")
            .nth(1)
            .expect("a hash join");
        mode.split(',').next().unwrap().to_string()
    }

    #[tokio::test]
    async fn on_few_cores_a_join_builds_on_one_partition_past_datafusions_limits() {
        assert_eq!(join_mode(2).await, "CollectLeft");
        // On 64 cores the limits are DataFusion's: both inputs repartitioned.
        assert_eq!(join_mode(64).await, "Partitioned");
    }

    #[tokio::test]
    async fn a_session_sets_how_explain_prints_and_nothing_else() {
        let ctx = session();
        let explain = |ctx: &SessionContext| {
            let ctx = ctx.clone();
            async move {
                let frame = plan_read_or_change(&ctx, "EXPLAIN SELECT x FROM t WHERE x > 1");
                let batches = frame.await.unwrap().collect().await.unwrap();
                datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                    .unwrap()
                    .to_string()
            }
        };
        assert!(!explain(&ctx).await.contains("statistics=["));
        let set = "SET datafusion.explain.show_statistics = true";
        plan_read_or_change(&ctx, set).await.unwrap();
        assert!(
            explain(&ctx).await.contains("statistics=["),
            "the option took"
        );
        for refused in [
            "SET datafusion.execution.batch_size = 1",
            "SET datafusion.explain_x.show_statistics = true",
            "SET datafusion.explain = true",
        ] {
            let e = plan_read_or_change(&ctx, refused).await.unwrap_err();
            assert!(matches!(e, ExecError::ReadOnly(_)), "{refused}: {e:?}");
        }
        let size = ctx.state().config().batch_size();
        assert_ne!(size, 1, "a refused SET changed nothing");
    }

    #[tokio::test]
    async fn user_sql_reads_the_tables_and_touches_nothing_else() {
        let ctx = session();
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        let outside = dir.path().join("outside.csv");
        std::fs::write(&outside, "secret\n").unwrap();
        for (sql, kind) in [
            (
                format!("COPY t TO '{}' STORED AS CSV", target.display()),
                "COPY",
            ),
            (
                format!(
                    "CREATE EXTERNAL TABLE o (line VARCHAR) STORED AS CSV LOCATION '{}'",
                    outside.display()
                ),
                "CreateExternalTable",
            ),
            ("CREATE VIEW v AS SELECT x FROM t".to_string(), "CreateView"),
            ("INSERT INTO t VALUES (4)".to_string(), "Insert"),
            (
                "SET datafusion.execution.batch_size = 1".to_string(),
                "SetVariable",
            ),
            (
                format!(
                    "EXPLAIN ANALYZE COPY t TO '{}' STORED AS CSV",
                    target.display()
                ),
                "COPY",
            ),
        ] {
            let e = run_sql(&ctx, &sql).await.unwrap_err();
            assert!(matches!(e, ExecError::ReadOnly(_)), "{sql}: {e:?}");
            let message = e.to_string();
            assert!(
                message.contains("read-only") && message.contains(kind),
                "{message}"
            );
        }
        assert!(!target.exists(), "COPY wrote a file");
        assert!(ctx.table("o").await.is_err() && ctx.table("v").await.is_err());
        let sum = run_sql(&ctx, "SELECT sum(x) AS s FROM t").await.unwrap();
        let sum = datafusion::arrow::util::pretty::pretty_format_batches(&sum)
            .unwrap()
            .to_string();
        assert!(sum.contains("| 6 "), "{sum}");
        // A planning error that is not a refusal stays one.
        let e = run_sql(&ctx, "SELECT nosuch FROM t").await.unwrap_err();
        assert!(matches!(e, ExecError::DataFusion(_)), "{e:?}");
    }
}
