//! The 2007 paper's Table 3 (§6.3): the DSM twin of Table 2, with the paper's three
//! adjustments — lineitem at SF40 in DSM (4× Table 2's tuples, for DSM's lower data
//! volume), a faster SLOW query (with the original one DSM made every policy CPU
//! bound), and a 1.5 GB buffer (each active chunk reserves memory per column). The
//! workload is Table 2's: 16 streams × 4 queries, 3 s apart, FAST or SLOW over 1, 10,
//! 50 or 100 % of the table. Times in seconds.
//!
//! The paper gives neither the DSM chunk count nor the table's bytes; the simulator and
//! the benchmark keep Table 2's 256 chunks and scale the buffer as
//! [`BUFFER_CHUNKS`] full-width chunks of them.

use crate::published::{system, PaperCell, PaperQueryRow, PaperSystem, Published};

/// Cold F-100: a full FAST scan of Q6's columns, I/O bound.
pub const F100_STANDALONE_S: f64 = 26.53;
/// Cold S-100: a full SLOW scan, CPU bound.
pub const S100_STANDALONE_S: f64 = 71.25;
/// The 1.5 GB buffer in chunks of every column, on the simulator's table scaled so
/// that F-100 reads in [`F100_STANDALONE_S`] (98 MB per chunk of all 16 columns).
pub const BUFFER_CHUNKS: u32 = 15;

/// The buffer as a percentage of the table's chunks (15 of 256: 5.9 %).
pub const fn buffer_pct() -> f64 {
    BUFFER_CHUNKS as f64 * 100.0 / crate::table2::CHUNKS as f64
}

/// S-100's CPU time over F-100's read time, from the cold times (F-100 is I/O bound,
/// so its cold time is its read time): 2.69. Table 2's counterpart is
/// [`crate::table2::SLOW_CPU_OVER_READ`].
pub const fn slow_cpu_over_fast_read() -> f64 {
    S100_STANDALONE_S / F100_STANDALONE_S
}

/// The stagger as a fraction of a full FAST scan (3 s of F-100's 26.53 s).
pub const fn stagger_over_scan() -> f64 {
    crate::table2::STAGGER_S / F100_STANDALONE_S
}

/// Table 3 as a whole, for reports.
pub const PUBLISHED: Published = Published {
    name: "Table 3",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, Table 3 (DSM)",
    system: &TABLE3_SYSTEM,
    query_types: &TABLE3_QUERIES,
};

pub const TABLE3_SYSTEM: [PaperSystem; 4] = [
    system("normal", 536.18, 7.05, 805.0, 0.61, 6490),
    system("attach", 338.24, 4.77, 621.0, 0.77, 4413),
    system("elevator", 352.35, 15.11, 562.0, 0.82, 2297),
    system("relevance", 264.82, 2.96, 515.0, 0.92, 3639),
];

/// Table 3 gives each cell's average latency only.
const fn avg(latency_avg_s: f64) -> PaperCell {
    PaperCell {
        latency_avg_s,
        latency_stddev_s: None,
        normalized_latency: None,
        io_requests: None,
    }
}

const fn row(query_type: &'static str, cold_s: f64, avgs: [f64; 4]) -> PaperQueryRow {
    PaperQueryRow {
        query_type,
        count: None,
        standalone_s: cold_s,
        cells: [avg(avgs[0]), avg(avgs[1]), avg(avgs[2]), avg(avgs[3])],
    }
}

#[rustfmt::skip]
pub const TABLE3_QUERIES: [PaperQueryRow; 8] = [
    row("F-01", 0.92, [6.12, 4.68, 26.95, 3.17]),
    row("F-10", 2.99, [21.01, 16.39, 45.64, 10.19]),
    row("F-50", 15.88, [191.12, 108.53, 141.84, 64.97]),
    row("F-100", F100_STANDALONE_S, [364.33, 198.86, 145.81, 90.16]),
    row("S-01", 1.90, [6.92, 5.07, 54.75, 3.33]),
    row("S-10", 8.15, [47.93, 37.96, 103.12, 21.93]),
    row("S-50", 36.28, [148.19, 126.20, 134.19, 88.19]),
    row("S-100", S100_STANDALONE_S, [346.65, 259.14, 184.60, 231.38]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_find_table3_cells_not_table2s() {
        let (row, cell) = PUBLISHED.cell_of("F-100", "relevance").unwrap();
        assert_eq!(row.standalone_s, 26.53);
        assert_eq!(cell.latency_avg_s, 90.16);
        assert_eq!(cell.normalized_latency, None);
        assert_eq!(PUBLISHED.system_of("elevator").unwrap().io_requests, 2297);
        assert_ne!(
            PUBLISHED.system_of("normal"),
            crate::table2::system_of("normal")
        );
    }

    #[test]
    fn the_balance_is_the_cold_times_ratio() {
        assert!((slow_cpu_over_fast_read() - 2.686).abs() < 0.001);
        assert!((buffer_pct() - 5.86).abs() < 0.01);
    }
}
