//! `manifest.json` on disk: read with a size limit and a checksum check, written
//! durably.
//!
//! The file is the manifest's JSON with one extra top-level field, `checksum`:
//! `"xxh3-64:<16 hex digits>"` of the manifest's canonical form (compact JSON of the
//! parsed manifest, fields in declaration order, without `checksum`). Hashing the
//! canonical form rather than the file's bytes lets the file stay pretty-printed and
//! still catches any edit that changes a value — a hand-edited zonemap, type or row
//! count is refused on load instead of silently changing answers.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use serde_json::Value;

use super::{Manifest, MANIFEST_FILE, MANIFEST_FORMAT, MANIFEST_VERSION};
use crate::error::{Result, StorageError};

/// Largest manifest read: a DSM table at SF 100 needs about 15 MB (page directories);
/// the limit keeps a hostile file from exhausting memory.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
const CHECKSUM_FIELD: &str = "checksum";
const CHECKSUM_PREFIX: &str = "xxh3-64:";
/// Characters of a bad field value quoted in an error message.
const QUOTE_CHARS: usize = 48;

impl Manifest {
    /// Reads, checksums and validates `DIR/manifest.json`.
    ///
    /// The text is parsed straight into a [`Manifest`] (after a first pass that reads
    /// only `format`, `version` and `checksum`), never into a `serde_json::Value` tree:
    /// a tree costs about 20 times the text, so a manifest near the size limit took
    /// 5.4 GB to load before being refused.
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = Manifest::path(dir);
        let text = read_limited(&path)?;
        let bad = |reason: String| StorageError::Manifest {
            path: path.clone(),
            reason,
        };
        let head: Head = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        // Format and version before the full parse, so that a newer manifest reports
        // its version instead of whatever field it renamed.
        check_format_and_version(head.format.as_ref(), head.version.as_ref(), &path)?;
        let stored = take_checksum(head.checksum).map_err(bad)?;
        // `checksum` is not a field of `Manifest`: the parse ignores it.
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        drop(text);
        let computed = manifest.checksum()?;
        if stored != computed {
            return Err(StorageError::ManifestChecksum {
                path,
                stored,
                computed,
            });
        }
        manifest.validate().map_err(bad)?;
        Ok(manifest)
    }

    /// `xxh3-64:<hex>` of the canonical JSON (see the module comment).
    pub fn checksum(&self) -> Result<String> {
        let canonical =
            serde_json::to_vec(self).map_err(|e| StorageError::Invalid(e.to_string()))?;
        Ok(format!(
            "{CHECKSUM_PREFIX}{:016x}",
            xxhash_rust::xxh3::xxh3_64(&canonical)
        ))
    }

    /// Writes the manifest with its checksum: temp file, fsync, rename, fsync of the
    /// directory — after a crash the directory holds the old manifest or the new one,
    /// complete.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = Manifest::path(dir);
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let bad = |e: serde_json::Error| StorageError::Manifest {
            path: path.clone(),
            reason: e.to_string(),
        };
        let mut value = serde_json::to_value(self).map_err(bad)?;
        if let Value::Object(map) = &mut value {
            map.insert(CHECKSUM_FIELD.into(), Value::String(self.checksum()?));
        }
        let text = serde_json::to_string_pretty(&value).map_err(bad)?;
        write_atomically(&tmp, &path, text.as_bytes())
    }
}

/// Writes `bytes` to `path` through `tmp` (same directory): write, fsync, rename, fsync
/// of the directory. After a crash `path` holds its old content or the new one,
/// complete.
pub(crate) fn write_atomically(tmp: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = File::create(tmp).map_err(|e| StorageError::io(tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| StorageError::io(tmp, e))?;
    std::fs::rename(tmp, path).map_err(|e| StorageError::io(path, e))?;
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => sync_dir(dir),
        _ => sync_dir(Path::new(".")),
    }
}

/// Makes a directory's entries (created, renamed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

/// The file as text, refusing files over [`MAX_MANIFEST_BYTES`].
fn read_limited(path: &Path) -> Result<String> {
    let bytes = read_regular_file(path, MAX_MANIFEST_BYTES).map_err(|e| match e {
        StorageError::TooLarge { path, limit } => StorageError::Manifest {
            path,
            reason: format!("larger than the {limit}-byte limit"),
        },
        other => other,
    })?;
    String::from_utf8(bytes).map_err(|e| StorageError::Manifest {
        path: path.to_path_buf(),
        reason: format!("not UTF-8: {e}"),
    })
}

/// The fields read before the full parse; every other field is skipped unparsed.
#[derive(serde::Deserialize)]
struct Head {
    format: Option<Value>,
    version: Option<Value>,
    checksum: Option<Value>,
}

fn check_format_and_version(
    format: Option<&Value>,
    version: Option<&Value>,
    path: &Path,
) -> Result<()> {
    let bad = |reason: String| StorageError::Manifest {
        path: path.to_path_buf(),
        reason,
    };
    if format.and_then(Value::as_str) != Some(MANIFEST_FORMAT) {
        return Err(bad(format!(
            "format is {}, expected {MANIFEST_FORMAT:?}",
            quote(format)
        )));
    }
    match version.and_then(Value::as_u64) {
        Some(v) if v == u64::from(MANIFEST_VERSION) => Ok(()),
        Some(v) => match u32::try_from(v) {
            Ok(found) => Err(StorageError::Version {
                path: path.to_path_buf(),
                offset: 0,
                found,
                expected: MANIFEST_VERSION,
            }),
            Err(_) => Err(bad(format!(
                "version {v} is not supported (this build reads version {MANIFEST_VERSION})"
            ))),
        },
        None => Err(bad(format!(
            "version is {}, expected the number {MANIFEST_VERSION}",
            quote(version)
        ))),
    }
}

/// The `checksum` field's value, if it has the expected form.
fn take_checksum(field: Option<Value>) -> std::result::Result<String, String> {
    match field {
        Some(Value::String(s)) if s.starts_with(CHECKSUM_PREFIX) => Ok(s),
        other => Err(format!(
            "checksum is {}, expected \"{CHECKSUM_PREFIX}<16 hex digits>\"",
            quote(other.as_ref())
        )),
    }
}

/// A JSON value for an error message, shortened.
fn quote(value: Option<&Value>) -> String {
    let Some(v) = value else {
        return "missing".into();
    };
    let text = v.to_string();
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// All of `path`, a regular file of at most `limit` bytes: what the manifest loader
/// reads, and any other file a user names (the bench's `--calibration` report). The
/// file type is checked before opening (opening a FIFO blocks forever; `/dev/zero`
/// never ends and reports a length of 0), its length before reading, and the read
/// itself stops at `limit + 1` bytes (a file that grows meanwhile).
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let meta = require_regular_file(path)?;
    let too_large = || StorageError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let file = File::open(path).map_err(|e| StorageError::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| StorageError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Fails unless `path` is a regular file (after following symlinks): a FIFO or device
/// under a table's name would block or stream endlessly instead of failing.
pub(crate) fn require_regular_file(path: &Path) -> Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path).map_err(|e| StorageError::io(path, e))?;
    if !meta.is_file() {
        return Err(StorageError::Invalid(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(meta)
}
