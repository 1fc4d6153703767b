//! PBM's predicted next consumption (2012 paper §3, PageNextConsumption), written once
//! for its three users: the PBM family (`policy/pbm.rs`), the one temperature of Scans
//! and CScans (`policy/next_use.rs`) and the offline replay of a trace under PBM's
//! rule (`coopscan-sim`'s `pbm_replay`).
//!
//! ```text
//! due(scan, chunk) = last delivery(scan) + pace(scan) × chunks ahead(scan, chunk)
//! pace(scan)       = time since registration ÷ chunks delivered   (observed)
//!                  | mean of the observed paces                   (not yet observed)
//!                  | UNOBSERVED_PACE                              (none observed)
//! ```
//!
//! How far ahead a chunk lies is each user's: PBM counts along the scan's chunk order,
//! the one temperature ranks a CScan's resident chunks as useRelevance hands them out,
//! the replay counts a scan's references in the trace.

use crate::{Nanos, ScanSlot};

/// Assumed time per chunk of a scan before any scan has been observed: a guess that
/// only orders the very first loads (observed paces replace it after one delivery).
pub const UNOBSERVED_PACE: Nanos = Nanos(10_000_000);

/// `last + pace × ahead`, saturating: a use far in the future stays far. In any unit
/// (the replay's fixed-point nanoseconds too).
pub fn due_fixed(last: u128, pace: u128, ahead: u128) -> u128 {
    last.saturating_add(ahead.saturating_mul(pace))
}

/// When a scan last served at `last` with `pace` per chunk reaches a chunk `ahead`
/// chunks on.
pub fn due(last: Nanos, pace: Nanos, ahead: u32) -> Nanos {
    let due = due_fixed(last.0.into(), pace.0.into(), ahead.into());
    Nanos(u64::try_from(due).unwrap_or(u64::MAX))
}

/// A scan's observed time per chunk once it has been handed `delivered` chunks (PBM's
/// ReportScanPosition): its time since registration over them.
pub fn observed_pace(registered_at: Nanos, last_served: Nanos, delivered: u32) -> Nanos {
    let elapsed = last_served.saturating_sub(registered_at);
    Nanos(elapsed.0 / u64::from(delivered.max(1)))
}

/// The pace assumed for a scan not yet observed: the mean of the observed ones,
/// [`UNOBSERVED_PACE`] before any is.
pub fn mean_pace(paces: &[Option<Nanos>]) -> Nanos {
    let (sum, n) = paces
        .iter()
        .flatten()
        .fold((0u128, 0u128), |(s, n), p| (s + u128::from(p.0), n + 1));
    match n {
        0 => UNOBSERVED_PACE,
        n => Nanos((sum / n) as u64),
    }
}

/// The observed pace of every scan slot (`None`: no delivery yet) and the pace assumed
/// for the others.
#[derive(Clone, Copy, Debug)]
pub struct Paces<'a> {
    pub observed: &'a [Option<Nanos>],
    /// Assumed for a scan not yet observed.
    pub unobserved: Nanos,
}

impl<'a> Paces<'a> {
    /// `observed`, with their mean for the scans not yet observed.
    pub fn new(observed: &'a [Option<Nanos>]) -> Self {
        Paces {
            observed,
            unobserved: mean_pace(observed),
        }
    }

    pub fn of(&self, slot: ScanSlot) -> Nanos {
        self.observed
            .get(slot.index())
            .copied()
            .flatten()
            .unwrap_or(self.unobserved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_saturates_and_paces_average() {
        assert_eq!(due(Nanos(5), Nanos(10), 3), Nanos(35));
        assert_eq!(due(Nanos(u64::MAX - 1), Nanos(10), 3), Nanos(u64::MAX));
        assert_eq!(due(Nanos(1), Nanos(u64::MAX), 2), Nanos(u64::MAX));
        assert_eq!(observed_pace(Nanos(100), Nanos(400), 3), Nanos(100));
        assert_eq!(mean_pace(&[None, None]), UNOBSERVED_PACE);
        let paces = [Some(Nanos(10)), None, Some(Nanos(30))];
        let paces = Paces::new(&paces);
        assert_eq!(
            (paces.of(ScanSlot(0)), paces.of(ScanSlot(1))),
            (Nanos(10), Nanos(20))
        );
    }
}
