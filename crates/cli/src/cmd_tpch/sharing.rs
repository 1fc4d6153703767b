//! The 2012 paper's Figure 18 ("sharing potential in TPC-H throughput") from a run's
//! piece-reference trace, by the rule of `coopscan_paper::sharing`: at moments spread
//! over the run, the volume still wanted by exactly 1, 2, 3 and ≥ 4 active scans.
//!
//! A trace names each scan's pieces and when it consumed them; the runtime adds when
//! each scan registered (`Runtime::traced_registrations`). A scan is active from its
//! registration (its first reference where none is known) to its last reference, and
//! wants each of its pieces until it consumes it.

use std::collections::{HashMap, HashSet};

use coopscan_bench::tpch_throughput::{SharingMoment, TpchSharing};
use coopscan_buffer::{Nanos, PieceId, Reference, ScanId};
use coopscan_paper::sharing::{
    mean_bytes, sample_sharing, shared_fraction, ScanWants, WantedPiece, SHARING_SAMPLES,
};

const NANOS_PER_S: f64 = 1e9;
const BYTES_PER_MIB: f64 = 1_048_576.0;

/// Figure 18 of the run `policy` whose references are `trace`, its scans registered at
/// `registered`.
pub fn sharing_of_trace(
    trace: &[Reference],
    registered: &HashMap<ScanId, Nanos>,
    policy: &str,
) -> TpchSharing {
    let mut pieces: HashMap<PieceId, usize> = HashMap::new();
    let mut piece_bytes: Vec<u64> = Vec::new();
    let mut scans: HashMap<ScanId, ScanWants> = HashMap::new();
    // (scan, piece) pairs already listed: a piece counts once per scan.
    let mut listed: HashSet<(ScanId, usize)> = HashSet::new();
    let mut total_s: f64 = 0.0;
    for r in trace {
        let at_s = seconds(r.at);
        total_s = total_s.max(at_s);
        let piece = *pieces.entry(r.piece).or_insert_with(|| {
            piece_bytes.push(r.bytes);
            piece_bytes.len() - 1
        });
        let scan = scans.entry(r.scan).or_insert_with(|| ScanWants {
            start_s: registered.get(&r.scan).map_or(at_s, |t| seconds(*t)),
            end_s: at_s,
            pieces: Vec::new(),
        });
        scan.start_s = scan.start_s.min(at_s);
        scan.end_s = scan.end_s.max(at_s);
        // A piece counts once per scan, until its first consumption.
        if listed.insert((r.scan, piece)) {
            scan.pieces.push(WantedPiece {
                piece,
                until_s: at_s,
            });
        }
    }
    let scans: Vec<ScanWants> = scans.into_values().collect();
    let samples = sample_sharing(&scans, &piece_bytes, total_s, SHARING_SAMPLES);
    let moments: Vec<SharingMoment> = samples
        .iter()
        .map(|s| SharingMoment {
            at_s: s.sample.at_s,
            mib: s.bytes.map(|b| b as f64 / BYTES_PER_MIB),
        })
        .collect();
    let mean_mib = mean_bytes(&samples).map(|b| b / BYTES_PER_MIB);
    TpchSharing {
        policy: policy.to_string(),
        mean_mib,
        shared_fraction: shared_fraction(&mean_mib),
        moments,
    }
}

fn seconds(t: Nanos) -> f64 {
    t.0 as f64 / NANOS_PER_S
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopscan_buffer::{ChunkId, TableId};
    use coopscan_paper::sharing::SHARING_CLASSES;

    fn reference(at_s: f64, scan: u64, chunk: u32) -> Reference {
        Reference {
            at: Nanos((at_s * NANOS_PER_S) as u64),
            scan: ScanId(scan),
            piece: PieceId::whole(TableId(0), ChunkId(chunk)),
            bytes: 1 << 20,
        }
    }

    #[test]
    fn two_scans_over_the_same_pieces_share_what_neither_has_consumed() {
        // Scan 1 consumes chunks 0..4 at 0, 1, 2, 3 s; scan 2 the same chunks at
        // 0.5, 1.5, 2.5, 3.5 s: while both are active, the chunks neither has consumed
        // are wanted by two scans, and the one scan 2 lags behind on by one.
        let mut trace = Vec::new();
        for c in 0..4u32 {
            trace.push(reference(f64::from(c), 1, c));
            trace.push(reference(f64::from(c) + 0.5, 2, c));
        }
        let s = sharing_of_trace(&trace, &HashMap::new(), "pbm");
        assert!(s.shared_fraction > 0.5, "{s:?}");
        assert_eq!(s.mean_mib[2], 0.0);
        assert_eq!(s.mean_mib[3], 0.0);
        // At 1.25 s scan 1 wants chunks 2, 3 and scan 2 chunks 1, 2, 3: 2 MiB wanted
        // by two scans and 1 MiB by one.
        let m = s
            .moments
            .iter()
            .find(|m| m.at_s > 1.0 && m.at_s < 1.5)
            .expect("a sample between 1 and 1.5 s");
        assert_eq!(m.mib[..2], [1.0, 2.0]);
    }

    #[test]
    fn scans_that_never_overlap_share_nothing_and_an_empty_trace_wants_nothing() {
        let trace = [
            reference(0.0, 1, 0),
            reference(1.0, 1, 1),
            reference(2.0, 2, 0),
            reference(3.0, 2, 1),
        ];
        let s = sharing_of_trace(&trace, &HashMap::new(), "pbm");
        assert_eq!(s.shared_fraction, 0.0);
        assert!(s.mean_mib[0] > 0.0);
        // Registered at 0 s, scan 2 wants both chunks while scan 1 reads them.
        let registered = HashMap::from([(ScanId(2), Nanos(0))]);
        let s = sharing_of_trace(&trace, &registered, "pbm");
        assert!(s.shared_fraction > 0.0, "{s:?}");
        let empty = sharing_of_trace(&[], &HashMap::new(), "pbm");
        assert_eq!(empty.shared_fraction, 0.0);
        assert_eq!(empty.mean_mib, [0.0; SHARING_CLASSES]);
    }
}
