//! Errors at the exec crate's boundary: the storage and runtime errors below it, and
//! DataFusion's above it.

use coopscan_runtime::RuntimeError;
use coopscan_storage::StorageError;
use datafusion::error::DataFusionError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ExecError {
    /// Opening a table or its files, decoding a chunk.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Registering a CScan, a failed chunk load, a runtime that shut down.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A change or position a table's delta tree refuses (a row that does not exist).
    #[error(transparent)]
    Delta(#[from] coopscan_delta::DeltaError),
    /// Reading or appending a table's delta log.
    #[error(transparent)]
    Log(#[from] coopscan_delta::log::LogError),
    /// Planning or running a query.
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    /// A statement a coopscan session does not run: it would define tables, write or
    /// change the session (`session::read_only_sql_options`).
    #[error(
        "refused: a coopscan session is read-only over its registered tables but for \
         INSERT, UPDATE and DELETE on them (no DDL, COPY or SET): {0}"
    )]
    ReadOnly(String),
    /// A caller error: mismatched runtime and table, a bad argument.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The thread that feeds a scan's batches could not be started.
    #[error("could not start a scan thread: {0}")]
    Spawn(String),
}

pub type Result<T, E = ExecError> = std::result::Result<T, E>;

impl From<ExecError> for DataFusionError {
    fn from(e: ExecError) -> Self {
        match e {
            ExecError::DataFusion(e) => e,
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

/// Storage and runtime errors surface inside DataFusion streams as external errors.
pub(crate) fn external(e: impl Into<ExecError>) -> DataFusionError {
    e.into().into()
}
