//! The 2012 paper's TPC-H throughput run (§4.2, Figures 14-16 and 18), defined once:
//! the streams, the buffer as a share of the data all queries touch, the device's
//! balance, the points each figure sweeps, the policies and the paper's findings.
//! `coopscan bench --preset tpch-…` runs it on the real engine (`coopscan-cli`'s
//! `cmd_tpch::bench`), each stream the 22 queries in its Appendix A order with its own
//! seeded parameters.
//!
//! The paper ran 8 streams on 8 cores with 8 threads per query, a buffer of 30 % of
//! "the total volume of data accessed by all queries with 8 streams" and a device of
//! 600 MB/s, slowed from 2 GB/s by delaying page delivery. It publishes plots, not
//! numbers, so the findings are its sentences.

/// Streams of the default point: the paper's 8 streams on 8 cores, scaled to the
/// 2-core machine this project measures on as Figure 16's middle point (the
/// eleventh session's runs used 4 too).
pub const DEFAULT_STREAMS: usize = 4;
/// The buffer, % of the volume all queries touch (the paper's 2250 of 7500 MB).
pub const DEFAULT_BUFFER_PCT: f64 = 30.0;
/// The paper's default device bandwidth, MB/s, which our calibrated bandwidth
/// stands for on every bandwidth axis.
pub const PAPER_BANDWIDTH_MB_S: f64 = 600.0;
/// The bandwidth from which the paper finds no difference between policies ("when
/// the I/O subsystem delivers 1200MB/s or more"): at the default point the run turns
/// CPU bound there. The calibration puts our device at the same fraction of the
/// bandwidth at which LRU's reads take as long as the CPU-bound run
/// ([`calibrated_bandwidth`]).
pub const PAPER_CPU_BOUND_MB_S: f64 = 1200.0;

/// The policies compared: LRU (our `normal`), PBM, PBM/LRU, CScans (`relevance`) and
/// the mixed pool (CScans, with in-order Scans where a plan needs table order). OPT is
/// replayed on every run's own references; the paper's OPT is the one on PBM's ("a
/// trace of all page references that were made in the PBM run").
pub const POLICIES: &[&str] = &["normal", "pbm", "pbm-lru", "relevance", "mixed"];
/// The policy of the paper's OPT, whose run's trace also gives Figure 18.
pub const OPT_TRACE_POLICY: &str = "pbm";

/// What a TPC-H throughput preset varies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TpchAxis {
    /// One point: the default streams, buffer and bandwidth, with Figure 18's sharing
    /// potential.
    None,
    /// Figure 14: the buffer, % of the volume all queries touch.
    BufferPct(&'static [f64]),
    /// Figure 15: the device, MB/s on the paper's scale (600 = our calibrated default).
    BandwidthMbS(&'static [f64]),
    /// Figure 16: concurrent streams, the buffer kept at the default point's size.
    Streams(&'static [usize]),
}

impl TpchAxis {
    /// The swept values as numbers (empty for one point).
    pub fn points(&self) -> Vec<f64> {
        match self {
            TpchAxis::None => Vec::new(),
            TpchAxis::BufferPct(v) | TpchAxis::BandwidthMbS(v) => v.to_vec(),
            TpchAxis::Streams(v) => v.iter().map(|&s| s as f64).collect(),
        }
    }

    /// The x axis's label, and its JSON key.
    pub fn label(&self) -> (&'static str, &'static str) {
        match self {
            TpchAxis::None => ("", ""),
            TpchAxis::BufferPct(_) => ("buffer, % of the data the queries touch", "buffer_pct"),
            TpchAxis::BandwidthMbS(_) => ("bandwidth, MB/s on the paper's scale", "paper_mb_s"),
            TpchAxis::Streams(_) => ("concurrent streams", "streams"),
        }
    }
}

/// One figure of the throughput run.
#[derive(Clone, Copy, Debug)]
pub struct TpchExperiment {
    /// Its preset name.
    pub name: &'static str,
    pub source: &'static str,
    pub axis: TpchAxis,
    /// The paper's finding, beside which a report prints ours.
    pub finding: &'static str,
}

pub const THROUGHPUT: TpchExperiment = TpchExperiment {
    name: "tpch-throughput",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, §4.2, Figure 18",
    axis: TpchAxis::None,
    finding: "in the TPC-H experiment, green area dominates the graph i.e. most of the data \
              is going to be requested and processed by only one scan [...] the performance \
              benefit that PBM and CScans achieve over simple policies like LRU strongly \
              depends on the sharing potential.",
};

pub const BUFFER: TpchExperiment = TpchExperiment {
    name: "tpch-buffer",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, §4.2, Figure 14",
    axis: TpchAxis::BufferPct(&[10.0, 20.0, 30.0, 40.0, 60.0, 80.0, 100.0]),
    finding: "The system is I/O bound for buffer pools smaller than 60% of data volume. With \
              larger buffer pools, CPU work is the bottleneck [...] PBM achieves performance \
              similar to CScans for all buffer pool sizes.",
};

pub const BANDWIDTH: TpchExperiment = TpchExperiment {
    name: "tpch-bandwidth",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, §4.2, Figure 15",
    axis: TpchAxis::BandwidthMbS(&[200.0, 400.0, 600.0, 900.0, 1200.0, 2000.0]),
    finding: "lowering the I/O bandwidth in TPC-H experiments results in higher execution \
              time, whereas the volume of I/O remains constant [...] The difference between \
              all buffer management policies is eliminated when the I/O subsystem delivers \
              1200MB/s or more.",
};

pub const STREAMS: TpchExperiment = TpchExperiment {
    name: "tpch-streams",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, §4.2, Figure 16",
    axis: TpchAxis::Streams(&[1, 2, 4, 8, 16]),
    finding: "the advantage of PBM and CScans [is] increasing for workloads with more \
              concurrent streams.",
};

/// Every TPC-H throughput preset.
pub const ALL: [TpchExperiment; 4] = [THROUGHPUT, BUFFER, BANDWIDTH, STREAMS];

/// The preset called `name`.
pub fn by_name(name: &str) -> Option<&'static TpchExperiment> {
    ALL.iter().find(|e| e.name == name)
}

/// The device bandwidth, bytes/s, that gives our run the paper's balance: at the
/// default point the paper is I/O bound at 600 MB/s and CPU bound from 1200 MB/s, so
/// LRU's reads (`lru_bytes`, unthrottled) would take as long as the CPU-bound run
/// (`cpu_bound_s`: the default streams' average time with every touched piece
/// buffered) at `PAPER_CPU_BOUND_MB_S`, and the default bandwidth is that rate ×
/// 600 / 1200. `None` when either input is not a positive finite number.
pub fn calibrated_bandwidth(lru_bytes: u64, cpu_bound_s: f64) -> Option<f64> {
    let cpu_bound_rate = lru_bytes as f64 / cpu_bound_s;
    let rate = cpu_bound_rate * PAPER_BANDWIDTH_MB_S / PAPER_CPU_BOUND_MB_S;
    (lru_bytes > 0 && rate.is_finite() && rate > 0.0).then_some(rate)
}

/// The buffer, bytes, that is `pct` % of `touched_bytes`, at least one byte.
pub fn buffer_bytes(touched_bytes: u64, pct: f64) -> u64 {
    ((touched_bytes as f64 * pct / 100.0).round() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_found_by_name_and_sweep_what_their_figure_does() {
        assert_eq!(by_name("tpch-buffer").map(|e| e.axis), Some(BUFFER.axis));
        assert!(by_name("tpch-nothing").is_none());
        assert!(THROUGHPUT.axis.points().is_empty());
        // The default point lies on every axis, so each figure passes through it.
        assert!(BUFFER.axis.points().contains(&DEFAULT_BUFFER_PCT));
        assert!(BANDWIDTH.axis.points().contains(&PAPER_BANDWIDTH_MB_S));
        assert!(STREAMS.axis.points().contains(&(DEFAULT_STREAMS as f64)));
        assert!(POLICIES.contains(&OPT_TRACE_POLICY));
    }

    #[test]
    fn the_calibration_halves_the_rate_at_which_lru_reads_keep_up_with_the_cpu() {
        // LRU reads 1000 MB; CPU-bound streams take 10 s: LRU keeps up at 100 MB/s,
        // so the paper's 600-of-1200 balance is 50 MB/s.
        let rate = calibrated_bandwidth(1_000_000_000, 10.0).unwrap();
        assert!((rate - 50_000_000.0).abs() < 1e-3, "{rate}");
        assert_eq!(calibrated_bandwidth(0, 10.0), None);
        assert_eq!(calibrated_bandwidth(1, 0.0), None);
        assert_eq!(calibrated_bandwidth(1, f64::NAN), None);
        assert_eq!(buffer_bytes(1000, 30.0), 300);
        assert_eq!(buffer_bytes(1, 10.0), 1);
    }
}
