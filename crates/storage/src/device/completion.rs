//! When a request read early is delivered by the emulated disk.
//!
//! [`Device::read_early`](super::Device::read_early) does the real read and returns at
//! once with a [`Completion`]: the instant the emulated (throttled) disk would have
//! finished the transfer. The caller may work on the bytes meanwhile (the loader
//! verifies their checksums) but must [`wait`](Completion::wait) before anyone else
//! sees them. This is how a pipelined loader behaves on a real disk — it verifies one
//! chunk while the disk transfers the next — without giving the buffer manager a second
//! load in flight: the disk stays busy and its bandwidth is what the throttle says.

use std::thread;
use std::time::{Duration, Instant};

/// The emulated disk's completion of one or more requests; `Default` is "already done".
#[must_use = "the bytes are not delivered until the emulated disk is done: call wait()"]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    due: Option<Instant>,
}

impl Completion {
    pub(super) fn at(due: Option<Instant>) -> Completion {
        Completion { due }
    }

    /// Completion of both this and `other` (a load of several requests is delivered
    /// when its last request is).
    pub fn and(self, other: Completion) -> Completion {
        Completion {
            due: self.due.max(other.due),
        }
    }

    /// The instant the emulated disk delivers; `None`: already (nothing was throttled).
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Time left until delivery, as of `now`.
    pub fn remaining(&self, now: Instant) -> Duration {
        self.due
            .map_or(Duration::ZERO, |due| due.saturating_duration_since(now))
    }

    /// Sleeps until the emulated disk is done; returns the time slept.
    pub fn wait(self) -> Duration {
        self.due
            .map_or(Duration::ZERO, |due| sleep_until(due, Instant::now()))
    }
}

/// Sleeps until `due` if it is after `now`; returns the time actually slept.
pub(super) fn sleep_until(due: Instant, now: Instant) -> Duration {
    if due <= now {
        return Duration::ZERO;
    }
    thread::sleep(due - now);
    now.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_later_completion_wins() {
        let now = Instant::now();
        let a = Completion::at(Some(now + Duration::from_millis(5)));
        let b = Completion::at(Some(now + Duration::from_millis(9)));
        assert_eq!(a.and(b), b);
        assert_eq!(Completion::default().and(a), a);
        assert_eq!(Completion::default().remaining(now), Duration::ZERO);
        assert_eq!(b.remaining(now), Duration::from_millis(9));
    }

    #[test]
    fn waiting_reaches_the_due_instant() {
        let due = Instant::now() + Duration::from_millis(20);
        Completion::at(Some(due)).wait();
        assert!(Instant::now() >= due);
    }
}
