//! The shape of a published results table of the 2007 paper (Tables 2 and 3): system
//! statistics per policy, then per query type its cold time and each policy's cells.
//! Table 3 publishes fewer numbers per cell than Table 2; what it leaves out is `None`.

use serde::Serialize;

/// One policy's system statistics.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PaperSystem {
    pub policy: &'static str,
    pub avg_stream_time_s: f64,
    pub avg_normalized_latency: f64,
    pub total_time_s: f64,
    /// 0..=1.
    pub cpu_use: f64,
    pub io_requests: u64,
}

/// One policy's cell of a query row.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PaperCell {
    pub latency_avg_s: f64,
    /// Table 3 gives averages only.
    pub latency_stddev_s: Option<f64>,
    pub normalized_latency: Option<f64>,
    /// Table 2 has no I/O column for elevator; Table 3 none at all.
    pub io_requests: Option<u64>,
}

/// A query row; `cells` in [`POLICIES`] order.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PaperQueryRow {
    pub query_type: &'static str,
    /// Queries of this type in the run (Table 3 does not say).
    pub count: Option<usize>,
    /// The type's cold standalone time.
    pub standalone_s: f64,
    pub cells: [PaperCell; 4],
}

/// The policies of the paper's tables, in their column order.
pub const POLICIES: [&str; 4] = ["normal", "attach", "elevator", "relevance"];

/// A whole published table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Published {
    /// Its short name ("Table 2").
    pub name: &'static str,
    /// Where it was published, for reports.
    pub source: &'static str,
    pub system: &'static [PaperSystem],
    pub query_types: &'static [PaperQueryRow],
}

impl Published {
    pub fn system_of(&self, policy: &str) -> Option<&'static PaperSystem> {
        self.system.iter().find(|s| s.policy == policy)
    }

    /// The paper's cell for `query_type` under `policy`.
    pub fn cell_of(
        &self,
        query_type: &str,
        policy: &str,
    ) -> Option<(&'static PaperQueryRow, &'static PaperCell)> {
        let column = POLICIES.iter().position(|p| *p == policy)?;
        let row = self
            .query_types
            .iter()
            .find(|r| r.query_type == query_type)?;
        Some((row, &row.cells[column]))
    }
}

pub(crate) const fn system(
    policy: &'static str,
    stream: f64,
    norm: f64,
    total: f64,
    cpu: f64,
    io: u64,
) -> PaperSystem {
    PaperSystem {
        policy,
        avg_stream_time_s: stream,
        avg_normalized_latency: norm,
        total_time_s: total,
        cpu_use: cpu,
        io_requests: io,
    }
}
