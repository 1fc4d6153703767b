//! The loader's turn on the CPU (`LoaderCpu`): once the device has finished the reads
//! in flight, the loader must run for `s_per_load` of a core — at its weight among the
//! chunks in process — before it announces them to the ABM and chooses the next load.
//! Meanwhile the device idles and the scans do not see the chunks, as on the engine,
//! whose loader thread completes a read, wakes the scans and issues the next itself.

use super::{InFlight, Sim};
use crate::SimError;

/// Reads completed and not yet announced, and the loader's CPU turn for them.
#[derive(Default)]
pub(super) struct LoaderTurn {
    /// Cycles the loader still runs; `None` while reads are still in flight (or none).
    cycles_left: Option<f64>,
    unannounced: Vec<InFlight>,
}

impl LoaderTurn {
    /// It has read pieces to announce: it chooses no new load until it has.
    pub(super) fn busy(&self) -> bool {
        !self.unannounced.is_empty()
    }

    /// A piece's read completed; with the device now idle (`last`) the loader's turn of
    /// `cycles` begins.
    pub(super) fn read(&mut self, piece: InFlight, last: bool, cycles: f64) {
        self.unannounced.push(piece);
        if last {
            self.cycles_left = Some(cycles);
        }
    }

    /// Runs the turn, if there is one, for `cycles`.
    pub(super) fn advance(&mut self, cycles: f64) {
        if let Some(left) = self.cycles_left.as_mut() {
            *left = (*left - cycles).max(0.0);
        }
    }
}

impl Sim<'_> {
    /// The loader's weight among the chunks in process while it has a turn.
    pub(super) fn loader_weight(&self) -> Option<f64> {
        let loader = self.cfg.cpu.loader?;
        self.loader.cycles_left.map(|_| loader.weight)
    }

    /// Cycles left of the loader's turn, if it has one.
    pub(super) fn loader_turn_left(&self) -> Option<f64> {
        self.loader.cycles_left
    }

    /// The turn ends: every read piece is announced, in the order it arrived.
    pub(super) fn on_loader_turn_end(&mut self) -> Result<(), SimError> {
        self.loader.cycles_left = None;
        for piece in std::mem::take(&mut self.loader.unannounced) {
            self.announce(piece)?;
        }
        Ok(())
    }
}
