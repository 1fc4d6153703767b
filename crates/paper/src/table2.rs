//! The 2007 paper's Table 2 (../shared/papers/cooperative-scans-vldb2007.txt §5.1-5.2):
//! its setup, and the numbers it published, shown beside ours. Times in seconds.
//!
//! Setup: lineitem of TPC-H SF10 in PAX (4 GB) in 256 chunks of 16 MB, a buffer of 64
//! chunks, a disk of 200 MB/s, 2 CPUs with each query on one; 16 streams of 4 queries,
//! streams started 3 s apart, each query FAST (Q6) or SLOW (Q1 + arithmetic) over 1, 10,
//! 50 or 100 % of the table from a random start.

/// Chunks in the paper's table.
pub const CHUNKS: u32 = 256;
/// The paper's chunk size in MiB.
pub const CHUNK_MIB: u64 = 16;
/// Buffer frames: a quarter of the table.
pub const BUFFER_CHUNKS: u32 = 64;
/// The paper's disk bandwidth in MiB/s (a full scan of 4 GiB in about 20 s).
pub const DISK_MIB_S: f64 = 200.0;
pub const STREAMS: usize = 16;
pub const QUERIES_PER_STREAM: usize = 4;
/// Seconds between stream starts.
pub const STAGGER_S: f64 = 3.0;
/// The ranges a query covers, in percent of the table.
pub const RANGE_PERCENTS: [u32; 4] = [1, 10, 50, 100];
/// F-100 standalone: a full FAST scan, I/O bound.
pub const F100_STANDALONE_S: f64 = 20.37;
/// S-100 standalone: a full SLOW scan, CPU bound.
pub const S100_STANDALONE_S: f64 = 35.27;
/// SLOW's CPU time over the table's read time, as the paper states it ("about 1.75");
/// its standalone times give 35.27 / 20.37 = 1.73.
pub const SLOW_CPU_OVER_READ: f64 = 1.75;

/// The buffer as a percentage of the table (25 %).
pub const fn buffer_pct() -> f64 {
    BUFFER_CHUNKS as f64 * 100.0 / CHUNKS as f64
}

/// The stagger as a fraction of a full FAST scan: streams enter while earlier ones are
/// ~15 % into a full scan. Runs at other bandwidths keep this fraction.
pub const fn stagger_over_scan() -> f64 {
    STAGGER_S / F100_STANDALONE_S
}

use crate::published::{system, Published};
pub use crate::published::{PaperCell, PaperQueryRow, PaperSystem, POLICIES as TABLE2_POLICIES};

/// Table 2 as a whole, for reports.
pub const PUBLISHED: Published = Published {
    name: "Table 2",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, Table 2",
    system: &TABLE2_SYSTEM,
    query_types: &TABLE2_QUERIES,
};

pub const TABLE2_SYSTEM: [PaperSystem; 4] = [
    system("normal", 283.72, 6.42, 453.06, 0.5320, 4186),
    system("attach", 160.81, 3.72, 281.19, 0.8131, 2325),
    system("elevator", 138.41, 13.52, 244.45, 0.9020, 1404),
    system("relevance", 99.55, 1.96, 238.16, 0.9394, 1842),
];

const fn cell(avg: f64, stddev: f64, norm: f64, io: u64) -> PaperCell {
    PaperCell {
        latency_avg_s: avg,
        latency_stddev_s: Some(stddev),
        normalized_latency: Some(norm),
        io_requests: Some(io),
    }
}

/// Elevator's cells have no I/Os.
const fn elevator(avg: f64, stddev: f64, norm: f64) -> PaperCell {
    PaperCell {
        latency_avg_s: avg,
        latency_stddev_s: Some(stddev),
        normalized_latency: Some(norm),
        io_requests: None,
    }
}

const fn row(
    query_type: &'static str,
    count: usize,
    standalone_s: f64,
    cells: [PaperCell; 4],
) -> PaperQueryRow {
    PaperQueryRow {
        query_type,
        count: Some(count),
        standalone_s,
        cells,
    }
}

#[rustfmt::skip]
pub const TABLE2_QUERIES: [PaperQueryRow; 8] = [
    row("F-01", 9, 0.26, [cell(1.71, 1.02, 6.58, 2), cell(1.02, 0.49, 3.92, 2), elevator(5.31, 7.33, 20.42), cell(0.52, 0.36, 2.00, 2)]),
    row("F-10", 7, 2.06, [cell(13.97, 5.69, 6.78, 23), cell(6.23, 2.56, 3.02, 18), elevator(15.17, 8.63, 7.36), cell(3.30, 1.30, 1.60, 18)]),
    row("F-50", 6, 10.72, [cell(103.59, 14.96, 9.66, 78), cell(58.77, 10.96, 5.48, 67), elevator(44.87, 7.92, 4.19), cell(18.21, 6.64, 1.70, 43)]),
    row("F-100", 9, 20.37, [cell(192.82, 31.56, 9.47, 153), cell(96.98, 23.33, 4.76, 69), elevator(59.60, 19.57, 2.93), cell(29.01, 8.17, 1.42, 69)]),
    row("S-01", 13, 0.38, [cell(1.67, 1.25, 4.39, 2), cell(1.19, 0.65, 3.13, 3), elevator(15.01, 15.04, 39.50), cell(0.55, 0.29, 1.45, 2)]),
    row("S-10", 6, 3.55, [cell(21.58, 5.11, 6.08, 19), cell(15.12, 4.08, 4.26, 24), elevator(20.29, 23.93, 5.72), cell(11.30, 5.98, 3.18, 22)]),
    row("S-50", 6, 17.73, [cell(78.23, 29.07, 4.41, 95), cell(46.98, 16.82, 2.65, 79), elevator(37.39, 14.23, 2.11), cell(37.77, 15.66, 2.13, 48)]),
    row("S-100", 8, 35.27, [cell(179.35, 59.04, 5.09, 177), cell(105.51, 33.40, 2.99, 60), elevator(79.39, 24.37, 2.25), cell(98.71, 29.89, 2.80, 44)]),
];

pub fn system_of(policy: &str) -> Option<&'static PaperSystem> {
    PUBLISHED.system_of(policy)
}

/// The paper's cell for `query_type` under `policy`.
pub fn cell_of(
    query_type: &str,
    policy: &str,
) -> Option<(&'static PaperQueryRow, &'static PaperCell)> {
    PUBLISHED.cell_of(query_type, policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_to_64_queries() {
        // 16 streams × 4 queries.
        assert_eq!(
            TABLE2_QUERIES.iter().filter_map(|r| r.count).sum::<usize>(),
            64
        );
    }

    #[test]
    fn lookups_find_cells() {
        let (row, cell) = cell_of("S-100", "relevance").unwrap();
        assert_eq!(row.standalone_s, 35.27);
        assert_eq!(cell.io_requests, Some(44));
        assert_eq!(cell_of("F-01", "elevator").unwrap().1.io_requests, None);
        assert_eq!(system_of("attach").unwrap().io_requests, 2325);
        assert!(cell_of("F-02", "normal").is_none());
    }
}
