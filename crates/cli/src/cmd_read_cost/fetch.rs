//! `read-cost --selected-pct`: the 2004 report's Figure 7 (§4.2, "Index Selections").
//! An unclustered index yields tuples spread uniformly over the table; fetched in sorted
//! order, each page holding a selected tuple is read once, one synchronous request after
//! another. Per percentage of selected tuples, that cost ÷ reading the same chunks
//! whole: where it passes 1, a cooperative scan that "cherry-picks" the pages as chunks
//! arrive costs no more I/O than the index.

use std::time::Instant;

use anyhow::Context;
use coopscan_bench::samples::Samples;
use coopscan_storage::device::Device;
use coopscan_storage::read::pages_for_rows;
use coopscan_storage::{Table, TableFiles};
use serde_json::json;

use super::ReadCostArgs;

/// Most tuples one percentage may select (their row numbers are held, 8 bytes each):
/// 256 MB, and a bound on the drawing time whatever row count a manifest claims.
const MAX_SELECTED: f64 = (1u64 << 25) as f64;

/// One table, column count and percentage: its measurements.
struct Fetch {
    /// Index into the percentages (and their selections).
    selection: usize,
    table: usize,
    columns: usize,
    pct: f64,
    pages: u64,
    bytes: u64,
    seconds: Samples,
    scan_seconds: Samples,
}

pub(super) fn run(
    args: &ReadCostArgs,
    counts: &[usize],
    tables: &[Table],
    files: &[TableFiles],
    device: &Device,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.selected_pct
            .iter()
            .all(|p| p.is_finite() && *p > 0.0 && *p <= 100.0),
        "--selected-pct must each be a percentage in (0, 100]"
    );
    anyhow::ensure!(args.chunks != Some(0), "--chunks must be at least 1");
    // The same selections for every table and column count.
    let rows = tables.iter().map(Table::rows).max().unwrap_or(0);
    for &pct in &args.selected_pct {
        let expected = rows as f64 * pct / 100.0;
        anyhow::ensure!(
            expected <= MAX_SELECTED,
            "--selected-pct {pct} selects about {expected:.0} of {rows} tuples; at most \
             {MAX_SELECTED} can be fetched: use a smaller percentage"
        );
    }
    let selections: Vec<Vec<u64>> = args
        .selected_pct
        .iter()
        .map(|&pct| selection(args.seed, pct, rows))
        .collect();
    let mut fetches = Vec::new();
    for &k in counts {
        let projection: Vec<usize> = (0..k).collect();
        // Setup, untimed: each chosen chunk's pages with their tuples, for every table,
        // before any timed read (so no read is timed right after the same bytes).
        let chosen: Vec<Vec<usize>> = tables
            .iter()
            .map(|t| spread(t.chunk_count(), args.chunks))
            .collect();
        let maps = tables
            .iter()
            .zip(files)
            .zip(&chosen)
            .map(|((t, f), chunks)| {
                chunks
                    .iter()
                    .map(|&c| t.page_rows(device, f, c, &projection))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let first = fetches.len();
        for (s, &pct) in args.selected_pct.iter().enumerate() {
            for t in 0..tables.len() {
                fetches.push(Fetch {
                    selection: s,
                    table: t,
                    columns: k,
                    pct,
                    pages: 0,
                    bytes: 0,
                    seconds: Samples::default(),
                    scan_seconds: Samples::default(),
                });
            }
        }
        for _ in 0..args.repeat {
            let scans: Vec<f64> = tables
                .iter()
                .zip(files)
                .zip(&chosen)
                .map(|((t, f), chunks)| scan_seconds(t, f, device, chunks, &projection))
                .collect::<anyhow::Result<_>>()?;
            for fetch in &mut fetches[first..] {
                let t = fetch.table;
                let table = &tables[t];
                let selected = &selections[fetch.selection];
                // A DSM page on a chunk boundary is read once, for both chunks.
                let mut seen = std::collections::HashSet::new();
                let pages: Vec<_> = chosen[t]
                    .iter()
                    .zip(&maps[t])
                    .flat_map(|(&c, columns)| pages_for_rows(columns, in_chunk(table, c, selected)))
                    .filter(|p| seen.insert((p.file, p.offset)))
                    .collect();
                let cost = table
                    .fetch_cost(device, &files[t], &pages)
                    .with_context(|| format!("{}", table.dir().display()))?;
                fetch.pages = cost.requests;
                fetch.bytes = cost.bytes;
                fetch.seconds.0.push(cost.elapsed.as_secs_f64());
                fetch.scan_seconds.0.push(scans[t]);
            }
        }
    }
    if args.json {
        print_json(tables, &fetches)
    } else {
        print_text(tables, &fetches);
        Ok(())
    }
}

/// `n` chunk indexes spread evenly over `count` (all of them without `n`).
fn spread(count: usize, n: Option<usize>) -> Vec<usize> {
    let n = n.unwrap_or(count).min(count);
    (0..n).map(|i| i * count / n).collect()
}

/// Seconds to read `chunks` whole for `projection`, one after another.
fn scan_seconds(
    table: &Table,
    files: &TableFiles,
    device: &Device,
    chunks: &[usize],
    projection: &[usize],
) -> anyhow::Result<f64> {
    let start = Instant::now();
    for &c in chunks {
        table.read_chunk(device, files, c, projection)?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The selected tuples of `0..rows`, ascending: each with probability `pct` %, drawn
/// from `seed` and `pct` alone, so every layout of the same rows selects the same.
fn selection(seed: u64, pct: f64, rows: u64) -> Vec<u64> {
    let p = pct / 100.0;
    let mut state = seed ^ pct.to_bits();
    let mut next_unit = move || {
        // SplitMix64, then 53 bits as a uniform in (0, 1].
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) + 1) as f64 / (1u64 << 53) as f64
    };
    if p >= 1.0 {
        return (0..rows).collect();
    }
    // Gaps between selected tuples are geometric: skip them instead of drawing per tuple.
    let log_q = (-p).ln_1p();
    let mut out = Vec::new();
    let mut row = 0u64;
    loop {
        let gap = (next_unit().ln() / log_q).floor();
        if !gap.is_finite() || gap >= (rows - row) as f64 {
            return out;
        }
        row += gap as u64;
        out.push(row);
        row += 1;
        if row >= rows {
            return out;
        }
    }
}

/// The part of `selected` inside chunk `c`.
fn in_chunk<'a>(table: &Table, c: usize, selected: &'a [u64]) -> &'a [u64] {
    let rows = table.chunk(c).rows();
    let lo = selected.partition_point(|&r| r < rows.start);
    let hi = selected.partition_point(|&r| r < rows.end);
    &selected[lo..hi]
}

fn print_text(tables: &[Table], fetches: &[Fetch]) {
    print!("{:>7} {:>9}", "columns", "selected%");
    for t in tables {
        print!(
            " | {:>30}",
            format!("{}: fetch s, ÷ scan, pages", t.layout())
        );
    }
    println!();
    for row in fetches.chunks(tables.len()) {
        print!("{:>7} {:>9}", row[0].columns, row[0].pct);
        for f in row {
            let ratio = f.seconds.median() / f.scan_seconds.median();
            let text = format!("{:.4}, {:.2}, {}", f.seconds.median(), ratio, f.pages);
            print!(" | {text:>30}");
        }
        println!();
    }
}

fn print_json(tables: &[Table], fetches: &[Fetch]) -> anyhow::Result<()> {
    let rows: Vec<serde_json::Value> = fetches
        .iter()
        .map(|f| {
            let t = &tables[f.table];
            json!({
                "dir": t.dir().display().to_string(),
                "layout": t.layout().to_string(),
                "columns": f.columns,
                "selected_pct": f.pct,
                "pages": f.pages,
                "bytes": f.bytes,
                "seconds_median": f.seconds.median(),
                "scan_seconds_median": f.scan_seconds.median(),
                "seconds": f.seconds.0,
                "scan_seconds": f.scan_seconds.0,
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&rows)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_are_seeded_ascending_and_near_their_share() {
        let a = selection(7, 1.0, 200_000);
        assert_eq!(a, selection(7, 1.0, 200_000));
        assert_ne!(a, selection(8, 1.0, 200_000));
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(
            (1_700..2_300).contains(&a.len()),
            "{} of 2000 expected",
            a.len()
        );
        assert_eq!(selection(7, 100.0, 10), (0..10).collect::<Vec<_>>());
        assert!(selection(7, 0.001, 1000).len() < 5);
        assert!(selection(7, 50.0, 0).is_empty());
    }

    #[test]
    fn spread_chunks_cover_the_table_evenly() {
        assert_eq!(spread(10, Some(3)), [0, 3, 6]);
        assert_eq!(spread(4, None), [0, 1, 2, 3]);
        assert_eq!(spread(2, Some(5)), [0, 1]);
    }
}
