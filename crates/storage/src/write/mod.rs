//! Writing tables: Arrow record batches in, a table directory out.
//!
//! Rows arrive in order in batches of any size; each layout writer buffers what it
//! needs to fill a page, writes whole zero-padded pages (so direct I/O can read them)
//! and builds the chunk map. The manifest is written last, atomically, and the whole
//! table is written beside its directory and swapped in (`staging`), under a lock that
//! keeps other writers out (`lock`).

mod append;
mod csm;
mod dsm;
pub use append::{AppendCrash, TableAppender};
mod pack;
pub use pack::{DSM_MAX_PAGE_ROWS, MAX_VARCHAR_PAGE_RAW};
pub use row_pages::PAX_DIR_ENTRY_BYTES;
pub(crate) mod lock;
mod row_pages;
mod staging;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;

use crate::column::ColumnValues;
use crate::error::{Result, StorageError};
use crate::manifest::{ChunkMeta, DataFile, Layout, Manifest, MANIFEST_FORMAT, MANIFEST_VERSION};
use crate::types::TableSchema;

pub const MIB: u64 = 1 << 20;
/// Default chunk size: the 2004 report found 4 MB enough for a single disk's bandwidth.
pub const DEFAULT_CHUNK_BYTES: u64 = 4 * MIB;
pub const MIN_CHUNK_BYTES: u64 = MIB;
pub const MAX_CHUNK_BYTES: u64 = 64 * MIB;
/// Page size of every layout: large enough that per-page overhead is negligible, small
/// enough that a chunk holds many pages (so DSM chunks straddle pages).
pub const DEFAULT_PAGE_BYTES: u32 = 64 * 1024;
/// DSM's page size. Compressed, a chunk's slice of one column is only 15-100 KB
/// (SF1 lineitem, 4 MB chunks), and a page straddling a chunk boundary is read by both
/// chunks: with 64 KiB pages a Q6 scan read 2.5x its columns' bytes, with 4 KiB pages
/// about 1.1x. Free text compresses somewhat worse in small pages (zstd: ~13 %).
pub const DSM_DEFAULT_PAGE_BYTES: u32 = 4 * 1024;

#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub layout: Layout,
    /// NSM/PAX: bytes of pages per chunk. DSM and CSM: chunks are sized in tuples so
    /// that a chunk holds as many tuples as a PAX chunk of this size would.
    pub chunk_bytes: u64,
    pub page_bytes: u32,
    /// Replace an existing table in the directory.
    pub overwrite: bool,
    /// Recorded in the manifest: what produced the table (see [`Manifest::source`]).
    pub source: Option<String>,
    /// DSM: threads that pack the columns of a batch into pages at once (each column
    /// is its own file, so they are independent); 1 packs them in turn. The files are
    /// the same either way.
    pub threads: usize,
}

impl WriteOptions {
    pub fn new(layout: Layout) -> Self {
        WriteOptions {
            layout,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            page_bytes: match layout {
                Layout::Dsm | Layout::Csm => DSM_DEFAULT_PAGE_BYTES,
                Layout::Nsm | Layout::Pax => DEFAULT_PAGE_BYTES,
            },
            overwrite: false,
            source: None,
            threads: 1,
        }
    }

    pub fn with_chunk_bytes(mut self, chunk_bytes: u64) -> Self {
        self.chunk_bytes = chunk_bytes;
        self
    }

    fn validate(&self) -> Result<()> {
        let align = crate::device::IO_ALIGN as u32;
        if self.page_bytes < align || !self.page_bytes.is_multiple_of(align) {
            return Err(StorageError::Invalid(format!(
                "page size {} is not a positive multiple of {align}",
                self.page_bytes
            )));
        }
        // Chunk sizes below the documented 1-64 MB range are allowed for tests, but a
        // chunk must hold at least one page.
        if self.chunk_bytes < u64::from(self.page_bytes) || self.chunk_bytes > MAX_CHUNK_BYTES {
            return Err(StorageError::Invalid(format!(
                "chunk size {} bytes outside {}..={MAX_CHUNK_BYTES}",
                self.chunk_bytes, self.page_bytes
            )));
        }
        Ok(())
    }
}

/// Writes one table. Call [`TableWriter::write_batch`] for each batch in row order,
/// then [`TableWriter::finish`].
pub struct TableWriter {
    dir: PathBuf,
    name: String,
    schema: TableSchema,
    opts: WriteOptions,
    rows: u64,
    table_id: u64,
    staging: staging::Staging,
    inner: LayoutWriter,
}

enum LayoutWriter {
    Rows(Box<row_pages::RowPagesWriter>),
    Dsm(dsm::DsmWriter),
    Csm(Box<csm::CsmWriter>),
}

impl LayoutWriter {
    /// The writer of `opts.layout`, its files in `dir`, its rows and pages from `origin`.
    fn create(
        dir: &Path,
        schema: &TableSchema,
        opts: &WriteOptions,
        origin: &Origin,
    ) -> Result<Self> {
        Ok(match opts.layout {
            Layout::Nsm | Layout::Pax => LayoutWriter::Rows(Box::new(
                row_pages::RowPagesWriter::create(dir, schema, opts, origin)?,
            )),
            Layout::Dsm => LayoutWriter::Dsm(dsm::DsmWriter::create(dir, schema, opts, origin)?),
            Layout::Csm => {
                LayoutWriter::Csm(Box::new(csm::CsmWriter::create(dir, schema, opts, origin)?))
            }
        })
    }

    fn append(&mut self, columns: Vec<ColumnValues>) -> Result<()> {
        match self {
            LayoutWriter::Rows(w) => w.append(columns),
            LayoutWriter::Dsm(w) => w.append(columns),
            LayoutWriter::Csm(w) => w.append(columns),
        }
    }

    /// The data files (pages counted from the data file's start; DSM: the page row
    /// starts of this writer's pages) and the chunks written.
    fn finish(self) -> Result<(Vec<DataFile>, Vec<ChunkMeta>)> {
        match self {
            LayoutWriter::Rows(w) => w.finish(),
            LayoutWriter::Dsm(w) => w.finish(),
            LayoutWriter::Csm(w) => w.finish(),
        }
    }
}

/// A batch's columns as the table's values, checked against its schema.
fn batch_columns(schema: &TableSchema, batch: &RecordBatch) -> Result<Vec<ColumnValues>> {
    if batch.num_columns() != schema.len() {
        return Err(StorageError::Schema(format!(
            "batch has {} columns, table has {}",
            batch.num_columns(),
            schema.len()
        )));
    }
    schema
        .columns
        .iter()
        .zip(batch.columns())
        .map(|(def, array)| ColumnValues::from_arrow(array.as_ref(), def.ty, &def.name))
        .collect()
}

impl TableWriter {
    /// Starts writing a table that will appear at `dir` when [`TableWriter::finish`]
    /// succeeds; until then `dir` keeps its old content (see `staging`). Fails if
    /// another writer is writing `dir`, or if `dir` holds a table and
    /// `opts.overwrite` is off, or holds anything else.
    pub fn create(dir: &Path, name: &str, schema: TableSchema, opts: WriteOptions) -> Result<Self> {
        opts.validate()?;
        schema.validate()?;
        let staging = staging::Staging::begin(dir, opts.overwrite)?;
        let table_id = new_table_id(dir);
        let inner =
            LayoutWriter::create(staging.dir(), &schema, &opts, &Origin::new_table(table_id))?;
        Ok(TableWriter {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            schema,
            opts,
            rows: 0,
            table_id,
            staging,
            inner,
        })
    }

    pub fn rows_written(&self) -> u64 {
        self.rows
    }

    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let columns = batch_columns(&self.schema, batch)?;
        self.rows += batch.num_rows() as u64;
        self.inner.append(columns)
    }

    pub fn finish(self) -> Result<Manifest> {
        let (files, chunks) = self.inner.finish()?;
        let manifest = Manifest {
            format: MANIFEST_FORMAT.to_string(),
            version: MANIFEST_VERSION,
            table_id: self.table_id,
            name: self.name,
            source: self.opts.source.clone(),
            layout: self.opts.layout,
            page_bytes: self.opts.page_bytes,
            chunk_bytes: self.opts.chunk_bytes,
            rows: self.rows,
            schema: self.schema,
            files,
            chunks,
        };
        manifest.validate_for(&self.dir)?;
        manifest.save(self.staging.dir())?;
        self.staging.commit()?;
        Ok(manifest)
    }
}

/// Where a layout writer's rows and pages begin: a new table at row 0 and page 0 of
/// each file, or a bulk append after an existing table's rows and pages (`append.rs`).
#[derive(Clone, Debug)]
pub(crate) struct Origin {
    /// Every page names it: the table's own id, appended pages included.
    pub table_id: u64,
    pub first_row: u64,
    /// Pages already in data file `i` (in the writer's file order); missing: 0.
    pub first_pages: Vec<u64>,
    /// DSM and CSM: tuples per chunk, so appended chunks are the size of the table's;
    /// `None`: derived from the first batch.
    pub rows_per_chunk: Option<u64>,
}

impl Origin {
    /// A table of its own.
    pub fn new_table(table_id: u64) -> Origin {
        Origin {
            table_id,
            first_row: 0,
            first_pages: Vec::new(),
            rows_per_chunk: None,
        }
    }

    /// Pages already in data file `i`.
    pub fn first_page(&self, i: usize) -> u64 {
        self.first_pages.get(i).copied().unwrap_or(0)
    }
}

/// A data file written page by page.
pub(crate) struct PageFile {
    pub path: PathBuf,
    pub name: String,
    out: BufWriter<File>,
    page: Vec<u8>,
    /// Pages of the data file this one's pages follow (0 for a new table): page
    /// numbers, headers and extents count from the data file's start.
    pub pages: u64,
}

impl PageFile {
    /// A file of pages numbered from `first_page` (the pages written before them are
    /// another file's: the table's, for a bulk append).
    pub fn create(dir: &Path, name: String, page_bytes: u32, first_page: u64) -> Result<Self> {
        let path = dir.join(&name);
        let file = File::create(&path).map_err(|e| StorageError::io(&path, e))?;
        Ok(PageFile {
            path,
            name,
            out: BufWriter::with_capacity(4 * page_bytes as usize, file),
            page: vec![0; page_bytes as usize],
            pages: first_page,
        })
    }

    /// Writes the next page; returns its page number.
    pub fn write_page(&mut self, header: &crate::page::PageHeader, payload: &[u8]) -> Result<u64> {
        self.page.fill(0);
        crate::page::write_page(&mut self.page, header, payload);
        self.out
            .write_all(&self.page)
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.pages += 1;
        Ok(self.pages - 1)
    }

    pub fn page_bytes(&self) -> u64 {
        self.page.len() as u64
    }

    pub fn payload_capacity(&self) -> usize {
        self.page.len() - crate::page::PAGE_HEADER_LEN
    }

    pub fn finish(self) -> Result<crate::manifest::DataFile> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| StorageError::io(&self.path, e.into_error()))?;
        file.sync_all()
            .map_err(|e| StorageError::io(&self.path, e))?;
        Ok(crate::manifest::DataFile {
            name: self.name,
            pages: self.pages,
            page_row_starts: Vec::new(),
            page_bounds: Vec::new(),
        })
    }
}

/// Row count as `u32` for a page header (pages hold far fewer rows).
pub(crate) fn rows_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A table id that differs between any two tables written on one machine: a hash of
/// the clock, the process, a per-process counter and the directory.
fn new_table_id(dir: &Path) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&nanos.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    h.update(dir.as_os_str().as_encoded_bytes());
    h.digest()
}
