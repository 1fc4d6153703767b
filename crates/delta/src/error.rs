use thiserror::Error;

/// What a change or a translation asked of a [`crate::Pdt`] that its table cannot give.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DeltaError {
    #[error("row {rid} does not exist: the table has {rows} rows")]
    RidOutOfRange { rid: u64, rows: u64 },
    #[error("stable position {sid} does not exist: the stable table has {stable_rows} rows")]
    SidOutOfRange { sid: u64, stable_rows: u64 },
    #[error("column {column} does not exist: the table has {columns} columns")]
    ColumnOutOfRange { column: usize, columns: usize },
    #[error("an inserted row has {got} values, the table has {columns} columns")]
    RowWidth { got: usize, columns: usize },
    #[error("a delta tree's positions disagree near {at}: an internal error")]
    Corrupt { at: u64 },
    #[error("the table would have more than {max} rows")]
    TooManyRows { max: u64 },
}
