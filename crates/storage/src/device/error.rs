//! Errors of the device layer. Every variant names the file, and the offset and sizes of
//! the request where there is one, so a failed chunk read can be found without a debugger.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use super::aligned::IO_ALIGN;

#[derive(Debug, Error)]
pub enum DeviceError {
    #[error("{}: cannot open for reading: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },

    #[error(
        "{}: the filesystem refuses O_DIRECT ({source}) and DirectMode::Required forbids \
         falling back to buffered reads",
        path.display()
    )]
    DirectUnsupported { path: PathBuf, source: io::Error },

    #[error(
        "{}: {what} is not a multiple of {IO_ALIGN} (request offset {offset}, length {len})",
        path.display()
    )]
    Misaligned {
        path: PathBuf,
        /// Which part is misaligned: "offset", "length" or "buffer address".
        what: &'static str,
        offset: u64,
        len: usize,
    },

    #[error(
        "{}: file ended early: read at offset {offset} expected {expected} bytes, got {got} \
         (files are padded to {IO_ALIGN} bytes by their writer; is it truncated?)",
        path.display()
    )]
    ShortRead {
        path: PathBuf,
        offset: u64,
        expected: usize,
        got: usize,
    },

    #[error("{}: read of {len} bytes at offset {offset} failed: {source}", path.display())]
    Read {
        path: PathBuf,
        offset: u64,
        len: usize,
        source: io::Error,
    },
}

impl DeviceError {
    /// The file the failed operation was on.
    pub fn path(&self) -> &std::path::Path {
        match self {
            DeviceError::Open { path, .. }
            | DeviceError::DirectUnsupported { path, .. }
            | DeviceError::Misaligned { path, .. }
            | DeviceError::ShortRead { path, .. }
            | DeviceError::Read { path, .. } => path,
        }
    }
}
