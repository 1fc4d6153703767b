//! Fuzzing with proptest: page decoding and manifest loading must never panic, on any
//! bytes — random, or valid ones mutated. An `Err` is a pass; a panic, abort or hang
//! is the bug.
//!
//! Each target runs `COOPSCAN_FUZZ_CASES` cases (default [`DEFAULT_CASES`], a few
//! seconds in the normal test suite). For a longer run:
//!
//! ```sh
//! COOPSCAN_FUZZ_CASES=20000 cargo test --release -p coopscan-storage --test fuzz
//! ```

mod common;

use std::path::Path;
use std::sync::OnceLock;

use coopscan_storage::column::ColumnValues;
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::encoding::{decode_minipage, decode_nsm_rows};
use coopscan_storage::page::read_page_with;
use coopscan_storage::types::Physical;
use coopscan_storage::{decode_chunk_with, Layout, Manifest, PageChecks, Table};
use proptest::prelude::*;
use serde_json::Value;

use common::{sample_batch, sample_schema, try_read_all, write_table};

const DEFAULT_CASES: u32 = 64;
const PAGE_BYTES: u32 = 4096;

fn cases() -> u32 {
    std::env::var("COOPSCAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One valid table per layout, written once per test process.
fn tables() -> &'static [(tempfile::TempDir, Layout)] {
    static TABLES: OnceLock<Vec<(tempfile::TempDir, Layout)>> = OnceLock::new();
    TABLES.get_or_init(|| {
        Layout::ALL
            .iter()
            .map(|&layout| {
                let dir = common::fixture_dir::fixture_dir();
                let batches: Vec<_> = (0..3).map(|i| sample_batch(i * 300, 300)).collect();
                write_table(
                    dir.path(),
                    &sample_schema(),
                    layout,
                    PAGE_BYTES,
                    2,
                    &batches,
                );
                (dir, layout)
            })
            .collect()
    })
}

fn physical() -> impl Strategy<Value = Physical> {
    prop_oneof![
        Just(Physical::I32),
        Just(Physical::I64),
        (0usize..40).prop_map(Physical::FixedBytes),
        Just(Physical::VarBytes),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn page_headers_of_random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        layout in prop_oneof![Just(Layout::Nsm), Just(Layout::Pax), Just(Layout::Dsm), Just(Layout::Csm)],
    ) {
        for checks in [PageChecks::Full, PageChecks::SkipChecksum] {
            let _ = read_page_with(&bytes, Path::new("fuzz"), 0, layout, checks);
        }
    }

    #[test]
    fn minipage_and_nsm_decoders_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        physicals in proptest::collection::vec(physical(), 1..4),
        rows in 0usize..100,
        keep in (0usize..120, 0usize..120),
    ) {
        let keep = keep.0..keep.1;
        let mut out = ColumnValues::empty(physicals[0]);
        let _ = decode_minipage(&bytes, physicals[0], rows, keep.clone(), &mut out);
        let mut outs: Vec<ColumnValues> = physicals.iter().map(|&p| ColumnValues::empty(p)).collect();
        let mut slots: Vec<Option<&mut ColumnValues>> = outs.iter_mut().map(Some).collect();
        let _ = decode_nsm_rows(&bytes, &physicals, rows, keep, &mut slots);
    }

    /// Valid chunks with bytes overwritten, decoded without the checksum (which would
    /// stop almost every mutation before the decoders see it).
    #[test]
    fn mutated_chunks_never_panic_the_decoder(
        which in 0usize..3,
        chunk in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
    ) {
        let (dir, _) = &tables()[which];
        let table = Table::open(dir.path()).expect("open");
        let device = Device::new(DeviceConfig::default());
        let files = table.open_files(&device).expect("files");
        let all: Vec<usize> = (0..table.schema().len()).collect();
        let k = chunk.index(table.chunk_count());
        let loaded = table.read_chunk(&device, &files, k, &all).expect("read");
        let mut owned: Vec<(coopscan_storage::Extent, Vec<u8>)> =
            loaded.extents.iter().map(|(e, b)| (*e, b.to_vec())).collect();
        for (at, byte) in &edits {
            let n = owned.len();
            let (_, bytes) = &mut owned[at.index(n)];
            let i = at.index(bytes.len());
            bytes[i] = *byte;
        }
        let views: Vec<_> = owned.iter().map(|(e, b)| (*e, b.as_slice())).collect();
        let _ = decode_chunk_with(&table, k, &all, None, &views, PageChecks::SkipChecksum);
    }

    #[test]
    fn random_manifest_bytes_never_panic_the_loader(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("manifest.json"), &bytes).expect("write");
        prop_assert!(Table::open(dir.path()).is_err());
    }

    /// Valid manifests with fields replaced by hostile values and the checksum
    /// recomputed: whatever the loader accepts must then read without panicking.
    #[test]
    fn mutated_resealed_manifests_never_panic(
        which in 0usize..3,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), hostile_value()), 1..4),
    ) {
        let (dir, _) = &tables()[which];
        let copy = tempfile::tempdir().expect("tempdir");
        for entry in std::fs::read_dir(dir.path()).expect("dir") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copy");
        }
        let path = copy.path().join("manifest.json");
        let mut v: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        v.as_object_mut().expect("object").remove("checksum");
        let mut leaves = Vec::new();
        leaf_pointers(&v, String::new(), &mut leaves);
        for (at, value) in edits {
            if let Some(slot) = v.pointer_mut(&leaves[at.index(leaves.len())]) {
                *slot = value;
            }
        }
        if let Ok(m) = serde_json::from_value::<Manifest>(v.clone()) {
            v["checksum"] = m.checksum().expect("checksum").into();
        }
        std::fs::write(&path, serde_json::to_vec(&v).expect("json")).expect("write");
        if let Ok(table) = Table::open(copy.path()) {
            let _ = try_read_all(&table);
        }
    }
}

/// JSON pointers of every scalar in `v` (numbers, strings, bools).
fn leaf_pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| leaf_pointers(x, format!("{at}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| leaf_pointers(x, format!("{at}/{i}"), out)),
        _ => out.push(at),
    }
}

fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..5000).prop_map(Value::from),
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(4095),
            Just(4096),
            Just(u64::MAX),
            Just(u64::MAX - 4095)
        ]
        .prop_map(Value::from),
        "[a-z./]{0,12}".prop_map(Value::from),
        Just(Value::Null),
        Just(Value::Array(vec![])),
    ]
}
