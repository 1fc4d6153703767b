//! What happened when, for the SVG picture: chunk loads, cached intervals, processing
//! intervals per query, and step series of waiting queries, busy CPUs and busy disk.

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Interval {
    pub chunk: u32,
    pub from_s: f64,
    pub to_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Processing {
    pub chunk: u32,
    pub query: usize,
    pub from_s: f64,
    pub to_s: f64,
}

/// A step series: `(time, value)` change points.
pub type Series = Vec<(f64, u32)>;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Timeline {
    pub loads: Vec<Interval>,
    pub cached: Vec<Interval>,
    pub processing: Vec<Processing>,
    pub io_waiting: Series,
    pub cpu_busy: Series,
    pub disk_busy: Series,
    #[serde(skip)]
    open_cached: Vec<Option<f64>>,
}

impl Timeline {
    pub(crate) fn new(chunk_count: u32) -> Self {
        Timeline {
            open_cached: vec![None; chunk_count as usize],
            ..Default::default()
        }
    }

    pub(crate) fn cache_start(&mut self, chunk: u32, at: f64) {
        self.open_cached[chunk as usize] = Some(at);
    }

    pub(crate) fn cache_end(&mut self, chunk: u32, at: f64) {
        if let Some(from_s) = self.open_cached[chunk as usize].take() {
            self.cached.push(Interval {
                chunk,
                from_s,
                to_s: at,
            });
        }
    }

    pub(crate) fn finish(&mut self, at: f64) {
        for chunk in 0..self.open_cached.len() as u32 {
            self.cache_end(chunk, at);
        }
    }

    pub(crate) fn step(series: &mut Series, at: f64, value: u32) {
        if series.last().is_none_or(|(_, v)| *v != value) {
            series.push((at, value));
        }
    }
}
