//! `JoinSides`: which input of a hash join is built, decided again where DataFusion's
//! `JoinSelection` decided on sizes it cannot know.
//!
//! `JoinSelection` builds on the input of fewer estimated bytes. Above a scan those
//! bytes are the scan's own estimate (`crate::statistics`), but a join's output keeps
//! its inputs' column sizes unscaled (datafusion 55.2, `joins/utils.rs`,
//! `estimate_join_cardinality`): TPC-H Q21's semi join of 60 000 estimated tuples
//! reported the 95 MB of the lineitem it probed, so the anti join above it built its
//! hash table on the 3.8 M-tuple lineitem instead (130 MB, 0.4 s of a 0.5 s query).
//! Where either input holds a join, this rule estimates each input's bytes from its
//! estimated tuples and its schema's widths, and swaps the inputs when the one being
//! built is the larger. It runs right after `JoinSelection`, before repartitioning is
//! planned and before the joins hand out their dynamic filters (which fix the sides).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::joins::{
    CrossJoinExec, HashJoinExec, NestedLoopJoinExec, PartitionMode, SortMergeJoinExec,
};
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::ExecutionPlan;

/// The bytes a string value is taken to take where only its type is known (TPC-H's
/// names and codes are 10-25 bytes, its comments longer).
const STRING_BYTES: usize = 24;
/// The bytes of a value of any other type without a fixed width.
const OTHER_BYTES: usize = 16;

/// The rule (see the module's text).
#[derive(Debug, Default)]
pub struct JoinSides;

impl PhysicalOptimizerRule for JoinSides {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !config.optimizer.join_reordering {
            return Ok(plan);
        }
        let single = config.optimizer.hash_join_single_partition_threshold_rows;
        plan.transform_up(|p| reconsidered(p, single)).data()
    }

    fn name(&self) -> &str {
        "coopscan_join_sides"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` with its inputs swapped if it is a hash join building on the larger input
/// by [`estimated_bytes`], where an input holds a join. A join built whole on one
/// partition (`CollectLeft`) whose new build input is estimated past `single_rows`
/// tuples is partitioned instead, as `JoinSelection` would have planned it.
fn reconsidered(
    plan: Arc<dyn ExecutionPlan>,
    single_rows: usize,
) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    let Some(join) = plan.downcast_ref::<HashJoinExec>() else {
        return Ok(Transformed::no(plan));
    };
    let (build, probe) = (join.left(), join.right());
    let swappable = join.join_type().supports_swap() && !join.null_aware;
    if !swappable || !(holds_join(build) || holds_join(probe)) {
        return Ok(Transformed::no(plan));
    }
    let (Some((_, build_bytes)), Some((probe_rows, probe_bytes))) =
        (estimated_bytes(build)?, estimated_bytes(probe)?)
    else {
        return Ok(Transformed::no(plan));
    };
    if build_bytes <= probe_bytes {
        return Ok(Transformed::no(plan));
    }
    let mode = match join.partition_mode() {
        PartitionMode::CollectLeft if probe_rows > single_rows => PartitionMode::Partitioned,
        mode => *mode,
    };
    Ok(Transformed::yes(join.swap_inputs(mode)?))
}

/// Whether `plan` or anything below it joins.
fn holds_join(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let joins = plan.is::<HashJoinExec>()
        || plan.is::<SortMergeJoinExec>()
        || plan.is::<NestedLoopJoinExec>()
        || plan.is::<CrossJoinExec>();
    joins || plan.children().into_iter().any(holds_join)
}

/// `plan`'s estimated tuples, and its bytes as those tuples times its schema's row
/// width ([`row_width`]); `None` without an estimate of its tuples.
fn estimated_bytes(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<(usize, usize)>> {
    // What `JoinSelection` asks (datafusion 55.2, `join_selection.rs`, `get_stats`).
    let stats = StatisticsContext::new().compute(plan.as_ref(), &StatisticsArgs::new())?;
    Ok(stats
        .num_rows
        .get_value()
        .map(|&rows| (rows, rows.saturating_mul(row_width(&plan.schema())))))
}

/// The bytes of one tuple of `schema`: fixed widths where the type has one, else
/// [`STRING_BYTES`] or [`OTHER_BYTES`]; at least 1.
fn row_width(schema: &Schema) -> usize {
    let width = |t: &DataType| match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => STRING_BYTES,
        DataType::Boolean => 1,
        DataType::Dictionary(_, values) => match values.primitive_width() {
            Some(w) => w,
            None => STRING_BYTES,
        },
        other => other.primitive_width().unwrap_or(OTHER_BYTES),
    };
    (schema.fields().iter().map(|f| width(f.data_type())))
        .fold(0usize, usize::saturating_add)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use datafusion::common::stats::Precision;
    use datafusion::common::{ColumnStatistics, JoinType, NullEquality, ScalarValue, Statistics};
    use datafusion::physical_expr::expressions::Column;
    use datafusion::physical_optimizer::join_selection::JoinSelection;
    use datafusion::physical_plan::test::exec::StatisticsExec;

    /// A leaf of `rows` tuples whose `columns` (Int64) hold keys 0 to `max_key`,
    /// `column_bytes` bytes each.
    fn leaf(
        columns: &[&str],
        rows: usize,
        max_key: i64,
        column_bytes: usize,
    ) -> Arc<dyn ExecutionPlan> {
        let schema = Schema::new(
            (columns.iter())
                .map(|c| Field::new(*c, DataType::Int64, false))
                .collect::<Vec<_>>(),
        );
        let column = ColumnStatistics {
            null_count: Precision::Exact(0),
            min_value: Precision::Exact(ScalarValue::Int64(Some(0))),
            max_value: Precision::Exact(ScalarValue::Int64(Some(max_key))),
            byte_size: Precision::Exact(column_bytes),
            ..ColumnStatistics::new_unknown()
        };
        let stats = Statistics {
            num_rows: Precision::Exact(rows),
            total_byte_size: Precision::Exact(column_bytes * columns.len()),
            column_statistics: vec![column; columns.len()],
        };
        Arc::new(StatisticsExec::new(stats, schema))
    }

    fn join(
        left: Arc<dyn ExecutionPlan>,
        right: Arc<dyn ExecutionPlan>,
        keys: (usize, usize),
        join_type: JoinType,
    ) -> Arc<dyn ExecutionPlan> {
        let key = |plan: &Arc<dyn ExecutionPlan>, i: usize| {
            Arc::new(Column::new(plan.schema().field(i).name(), i)) as _
        };
        let on = vec![(key(&left, keys.0), key(&right, keys.1))];
        let join = HashJoinExec::try_new(
            left,
            right,
            on,
            None,
            &join_type,
            None,
            PartitionMode::Partitioned,
            NullEquality::NullEqualsNothing,
            false,
        )
        .expect("join");
        Arc::new(join)
    }

    fn optimized(plan: Arc<dyn ExecutionPlan>) -> (Arc<dyn ExecutionPlan>, Arc<dyn ExecutionPlan>) {
        let config = ConfigOptions::default();
        let selected = JoinSelection::new()
            .optimize(plan, &config)
            .expect("selection");
        let revisited = JoinSides
            .optimize(Arc::clone(&selected), &config)
            .expect("sides");
        (selected, revisited)
    }

    fn join_type(plan: &Arc<dyn ExecutionPlan>) -> JoinType {
        *plan
            .downcast_ref::<HashJoinExec>()
            .expect("a hash join")
            .join_type()
    }

    /// Q21's shape: 100 000 lines joined with 10 suppliers (about 10 tuples), semi-
    /// joined with 50 000 other lines (reported with the 100 000 lines' bytes), anti-
    /// joined with 50 000 more.
    fn anti_join_above_a_join() -> Arc<dyn ExecutionPlan> {
        let lines = leaf(&["k", "v"], 100_000, 99_999, 800_000);
        let suppliers = leaf(&["k"], 10, 9, 80);
        let selected = join(lines, suppliers, (0, 0), JoinType::Inner);
        let others = leaf(&["k"], 50_000, 99_999, 400_000);
        let semi = join(selected, others, (0, 0), JoinType::LeftSemi);
        let more = leaf(&["k"], 50_000, 99_999, 400_000);
        join(semi, more, (0, 0), JoinType::LeftAnti)
    }

    #[test]
    fn an_anti_join_builds_on_the_few_tuples_of_a_join_not_the_scan_it_is_said_to_be_smaller_than()
    {
        let (selected, revisited) = optimized(anti_join_above_a_join());
        // DataFusion builds on the 50 000 lines: the join's bytes are its inputs'.
        assert_eq!(join_type(&selected), JoinType::RightAnti);
        assert_eq!(join_type(&revisited), JoinType::LeftAnti);
        let build = Arc::clone(revisited.downcast_ref::<HashJoinExec>().unwrap().left());
        assert!(holds_join(&build), "builds on the inner join's output");
    }

    #[test]
    fn a_join_of_scans_or_one_already_built_on_its_smaller_input_is_left_alone() {
        // No join below: DataFusion's bytes are the scans' own and stand, though the
        // schemas' widths would say otherwise (1 000 wide tuples in few bytes, as a
        // compressed scan reports them, against 2 000 narrow ones in many).
        let wide = leaf(&["k", "a", "b", "c", "d", "e", "f", "g"], 1_000, 999, 1_000);
        let narrow = leaf(&["k"], 2_000, 999, 100_000);
        let scans = join(wide, narrow, (0, 0), JoinType::LeftAnti);
        let (selected, revisited) = optimized(scans);
        assert_eq!(join_type(&selected), JoinType::LeftAnti);
        assert_eq!(join_type(&revisited), JoinType::LeftAnti);
        // Built on the small join already: nothing to swap.
        let (_, once) = optimized(anti_join_above_a_join());
        let again = JoinSides
            .optimize(Arc::clone(&once), &ConfigOptions::default())
            .unwrap();
        assert_eq!(join_type(&again), JoinType::LeftAnti);
    }
}
