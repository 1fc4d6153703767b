//! Piece identity: what the pool holds.
//!
//! A piece is one (table, chunk, column) cell of the chunk grid. For NSM and PAX a
//! chunk's columns share pages, so the whole chunk is one piece (`column: None`); for
//! DSM every column of a chunk is its own piece with its own byte size.

use crate::ChunkId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A table served by a pool; several tables may share one byte budget.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct TableId(pub u32);

/// The unit of residency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PieceId {
    pub table: TableId,
    pub chunk: ChunkId,
    /// `None`: every column of the chunk (NSM/PAX pages hold all columns).
    pub column: Option<u16>,
}

impl PieceId {
    /// The whole chunk as one piece (NSM/PAX).
    pub fn whole(table: TableId, chunk: ChunkId) -> PieceId {
        PieceId {
            table,
            chunk,
            column: None,
        }
    }
}

/// Where a pooled piece is; absent pieces are not in the pool at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceState {
    /// Its bytes are reserved and a read is in flight.
    Loading,
    Resident,
}

impl fmt::Display for PieceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "table {} {}", self.table.0, self.chunk)?;
        match self.column {
            Some(c) => write!(f, " column {c}"),
            None => Ok(()),
        }
    }
}
