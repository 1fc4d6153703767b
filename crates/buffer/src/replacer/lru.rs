//! LRU: evict the piece unused for longest (the 2007 paper's normal and attach).

use super::{EvictionRequest, Replacer};
use crate::{AbmState, PieceId};

#[derive(Clone, Copy, Debug, Default)]
pub struct LruReplacer;

impl Replacer for LruReplacer {
    fn victim(
        &mut self,
        state: &AbmState,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        state.pool().lru().find(|p| request.may_choose(p, chosen))
    }
}
