//! The scans a physical plan will register with the shared buffer, read off the plan
//! before it runs: what a simulation of a SQL workload replays (the 2012 paper's TPC-H
//! throughput run in the simulator, `coopscan bench --preset tpch-… --simulate`).
//!
//! A CScan or in-order Scan over the shared [`coopscan_runtime::Runtime`] registers
//! on its first poll (`cscan_exec.rs`), so planning registers nothing; the leaf already
//! knows its table, its tuple ranges (after `_rowid` bounds and zonemap pruning) and
//! the columns it loads. What only running shows is left out: chunks a join's runtime
//! filter prunes while the query runs, and scans straight from storage (no buffer).

use std::sync::Arc;

use coopscan_buffer::{RowRanges, TableId};
use datafusion::physical_plan::ExecutionPlan;

use crate::cscan_exec::{CScanExec, PooledScanExec};
use crate::leaf_plan::ChunkSource;

/// One scan of a plan through the shared buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedScan {
    pub table: TableId,
    /// Tuples it asks for (stable positions where the table has changes, as the scan
    /// registers them).
    pub ranges: RowRanges,
    /// Columns it loads (storage indexes: its projection and its filter's columns).
    pub columns: Vec<usize>,
    /// An in-order Scan (a plan that needs `_rowid` order, or a small table) rather than
    /// a CScan. A session's `InOrderHint`, which turns a CScan into one when it runs,
    /// is not seen here.
    pub in_order: bool,
    /// Its workers (output partitions) sharing the scan.
    pub workers: usize,
}

/// The scans of `plan` through the shared buffer, in the order the plan starts them as
/// far as a plan says: depth first, a node's children left to right — a hash join's
/// build side (its left child) before its probe side, which DataFusion reads only once
/// the build side is collected.
pub fn planned_scans(plan: &Arc<dyn ExecutionPlan>) -> Vec<PlannedScan> {
    let mut scans = Vec::new();
    collect(plan, &mut scans);
    scans
}

fn collect(plan: &Arc<dyn ExecutionPlan>, scans: &mut Vec<PlannedScan>) {
    if let Some(scan) = plan.downcast_ref::<CScanExec>() {
        let source = scan.source();
        scans.push(planned(
            scan.core(),
            source.pooled.table,
            false,
            source.partitions(),
        ));
    } else if let Some(scan) = plan.downcast_ref::<PooledScanExec>() {
        scans.push(planned(scan.core(), scan.source().0.table, true, 1));
    }
    for child in plan.children() {
        collect(child, scans);
    }
}

fn planned(
    core: &crate::plan_common::ScanCore,
    table: TableId,
    in_order: bool,
    workers: usize,
) -> PlannedScan {
    PlannedScan {
        table,
        ranges: core.ranges.clone(),
        columns: core.shape.load_columns(),
        in_order,
        workers,
    }
}
