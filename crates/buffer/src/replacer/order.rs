//! Evict by an order the policy ranks: the first piece of it that may go. The policies
//! that predict when each piece is next consumed put all of their knowledge into the
//! order, so the replacer is a walk:
//!
//! * mixed (2012 paper §2.3, one temperature): pieces by predicted next consumption by
//!   any Scan or CScan, furthest first (`policy/next_use.rs`, ranked once per decision
//!   and only if a victim is asked for);
//! * pbm and pbm-lru (2012 paper §3): the bucket timeline ([`super::timeline`]) from
//!   its far end, kept up to date by the policy between decisions (`policy/pbm.rs`,
//!   whose `Furthest` adds an LRU fallback for a piece the timeline missed).

use super::{EvictionRequest, Replacer};
use crate::{PieceId, Pool};

/// Pieces in the order they should go, first to go first. It may list pieces that are
/// pinned, loading or gone (the replacer skips those).
pub trait EvictionOrder {
    fn eviction_order(&self) -> impl Iterator<Item = PieceId> + '_;
}

/// See the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub struct OrderReplacer;

impl<O: EvictionOrder> Replacer<O> for OrderReplacer {
    fn victim(
        &mut self,
        pool: &Pool,
        order: &O,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        order
            .eviction_order()
            .find(|p| request.may_choose(p, chosen) && pool.is_evictable(*p))
    }
}
