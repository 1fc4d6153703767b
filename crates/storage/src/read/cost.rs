//! What reading some columns of a whole table costs on a device: the requests its
//! layout needs, the bytes they read and the time they take. Clotho's projectivity
//! question (2004 paper §7.2.1, Figure 7a) asked of the storage alone: NSM and PAX read
//! every column whatever the query needs, DSM one request per column and chunk (its
//! boundary pages twice), CSM one request per run of adjacent columns of a chunk.

use std::time::{Duration, Instant};

use crate::device::Device;
use crate::error::Result;
use crate::read::{Table, TableFiles};

/// The cost of one pass over a table's chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCost {
    pub requests: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Table {
    /// Reads every chunk's extents for `projection`, chunk after chunk as a scan's loads
    /// would (nothing decoded), and returns what that took.
    pub fn read_cost(
        &self,
        device: &Device,
        files: &TableFiles,
        projection: &[usize],
    ) -> Result<ReadCost> {
        self.check_projection(projection)?;
        let start = Instant::now();
        let mut cost = ReadCost::default();
        for k in 0..self.chunk_count() {
            let bytes = self.read_chunk(device, files, k, projection)?;
            cost.requests = cost.requests.saturating_add(bytes.extents.len() as u64);
            cost.bytes = cost.bytes.saturating_add(bytes.bytes());
        }
        cost.elapsed = start.elapsed();
        Ok(cost)
    }
}
