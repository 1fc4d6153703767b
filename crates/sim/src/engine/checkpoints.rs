//! Checkpoints during a simulated run (2012 paper §2.1, case (iv)): the table's new
//! version added to the catalog through the one `Driver`, the old one retired and, once
//! its last scan has left, freed by the buffer.

use super::{Sim, SimConfig};
use crate::workload::{SimCheckpoint, Workload};
use crate::SimError;

/// The workload's checkpoints in time order, refused when one comes with a timeline or
/// a trace (both name chunks of one version), names a table the run does not have,
/// repeats at an interval that is not positive or falls before the run.
pub(super) fn checkpoints_in_order(
    cfg: &SimConfig,
    workload: &Workload,
    tables: usize,
) -> Result<Vec<SimCheckpoint>, SimError> {
    let mut checkpoints = workload.checkpoints.clone();
    if checkpoints.is_empty() {
        return Ok(checkpoints);
    }
    if cfg.record_timeline || cfg.record_trace {
        return Err(SimError::InvalidSetup(
            "checkpoints with a timeline or a trace: both follow one version's chunks".into(),
        ));
    }
    for c in &checkpoints {
        let refused = if c.table as usize >= tables {
            format!(
                "a checkpoint of table {}: the run has {tables} table(s)",
                c.table
            )
        } else if let Some(every) = c.every_s.filter(|e| !(e.is_finite() && *e > 0.0)) {
            format!("a checkpoint every {every} s: the interval must be positive")
        } else if !(c.at_s.is_finite() && c.at_s >= 0.0) {
            format!("a checkpoint at {} s: a run starts at 0 s", c.at_s)
        } else {
            continue;
        };
        return Err(SimError::InvalidSetup(refused));
    }
    checkpoints.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    Ok(checkpoints)
}

impl Sim<'_> {
    /// The next checkpoint: the table's new version (the same geometry: a checkpoint
    /// merges changes, which the simulation has none of) under the run's policy, the
    /// old one retired; a repeating one is due again `every_s` later.
    pub(super) fn on_checkpoint(&mut self) -> Result<(), SimError> {
        let checkpoint = self.checkpoints.remove(0);
        self.checkpoints_done += 1;
        if let Some(every) = checkpoint.every_s {
            let next = SimCheckpoint {
                at_s: checkpoint.at_s + every,
                ..checkpoint
            };
            let at = self.checkpoints.partition_point(|c| c.at_s <= next.at_s);
            self.checkpoints.insert(at, next);
        }
        let slot = checkpoint.table as usize;
        let old = self.versions[slot];
        let geometry = self.abm(old)?.geometry().clone();
        let added = self.driver.add_table_of_kind(geometry, self.policy);
        let new = added.map_err(|e| self.buffer_error(e))?;
        self.driver
            .retire_table(old)
            .map_err(|e| self.buffer_error(e))?;
        self.versions[slot] = new;
        self.retired.insert(old);
        Ok(())
    }

    /// Counts the versions the buffer freed since the last event: each was retired
    /// and has seen its last scan leave.
    pub(super) fn note_freed(&mut self) {
        for freed in self.driver.take_freed() {
            if self.retired.remove(&freed) {
                self.versions_freed += 1;
            }
        }
    }
}
