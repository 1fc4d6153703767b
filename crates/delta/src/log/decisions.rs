//! Transactions over several tables: each table keeps its own log, so a transaction
//! that changed two of them writes one *part* record to each log (its changes of that
//! table, tagged with the transaction's id) and then decides: one synced record in the
//! database's decision log (`transactions.log`, beside the tables' directories). A part
//! counts iff its transaction's decision is there (presumed abort, as in two-phase
//! commit): a crash before the decision leaves parts that every replay skips, a crash
//! after it leaves parts that every replay applies, in all the tables alike.
//!
//! ```text
//! header   MAGIC "CSTXNS01"
//! record   transaction id u128 | crc32c u32 of the id
//! ```
//!
//! Only the committing process ever decides its transaction, and it decides once, so a
//! part without a decision stays undecided (aborted) for good. The log only grows (20
//! bytes a transaction); a torn tail is no decision and is cut by the next append.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{sync_parent, CrashStage, DeltaLog, LogError, Op, ValueCodec};

/// The decision log's file, in the directory that holds the tables' directories.
pub const DECISIONS_FILE: &str = "transactions.log";
const MAGIC: &[u8; 8] = b"CSTXNS01";
const RECORD_BYTES: usize = 16 + 4;

/// A transaction over several tables, as its part records and its decision name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransactionId(pub u128);

impl TransactionId {
    /// An id no other transaction has: the time in nanoseconds, the process id and a
    /// counter of this process's transactions.
    pub fn fresh() -> TransactionId {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        TransactionId(
            (u128::from(nanos) << 64) | (u128::from(std::process::id()) << 32) | u128::from(count),
        )
    }
}

/// Where the decisions of the transactions whose parts a log at `log` holds are kept:
/// the directory above the table's (a database's directory). `None` for a log with no
/// such directory.
pub fn decisions_path(log: &Path) -> Option<PathBuf> {
    let table_dir = log.parent().filter(|p| !p.as_os_str().is_empty())?;
    let database = table_dir.parent().filter(|p| !p.as_os_str().is_empty())?;
    Some(database.join(DECISIONS_FILE))
}

/// The transactions decided (committed) in the decision log at `path`; a missing log
/// decided none.
pub fn decided(path: &Path) -> Result<HashSet<TransactionId>, LogError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(LogError::io(path, e)),
    };
    Ok(records(path, &bytes)?.0)
}

/// The ids of `bytes`' whole records and the bytes they fill (header included; 0 when
/// not even the header is whole).
fn records(path: &Path, bytes: &[u8]) -> Result<(HashSet<TransactionId>, u64), LogError> {
    if bytes.len() < MAGIC.len() {
        return Ok((HashSet::new(), 0));
    }
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err(LogError::Mismatch {
            path: path.to_path_buf(),
            what: "not a coopscan transaction decision log".into(),
        });
    }
    let mut ids = HashSet::new();
    let mut at = MAGIC.len();
    while let Some(record) = bytes.get(at..at + RECORD_BYTES) {
        let (id, crc) = record.split_at(16);
        if crc32c::crc32c(id).to_le_bytes() != crc {
            break;
        }
        let mut array = [0u8; 16];
        array.copy_from_slice(id);
        ids.insert(TransactionId(u128::from_le_bytes(array)));
        at += RECORD_BYTES;
    }
    Ok((ids, at as u64))
}

/// The decision log, open for one decision at a time by this process (an exclusive
/// `flock`, waited for: a decision is one small synced write).
#[derive(Debug)]
pub struct DecisionLog {
    path: PathBuf,
    file: File,
    crash: Option<CrashStage>,
}

impl DecisionLog {
    /// Opens (creating it if missing) the decision log at `path`.
    pub fn open(path: &Path) -> Result<DecisionLog, LogError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| LogError::io(path, e))?;
        sync_parent(path)?;
        Ok(DecisionLog {
            path: path.to_path_buf(),
            file,
            crash: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Test hook: abort the process at `stage` of the next decision, as `kill -9` would.
    pub fn crash_at(&mut self, stage: CrashStage) {
        self.crash = Some(stage);
    }

    /// Decides `id` committed: its record is on disk when this returns. On error the log
    /// is cut back to its whole records (the transaction stays undecided).
    pub fn decide(&mut self, id: TransactionId) -> Result<(), LogError> {
        let io = |e: rustix::io::Errno| LogError::io(&self.path, e.into());
        rustix::fs::flock(&self.file, rustix::fs::FlockOperation::LockExclusive).map_err(io)?;
        let decided = self.decide_locked(id);
        let unlocked = rustix::fs::flock(&self.file, rustix::fs::FlockOperation::Unlock);
        decided?;
        unlocked.map_err(|e| LogError::io(&self.path, e.into()))
    }

    fn decide_locked(&mut self, id: TransactionId) -> Result<(), LogError> {
        let mut bytes = Vec::new();
        (self.file.seek(SeekFrom::Start(0)))
            .and_then(|_| self.file.read_to_end(&mut bytes))
            .map_err(|e| LogError::io(&self.path, e))?;
        let (_, len) = records(&self.path, &bytes)?;
        let mut record = Vec::with_capacity(MAGIC.len() + RECORD_BYTES);
        if len == 0 {
            record.extend_from_slice(MAGIC);
        }
        let id_bytes = id.0.to_le_bytes();
        record.extend_from_slice(&id_bytes);
        record.extend_from_slice(&crc32c::crc32c(&id_bytes).to_le_bytes());
        let written = self.write_at(len, &record);
        if written.is_err() {
            // A decision whose write or sync failed is reported as not made: it must not
            // be found after a crash either (best effort; a torn record is no decision,
            // and the next decision cuts whatever is left past `len`).
            let _ = self.file.set_len(len).and_then(|()| self.file.sync_data());
        }
        written
    }

    fn write_at(&self, len: u64, record: &[u8]) -> Result<(), LogError> {
        let io = |e| LogError::io(&self.path, e);
        let mut file = &self.file;
        self.crash_point(CrashStage::BeforeWrite);
        file.set_len(len).map_err(io)?;
        file.seek(SeekFrom::Start(len)).map_err(io)?;
        let half = record.len() / 2;
        file.write_all(&record[..half]).map_err(io)?;
        self.crash_point(CrashStage::MidRecord);
        file.write_all(&record[half..]).map_err(io)?;
        self.crash_point(CrashStage::BeforeSync);
        file.sync_data().map_err(io)?;
        self.crash_point(CrashStage::AfterSync);
        Ok(())
    }

    fn crash_point(&self, stage: CrashStage) {
        if self.crash == Some(stage) {
            std::process::abort();
        }
    }
}

/// One table's share of a transaction over several tables: its log (open for appending)
/// and the changes to write there.
pub struct Part<'a, T> {
    pub log: &'a mut DeltaLog,
    pub ops: &'a [Op<T>],
    pub codec: &'a dyn ValueCodec<T>,
}

/// Commits a transaction over the tables of `parts`: each part is appended and synced
/// to its table's log, then the transaction is decided in `decisions`, which must be the
/// decision log of every part's log ([`decisions_path`]). Returns once the decision is on
/// disk. On error nothing of the transaction counts; the parts written before it stay in
/// their logs (each log's [`DeltaLog::records`] tells) as records every replay skips.
pub fn commit_parts<T>(
    decisions: &mut DecisionLog,
    parts: &mut [Part<'_, T>],
) -> Result<TransactionId, LogError> {
    for part in parts.iter() {
        if decisions_path(part.log.path()).as_deref() != Some(decisions.path()) {
            return Err(LogError::NotOneDatabase {
                path: part.log.path().to_path_buf(),
                decisions: decisions.path().to_path_buf(),
            });
        }
    }
    let id = TransactionId::fresh();
    for part in parts.iter_mut() {
        part.log.append_part(id, part.ops, part.codec)?;
    }
    decisions.decide(id)?;
    Ok(id)
}
