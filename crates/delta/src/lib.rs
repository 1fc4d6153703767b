//! Differential updates for a stable (read-only) table, after the 2012 paper §2.1 and
//! Héman et al., "Positional Update Handling in Column Stores" (SIGMOD 2010).
//!
//! A table on disk never changes in place. Its inserts, deletes and modifications live in
//! a [`Pdt`] (Positional Delta Tree) keyed by position: every scan reads stale stable
//! tuples and merges the tree's changes into them ([`Pdt::merge_steps`]). Two kinds of
//! positions meet here:
//! - [`Sid`], the stable ID: the 0-based position of a tuple in the stable table (what the
//!   Active Buffer Manager's chunks are made of);
//! - [`Rid`], the row ID: the 0-based position in the stream a query sees after the
//!   changes are applied (what `_rowid` and the plan's ranges mean).
//!
//! [`translate`] turns a query's RID ranges into the SID ranges the ABM schedules, a
//! delivered chunk's SIDs back into the RIDs it produces, and keeps a scan's ledger of
//! RIDs produced so that out-of-order chunks never yield a tuple twice.

mod error;
mod ids;
pub mod layer;
pub mod log;
mod merge;
mod pdt;
pub mod translate;

pub use error::DeltaError;
pub use ids::{Rid, Sid};
pub use merge::{Merged, Step};
pub use pdt::{Change, Entry, Pdt};
