//! The stream workload: `streams` streams × `queries_per_stream` queries drawn from a
//! [`Mix`] with a seeded ChaCha generator, each a contiguous range of p% of the table's
//! rows from a uniformly random start; stream i starts `i × stagger` after the run
//! begins (the paper's 3 s, so queries enter an already-working system).
//!
//! The workload depends on the spec only (never on the policy), so every policy of one
//! benchmark runs exactly the same query lists.

use crate::error::BenchError;
use crate::mix::{Mix, QueryType};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::ops::Range;
use std::time::Duration;

/// Ids of standalone queries start here, far from the workload's `0..streams × queries`.
pub const STANDALONE_ID_BASE: u64 = 1 << 40;
/// Mixed into the seed for the standalone queries' starts, so they do not repeat the
/// first stream's ranges.
const STANDALONE_SEED_SALT: u64 = 0x5354_414e_4441_4c4f; // "STANDALO"
/// Seeds the choice of in-order queries apart from the workload's draws, so a share of
/// 0 % leaves the workload exactly as without it.
const IN_ORDER_SEED_SALT: u64 = 0x494e_4f52_4445_5221; // "INORDER!"
/// A share is a whole percentage of the queries.
pub const MAX_IN_ORDER_PCT: u32 = 100;
const PERCENT_WHOLE: u128 = 100;

/// One query to run: the engine tags its scan with `id` so loads can be attributed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueryInstance {
    /// Unique within one policy run.
    pub id: u64,
    pub stream: usize,
    /// Position in its stream.
    pub index: usize,
    pub query_type: QueryType,
    /// Rows scanned: `len == rows_for_percent(table_rows, percent)`.
    pub rows: Range<u64>,
    /// Reads its rows in table order (an in-order Scan, as a plan that needs order
    /// would); otherwise in any order the engine likes (a CScan in coopscan).
    pub in_order: bool,
}

impl std::fmt::Display for QueryInstance {
    /// `F-10 #14 (stream 3, query 2, rows 100..200)`: enough to rerun it alone.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let QueryInstance {
            id,
            stream,
            index,
            query_type,
            rows,
            in_order,
        } = self;
        let order = if *in_order { ", in order" } else { "" };
        write!(
            f,
            "{query_type} #{id} (stream {stream}, query {index}, rows {rows:?}{order})"
        )
    }
}

/// One stream: its queries run one after another from `start_offset` on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StreamPlan {
    pub start_offset: Duration,
    pub queries: Vec<QueryInstance>,
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct WorkloadSpec {
    pub streams: usize,
    pub queries_per_stream: usize,
    pub mix: Mix,
    pub seed: u64,
    pub stagger: Duration,
    pub table_rows: u64,
    /// Each query reads in table order with this probability, in % (the 2012 paper's
    /// Scans beside CScans in one pool; drawn as the simulator's `mixed-pool` does).
    pub in_order_pct: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Workload {
    pub streams: Vec<StreamPlan>,
}

impl Workload {
    pub fn generate(spec: &WorkloadSpec) -> Result<Workload, BenchError> {
        check_spec(spec)?;
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let streams = (0..spec.streams)
            .map(|stream| {
                Ok(StreamPlan {
                    start_offset: start_offset(spec.stagger, stream)?,
                    queries: (0..spec.queries_per_stream)
                        .map(|index| {
                            let id = (stream * spec.queries_per_stream + index) as u64;
                            let query_type = if spec.mix.dealt {
                                dealt_type(&mut rng, &spec.mix, stream)
                            } else {
                                draw_type(&mut rng, &spec.mix)
                            };
                            let rows = draw_range(&mut rng, spec.table_rows, query_type.percent);
                            QueryInstance {
                                id,
                                stream,
                                index,
                                query_type,
                                rows,
                                in_order: false,
                            }
                        })
                        .collect(),
                })
            })
            .collect::<Result<_, BenchError>>()?;
        let mut workload = Workload { streams };
        workload.choose_in_order(spec.in_order_pct, spec.seed);
        Ok(workload)
    }

    /// Marks each query in order with probability `pct` %, from its own seeded draws.
    fn choose_in_order(&mut self, pct: u32, seed: u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ IN_ORDER_SEED_SALT);
        for q in self.streams.iter_mut().flat_map(|s| s.queries.iter_mut()) {
            q.in_order = rng.random_range(0..MAX_IN_ORDER_PCT) < pct;
        }
    }

    pub fn queries(&self) -> impl Iterator<Item = &QueryInstance> {
        self.streams.iter().flat_map(|s| s.queries.iter())
    }

    pub fn query_count(&self) -> usize {
        self.streams.iter().map(|s| s.queries.len()).sum()
    }
}

/// When stream `stream` starts: `stream` staggers in, an error (not a panic) where that
/// leaves `Duration`'s range.
fn start_offset(stagger: Duration, stream: usize) -> Result<Duration, BenchError> {
    u32::try_from(stream)
        .ok()
        .and_then(|n| stagger.checked_mul(n))
        .ok_or_else(|| {
            BenchError::BadParameter(format!(
                "stream {stream} would start {stream} × {stagger:?} after the first, \
                 beyond any clock"
            ))
        })
}

fn check_spec(spec: &WorkloadSpec) -> Result<(), BenchError> {
    if spec.table_rows == 0 {
        return Err(BenchError::EmptyTable);
    }
    if spec.in_order_pct > MAX_IN_ORDER_PCT {
        return Err(BenchError::InOrderPct(spec.in_order_pct));
    }
    if spec.streams == 0 || spec.queries_per_stream == 0 {
        return Err(BenchError::EmptyWorkload {
            streams: spec.streams,
            queries_per_stream: spec.queries_per_stream,
        });
    }
    Ok(())
}

/// One query of each type the mix can draw, each over its own seeded random range: the
/// standalone cold runs that normalize latencies.
pub fn standalone_queries(mix: &Mix, table_rows: u64, seed: u64) -> Vec<QueryInstance> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ STANDALONE_SEED_SALT);
    mix.query_types()
        .into_iter()
        .enumerate()
        .map(|(k, query_type)| QueryInstance {
            id: STANDALONE_ID_BASE + k as u64,
            stream: 0,
            index: 0,
            query_type,
            rows: draw_range(&mut rng, table_rows, query_type.percent),
            in_order: false,
        })
        .collect()
}

/// Rows in a p% range: rounded to the nearest row, at least one, all of them at 100%.
pub fn rows_for_percent(table_rows: u64, percent: u32) -> u64 {
    let exact = (table_rows as u128 * percent as u128 + PERCENT_WHOLE / 2) / PERCENT_WHOLE;
    (exact as u64).clamp(1, table_rows.max(1))
}

fn draw_type(rng: &mut ChaCha8Rng, mix: &Mix) -> QueryType {
    let kind = mix.speeds[rng.random_range(0..mix.speeds.len())];
    let percent = mix.percents[rng.random_range(0..mix.percents.len())];
    QueryType { kind, percent }
}

/// Stream `stream`'s kind of a dealt mix (Table 4), with a drawn size.
fn dealt_type(rng: &mut ChaCha8Rng, mix: &Mix, stream: usize) -> QueryType {
    let kind = mix.speeds[stream % mix.speeds.len()];
    let percent = mix.percents[rng.random_range(0..mix.percents.len())];
    QueryType { kind, percent }
}

fn draw_range(rng: &mut ChaCha8Rng, table_rows: u64, percent: u32) -> Range<u64> {
    let len = rows_for_percent(table_rows, percent);
    let start = rng.random_range(0..=table_rows - len);
    start..start + len
}

/// One finished query, times since the policy run started.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryRun {
    pub query: QueryInstance,
    pub start: Duration,
    pub end: Duration,
}

impl QueryRun {
    pub fn latency(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::QueryKind;

    fn spec(seed: u64) -> WorkloadSpec {
        WorkloadSpec {
            streams: 16,
            queries_per_stream: 4,
            mix: Mix::table2(),
            seed,
            stagger: Duration::from_secs(3),
            table_rows: 59_986_052, // lineitem SF10
            in_order_pct: 0,
        }
    }

    #[test]
    fn a_share_in_order_marks_about_that_share_and_changes_nothing_else() {
        let plain = Workload::generate(&spec(3)).unwrap();
        assert!(plain.queries().all(|q| !q.in_order));
        let all = Workload::generate(&WorkloadSpec {
            in_order_pct: 100,
            ..spec(3)
        })
        .unwrap();
        assert!(all.queries().all(|q| q.in_order));
        let half = Workload::generate(&WorkloadSpec {
            in_order_pct: 50,
            queries_per_stream: 64,
            ..spec(3)
        })
        .unwrap();
        let marked = half.queries().filter(|q| q.in_order).count();
        // 1024 fair draws: 512 ± 64 is beyond four standard deviations (16).
        assert!((448..=576).contains(&marked), "{marked} of 1024");
        // Only the flag differs from the plain workload's queries.
        let unmark = |w: &Workload| -> Vec<QueryInstance> {
            w.queries()
                .map(|q| QueryInstance {
                    in_order: false,
                    ..q.clone()
                })
                .collect()
        };
        assert_eq!(unmark(&all), unmark(&plain));
        let err = Workload::generate(&WorkloadSpec {
            in_order_pct: 101,
            ..spec(3)
        });
        assert!(matches!(err, Err(BenchError::InOrderPct(101))), "{err:?}");
    }

    #[test]
    fn same_seed_same_queries_other_seed_other_queries() {
        let a = Workload::generate(&spec(7)).unwrap();
        assert_eq!(a, Workload::generate(&spec(7)).unwrap());
        assert_ne!(a, Workload::generate(&spec(8)).unwrap());
        assert_eq!(a.query_count(), 64);
    }

    #[test]
    fn ranges_have_exact_sizes_and_stay_inside_the_table() {
        let spec = spec(1);
        let workload = Workload::generate(&spec).unwrap();
        for q in workload.queries() {
            let expected = match q.query_type.percent {
                1 => 599_861,    // 599_860.52 rounds up
                10 => 5_998_605, // 5_998_605.2 rounds down
                50 => 29_993_026,
                100 => 59_986_052,
                other => panic!("table2 has no {other}% queries"),
            };
            assert_eq!(q.rows.end - q.rows.start, expected, "{q:?}");
            assert!(q.rows.end <= spec.table_rows);
        }
    }

    #[test]
    fn streams_are_staggered_and_ids_unique() {
        let workload = Workload::generate(&spec(3)).unwrap();
        assert_eq!(workload.streams[5].start_offset, Duration::from_secs(15));
        let mut ids: Vec<u64> = workload.queries().map(|q| q.id).collect();
        ids.dedup();
        assert_eq!(ids, (0..64).collect::<Vec<u64>>());
    }

    #[test]
    fn a_stagger_beyond_durations_range_is_an_error_not_a_panic() {
        // `--stagger-s 1e19` used to panic here (`Duration * u32` overflows) before the
        // flag had a bound; the workload no longer relies on it.
        let huge = WorkloadSpec {
            stagger: Duration::from_secs(10_000_000_000_000_000_000),
            ..spec(3)
        };
        let e = Workload::generate(&huge).unwrap_err().to_string();
        assert!(e.contains("stream 2 would start"), "{e}");
    }

    #[test]
    fn both_kinds_are_drawn_and_tiny_tables_still_get_a_row() {
        let workload = Workload::generate(&spec(11)).unwrap();
        let kinds: Vec<QueryKind> = workload.queries().map(|q| q.query_type.kind).collect();
        assert!(kinds.contains(&QueryKind::Fast) && kinds.contains(&QueryKind::Slow));
        assert_eq!(rows_for_percent(10, 1), 1);
        assert_eq!(rows_for_percent(10, 100), 10);
    }

    #[test]
    fn a_dealt_mix_gives_each_stream_one_kind_in_turn() {
        let mix = Mix::columns(&["ABC", "BCD", "CDE"], 40).unwrap();
        let workload = Workload::generate(&WorkloadSpec { mix, ..spec(2) }).unwrap();
        for (s, stream) in workload.streams.iter().enumerate() {
            for q in &stream.queries {
                let first = u8::try_from(s % 3).unwrap();
                assert_eq!(q.query_type.kind, QueryKind::Columns { first }, "{q}");
                assert_eq!(q.rows.end - q.rows.start, 23_994_421, "{q}");
            }
        }
    }

    #[test]
    fn empty_specs_are_errors() {
        let mut empty = spec(1);
        empty.table_rows = 0;
        assert!(matches!(
            Workload::generate(&empty),
            Err(BenchError::EmptyTable)
        ));
        let mut none = spec(1);
        none.streams = 0;
        assert!(matches!(
            Workload::generate(&none),
            Err(BenchError::EmptyWorkload { .. })
        ));
    }

    #[test]
    fn standalone_queries_cover_each_type_once() {
        let queries = standalone_queries(&Mix::table2(), 1000, 5);
        assert_eq!(queries.len(), 8);
        assert_eq!(queries[3].query_type.to_string(), "F-100");
        assert_eq!(queries[3].rows, 0..1000);
        assert_eq!(queries, standalone_queries(&Mix::table2(), 1000, 5));
    }
}
