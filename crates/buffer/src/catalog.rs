//! One byte budget for a catalog of tables: the 2012 paper's setup (§4.2: one buffer
//! for every TPC-H table), where a table's load may evict another table's pieces.
//!
//! Each table keeps its own scheduler ([`Abm`]: chunks, interest, equivalence classes,
//! its policy) and its own [`crate::Pool`]; the catalog owns the budget and lends it:
//!
//! ```text
//!   budget B  ─ used_1 ─┬─ used_2 ─┬─ … ─┬─ free = B − Σ used_t
//!   pool t's capacity   = used_t + free     (every table sees the same free bytes)
//! ```
//!
//! so a table's policy fills free bytes and evicts its own pieces exactly as it does
//! alone. What is new is decided here, by two rules:
//!
//! 1. **Which table loads next.** Tables with a waiting (blocked) scan first, the one
//!    whose scan has waited longest leading; then the others, round robin. Waiting time
//!    is on the one clock every table shares, so tables of different policies compare:
//!    relevance's queryRelevance counts (chunks needed, scans) are not compared across
//!    tables, only within one by its own policy.
//! 2. **Whose pieces make room.** Every table has a fair share of the budget, in
//!    proportion to its scans (admitted and queued, each counted by its workers; a table
//!    nobody scans has none).
//!    When a table below its share needs room that the free bytes do not give, the
//!    tables furthest above their shares give pieces, each chosen by that table's own
//!    policy ([`Policy::victims`]: LRU, FIFO window, keepRelevance, PBM's timeline, the
//!    one temperature), down to their share at most. A table at or above its share
//!    makes its own room, by its policy, as it would alone — unless its own bytes and
//!    the free ones cannot hold the load (a share smaller than one load, when other
//!    tables have many scans queued): then the others give below their shares, or its
//!    starved scan would wait for ever. The room made is for one scan's largest load;
//!    when the table's policy still finds none (it loads several scans' columns at
//!    once), for one load of all its active scans' columns.
//!
//! A policy's working ahead ([`Policy::choose_prefetch`]: relevance's, for parallel
//! scans) is asked only when no table wants a load and none runs, so it never delays a
//! load a scan of any table needs, and it takes no other table's pieces.
//!
//! Admission counts every table's scans against the one budget, so the papers'
//! guarantee (room for two chunks per scan) holds across tables.
//!
//! **Versions** (2012 §2.1, after a checkpoint: case (iv)). A checkpoint writes a new
//! image of a table that shares no page with the old one, so the new version is added
//! as a table of its own ([`Catalog::add_table`]) and the old one retired
//! ([`Catalog::retire_table`]): scans of the old snapshot go on (new ones may still
//! register on it), and once none is active or queued and no load of it is in flight,
//! its pieces are evicted and its metadata dropped; its `TableId` is then unknown, and
//! the next version added takes its slot (scan ids go on from the freed version's).
//!
//! Invariants (`check_invariants`, after every event in `tests/catalog.rs`): every
//! table's own; Σ used ≤ B; each pool's capacity = its used + the free bytes; the
//! admitted scans of all tables reserve at most B; no retired table is left with
//! neither scans nor loads.

use crate::Abm;
use crate::{
    AbmConfig, AnyPolicy, BufferBudget, BufferError, ChunkId, Delivery, HolderId, LoadDecision,
    Nanos, NextChunk, Paced, PieceId, Policy, PolicyKind, Registration, ScanId, ScanSpec,
    TableGeometry, TableId, TableVersion,
};

/// A scan id's table is its id shifted right by this (see [`Abm`]'s ids in a catalog):
/// 2^40 scans per table before ids would collide.
pub const SCAN_ID_TABLE_BITS: u32 = 40;

/// The table a scan of a catalog belongs to (its id's high bits).
pub fn scan_table_id(scan: ScanId) -> TableId {
    TableId((scan.0 >> SCAN_ID_TABLE_BITS) as u32)
}

/// Most tables (live versions of tables) one catalog serves at once.
pub const MAX_TABLES: usize = 1024;

/// The ABMs of several tables under one byte budget.
#[derive(Clone, Debug)]
pub struct Catalog<P: Policy = AnyPolicy> {
    budget: u64,
    max_inflight: u32,
    /// Every table's configuration: the whole budget, which admission counts against.
    table_config: AbmConfig,
    /// Indexed by `TableId`; `None`: a retired version, freed.
    tables: Vec<Option<Abm<P>>>,
    /// Per slot: its version is retired (a newer one replaces it), freed when idle.
    retired: Vec<bool>,
    /// Per slot: what the next version to take it starts from.
    successors: Vec<Successor>,
    /// Versions freed since [`Catalog::take_freed`].
    freed: Vec<TableId>,
    /// The counters of every version freed.
    freed_stats: crate::AbmStats,
    /// Round-robin cursor of rule 1: the table after the last one that loaded.
    turn: usize,
    /// Pieces evicted for another table's load not yet reported in a [`LoadDecision`].
    evicted: Vec<PieceId>,
    stats: CatalogStats,
}

/// Counters of the sharing itself (each table's [`crate::AbmStats`] count the rest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatalogStats {
    /// Pieces evicted to make room for another table's load.
    pub foreign_evictions: u64,
    pub foreign_bytes: u64,
}

impl Catalog<AnyPolicy> {
    /// A catalog of `geometries` (table `i` is `TableId(i)`), each table under the same
    /// policy `kind`. `config.budget` is the whole budget: `Chunks(n)` counts the
    /// largest chunk of any table.
    pub fn with_kind(
        geometries: Vec<TableGeometry>,
        config: &AbmConfig,
        kind: PolicyKind,
    ) -> Result<Self, BufferError> {
        let (_, table_config) = table_config(&geometries, config)?;
        let tables = geometries
            .into_iter()
            .map(|g| {
                let policy = AnyPolicy::new(kind, &g, &table_config);
                (g, policy)
            })
            .collect();
        Catalog::new(tables, config)
    }

    /// A table under the same policy `kind` as [`Catalog::with_kind`] gives (see
    /// [`Catalog::add_table`]).
    pub fn add_table_of_kind(
        &mut self,
        geometry: TableGeometry,
        kind: PolicyKind,
    ) -> Result<TableId, BufferError> {
        let policy = AnyPolicy::new(kind, &geometry, &self.table_config);
        self.add_table(geometry, policy)
    }
}

/// The whole budget in bytes (`Chunks(n)` counts the largest chunk of any table), and
/// each table's configuration: `config` with that budget, which admission counts against.
fn table_config(
    geometries: &[TableGeometry],
    config: &AbmConfig,
) -> Result<(u64, AbmConfig), BufferError> {
    let largest = geometries.iter().map(|g| g.max_chunk_bytes()).max();
    let budget = config.capacity_bytes(largest.unwrap_or(1))?;
    let table_config = AbmConfig {
        budget: BufferBudget::Bytes(budget),
        ..config.clone()
    };
    Ok((budget, table_config))
}

impl<P: Policy> Catalog<P> {
    /// A catalog of `tables` (table `i` is `TableId(i)`), each with its policy, under
    /// `config`'s budget and loads in flight (both for all tables together).
    pub fn new(tables: Vec<(TableGeometry, P)>, config: &AbmConfig) -> Result<Self, BufferError> {
        if tables.len() > MAX_TABLES {
            return Err(BufferError::InvalidConfig(format!(
                "{} tables: one catalog serves at most {MAX_TABLES}",
                tables.len()
            )));
        }
        let geometries: Vec<TableGeometry> = tables.iter().map(|(g, _)| g.clone()).collect();
        let (budget, table_config) = table_config(&geometries, config)?;
        let mut abms = Vec::with_capacity(tables.len());
        for (i, (geometry, policy)) in tables.into_iter().enumerate() {
            let mut abm = Abm::new(geometry, table_config.clone(), policy)?;
            abm.in_catalog(TableId(i as u32), Successor::first(i));
            abms.push(Some(abm));
        }
        let n = abms.len();
        let mut catalog = Catalog {
            budget,
            max_inflight: config.max_inflight,
            table_config,
            tables: abms,
            retired: vec![false; n],
            successors: (0..n).map(Successor::first).collect(),
            freed: Vec::new(),
            freed_stats: crate::AbmStats::default(),
            turn: 0,
            evicted: Vec::new(),
            stats: CatalogStats::default(),
        };
        catalog.rebalance();
        Ok(catalog)
    }

    pub fn budget_bytes(&self) -> u64 {
        self.budget
    }

    /// Adds a table under `policy` and returns its id: a freed version's slot, or a new
    /// one. A checkpoint's new image is added so (case (iv) of the module doc), beside
    /// the version it replaces.
    pub fn add_table(
        &mut self,
        geometry: TableGeometry,
        policy: P,
    ) -> Result<TableId, BufferError> {
        let slot = self.tables.iter().position(Option::is_none);
        if slot.is_none() && self.tables.len() >= MAX_TABLES {
            return Err(BufferError::InvalidConfig(format!(
                "one catalog serves at most {MAX_TABLES} tables at once"
            )));
        }
        let mut abm = Abm::new(geometry, self.table_config.clone(), policy)?;
        let t = slot.unwrap_or(self.tables.len());
        if t == self.tables.len() {
            self.tables.push(None);
            self.retired.push(false);
            self.successors.push(Successor::first(t));
        }
        abm.in_catalog(TableId(t as u32), self.successors[t]);
        self.tables[t] = Some(abm);
        self.retired[t] = false;
        self.rebalance();
        Ok(TableId(t as u32))
    }

    /// A newer version replaces `table`: it is freed — its pieces evicted (reported by
    /// [`Catalog::take_evicted`]), its metadata dropped, its id reported by
    /// [`Catalog::take_freed`] — as soon as no scan of it is active or queued and no
    /// load of it is in flight (now, if none is). Until then its scans go on and new
    /// ones may register (transactions still on the old snapshot).
    pub fn retire_table(&mut self, table: TableId) -> Result<(), BufferError> {
        self.table(table)?;
        self.retired[table.0 as usize] = true;
        self.free_if_idle(table.0 as usize);
        Ok(())
    }

    /// Versions freed since the last call: their ids are unknown now (until a new
    /// version takes the slot), and a driver drops what it kept for them (files).
    pub fn take_freed(&mut self) -> Vec<TableId> {
        std::mem::take(&mut self.freed)
    }

    /// Frees slot `t` if its version is retired and idle (no scans, no loads).
    fn free_if_idle(&mut self, t: usize) {
        let Some(abm) = self.tables.get(t).and_then(Option::as_ref) else {
            return;
        };
        let state = abm.state();
        let idle = state.active_count() == 0 && state.pending_count() == 0;
        if !self.retired[t] || !idle || state.inflight() > 0 {
            return;
        }
        if let Some(mut abm) = self.tables[t].take() {
            self.successors[t] = Successor::of(abm.state());
            self.evicted.extend(abm.evict_all());
            add_stats(&mut self.freed_stats, abm.state().stats());
        }
        self.retired[t] = false;
        self.freed.push(TableId(t as u32));
        self.rebalance();
    }

    /// The live tables (versions not freed).
    fn live(&self) -> impl Iterator<Item = &Abm<P>> + '_ {
        self.tables.iter().flatten()
    }

    /// Bytes of every table's loading and resident pieces.
    pub fn used_bytes(&self) -> u64 {
        self.live().map(|t| t.state().pool().used_bytes()).sum()
    }

    pub fn free_bytes(&self) -> u64 {
        self.budget.saturating_sub(self.used_bytes())
    }

    pub fn stats(&self) -> CatalogStats {
        self.stats
    }

    /// Live tables (versions not freed).
    pub fn table_count(&self) -> usize {
        self.live().count()
    }

    /// One table's ABM (its state, policy and counters).
    pub fn table(&self, table: TableId) -> Result<&Abm<P>, BufferError> {
        self.tables
            .get(table.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(BufferError::UnknownTable(table.0))
    }

    /// Whether `table` is a retired version not freed yet.
    pub fn is_retired(&self, table: TableId) -> bool {
        self.retired.get(table.0 as usize) == Some(&true)
    }

    /// Every live table's ABM, in `TableId` order (`state().table()` is its id).
    pub fn tables(&self) -> impl Iterator<Item = &Abm<P>> + '_ {
        self.live()
    }

    /// Every table's counters added up, freed versions' included.
    pub fn abm_stats(&self) -> crate::AbmStats {
        let mut sum = self.freed_stats.clone();
        for t in self.live() {
            add_stats(&mut sum, t.state().stats());
        }
        sum
    }

    /// Starts recording every table's piece references (see [`Abm::record_trace`]).
    pub fn record_trace(&mut self) {
        self.tables.iter_mut().flatten().for_each(Abm::record_trace);
    }

    /// Every table's references recorded so far, in time order (recording continues).
    pub fn take_trace(&mut self) -> Vec<crate::Reference> {
        let tables = self.tables.iter_mut().flatten();
        let mut all: Vec<crate::Reference> = tables.flat_map(Abm::take_trace).collect();
        all.sort_by_key(|r| r.at);
        all
    }

    fn table_mut(&mut self, table: TableId) -> Result<&mut Abm<P>, BufferError> {
        self.tables
            .get_mut(table.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(BufferError::UnknownTable(table.0))
    }

    fn scan_table(&mut self, scan: ScanId) -> Result<&mut Abm<P>, BufferError> {
        self.tables
            .get_mut(scan_table_id(scan).0 as usize)
            .and_then(Option::as_mut)
            .ok_or(BufferError::UnknownScan(scan))
    }

    /// Registers a scan of `spec.table` (see [`Abm::register_scan`]); admission counts
    /// every table's scans.
    pub fn register_scan(
        &mut self,
        spec: &ScanSpec,
        now: Nanos,
    ) -> Result<Registration, BufferError> {
        // Every event that changes bytes or reservations rebalances after itself, so the
        // table's view of the others' reservations is current here.
        let registration = self.table_mut(spec.table)?.register_scan(spec, now);
        self.collect_scatter_evicted();
        self.rebalance();
        registration
    }

    /// Tries admission again in every table whose queued scans may wait for a
    /// scattered piece to go (`scatter.rs`), as after a release or a completed load;
    /// the scans served are appended to `out`.
    /// Called after every release and load: without a table waiting so, it does
    /// nothing (not even rebalance).
    pub fn admit_behind_scatter(&mut self, now: Nanos, out: &mut Vec<Delivery>) {
        let mut tried = false;
        for t in 0..self.tables.len() {
            let waits = self.tables[t]
                .as_ref()
                .is_some_and(Abm::queued_behind_scatter);
            if waits {
                self.rebalance();
                if let Some(abm) = self.tables[t].as_mut() {
                    abm.admit_queued(now, out);
                }
                self.collect_scatter_evicted();
                tried = true;
            }
        }
        if tried {
            self.rebalance();
        }
    }

    /// Scattered pieces the tables evicted to admit scans join the pieces to report.
    fn collect_scatter_evicted(&mut self) {
        for abm in self.tables.iter_mut().flatten() {
            self.evicted.extend(abm.take_scatter_evicted());
        }
    }

    /// A bulk append to `table` (see [`Abm::append_chunks`]).
    pub fn append_chunks(
        &mut self,
        table: TableId,
        chunks: &[crate::AppendedChunk],
    ) -> Result<std::ops::Range<ChunkId>, BufferError> {
        self.table_mut(table)?.append_chunks(chunks)
    }

    /// See [`Abm::next_chunk`]; `holder` may be a [`ScanId`] (its first worker).
    pub fn next_chunk(
        &mut self,
        holder: impl Into<HolderId>,
        now: Nanos,
    ) -> Result<NextChunk, BufferError> {
        let holder = holder.into();
        self.scan_table(holder.scan)?.next_chunk(holder, now)
    }

    pub fn next_chunk_paced(
        &mut self,
        holder: impl Into<HolderId>,
        now: Nanos,
    ) -> Result<Paced, BufferError> {
        let holder = holder.into();
        self.scan_table(holder.scan)?.next_chunk_paced(holder, now)
    }

    pub fn release_chunk(
        &mut self,
        holder: impl Into<HolderId>,
        now: Nanos,
    ) -> Result<ChunkId, BufferError> {
        let holder = holder.into();
        self.scan_table(holder.scan)?.release_chunk(holder, now)
    }

    /// Every table's [`Abm::take_finished_waiters`].
    pub fn take_finished_waiters(&mut self) -> Vec<HolderId> {
        let tables = self.tables.iter_mut().flatten();
        tables.flat_map(Abm::take_finished_waiters).collect()
    }

    /// Ends a scan; its reservation may admit queued scans of any table (served ones
    /// are appended to `out`). The last scan of a retired version frees it.
    pub fn unregister_scan(
        &mut self,
        scan: ScanId,
        now: Nanos,
        out: &mut Vec<Delivery>,
    ) -> Result<(), BufferError> {
        self.scan_table(scan)?.unregister_scan(scan, now, out)?;
        self.free_if_idle(scan_table_id(scan).0 as usize);
        for t in 0..self.tables.len() {
            self.rebalance();
            if let Some(abm) = self.tables[t].as_mut() {
                abm.admit_queued(now, out);
            }
        }
        self.collect_scatter_evicted();
        self.rebalance();
        Ok(())
    }

    /// What to read next, of any table (rules 1 and 2 of the module doc), or `None`.
    /// Pieces evicted for it, of any table, are in its `evicted`; when no load follows
    /// a foreign eviction, [`Catalog::take_evicted`] reports them.
    pub fn next_load(&mut self, now: Nanos) -> Option<LoadDecision> {
        let inflight: u32 = self.live().map(|t| t.state().inflight()).sum();
        if inflight >= self.max_inflight {
            return None;
        }
        let order = self.load_order();
        for &t in &order {
            if let Some(load) = self.demand_load_with_room(t, now) {
                return Some(self.started(t, load));
            }
        }
        // Working ahead only with the disk idle: it must not delay any table's demand.
        if inflight > 0 {
            return None;
        }
        self.rebalance();
        for &t in &order {
            let prefetch = self.tables[t]
                .as_mut()
                .and_then(|abm| abm.next_prefetch(now));
            if let Some(load) = prefetch {
                return Some(self.started(t, load));
            }
        }
        None
    }

    /// Table `t`'s next demand load, with room made for it by rule 2: first for one
    /// scan's largest load; if the policy still finds no room, for one load of every
    /// active scan's columns — a policy may load several scans' columns at once
    /// (elevator's class columns, relevance's overlapping starved scans), and with the
    /// budget full of other tables' pieces and none of `t`'s own to evict, its starved
    /// scans would otherwise wait for ever.
    fn demand_load_with_room(&mut self, t: usize, now: Nanos) -> Option<LoadDecision> {
        let state = self.tables[t].as_ref()?.state();
        let (one, merged) = (state.wanted_load_bytes(), state.merged_load_bytes());
        if let Some(want) = one {
            self.make_room_for(t, want, now);
        }
        self.rebalance();
        if let Some(load) = self.tables[t].as_mut()?.next_demand_load(now) {
            return Some(load);
        }
        let merged = merged.filter(|&m| Some(m) > one)?;
        self.make_room_for(t, merged, now);
        self.rebalance();
        self.tables[t].as_mut()?.next_demand_load(now)
    }

    /// Bookkeeping of a load table `t` starts: pieces evicted for it in other tables
    /// join its `evicted`, and the round robin moves past `t`.
    fn started(&mut self, t: usize, mut load: LoadDecision) -> LoadDecision {
        self.rebalance();
        self.turn = (t + 1) % self.tables.len();
        let mut evicted = std::mem::take(&mut self.evicted);
        evicted.append(&mut load.evicted);
        load.evicted = evicted;
        load
    }

    /// Pieces evicted for another table's load since the last [`LoadDecision`] that
    /// listed them: a driver that keeps pieces' bytes drops these too.
    pub fn take_evicted(&mut self) -> Vec<PieceId> {
        std::mem::take(&mut self.evicted)
    }

    /// Live tables by rule 1: the longest waiting scan first, then round robin from
    /// `turn`.
    fn load_order(&self) -> Vec<usize> {
        let n = self.tables.len();
        let blocked = |t: usize| self.tables[t].as_ref()?.state().earliest_blocked();
        let mut order: Vec<usize> = (0..n)
            .map(|i| (self.turn + i) % n)
            .filter(|&t| self.tables[t].is_some())
            .collect();
        // Stable: tables without a waiting scan keep their round-robin order.
        order.sort_by_key(|&t| match blocked(t) {
            Some(since) => (0, since),
            None => (1, Nanos::ZERO),
        });
        order
    }

    /// Rule 2: when table `t` is below its fair share and the free bytes cannot hold
    /// its next load of `want` bytes, the tables furthest above their shares give
    /// pieces, down to their shares. When `t` is at or above its share but cannot make
    /// the room itself (its own bytes and the free ones are less than the load: a share
    /// smaller than one load, as many queued scans of other tables make it), the others
    /// give below their shares: otherwise its starved scan would wait for ever.
    fn make_room_for(&mut self, t: usize, want: u64, now: Nanos) {
        let free = self.free_bytes();
        let shares = self.fair_shares();
        let used = |c: &Self, u: usize| {
            let abm = c.tables[u].as_ref();
            abm.map_or(0, |abm| abm.state().pool().used_bytes())
        };
        let own = used(self, t);
        let above_share = own.saturating_add(want) > shares[t];
        if free >= want || (above_share && own.saturating_add(free) >= want) {
            return;
        }
        // What a giver keeps: its share, unless `t` can make no room at all.
        let keeps = |u: usize| if above_share { 0 } else { shares[u] };
        let mut need = want - free;
        let mut givers: Vec<usize> = (0..self.tables.len())
            .filter(|&u| u != t && used(self, u) > keeps(u))
            .collect();
        // Furthest above its share first (below it: the least below).
        givers
            .sort_by_key(|&u| std::cmp::Reverse(i128::from(used(self, u)) - i128::from(shares[u])));
        for u in givers {
            let over = used(self, u) - keeps(u);
            let Some(giver) = self.tables[u].as_mut() else {
                continue;
            };
            let victims = giver.evict_for_other(need.min(over), now);
            let freed: u64 = victims.iter().map(|v| giver.state().piece_bytes(*v)).sum();
            self.stats.foreign_evictions += victims.len() as u64;
            self.stats.foreign_bytes += freed;
            self.evicted.extend(victims);
            need = need.saturating_sub(freed);
            if need == 0 {
                break;
            }
        }
    }

    /// Each table's fair share of the budget: in proportion to the workers of its
    /// admitted and queued scans (all zero when nobody scans).
    fn fair_shares(&self) -> Vec<u64> {
        let weights: Vec<u64> = (self.tables.iter())
            .map(|t| t.as_ref().map_or(0, |t| t.state().workers()))
            .collect();
        let total: u64 = weights.iter().sum();
        weights
            .iter()
            .map(|&w| match total {
                0 => 0,
                _ => (u128::from(self.budget) * u128::from(w) / u128::from(total)) as u64,
            })
            .collect()
    }

    /// Lends every pool its bytes plus the free bytes, and tells each table what the
    /// others' admitted scans reserve.
    fn rebalance(&mut self) {
        let free = self.free_bytes();
        let reserved: Vec<u64> = (self.tables.iter())
            .map(|t| t.as_ref().map_or(0, |t| t.state().reserved_bytes()))
            .collect();
        let all: u64 = reserved.iter().fold(0, |a, b| a.saturating_add(*b));
        for (t, abm) in self.tables.iter_mut().enumerate() {
            let Some(abm) = abm else { continue };
            let used = abm.state().pool().used_bytes();
            abm.share_budget(used + free, all - reserved[t]);
        }
    }

    /// A piece of a load arrived (see [`Abm::load_completed`]); the last load of a
    /// retired version nobody scans frees it.
    pub fn load_completed(
        &mut self,
        piece: PieceId,
        now: Nanos,
        out: &mut Vec<Delivery>,
    ) -> Result<(), BufferError> {
        self.table_mut(piece.table)?
            .load_completed(piece, now, out)?;
        self.free_if_idle(piece.table.0 as usize);
        Ok(())
    }

    /// The read of a piece failed (see [`Abm::load_failed`]); its bytes are free for
    /// every table.
    pub fn load_failed(&mut self, piece: PieceId, now: Nanos) -> Result<Vec<ScanId>, BufferError> {
        let failed = self.table_mut(piece.table)?.load_failed(piece, now);
        self.free_if_idle(piece.table.0 as usize);
        self.rebalance();
        failed
    }

    /// Every table's invariants, and the shared budget's (module doc).
    pub fn check_invariants(&self) -> Result<(), BufferError> {
        let invariant = |m: String| Err(BufferError::Invariant(m));
        let (used, free) = (self.used_bytes(), self.free_bytes());
        if used > self.budget {
            return invariant(format!(
                "tables hold {used} bytes of a {} budget",
                self.budget
            ));
        }
        let mut reserved = 0u64;
        for (t, abm) in self.tables.iter().enumerate() {
            let Some(abm) = abm else {
                if self.retired[t] {
                    return invariant(format!("freed table {t} is still retired"));
                }
                continue;
            };
            abm.check_invariants()?;
            let (state, pool) = (abm.state(), abm.state().pool());
            if pool.capacity_bytes() != pool.used_bytes() + free {
                return invariant(format!(
                    "table {t} is lent {} bytes, holds {} with {free} free",
                    pool.capacity_bytes(),
                    pool.used_bytes()
                ));
            }
            if state.table() != TableId(t as u32) {
                return invariant(format!("table {t} calls itself {:?}", state.table()));
            }
            let idle = state.active_count() == 0 && state.pending_count() == 0;
            if self.retired[t] && idle && state.inflight() == 0 {
                return invariant(format!("retired table {t} is idle and not freed"));
            }
            reserved = reserved.saturating_add(state.reserved_bytes());
        }
        if reserved > self.budget {
            return invariant(format!(
                "admitted scans of all tables reserve {reserved} bytes of {}",
                self.budget
            ));
        }
        Ok(())
    }
}

fn add_stats(sum: &mut crate::AbmStats, s: &crate::AbmStats) {
    // Destructured whole, so a counter added to `AbmStats` cannot be left out here.
    let crate::AbmStats {
        loads,
        evictions,
        spare_evictions,
        deliveries,
        load_failures,
        bytes_loaded,
        bytes_read,
        scatter_loads,
    } = s;
    sum.loads += loads;
    sum.evictions += evictions;
    sum.spare_evictions += spare_evictions;
    sum.deliveries += deliveries;
    sum.load_failures += load_failures;
    sum.bytes_loaded += bytes_loaded;
    sum.bytes_read += bytes_read;
    sum.scatter_loads += scatter_loads;
}

/// Where the next version to take a slot starts: its scans' ids and its pieces'
/// version go on from the freed one's, so nothing of the two is ever confused (a
/// driver may still hold ids of the old one's evicted pieces).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Successor {
    pub(crate) next_scan_id: u64,
    pub(crate) version: TableVersion,
}

impl Successor {
    /// The first version in slot `t` (its scan ids: see [`SCAN_ID_TABLE_BITS`]).
    fn first(t: usize) -> Successor {
        Successor {
            next_scan_id: (t as u64) << SCAN_ID_TABLE_BITS,
            version: TableVersion::default(),
        }
    }

    /// After the version `state` is.
    fn of(state: &crate::AbmState) -> Successor {
        Successor {
            next_scan_id: state.next_scan_id,
            version: TableVersion(state.version.0.wrapping_add(1)),
        }
    }
}
