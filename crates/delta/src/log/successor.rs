//! A log carried to its table's next stable image. A bulk append (2012 §2.1) adds stable
//! tuples after every tuple the log's records address, so the records stay valid over
//! the new image — rows they inserted at the end come before the appended ones
//! (`Pdt::grow_stable`) — and only the header, the image's identity, changes. The new
//! image and the carried log must appear together:
//!
//! ```text
//!   write_successor   LOG.next = the new identity's header + the log's whole records,
//!                     synced (the log itself untouched)
//!   (the table's new manifest is renamed in: the commit point)
//!   settle            LOG.next renamed over LOG
//! ```
//!
//! After a crash, `settle` with the identity of whatever image the table has finishes
//! the move (the manifest was renamed: `LOG.next` is its log) or drops `LOG.next` (it
//! was not: the old log is still the table's). The writer holds the log's lock
//! throughout, so no commit lands between the copy and the move.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{check_header, header, records_of, sync_parent, LogError, LogIdentity, HEADER_BYTES};

/// Where the successor of the log at `path` is written.
pub fn successor_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".next");
    PathBuf::from(name)
}

/// Writes the successor of the log at `path` (of image `old`) for image `new`, which
/// must have the same columns and at least as many stable rows: `new`'s header and the
/// log's whole records (a torn tail is left out), synced. `Ok(None)` when there is no
/// log (a table never changed needs none).
pub fn write_successor(
    path: &Path,
    old: LogIdentity,
    new: LogIdentity,
) -> Result<Option<PathBuf>, LogError> {
    if new.columns != old.columns || new.stable_rows < old.stable_rows {
        return Err(LogError::Mismatch {
            path: path.to_path_buf(),
            what: format!(
                "a successor for {} stable rows of {} columns from {} of {}: only an append",
                new.stable_rows, new.columns, old.stable_rows, old.columns
            ),
        });
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io(path, e)),
    };
    let (_, valid_len) = records_of(path, &bytes, old)?;
    let records = bytes
        .get(HEADER_BYTES..valid_len as usize)
        .unwrap_or_default();
    let next = successor_path(path);
    let io = |e| LogError::io(&next, e);
    let mut file = File::create(&next).map_err(io)?;
    file.write_all(&header(new))
        .and_then(|()| file.write_all(records))
        .and_then(|()| file.sync_all())
        .map_err(io)?;
    sync_parent(&next)?;
    Ok(Some(next))
}

/// Settles a successor left beside the log at `path`, given the identity of the image
/// the table has now: moved over the log when it is that image's, removed when not.
/// Nothing to do without one. Call before replaying or opening the log.
pub fn settle(path: &Path, current: LogIdentity) -> Result<(), LogError> {
    let next = successor_path(path);
    let found = match std::fs::read(&next) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(LogError::io(&next, e)),
    };
    let ours = found
        .get(..HEADER_BYTES)
        .is_some_and(|h| check_header(&next, h, current).is_ok());
    if ours {
        std::fs::rename(&next, path).map_err(|e| LogError::io(path, e))?;
    } else {
        std::fs::remove_file(&next).map_err(|e| LogError::io(&next, e))?;
    }
    sync_parent(path)
}
