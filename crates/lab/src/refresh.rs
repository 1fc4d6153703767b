//! The benchmark's refresh stream on the real engine (`coopscan_bench::refresh`): RF1
//! is `INSERT … SELECT` of a run of existing lineitem tuples under order keys far past
//! the table's, RF2 `DELETE`s every tuple with such a key; both through the SQL layer
//! of the run's own provider, so its CScans share the run's buffer and every query
//! planned after a commit merges the changes. The changes go to a delta log of their
//! own in the temporary directory, removed with the run: the dataset is shared.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use coopscan_bench::{RefreshTimes, Refresher};
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::{plan_read_or_change, query_session, query_session_config, CoopTable};

/// Added to a copied tuple's order key: past any TPC-H scale's keys (SF 1000 ends at
/// 6·10⁹), so RF2 finds exactly RF1's tuples and zonemaps prune every stable chunk.
const KEY_OFFSET: u64 = 1 << 40;
const ORDER_KEY: &str = "l_orderkey";

/// Runs refresh pairs on one run's provider.
pub struct DfRefresher {
    tokio: Arc<tokio::runtime::Runtime>,
    ctx: SessionContext,
    /// The name the session knows the table by.
    table: String,
    /// Tuples of the table as generated: RF1 copies a run inside them.
    table_rows: u64,
    rows: u64,
    columns: Vec<String>,
    log: PathBuf,
}

impl DfRefresher {
    /// A refresh stream over `provider` as `table` (given a log of its own first, see
    /// [`DfRefresher::private_log`]) copying `per_mille` ‰ of its tuples per pair.
    pub fn new(
        tokio: Arc<tokio::runtime::Runtime>,
        (table, provider): (&str, Arc<CoopTable>),
        per_mille: f64,
        log: PathBuf,
    ) -> anyhow::Result<DfRefresher> {
        let table_rows = provider.table().rows();
        let schema = provider.table().schema();
        let columns: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
        anyhow::ensure!(
            columns.iter().any(|c| c == ORDER_KEY),
            "a refresh stream needs lineitem's {ORDER_KEY}"
        );
        // Rounded, at least one tuple, never the whole table plus one.
        let rows =
            ((table_rows as f64 * per_mille / 1000.0).round() as u64).clamp(1, table_rows.max(1));
        let ctx = query_session(query_session_config(1));
        ctx.register_table(table, provider as _)?;
        Ok(DfRefresher {
            tokio,
            ctx,
            table: table.to_string(),
            table_rows,
            rows,
            columns,
            log,
        })
    }

    /// A log path of its own for one run's changes, in the temporary directory.
    pub fn private_log() -> PathBuf {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("coopscan-refresh-{}-{run}.log", std::process::id()));
        // A file left by an earlier process of the same id would be replayed.
        let _ = std::fs::remove_file(&path);
        path
    }

    fn execute(&self, sql: &str) -> anyhow::Result<f64> {
        let start = Instant::now();
        self.tokio
            .block_on(async {
                plan_read_or_change(&self.ctx, sql)
                    .await?
                    .collect()
                    .await
                    .map_err(coopscan_exec::ExecError::from)
            })
            .with_context(|| format!("refresh: {sql}"))?;
        Ok(start.elapsed().as_secs_f64())
    }
}

impl Refresher for DfRefresher {
    fn refresh(&self, round: u64) -> anyhow::Result<RefreshTimes> {
        let span = self.table_rows.saturating_sub(self.rows).max(1);
        let first = round.wrapping_mul(self.rows) % span;
        let end = first.saturating_add(self.rows).min(self.table_rows);
        let values: Vec<String> = (self.columns.iter())
            .map(|c| match c.as_str() {
                ORDER_KEY => format!("{c} + {KEY_OFFSET}"),
                _ => c.clone(),
            })
            .collect();
        let table = &self.table;
        let insert = format!(
            "INSERT INTO {table} ({}) SELECT {} FROM {table} WHERE _rowid >= {first} AND _rowid < {end}",
            self.columns.join(", "),
            values.join(", ")
        );
        let delete = format!("DELETE FROM {table} WHERE {ORDER_KEY} >= {KEY_OFFSET}");
        Ok(RefreshTimes {
            insert_s: self.execute(&insert)?,
            delete_s: self.execute(&delete)?,
            rows: end - first,
        })
    }
}

impl Drop for DfRefresher {
    fn drop(&mut self) {
        // Best effort: a leftover file in the temporary directory harms nothing.
        let _ = std::fs::remove_file(&self.log);
    }
}
