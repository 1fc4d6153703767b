//! The runtime's lock, condition variables and threads, in one place: parking_lot's and
//! std's by default; with the `shuttle` feature, shuttle's, so `tests/handoff.rs` runs
//! the real runtime under shuttle's scheduler and explores the interleavings of scans
//! and loaders deterministically (a seed replays a failing one). The API is
//! parking_lot's (no poisoning: a panicking thread leaves the state to the others,
//! which `loader::run` relies on).

#[cfg(not(feature = "shuttle"))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};
    pub(crate) use std::thread::{Builder, JoinHandle};
}

#[cfg(feature = "shuttle")]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::sync::PoisonError;

    pub(crate) use shuttle::thread::{Builder, JoinHandle};

    /// shuttle's mutex with parking_lot's API.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(shuttle::sync::Mutex<T>);

    /// A guard that can be given up and taken back in place (`wait`, `unlocked`).
    pub(crate) struct MutexGuard<'a, T> {
        mutex: &'a shuttle::sync::Mutex<T>,
        guard: Option<shuttle::sync::MutexGuard<'a, T>>,
    }

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(shuttle::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            let guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            MutexGuard {
                mutex: &self.0,
                guard: Some(guard),
            }
        }
    }

    impl<T> MutexGuard<'_, T> {
        /// Runs `f` with the lock released, and takes it back.
        pub(crate) fn unlocked<R>(this: &mut Self, f: impl FnOnce() -> R) -> R {
            this.guard = None;
            let out = f();
            this.guard = Some(this.mutex.lock().unwrap_or_else(PoisonError::into_inner));
            out
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.guard.as_deref().expect("a guard holds its lock")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.guard.as_deref_mut().expect("a guard holds its lock")
        }
    }

    /// shuttle's condition variable with parking_lot's API.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(shuttle::sync::Condvar);

    impl Condvar {
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let held = guard.guard.take().expect("a guard holds its lock");
            let held = self.0.wait(held).unwrap_or_else(PoisonError::into_inner);
            guard.guard = Some(held);
        }

        /// `wait` for at most `timeout`; the result says whether it timed out.
        pub(crate) fn wait_for<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            timeout: std::time::Duration,
        ) -> shuttle::sync::WaitTimeoutResult {
            let held = guard.guard.take().expect("a guard holds its lock");
            let (held, result) =
                (self.0.wait_timeout(held, timeout)).unwrap_or_else(PoisonError::into_inner);
            guard.guard = Some(held);
            result
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

pub(crate) use imp::{Builder, Condvar, JoinHandle, Mutex, MutexGuard};

/// Bugs the handoff test injects to show that it catches them (only with the `shuttle`
/// feature; the default build has no such switch).
#[cfg(feature = "shuttle")]
pub mod inject {
    use std::sync::atomic::{AtomicBool, Ordering};

    static LOST_WAKEUP: AtomicBool = AtomicBool::new(false);

    /// A parked scan sleeps before looking at its slot (`parking.rs`): the classic lost
    /// wakeup, where an answer handed between the scan's letting go of the lock and its
    /// wait is missed and the scan sleeps with its chunk in the slot.
    pub fn lost_wakeup(on: bool) {
        LOST_WAKEUP.store(on, Ordering::SeqCst);
    }

    pub(crate) fn lost_wakeup_on() -> bool {
        LOST_WAKEUP.load(Ordering::SeqCst)
    }
}
