//! Chunk-read bandwidth of the device: 4 and 16 MiB chunks, O_DIRECT vs buffered,
//! unthrottled vs throttled to `THROTTLED_MB_S`.
//!
//! Run: `cargo bench -p coopscan-storage --bench device`. The data file (default
//! `FILE_MB_DEFAULT` MB, override with `COOPSCAN_BENCH_DEVICE_MB`) is written to the temp
//! dir and removed afterwards. Chunks are read in a strided order, not sequentially, as
//! the ABM's policies fetch them. Buffered reads come from the page cache (the file was
//! just written), so they measure memory copies, not the disk.

use std::fs::File;
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use coopscan_storage::device::{
    AlignedBuf, Bandwidth, Device, DeviceConfig, DeviceFile, DirectMode,
};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

const FILE_MB_DEFAULT: usize = 256;
const FILE_MB_ENV: &str = "COOPSCAN_BENCH_DEVICE_MB";
const MIB: usize = 1 << 20;
const CHUNK_MIB: [usize; 2] = [4, 16];
const THROTTLED_MB_S: f64 = 200.0;
/// Visits every chunk once per pass in a non-sequential order (odd, so coprime with the
/// power-of-two chunk counts).
const CHUNK_STRIDE: usize = 7;

fn file_mib() -> usize {
    std::env::var(FILE_MB_ENV)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(FILE_MB_DEFAULT)
}

/// Writes a file of `mib` MiB (rounded up to whole largest chunks) and syncs it, so
/// O_DIRECT reads do not wait for writeback.
fn write_data_file(path: &Path, mib: usize) -> std::io::Result<()> {
    let largest = CHUNK_MIB[CHUNK_MIB.len() - 1];
    let chunks = mib.div_ceil(largest).max(1);
    let block: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    let mut out = BufWriter::new(File::create(path)?);
    for _ in 0..chunks * largest {
        out.write_all(&block)?;
    }
    out.into_inner()?.sync_all()
}

fn device(direct: DirectMode, bandwidth: Option<Bandwidth>) -> Device {
    Device::new(DeviceConfig {
        direct,
        bandwidth,
        ..DeviceConfig::default()
    })
}

/// One chunk read per iteration, into a reused frame (as the buffer pool will).
fn bench_chunk_reads(
    c: &mut Criterion,
    file: &DeviceFile,
    device: &Device,
    id: &str,
    chunk: usize,
) {
    let chunks = usize::try_from(file.len()).unwrap_or(usize::MAX) / chunk;
    let mut frame = AlignedBuf::zeroed(chunk);
    let mut next = 0usize;
    let mut group = c.benchmark_group("device_read");
    group.throughput(Throughput::BytesDecimal(chunk as u64));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function(id, |b| {
        b.iter(|| {
            let offset = ((next * CHUNK_STRIDE % chunks) * chunk) as u64;
            next += 1;
            device
                .read_into(file, offset, &mut frame)
                .expect("chunk read");
            black_box(&frame);
        })
    });
    group.finish();
}

fn device_reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("device-bench.bin");
    write_data_file(&path, file_mib()).expect("write bench file");
    let throttled = Bandwidth::mb_per_s(THROTTLED_MB_S).expect("valid bandwidth");
    for (mode_name, mode) in [
        ("direct", DirectMode::Required),
        ("buffered", DirectMode::Off),
    ] {
        for (throttle_name, bandwidth) in [("unthrottled", None), ("200MBps", Some(throttled))] {
            let device = device(mode, bandwidth);
            let file = device.open(&path).expect("open bench file");
            for chunk_mib in CHUNK_MIB {
                let id = format!("{mode_name}/{throttle_name}/{chunk_mib}MiB");
                bench_chunk_reads(c, &file, &device, &id, chunk_mib * MIB);
            }
            let stats = device.stats();
            eprintln!(
                "{mode_name}/{throttle_name}: {} requests, {:.0} MB/s while busy, I/O {:.0}% of busy",
                stats.requests,
                stats.busy_mb_s(),
                100.0 * stats.io_time.as_secs_f64() / stats.busy_time.as_secs_f64().max(1e-9),
            );
        }
    }
}

criterion_group!(benches, device_reads);
criterion_main!(benches);
