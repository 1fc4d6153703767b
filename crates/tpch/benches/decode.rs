//! Decode throughput per layout: TPC-H lineitem chunks decoded from memory (no I/O),
//! with all 16 columns and with Q6's 4 columns. Data: SF `COOPSCAN_BENCH_SF` (default
//! 0.1), generated once into a temp dir. Throughput is in bytes of loaded extents.

use std::hint::black_box;

use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::{decode_chunk_with, ChunkBytes, Layout, PageChecks, Table};
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
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
