//! Query threads give way to the loader. The loader needs a core between reads (to pin
//! the next O_DIRECT buffer's pages and to hand out the chunk it read); when the
//! queries' threads saturate the cores it waits for one, and the device delivers less
//! than the disk can: under relevance at the calibrated Table 2 balance 561 MB/s against
//! 879 under normal, on a disk that reads 1.2 GB/s (docs/performance.md, "The split over
//! many workloads"). A thread that decodes a scan's chunks (a feeder) therefore runs at a
//! higher nice value than the loader, which keeps the default: raising one's nice value
//! needs no privilege, lowering the loader's would.

/// The nice value a feeder runs at: under Linux's CFS a nice-5 thread weighs about a
/// third of a nice-0 one, so a waking loader is run ahead of the feeders.
pub const FEEDER_NICE: i32 = 5;

/// Runs the calling thread at nice `nice` (Linux; elsewhere nothing). An error when the
/// thread's nice value is already higher (lowering it back needs privilege) or the call
/// fails; the caller may go on at its inherited priority.
pub fn set_current_thread_nice(nice: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take and return plain integers; no memory of
        // ours is touched. On Linux the nice value is per thread, and setpriority on a
        // thread id changes that thread alone.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The nice value of the calling thread, read back from the kernel.
    fn current_nice() -> i32 {
        // SAFETY: as above; getpriority returns the nice value (-1 is a valid one, and
        // errno is not needed here: the test sets values other than -1).
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        }
    }

    #[test]
    fn a_thread_sets_its_own_nice_and_no_other() {
        let before = current_nice();
        let set =
            std::thread::spawn(|| set_current_thread_nice(FEEDER_NICE).map(|()| current_nice()));
        let got = set.join().expect("thread");
        // A process already nicer than FEEDER_NICE may not go back: then the call fails.
        match got {
            Ok(nice) => assert_eq!(nice, FEEDER_NICE),
            Err(e) => assert!(before > FEEDER_NICE, "set failed at nice {before}: {e}"),
        }
        assert_eq!(current_nice(), before, "the spawning thread changed too");
    }
}
