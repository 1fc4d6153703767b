//! Several tables in one buffer (`SimConfig::tables`, the 2012 paper's §4.2 setup: one
//! buffer for every TPC-H table): one table given as `tables` runs exactly as the
//! one-table setup; several finish under every policy with the invariants checked after
//! every event; a chunk's CPU cost is that chunk's bytes; bad setups are refused.

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::{
    geometries, geometry, simulate, simulate_catalog, simulate_policy, table_policies, CpuModel,
    DeviceModel, QuerySpec, RunResult, SimConfig, SimError, SimFaults, SimTable, StreamSpec,
    Workload,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::ops::Range;

/// Seeds per test: each runs every policy.
const SEEDS: u64 = 3;

/// A query of one run of chunks of `table`.
fn query(name: String, table: u32, chunks: Range<u32>, columns: u64) -> QuerySpec {
    QuerySpec {
        name,
        kind: format!("t{table}"),
        cycles_per_byte: 5.0,
        table,
        chunks: std::iter::once(chunks).collect(),
        columns,
        workers: 1,
        split: Split::Dynamic,
        snapshot: None,
    }
}

/// A seeded query over a random run of `chunks` chunks of `table`, reading a random
/// non-empty subset of its `columns` columns (or all, as 0).
fn random_query(
    rng: &mut ChaCha8Rng,
    name: String,
    table: u32,
    chunks: u32,
    columns: u32,
) -> QuerySpec {
    let start = rng.random_range(0..chunks);
    let end = rng.random_range(start + 1..=chunks);
    let mask = match rng.random_range(0..4) {
        0 => 0,
        _ => rng.random_range(1..1u64 << columns),
    };
    QuerySpec {
        cycles_per_byte: rng.random_range(1.0..20.0),
        workers: rng.random_range(1..=2),
        ..query(name, table, start..end, mask)
    }
}

fn device() -> DeviceModel {
    DeviceModel::Bandwidth {
        bytes_per_sec: 100e6,
        latency_s: 0.001,
    }
}

// ---- a. One table given as `tables` is the one-table setup.

const ONE_CHUNKS: u32 = 16;
const ONE_COLUMNS: [u64; 3] = [300_000, 100_000, 600_000];

fn one_table_setup(seed: u64) -> (SimConfig, SimConfig, Workload) {
    let single = SimConfig {
        column_bytes: ONE_COLUMNS.to_vec(),
        device: device(),
        check_invariants: true,
        record_trace: true,
        faults: Some(SimFaults {
            seed,
            per_mille: 50,
        }),
        ..SimConfig::paper_2007(ONE_CHUNKS, 1_000_000, 5)
    };
    // The one-table fields say something else: they must be ignored.
    let tables = SimConfig {
        column_bytes: Vec::new(),
        chunk_count: 1,
        chunk_bytes: 1,
        tables: vec![SimTable {
            name: "t".into(),
            column_bytes: vec![ONE_COLUMNS.to_vec(); ONE_CHUNKS as usize],
        }],
        ..single.clone()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let streams = (0..4)
        .map(|s| StreamSpec {
            start_s: rng.random_range(0.0..0.5),
            queries: (0..3)
                .map(|k| random_query(&mut rng, format!("s{s}q{k}"), 0, ONE_CHUNKS, 3))
                .collect(),
        })
        .collect();
    (single, tables, Workload::new(streams))
}

/// Every number of a run but the host time spent scheduling.
fn assert_same_run(a: &RunResult, b: &RunResult, what: &str) {
    assert_eq!(a.total_time_s, b.total_time_s, "{what}: total time");
    assert_eq!(a.stream_times_s, b.stream_times_s, "{what}: stream times");
    assert_eq!(a.chunk_loads, b.chunk_loads, "{what}: loads");
    assert_eq!(a.bytes_loaded, b.bytes_loaded, "{what}: bytes");
    assert_eq!(a.bytes_read, b.bytes_read, "{what}: bytes read");
    assert_eq!(a.evictions, b.evictions, "{what}: evictions");
    assert_eq!(
        a.spare_evictions, b.spare_evictions,
        "{what}: spare evictions"
    );
    assert_eq!(a.load_failures, b.load_failures, "{what}: load failures");
    assert_eq!(a.boundaries, b.boundaries, "{what}: boundaries");
    assert_eq!(a.cpu_use, b.cpu_use, "{what}: cpu use");
    assert_eq!(a.abm_calls, b.abm_calls, "{what}: ABM calls");
    assert_eq!(a.max_classes, b.max_classes, "{what}: classes");
    assert_eq!(a.trace, b.trace, "{what}: trace");
    assert_eq!(a.queries.len(), b.queries.len(), "{what}: queries");
    for (p, q) in a.queries.iter().zip(&b.queries) {
        let at = |r: &coopscan_sim::QueryResult| {
            (
                r.name.clone(),
                r.start_s,
                r.end_s,
                r.io_wait_s,
                r.held_s,
                r.holds,
                r.chunks,
                r.loads,
            )
        };
        assert_eq!(at(p), at(q), "{what}");
    }
}

#[test]
fn one_table_as_tables_runs_exactly_as_the_one_table_setup() {
    for seed in 0..SEEDS {
        let (single, tables, workload) = one_table_setup(seed);
        assert_eq!(geometry(&single).unwrap(), geometry(&tables).unwrap());
        for policy in PolicyKind::ALL {
            let what = format!("seed {seed} {policy}");
            let a = simulate(&single, &workload, policy).unwrap_or_else(|e| panic!("{what}: {e}"));
            let b = simulate(&tables, &workload, policy).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(a.chunk_loads > 0 && a.trace.as_ref().is_some_and(|t| !t.is_empty()));
            assert_same_run(&a, &b, &what);
        }
    }
}

// ---- b. Several tables of different sizes in a buffer smaller than the data.

/// Three tables: 12 chunks of 3 columns (the last half size), 5 chunks of 2 columns
/// (the last a tenth), and one tiny chunk of 2 columns.
fn three_tables() -> Vec<SimTable> {
    let mut big = vec![vec![400_000, 100_000, 800_000]; 11];
    big.push(vec![200_000, 50_000, 400_000]);
    let mut mid = vec![vec![300_000, 200_000]; 4];
    mid.push(vec![30_000, 20_000]);
    vec![
        SimTable {
            name: "big".into(),
            column_bytes: big,
        },
        SimTable {
            name: "mid".into(),
            column_bytes: mid,
        },
        SimTable {
            name: "tiny".into(),
            column_bytes: vec![vec![1_000, 3_000]],
        },
    ]
}

const BUDGET_BYTES: u64 = 5_000_000;

fn three_table_setup(seed: u64) -> (SimConfig, Workload) {
    let tables = three_tables();
    let cfg = SimConfig {
        tables: tables.clone(),
        budget_bytes: Some(BUDGET_BYTES),
        device: device(),
        cpu: CpuModel::new(2e9, 2),
        check_invariants: true,
        record_trace: true,
        max_events: 1_000_000,
        ..SimConfig::paper_2007(1, 1, 2)
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let streams = (0..5)
        .map(|s| StreamSpec {
            start_s: rng.random_range(0.0..0.3),
            queries: (0..4)
                .map(|k| {
                    let t = rng.random_range(0..tables.len());
                    let chunks = tables[t].column_bytes.len() as u32;
                    let columns = tables[t].column_bytes[0].len() as u32;
                    random_query(&mut rng, format!("s{s}q{k}"), t as u32, chunks, columns)
                })
                .collect(),
        })
        .collect();
    (cfg, Workload::new(streams))
}

/// Bytes of table `t`'s piece of `chunk` and `column`, from the spec.
fn piece_bytes(tables: &[SimTable], t: u32, chunk: u32, column: u32) -> u64 {
    tables[t as usize].column_bytes[chunk as usize][column as usize]
}

/// The distinct (table, chunk, column) pieces the queries read, from the spec.
fn pieces_needed(tables: &[SimTable], workload: &Workload) -> BTreeSet<(u32, u32, u32)> {
    let mut pieces = BTreeSet::new();
    for q in workload.streams.iter().flat_map(|s| &s.queries) {
        let columns = tables[q.table as usize].column_bytes[0].len() as u32;
        let read = (0..columns).filter(|c| q.columns == 0 || q.columns >> c & 1 == 1);
        for c in read {
            for k in q.chunks.iter().flat_map(|r| r.clone()) {
                pieces.insert((q.table, k, c));
            }
        }
    }
    pieces
}

#[test]
fn several_tables_in_one_buffer_finish_under_every_policy() {
    for seed in 0..SEEDS {
        let (cfg, workload) = three_table_setup(seed);
        let tables = &cfg.tables;
        let all_bytes: u64 = tables
            .iter()
            .flat_map(|t| t.column_bytes.iter().flatten())
            .sum();
        assert!(
            BUDGET_BYTES < all_bytes / 2,
            "the buffer must be smaller than the data"
        );
        let needed = pieces_needed(tables, &workload);
        let needed_bytes: u64 = needed
            .iter()
            .map(|&(t, k, c)| piece_bytes(tables, t, k, c))
            .sum();
        let specs = workload.queries_by_name();
        let queried: BTreeSet<u32> = specs.values().map(|q| q.table).collect();
        for policy in PolicyKind::ALL {
            let what = format!("seed {seed} {policy}");
            let run = simulate(&cfg, &workload, policy).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(run.queries.len(), workload.query_count(), "{what}");
            for q in &run.queries {
                let spec = specs[q.name.as_str()];
                let want: u32 = spec.chunks.iter().map(|r| r.end - r.start).sum();
                assert_eq!(q.chunks, want, "{what}: {}", q.name);
                assert!(q.end_s >= q.start_s, "{what}: {}", q.name);
            }
            assert!(
                run.evictions > 0,
                "{what}: the tables must compete for the buffer"
            );
            let on_behalf: u64 = run.queries.iter().map(|q| q.loads).sum();
            assert!(
                on_behalf <= run.chunk_loads,
                "{what}: {on_behalf} > {}",
                run.chunk_loads
            );
            // Every piece a query reads is read at least once, of its own table's size.
            assert!(
                run.bytes_loaded >= needed_bytes,
                "{what}: read {} < needed {needed_bytes}",
                run.bytes_loaded
            );
            let trace = run.trace.as_ref().unwrap();
            let mut referenced = BTreeSet::new();
            for r in trace {
                let (t, k) = (r.piece.table.0, r.piece.chunk.0);
                let column = r.piece.columns.single().expect("DSM pieces are one column");
                assert_eq!(
                    r.bytes,
                    piece_bytes(tables, t, k, u32::from(column)),
                    "{what}"
                );
                referenced.insert((t, k, u32::from(column)));
            }
            assert_eq!(referenced, needed, "{what}: the pieces the queries read");
            let tables_read: BTreeSet<u32> = referenced.iter().map(|p| p.0).collect();
            assert_eq!(tables_read, queried, "{what}");
        }
    }
}

// ---- c. A chunk's CPU cost is that chunk's bytes.

#[test]
fn a_query_pays_cycles_for_each_chunks_own_bytes() {
    // Table 1 is the one queried; its chunks differ in size, the last smallest.
    let queried = SimTable {
        name: "uneven".into(),
        column_bytes: vec![
            vec![1_000_000, 3_000_000, 500_000],
            vec![200_000, 700_000, 100_000],
            vec![4_000_000, 10_000, 90_000],
            vec![50_000, 20_000, 5_000],
        ],
    };
    let other = SimTable {
        name: "other".into(),
        column_bytes: vec![vec![8_000_000]; 3],
    };
    let hz = 2e9;
    let cfg = SimConfig {
        tables: vec![other, queried.clone()],
        // A read takes no time: the latency is the CPU's alone.
        device: DeviceModel::FixedPerChunk { seconds: 0.0 },
        cpu: CpuModel::new(hz, 1),
        check_invariants: true,
        ..SimConfig::paper_2007(1, 1, 4)
    };
    for (columns, chunks) in [(0b101u64, 0..4), (0, 1..3), (0b010, 2..4)] {
        let q = QuerySpec {
            cycles_per_byte: 7.5,
            ..query("q".into(), 1, chunks.clone(), columns)
        };
        let read = |c: usize| columns == 0 || columns >> c & 1 == 1;
        let bytes: u64 = queried.column_bytes[chunks.start as usize..chunks.end as usize]
            .iter()
            .flat_map(|pieces| pieces.iter().enumerate().filter(|(c, _)| read(*c)))
            .map(|(_, b)| b)
            .sum();
        let want_s = q.cycles_per_byte * bytes as f64 / hz;
        let workload = Workload::independent(vec![(0.0, q)]);
        for policy in PolicyKind::ALL {
            let run = simulate(&cfg, &workload, policy).unwrap();
            let latency = run.queries[0].latency_s;
            assert!(
                (latency - want_s).abs() <= 1e-9 * want_s,
                "{policy} columns {columns:#b} chunks {chunks:?}: {latency} s, want {want_s} s"
            );
        }
    }
}

// ---- d. Bad setups are refused before anything runs.

fn refused(result: Result<RunResult, SimError>) -> String {
    match result {
        Err(SimError::InvalidSetup(why)) => why,
        Err(e) => panic!("not a setup error: {e}"),
        Ok(_) => panic!("a bad setup ran"),
    }
}

fn two_tables() -> SimConfig {
    SimConfig {
        tables: three_tables()[..2].to_vec(),
        ..SimConfig::paper_2007(1, 1, 4)
    }
}

#[test]
fn a_query_of_a_missing_table_is_refused() {
    let workload = |table| Workload::independent(vec![(0.0, query("lost".into(), table, 0..1, 0))]);
    let why = refused(simulate(&two_tables(), &workload(2), PolicyKind::Relevance));
    assert!(why.contains("lost") && why.contains("table 2"), "{why}");
    // The one-table setup has table 0 only.
    let one = SimConfig::paper_2007(4, 1000, 4);
    refused(simulate(&one, &workload(1), PolicyKind::Normal));
    assert!(simulate(&one, &workload(0), PolicyKind::Normal).is_ok());
}

#[test]
fn bad_tables_are_refused() {
    let workload = Workload::independent(vec![(0.0, query("q".into(), 0, 0..1, 0))]);
    let with = |tables: Vec<SimTable>| SimConfig {
        tables,
        ..two_tables()
    };
    let empty = SimTable {
        name: "empty".into(),
        column_bytes: Vec::new(),
    };
    let why = refused(simulate(&with(vec![empty]), &workload, PolicyKind::Normal));
    assert!(why.contains("empty") && why.contains("no chunks"), "{why}");
    let ragged = SimTable {
        name: "ragged".into(),
        column_bytes: vec![vec![10, 20], vec![10]],
    };
    let why = refused(simulate(&with(vec![ragged]), &workload, PolicyKind::Normal));
    assert!(why.contains("ragged"), "{why}");
    let no_columns = SimTable {
        name: "bare".into(),
        column_bytes: vec![Vec::new()],
    };
    refused(simulate(
        &with(vec![no_columns]),
        &workload,
        PolicyKind::Normal,
    ));
    let zero = SimTable {
        name: "zero".into(),
        column_bytes: vec![vec![10, 0]],
    };
    refused(simulate(&with(vec![zero]), &workload, PolicyKind::Normal));
    let tiled = SimConfig {
        tiles: true,
        ..two_tables()
    };
    refused(simulate(&tiled, &workload, PolicyKind::Normal));
    let drawn = SimConfig {
        record_timeline: true,
        ..two_tables()
    };
    refused(simulate(&drawn, &workload, PolicyKind::Normal));
}

#[test]
fn policies_must_be_one_per_table_and_of_one_kind() {
    let cfg = two_tables();
    let workload = Workload::independent(vec![(0.0, query("q".into(), 1, 0..2, 0))]);
    assert_eq!(geometries(&cfg).unwrap().len(), 2);
    assert!(matches!(geometry(&cfg), Err(SimError::InvalidSetup(_))));
    let one = table_policies(&cfg, PolicyKind::Pbm).unwrap().remove(0);
    refused(simulate_policy(&cfg, &workload, one));
    let mut mixed = table_policies(&cfg, PolicyKind::Pbm).unwrap();
    mixed[1] = table_policies(&cfg, PolicyKind::Attach).unwrap().remove(1);
    refused(simulate_catalog(&cfg, &workload, mixed, &BTreeSet::new()));
    let built = table_policies(&cfg, PolicyKind::Pbm).unwrap();
    let run = simulate_catalog(&cfg, &workload, built, &BTreeSet::new()).unwrap();
    assert_eq!((run.policy, run.queries[0].chunks), (PolicyKind::Pbm, 2));
}

#[test]
fn serialized_setups_name_tables_only_when_there_are_several() {
    let one = serde_json::to_value(SimConfig::paper_2007(4, 1000, 4)).unwrap();
    assert!(one.get("tables").is_none() && one.get("budget_bytes").is_none());
    let several = serde_json::to_value(two_tables()).unwrap();
    assert_eq!(several["tables"][1]["name"], "mid");
    let on_zero = serde_json::to_value(query("q".into(), 0, 0..1, 0)).unwrap();
    assert!(on_zero.get("table").is_none());
    let on_one = serde_json::to_value(query("q".into(), 1, 0..1, 0)).unwrap();
    assert_eq!(on_one["table"], 1);
}
