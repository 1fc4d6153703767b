//! How the workers of a parallel CScan (2012 paper §2.2) share its chunks: one ABM scan
//! whose workers take whichever chunk is ready (the paper's future work, built), or the
//! paper's own static split, one ABM scan per worker over a fixed run of the chunks.
//! The runtime's SQL layer and the simulator split a query the same way.

use serde::{Deserialize, Serialize};

use crate::spec::RowRanges;

/// How the workers of a parallel CScan share its chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Split {
    /// One ABM scan; each worker takes whichever chunk is ready.
    #[default]
    Dynamic,
    /// One ABM scan per worker, each over a fixed run of the chunks.
    Static,
}

/// The static split: `ranges` cut into `n` slices of consecutive chunks (chunk `k`
/// starts at `starts[k]`), each holding as nearly as possible the same number of the
/// chunks the ranges touch. A slice never shares a chunk with another, so no chunk is
/// wanted by two of the query's scans; with fewer chunks than workers the last slices
/// are empty (a scan that delivers nothing).
pub fn static_slices(ranges: &RowRanges, starts: &[u64], n: usize) -> Vec<RowRanges> {
    let n = n.max(1);
    let touched = touched_chunks(ranges, starts);
    (0..n)
        .map(|i| {
            let (from, to) = (touched.len() * i / n, touched.len() * (i + 1) / n);
            if from == to {
                return RowRanges::default();
            }
            let start = starts[touched[from]];
            let end = starts.get(touched[to - 1] + 1).copied().unwrap_or(u64::MAX);
            RowRanges::new(ranges.within(&(start..end)))
        })
        .collect()
}

/// The chunks `ranges` touch, ascending, each once (chunk `k` starts at `starts[k]`).
pub fn touched_chunks(ranges: &RowRanges, starts: &[u64]) -> Vec<usize> {
    let chunk_of = |row: u64| starts.partition_point(|&s| s <= row).saturating_sub(1);
    let mut touched: Vec<usize> = Vec::new();
    for r in ranges.ranges() {
        for k in chunk_of(r.start)..=chunk_of(r.end - 1) {
            if touched.last() != Some(&k) {
                touched.push(k);
            }
        }
    }
    touched
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_slices_cover_the_ranges_once_in_whole_chunks() {
        // Ten chunks of 100 tuples; the query reads 50..420 and 700..1000.
        let starts: Vec<u64> = (0..10).map(|k| k * 100).collect();
        let ranges = RowRanges::new([50..420, 700..1000]);
        assert_eq!(touched_chunks(&ranges, &starts), [0, 1, 2, 3, 4, 7, 8, 9]);
        let slices = static_slices(&ranges, &starts, 2);
        // Chunks 0-4 and 7-9 touched: four each.
        assert_eq!(slices[0], RowRanges::from(50..400));
        assert_eq!(slices[1], RowRanges::new([400..420, 700..1000]));
        let three = static_slices(&ranges, &starts, 3);
        let rows: u64 = three.iter().map(RowRanges::rows).sum();
        assert_eq!(rows, ranges.rows());
        assert_eq!(three[0], RowRanges::from(50..200));
        assert_eq!(three[1], RowRanges::from(200..420));
        // The paper's example: partitions over chunks 0-4 and 5-9.
        let all = static_slices(&RowRanges::all(1000), &starts, 2);
        assert_eq!(
            all,
            vec![RowRanges::from(0..500), RowRanges::from(500..1000)]
        );
        // More workers than chunks: the extra slices are empty.
        let few = static_slices(&RowRanges::from(0..150), &starts, 4);
        assert_eq!(few.iter().filter(|s| s.is_empty()).count(), 2);
        assert!(static_slices(&RowRanges::default(), &starts, 2)
            .iter()
            .all(RowRanges::is_empty));
    }
}
