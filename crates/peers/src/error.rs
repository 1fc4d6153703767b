//! Errors of the peers: each names what was attempted and, where it helps, how to fix it.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The peer is not installed here; the message says how to install it.
    #[error("{peer} is not available: {why}\n  install it with: {install}")]
    Missing {
        peer: &'static str,
        why: String,
        install: &'static str,
    },
    /// A program the peer runs (a shell, Python, `chown`) is not on `PATH`.
    #[error("{peer} needs the program `{program}`, which is not on the search path ({path})")]
    ProgramMissing {
        peer: &'static str,
        program: &'static str,
        /// The search path as it was (`PATH is empty`, `PATH=/usr/bin:/bin`).
        path: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("cgroup: {0}")]
    Cgroup(String),
    #[error("{peer}: {message}")]
    Engine { peer: &'static str, message: String },
    #[error("{0}")]
    Storage(#[from] coopscan_storage::StorageError),
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] postgres::Error),
    #[error("result of {query}: {message}")]
    Result { query: String, message: String },
}

impl PeerError {
    pub fn io(path: &Path, source: std::io::Error) -> PeerError {
        PeerError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub fn engine(peer: &'static str, message: impl Into<String>) -> PeerError {
        PeerError::Engine {
            peer,
            message: message.into(),
        }
    }
}
