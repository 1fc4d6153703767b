//! Simulator errors. Every failure of a seeded run says how to replay it.

use coopscan_buffer::{BufferError, PolicyKind};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SimError {
    #[error("buffer error under {policy} at t={time_s:.6}s: {source}")]
    Buffer {
        policy: PolicyKind,
        time_s: f64,
        source: BufferError,
    },
    #[error("{policy}: query {query} received chunk {chunk} twice")]
    DuplicateDelivery {
        policy: PolicyKind,
        query: String,
        chunk: u32,
    },
    #[error("{policy}: in-order query {query} received chunk {chunk} out of order")]
    OutOfOrderDelivery {
        policy: PolicyKind,
        query: String,
        chunk: u32,
    },
    #[error("{policy}: query {query} received chunk {chunk} outside its ranges")]
    UnwantedDelivery {
        policy: PolicyKind,
        query: String,
        chunk: u32,
    },
    #[error("{policy}: query {query} finished with {got} of {want} chunks")]
    MissingChunks {
        policy: PolicyKind,
        query: String,
        got: u32,
        want: u32,
    },
    #[error("{policy}: simulation stuck at t={time_s:.6}s with {unfinished} queries unfinished")]
    Stuck {
        policy: PolicyKind,
        time_s: f64,
        unfinished: usize,
    },
    #[error("{policy}: simulation exceeded {limit} events")]
    TooManyEvents { policy: PolicyKind, limit: u64 },
    #[error("invalid simulation setup: {0}")]
    InvalidSetup(String),
    #[error("unknown preset {0:?}; expected one of {known}", known = crate::presets::PresetName::ALL.map(|p| p.name()).join(", "))]
    UnknownPreset(String),
}
