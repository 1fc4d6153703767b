//! What `verify` adds to page checks: the manifest's claims about a chunk's values,
//! recomputed from the decoded data. Zonemaps prune chunks, so a zonemap that does not
//! cover its data silently drops rows from answers; pages cannot catch that, since
//! the damage is in the manifest. DSM page bounds prune pages the same way.

use arrow_array::RecordBatch;

use crate::column::ColumnValues;
use crate::error::{Result, StorageError};
use crate::manifest::{Layout, Manifest};
use crate::read::page_bounds::bounded_pages;
use crate::read::Table;
use crate::zonemap::ZonemapBuilder;

impl Table {
    /// Checks chunk `k`'s decoded tuples (every column, in schema order) against the
    /// manifest: the row count and every column's zonemap, recomputed exactly.
    pub fn check_chunk_contents(&self, k: usize, batch: &RecordBatch) -> Result<()> {
        let chunk = self
            .manifest()
            .chunks
            .get(k)
            .ok_or_else(|| StorageError::Invalid(format!("chunk {k} out of range")))?;
        let mismatch = |reason: String| StorageError::Manifest {
            path: Manifest::path(self.dir()),
            reason: format!("chunk {k}: {reason}"),
        };
        if batch.num_rows() as u64 != chunk.row_count || batch.num_columns() != self.schema().len()
        {
            return Err(mismatch(format!(
                "decoded {} rows of {} columns, the manifest says {} rows of {}",
                batch.num_rows(),
                batch.num_columns(),
                chunk.row_count,
                self.schema().len()
            )));
        }
        for (c, def) in self.schema().columns.iter().enumerate() {
            let values = ColumnValues::from_arrow(batch.column(c).as_ref(), def.ty, &def.name)?;
            let mut builder = ZonemapBuilder::default();
            builder.add(&values, 0..values.len());
            let actual = builder.finish();
            let stored = &chunk.columns[c].zonemap;
            if *stored != actual {
                return Err(mismatch(format!(
                    "column {:?}: zonemap {stored:?} does not match the data's {actual:?}",
                    def.name
                )));
            }
            if let Some(p) = self.page_out_of_bounds(chunk.rows(), c, &values) {
                return Err(mismatch(format!(
                    "column {:?}: page {p} holds a value outside its bounds",
                    def.name
                )));
            }
        }
        Ok(())
    }

    /// The first page of DSM column `c` with a value among `values` (the column's
    /// values of rows `rows`) outside the page's bounds, which prune pages as zonemaps
    /// prune chunks (`super::page_bounds`).
    fn page_out_of_bounds(
        &self,
        rows: std::ops::Range<u64>,
        c: usize,
        values: &ColumnValues,
    ) -> Option<usize> {
        let file = self
            .manifest()
            .files
            .get(c)
            .filter(|_| self.layout() == Layout::Dsm)?;
        let value = |row: u64| match values {
            ColumnValues::I32(v) => v.get((row - rows.start) as usize).map(|&x| i64::from(x)),
            ColumnValues::I64(v) => v.get((row - rows.start) as usize).copied(),
            ColumnValues::Bytes { .. } => None,
        };
        let (starts, bounds) = (&file.page_row_starts, &file.page_bounds);
        bounded_pages(starts, bounds, self.rows(), &rows)
            .find(|(p, page)| {
                let [min, max] = bounds[*p];
                page.clone()
                    .any(|row| value(row).is_some_and(|x| !(min..=max).contains(&x)))
            })
            .map(|(p, _)| p)
    }
}
