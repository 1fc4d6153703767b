//! Everything a manifest promises, checked the same way after writing and on every
//! load: a manifest is input like any other file, and nothing downstream (readers,
//! the buffer manager, the CLI) re-checks what is verified here.
//!
//! Every number a file supplies goes through checked arithmetic; a check that would
//! overflow fails with a message quoting the numbers as written.

use super::{ChunkMeta, DataFile, Extent, Layout, Manifest, MANIFEST_FILE};
use crate::chunk_map::dsm_page_range;
use crate::types::{ColumnType, Physical};
use crate::write::MAX_CHUNK_BYTES;
use crate::zonemap::Zonemap;

/// Largest page size: bounds the buffers a reader allocates per page.
pub const MAX_PAGE_BYTES: u32 = 16 << 20;
/// Largest extent, the size of one read buffer: a chunk is at most MAX_CHUNK_BYTES,
/// and a DSM column's extent can exceed its share when later rows are wider than the
/// first batch's (which sized the chunks), so allow 4×.
pub const MAX_EXTENT_BYTES: u64 = 4 * MAX_CHUNK_BYTES;
/// Longest data file name (a common file-system limit).
pub const MAX_FILE_NAME_BYTES: usize = 255;

type Check = std::result::Result<(), String>;

impl Manifest {
    /// Structural consistency: a valid schema, data file names confined to the table
    /// directory, chunks that tile `0..rows`, extents inside their files and exactly
    /// where the layout puts them, zonemaps of the column's kind.
    pub fn validate(&self) -> Check {
        self.schema.validate().map_err(|e| e.to_string())?;
        let align = crate::device::IO_ALIGN as u32;
        if self.page_bytes == 0
            || !self.page_bytes.is_multiple_of(align)
            || self.page_bytes > MAX_PAGE_BYTES
        {
            return Err(format!(
                "page_bytes {} is not a multiple of {align} in {align}..={MAX_PAGE_BYTES}",
                self.page_bytes
            ));
        }
        if self.chunk_bytes < u64::from(self.page_bytes) || self.chunk_bytes > MAX_CHUNK_BYTES {
            return Err(format!(
                "chunk_bytes {} outside {}..={MAX_CHUNK_BYTES}",
                self.chunk_bytes, self.page_bytes
            ));
        }
        self.validate_files()?;
        let mut next_row = 0u64;
        let mut next_page = 0u64;
        for (k, chunk) in self.chunks.iter().enumerate() {
            let end = chunk.row_start.checked_add(chunk.row_count);
            if chunk.row_start != next_row || chunk.row_count == 0 || end.is_none() {
                return Err(format!(
                    "chunk {k} covers rows {}+{}, expected a non-empty run from row {next_row}",
                    chunk.row_start, chunk.row_count
                ));
            }
            next_row = end.unwrap_or(u64::MAX);
            self.validate_chunk(chunk, &mut next_page)
                .map_err(|e| format!("chunk {k}: {e}"))?;
        }
        if next_row != self.rows {
            return Err(format!(
                "chunks cover {next_row} rows, manifest says {}",
                self.rows
            ));
        }
        if !matches!(self.layout, Layout::Dsm) && next_page != self.files[0].pages {
            return Err(format!(
                "chunks cover {next_page} pages, {} has {}",
                self.files[0].name, self.files[0].pages
            ));
        }
        Ok(())
    }

    fn validate_files(&self) -> Check {
        let want = match self.layout {
            Layout::Dsm => self.schema.len(),
            Layout::Nsm | Layout::Pax | Layout::Csm => 1,
        };
        if self.files.len() != want {
            return Err(format!(
                "{} layout needs {want} data files, manifest lists {}",
                self.layout,
                self.files.len()
            ));
        }
        let mut names = std::collections::HashSet::new();
        for f in &self.files {
            check_file_name(&f.name)?;
            if !names.insert(f.name.as_str()) {
                return Err(format!("data file {:?} is listed twice", f.name));
            }
            if f.pages.checked_mul(u64::from(self.page_bytes)).is_none() {
                return Err(format!(
                    "{}: {} pages overflow a file size",
                    f.name, f.pages
                ));
            }
            if self.layout == Layout::Dsm {
                check_page_directory(f, self.rows)?;
            }
        }
        for (c, f) in self.files.iter().enumerate() {
            let ty = self.schema.columns.get(c).map(|d| d.ty);
            check_page_bounds(f, self.layout, ty)?;
        }
        Ok(())
    }

    fn validate_chunk(&self, chunk: &ChunkMeta, next_page: &mut u64) -> Check {
        if chunk.columns.len() != self.schema.len() {
            return Err(format!(
                "describes {} columns, schema has {}",
                chunk.columns.len(),
                self.schema.len()
            ));
        }
        // CSM: the tile's runs follow one another from its first page.
        let mut run_page = chunk.pages.map_or(0, |(first, _)| first);
        for (c, col) in chunk.columns.iter().enumerate() {
            let expected = match self.layout {
                Layout::Csm => self.csm_run(chunk, c, col.extent, *next_page, &mut run_page)?,
                _ => self.expected_extent(chunk, c, *next_page)?,
            };
            if col.extent != expected {
                return Err(format!(
                    "column {c}: extent {:?}, the layout puts it at {expected:?}",
                    col.extent
                ));
            }
            let ty = self.schema.columns[c].ty;
            if let Some(width) = fixed_width(ty) {
                if Some(col.bytes) != width.checked_mul(chunk.row_count) {
                    return Err(format!(
                        "column {c}: {} bytes for {} values of {width} bytes",
                        col.bytes, chunk.row_count
                    ));
                }
            }
            if let Some(z) = &col.zonemap {
                check_zonemap(z, self.schema.columns[c].ty)
                    .map_err(|e| format!("column {c}: {e}"))?;
            }
        }
        match self.layout {
            Layout::Nsm | Layout::Pax => {
                let pages = chunk.columns[0].extent.len / u64::from(self.page_bytes);
                *next_page = next_page.saturating_add(pages);
            }
            Layout::Csm => {
                let (first, count) = chunk.pages.unwrap_or((0, 0));
                if run_page != first.saturating_add(count) {
                    return Err(format!(
                        "its column runs end at page {run_page}, its tile at page {}",
                        first.saturating_add(count)
                    ));
                }
                *next_page = run_page;
            }
            Layout::Dsm => {}
        }
        Ok(())
    }

    /// CSM: column `c`'s run, checked to start at `*run_page` (where the previous
    /// column's ended, the tile's first page for column 0) and to be whole pages inside
    /// the tile, which starts at `next_page`; moves `*run_page` past it. Run lengths are
    /// the data's (compression), so the manifest's own extent is what is checked.
    fn csm_run(
        &self,
        chunk: &ChunkMeta,
        c: usize,
        extent: Extent,
        next_page: u64,
        run_page: &mut u64,
    ) -> std::result::Result<Extent, String> {
        let page = u64::from(self.page_bytes);
        let Some((first, count)) = chunk.pages else {
            return Err("no page range".into());
        };
        let tile_end = first.checked_add(count).ok_or("page range overflows")?;
        // A load of all columns is one read of the whole tile: one read buffer.
        if count.saturating_mul(page) > MAX_EXTENT_BYTES {
            return Err(format!(
                "a tile of {count} pages is over the {MAX_EXTENT_BYTES}-byte limit"
            ));
        }
        if first != next_page || count == 0 || tile_end > self.files[0].pages {
            return Err(format!(
                "tile pages {first}+{count}, expected a run from page {next_page} inside the {} pages of {}",
                self.files[0].pages, self.files[0].name
            ));
        }
        let pages = extent.len / page;
        let start = *run_page;
        let end = start.saturating_add(pages);
        if extent.file != 0
            || extent.offset != start.saturating_mul(page)
            || !extent.len.is_multiple_of(page)
            || pages == 0
            || end > tile_end
            || extent.len > MAX_EXTENT_BYTES
        {
            return Err(format!(
                "column {c}: extent {extent:?} is not a run of whole pages from page {start} inside its tile (pages {first}..{tile_end})"
            ));
        }
        *run_page = end;
        Ok(extent)
    }

    /// Where the layout puts column `c` of chunk `k`: NSM/PAX chunks are consecutive
    /// runs of pages (`chunk.pages`), DSM extents follow from the page directory.
    fn expected_extent(
        &self,
        chunk: &ChunkMeta,
        c: usize,
        next_page: u64,
    ) -> std::result::Result<Extent, String> {
        let page = u64::from(self.page_bytes);
        let (file, pages) = match self.layout {
            Layout::Nsm | Layout::Pax => {
                let Some((first, count)) = chunk.pages else {
                    return Err("no page range".into());
                };
                if first != next_page || count == 0 {
                    return Err(format!(
                        "pages {first}+{count}, expected a run from page {next_page}"
                    ));
                }
                (
                    0usize,
                    first..first.checked_add(count).ok_or("page range overflows")?,
                )
            }
            Layout::Csm => return Err("CSM runs are checked by csm_run".into()),
            Layout::Dsm => {
                let f = &self.files[c];
                (
                    c,
                    dsm_page_range(&f.page_row_starts, self.rows, chunk.rows()),
                )
            }
        };
        let f: &DataFile = &self.files[file];
        if pages.end > f.pages || pages.is_empty() {
            return Err(format!(
                "column {c}: pages {pages:?} outside the {} pages of {}",
                f.pages, f.name
            ));
        }
        // Both products are at most `f.pages * page`, checked in validate_files.
        let extent = Extent {
            file: file as u32,
            offset: pages.start.saturating_mul(page),
            len: (pages.end - pages.start).saturating_mul(page),
        };
        if extent.len > MAX_EXTENT_BYTES {
            return Err(format!(
                "column {c}: an extent of {} bytes is over the {MAX_EXTENT_BYTES}-byte limit",
                extent.len
            ));
        }
        Ok(extent)
    }
}

/// A data file name is one plain component inside the table directory: no path
/// separators, no `.`/`..`, not the manifest, printable.
fn check_file_name(name: &str) -> Check {
    let plain = !name.is_empty()
        && name.len() <= MAX_FILE_NAME_BYTES
        && name != "."
        && name != ".."
        && name != MANIFEST_FILE
        && !name.starts_with(&format!("{MANIFEST_FILE}."))
        && name
            .chars()
            .all(|ch| !ch.is_control() && ch != '/' && ch != '\\');
    if plain {
        Ok(())
    } else {
        Err(format!(
            "data file name {name:?} is not a plain file name inside the table directory"
        ))
    }
}

/// DSM: one first-row per page, from 0, strictly ascending, inside the table.
fn check_page_directory(f: &DataFile, rows: u64) -> Check {
    let starts = &f.page_row_starts;
    let ok = starts.len() as u64 == f.pages
        && (rows == 0 || starts.first() == Some(&0))
        && starts.windows(2).all(|w| w[0] < w[1])
        && starts.last().is_none_or(|&last| last < rows);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{}: page directory does not match its {} pages of {rows} rows",
            f.name, f.pages
        ))
    }
}

/// Page bounds: none, or (DSM integer columns only) one `[min, max]` per page, min ≤ max,
/// inside the column's type. Only bounds that hold every stored value are safe to
/// prune by; these checks catch what a manifest can show wrong, the checksum the rest.
fn check_page_bounds(f: &DataFile, layout: Layout, ty: Option<ColumnType>) -> Check {
    if f.page_bounds.is_empty() {
        return Ok(());
    }
    let integer = ty.filter(|ty| matches!(ty.physical(), Physical::I32 | Physical::I64));
    let Some(ty) = integer.filter(|_| layout == Layout::Dsm) else {
        return Err(format!(
            "{}: page bounds kept for a column that is no DSM integer column",
            f.name
        ));
    };
    if f.page_bounds.len() as u64 != f.pages {
        return Err(format!(
            "{}: {} page bounds for {} pages",
            f.name,
            f.page_bounds.len(),
            f.pages
        ));
    }
    let bad = f.page_bounds.iter().position(|&[min, max]| {
        let zonemap = Zonemap::Int { min, max };
        check_zonemap(&zonemap, ty).is_err()
    });
    match bad {
        None => Ok(()),
        Some(p) => Err(format!(
            "{}: page {p}'s bounds {:?} do not fit a {ty} column",
            f.name, f.page_bounds[p]
        )),
    }
}

/// Integers, dates and decimals have integer zonemaps, strings string ones; min ≤ max.
fn check_zonemap(z: &Zonemap, ty: ColumnType) -> Check {
    let ok = match (z, ty.physical()) {
        (Zonemap::Int { min, max }, Physical::I32) => {
            min <= max && i32::try_from(*min).is_ok() && i32::try_from(*max).is_ok()
        }
        (Zonemap::Int { min, max }, Physical::I64) => min <= max,
        (Zonemap::Str { min, max }, Physical::FixedBytes(_) | Physical::VarBytes) => min <= max,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("zonemap {z:?} does not fit a {ty} column"))
    }
}

/// Bytes per value of a fixed-width type.
fn fixed_width(ty: ColumnType) -> Option<u64> {
    match ty.physical() {
        Physical::I32 => Some(4),
        Physical::I64 => Some(8),
        Physical::FixedBytes(w) => Some(w as u64),
        Physical::VarBytes => None,
    }
}
