//! coopscan storage: tables in NSM, PAX and DSM layouts, the chunk map, and the
//! direct-I/O device every read goes through.
//!
//! ```text
//!   RecordBatch ──► write::TableWriter ──► DIR/{manifest.json, data files}
//!                                                   │
//!   device::Device (O_DIRECT, throttle, stats) ◄────┘ read::Table::read_chunk
//!                                                   │
//!   RecordBatch ◄── read::decode_chunk (verify pages, project, slice tuples)
//! ```
//! See `docs/storage.md` for the byte-level formats.

pub mod aggregate;
pub mod chunk_map;
pub mod codec;
pub mod column;
pub mod database;
pub mod device;
pub mod digest;
pub mod encoding;
pub mod error;
pub mod filter;
pub mod index;
pub mod manifest;
pub mod packed_chars;
pub mod page;
pub mod read;
pub mod types;
pub mod write;
pub mod zonemap;

pub use database::{add_database_tables, database_tables, DATABASE_FILE};
pub use error::{Result, StorageError};
pub use manifest::{read_regular_file, ChunkMeta, Extent, Layout, Manifest};
pub use page::PageChecks;
pub use read::{
    decode_chunk, decode_chunk_filtered, decode_chunk_values, decode_chunk_with,
    decode_part_filtered, decode_part_values, decode_part_with, verify_chunk, ChunkBytes,
    ColumnPages, DecodeBudget, PageCopies, PieceRead, Selected, SelectedValues, Table, TableFiles,
    Tuples, ValueColumns,
};
pub use types::{ColumnDef, ColumnType, TableSchema};
pub use write::{AppendCrash, TableAppender, TableWriter, WriteOptions};
