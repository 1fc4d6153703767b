//! Replacers driven through a [`Pool`] and a hand-made ranking, no scheduler state:
//! what a replacer knows is exactly what these tests give it.

use super::*;
use crate::{ChunkId, HolderId, ScanId, TableId};

fn piece(c: u32) -> PieceId {
    PieceId::whole(TableId(0), ChunkId(c))
}

/// A full pool of `n` whole chunks of 10 bytes, loaded (so used) in chunk order.
fn pool_of(n: u32) -> Pool {
    let mut pool = Pool::new(u64::from(n) * 10);
    for c in 0..n {
        pool.reserve(piece(c), 10).unwrap();
        pool.complete(piece(c)).unwrap();
    }
    pool
}

fn request(bytes: u64, chunk: u32) -> EvictionRequest {
    EvictionRequest {
        bytes,
        chunk: Some(ChunkId(chunk)),
        for_scan: None,
    }
}

/// Groups of chunks with keep scores, as a policy would rank them.
struct Toy {
    /// (group, its chunks, interested scans).
    groups: Vec<(u32, Vec<u32>, u32)>,
    /// keepRelevance per chunk.
    keep: Vec<f64>,
    held: Vec<u32>,
    guarded: Vec<u32>,
}

impl Toy {
    fn group(&self, g: u32) -> &(u32, Vec<u32>, u32) {
        self.groups.iter().find(|(id, ..)| *id == g).unwrap()
    }
}

impl KeepRanking for Toy {
    type Group = u32;

    fn held(&self, chunk: ChunkId) -> bool {
        self.held.contains(&chunk.0)
    }

    fn pieces(&self, chunk: ChunkId) -> impl Iterator<Item = PieceId> + '_ {
        std::iter::once(piece(chunk.0))
    }

    fn groups(&self) -> impl Iterator<Item = u32> + '_ {
        self.groups.iter().map(|(g, ..)| *g)
    }

    fn chunks(&self, group: u32) -> impl Iterator<Item = ChunkId> + '_ {
        self.group(group)
            .1
            .iter()
            .filter(|c| !self.guarded.contains(c))
            .map(|c| ChunkId(*c))
    }

    fn span(&self, group: u32) -> usize {
        self.group(group).1.len()
    }

    fn member(&self, chunk: ChunkId) -> Option<u32> {
        if self.guarded.contains(&chunk.0) {
            return None;
        }
        let found = self.groups.iter().find(|(_, cs, _)| cs.contains(&chunk.0));
        found.map(|(g, ..)| *g)
    }

    fn keep(&self, _group: u32, chunk: ChunkId) -> f64 {
        self.keep[chunk.0 as usize]
    }

    fn interested(&self, group: u32) -> u32 {
        self.group(group).2
    }

    fn keep_whole(&self, group: u32) -> u32 {
        self.group(group).2
    }

    fn unneeded(&self, group: u32) -> bool {
        self.group(group).2 == 0
    }

    fn scans(&self, group: u32) -> Vec<(u64, u64)> {
        vec![(1, u64::from(self.group(group).2))]
    }

    fn column(&self, _piece: PieceId) -> u32 {
        0
    }
}

#[test]
fn lru_reads_the_pool_alone_and_skips_pinned_chosen_and_the_loading_chunk() {
    let mut pool = pool_of(5);
    pool.pin(piece(1), HolderId::new(ScanId(1), 0)).unwrap();
    // Chunk 0 is being loaded's own (a column load), 1 pinned: 2, 3, 4 in LRU order.
    let plan = plan_eviction(&mut LruReplacer, &pool, &(), &request(25, 0));
    assert_eq!(plan, Some(vec![piece(2), piece(3), piece(4)]));
    assert_eq!(
        plan_eviction(&mut LruReplacer, &pool, &(), &request(35, 0)),
        None
    );
}

#[test]
fn keep_relevance_evicts_by_the_supplied_ranking_not_by_recency() {
    let mut pool = pool_of(6);
    pool.pin(piece(5), HolderId::new(ScanId(1), 0)).unwrap();
    let mut toy = Toy {
        // Group 7: chunks 0-2, wanted by 3 scans; group 8: chunks 3-5, by 1.
        groups: vec![(7, vec![0, 1, 2], 3), (8, vec![3, 4, 5], 1)],
        keep: vec![0.9, 0.9, 0.9, 0.1, 0.1, 0.1],
        held: vec![],
        guarded: vec![],
    };
    // Lowest keep first (chunks 3 and 4; 5 is pinned), least recently used among them
    // first; then group 7's least recently used: not the pool's recency order.
    let plan = plan_eviction(&mut KeepRelevanceReplacer, &pool, &toy, &request(30, 9));
    assert_eq!(plan, Some(vec![piece(3), piece(4), piece(0)]));

    // Held and guarded chunks stay, and so does a chosen piece.
    toy.held = vec![3];
    toy.guarded = vec![4];
    let one = KeepRelevanceReplacer.victim(&pool, &toy, &request(10, 9), &[piece(0)]);
    assert_eq!(one, Some(piece(1)), "3 held, 4 guarded, 5 pinned, 0 chosen");

    // Equal scores: fewer interested scans first.
    toy.keep = vec![0.0; 6];
    toy.held.clear();
    toy.guarded.clear();
    let one = KeepRelevanceReplacer.victim(&pool, &toy, &request(10, 9), &[]);
    assert_eq!(one, Some(piece(3)));
}

#[test]
fn keep_relevance_takes_spare_pieces_first_unless_held() {
    let mut pool = pool_of(4);
    pool.set_spare(piece(3), true);
    pool.set_spare(piece(2), true);
    let mut toy = Toy {
        groups: vec![(1, vec![0, 1, 2, 3], 2)],
        keep: vec![0.0; 4],
        held: vec![2],
        guarded: vec![],
    };
    let one = KeepRelevanceReplacer.victim(&pool, &toy, &request(10, 9), &[]);
    assert_eq!(one, Some(piece(3)), "spare, and 2 is held");
    toy.held.clear();
    let one = KeepRelevanceReplacer.victim(&pool, &toy, &request(10, 9), &[]);
    assert_eq!(one, Some(piece(2)), "the least recently used spare piece");
}

#[test]
fn the_knapsack_sacrifices_the_lightest_group() {
    let pool = pool_of(4);
    let toy = Toy {
        // Chunks 0 and 1 are read by a scan of weight 5, 2 and 3 by one of weight 1.
        groups: vec![(1, vec![0, 1], 5), (2, vec![2, 3], 1)],
        keep: vec![0.0; 4],
        held: vec![],
        guarded: vec![],
    };
    let plan = plan_knapsack(&pool, &toy, &request(20, 9)).unwrap();
    let mut chunks: Vec<u32> = plan.iter().map(|p| p.chunk.0).collect();
    chunks.sort_unstable();
    assert_eq!(chunks, vec![2, 3]);
}

#[test]
fn fifo_waits_while_the_oldest_load_is_still_arriving() {
    let pool = pool_of(3);
    let none_arriving = |_: ChunkId| false;
    let first_arriving = |c: ChunkId| c == ChunkId(0);
    let fifo = |arriving: &dyn Fn(ChunkId) -> bool| {
        FifoReplacer.victim(&pool, &arriving, &request(10, 9), &[])
    };
    assert_eq!(fifo(&none_arriving), Some(piece(0)));
    assert_eq!(fifo(&first_arriving), None);
}

struct Listed(Vec<PieceId>);

impl EvictionOrder for Listed {
    fn eviction_order(&self) -> impl Iterator<Item = PieceId> + '_ {
        self.0.iter().copied()
    }
}

#[test]
fn an_order_is_walked_to_the_first_piece_that_may_go() {
    let mut pool = pool_of(4);
    pool.pin(piece(3), HolderId::new(ScanId(1), 0)).unwrap();
    // 7 is not in the pool, 3 is pinned, 2 is the loading chunk's.
    let order = Listed(vec![piece(7), piece(3), piece(2), piece(0), piece(1)]);
    let plan = plan_eviction(&mut OrderReplacer, &pool, &order, &request(20, 2));
    assert_eq!(plan, Some(vec![piece(0), piece(1)]));
}
