//! A database directory: one table per subdirectory, and [`DATABASE_FILE`] naming them.
//! `coopscan gen` adds every table it writes or reuses; `coopscan sql --db DIR` opens
//! them all under one buffer. The file is read as the manifest is (a regular file of
//! bounded size) and every name must be a plain identifier, so a hand-edited file can
//! name no path outside the directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::manifest::{read_regular_file, write_atomically};

/// The file listing a database directory's tables.
pub const DATABASE_FILE: &str = "database.json";
/// Largest database file read: 4096 names of 256 bytes fit many times over.
const MAX_DATABASE_FILE_BYTES: u64 = 1 << 20;
/// Most tables of one database (the buffer manager's catalog has no smaller limit;
/// TPC-H has 8).
pub const MAX_DATABASE_TABLES: usize = 4096;
/// Longest table name.
const MAX_NAME_BYTES: usize = 256;
const FORMAT: &str = "coopscan-database";
const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
struct DatabaseFile {
    format: String,
    version: u32,
    tables: Vec<String>,
}

/// The tables of database `dir`: name and directory, in the file's order.
pub fn database_tables(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let path = dir.join(DATABASE_FILE);
    let file = read(&path)?;
    Ok(file
        .tables
        .into_iter()
        .map(|name| {
            let table = dir.join(&name);
            (name, table)
        })
        .collect())
}

/// Adds `names` to database `dir`'s file (made if missing), keeping the names already
/// there and their order; written atomically (temp file, fsync, rename).
pub fn add_database_tables(dir: &Path, names: &[&str]) -> Result<()> {
    let path = dir.join(DATABASE_FILE);
    let mut file = if path.exists() {
        read(&path)?
    } else {
        DatabaseFile {
            format: FORMAT.into(),
            version: VERSION,
            tables: Vec::new(),
        }
    };
    for name in names {
        check_name(&path, name)?;
        if !file.tables.iter().any(|t| t == name) {
            file.tables.push((*name).to_string());
        }
    }
    if file.tables.len() > MAX_DATABASE_TABLES {
        return Err(invalid(
            &path,
            format!("more than {MAX_DATABASE_TABLES} tables"),
        ));
    }
    let text = serde_json::to_string_pretty(&file).map_err(|e| invalid(&path, e.to_string()))?;
    // Two `gen`s into one directory never share a temporary file; the later rename
    // wins (each lists what it wrote; a table the other added is listed again by the
    // next `gen` that finds it).
    let tmp = dir.join(format!("{DATABASE_FILE}.{}.tmp", std::process::id()));
    write_atomically(&tmp, &path, text.as_bytes())
}

fn read(path: &Path) -> Result<DatabaseFile> {
    let bytes = read_regular_file(path, MAX_DATABASE_FILE_BYTES)?;
    let file: DatabaseFile =
        serde_json::from_slice(&bytes).map_err(|e| invalid(path, e.to_string()))?;
    if file.format != FORMAT || file.version != VERSION {
        return Err(invalid(
            path,
            format!(
                "format {:?} version {}, expected {FORMAT:?} version {VERSION}",
                file.format, file.version
            ),
        ));
    }
    if file.tables.len() > MAX_DATABASE_TABLES {
        return Err(invalid(
            path,
            format!("more than {MAX_DATABASE_TABLES} tables"),
        ));
    }
    for (i, name) in file.tables.iter().enumerate() {
        check_name(path, name)?;
        if file.tables[..i].contains(name) {
            return Err(invalid(path, format!("table {name:?} listed twice")));
        }
    }
    Ok(file)
}

/// A table name is a plain identifier: a letter or `_`, then letters, digits and `_`
/// (no path separators, no `..`). A keyword such as `select` passes and needs quoting
/// in SQL, as any table of that name would.
fn check_name(path: &Path, name: &str) -> Result<()> {
    let mut chars = name.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_NAME_BYTES;
    if plain {
        Ok(())
    } else {
        Err(invalid(
            path,
            format!("table name {name:?} is not a plain identifier (letters, digits, _)"),
        ))
    }
}

fn invalid(path: &Path, reason: String) -> StorageError {
    StorageError::Invalid(format!("database file {}: {reason}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_added_once_in_order_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        add_database_tables(dir.path(), &["orders", "lineitem"]).unwrap();
        add_database_tables(dir.path(), &["lineitem", "part"]).unwrap();
        let tables = database_tables(dir.path()).unwrap();
        let names: Vec<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["orders", "lineitem", "part"]);
        assert_eq!(tables[1].1, dir.path().join("lineitem"));
    }

    #[test]
    fn hostile_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DATABASE_FILE);
        for (text, why) in [
            (
                r#"{"format":"coopscan-database","version":1,"tables":["../etc"]}"#,
                "plain",
            ),
            (
                r#"{"format":"coopscan-database","version":1,"tables":["a/b"]}"#,
                "plain",
            ),
            (
                r#"{"format":"coopscan-database","version":1,"tables":[""]}"#,
                "plain",
            ),
            (
                r#"{"format":"coopscan-database","version":1,"tables":["t","t"]}"#,
                "twice",
            ),
            (
                r#"{"format":"coopscan-database","version":2,"tables":[]}"#,
                "version",
            ),
            (r#"{"format":"x","version":1,"tables":[]}"#, "format"),
            ("not json", "database file"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = database_tables(dir.path()).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
        assert!(
            add_database_tables(dir.path(), &["ok"]).is_err(),
            "a bad file is not extended"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(add_database_tables(dir.path(), &["drop table"]).is_err());
        assert!(database_tables(dir.path()).is_err(), "no file, no database");
    }
}
