//! The 2012 paper's Figure 17, "sharing potential": at moments spread evenly over a
//! run, the volume of data still wanted by exactly 1, 2, 3 and ≥ 4 active scans. A
//! large volume wanted by two or more scans is what a buffer manager can share; the
//! paper finds much of it in its microbenchmark and little in TPC-H.
//!
//! The rule, defined once for the simulator and the benchmark:
//!
//! * sample `i` of `n` over a run of `total` seconds is at `(i + ½) × total / n`
//!   (the middle of each of `n` equal intervals);
//! * a scan is active at `t` when `start ≤ t < end`;
//! * an active scan wants each of its pieces until it starts processing it: while
//!   `t < until` (a piece it never starts is wanted for its whole active interval);
//! * a piece wanted by `w ≥ 1` active scans belongs to class `min(w, 4)`, and counts
//!   there once, with its whole volume.
//!
//! Each side turns its own record of a run into [`ScanWants`] (the simulator from its
//! timeline, the benchmark from the engine's consumptions) and calls
//! [`sample_sharing`].

use serde::Serialize;

/// Classes of Figure 17: wanted by exactly 1, 2, 3 and ≥ 4 active scans.
pub const SHARING_CLASSES: usize = 4;
/// Samples over a run: enough for the figure's curves, few enough for a report.
pub const SHARING_SAMPLES: usize = 200;

/// What a report keeps of one moment of Figure 17: the pieces (chunks) wanted by
/// exactly 1, 2, 3 and ≥ 4 active scans at `at_s` (seconds since the run started).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SharingSample {
    pub at_s: f64,
    pub chunks: [u32; SHARING_CLASSES],
}

/// One moment of Figure 17 with its volumes: the report's [`SharingSample`] and the
/// bytes of the pieces in each class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassifiedSample {
    pub sample: SharingSample,
    /// Bytes wanted by exactly 1, 2, 3 and ≥ 4 active scans; a class's sum saturates
    /// at `u64::MAX` rather than overflow on odd input.
    pub bytes: [u64; SHARING_CLASSES],
}

/// A piece one scan wants, and until when.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WantedPiece {
    /// Index into the `piece_bytes` given to [`sample_sharing`].
    pub piece: usize,
    /// When the scan starts processing the piece (it no longer wants it from then on);
    /// `f64::INFINITY` when it never does.
    pub until_s: f64,
}

/// One scan of a run: when it is active, and the pieces it wants (each listed once).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanWants {
    pub start_s: f64,
    pub end_s: f64,
    pub pieces: Vec<WantedPiece>,
}

/// Figure 17 over one run of `total_s` seconds, sampled `samples` times: at each
/// moment, how many pieces and bytes are wanted by exactly 1, 2, 3 and ≥ 4 active
/// `scans`. `piece_bytes[p]` is piece `p`'s volume; a piece with no entry there is
/// not counted (it is no piece of the table).
pub fn sample_sharing(
    scans: &[ScanWants],
    piece_bytes: &[u64],
    total_s: f64,
    samples: usize,
) -> Vec<ClassifiedSample> {
    // One counter per piece, reused for every sample: sized by the caller's pieces.
    let mut wanted = vec![0u32; piece_bytes.len()];
    (0..samples)
        .map(|i| {
            let at_s = sample_time(i, samples, total_s);
            count_wanted(scans, at_s, &mut wanted);
            classify(&wanted, piece_bytes, at_s)
        })
        .collect()
}

/// The time-averaged bytes wanted by exactly 1, 2, 3 and ≥ 4 active scans over
/// `samples` (equal intervals, so a plain mean); zeros when there are none.
pub fn mean_bytes(samples: &[ClassifiedSample]) -> [f64; SHARING_CLASSES] {
    let mut sum = [0.0; SHARING_CLASSES];
    for s in samples {
        for (sum, &b) in sum.iter_mut().zip(&s.bytes) {
            *sum += b as f64;
        }
    }
    sum.map(|b| b / samples.len().max(1) as f64)
}

/// Of the volume in `mean` (by class, as [`mean_bytes`] gives it), the share wanted by
/// two or more scans; 0 when nothing is wanted.
pub fn shared_fraction(mean: &[f64; SHARING_CLASSES]) -> f64 {
    let all: f64 = mean.iter().sum();
    if all > 0.0 {
        mean[1..].iter().sum::<f64>() / all
    } else {
        0.0
    }
}

/// Sample `i` of `samples` over `total_s`: the middle of the `i`-th equal interval, so
/// no sample falls on the run's start or end, when scans begin or have just finished.
fn sample_time(i: usize, samples: usize, total_s: f64) -> f64 {
    (i as f64 + 0.5) * total_s / samples as f64
}

/// Sets `wanted[p]` to the number of scans active at `at_s` that still want piece `p`.
fn count_wanted(scans: &[ScanWants], at_s: f64, wanted: &mut [u32]) {
    wanted.iter_mut().for_each(|w| *w = 0);
    for scan in scans.iter().filter(|s| s.start_s <= at_s && at_s < s.end_s) {
        for piece in scan.pieces.iter().filter(|p| at_s < p.until_s) {
            if let Some(w) = wanted.get_mut(piece.piece) {
                *w = w.saturating_add(1);
            }
        }
    }
}

/// Adds each wanted piece, with its bytes, to its class.
fn classify(wanted: &[u32], piece_bytes: &[u64], at_s: f64) -> ClassifiedSample {
    let mut out = ClassifiedSample {
        sample: SharingSample {
            at_s,
            chunks: [0; SHARING_CLASSES],
        },
        bytes: [0; SHARING_CLASSES],
    };
    for (&w, &bytes) in wanted.iter().zip(piece_bytes) {
        let Some(class) = class_of(w) else { continue };
        out.sample.chunks[class] = out.sample.chunks[class].saturating_add(1);
        out.bytes[class] = out.bytes[class].saturating_add(bytes);
    }
    out
}

/// Class index (0 for "exactly 1" … 3 for "≥ 4") of a piece wanted by `wanted` active
/// scans; `None` when nobody wants it.
fn class_of(wanted: u32) -> Option<usize> {
    let wanted = usize::try_from(wanted).ok()?;
    (wanted > 0).then(|| wanted.min(SHARING_CLASSES) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_fraction_is_the_volume_wanted_by_two_or_more() {
        assert_eq!(shared_fraction(&[0.0; SHARING_CLASSES]), 0.0);
        assert_eq!(shared_fraction(&[1.0, 1.0, 0.0, 2.0]), 0.75);
    }

    const KIB: u64 = 1024;

    fn scan(start_s: f64, end_s: f64, pieces: &[(usize, f64)]) -> ScanWants {
        ScanWants {
            start_s,
            end_s,
            pieces: pieces
                .iter()
                .map(|&(piece, until_s)| WantedPiece { piece, until_s })
                .collect(),
        }
    }

    /// Three scans over pieces 0-4 of 1, 2, 4, 8 and 16 KiB, in a 4 s run:
    /// A active 0-4 s wants p0 until 1.2 s, p1 and p2 never started;
    /// B active 0-4 s wants p1 until 2.7 s, p2 and p3 never started;
    /// C active 1-3 s wants p2 and p3 never started, p4 until 2 s.
    fn three_scans() -> (Vec<ScanWants>, Vec<u64>) {
        let never = f64::INFINITY;
        let scans = vec![
            scan(0.0, 4.0, &[(0, 1.2), (1, never), (2, never)]),
            scan(0.0, 4.0, &[(1, 2.7), (2, never), (3, never)]),
            scan(1.0, 3.0, &[(2, never), (3, never), (4, 2.0)]),
        ];
        (scans, vec![KIB, 2 * KIB, 4 * KIB, 8 * KIB, 16 * KIB])
    }

    #[test]
    fn three_scans_are_classified_as_worked_out_by_hand() {
        let (scans, bytes) = three_scans();
        let got = sample_sharing(&scans, &bytes, 4.0, 4);
        // Samples at 0.5, 1.5, 2.5, 3.5 s (who wants which piece → class bytes):
        // 0.5: p0 A, p1 A B, p2 A B, p3 B (C not yet active)
        //      → 1: p0 + p3 = 9 KiB; 2: p1 + p2 = 6 KiB
        // 1.5: p0 gone (A took it at 1.2); p1 A B, p2 A B C, p3 B C, p4 C
        //      → 1: p4 = 16 KiB; 2: p1 + p3 = 10 KiB; 3: p2 = 4 KiB
        // 2.5: p4 gone (C took it at 2); p1 A B, p2 A B C, p3 B C
        //      → 2: p1 + p3 = 10 KiB; 3: p2 = 4 KiB
        // 3.5: C ended at 3, B took p1 at 2.7; p1 A, p2 A B, p3 B
        //      → 1: p1 + p3 = 10 KiB; 2: p2 = 4 KiB
        let expected = [
            (0.5, [2, 2, 0, 0], [9, 6, 0, 0]),
            (1.5, [1, 2, 1, 0], [16, 10, 4, 0]),
            (2.5, [0, 2, 1, 0], [0, 10, 4, 0]),
            (3.5, [2, 1, 0, 0], [10, 4, 0, 0]),
        ];
        let want: Vec<ClassifiedSample> = expected
            .iter()
            .map(|&(at_s, chunks, kib)| ClassifiedSample {
                sample: SharingSample { at_s, chunks },
                bytes: kib.map(|k| k * KIB),
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_classes_partition_the_wanted_bytes() {
        let (mut scans, bytes) = three_scans();
        // A fourth and fifth scan over everything, so the ≥ 4 class fills too.
        let all: Vec<(usize, f64)> = (0..bytes.len()).map(|p| (p, 2.2)).collect();
        scans.push(scan(0.0, 4.0, &all));
        scans.push(scan(0.5, 4.0, &all));
        for sampled in sample_sharing(&scans, &bytes, 4.0, 40) {
            let at_s = sampled.sample.at_s;
            // The bytes of every piece at least one active scan wants, summed directly.
            let wanted_bytes: u64 = bytes
                .iter()
                .enumerate()
                .filter(|&(p, _)| {
                    scans.iter().any(|s| {
                        s.start_s <= at_s
                            && at_s < s.end_s
                            && s.pieces.iter().any(|w| w.piece == p && at_s < w.until_s)
                    })
                })
                .map(|(_, &b)| b)
                .sum();
            assert_eq!(sampled.bytes.iter().sum::<u64>(), wanted_bytes, "{at_s}");
        }
    }

    #[test]
    fn pieces_outside_the_table_and_empty_runs_count_nothing() {
        let stray = vec![scan(0.0, 1.0, &[(5, f64::INFINITY), (usize::MAX, 2.0)])];
        let got = sample_sharing(&stray, &[KIB; 5], 1.0, 3);
        assert_eq!(got.len(), 3);
        assert!(got
            .iter()
            .all(|s| s.sample.chunks == [0; 4] && s.bytes == [0; 4]));
        assert!(sample_sharing(&stray, &[KIB; 5], 1.0, 0).is_empty());
    }

    #[test]
    fn bytes_saturate_instead_of_overflowing() {
        let both = scan(0.0, 1.0, &[(0, f64::INFINITY), (1, f64::INFINITY)]);
        let got = sample_sharing(&[both], &[u64::MAX, 1], 1.0, 1);
        assert_eq!(got[0].bytes, [u64::MAX, 0, 0, 0]);
        assert_eq!(got[0].sample.chunks, [2, 0, 0, 0]);
    }

    #[test]
    fn classes_cap_at_four_or_more() {
        assert_eq!(class_of(0), None);
        assert_eq!(class_of(1), Some(0));
        assert_eq!(class_of(3), Some(2));
        assert_eq!(class_of(4), Some(3));
        assert_eq!(class_of(u32::MAX), Some(3));
    }
}
