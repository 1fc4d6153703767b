//! Errors at the runtime's boundary: the storage and buffer errors below it, plus the
//! runtime's own (a chunk that failed to load, a runtime that shut down).

use std::sync::Arc;

use coopscan_buffer::{BufferError, ChunkId};
use coopscan_storage::StorageError;
use thiserror::Error;

#[derive(Debug, Error, Clone)]
pub enum RuntimeError {
    /// Opening files, decoding a chunk, or a bad projection.
    #[error(transparent)]
    Storage(Arc<StorageError>),
    /// The ABM refused an event (bad ranges, configuration, or misuse).
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// Reading or verifying `chunk` failed; every scan that needed it gets this error.
    /// The source names the file and byte offset.
    #[error("loading {chunk} failed: {source}")]
    Load {
        chunk: ChunkId,
        source: Arc<StorageError>,
    },
    /// The runtime was dropped (or its loader stopped) while the scan was still running.
    #[error("the runtime shut down")]
    ShutDown,
    #[error("could not start the loader thread: {0}")]
    Spawn(String),
    /// A loader thread panicked (a bug, or a panic below it in a device or decoder);
    /// the runtime stopped and every scan gets this error instead of waiting forever.
    #[error("the runtime stopped: its loader thread panicked: {0}")]
    LoaderPanicked(String),
}

impl From<StorageError> for RuntimeError {
    fn from(e: StorageError) -> Self {
        RuntimeError::Storage(Arc::new(e))
    }
}

pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;
