//! Decode throughput per layout: TPC-H lineitem chunks decoded from memory (no I/O),
//! with all 16 columns and with Q6's 4 columns, and Q6's predicate evaluated while
//! decoding (its 2 output columns built for the selected tuples only). Data: SF `COOPSCAN_BENCH_SF` (default
//! 0.1), generated once into a temp dir. Throughput is in bytes of loaded extents.
//!
//! `page_bounds`: DSM chunks filtered by a narrow `l_orderkey` window in each (lineitem
//! is clustered by it) and by Q6's predicate (not clustered), with the table's page
//! bounds and with a copy of the table whose manifest keeps none.

use std::hint::black_box;

use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::filter::{CmpOp, Comparison, RowFilter};
use coopscan_storage::manifest::Manifest;
use coopscan_storage::zonemap::Zonemap;
use coopscan_storage::{
    decode_chunk_filtered, decode_chunk_with, ChunkBytes, Layout, PageChecks, Table,
};
use coopscan_tpch::{import_table, ImportOptions, TpchTable};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// Q6 reads l_quantity, l_extendedprice, l_discount, l_shipdate.
const Q6_COLUMNS: [usize; 4] = [4, 5, 6, 10];

fn bench_sf() -> f64 {
    std::env::var("COOPSCAN_BENCH_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.1)
}

fn load_all(table: &Table, projection: &[usize]) -> Vec<ChunkBytes> {
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).expect("open files");
    (0..table.chunk_count())
        .map(|k| {
            table
                .read_chunk(&device, &files, k, projection)
                .expect("read")
        })
        .collect()
}

fn decode(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("decode");
    group.sample_size(10);
    for layout in Layout::ALL {
        let opts = ImportOptions {
            sf: bench_sf(),
            layout,
            chunk_bytes: 4 << 20,
            out_dir: tmp.path().join(layout.to_string()),
            overwrite: true,
            threads: 2,
        };
        import_table(TpchTable::Lineitem, &opts, &|_| {}).expect("import");
        let table = Table::open(&opts.out_dir.join("lineitem")).expect("open");
        let all: Vec<usize> = (0..table.schema().len()).collect();
        for (name, projection) in [("all", &all[..]), ("q6", &Q6_COLUMNS[..])] {
            let loaded = load_all(&table, projection);
            let bytes: u64 = loaded.iter().map(ChunkBytes::bytes).sum();
            group.throughput(Throughput::Bytes(bytes));
            // "resident": bytes already verified on load (the runtime's frames), so
            // decoding skips the checksums.
            for (suffix, checks) in [
                ("", PageChecks::Full),
                ("-resident", PageChecks::SkipChecksum),
            ] {
                group.bench_function(format!("{layout}/{name}{suffix}"), |b| {
                    b.iter(|| {
                        for chunk in &loaded {
                            let batch = decode_chunk_with(
                                &table,
                                chunk.chunk,
                                projection,
                                None,
                                &chunk.views(),
                                checks,
                            )
                            .expect("decode");
                            black_box(batch);
                        }
                    })
                });
            }
        }
        let loaded = load_all(&table, &Q6_COLUMNS);
        let bytes: u64 = loaded.iter().map(ChunkBytes::bytes).sum();
        group.throughput(Throughput::Bytes(bytes));
        let filter = q6_filter(&table);
        group.bench_function(format!("{layout}/q6-filtered-resident"), |b| {
            b.iter(|| {
                for chunk in &loaded {
                    let views = chunk.views();
                    let selected = decode_chunk_filtered(
                        &table,
                        chunk.chunk,
                        &Q6_OUTPUT,
                        None,
                        &views,
                        PageChecks::SkipChecksum,
                        &filter,
                    )
                    .expect("decode");
                    black_box(selected);
                }
            })
        });
    }
    group.finish();
}

/// The columns Q6 outputs once its predicate is evaluated in the scan.
const Q6_OUTPUT: [usize; 2] = [5, 6];

/// Q6's predicate in stored units: shipdate in 1994 (days since 1970), discount
/// 0.05-0.07 and quantity below 24 (both scaled by 100).
fn q6_filter(table: &Table) -> RowFilter {
    let c = |column, op, value| Comparison { column, op, value };
    let conjuncts = vec![
        c(10, CmpOp::GtEq, 8766),
        c(10, CmpOp::Lt, 9131),
        c(6, CmpOp::GtEq, 5),
        c(6, CmpOp::LtEq, 7),
        c(4, CmpOp::Lt, 2400),
    ];
    RowFilter::new(table.schema(), conjuncts).expect("Q6's columns are numeric")
}

/// Chunk `k`'s window of `l_orderkey`: the 1/16 of its zonemap's range from the middle
/// (about 1/16 of its tuples, the rest of its pages ruled out by their bounds).
fn key_window(table: &Table, k: usize) -> RowFilter {
    let Some(Zonemap::Int { min, max }) = table.chunk(k).columns[0].zonemap.clone() else {
        panic!("l_orderkey has an integer zonemap");
    };
    let from = min + (max - min) / 2;
    let c = |op, value| Comparison {
        column: 0,
        op,
        value,
    };
    let conjuncts = vec![c(CmpOp::GtEq, from), c(CmpOp::Lt, from + (max - min) / 16)];
    RowFilter::new(table.schema(), conjuncts).expect("l_orderkey is numeric")
}

fn page_bounds(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = ImportOptions {
        sf: bench_sf(),
        layout: Layout::Dsm,
        chunk_bytes: 4 << 20,
        out_dir: tmp.path().join("bounds"),
        overwrite: true,
        threads: 2,
    };
    import_table(TpchTable::Lineitem, &opts, &|_| {}).expect("import");
    let with = opts.out_dir.join("lineitem");
    let without = tmp.path().join("no-bounds");
    std::fs::create_dir_all(&without).expect("dir");
    for entry in std::fs::read_dir(&with).expect("list") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name");
        std::fs::copy(&path, without.join(name)).expect("copy");
    }
    let mut manifest = Manifest::load(&without).expect("manifest");
    manifest
        .files
        .iter_mut()
        .for_each(|f| f.page_bounds.clear());
    manifest.save(&without).expect("save");
    let mut group = c.benchmark_group("page_bounds");
    group.sample_size(10);
    for (name, dir) in [("bounds", &with), ("no-bounds", &without)] {
        let table = Table::open(dir).expect("open");
        let mut columns = vec![0];
        columns.extend(Q6_COLUMNS);
        let loaded = load_all(&table, &columns);
        let windows: Vec<RowFilter> = (0..table.chunk_count())
            .map(|k| key_window(&table, k))
            .collect();
        let q6 = q6_filter(&table);
        for (query, filter) in [("key-window", None), ("q6", Some(&q6))] {
            group.bench_function(format!("{query}/{name}"), |b| {
                b.iter(|| {
                    for chunk in &loaded {
                        let filter = filter.unwrap_or(&windows[chunk.chunk]);
                        let selected = decode_chunk_filtered(
                            &table,
                            chunk.chunk,
                            &Q6_OUTPUT,
                            None,
                            &chunk.views(),
                            PageChecks::SkipChecksum,
                            filter,
                        )
                        .expect("decode");
                        black_box(selected);
                    }
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, decode, page_bounds);
criterion_main!(benches);
