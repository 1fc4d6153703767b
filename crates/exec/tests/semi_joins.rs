//! `PushSemiJoins`: a semi or anti join against the keys an aggregation selects moves
//! below the inner joins above its table, and every query answers as plain DataFusion
//! answers it (same tables in memory, DataFusion's rules alone), NULL keys included.

use std::sync::Arc;

use coopscan_exec::query_session;
use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

fn table(columns: Vec<(&str, Vec<Option<i64>>)>) -> Arc<MemTable> {
    let schema = Arc::new(Schema::new(
        (columns.iter())
            .map(|(name, _)| Field::new(*name, DataType::Int64, true))
            .collect::<Vec<_>>(),
    ));
    let arrays = (columns.into_iter())
        .map(|(_, values)| Arc::new(Int64Array::from(values)) as _)
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).expect("batch");
    Arc::new(MemTable::try_new(schema, vec![vec![batch]]).expect("memtable"))
}

/// Customers, their orders and the orders' lines (TPC-H Q18's shape), with a NULL
/// order key on a line and on an order.
fn register(ctx: &SessionContext) {
    let n = 60i64;
    let names = StringArray::from_iter_values((0..10).map(|c| format!("customer {c}")));
    let schema = Arc::new(Schema::new(vec![
        Field::new("ck", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let keys = Int64Array::from_iter_values(0..10);
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(keys), Arc::new(names)])
        .expect("batch");
    let customers = MemTable::try_new(schema, vec![vec![batch]]).expect("memtable");
    ctx.register_table("customers", Arc::new(customers))
        .expect("register");
    let orders = table(vec![
        ("ok", (0..n).map(|o| (o != 7).then_some(o)).collect()),
        ("ck", (0..n).map(|o| Some(o % 10)).collect()),
        ("price", (0..n).map(|o| Some(o * 37 % 101)).collect()),
    ]);
    ctx.register_table("orders", orders).expect("register");
    let lines = 5 * n;
    let lines = table(vec![
        (
            "ok",
            (0..lines).map(|l| (l != 11).then_some(l % n)).collect(),
        ),
        ("qty", (0..lines).map(|l| Some(l * 13 % 17)).collect()),
    ]);
    ctx.register_table("lines", lines).expect("register");
}

const SELECTED: &str = "SELECT ok FROM lines GROUP BY ok HAVING sum(qty) > 45";

fn queries() -> Vec<String> {
    vec![
        // Q18: the semi join's key comes from orders.
        format!(
            "SELECT c.name, o.ok, o.price, sum(l.qty) FROM customers c, orders o, lines l \
             WHERE o.ok IN ({SELECTED}) AND c.ck = o.ck AND o.ok = l.ok \
             GROUP BY c.name, o.ok, o.price"
        ),
        // An anti join against the same keys.
        format!(
            "SELECT c.name, o.ok FROM customers c, orders o \
             WHERE NOT EXISTS (SELECT 1 FROM ({SELECTED}) s WHERE s.ok = o.ok) AND c.ck = o.ck"
        ),
        // NOT IN (null-aware): stays where it is.
        format!(
            "SELECT c.name, o.ok FROM customers c, orders o \
             WHERE o.ok NOT IN ({SELECTED}) AND c.ck = o.ck"
        ),
        // A key of both inputs: stays where it is.
        format!(
            "SELECT c.name, o.ok FROM customers c, orders o \
             WHERE (o.ok + c.ck) IN ({SELECTED}) AND c.ck = o.ck"
        ),
        // EXISTS over a table, not an aggregation: stays where it is.
        "SELECT c.name, o.ok FROM customers c, orders o \
         WHERE EXISTS (SELECT 1 FROM lines l WHERE l.ok = o.ok AND l.qty > 15) AND c.ck = o.ck"
            .into(),
    ]
}

async fn rows(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.expect(sql).collect().await.expect(sql);
    let text = pretty_format_batches(&batches).expect("format").to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn queries_answer_as_plain_datafusion_does() {
    let ours = query_session(SessionConfig::new().with_target_partitions(2));
    let plain = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    register(&ours);
    register(&plain);
    for sql in queries() {
        let want = rows(&plain, &sql).await;
        assert!(want.len() > 4, "{sql}: the query selects rows");
        assert_eq!(rows(&ours, &sql).await, want, "{sql}");
    }
}

/// The Q18 shape's semi join sits on orders' scan, below both inner joins.
#[tokio::test]
async fn the_semi_join_moves_below_the_inner_joins() {
    let ours = query_session(SessionConfig::new());
    let plain = SessionContext::new();
    register(&ours);
    register(&plain);
    let sql = &queries()[0];
    let depth = |plan: &str| -> Option<usize> {
        let semi = plan.lines().position(|l| l.contains("LeftSemi Join"))?;
        let inner = plan.lines().position(|l| l.contains("Inner Join"))?;
        Some(semi.saturating_sub(inner))
    };
    let logical = |ctx: &SessionContext| {
        let ctx = ctx.clone();
        async move {
            let frame = ctx.sql(sql).await.expect("plan");
            format!(
                "{}",
                frame
                    .into_optimized_plan()
                    .expect("optimize")
                    .display_indent()
            )
        }
    };
    let (ours, plain) = (logical(&ours).await, logical(&plain).await);
    assert_eq!(
        depth(&plain),
        Some(0),
        "DataFusion's semi join is above: {plain}"
    );
    assert!(
        depth(&ours).is_some_and(|d| d > 0),
        "ours is below an inner join: {ours}"
    );
}
