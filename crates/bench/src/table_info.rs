//! What the benchmark knows of the table its queries scan.

use serde::Serialize;

/// The table the queries scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TableInfo {
    pub rows: u64,
    /// Bytes of a full read of every column.
    pub bytes: u64,
    /// Bytes a full FAST scan reads: `bytes` in NSM/PAX, Q6's columns in DSM. The
    /// paper's balance and stagger are relative to this read.
    pub fast_read_bytes: u64,
}
