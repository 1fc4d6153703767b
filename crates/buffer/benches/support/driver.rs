//! A steady-state driver for measuring ABM decision cost: scans over random ranges
//! (1-100% of the table from random starts) keep asking for chunks, the loader loads
//! what it is told and completes at once; a finished scan is replaced by a new one.
//! Only ABM decision calls (next_chunk, release_chunk, next_load, load_completed) are
//! timed; registration (O(chunks of the scan), once per scan) is not.

use coopscan_buffer::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

const ROWS_PER_CHUNK: u64 = 100;
/// Buffer as a fraction of the table: the 2007 paper's 64 of 256 chunks.
const BUFFER_FRACTION: f64 = 0.25;
const RANGE_PERCENTS: [u64; 4] = [1, 10, 50, 100];

pub struct Driver {
    abm: Abm,
    rng: ChaCha8Rng,
    scans: Vec<ScanId>,
    holding: Vec<bool>,
    loading: Option<ChunkId>,
    next: usize,
    out: Vec<Delivery>,
    now: u64,
}

impl Driver {
    pub fn new(kind: PolicyKind, chunks: u32, scans: usize, seed: u64) -> Driver {
        let geometry = TableGeometry::uniform(chunks, ROWS_PER_CHUNK).expect("valid geometry");
        let frames = ((f64::from(chunks) * BUFFER_FRACTION) as u32).max(2 * scans as u32);
        let abm = Abm::with_kind(geometry, AbmConfig::new(frames), kind).expect("valid config");
        let mut d = Driver {
            abm,
            rng: ChaCha8Rng::seed_from_u64(seed),
            scans: Vec::new(),
            holding: Vec::new(),
            loading: None,
            next: 0,
            out: Vec::new(),
            now: 0,
        };
        for _ in 0..scans {
            let scan = d.new_scan();
            d.scans.push(scan);
            d.holding.push(false);
        }
        d
    }

    pub fn abm(&self) -> &Abm {
        &self.abm
    }

    fn new_scan(&mut self) -> ScanId {
        let rows = self.abm.geometry().row_count();
        let percent = RANGE_PERCENTS[self.rng.random_range(0..RANGE_PERCENTS.len())];
        let len = (rows * percent / 100).max(1);
        let start = self.rng.random_range(0..=rows - len);
        let spec = ScanSpec::new(vec![start..start + len], ColumnMask::ALL);
        self.abm
            .register_scan(&spec, Nanos(self.now))
            .expect("valid spec")
            .scan
    }

    fn take_deliveries(&mut self) {
        for d in self.out.drain(..) {
            if let Some(i) = self.scans.iter().position(|s| *s == d.scan) {
                self.holding[i] = true;
            }
        }
    }

    /// Performs `n` ABM decisions; returns the time spent inside them.
    pub fn run(&mut self, n: u64) -> Duration {
        let mut spent = Duration::ZERO;
        let mut done = 0;
        while done < n {
            self.now += 1_000_000;
            let now = Nanos(self.now);
            let t = Instant::now();
            match self.loading.take() {
                None => self.loading = self.abm.next_load(now).map(|l| l.chunk),
                Some(chunk) => self
                    .abm
                    .load_completed(chunk, now, &mut self.out)
                    .expect("was loading"),
            }
            spent += t.elapsed();
            self.take_deliveries();
            done += 1;
            let i = self.next % self.scans.len();
            self.next += 1;
            let scan = self.scans[i];
            let t = Instant::now();
            if std::mem::take(&mut self.holding[i]) {
                self.abm.release_chunk(scan, now).expect("held a chunk");
                done += 1;
            }
            let next = self.abm.next_chunk(scan, now).expect("registered");
            spent += t.elapsed();
            done += 1;
            match next {
                NextChunk::Deliver(_) => self.holding[i] = true,
                NextChunk::Wait => {}
                NextChunk::Finished => self.replace(i),
            }
        }
        spent
    }

    fn replace(&mut self, i: usize) {
        let old = self.scans[i];
        self.abm
            .unregister_scan(old, Nanos(self.now), &mut self.out)
            .expect("registered");
        self.take_deliveries();
        self.scans[i] = self.new_scan();
    }
}
