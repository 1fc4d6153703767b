//! Printing query results as a text table while they arrive, batch by batch, so that
//! memory stays bounded by one batch whatever the result size (`select *` over a large
//! table used to collect and format the whole result first: 3.4 GB at SF 0.1).
//!
//! ```text
//! +-----+--------+
//! | n   | q      |      widths: the header and the first batch; a later, longer
//! +-----+--------+      value widens only its own row (the table is never re-flowed)
//! | 42  | 1.50   |
//! +-----+--------+
//! ```

use std::io::Write;

use coopscan_exec::datafusion::arrow::array::RecordBatch;
use coopscan_exec::datafusion::arrow::datatypes::SchemaRef;
use coopscan_exec::datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

pub struct TablePrinter<W: Write> {
    out: W,
    schema: SchemaRef,
    /// Set when the header has been printed.
    widths: Option<Vec<usize>>,
    rows: u64,
}

impl<W: Write> TablePrinter<W> {
    pub fn new(out: W, schema: SchemaRef) -> Self {
        TablePrinter {
            out,
            schema,
            widths: None,
            rows: 0,
        }
    }

    /// Formats and prints one batch, then flushes, so results appear as they come.
    pub fn print_batch(&mut self, batch: &RecordBatch) -> anyhow::Result<()> {
        let cells = format_cells(batch)?;
        if self.widths.is_none() {
            let widths = self.header_widths(&cells);
            self.print_header(&widths)?;
            self.widths = Some(widths);
        }
        let widths = self.widths.as_deref().unwrap_or_default();
        for row in &cells {
            write_row(&mut self.out, widths, row)?;
        }
        self.rows += batch.num_rows() as u64;
        self.out.flush()?;
        Ok(())
    }

    /// Closes the table (printing the header of an empty result); returns the rows.
    pub fn finish(mut self) -> anyhow::Result<u64> {
        let widths = match self.widths.take() {
            Some(w) => w,
            None => {
                let w = self.header_widths(&[]);
                self.print_header(&w)?;
                w
            }
        };
        write_border(&mut self.out, &widths)?;
        self.out.flush()?;
        Ok(self.rows)
    }

    fn header_widths(&self, cells: &[Vec<String>]) -> Vec<usize> {
        let mut widths: Vec<usize> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().chars().count())
            .collect();
        for row in cells {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        widths
    }

    fn print_header(&mut self, widths: &[usize]) -> anyhow::Result<()> {
        let names: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        write_border(&mut self.out, widths)?;
        write_row(&mut self.out, widths, &names)?;
        write_border(&mut self.out, widths)
    }
}

/// Every cell of `batch` as text, row by row.
fn format_cells(batch: &RecordBatch) -> anyhow::Result<Vec<Vec<String>>> {
    let options = FormatOptions::default().with_display_error(true);
    let formatters = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((0..batch.num_rows())
        .map(|r| formatters.iter().map(|f| f.value(r).to_string()).collect())
        .collect())
}

fn write_border(out: &mut impl Write, widths: &[usize]) -> anyhow::Result<()> {
    let mut line = String::from("+");
    for w in widths {
        line.push_str(&"-".repeat(w + 2));
        line.push('+');
    }
    writeln!(out, "{line}")?;
    Ok(())
}

fn write_row(out: &mut impl Write, widths: &[usize], cells: &[String]) -> anyhow::Result<()> {
    let mut line = String::from("|");
    for (w, cell) in widths.iter().zip(cells) {
        line.push_str(&format!(" {cell:<w$} |"));
    }
    writeln!(out, "{line}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use coopscan_exec::datafusion::arrow::array::{Int64Array, StringArray};
    use coopscan_exec::datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(schema: &SchemaRef, ids: Vec<i64>, names: Vec<&str>) -> RecordBatch {
        RecordBatch::try_new(
            Arc::clone(schema),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .expect("batch")
    }

    #[test]
    fn batches_print_as_one_table_as_they_arrive() {
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let mut out = Vec::new();
        let mut p = TablePrinter::new(&mut out, Arc::clone(&schema));
        p.print_batch(&batch(&schema, vec![1, 22], vec!["a", "bb"]))
            .expect("print");
        p.print_batch(&batch(&schema, vec![333], vec!["c"]))
            .expect("print");
        assert_eq!(p.finish().expect("finish"), 3);
        let text = String::from_utf8(out).expect("utf8");
        let expected = "\
+----+------+
| id | name |
+----+------+
| 1  | a    |
| 22 | bb   |
| 333 | c    |
+----+------+
";
        assert_eq!(text, expected);
    }

    #[test]
    fn an_empty_result_prints_its_header() {
        let schema: SchemaRef =
            Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let mut out = Vec::new();
        let p = TablePrinter::new(&mut out, schema);
        assert_eq!(p.finish().expect("finish"), 0);
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            "+---+\n| n |\n+---+\n+---+\n"
        );
    }
}
