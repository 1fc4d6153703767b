//! The delta log: what makes a table's committed changes survive `kill -9`.
//!
//! ```text
//! header   MAGIC "CSDLOG01" | stable_rows u64 | columns u32 | fingerprint u64 | crc32c u32
//! record   length u32 | crc32c u32 of the payload | payload = sequence u64, ops (op.rs)
//! part     the same, with payload = sequence u64, PART_MARK u32, transaction u128, ops
//! ```
//!
//! A *part* is one table's share of a transaction over several tables: it counts only
//! once the transaction is decided in the database's decision log (`decisions.rs`).
//!
//! A commit appends one record (one statement's changes) and syncs it before the changes
//! are published, so a change a statement reported is on disk. A crash can only tear the
//! record being appended: replay stops at the first record that is short or fails its
//! checksum, and opening the log for appending cuts that tail off. An append that fails
//! (disk full, an I/O error) cuts the file back to its length before the append, so the
//! records committed before stay readable. One process appends at a time (an exclusive
//! `flock` on the log, released when the process dies).

mod decisions;
mod op;
mod successor;

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::Pdt;
pub use decisions::{
    commit_parts, decided, decisions_path, DecisionLog, Part, TransactionId, DECISIONS_FILE,
};
use op::{decode_ops, encode_ops, put_u32, take, take_array, take_u32};
pub use op::{Op, ValueCodec};
pub use successor::{settle, successor_path, write_successor};

const MAGIC: &[u8; 8] = b"CSDLOG01";
const HEADER_BYTES: usize = 8 + 8 + 4 + 8 + 4;
/// A record's length and checksum.
const FRAME_BYTES: usize = 8;
/// Largest record replay accepts: a length beyond it is a torn or damaged frame.
pub const MAX_RECORD_BYTES: u32 = 1 << 30;
/// Where a plain record has its count of changes, a part has this (no record of at most
/// [`MAX_RECORD_BYTES`] holds `u32::MAX` changes), then its transaction's id.
const PART_MARK: u32 = u32::MAX;

/// The stable image a log's changes apply to: replaying them on another is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogIdentity {
    pub stable_rows: u64,
    pub columns: usize,
    /// Anything that tells stable images apart (the manifest's checksum).
    pub fingerprint: u64,
}

#[derive(Debug, Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path}: another writer (a process, or another session of this one) is changing this table"
    )]
    Locked { path: PathBuf },
    #[error("{path}: the log belongs to another table image ({what})")]
    Mismatch { path: PathBuf, what: String },
    #[error("{path}: damaged at byte {offset}: {reason}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    #[error(
        "{path}: another process committed changes since this session read the table; reopen it"
    )]
    Stale { path: PathBuf },
    #[error("{path}: a change could not be encoded: {reason}")]
    Encode { path: PathBuf, reason: String },
    #[error(
        "{path}: an earlier append failed and the log could not be cut back; reopen the table"
    )]
    Broken { path: PathBuf },
    #[error(
        "{path}: a transaction over several tables commits only tables of one database directory (its decisions go to {decisions})",
        decisions = decisions.display()
    )]
    NotOneDatabase { path: PathBuf, decisions: PathBuf },
}

impl LogError {
    fn io(path: &Path, source: std::io::Error) -> LogError {
        LogError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A log's committed changes applied to a fresh tree.
#[derive(Debug)]
pub struct Replayed<T> {
    pub pdt: Pdt<T>,
    /// Records (commits) replayed.
    pub records: u64,
    /// Bytes of the log that hold them (header included); a torn tail lies beyond.
    pub valid_len: u64,
}

/// Reads the log at `path` (a missing log is an empty one) and applies its records.
pub fn replay<T: Clone>(
    path: &Path,
    identity: LogIdentity,
    codec: &dyn ValueCodec<T>,
) -> Result<Replayed<T>, LogError> {
    let pdt = Pdt::new(identity.stable_rows, identity.columns);
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Replayed {
                pdt,
                records: 0,
                valid_len: 0,
            })
        }
        Err(e) => return Err(LogError::io(path, e)),
    };
    replay_bytes(path, &bytes, identity, codec, pdt)
}

fn replay_bytes<T: Clone>(
    path: &Path,
    bytes: &[u8],
    identity: LogIdentity,
    codec: &dyn ValueCodec<T>,
    mut pdt: Pdt<T>,
) -> Result<Replayed<T>, LogError> {
    let (records, valid_len) = records_of(path, bytes, identity)?;
    let decided = match records.iter().any(|r| r.part.is_some()) {
        true => decisions_path(path).map_or_else(|| Ok(Default::default()), |d| decided(&d))?,
        false => Default::default(),
    };
    for record in &records {
        if record.part.is_some_and(|id| !decided.contains(&id)) {
            // Its transaction never committed (presumed abort).
            continue;
        }
        let corrupt = |reason: String| LogError::Corrupt {
            path: path.to_path_buf(),
            offset: record.offset,
            reason,
        };
        for op in decode_ops(record.ops, codec).map_err(corrupt)? {
            op.apply(&mut pdt).map_err(|e| corrupt(e.to_string()))?;
        }
    }
    Ok(Replayed {
        pdt,
        records: records.len() as u64,
        valid_len,
    })
}

/// One whole, sound record of a log: where it starts, the transaction it is a part
/// of (if it is one) and its changes' bytes.
struct Record<'b> {
    offset: u64,
    part: Option<TransactionId>,
    ops: &'b [u8],
}

/// The records of a log's `bytes`, in order, up to a torn tail, and the bytes they fill
/// (header included; 0 for a log without a whole header, where nothing was committed).
fn records_of<'b>(
    path: &Path,
    bytes: &'b [u8],
    identity: LogIdentity,
) -> Result<(Vec<Record<'b>>, u64), LogError> {
    if bytes.len() < HEADER_BYTES {
        return Ok((Vec::new(), 0));
    }
    check_header(path, &bytes[..HEADER_BYTES], identity)?;
    let mut at = HEADER_BYTES;
    let mut records = Vec::new();
    while let Some((payload, next)) = frame_at(bytes, at) {
        let corrupt = |reason: String| LogError::Corrupt {
            path: path.to_path_buf(),
            offset: at as u64,
            reason,
        };
        let mut ops = payload;
        let seq = u64::from_le_bytes(take_array(&mut ops).map_err(corrupt)?);
        if seq != records.len() as u64 {
            let want = records.len();
            return Err(corrupt(format!("record {seq} where record {want} belongs")));
        }
        let part = match ops.get(..4) {
            Some(mark) if mark == PART_MARK.to_le_bytes() => {
                take_u32(&mut ops).map_err(corrupt)?;
                let id = u128::from_le_bytes(take_array(&mut ops).map_err(corrupt)?);
                Some(TransactionId(id))
            }
            _ => None,
        };
        records.push(Record {
            offset: at as u64,
            part,
            ops,
        });
        at = next;
    }
    Ok((records, at as u64))
}

/// The payload of the record at `at` and the offset after it, if it is whole and sound.
fn frame_at(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let mut rest = bytes.get(at..)?;
    let len = take_u32(&mut rest).ok()?;
    let crc = take_u32(&mut rest).ok()?;
    if len > MAX_RECORD_BYTES {
        return None;
    }
    let payload = take(&mut rest, len as usize).ok()?;
    (crc32c::crc32c(payload) == crc).then_some((payload, at + FRAME_BYTES + len as usize))
}

fn header(identity: LogIdentity) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&identity.stable_rows.to_le_bytes());
    put_u32(
        &mut out,
        u32::try_from(identity.columns).unwrap_or(u32::MAX),
    );
    out.extend_from_slice(&identity.fingerprint.to_le_bytes());
    let crc = crc32c::crc32c(&out);
    put_u32(&mut out, crc);
    out
}

fn check_header(path: &Path, found: &[u8], identity: LogIdentity) -> Result<(), LogError> {
    if found.get(..8) != Some(MAGIC.as_slice()) {
        return Err(LogError::Mismatch {
            path: path.to_path_buf(),
            what: "not a coopscan delta log".into(),
        });
    }
    let want = header(identity);
    if found != want.as_slice() {
        let what = format!(
            "made for {} stable rows of {} columns, or another fingerprint",
            identity.stable_rows, identity.columns
        );
        return Err(LogError::Mismatch {
            path: path.to_path_buf(),
            what,
        });
    }
    Ok(())
}

/// Where a test makes the process die during an append (`DeltaLog::crash_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashStage {
    /// Before any byte of the record is written.
    BeforeWrite,
    /// After half the record is written.
    MidRecord,
    /// After the record is written, before it is synced.
    BeforeSync,
    /// After the record is synced, before the append returns.
    AfterSync,
}

/// The log of one table, open for appending by this process.
#[derive(Debug)]
pub struct DeltaLog {
    path: PathBuf,
    /// Holds the exclusive lock while open.
    file: File,
    len: u64,
    records: u64,
    broken: bool,
    crash: Option<(u64, CrashStage)>,
}

impl DeltaLog {
    /// Opens the log at `path` for appending, creating it with its header if missing,
    /// cutting off a torn tail. `known_records`: the commits the caller's state holds
    /// (from [`replay`]); a log with others was changed by another writer since
    /// ([`LogError::Stale`]).
    pub fn open(
        path: &Path,
        identity: LogIdentity,
        known_records: u64,
    ) -> Result<DeltaLog, LogError> {
        let io = |e| LogError::io(path, e);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        lock(path, &file)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        // The caller replayed the records already; here they are only counted (their
        // frames and sequence checked), not decoded again.
        let (records, valid_len) = records_of(path, &bytes, identity)?;
        let records = records.len() as u64;
        if records != known_records {
            return Err(LogError::Stale {
                path: path.to_path_buf(),
            });
        }
        let mut len = valid_len;
        if len == 0 {
            file.set_len(0).map_err(io)?;
            file.seek(SeekFrom::Start(0)).map_err(io)?;
            file.write_all(&header(identity)).map_err(io)?;
            file.sync_all().map_err(io)?;
            sync_parent(path)?;
            len = HEADER_BYTES as u64;
        } else if len < bytes.len() as u64 {
            file.set_len(len).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        Ok(DeltaLog {
            path: path.to_path_buf(),
            file,
            len,
            records,
            broken: false,
            crash: None,
        })
    }

    /// Commits recorded so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Test hook: abort the process at `stage` of append number `append` (counting
    /// this log's appends from 0), as `kill -9` would at that instant.
    pub fn crash_at(&mut self, append: u64, stage: CrashStage) {
        self.crash = Some((append, stage));
    }

    /// Appends one statement's changes as one record and syncs it. On error the log is
    /// as before the call.
    pub fn append<T>(&mut self, ops: &[Op<T>], codec: &dyn ValueCodec<T>) -> Result<(), LogError> {
        self.append_record(None, ops, codec)
    }

    /// Appends this table's changes of transaction `id` as one part record and syncs it:
    /// they count once `id` is decided ([`DecisionLog::decide`]). On error the log is as
    /// before the call.
    pub fn append_part<T>(
        &mut self,
        id: TransactionId,
        ops: &[Op<T>],
        codec: &dyn ValueCodec<T>,
    ) -> Result<(), LogError> {
        self.append_record(Some(id), ops, codec)
    }

    fn append_record<T>(
        &mut self,
        part: Option<TransactionId>,
        ops: &[Op<T>],
        codec: &dyn ValueCodec<T>,
    ) -> Result<(), LogError> {
        if self.broken {
            return Err(LogError::Broken {
                path: self.path.clone(),
            });
        }
        let record = self.record(part, ops, codec)?;
        let written = self.write_record(&record);
        if written.is_err() && self.file.set_len(self.len).is_err() {
            self.broken = true;
        }
        written?;
        self.len += record.len() as u64;
        self.records += 1;
        Ok(())
    }

    fn record<T>(
        &self,
        part: Option<TransactionId>,
        ops: &[Op<T>],
        codec: &dyn ValueCodec<T>,
    ) -> Result<Vec<u8>, LogError> {
        let mut payload = self.records.to_le_bytes().to_vec();
        if let Some(id) = part {
            put_u32(&mut payload, PART_MARK);
            payload.extend_from_slice(&id.0.to_le_bytes());
        }
        encode_ops(ops, codec, &mut payload).map_err(|reason| LogError::Encode {
            path: self.path.clone(),
            reason,
        })?;
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|&l| l <= MAX_RECORD_BYTES);
        let len = len.ok_or_else(|| LogError::Encode {
            path: self.path.clone(),
            reason: "a statement's changes exceed 1 GiB".into(),
        })?;
        let mut record = Vec::with_capacity(FRAME_BYTES + payload.len());
        put_u32(&mut record, len);
        put_u32(&mut record, crc32c::crc32c(&payload));
        record.extend_from_slice(&payload);
        Ok(record)
    }

    fn write_record(&mut self, record: &[u8]) -> Result<(), LogError> {
        let io = |e| LogError::io(&self.path, e);
        self.crash_point(CrashStage::BeforeWrite);
        self.file.seek(SeekFrom::Start(self.len)).map_err(io)?;
        let half = record.len() / 2;
        self.file.write_all(&record[..half]).map_err(io)?;
        self.crash_point(CrashStage::MidRecord);
        self.file.write_all(&record[half..]).map_err(io)?;
        self.crash_point(CrashStage::BeforeSync);
        self.file.sync_data().map_err(io)?;
        self.crash_point(CrashStage::AfterSync);
        Ok(())
    }

    fn crash_point(&self, stage: CrashStage) {
        if self.crash == Some((self.records, stage)) {
            std::process::abort();
        }
    }
}

/// Tries to take the log's lock this many times, [`LOCK_RETRY_PAUSE`] apart, before
/// calling it held. A process that forks to start another program (any thread of it,
/// e.g. `std::process::Command`) shares the lock through the child's copy of the file
/// descriptor until the child execs and closes it: for that instant a log just closed by
/// its writer still looks locked (seen as a flaky reopen in this crate's tests while
/// other tests spawned children).
const LOCK_ATTEMPTS: u32 = 20;
const LOCK_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

fn lock(path: &Path, file: &File) -> Result<(), LogError> {
    for attempt in 1..=LOCK_ATTEMPTS {
        match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(errno) => {
                let err = std::io::Error::from(errno);
                if err.kind() != std::io::ErrorKind::WouldBlock {
                    return Err(LogError::io(path, err));
                }
                if attempt < LOCK_ATTEMPTS {
                    std::thread::sleep(LOCK_RETRY_PAUSE);
                }
            }
        }
    }
    Err(LogError::Locked {
        path: path.to_path_buf(),
    })
}

/// Makes a new log's directory entry durable.
fn sync_parent(path: &Path) -> Result<(), LogError> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io(parent, e))
}
