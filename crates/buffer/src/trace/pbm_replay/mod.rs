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
//! referenced competes too. The predictions move with every reference, so no key fixed
//! at insertion (`opt.rs`'s loop) ranks the pieces; each scan's own order of the pieces
//! it wants is fixed, though, and an eviction merges those orders (`victims.rs`), no
//! buckets (the paper's buckets approximate exactly this ranking to make it cheap).
//!
//! What the replay leaves out, and the online run has: read-ahead (a load of the run
//! that no scan consumed before it was evicted is no reference of the trace) and the
//! order in which loads were issued. So online loads − replayed loads measures those,
//! and replayed loads − OPT's measures the rule's prediction error.

mod victims;

use crate::trace::opt::{dense, Dense, Replay, NEVER};
use crate::{next_consumption, PieceId, Reference, ScanId};
use std::collections::HashMap;
use victims::{Predictions, VictimIndex};

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
    on_evict: impl FnMut(usize, PieceId),
) -> Replay {
    replay_choosing(trace, capacity, foresight, on_evict, State::victim).0
}

/// The replay loop, evicting what `victim` chooses (the tests pass a slow reference);
/// returns the final state too.
fn replay_choosing(
    trace: &[Reference],
    capacity: u64,
    foresight: Foresight,
    mut on_evict: impl FnMut(usize, PieceId),
    victim: impl Fn(&mut State) -> Option<u32>,
) -> (Replay, State) {
    let plan = Plan::new(trace);
    let exact_at = (foresight == Foresight::ExactTimes).then(|| times_by_scan(trace, &plan));
    let mut state = State::new(&plan, exact_at);
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
            let Some(chosen) = victim(&mut state) else {
                break;
            };
            state.evict(chosen, plan.pieces.bytes[chosen as usize]);
            on_evict(i, trace[plan.first_ref[chosen as usize]].piece);
        }
    }
    (out, state)
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
    resident: Vec<bool>,
    last_use: Vec<usize>,
    /// The resident pieces, arranged for [`State::victim`].
    index: VictimIndex,
    used: u64,
    /// Pieces ranked so far (the cost the tests bound).
    #[cfg(test)]
    ranked: std::cell::Cell<u64>,
}

impl State {
    fn new(plan: &Plan, exact_at: Option<Vec<Vec<u64>>>) -> State {
        let pieces = plan.pieces.bytes.len();
        let scans = plan.first_of_scan.len();
        State {
            exact_at,
            scans: vec![ScanSeen::default(); scans],
            pace_sum: 0,
            paced: 0,
            wanted_by: vec![Vec::new(); pieces],
            resident: vec![false; pieces],
            last_use: vec![0; pieces],
            index: VictimIndex::new(scans, pieces),
            used: 0,
            #[cfg(test)]
            ranked: std::cell::Cell::new(0),
        }
    }

    /// Reference `i` at `at`: its scan registers (first reference), moves one step and
    /// updates its pace, and retires (last reference).
    fn reference(&mut self, plan: &Plan, i: usize, at: u64) {
        let s = plan.scan[i];
        if plan.first_of_scan[s as usize] == i {
            for &(piece, first) in &plan.ranges[s as usize] {
                self.add_want(piece, s, first);
            }
            self.scans[s as usize].first_at = at;
        }
        self.set_pace(s, None);
        let scan = &mut self.scans[s as usize];
        scan.latest_at = scan.latest_at.max(at);
        scan.seen += 1;
        let pace = observed_pace(scan);
        self.set_pace(s, pace);
        self.advance_want(plan.pieces.ids[i], s, plan.pos[i], plan.next_pos[i]);
        if plan.last_of_scan[s as usize] == i {
            self.set_pace(s, None);
        }
    }

    /// Scan `s` will reference `piece` at its position `next`.
    fn add_want(&mut self, piece: u32, s: u32, next: usize) {
        // A placed piece stays where it is: one more scan wanting it only lowers its
        // prediction below its place's bound.
        if self.resident[piece as usize] && self.wanted_by[piece as usize].is_empty() {
            let last_use = self.last_use[piece as usize];
            self.index.remove_unwanted(last_use, piece);
            self.index.place(s, (self.key(s, next), piece));
        }
        self.wanted_by[piece as usize].push((s, next));
    }

    /// Scan `s` has referenced `piece` at its position `pos`; its next reference to it
    /// is at `next` (or [`NEVER`]).
    fn advance_want(&mut self, piece: u32, s: u32, pos: usize, next: usize) {
        let wants = &mut self.wanted_by[piece as usize];
        let Some(k) = wants.iter().position(|&(w, p)| w == s && p == pos) else {
            return;
        };
        match next {
            NEVER => {
                wants.swap_remove(k);
            }
            next => wants[k].1 = next,
        }
        if self.resident[piece as usize] && self.index.placed_with(piece) == Some(s) {
            self.place_resident(piece);
        }
    }

    /// Places resident `piece` with the scan predicted to consume it first, or files
    /// it as unwanted.
    fn place_resident(&mut self, piece: u32) {
        match self.owner(piece, self.mean_pace()) {
            Some((s, key, _)) => self.index.place(s, (key, piece)),
            None => {
                self.index.unplace(piece);
                let last_use = self.last_use[piece as usize];
                self.index.add_unwanted(last_use, piece);
            }
        }
    }

    /// The scan predicted to consume `piece` first, its key for it, and the prediction.
    fn owner(&self, piece: u32, mean_pace: u128) -> Option<(u32, u64, u128)> {
        #[cfg(test)]
        self.ranked.set(self.ranked.get() + 1);
        let wants = self.wanted_by[piece as usize].iter();
        let (due, s, next) = wants
            .map(|&(s, next)| (self.due(s, next, mean_pace), s, next))
            .min()?;
        Some((s, self.key(s, next), due))
    }

    /// Scan `s`'s order key for its reference at position `pos`: what its predictions
    /// grow with (`victims.rs`).
    fn key(&self, s: u32, pos: usize) -> u64 {
        match &self.exact_at {
            Some(at) => at[s as usize][pos],
            None => pos as u64,
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
        let old_use = std::mem::replace(&mut self.last_use[id as usize], i);
        let unwanted = self.wanted_by[id as usize].is_empty();
        if self.resident[id as usize] {
            if unwanted {
                self.index.remove_unwanted(old_use, id);
                self.index.add_unwanted(i, id);
            }
            return false;
        }
        self.resident[id as usize] = true;
        self.place_resident(id);
        self.used = self.used.saturating_add(bytes);
        true
    }

    /// The resident piece to evict next: the largest rank (`victims.rs`).
    fn victim(&mut self) -> Option<u32> {
        let mut index = std::mem::take(&mut self.index);
        let ranking = Ranking {
            state: self,
            mean_pace: self.mean_pace(),
        };
        let victim = index.victim(&ranking);
        self.index = index;
        victim
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
        let latest = u128::from(scan.latest_at) << PACE_FRACTION_BITS;
        next_consumption::due_fixed(latest, pace, ahead)
    }

    /// The pace given to a scan not yet observed.
    fn mean_pace(&self) -> u128 {
        match self.paced {
            0 => UNOBSERVED_PACE,
            n => self.pace_sum / n,
        }
    }

    fn evict(&mut self, victim: u32, bytes: u64) {
        if !std::mem::replace(&mut self.resident[victim as usize], false) {
            return;
        }
        let last_use = self.last_use[victim as usize];
        self.index.remove_unwanted(last_use, victim);
        self.index.unplace(victim);
        self.used -= bytes;
    }
}

/// The replay's predictions at one eviction, for [`VictimIndex::victim`].
struct Ranking<'a> {
    state: &'a State,
    mean_pace: u128,
}

impl Predictions for Ranking<'_> {
    fn scan_due(&self, s: u32, key: u64) -> u128 {
        match self.state.exact_at {
            Some(_) => u128::from(key) << PACE_FRACTION_BITS,
            None => self.state.due(s, key as usize, self.mean_pace),
        }
    }

    fn owner(&self, piece: u32) -> Option<(u32, u64, u128)> {
        self.state.owner(piece, self.mean_pace)
    }

    fn last_use(&self, piece: u32) -> usize {
        self.state.last_use[piece as usize]
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
/// different instants: the trace's counterpart of `next_consumption::observed_pace`
/// (a trace has no registration time, so the pace runs from the first reference).
fn observed_pace(scan: &ScanSeen) -> Option<u128> {
    let elapsed = scan.latest_at.saturating_sub(scan.first_at);
    let steps = scan.seen.checked_sub(1)?;
    if elapsed == 0 || steps == 0 {
        return None;
    }
    Some((u128::from(elapsed) << PACE_FRACTION_BITS) / steps as u128)
}

#[cfg(test)]
mod tests;
