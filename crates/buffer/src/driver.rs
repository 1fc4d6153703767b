//! The driver contract, written once: what a driver does around the ABMs' events —
//! which worker an event's answer is for, what a failed read does to the scans that
//! needed it, which pieces' bytes may be dropped — with no threads, no clock and no
//! I/O. The simulator (virtual clock, modelled device and CPU) and the threaded runtime
//! (real clock, real device) both drive a [`Driver`], as TigerBeetle's grid runs over
//! a real or a simulated storage; what is left to each is how it waits.
//!
//! ```text
//!   worker                         Driver                          loader
//!   register(spec, now) ────────► Registration
//!   ask(holder, now) ───────────► Mail(Chunk | Finished | Failed) | Wait | Hold
//!                                     ◄──────────────────── next_load(now) → LoadDecision
//!                                     ◄──────────────────── loaded(piece, now) / load_failed(piece, now, cause)
//!   take_mail(holder) / drain_mail() ◄── answers for waiting workers, posted by events
//!   release(holder, now), unregister(scan, now)          take_evicted() → bytes to drop
//! ```
//!
//! Rules it keeps (asserted): an answer is posted only to a worker that waits, and at
//! most one per wait; a worker that waits is never asked for again, so its waiting time
//! is kept; a scan a failed read ended is out of the ABM at once, and each of its
//! workers learns the cause on its next `ask`.

use std::collections::{BTreeSet, HashMap};

use crate::{
    BufferError, Catalog, ChunkId, Delivery, HolderId, LoadDecision, Nanos, NextChunk, Paced,
    PieceId, Policy, Registration, ScanId, ScanSpec,
};

/// The answer to one wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mail<E> {
    /// Process this chunk (pinned for the worker); release it when done.
    Chunk(Delivery),
    /// Nothing more for this worker: unregister the scan once all its workers are.
    Finished,
    /// A read the scan needed failed; the scan is already out of the ABM.
    Failed(E),
}

/// The answer to [`Driver::ask`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer<E> {
    Mail(Mail<E>),
    /// The answer will be posted by a later event: take it with [`Driver::take_mail`]
    /// (or [`Driver::drain_mail`]).
    Wait,
    /// The policy throttles the scan: ask again at `until` (only when asked paced).
    Hold {
        until: Nanos,
    },
}

/// What a failed read does to the scans that needed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnLoadFailure {
    /// Their interest stays and the policy reads the chunk again later: a transient
    /// fault (the simulator's injected ones).
    Retry,
    /// They fail and leave the ABM at once, so the policy stops re-reading the chunk
    /// for them: a damaged page stays damaged (the runtime).
    FailScans,
}

/// The ABMs of a catalog and the bookkeeping every driver needs around them. `E` is
/// what a failed read tells the workers (the runtime's error; `()` in the simulator).
#[derive(Clone, Debug)]
pub struct Driver<P: Policy, E> {
    catalog: Catalog<P>,
    on_failure: OnLoadFailure,
    /// Answers for waiting workers, in the order events posted them.
    mail: Vec<(HolderId, Mail<E>)>,
    /// Workers told `Wait` whose answer is not taken yet.
    waiting: BTreeSet<HolderId>,
    /// Scans a failed read (or [`Driver::fail_all`]) ended, with the cause.
    failed: HashMap<ScanId, E>,
    /// Pieces whose bytes a driver that keeps bytes may drop.
    evicted: Vec<PieceId>,
}

impl<E: Clone> Driver<crate::AnyPolicy, E> {
    /// A new version under the policy `kind` (see [`Catalog::add_table_of_kind`]).
    pub fn add_table_of_kind(
        &mut self,
        geometry: crate::TableGeometry,
        kind: crate::PolicyKind,
    ) -> Result<crate::TableId, BufferError> {
        self.catalog.add_table_of_kind(geometry, kind)
    }
}

impl<P: Policy, E: Clone> Driver<P, E> {
    pub fn new(catalog: Catalog<P>, on_failure: OnLoadFailure) -> Self {
        Driver {
            catalog,
            on_failure,
            mail: Vec::new(),
            waiting: BTreeSet::new(),
            failed: HashMap::new(),
            evicted: Vec::new(),
        }
    }

    /// The ABMs, for reading (states, stats, invariants). Events go through the driver.
    pub fn catalog(&self) -> &Catalog<P> {
        &self.catalog
    }

    /// Starts recording piece references (see [`Catalog::record_trace`]).
    pub fn record_trace(&mut self) {
        self.catalog.record_trace();
    }

    /// The references recorded so far (see [`Catalog::take_trace`]).
    pub fn take_trace(&mut self) -> Vec<crate::Reference> {
        self.catalog.take_trace()
    }

    pub fn register(&mut self, spec: &ScanSpec, now: Nanos) -> Result<Registration, BufferError> {
        let registration = self.catalog.register_scan(spec, now);
        // Admission may have evicted scattered pieces (`scatter.rs`).
        self.evicted.extend(self.catalog.take_evicted());
        registration
    }

    /// A bulk append to `table` (see [`Catalog::append_chunks`]): no scan is waiting
    /// for chunks that did not exist, so nothing is posted.
    pub fn append_chunks(
        &mut self,
        table: crate::TableId,
        chunks: &[crate::AppendedChunk],
    ) -> Result<std::ops::Range<ChunkId>, BufferError> {
        self.catalog.append_chunks(table, chunks)
    }

    /// `table` is replaced by a newer version (see [`Catalog::retire_table`]); its
    /// pieces, once it is freed, are reported by [`Driver::take_evicted`].
    pub fn retire_table(&mut self, table: crate::TableId) -> Result<(), BufferError> {
        let retired = self.catalog.retire_table(table);
        self.evicted.extend(self.catalog.take_evicted());
        retired
    }

    /// Versions freed since the last call (see [`Catalog::take_freed`]).
    pub fn take_freed(&mut self) -> Vec<crate::TableId> {
        self.catalog.take_freed()
    }

    /// A worker wants its next chunk: its posted answer if there is one, else the
    /// ABM's (`paced`: the policy may hold the scan, for a driver that can wait on
    /// time). A worker already waiting is told `Wait` again without asking the ABM.
    pub fn ask(
        &mut self,
        holder: HolderId,
        now: Nanos,
        paced: bool,
    ) -> Result<Answer<E>, BufferError> {
        // A failure first: after `fail_all` a late load may still have posted a chunk.
        if let Some(cause) = self.failed.get(&holder.scan) {
            return Ok(Answer::Mail(Mail::Failed(cause.clone())));
        }
        if let Some(mail) = self.take_mail(holder) {
            return Ok(Answer::Mail(mail));
        }
        if self.waiting.contains(&holder) {
            return Ok(Answer::Wait);
        }
        let next = match paced {
            true => self.catalog.next_chunk_paced(holder, now)?,
            false => Paced::Go(self.catalog.next_chunk(holder, now)?),
        };
        // Another worker's wait may have ended with the delivery just made.
        self.post_finished_waiters();
        Ok(match next {
            Paced::Go(NextChunk::Deliver(d)) => Answer::Mail(Mail::Chunk(d)),
            Paced::Go(NextChunk::Finished) => Answer::Mail(Mail::Finished),
            Paced::Go(NextChunk::Wait) => {
                self.waiting.insert(holder);
                Answer::Wait
            }
            Paced::Hold { until } => Answer::Hold { until },
        })
    }

    /// The answer posted for `holder`, if any (it no longer waits then).
    pub fn take_mail(&mut self, holder: HolderId) -> Option<Mail<E>> {
        let at = self.mail.iter().position(|(h, _)| *h == holder)?;
        self.waiting.remove(&holder);
        Some(self.mail.remove(at).1)
    }

    /// Every answer posted since the last call, in the order events posted them: for
    /// a driver that hands answers out itself (the simulator).
    pub fn drain_mail(&mut self) -> Vec<(HolderId, Mail<E>)> {
        for (holder, _) in &self.mail {
            self.waiting.remove(holder);
        }
        std::mem::take(&mut self.mail)
    }

    /// The worker is done with its chunk. `None`: its scan was failed meanwhile (the
    /// pin went with it).
    pub fn release(
        &mut self,
        holder: HolderId,
        now: Nanos,
    ) -> Result<Option<ChunkId>, BufferError> {
        if self.failed.contains_key(&holder.scan) {
            return Ok(None);
        }
        let released = self.catalog.release_chunk(holder, now)?;
        self.admit_behind_scatter(now);
        Ok(Some(released))
    }

    /// A queued scan may have waited for a scattered piece that a release, a read or a
    /// failure just let go of (`scatter.rs`): admission is tried again.
    fn admit_behind_scatter(&mut self, now: Nanos) {
        let mut out = Vec::new();
        self.catalog.admit_behind_scatter(now, &mut out);
        self.post_deliveries(out);
        self.evicted.extend(self.catalog.take_evicted());
    }

    /// The scan ends (finished, cancelled or failed): its answers are dropped and, unless
    /// a failure already took it out, the ABM forgets it; queued scans may be admitted
    /// and served.
    pub fn unregister(&mut self, scan: ScanId, now: Nanos) -> Result<(), BufferError> {
        self.mail.retain(|(h, _)| h.scan != scan);
        self.waiting.retain(|h| h.scan != scan);
        if self.failed.remove(&scan).is_some() {
            return Ok(());
        }
        let mut out = Vec::new();
        let unregistered = self.catalog.unregister_scan(scan, now, &mut out);
        self.post_deliveries(out);
        // The last scan of a retired version freed it.
        self.evicted.extend(self.catalog.take_evicted());
        unregistered
    }

    /// What to read next, or `None`. The pieces it evicted (and any evicted for a load
    /// that did not start) are reported by [`Driver::take_evicted`].
    pub fn next_load(&mut self, now: Nanos) -> Option<LoadDecision> {
        let load = self.catalog.next_load(now);
        match &load {
            Some(load) => self.evicted.extend_from_slice(&load.evicted),
            None => self.evicted.extend(self.catalog.take_evicted()),
        }
        load
    }

    /// Pieces evicted since the last call: their bytes may be dropped.
    pub fn take_evicted(&mut self) -> Vec<PieceId> {
        std::mem::take(&mut self.evicted)
    }

    /// A piece is in memory: the workers it completes a chunk for get their answers.
    pub fn loaded(&mut self, piece: PieceId, now: Nanos) -> Result<(), BufferError> {
        let mut out = Vec::new();
        let completed = self.catalog.load_completed(piece, now, &mut out);
        self.post_deliveries(out);
        self.evicted.extend(self.catalog.take_evicted());
        self.admit_behind_scatter(now);
        completed
    }

    /// The read of a piece failed. Returns the scans that needed it; under
    /// [`OnLoadFailure::FailScans`] they are out of the ABM and their workers get
    /// `Failed(cause)` when they ask.
    pub fn load_failed(
        &mut self,
        piece: PieceId,
        now: Nanos,
        cause: E,
    ) -> Result<Vec<ScanId>, BufferError> {
        let scans = self.catalog.load_failed(piece, now)?;
        self.evicted.extend(self.catalog.take_evicted());
        self.admit_behind_scatter(now);
        if self.on_failure == OnLoadFailure::Retry {
            return Ok(scans);
        }
        let mut out = Vec::new();
        for scan in &scans {
            self.mail.retain(|(h, _)| h.scan != *scan);
            self.failed.insert(*scan, cause.clone());
            self.catalog.unregister_scan(*scan, now, &mut out)?;
        }
        // Unregistering may admit queued scans and serve them.
        self.post_deliveries(out);
        self.evicted.extend(self.catalog.take_evicted());
        Ok(scans)
    }

    /// Every admitted scan fails with `cause` without another ABM event: the end of
    /// the driver (the runtime stops; after a panic the ABM's state may be
    /// half-updated). The scans stay in the ABM, which is not used again; later
    /// registrations are the caller's to refuse.
    pub fn fail_all(&mut self, cause: E) {
        let scans: Vec<ScanId> = (self.catalog.tables())
            .flat_map(|abm| {
                let state = abm.state();
                // `scan`, not `active_scan`: this must not panic on a broken state.
                state
                    .active_slots()
                    .filter_map(|s| state.scan(s).map(|scan| scan.id))
            })
            .collect();
        for scan in scans {
            self.mail.retain(|(h, _)| h.scan != scan);
            self.failed.insert(scan, cause.clone());
        }
    }

    /// Workers whose answer is posted and not yet taken: a driver that parks each
    /// worker on its own wakeup wakes these after an event (an `ask` can post a
    /// sibling worker's `Finished`). One wakeup for every parked worker could not be
    /// given on untaken answers: the woken workers without one would wake each other
    /// forever.
    pub fn answered(&self) -> impl Iterator<Item = HolderId> + '_ {
        self.mail.iter().map(|(holder, _)| *holder)
    }

    /// Workers told `Wait` whose answer has not come yet.
    pub fn waiting_count(&self) -> usize {
        self.waiting.len()
    }

    /// Has a failure ended this scan?
    pub fn is_failed(&self, scan: ScanId) -> bool {
        self.failed.contains_key(&scan)
    }

    fn post_deliveries(&mut self, deliveries: Vec<Delivery>) {
        for d in deliveries {
            self.post(d.holder(), Mail::Chunk(d));
        }
        self.post_finished_waiters();
    }

    fn post_finished_waiters(&mut self) {
        for holder in self.catalog.take_finished_waiters() {
            self.post(holder, Mail::Finished);
        }
    }

    /// The ABM answers only workers that wait, once per wait: anything else is a bug
    /// in the ABM or here, and a second answer would be lost.
    fn post(&mut self, holder: HolderId, mail: Mail<E>) {
        if self.failed.contains_key(&holder.scan) {
            // Its workers learn of the failure instead (`ask` checks it first).
            return;
        }
        assert!(
            self.waiting.contains(&holder),
            "an answer for {holder}, which does not wait"
        );
        assert!(
            !self.mail.iter().any(|(h, _)| *h == holder),
            "a second answer for {holder} before it took the first"
        );
        self.mail.push((holder, mail));
    }
}
