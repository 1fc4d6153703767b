//! Errors of the storage layer. Every variant that concerns data on disk names the
//! file and, where it applies, the byte offset and what was expected — damage must be
//! reported precisely, never as a panic and never as wrong data.

use std::path::PathBuf;

use crate::device::DeviceError;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Arrow refused a string column: value `value` (of those decoded) is not UTF-8.
    /// The decoder turns it into a [`StorageError::Corrupt`] naming the page.
    #[error("string value {value} is not UTF-8")]
    NotUtf8 { value: usize },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: invalid manifest: {reason}", path.display())]
    Manifest { path: PathBuf, reason: String },
    #[error("{}: manifest checksum mismatch: the file says {stored}, its content hashes to {computed} (edited or damaged; regenerate the table)", path.display())]
    ManifestChecksum {
        path: PathBuf,
        stored: String,
        computed: String,
    },
    #[error("{} at offset {offset}: unsupported format version {found} (this build reads version {expected})", path.display())]
    Version {
        path: PathBuf,
        offset: u64,
        found: u32,
        expected: u32,
    },
    #[error("{} at offset {offset}: bad magic: expected {expected:#010x}, found {found:#010x}", path.display())]
    Magic {
        path: PathBuf,
        offset: u64,
        expected: u32,
        found: u32,
    },
    #[error("{} at offset {offset}: checksum mismatch: expected crc32c {expected:#010x}, computed {found:#010x}", path.display())]
    Checksum {
        path: PathBuf,
        offset: u64,
        expected: u32,
        found: u32,
    },
    #[error("{} at offset {offset}: truncated: expected {expected} bytes, found {found}", path.display())]
    Truncated {
        path: PathBuf,
        offset: u64,
        expected: u64,
        found: u64,
    },
    #[error("{} at offset {offset}: corrupt page: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// A batch that would decode to more than the table's decode budget: hostile
    /// pages, or a trusted table read with too small a budget.
    #[error("{} at offset {offset}: {what} would decode to {needed} bytes in one batch, over the decode budget of {budget} bytes (a damaged or hostile file; for a trusted table raise --decode-budget-mb)", path.display())]
    OverBudget {
        path: PathBuf,
        offset: u64,
        what: String,
        needed: u64,
        budget: u64,
    },
    /// A file a user named, larger than what its reader accepts (`read_regular_file`).
    #[error("{}: larger than the {limit}-byte limit", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{}: another writer holds this table's lock (a concurrent `gen` into the same directory?)", path.display())]
    Locked { path: PathBuf },
    #[error(
        "{}: another append (or a new table) committed since this append began; only \
         one of two appends to the same snapshot commits",
        path.display()
    )]
    AppendConflict { path: PathBuf },
    #[error("schema: {0}")]
    Schema(String),
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

impl StorageError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.into(),
            source,
        }
    }
}
