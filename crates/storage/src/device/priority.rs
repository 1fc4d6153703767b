//! Query threads give way to the loader. The loader needs a core between reads (to pin
//! the next O_DIRECT buffer's pages and to hand out the chunk it read); when the
//! queries' threads saturate the cores it waits for one, and the device delivers less
//! than the disk can: under relevance at the calibrated Table 2 balance 561 MB/s against
//! 879 under normal, on a disk that reads 1.2 GB/s (docs/performance.md, "The split over
//! many workloads"). A thread that decodes a scan's chunks (a feeder) therefore makes
//! itself nicer than the loader, which keeps the nice value it inherited: raising one's
//! own nice value needs no privilege, lowering the loader's would.

/// How much nicer than the loader a feeder runs: under Linux's CFS a thread 5 nicer
/// weighs about a third, so a waking loader is run ahead of the feeders.
pub const FEEDER_NICER_BY: i32 = 5;

/// The largest nice value Linux takes.
#[cfg(target_os = "linux")]
const NICE_MAX: i32 = 19;

/// Makes the calling thread `by` nicer than it is (at most nice 19; Linux, elsewhere
/// nothing). Relative, so a process started under `nice` keeps its feeders below its
/// loader; an error only if the calls fail.
pub fn make_current_thread_nicer(by: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let nice = current_thread_nice()?.saturating_add(by).min(NICE_MAX);
        // SAFETY: gettid and setpriority take and return plain integers; no memory of
        // ours is touched. On Linux the nice value is per thread, and setpriority on a
        // thread id changes that thread alone.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = by;
    Ok(())
}

/// The calling thread's nice value.
#[cfg(target_os = "linux")]
fn current_thread_nice() -> std::io::Result<i32> {
    // SAFETY: as above. The raw system call returns 20 - nice (1 to 40), so a negative
    // value is an error, never a nice value (libc's getpriority returns -1 for both).
    let raw = unsafe {
        let tid = libc::syscall(libc::SYS_gettid);
        libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, tid)
    };
    match i32::try_from(raw) {
        Ok(raw @ 1..=40) => Ok(20 - raw),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_makes_itself_nicer_and_no_other() {
        let before = current_thread_nice().expect("nice");
        let set = std::thread::spawn(|| {
            make_current_thread_nicer(FEEDER_NICER_BY).expect("nicer");
            current_thread_nice().expect("nice")
        });
        let after = set.join().expect("thread");
        assert_eq!(after, (before + FEEDER_NICER_BY).min(19));
        assert_eq!(
            current_thread_nice().expect("nice"),
            before,
            "the spawner changed"
        );
    }
}
