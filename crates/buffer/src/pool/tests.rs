use super::*;
use crate::{ChunkId, HolderId, ScanId};

fn piece(c: u32) -> PieceId {
    PieceId::whole(TableId(0), ChunkId(c))
}

#[test]
fn bytes_are_reserved_before_the_read_and_freed_by_evict_or_abort() {
    let mut pool = Pool::new(100);
    pool.reserve(piece(0), 60).unwrap();
    assert_eq!(pool.free_bytes(), 40);
    let err = pool.reserve(piece(1), 50).unwrap_err();
    assert!(
        matches!(err, BufferError::NoSpace { free: 40, .. }),
        "{err}"
    );
    pool.reserve(piece(1), 40).unwrap();
    pool.abort(piece(1)).unwrap();
    assert_eq!(pool.free_bytes(), 40);
    assert!(
        pool.evict(piece(0)).is_err(),
        "a loading piece is not evictable"
    );
    pool.complete(piece(0)).unwrap();
    pool.evict(piece(0)).unwrap();
    assert_eq!(pool.free_bytes(), 100);
    pool.check_invariants().unwrap();
}

#[test]
fn pinned_pieces_are_never_evicted_and_pins_count_per_holder() {
    let mut pool = Pool::new(10);
    // Two workers of one scan are two holders.
    let (a, b) = (HolderId::new(ScanId(1), 0), HolderId::new(ScanId(1), 1));
    pool.reserve(piece(3), 5).unwrap();
    assert!(
        pool.pin(piece(3), a).is_err(),
        "loading pieces cannot be pinned"
    );
    pool.complete(piece(3)).unwrap();
    pool.pin(piece(3), a).unwrap();
    pool.pin(piece(3), a).unwrap();
    pool.pin(piece(3), b).unwrap();
    assert_eq!(pool.pins(piece(3)), 3);
    assert_eq!(pool.pins_of(a), vec![(piece(3), 2)]);
    assert!(pool.evict(piece(3)).is_err());
    assert_eq!(
        pool.lru().count(),
        0,
        "pinned pieces are not LRU candidates"
    );
    pool.unpin(piece(3), a).unwrap();
    pool.unpin(piece(3), b).unwrap();
    assert!(pool.unpin(piece(3), b).is_err(), "b holds no pin any more");
    pool.unpin(piece(3), a).unwrap();
    assert_eq!(pool.lru().collect::<Vec<_>>(), vec![piece(3)]);
    pool.check_invariants().unwrap();
}

#[test]
fn lru_orders_by_last_use_and_load_order_by_reservation() {
    let mut pool = Pool::new(10);
    for c in 0..3 {
        pool.reserve(piece(c), 1).unwrap();
    }
    for c in [2, 0, 1] {
        pool.complete(piece(c)).unwrap();
    }
    assert_eq!(pool.lru().collect::<Vec<_>>(), [2, 0, 1].map(piece));
    pool.pin(piece(2), ScanId(0).into()).unwrap();
    pool.unpin(piece(2), ScanId(0).into()).unwrap();
    assert_eq!(pool.lru().collect::<Vec<_>>(), [0, 1, 2].map(piece));
    assert_eq!(pool.load_order().collect::<Vec<_>>(), [0, 1, 2].map(piece));
    pool.check_invariants().unwrap();
}
