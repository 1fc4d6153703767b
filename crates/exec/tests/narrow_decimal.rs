//! Decimal arithmetic narrowed to 64 bits (`NarrowDecimals`) gives exactly what plain
//! DataFusion gives, values, types and errors alike, on random expressions over random
//! decimals (small, huge enough to overflow 64 and 128 bits, with and without nulls),
//! and on the benchmark's queries; and it does narrow every product of SLOW.

mod common;

use std::sync::Arc;

use coopscan_exec::narrow_decimal::NarrowDecimalExpr;
use coopscan_exec::{query_session, Query};
use datafusion::arrow::array::{ArrayRef, Decimal128Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::expressions::BinaryExpr;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{displayable, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::*;

const SEED: u64 = 0x0dec_13a1;
const CASES: usize = 300;
const ROWS: usize = 500;
/// The random table's columns: name, precision, scale.
const COLUMNS: [(&str, u8, i8); 3] = [("a", 15, 2), ("b", 18, 0), ("c", 10, 4)];

/// A random value for a column of `precision` digits: mostly small, like money, but
/// sometimes near the precision's limit so that products overflow 64 bits (and, nested,
/// 128 bits), which must fall back to DataFusion's own evaluation.
fn value(rng: &mut ChaCha8Rng, precision: u8) -> i128 {
    let limit = 10i128.pow(u32::from(precision)) - 1;
    let magnitude = if rng.random_bool(0.1) {
        limit
    } else {
        10_000_000
    };
    let v = rng.random_range(0..=magnitude);
    if rng.random_bool(0.3) {
        -v
    } else {
        v
    }
}

fn random_table(rng: &mut ChaCha8Rng, with_nulls: bool) -> Arc<MemTable> {
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (name, precision, scale) in COLUMNS {
        let values = (0..ROWS)
            .map(|_| (!(with_nulls && rng.random_bool(0.05))).then(|| value(rng, precision)));
        let values: Vec<Option<i128>> = values.collect();
        let array = Decimal128Array::from(values)
            .with_precision_and_scale(precision, scale)
            .expect("decimal type");
        fields.push(Field::new(
            name,
            DataType::Decimal128(precision, scale),
            true,
        ));
        arrays.push(Arc::new(array));
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).expect("batch");
    Arc::new(MemTable::try_new(schema, vec![vec![batch]]).expect("memtable"))
}

/// A random arithmetic expression over the columns, literals and widening and
/// narrowing casts.
fn expression(rng: &mut ChaCha8Rng, depth: u32) -> String {
    if depth == 0 || rng.random_bool(0.25) {
        return match rng.random_range(0..6) {
            0 => format!("{}", rng.random_range(-5..100)),
            1 => format!(
                "CAST({}.{} AS DECIMAL(6,2))",
                rng.random_range(0..999),
                rng.random_range(10..99)
            ),
            _ => COLUMNS[rng.random_range(0..COLUMNS.len())].0.to_string(),
        };
    }
    let l = expression(rng, depth - 1);
    let r = expression(rng, depth - 1);
    match rng.random_range(0..8) {
        0 => format!("CAST(({l}) AS DECIMAL(38,6))"),
        1 => format!("CAST(({l}) AS DECIMAL(20,1))"),
        2 | 3 => format!("({l} + {r})"),
        4 => format!("({l} - {r})"),
        _ => format!("({l} * {r})"),
    }
}

async fn outcome(ctx: &SessionContext, sql: &str) -> Result<(Vec<Vec<String>>, String), String> {
    let frame = ctx.sql(sql).await.map_err(|e| e.to_string())?;
    let types = format!(
        "{:?}",
        frame
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect::<Vec<_>>()
    );
    let batches = frame.collect().await.map_err(|e| e.to_string())?;
    Ok((canonical(&batches), types))
}

async fn narrowed_plan(ctx: &SessionContext, sql: &str) -> Option<Arc<dyn ExecutionPlan>> {
    ctx.sql(sql).await.ok()?.create_physical_plan().await.ok()
}

#[tokio::test]
async fn random_decimal_expressions_equal_plain_datafusion() {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let (mut narrowed, mut failed) = (0, 0);
    for case in 0..CASES {
        let table = random_table(&mut rng, case % 4 == 0);
        let plain = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
        let ours = query_session(SessionConfig::new().with_target_partitions(1));
        plain
            .register_table("t", Arc::clone(&table) as _)
            .expect("register");
        ours.register_table("t", table).expect("register");
        let (e1, e2) = (expression(&mut rng, 4), expression(&mut rng, 2));
        let statements = [
            format!("SELECT {e1} AS e FROM t"),
            format!("SELECT {e2} AS g, sum({e1}) AS s FROM t GROUP BY g"),
        ];
        for sql in &statements {
            let expected = outcome(&plain, sql).await;
            let got = outcome(&ours, sql).await;
            match (&expected, &got) {
                (Ok(e), Ok(g)) => assert_eq!(e, g, "case {case}: {sql}"),
                (Err(_), Err(_)) => failed += 1,
                _ => panic!("case {case}: {sql}\nplain: {expected:?}\nnarrowed: {got:?}"),
            }
            if let Some(plan) = narrowed_plan(&ours, sql).await {
                if count_exprs(&plan).narrowed > 0 {
                    narrowed += 1;
                }
            }
        }
    }
    // The test means something only if the rule fired in most cases and some of them
    // overflowed (those errors are arrow's i128 overflow, reached through the fallback).
    assert!(
        narrowed > CASES,
        "narrowed only {narrowed} of {} statements",
        2 * CASES
    );
    assert!(failed > 0, "no statement overflowed 128 bits");
}

/// What the projections and aggregate arguments of a plan hold.
struct Counts {
    /// Narrowed expressions.
    narrowed: usize,
    /// Products outside them.
    products: usize,
}

fn count_exprs(plan: &Arc<dyn ExecutionPlan>) -> Counts {
    let mut exprs: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
    plan.apply(|node| {
        if let Some(p) = node.downcast_ref::<ProjectionExec>() {
            exprs.extend(p.expr().iter().map(|e| Arc::clone(&e.expr)));
        }
        if let Some(a) = node.downcast_ref::<AggregateExec>() {
            exprs.extend(a.aggr_expr().iter().flat_map(|f| f.expressions()));
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .expect("walk plan");
    let mut counts = Counts {
        narrowed: 0,
        products: 0,
    };
    for e in exprs {
        e.apply(|x| {
            if x.is::<NarrowDecimalExpr>() {
                counts.narrowed += 1;
                return Ok(TreeNodeRecursion::Jump);
            }
            if x.downcast_ref::<BinaryExpr>()
                .is_some_and(|b| *b.op() == Operator::Multiply)
            {
                counts.products += 1;
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .expect("walk expr");
    }
    counts
}

#[tokio::test]
async fn the_benchmark_queries_are_narrowed_and_unchanged() {
    let reference = reference_context();
    let ours = query_session(SessionConfig::new());
    let state = reference.state();
    let provider = state
        .catalog_list()
        .catalog("datafusion")
        .and_then(|c| c.schema("public"))
        .expect("schema");
    let lineitem = provider
        .table("lineitem")
        .await
        .expect("lookup")
        .expect("lineitem");
    ours.register_table("lineitem", lineitem).expect("register");
    for query in [
        Query::Fast,
        Query::Slow { extra: 16 },
        Query::Slow { extra: 0 },
    ] {
        let sql = query.sql("lineitem", None);
        assert_eq!(
            run(&ours, &sql).await,
            run(&reference, &sql).await,
            "{query:?}"
        );
        let plan = ours
            .sql(&sql)
            .await
            .expect("plan")
            .create_physical_plan()
            .await
            .expect("physical");
        let counts = count_exprs(&plan);
        let shown = displayable(plan.as_ref()).indent(true);
        assert_eq!(
            counts.products, 0,
            "{query:?}: a product left unnarrowed:\n{shown}"
        );
        assert!(counts.narrowed > 0, "{query:?}: nothing narrowed:\n{shown}");
    }
}
