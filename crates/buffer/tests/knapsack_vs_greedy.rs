//! Knapsack eviction against the greedy loop on live ABM states: random DSM runs under
//! relevance, and before every load both planners answer the same requests. The loss of
//! a plan is computed here from its definition (a scan that still needs a chunk is lost
//! when any column it reads is evicted; almost-starved scans weigh Qmax, others 1), not
//! by the planners' code. The knapsack must free enough, never lose more than the
//! greedy, and never fail where the greedy succeeds. Tables are small (≤ 8 chunks), so
//! every candidate chunk is offered to the knapsack.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

const ROWS_PER_CHUNK: u64 = 10;

/// Keep-relevance-weighted value lost by evicting `victims`.
fn loss(state: &AbmState, victims: &[PieceId]) -> u64 {
    let mut evicted: BTreeMap<ChunkId, u64> = BTreeMap::new();
    for v in victims {
        *evicted.entry(v.chunk).or_default() |= state.col_bit(*v);
    }
    let almost = state.almost_starved_mask();
    evicted
        .iter()
        .map(|(chunk, cols)| {
            state
                .interest(*chunk)
                .iter()
                .filter(|s| state.active_scan(*s).cols & cols != 0)
                .map(|s| {
                    if almost.contains(s) {
                        MAX_SCANS as u64
                    } else {
                        1
                    }
                })
                .sum::<u64>()
        })
        .sum()
}

/// Compares both planners on a load of the missing columns of each chunk.
fn compare(state: &AbmState) -> Result<(u32, u32), TestCaseError> {
    let (mut compared, mut better) = (0, 0);
    let for_scan = state.starved_mask().iter().next();
    for c in 0..state.chunk_count() {
        let chunk = ChunkId(c);
        let cols = state.missing_cols(chunk, state.all_cols());
        if cols == 0 || state.bytes_of(chunk, cols) <= state.pool().free_bytes() {
            continue; // nothing to evict
        }
        let request = EvictionRequest {
            bytes: state.bytes_of(chunk, cols),
            chunk: Some(chunk),
            for_scan,
        };
        let ranking = RelevanceRanking::new(state, &request);
        let greedy = plan_eviction(&mut KeepRelevanceReplacer, state.pool(), &ranking, &request);
        let knapsack = plan_knapsack(state.pool(), &ranking, &request);
        let Some(greedy) = greedy else { continue };
        let Some(knapsack) = knapsack else {
            return Err(TestCaseError::fail(
                "the knapsack failed where the greedy did not",
            ));
        };
        let freed: u64 = knapsack.iter().map(|p| state.piece_bytes(*p)).sum();
        prop_assert!(state.pool().free_bytes() + freed >= request.bytes);
        for p in &knapsack {
            prop_assert!(state.pool().is_evictable(*p) && p.chunk != chunk);
        }
        prop_assert!(
            loss(state, &knapsack) <= loss(state, &greedy),
            "knapsack {:?} loses more than greedy {:?}",
            knapsack,
            greedy
        );
        compared += 1;
        better += u32::from(loss(state, &knapsack) < loss(state, &greedy));
    }
    Ok((compared, better))
}

fn run(
    chunks: u32,
    sizes: &[u64],
    scans: &[(u32, u32, u64)],
    frames: u32,
    steps: u16,
) -> Result<(u32, u32), TestCaseError> {
    let geometry = TableGeometry::uniform(chunks, ROWS_PER_CHUNK).unwrap();
    let columns = (0..chunks as usize)
        .map(|c| (0..4).map(|k| sizes[(c * 4 + k) % sizes.len()]).collect())
        .collect();
    let geometry = geometry.with_column_bytes(columns).unwrap();
    let config = AbmConfig::new(frames);
    let mut abm = Abm::with_kind(geometry, config, PolicyKind::Relevance).unwrap();
    let mut ids = Vec::new();
    for &(start, len, cols) in scans {
        let start = start % chunks;
        let end = start + 1 + len % (chunks - start);
        let rows = u64::from(start) * ROWS_PER_CHUNK..u64::from(end) * ROWS_PER_CHUNK;
        let spec = ScanSpec::new(rows, ColumnMask(cols));
        if let Ok(r) = abm.register_scan(&spec, Nanos(0)) {
            ids.push(r.scan);
        }
    }
    let (mut compared, mut better) = (0, 0);
    let mut out = Vec::new();
    for step in 0..steps {
        let now = Nanos(u64::from(step) * 1_000_000);
        for &id in &ids {
            if abm
                .state()
                .active_mask()
                .iter()
                .any(|s| abm.state().active_scan(s).id == id)
            {
                let holding = abm.state().active_mask().iter().any(|s| {
                    abm.state().active_scan(s).id == id
                        && abm.state().active_scan(s).is_processing()
                });
                if holding && step % 3 == 0 {
                    abm.release_chunk(id, now).unwrap();
                }
                if !holding || step % 3 == 0 {
                    let _ = abm.next_chunk(id, now);
                }
            }
        }
        let (c, b) = compare(abm.state())?;
        (compared, better) = (compared + c, better + b);
        if let Some(load) = abm.next_load(now) {
            for p in load.pieces {
                abm.load_completed(p, now, &mut out).unwrap();
            }
        }
        abm.check_invariants().unwrap();
    }
    Ok((compared, better))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn the_knapsack_never_loses_more_than_the_greedy_loop(
        chunks in 2u32..=8,
        sizes in proptest::collection::vec(1u64..6, 32),
        scans in proptest::collection::vec((0u32..8, 0u32..8, 1u64..16), 1..6),
        frames in 2u32..5,
        steps in 10u16..80,
    ) {
        run(chunks, &sizes, &scans, frames, steps)?;
    }
}

/// The comparison is not vacuous: over fixed runs the planners meet many requests that
/// need eviction, and the knapsack loses strictly less on some. (Such requests are
/// rare: this run was found by searching 2,224 random ones; most evictions either take
/// pieces nobody needs or one chunk, where both planners agree.)
#[test]
fn the_comparison_meets_real_evictions() {
    let sizes: Vec<u64> = (0..32).map(|i| 1 + (i * 7 % 5)).collect();
    let scans = [
        (0, 7, 0b0011),
        (2, 5, 0b0110),
        (1, 6, 0b1100),
        (0, 7, 0b0001),
    ];
    let (compared, _) = run(8, &sizes, &scans, 2, 80).unwrap();
    assert!(compared > 20, "only {compared} comparisons");
    let sizes = [
        2, 1, 1, 1, 4, 4, 5, 5, 2, 5, 3, 4, 3, 5, 3, 3, 1, 3, 1, 1, 1, 5, 4, 2, 3, 2, 1, 2, 2, 3,
        4, 2,
    ];
    let scans = [(0, 6, 9), (2, 6, 3), (6, 6, 15), (3, 2, 5), (5, 3, 14)];
    let (_, better) = run(7, &sizes, &scans, 2, 19).unwrap();
    assert!(better > 0, "the knapsack never did better");
}
