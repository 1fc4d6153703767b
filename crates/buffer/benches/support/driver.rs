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
    loading: Vec<PieceId>,
    next: usize,
    out: Vec<Delivery>,
    now: u64,
    /// DSM: columns of the table (scans read random subsets); 0 = NSM.
    columns: u32,
}

/// DSM column sizes cycle through these (bytes per chunk): varied widths, as after
/// lightweight compression.
const COLUMN_SIZES: [u64; 4] = [8, 4, 2, 1];
/// Columns a DSM scan of the benchmark reads, at most.
const COLUMNS_PER_SCAN: u32 = 4;

impl Driver {
    pub fn new(kind: PolicyKind, chunks: u32, scans: usize, seed: u64) -> Driver {
        Self::with_columns(kind, chunks, 0, scans, seed)
    }

    /// `columns > 0`: a DSM table of that many columns; each scan reads up to 4 of them.
    pub fn with_columns(
        kind: PolicyKind,
        chunks: u32,
        columns: u32,
        scans: usize,
        seed: u64,
    ) -> Driver {
        Self::with_eviction(kind, chunks, columns, scans, seed, EvictionStrategy::Greedy)
    }

    /// [`Driver::with_columns`] with relevance's eviction strategy chosen.
    pub fn with_eviction(
        kind: PolicyKind,
        chunks: u32,
        columns: u32,
        scans: usize,
        seed: u64,
        eviction: EvictionStrategy,
    ) -> Driver {
        let mut geometry = TableGeometry::uniform(chunks, ROWS_PER_CHUNK).expect("valid geometry");
        if columns > 0 {
            let sizes: Vec<u64> = (0..columns as usize)
                .map(|c| COLUMN_SIZES[c % COLUMN_SIZES.len()])
                .collect();
            let all = vec![sizes; chunks as usize];
            geometry = geometry.with_column_bytes(all).expect("valid columns");
        }
        let frames = ((f64::from(chunks) * BUFFER_FRACTION) as u32).max(2 * scans as u32);
        let config = AbmConfig::new(frames).with_eviction(eviction);
        let abm = Abm::with_kind(geometry, config, kind).expect("valid config");
        let mut d = Driver {
            columns,
            abm,
            rng: ChaCha8Rng::seed_from_u64(seed),
            scans: Vec::new(),
            holding: Vec::new(),
            loading: Vec::new(),
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
        let spec = ScanSpec::new(start..start + len, self.random_columns());
        self.abm
            .register_scan(&spec, Nanos(self.now))
            .expect("valid spec")
            .scan
    }

    fn random_columns(&mut self) -> ColumnMask {
        if self.columns == 0 {
            return ColumnMask::ALL;
        }
        let first = self.rng.random_range(0..self.columns);
        let count = self.rng.random_range(1..=COLUMNS_PER_SCAN);
        ColumnMask((first..first + count).fold(0, |m, c| m | 1u64 << (c % self.columns)))
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
            match self.loading.pop() {
                None => {
                    let load = self.abm.next_load(now);
                    // Completed in reverse, so the smallest piece arrives first.
                    self.loading = load.map(|l| l.pieces).unwrap_or_default();
                    self.loading.reverse();
                }
                Some(piece) => self
                    .abm
                    .load_completed(piece, now, &mut self.out)
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
