//! ABM configuration.

use crate::{BufferError, ColumnOrder, EvictionStrategy, Nanos};

/// Starvation threshold of Figure 3: a scan with fewer available chunks than this
/// (counting the one it is processing) is starved. A scan with several workers adds
/// one per further worker: each processes a chunk while one more is ready.
pub const STARVED_BELOW: u32 = 2;

/// Most workers one scan may have (`ScanSpec::workers`): the threads a parallel CScan
/// spreads over, far above the cores of any machine we run on.
pub const MAX_WORKERS: u16 = 64;

/// Admission rule: a scan is admitted only while the buffer holds at least this many
/// of the table's largest chunks per active scan, whatever its workers. It is the same
/// 2 as [`STARVED_BELOW`]: with scans of one worker, relevance's `findFreeSlot` always
/// finds a victim (2004 report §3.1: "if the chunk cache size is at least 2·Q_T it is
/// certain that there exists such a chunk"); a parallel scan's further workers may pin
/// more, and a load that finds no room then waits for a release, which wakes the loader.
pub const ADMISSION_CHUNKS_PER_SCAN: u32 = STARVED_BELOW;

/// Most scans that can be active at once in one ABM: the bits of a [`crate::ScanSet`].
/// More scans queue for admission.
pub const MAX_SCANS: usize = 256;

/// Admission takes the queued scan reading the fewest chunks that fits, before queued
/// scans ahead of it, but passes each of those at most this many times; then nothing
/// behind it is admitted before it. First come first served made a short query wait
/// behind long ones of several workers, each reserving room for 5 chunks
/// (docs/abm.md, "Admission"); the bound keeps a long scan's wait finite.
pub const ADMISSION_MAX_OVERTAKES: u32 = 8;

/// Default unit of `waitingTime` in `queryRelevance`: one millisecond of waiting,
/// divided by the number of running scans, outweighs one chunk still needed. The paper
/// does not give its unit; with 16-80 ms chunk loads this lets a long blocked scan
/// overtake shorter ones after some tens of loads, which keeps "short first" but bounds
/// the wait (see docs/abm.md).
pub const DEFAULT_AGING_UNIT: Nanos = Nanos(1_000_000);

/// How much memory the pool may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferBudget {
    /// As many bytes as this many of the table's largest chunks (the papers' "buffer of
    /// N chunks"; with equal chunks, exactly N chunk frames).
    Chunks(u32),
    Bytes(u64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbmConfig {
    pub budget: BufferBudget,
    /// Loads the loader may have in flight; 1 models the papers' exclusive chunk I/O.
    pub max_inflight: u32,
    /// See [`DEFAULT_AGING_UNIT`].
    pub aging_unit: Nanos,
    /// How relevance finds room for a load (greedy by default, as the paper).
    pub eviction: EvictionStrategy,
    /// The order of a DSM load's columns (smallest first by default, as the paper).
    pub column_order: ColumnOrder,
}

impl AbmConfig {
    /// A buffer of `chunks` chunk-sized frames (see [`BufferBudget::Chunks`]).
    pub fn new(chunks: u32) -> Self {
        Self::with_budget(BufferBudget::Chunks(chunks))
    }

    pub fn with_budget(budget: BufferBudget) -> Self {
        AbmConfig {
            budget,
            max_inflight: 1,
            aging_unit: DEFAULT_AGING_UNIT,
            eviction: EvictionStrategy::default(),
            column_order: ColumnOrder::default(),
        }
    }

    pub fn with_eviction(mut self, eviction: EvictionStrategy) -> Self {
        self.eviction = eviction;
        self
    }

    pub fn with_column_order(mut self, column_order: ColumnOrder) -> Self {
        self.column_order = column_order;
        self
    }

    pub fn with_max_inflight(mut self, max_inflight: u32) -> Self {
        self.max_inflight = max_inflight;
        self
    }

    /// The budget in bytes for chunks of at most `max_chunk_bytes`.
    pub fn capacity_bytes(&self, max_chunk_bytes: u64) -> Result<u64, BufferError> {
        let bytes = match self.budget {
            BufferBudget::Chunks(n) => max_chunk_bytes.checked_mul(u64::from(n)),
            BufferBudget::Bytes(b) => Some(b),
        };
        let bytes = bytes.ok_or_else(|| {
            BufferError::InvalidConfig(format!("{:?} overflows a byte count", self.budget))
        })?;
        let least = max_chunk_bytes.saturating_mul(u64::from(ADMISSION_CHUNKS_PER_SCAN));
        if bytes < least {
            return Err(BufferError::InvalidConfig(format!(
                "the buffer needs room for at least {ADMISSION_CHUNKS_PER_SCAN} of the \
                 largest chunks ({least} bytes), got {bytes} bytes"
            )));
        }
        Ok(bytes)
    }

    pub(crate) fn validate(&self) -> Result<(), BufferError> {
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
