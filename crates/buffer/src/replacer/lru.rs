//! LRU: evict the piece unused for longest (the 2007 paper's normal and attach). The
//! pool's recency is all it reads, so it takes any ranking and ignores it.

use super::{EvictionRequest, Replacer};
use crate::{PieceId, Pool};

#[derive(Clone, Copy, Debug, Default)]
pub struct LruReplacer;

impl<R: ?Sized> Replacer<R> for LruReplacer {
    fn victim(
        &mut self,
        pool: &Pool,
        _ranking: &R,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        pool.lru().find(|p| request.may_choose(p, chosen))
    }
}
