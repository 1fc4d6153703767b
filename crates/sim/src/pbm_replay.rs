//! PBM's eviction rule replayed offline on a piece-reference trace, beside OPT and LRU
//! (`opt.rs`). Where OPT knows every future reference and its order, this replay knows
//! only what the online policy (`coopscan_buffer`'s `pbm`, 2012 paper §3) knows at each
//! reference:
//!
//! - Ranges (paper: RegisterScan). A scan is registered at its first reference and
//!   then knows every piece it will still reference, in order: "the pieces this scan
//!   references later" in the trace. It is retired after its last reference. (The
//!   online scan registers somewhat earlier, when admitted; the trace does not say
//!   when, and the first reference is the earliest moment the replay can be sure of.)
//! - Pace (paper: ReportScanPosition, scan.speed). A scan's time per reference is the
//!   time from its first reference to its latest one ÷ the references in between —
//!   the whole observed life, as the online policy averages since registration, so
//!   one stall does not swing it. A scan seen at one instant only (one reference, or
//!   all its columns of one chunk so far) has no pace yet and is given the mean of the
//!   observed scans' paces, as online.
//!
//! Predicted next consumption of a piece (paper: PageNextConsumption) = the minimum,
//! over the registered scans that will still reference it, of that scan's latest
//! reference time + (positions ahead in its own reference list) × its pace. Distances
//! count references, not chunks, so a DSM scan's columns of one chunk are several
//! steps; its pace counts the same steps, so the two agree.
//!
//! Eviction (paper: EvictPage): while the buffer is over its budget, a resident piece
//! no registered scan wants goes first, least recently used first; then the one whose
//! predicted consumption is furthest away. As in OPT's replay, the piece just
//! referenced competes too. The predictions move with every reference, so instead of
//! a key fixed at insertion (`opt.rs`'s loop) the resident pieces are ranked afresh at
//! each eviction: O(resident pieces × scans wanting each) per eviction, no buckets
//! (the paper's buckets approximate exactly this ranking to make it cheap).
//!
//! What the replay leaves out, and the online run has: read-ahead (a load of the run
//! that no scan consumed before it was evicted is no reference of the trace) and the
//! order in which loads were issued. So online loads − replayed loads measures those,
//! and replayed loads − OPT's measures the rule's prediction error.

use crate::opt::{dense, Dense, Replay, NEVER};
use coopscan_buffer::{PieceId, Reference, ScanId};
use std::collections::HashMap;

/// Fixed-point fraction bits of a pace (time per reference), so that sub-nanosecond
/// paces of dense traces still rank.
const PACE_FRACTION_BITS: u32 = 16;

/// Time per reference assumed while no scan has a pace: any constant will do, since it
/// then applies to every scan alike and only the distances rank.
const UNOBSERVED_PACE: u128 = 1 << PACE_FRACTION_BITS;

/// What a replay predicts a registered scan's next consumption of a piece from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Foresight {
    /// Its observed pace: PBM's rule, online knowledge only ([`replay_pbm`]).
    ObservedPace,
    /// The time the scan really references the piece (from the trace): PBM with
    /// perfect paces, or equally OPT blind to the scans not yet started. Between
    /// [`replay_pbm`] and OPT, it splits PBM's prediction error into wrong paces and
    /// unknown future queries.
    ExactTimes,
}

/// PBM's eviction rule under `capacity` bytes, with online knowledge only.
pub fn replay_pbm(trace: &[Reference], capacity: u64) -> Replay {
    replay_pbm_observed(trace, capacity, Foresight::ObservedPace, |_, _| {})
}

/// [`replay_pbm`] under a chosen [`Foresight`], telling `on_evict` every victim: the
/// index of the reference after which it went, and the piece.
pub fn replay_pbm_observed(
    trace: &[Reference],
    capacity: u64,
    foresight: Foresight,
    mut on_evict: impl FnMut(usize, PieceId),
) -> Replay {
    let plan = Plan::new(trace);
    let mut state = State::new(&plan);
    if foresight == Foresight::ExactTimes {
        state.exact_at = Some(times_by_scan(trace, &plan));
    }
    let mut out = Replay::default();
    for (i, r) in trace.iter().enumerate() {
        out.references += 1;
        let id = plan.pieces.ids[i];
        state.reference(&plan, i, r.at.0);
        if state.touch(id, plan.pieces.bytes[id as usize], i) {
            out.loads += 1;
            out.bytes_loaded = out.bytes_loaded.saturating_add(r.bytes);
        }
        while state.used > capacity {
            let Some(victim) = state.victim() else {
                break;
            };
            state.evict(victim, plan.pieces.bytes[victim as usize]);
            on_evict(i, trace[plan.first_ref[victim as usize]].piece);
        }
    }
    out
}

/// What the replay derives from the whole trace before it starts: the ranges each scan
/// registers, and where each reference sits in its scan's list.
struct Plan {
    pieces: Dense,
    /// A reference to each piece (to name it).
    first_ref: Vec<usize>,
    /// Dense scan of each reference.
    scan: Vec<u32>,
    /// Position of each reference in its scan's own reference list.
    pos: Vec<usize>,
    /// The position of the scan's next reference to the same piece, or [`NEVER`].
    next_pos: Vec<usize>,
    /// Per scan: its first and last reference.
    first_of_scan: Vec<usize>,
    last_of_scan: Vec<usize>,
    /// Per scan: (piece, position of its first reference to it): what registering adds.
    ranges: Vec<Vec<(u32, usize)>>,
}

impl Plan {
    fn new(trace: &[Reference]) -> Plan {
        let pieces = dense(trace);
        let mut first_ref = vec![NEVER; pieces.bytes.len()];
        for (i, &id) in pieces.ids.iter().enumerate().rev() {
            first_ref[id as usize] = i;
        }
        let mut scan_ids: HashMap<ScanId, u32> = HashMap::new();
        let scan: Vec<u32> = trace
            .iter()
            .map(|r| {
                let n = scan_ids.len() as u32;
                *scan_ids.entry(r.scan).or_insert(n)
            })
            .collect();
        let scans = scan_ids.len();
        let (mut first_of_scan, mut last_of_scan) = (vec![NEVER; scans], vec![0; scans]);
        let mut count = vec![0usize; scans];
        let mut pos = Vec::with_capacity(trace.len());
        for (i, &s) in scan.iter().enumerate() {
            let s = s as usize;
            if first_of_scan[s] == NEVER {
                first_of_scan[s] = i;
            }
            last_of_scan[s] = i;
            pos.push(count[s]);
            count[s] += 1;
        }
        // Backwards: the next position of (scan, piece), and its first one.
        let mut next_pos = vec![NEVER; trace.len()];
        let mut later: HashMap<(u32, u32), usize> = HashMap::new();
        for i in (0..trace.len()).rev() {
            let key = (scan[i], pieces.ids[i]);
            next_pos[i] = later.insert(key, pos[i]).unwrap_or(NEVER);
        }
        let mut ranges = vec![Vec::new(); scans];
        for ((s, piece), first) in later {
            ranges[s as usize].push((piece, first));
        }
        // Registration order must not depend on the hash map's.
        for range in &mut ranges {
            range.sort_unstable_by_key(|&(_, p)| p);
        }
        Plan {
            pieces,
            first_ref,
            scan,
            pos,
            next_pos,
            first_of_scan,
            last_of_scan,
            ranges,
        }
    }
}

/// A scan as the replay has observed it so far.
#[derive(Clone, Copy, Default)]
struct ScanSeen {
    first_at: u64,
    latest_at: u64,
    /// Its references so far (its current position + 1).
    seen: usize,
    /// Time per reference, fixed point; `None` until observed.
    pace: Option<u128>,
}

struct State {
    /// Under [`Foresight::ExactTimes`]: per scan, the time of each of its references.
    exact_at: Option<Vec<Vec<u64>>>,
    scans: Vec<ScanSeen>,
    /// Sum and count of the registered scans' observed paces (for the unobserved).
    pace_sum: u128,
    paced: u128,
    /// Per piece: (scan, position of its next reference) for each registered scan
    /// that will still reference it (paper: page.consuming_scans).
    wanted_by: Vec<Vec<(u32, usize)>>,
    /// Resident pieces, and each piece's index among them.
    resident: Vec<u32>,
    slot: Vec<Option<usize>>,
    last_use: Vec<usize>,
    used: u64,
}

impl State {
    fn new(plan: &Plan) -> State {
        let pieces = plan.pieces.bytes.len();
        State {
            exact_at: None,
            scans: vec![ScanSeen::default(); plan.first_of_scan.len()],
            pace_sum: 0,
            paced: 0,
            wanted_by: vec![Vec::new(); pieces],
            resident: Vec::new(),
            slot: vec![None; pieces],
            last_use: vec![0; pieces],
            used: 0,
        }
    }

    /// Reference `i` at `at`: its scan registers (first reference), moves one step and
    /// updates its pace, and retires (last reference).
    fn reference(&mut self, plan: &Plan, i: usize, at: u64) {
        let s = plan.scan[i];
        if plan.first_of_scan[s as usize] == i {
            for &(piece, first) in &plan.ranges[s as usize] {
                self.wanted_by[piece as usize].push((s, first));
            }
            self.scans[s as usize].first_at = at;
        }
        self.set_pace(s, None);
        let scan = &mut self.scans[s as usize];
        scan.latest_at = scan.latest_at.max(at);
        scan.seen += 1;
        let pace = observed_pace(scan);
        self.set_pace(s, pace);
        let wants = &mut self.wanted_by[plan.pieces.ids[i] as usize];
        if let Some(k) = wants.iter().position(|&(w, p)| w == s && p == plan.pos[i]) {
            match plan.next_pos[i] {
                NEVER => {
                    wants.swap_remove(k);
                }
                next => wants[k].1 = next,
            }
        }
        if plan.last_of_scan[s as usize] == i {
            self.set_pace(s, None);
        }
    }

    /// Replaces scan `s`'s pace in the running mean.
    fn set_pace(&mut self, s: u32, pace: Option<u128>) {
        let scan = &mut self.scans[s as usize];
        if let Some(old) = scan.pace.take() {
            self.pace_sum -= old;
            self.paced -= 1;
        }
        if let Some(new) = pace {
            self.pace_sum = self.pace_sum.saturating_add(new);
            self.paced += 1;
        }
        scan.pace = pace;
    }

    /// Makes `id` (of `bytes`) resident and used at `i`; true when that was a load.
    fn touch(&mut self, id: u32, bytes: u64, i: usize) -> bool {
        self.last_use[id as usize] = i;
        if self.slot[id as usize].is_some() {
            return false;
        }
        self.slot[id as usize] = Some(self.resident.len());
        self.resident.push(id);
        self.used = self.used.saturating_add(bytes);
        true
    }

    /// The resident piece to evict next: the largest [`State::rank`].
    fn victim(&self) -> Option<u32> {
        let mean = self.mean_pace();
        self.resident
            .iter()
            .copied()
            .max_by_key(|&id| self.rank(id, mean))
    }

    /// Eviction rank, largest first: unwanted before wanted; among the unwanted the
    /// least recently used, among the wanted the furthest predicted consumption (ties:
    /// the least recently used).
    fn rank(&self, id: u32, mean_pace: u128) -> (bool, u128, usize) {
        let staleness = NEVER - self.last_use[id as usize];
        let due = self.wanted_by[id as usize]
            .iter()
            .map(|&(s, next)| self.due(s, next, mean_pace))
            .min();
        match due {
            None => (true, 0, staleness),
            Some(due) => (false, due, staleness),
        }
    }

    /// When scan `s` is predicted to reach its position `next` (fixed point).
    fn due(&self, s: u32, next: usize, mean_pace: u128) -> u128 {
        if let Some(at) = self.exact_at.as_ref().and_then(|a| a[s as usize].get(next)) {
            return u128::from(*at) << PACE_FRACTION_BITS;
        }
        let scan = &self.scans[s as usize];
        // `next` lies after the scan's current position `seen - 1`.
        let ahead = next.saturating_add(1).saturating_sub(scan.seen) as u128;
        let pace = scan.pace.unwrap_or(mean_pace);
        (u128::from(scan.latest_at) << PACE_FRACTION_BITS)
            .saturating_add(ahead.saturating_mul(pace))
    }

    /// The pace given to a scan not yet observed.
    fn mean_pace(&self) -> u128 {
        match self.paced {
            0 => UNOBSERVED_PACE,
            n => self.pace_sum / n,
        }
    }

    fn evict(&mut self, victim: u32, bytes: u64) {
        if let Some(k) = self.slot[victim as usize].take() {
            self.resident.swap_remove(k);
            if let Some(&moved) = self.resident.get(k) {
                self.slot[moved as usize] = Some(k);
            }
            self.used -= bytes;
        }
    }
}

/// Per scan, the times of its references in order (what [`Foresight::ExactTimes`]
/// predicts with).
fn times_by_scan(trace: &[Reference], plan: &Plan) -> Vec<Vec<u64>> {
    let mut at = vec![Vec::new(); plan.first_of_scan.len()];
    for (r, &s) in trace.iter().zip(&plan.scan) {
        at[s as usize].push(r.at.0);
    }
    at
}

/// A scan's time per reference so far (fixed point), once it has been seen at two
/// different instants.
fn observed_pace(scan: &ScanSeen) -> Option<u128> {
    let elapsed = scan.latest_at.saturating_sub(scan.first_at);
    let steps = scan.seen.checked_sub(1)?;
    if elapsed == 0 || steps == 0 {
        return None;
    }
    Some((u128::from(elapsed) << PACE_FRACTION_BITS) / steps as u128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opt::{distinct_bytes, replay_lru, replay_opt};
    use coopscan_buffer::{ChunkId, Nanos, TableId};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const PIECE: u64 = 10;

    /// A reference of `scan` to whole chunk `chunk` at `at` ns.
    fn r(at: u64, scan: u64, chunk: u32) -> Reference {
        Reference {
            at: Nanos(at),
            scan: ScanId(scan),
            piece: PieceId::whole(TableId(0), ChunkId(chunk)),
            bytes: PIECE,
        }
    }

    /// The victims of a PBM replay as (reference index, chunk).
    fn victims(trace: &[Reference], capacity: u64) -> (Replay, Vec<(usize, u32)>) {
        victims_with(trace, capacity, Foresight::ObservedPace)
    }

    fn victims_with(
        trace: &[Reference],
        capacity: u64,
        foresight: Foresight,
    ) -> (Replay, Vec<(usize, u32)>) {
        let mut out = Vec::new();
        let replay =
            replay_pbm_observed(trace, capacity, foresight, |i, p| out.push((i, p.chunk.0)));
        (replay, out)
    }

    /// Scans over ascending random subsets of fewer than `max_chunks` chunks, each
    /// starting at a random time and moving at its own random pace (with jitter),
    /// merged by time: the shape of a run's trace. Pieces are equal-sized unless
    /// `sized`, then 1..=40 bytes.
    fn scan_trace(rng: &mut ChaCha8Rng, max_chunks: u32, sized: bool) -> Vec<Reference> {
        let chunks = rng.random_range(1..max_chunks);
        let sizes: Vec<u64> = (0..chunks)
            .map(|_| {
                if sized {
                    rng.random_range(1..=40)
                } else {
                    PIECE
                }
            })
            .collect();
        let mut refs = Vec::new();
        for scan in 0..rng.random_range(1..=5u64) {
            let (mut at, pace) = (rng.random_range(0..200u64), rng.random_range(1..60u64));
            let mine: Vec<u32> = (0..chunks).filter(|_| rng.random_bool(0.6)).collect();
            for chunk in mine {
                at += pace + rng.random_range(0..pace);
                let mut reference = r(at, scan, chunk);
                reference.bytes = sizes[chunk as usize];
                refs.push(reference);
            }
        }
        refs.sort_by_key(|x| (x.at, x.scan));
        refs
    }

    /// The same rule restated from scratch at every eviction, straight from the
    /// trace prefix (no incremental state): the independent reference for the
    /// replay's bookkeeping. Returns the loads and the victims.
    fn naive(trace: &[Reference], capacity: u64, foresight: Foresight) -> (u64, Vec<(usize, u32)>) {
        let refs_of = |s: ScanId| -> Vec<usize> {
            (0..trace.len()).filter(|&j| trace[j].scan == s).collect()
        };
        // Registered at i: first reference ≤ i < last reference.
        let registered = |s: ScanId, i: usize| {
            let mine = refs_of(s);
            mine[0] <= i && i < *mine.last().expect("a scan of the trace")
        };
        let pace = |s: ScanId, i: usize| -> Option<u128> {
            let seen: Vec<usize> = refs_of(s).into_iter().filter(|&j| j <= i).collect();
            let first = trace[seen[0]].at.0;
            let latest = seen.iter().map(|&j| trace[j].at.0).max()?;
            let steps = seen.len() as u128 - 1;
            (latest > first && steps > 0)
                .then(|| (u128::from(latest - first) << PACE_FRACTION_BITS) / steps)
        };
        let mut scans: Vec<ScanId> = trace.iter().map(|x| x.scan).collect();
        scans.sort();
        scans.dedup();
        let (mut resident, mut loads, mut out) = (Vec::<(PieceId, usize)>::new(), 0, Vec::new());
        for (i, x) in trace.iter().enumerate() {
            match resident.iter_mut().find(|(p, _)| *p == x.piece) {
                Some(entry) => entry.1 = i,
                None => {
                    loads += 1;
                    resident.push((x.piece, i));
                }
            }
            let size = |p: PieceId| trace.iter().find(|y| y.piece == p).map_or(0, |y| y.bytes);
            while resident.iter().map(|&(p, _)| size(p)).sum::<u64>() > capacity {
                let live: Vec<ScanId> = scans
                    .iter()
                    .copied()
                    .filter(|&s| registered(s, i))
                    .collect();
                let paces: Vec<u128> = live.iter().filter_map(|&s| pace(s, i)).collect();
                let mean = match paces.len() {
                    0 => UNOBSERVED_PACE,
                    n => paces.iter().sum::<u128>() / n as u128,
                };
                let rank = |&(p, last): &(PieceId, usize)| {
                    let due = live
                        .iter()
                        .filter_map(|&s| {
                            let later: Vec<usize> =
                                refs_of(s).into_iter().filter(|&j| j > i).collect();
                            let k = later.iter().position(|&j| trace[j].piece == p)?;
                            if foresight == Foresight::ExactTimes {
                                return Some(
                                    u128::from(trace[later[k]].at.0) << PACE_FRACTION_BITS,
                                );
                            }
                            let latest = refs_of(s)
                                .into_iter()
                                .filter(|&j| j <= i)
                                .map(|j| trace[j].at.0)
                                .max()?;
                            let step = pace(s, i).unwrap_or(mean);
                            Some(
                                (u128::from(latest) << PACE_FRACTION_BITS) + (k as u128 + 1) * step,
                            )
                        })
                        .min();
                    (due.is_none(), due.unwrap_or(0), NEVER - last)
                };
                let k = (0..resident.len())
                    .max_by_key(|&k| rank(&resident[k]))
                    .expect("over budget, so something is resident");
                out.push((i, resident.remove(k).0.chunk.0));
            }
        }
        (loads, out)
    }

    #[test]
    fn matches_the_rule_restated_from_scratch() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        for case in 0..200 {
            let sized = case % 2 == 1;
            let foresight = [Foresight::ObservedPace, Foresight::ExactTimes][case / 2 % 2];
            let trace = scan_trace(&mut rng, 14, sized);
            let capacity = rng.random_range(0..=distinct_bytes(&trace) + 5);
            let (replay, got) = victims_with(&trace, capacity, foresight);
            let (loads, want) = naive(&trace, capacity, foresight);
            assert_eq!(
                (replay.loads, &got),
                (loads, &want),
                "case {case}: {trace:?}"
            );
        }
    }

    #[test]
    fn never_beats_opt_on_equal_pieces() {
        // Belady's OPT is optimal for equal-size pieces, whatever the trace's shape:
        // the scan-shaped traces of a run and arbitrary ones.
        let mut rng = ChaCha8Rng::seed_from_u64(2012);
        for case in 0..400 {
            let trace = if case % 2 == 0 {
                scan_trace(&mut rng, 30, false)
            } else {
                (0..rng.random_range(1..60))
                    .map(|t| r(t, rng.random_range(0..4), rng.random_range(0..8)))
                    .collect()
            };
            let capacity = rng.random_range(0..=trace.len() as u64) * PIECE;
            let opt = replay_opt(&trace, capacity);
            for foresight in [Foresight::ObservedPace, Foresight::ExactTimes] {
                let (pbm, _) = victims_with(&trace, capacity, foresight);
                assert!(pbm.loads >= opt.loads, "case {case}: {pbm:?} < {opt:?}");
                assert!(pbm.loads <= pbm.references);
            }
        }
    }

    #[test]
    fn keeps_what_the_fast_scan_needs_soon_over_what_the_slow_scan_needs_later() {
        // F (fast: 1 ns per reference) reads chunks 0 1 4 5, S (slow: 100 ns) reads
        // 2 3 4 6, and L reads 5 6 (loading a chunk each of them wants), 2 frames.
        let trace = [
            r(0, 1, 2),   // #0 S loads 2
            r(100, 1, 3), // #1 S loads 3: S's pace is 100 ns
            r(198, 0, 0), // #2 F loads 0, evicts 2 (no one wants 2, 3, 0; 2 is oldest)
            r(199, 0, 1), // #3 F loads 1, evicts 3 (unwanted, oldest): F's pace is 1 ns
            r(199, 2, 5), // #4 L loads 5 (F wants it), evicts 0 (unwanted)
            r(199, 2, 6), // #5 L loads 6 (S wants it), evicts 1 (unwanted)
            // #6 S loads 4. From F's latest reference (199 ns), F wants 4 one step
            // ahead (due 199 + 1 × 1 = 200) and 5 two steps ahead (due 199 + 2 × 1 =
            // 201); from S's (this one, 200 ns), S wants 6 one step ahead (due 200 + 1
            // × 100 = 300). PBM evicts 6. By distance alone 5 would go (the only piece
            // two steps ahead), and so it would with one pace of 1 ns for both scans
            // (5 due 201, 6 due 201, 5 the least recently used).
            r(200, 1, 4),
            r(201, 0, 4), // #7 hit
            r(202, 0, 5), // #8 hit: F kept 5
            r(300, 1, 6), // #9 S reloads 6; all three unwanted, evicts 4 (oldest)
        ];
        let (replay, got) = victims(&trace, 2 * PIECE);
        assert_eq!(got, [(2, 2), (3, 3), (4, 0), (5, 1), (6, 6), (9, 4)]);
        // 7 distinct chunks + the reload of 6; evicting 5 instead would cost a reload
        // of 5 just the same, so OPT does no better here.
        assert_eq!(replay.loads, 8);
        assert_eq!(replay_opt(&trace, 2 * PIECE).loads, 8);
    }

    #[test]
    fn a_piece_no_scan_wants_goes_before_a_wanted_one() {
        // A loads 1, which B will read next; C then re-reads 0, so 0 is the more
        // recently used, but nobody wants it again. D's load of 2 must evict 0 (LRU
        // would evict 1, and B would read it again).
        let trace = [
            r(0, 0, 0), // B: 0 then 1
            r(1, 1, 1), // A loads 1
            r(2, 2, 0), // C re-reads 0
            r(3, 3, 2), // D loads 2: evicts 0, not 1
            r(4, 0, 1), // B's 1 is a hit
        ];
        let (replay, got) = victims(&trace, 2 * PIECE);
        assert_eq!(got, [(3, 0)]);
        assert_eq!(replay.loads, 3);
        assert_eq!(replay_lru(&trace, 2 * PIECE).loads, 4);
    }

    #[test]
    fn room_for_everything_loads_each_piece_once() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for case in 0..100 {
            let trace = scan_trace(&mut rng, 30, true);
            let distinct = distinct_bytes(&trace);
            let pieces = dense(&trace).bytes.len() as u64;
            let capacity = distinct + rng.random_range(0..3) * PIECE;
            let (replay, got) = victims(&trace, capacity);
            assert_eq!(
                (replay.loads, replay.bytes_loaded),
                (pieces, distinct),
                "{case}"
            );
            assert!(got.is_empty());
        }
    }

    #[test]
    fn no_room_loads_every_reference() {
        let trace = [r(0, 0, 0), r(1, 0, 0), r(2, 1, 0)];
        assert_eq!(replay_pbm(&trace, PIECE - 1).loads, 3);
        assert_eq!(replay_pbm(&[], 100), Replay::default());
    }

    #[test]
    fn exact_times_is_opt_when_every_scan_has_started() {
        // Once every scan has made its first reference, ExactTimes knows each resident
        // piece's next reference exactly, as OPT does. Each scan first references a
        // chunk of its own (100 + scan), all before anything else; then the scans move
        // over ascending chunks in a random interleaving.
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        for case in 0..100 {
            let scans = rng.random_range(1..=4u64);
            let mut trace: Vec<Reference> = (0..scans).map(|s| r(s, s, 100 + s as u32)).collect();
            let mut cursor: Vec<u32> = (0..scans).map(|_| rng.random_range(0..6)).collect();
            for t in 0..rng.random_range(0..40u64) {
                let s = rng.random_range(0..scans) as usize;
                cursor[s] += rng.random_range(1..3);
                trace.push(r(scans + t, s as u64, cursor[s]));
            }
            // Room for every first reference, so none is evicted before all scans
            // have started (they are never wanted again anyway).
            let capacity = rng.random_range(scans..=scans + 8) * PIECE;
            let (exact, _) = victims_with(&trace, capacity, Foresight::ExactTimes);
            assert_eq!(
                exact.loads,
                replay_opt(&trace, capacity).loads,
                "case {case}"
            );
        }
    }
}
