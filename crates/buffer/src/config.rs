//! ABM configuration.

use crate::{BufferError, Nanos};

/// Starvation threshold of Figure 3: a scan with fewer available chunks than this
/// (counting the one it is processing) is starved.
pub const STARVED_BELOW: u32 = 2;

/// Admission rule: a scan is admitted only while the buffer holds at least this many
/// frames per active scan. It is the same 2 as [`STARVED_BELOW`]: with it, relevance's
/// `findFreeSlot` always finds a victim (2004 report §3.1: "if the chunk cache size is at
/// least 2·Q_T it is certain that there exists such a chunk").
pub const ADMISSION_FRAMES_PER_SCAN: u32 = STARVED_BELOW;

/// Most scans that can be active at once: one bit each in a `u64` interest mask.
pub const MAX_SCANS: usize = 64;

/// Default unit of `waitingTime` in `queryRelevance`: one millisecond of waiting,
/// divided by the number of running scans, outweighs one chunk still needed. The paper
/// does not give its unit; with 16-80 ms chunk loads this lets a long blocked scan
/// overtake shorter ones after some tens of loads, which keeps "short first" but bounds
/// the wait (see docs/abm.md).
pub const DEFAULT_AGING_UNIT: Nanos = Nanos(1_000_000);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbmConfig {
    /// Buffer size in chunk-sized frames.
    pub frames: u32,
    /// Loads the loader may have in flight; 1 models the papers' exclusive chunk I/O.
    pub max_inflight: u32,
    /// See [`DEFAULT_AGING_UNIT`].
    pub aging_unit: Nanos,
}

impl AbmConfig {
    pub fn new(frames: u32) -> Self {
        AbmConfig {
            frames,
            max_inflight: 1,
            aging_unit: DEFAULT_AGING_UNIT,
        }
    }

    pub fn with_max_inflight(mut self, max_inflight: u32) -> Self {
        self.max_inflight = max_inflight;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), BufferError> {
        if self.frames < ADMISSION_FRAMES_PER_SCAN {
            return Err(BufferError::InvalidConfig(format!(
                "the buffer needs at least {ADMISSION_FRAMES_PER_SCAN} frames, got {}",
                self.frames
            )));
        }
        if self.max_inflight == 0 {
            return Err(BufferError::InvalidConfig(
                "max_inflight must be at least 1".into(),
            ));
        }
        if self.aging_unit == Nanos::ZERO {
            return Err(BufferError::InvalidConfig(
                "aging_unit must be positive".into(),
            ));
        }
        Ok(())
    }
}
