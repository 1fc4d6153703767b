//! The chunk map: which bytes hold which tuples.
//!
//! In NSM/PAX a chunk *is* a run of pages. In DSM a chunk is a logical tuple range and
//! every column has its own pages holding a varying number of tuples (compression), so
//! a page may hold tuples of two chunks and a chunk spans a different number of pages
//! in each column (the 2007 paper's Figure 9). [`dsm_page_range`] answers "which pages
//! of a column hold tuples `[a, b)`" from the column's page directory.

use std::ops::Range;

/// Pages (as a page-number range) of a DSM column whose tuples intersect `rows`.
/// `page_row_starts` is the first row of every page, ascending, starting at 0;
/// `total_rows` is the column's row count. Empty for an empty or out-of-range request.
pub fn dsm_page_range(page_row_starts: &[u64], total_rows: u64, rows: Range<u64>) -> Range<u64> {
    let rows = rows.start..rows.end.min(total_rows);
    if rows.is_empty() || page_row_starts.is_empty() {
        return 0..0;
    }
    // Last page starting at or before `rows.start`, through the last page starting
    // before `rows.end`.
    let first = page_row_starts
        .partition_point(|&s| s <= rows.start)
        .saturating_sub(1);
    let end = page_row_starts.partition_point(|&s| s < rows.end);
    first as u64..end as u64
}

/// Chunks (as an index range) whose tuples intersect `rows`, given ascending chunk
/// start rows.
pub fn chunk_range(chunk_row_starts: &[u64], total_rows: u64, rows: Range<u64>) -> Range<usize> {
    let rows = rows.start..rows.end.min(total_rows);
    if rows.is_empty() || chunk_row_starts.is_empty() {
        return 0..0;
    }
    let first = chunk_row_starts
        .partition_point(|&s| s <= rows.start)
        .saturating_sub(1);
    let end = chunk_row_starts.partition_point(|&s| s < rows.end);
    first..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_straddling_a_chunk_boundary_are_included_on_both_sides() {
        let starts = [0, 100, 250, 300];
        assert_eq!(dsm_page_range(&starts, 400, 0..100), 0..1);
        assert_eq!(dsm_page_range(&starts, 400, 99..101), 0..2);
        assert_eq!(dsm_page_range(&starts, 400, 100..250), 1..2);
        assert_eq!(dsm_page_range(&starts, 400, 260..400), 2..4);
        assert_eq!(dsm_page_range(&starts, 400, 390..500), 3..4);
        assert_eq!(dsm_page_range(&starts, 400, 400..500), 0..0);
        assert_eq!(dsm_page_range(&starts, 400, 5..5), 0..0);
    }
}
