//! Piece identity: what the pool holds.
//!
//! A piece is the pages of one chunk of one version of a table that hold a set of its
//! columns. For NSM and PAX a chunk's columns share pages, so the whole chunk is one
//! piece (the set of all columns); for DSM every column of a chunk is its own piece
//! with its own byte size; Clotho's C-pages (2004 paper) hold any set.

use crate::{ChunkId, ColumnMask};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A table served by a pool; several tables may share one byte budget.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct TableId(pub u32);

/// A stable image of a table: a checkpoint writes a new version while scans that
/// started on the old one keep reading it, so resident pieces name their version.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct TableVersion(pub u32);

/// The unit of residency: (table, version, chunk, columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PieceId {
    pub table: TableId,
    pub version: TableVersion,
    pub chunk: ChunkId,
    /// The columns its pages hold: [`ColumnMask::ALL`] for NSM/PAX, one for DSM.
    pub columns: ColumnMask,
}

impl PieceId {
    /// The whole chunk as one piece (NSM/PAX), of the first version.
    pub fn whole(table: TableId, chunk: ChunkId) -> PieceId {
        PieceId {
            table,
            version: TableVersion::default(),
            chunk,
            columns: ColumnMask::ALL,
        }
    }

    /// One column of a chunk (DSM), of the first version.
    pub fn column(table: TableId, chunk: ChunkId, column: u16) -> PieceId {
        PieceId {
            columns: ColumnMask::column(column),
            ..PieceId::whole(table, chunk)
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
        write!(f, "table {}", self.table.0)?;
        if self.version != TableVersion::default() {
            write!(f, " version {}", self.version.0)?;
        }
        write!(f, " {}", self.chunk)?;
        match (self.columns.single(), self.columns) {
            (_, ColumnMask::ALL) => Ok(()),
            (Some(c), _) => write!(f, " column {c}"),
            (None, cols) => write!(f, " columns {:#x}", cols.0),
        }
    }
}
