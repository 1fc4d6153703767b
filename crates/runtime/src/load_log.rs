//! A log of chunk loads, for the benchmark's Figure 4 (chunk loads over time) and for
//! attributing I/Os to the query a load was scheduled for (Table 2's I/O columns).

use std::time::Duration;

/// Loads recorded at most; beyond it the log stops growing (and says so).
pub const MAX_LOAD_LOG: usize = 1 << 20;

/// One completed piece load (NSM/PAX: a whole chunk; DSM: one column of a chunk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadRecord {
    /// Completion time since the runtime started.
    pub at: Duration,
    /// Chunk number.
    pub chunk: u32,
    /// The tag of the scan the ABM scheduled this load for (see
    /// [`crate::Runtime::register_tagged`]), if it had one.
    pub tag: Option<u64>,
    /// Bytes read from the device (a DSM piece's boundary pages copied from a
    /// neighbour are not).
    pub bytes: u64,
}

#[derive(Debug, Default)]
pub(crate) struct LoadLog {
    records: Vec<LoadRecord>,
    dropped: u64,
}

impl LoadLog {
    pub(crate) fn push(&mut self, record: LoadRecord) {
        if self.records.len() < MAX_LOAD_LOG {
            self.records.push(record);
        } else {
            self.dropped += 1;
        }
    }

    pub(crate) fn records(&self) -> &[LoadRecord] {
        &self.records
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}
