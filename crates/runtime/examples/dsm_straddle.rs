//! Bytes a DSM Q6-like CScan reads from the device, against what its columns' chunk
//! extents add up to (a page on a chunk boundary is in both neighbours' extents) and
//! against their distinct pages (each page read once). See docs/performance.md, "DSM:
//! pages straddling two chunks".
//!
//! The DSM table is converted once from the PAX SF1 lineitem (`coopscan gen`'s cache)
//! with the DSM defaults (4 KiB pages, 4 MiB chunks):
//!
//! ```text
//! CARGO_TARGET_DIR=$HOME/.cache/coopscan-wt-straddle-target nice -n 19 cargo run --release \
//!   -p coopscan-runtime --example dsm_straddle -- \
//!   $HOME/.cache/coopscan-data/tpch-sf1-pax-4mb/tpch-sf1-pax-4mb/lineitem /tmp/coopscan-dsm-sf1
//! ```
#![allow(clippy::unwrap_used)] // an example: a failure is a message and an exit
#![allow(clippy::single_range_in_vec_init)] // one range of rows, not a Vec of rows

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::device::{Bandwidth, Device, DeviceConfig};
use coopscan_storage::{Layout, Table, TableWriter, WriteOptions};

const Q6: [&str; 4] = ["l_quantity", "l_extendedprice", "l_discount", "l_shipdate"];
/// Concurrent scans of the second run, started this far apart on a device of the
/// 2007 paper's bandwidth, so they overlap in part and the buffer must evict.
const SCANS: usize = 4;
const STAGGER: Duration = Duration::from_millis(50);
const MB_PER_S: f64 = 200.0;
/// Buffer of the concurrent run, in the table's largest chunks (all columns): about a
/// sixth of Q6's bytes.
const FRAMES: u32 = 8;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, pax, dsm] = &args[..] else {
        eprintln!("usage: dsm_straddle PAX_LINEITEM_DIR DSM_OUT_DIR");
        std::process::exit(2);
    };
    let table = dsm_table(Path::new(pax), Path::new(dsm));
    let columns: Vec<usize> = Q6
        .iter()
        .map(|n| {
            table
                .schema()
                .columns
                .iter()
                .position(|c| c.name == *n)
                .unwrap()
        })
        .collect();
    let (extents, distinct) = q6_bytes(&table, &columns);
    println!(
        "table: {} rows, {} chunks; Q6 columns: extents {extents} B, distinct pages {distinct} B",
        table.rows(),
        table.chunk_count()
    );
    let whole = u32::try_from(table.chunk_count()).unwrap();
    run(&table, &columns, 1, whole, None, "one scan, buffer = table");
    let disk = Some(Bandwidth::mb_per_s(MB_PER_S).unwrap());
    let what = format!("{SCANS} scans {STAGGER:?} apart, {FRAMES} frames, {MB_PER_S} MB/s");
    run(&table, &columns, SCANS, FRAMES, disk, &what);
}

/// The DSM table at `dsm`, converted from the PAX table at `pax` if it is not there yet.
fn dsm_table(pax: &Path, dsm: &Path) -> Table {
    if let Ok(table) = Table::open(dsm) {
        return table;
    }
    let source = Table::open(pax).unwrap();
    let device = Device::new(DeviceConfig::default());
    let files = source.open_files(&device).unwrap();
    let all: Vec<usize> = (0..source.schema().len()).collect();
    let opts = WriteOptions::new(Layout::Dsm);
    let name = &source.manifest().name;
    let mut writer = TableWriter::create(dsm, name, source.schema().clone(), opts).unwrap();
    for k in 0..source.chunk_count() {
        let batch = source
            .read_chunk_batch(&device, &files, k, &all, None)
            .unwrap();
        writer.write_batch(&batch).unwrap();
    }
    writer.finish().unwrap();
    Table::open(dsm).unwrap()
}

/// Sum of the columns' chunk extents, and of their distinct pages.
fn q6_bytes(table: &Table, columns: &[usize]) -> (u64, u64) {
    let page = u64::from(table.manifest().page_bytes);
    let mut sum = 0;
    let mut pages = BTreeSet::new();
    for k in 0..table.chunk_count() {
        for &c in columns {
            let e = table.chunk(k).columns[c].extent;
            sum += e.len;
            pages.extend((e.offset / page..(e.offset + e.len) / page).map(|p| (c, p)));
        }
    }
    (sum, pages.len() as u64 * page)
}

/// `scans` Q6 scans of the whole table under relevance, started `STAGGER` apart, each
/// decoding its chunks; prints the bytes the device read and the bytes the loads kept
/// (their difference: boundary pages copied from a resident neighbour). Uses only
/// counters that existed before the copying, so the same example measures both.
fn run(
    table: &Table,
    columns: &[usize],
    scans: usize,
    frames: u32,
    bandwidth: Option<Bandwidth>,
    what: &str,
) {
    let config = DeviceConfig {
        bandwidth,
        ..DeviceConfig::default()
    };
    let device = Arc::new(Device::new(config));
    let runtime_config = RuntimeConfig::new(frames, PolicyKind::Relevance);
    let runtime = Arc::new(Runtime::new(table.clone(), device, runtime_config).unwrap());
    let all_rows = table.rows();
    let started = Instant::now();
    let threads: Vec<_> = (0..scans)
        .map(|i| {
            let (runtime, columns) = (Arc::clone(&runtime), columns.to_vec());
            std::thread::spawn(move || {
                std::thread::sleep(STAGGER * i as u32);
                let mut scan = runtime.register(vec![0..all_rows], columns).unwrap();
                let mut rows = 0;
                while let Some(chunk) = scan.next_chunk().unwrap() {
                    rows += chunk.batch().unwrap().num_rows() as u64;
                }
                rows
            })
        })
        .collect();
    let rows: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let device = runtime.device_stats();
    let abm = runtime.abm_stats();
    println!(
        "{what}: rows {rows:?}, device read {} B in {} requests, loads kept {} B \
         (copied {} B) in {} loads, {:.2} s",
        device.bytes,
        device.requests,
        abm.bytes_loaded,
        abm.bytes_loaded.saturating_sub(device.bytes),
        abm.loads,
        elapsed.as_secs_f64()
    );
}
