//! Errors at the crate boundary. Misuse by a driver is an error; a broken internal
//! invariant is a panic (see `invariants.rs`).

use crate::{ChunkId, ScanId};
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BufferError {
    #[error("invalid table geometry: {0}")]
    InvalidGeometry(String),
    #[error("invalid ABM configuration: {0}")]
    InvalidConfig(String),
    #[error("scan range {start}..{end} lies outside the table of {row_count} rows")]
    RangeOutOfTable {
        start: u64,
        end: u64,
        row_count: u64,
    },
    #[error("{0} is not registered")]
    UnknownScan(ScanId),
    #[error("{0} already processes a chunk; release it before asking for the next")]
    AlreadyProcessing(ScanId),
    #[error("{0} holds no chunk to release")]
    NotProcessing(ScanId),
    #[error("{0} is not being loaded")]
    NotLoading(ChunkId),
    #[error("invariant violated: {0}")]
    Invariant(String),
}
