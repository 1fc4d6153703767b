//! A coopscan table as delimited text for a peer's loader (DuckDB's `read_csv`,
//! PostgreSQL's `COPY ... (FORMAT text)`): every column in table order, then the row
//! number `l_rowid` (0-based, the benchmark's `_rowid`), so a row range selects exactly
//! the same rows in every engine. Values are rendered as Arrow displays them (decimals
//! with their scale, dates as `YYYY-MM-DD`).

use crate::error::PeerError;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use coopscan_storage::device::{Device, DeviceConfig, DirectMode};
use coopscan_storage::{ColumnType, Table};
use std::io::Write;

/// The row-number column every peer table gets.
pub const ROWID_COLUMN: &str = "l_rowid";
/// Field separator of the text (TPC-H's own `.tbl` separator).
pub const DELIMITER: char = '|';

/// SQL dialects of the peers' `CREATE TABLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    DuckDb,
    Postgres,
}

/// Whether the text and the table end with the row number [`ROWID_COLUMN`]: the stream
/// benchmark's row ranges need it, TPC-H's queries do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowNumber {
    Appended,
    Omitted,
}

/// `CREATE TABLE name (...)` for `table`'s columns, then `l_rowid BIGINT` if `rowid`
/// says so.
pub fn create_table_sql(table: &Table, name: &str, dialect: Dialect, rowid: RowNumber) -> String {
    let mut columns: Vec<String> = table
        .schema()
        .columns
        .iter()
        .map(|c| format!("{} {}", c.name, sql_type(c.ty, dialect)))
        .collect();
    if rowid == RowNumber::Appended {
        columns.push(format!("{ROWID_COLUMN} BIGINT NOT NULL"));
    }
    format!("CREATE TABLE {name} ({})", columns.join(", "))
}

fn sql_type(ty: ColumnType, dialect: Dialect) -> String {
    match (ty, dialect) {
        (ColumnType::Int32, _) => "INTEGER".to_string(),
        (ColumnType::Int64, _) => "BIGINT".to_string(),
        (ColumnType::Decimal { precision, scale }, _) => format!("DECIMAL({precision},{scale})"),
        (ColumnType::Date32, _) => "DATE".to_string(),
        // TPC-H's CHAR(n) columns; DuckDB has no fixed-width strings.
        (ColumnType::Char { len }, Dialect::Postgres) => format!("CHAR({len})"),
        (ColumnType::Char { .. } | ColumnType::Utf8, _) => "VARCHAR".to_string(),
    }
}

/// Writes every row of `table` to `out` as `v1|v2|…|vn|rowid\n` (`v1|…|vn\n` when
/// `rowid` is omitted), reading chunk by chunk through the page cache (no throttle:
/// this is setup, not a measurement). Returns the rows written.
pub fn write_text(table: &Table, out: &mut dyn Write, rowid: RowNumber) -> Result<u64, PeerError> {
    let device = Device::new(DeviceConfig {
        direct: DirectMode::Off,
        ..DeviceConfig::default()
    });
    let files = table.open_files(&device)?;
    let projection: Vec<usize> = (0..table.schema().columns.len()).collect();
    let options = FormatOptions::default();
    let mut written = 0u64;
    let mut line = String::new();
    let write_err = |e: std::io::Error| PeerError::engine("export", format!("writing rows: {e}"));
    for k in 0..table.chunk_count() {
        let batch = table.read_chunk_batch(&device, &files, k, &projection, None)?;
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PeerError::engine("export", e.to_string()))?;
        for r in 0..batch.num_rows() {
            line.clear();
            for f in &formatters {
                let start = line.len();
                use std::fmt::Write as _;
                let _ = write!(line, "{}", f.value(r));
                if line[start..].contains([DELIMITER, '\\', '\n', '\r']) {
                    return Err(PeerError::engine(
                        "export",
                        format!(
                            "row {written} has a value with '|', '\\' or a newline: {:?}",
                            &line[start..]
                        ),
                    ));
                }
                line.push(DELIMITER);
            }
            match rowid {
                RowNumber::Appended => line.push_str(&written.to_string()),
                RowNumber::Omitted => {
                    line.pop();
                }
            }
            line.push('\n');
            out.write_all(line.as_bytes()).map_err(write_err)?;
            written += 1;
        }
    }
    out.flush().map_err(write_err)?;
    if written != table.rows() {
        return Err(PeerError::engine(
            "export",
            format!("wrote {written} rows of a table of {}", table.rows()),
        ));
    }
    Ok(written)
}
