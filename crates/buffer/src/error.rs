//! Errors at the crate boundary. Misuse by a driver is an error; a broken internal
//! invariant is a panic (see `invariants.rs`).

use crate::{ChunkId, HolderId, PieceId, ScanId};
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
    #[error("a scan of table {asked} was registered with the buffer of table {served}")]
    WrongTable { asked: u32, served: u32 },
    #[error("table {0} is not in the catalog")]
    UnknownTable(u32),
    #[error("{0} is not registered")]
    UnknownScan(ScanId),
    #[error("{0} is not a worker of a registered scan")]
    UnknownHolder(HolderId),
    #[error("a scan has 1 to {max} workers, not {asked}")]
    Workers { asked: u16, max: u16 },
    #[error("{0} already processes a chunk; release it before asking for the next")]
    AlreadyProcessing(HolderId),
    #[error("{0} holds no chunk to release")]
    NotProcessing(HolderId),
    #[error("{0} is not being loaded")]
    NotLoading(ChunkId),
    #[error("{0}: {1}")]
    PieceState(PieceId, &'static str),
    #[error("no room for {piece} ({bytes} bytes, {free} free): evict first")]
    NoSpace {
        piece: PieceId,
        bytes: u64,
        free: u64,
    },
    #[error("the scan needs {needed} buffer bytes to run but the buffer has {capacity}")]
    ScanTooLarge { needed: u64, capacity: u64 },
    #[error("invariant violated: {0}")]
    Invariant(String),
}
