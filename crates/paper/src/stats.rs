//! The definitions of Table 2's statistics (VLDB 2007 §5.2), for any source of query
//! timings. Times are seconds since the run started.
//!
//! - stream time: from the start of a stream's first query to the end of its last;
//!   averaged over streams it measures system throughput;
//! - normalized latency: a query's latency ÷ the standalone (cold, alone) time of its
//!   type; averaged over queries it measures system latency.

use std::collections::BTreeMap;

/// Arithmetic mean; `NaN` for no values.
pub fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// One query's timing: its stream, start and end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub stream: usize,
    pub start_s: f64,
    pub end_s: f64,
}

/// Every stream's time (first start to last end), in stream order.
pub fn stream_times_s(queries: impl IntoIterator<Item = Span>) -> Vec<f64> {
    let mut streams: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for q in queries {
        let span = streams.entry(q.stream).or_insert((q.start_s, q.end_s));
        span.0 = span.0.min(q.start_s);
        span.1 = span.1.max(q.end_s);
    }
    streams.values().map(|(start, end)| end - start).collect()
}

/// A query's latency over its type's standalone time.
pub fn normalized_latency(latency_s: f64, standalone_s: f64) -> f64 {
    latency_s / standalone_s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_time_spans_first_start_to_last_end() {
        let q = |stream, start_s, end_s| Span {
            stream,
            start_s,
            end_s,
        };
        let times = stream_times_s([
            q(1, 3.0, 5.0),
            q(0, 0.0, 2.0),
            q(1, 5.0, 9.5),
            q(0, 2.0, 4.0),
        ]);
        assert_eq!(times, vec![4.0, 6.5]);
        assert_eq!(mean(times), 5.25);
        assert!(mean(Vec::new()).is_nan());
        assert_eq!(normalized_latency(6.0, 2.0), 3.0);
    }
}
