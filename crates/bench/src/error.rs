//! The benchmark's errors: bad parameters are caught before anything runs; an engine
//! error or a wrong result stops the run and names the policy and the query.

use crate::mix::MixError;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Mix(#[from] MixError),
    #[error("unknown preset {0:?} (known: {known})", known = coopscan_paper::experiments::names().join(", "))]
    UnknownPreset(String),
    #[error(
        "preset {0:?} runs only in the simulator so far (coopscan sim --preset {0}): \
         the real engine's tables take no bulk appends yet"
    )]
    SimulatorOnly(String),
    #[error("calibration {origin}: {reason}")]
    Calibration { origin: String, reason: String },
    #[error("bad parameter: {0}")]
    BadParameter(String),
    #[error("the table has no rows")]
    EmptyTable,
    #[error("a workload needs streams and queries (got {streams} × {queries_per_stream})")]
    EmptyWorkload {
        streams: usize,
        queries_per_stream: usize,
    },
    #[error("the share of queries in table order must be 0 to 100 % (got {0})")]
    InOrderPct(u32),
    #[error("policy {policy}: cannot set up the run: {source:#}")]
    Setup {
        policy: String,
        source: anyhow::Error,
    },
    #[error("{policy}: query {query} failed: {source:#}")]
    Query {
        policy: String,
        query: String,
        source: anyhow::Error,
    },
    #[error(
        "{policy}: WRONG RESULT for query {query}: {got_rows} rows differ from the \
         reference's {want_rows} (first difference at row {first_difference})"
    )]
    WrongResult {
        policy: String,
        query: String,
        got_rows: usize,
        want_rows: usize,
        first_difference: usize,
    },
    #[error("{0}: a stream thread panicked")]
    StreamPanicked(String),
    #[error("{policy}: cannot write the trace {}: {source}", path.display())]
    Trace {
        policy: String,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}
