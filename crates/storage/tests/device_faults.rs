//! Injected device faults (issue "Reliability": fault injection) become errors naming
//! the file and offset, and a damaged byte anywhere in a chunk is refused by the page
//! checks, never decoded.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use coopscan_storage::device::{
    Device, DeviceConfig, DeviceError, Fault, FaultInjector, ReadRequest, IO_ALIGN,
};
use coopscan_storage::{verify_chunk, Extent, Layout, StorageError, Table};

use common::{sample_batch, sample_schema, write_table};

const PAGE_BYTES: u32 = 4096;

/// Hands out a scripted fault per request (then none).
#[derive(Debug, Default)]
struct Script(Mutex<VecDeque<Option<Fault>>>);

impl Script {
    fn new(faults: Vec<Option<Fault>>) -> Arc<Script> {
        Arc::new(Script(Mutex::new(faults.into())))
    }
}

impl FaultInjector for Script {
    fn inject(&self, _: &ReadRequest<'_>) -> Option<Fault> {
        self.0.lock().expect("script lock").pop_front().flatten()
    }
}

fn table(dir: &std::path::Path, layout: Layout) -> Table {
    let batches: Vec<_> = (0..4).map(|i| sample_batch(i * 500, 500)).collect();
    write_table(dir, &sample_schema(), layout, PAGE_BYTES, 2, &batches)
}

fn views(v: &[(Extent, Vec<u8>)]) -> Vec<(Extent, &[u8])> {
    v.iter().map(|(e, b)| (*e, &b[..])).collect()
}

fn file_of(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("blocks.bin");
    let bytes: Vec<u8> = (0..4 * IO_ALIGN).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn each_fault_kind_reaches_the_caller_as_what_it_is() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = file_of(tmp.path());
    let clean = std::fs::read(&path).expect("read");
    let script = Script::new(vec![
        Some(Fault::Error),
        Some(Fault::Short { got: 100 }),
        Some(Fault::Corrupt {
            at: IO_ALIGN + 5,
            mask: 0x10,
        }),
        Some(Fault::Delay(std::time::Duration::from_millis(30))),
        None,
    ]);
    let device = Device::with_faults(DeviceConfig::default(), script);
    let file = device.open(&path).expect("open");
    let len = 2 * IO_ALIGN;
    let offset = IO_ALIGN as u64;

    match device.read(&file, offset, len) {
        Err(e @ DeviceError::Read { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("blocks.bin") && msg.contains("offset 4096"),
                "{msg}"
            );
            assert!(msg.contains("injected"), "{msg}");
        }
        other => panic!("expected a read error, got {other:?}"),
    }
    match device.read(&file, offset, len) {
        Err(DeviceError::ShortRead { expected, got, .. }) => {
            assert_eq!((expected, got), (len, 100));
        }
        other => panic!("expected a short read, got {other:?}"),
    }
    // A corruption is silent at this level (the disk did not notice either): exactly
    // one byte differs, by the mask. The page checks above must catch it.
    let damaged = device
        .read(&file, offset, len)
        .expect("corrupt read succeeds");
    let expected = &clean[IO_ALIGN..IO_ALIGN + len];
    let diffs: Vec<usize> = (0..len).filter(|&i| damaged[i] != expected[i]).collect();
    assert_eq!(diffs, vec![(IO_ALIGN + 5) % len]);
    assert_eq!(damaged[diffs[0]] ^ expected[diffs[0]], 0x10);

    let started = std::time::Instant::now();
    let slow = device.read(&file, offset, len).expect("delayed read");
    assert!(started.elapsed() >= std::time::Duration::from_millis(30));
    assert_eq!(&slow[..], expected);
    let fine = device.read(&file, offset, len).expect("clean read");
    assert_eq!(&fine[..], expected);
    assert_eq!(device.stats().requests, 5);
}

/// Every single flipped byte of a chunk, header, payload or padding, makes the chunk's
/// verification fail (before the padding check, a flip in the zero padding after a
/// page's payload passed unnoticed).
#[test]
fn a_flip_of_any_byte_of_a_chunk_is_refused() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = table(tmp.path(), layout);
        let device = Device::new(DeviceConfig::default());
        let files = t.open_files(&device).expect("files");
        let all: Vec<usize> = (0..t.schema().len()).collect();
        let k = t.chunk_count() / 2;
        let bytes = t.read_chunk(&device, &files, k, &all).expect("read");
        let clean: Vec<(Extent, Vec<u8>)> = bytes
            .views()
            .into_iter()
            .map(|(e, b)| (e, b.to_vec()))
            .collect();
        verify_chunk(&t, &views(&clean)).expect("clean chunk verifies");
        let mut missed = Vec::new();
        for extent in 0..clean.len() {
            for at in 0..clean[extent].1.len() {
                let mut damaged = clean.clone();
                damaged[extent].1[at] ^= 0x01;
                if verify_chunk(&t, &views(&damaged)).is_ok() {
                    missed.push((extent, at));
                }
            }
        }
        assert!(
            missed.is_empty(),
            "{layout}: {} flipped bytes passed, first {:?}",
            missed.len(),
            &missed[..missed.len().min(5)]
        );
    }
}

/// A short read and an injected error while reading a table chunk are storage errors
/// naming the data file.
#[test]
fn table_reads_report_injected_faults_with_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = table(tmp.path(), Layout::Pax);
    let script = Script::new(vec![Some(Fault::Error), Some(Fault::Short { got: 0 })]);
    let device = Device::with_faults(DeviceConfig::default(), script);
    let files = t.open_files(&device).expect("files");
    let name = t.file_path(0);
    let name = name.file_name().expect("name").to_string_lossy();
    for _ in 0..2 {
        match t.read_chunk(&device, &files, 0, &[0]) {
            Err(e @ StorageError::Device(_)) => {
                assert!(e.to_string().contains(name.as_ref()), "{e}");
            }
            Err(e) => panic!("expected a device error, got {e}"),
            Ok(_) => panic!("expected a device error, got data"),
        }
    }
    t.read_chunk(&device, &files, 0, &[0])
        .expect("the next read is clean");
}
