//! The most memory this process held at once over a run (its peak resident set, Linux's
//! `VmHWM`) beyond its idle size (`VmRSS` before any run), which the TPC-H runs report
//! and give their peers as a budget. Measured from the idle size, not from the size at
//! the run's start: memory an earlier run freed stays with the allocator and is reused,
//! so the growth within one run would miss it.

/// Starts a new peak: Linux resets `VmHWM` to the current resident set when `5` is
/// written to `/proc/self/clear_refs`. `false` where it cannot (not Linux, or too old
/// a kernel); [`peak_rss_bytes`] then reports the peak since the process started.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The peak resident set since the process started or [`reset_peak_rss`] last ran, in
/// bytes; `None` where `/proc/self/status` cannot say.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_hwm_bytes(&status)
}

/// The resident set now, in bytes.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_bytes(&status, "VmRSS:")
}

fn vm_hwm_bytes(status: &str) -> Option<u64> {
    status_bytes(status, "VmHWM:")
}

/// The `field:  1234 kB` line of a `/proc/PID/status` text (`VmRSS:`), in bytes.
pub fn status_bytes(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_read_from_the_status_text() {
        let status = "Name:\tx\nVmPeak:\t  999 kB\nVmHWM:\t   13548 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(vm_hwm_bytes(status), Some(13548 * 1024));
        assert_eq!(vm_hwm_bytes("Name:\tx\n"), None);
        assert_eq!(status_bytes(status, "VmRSS:"), Some(1024));
    }

    #[test]
    fn a_reset_peak_falls_below_a_peak_that_was_touched_before() {
        if !reset_peak_rss() {
            eprintln!("skipped: no /proc/self/clear_refs here");
            return;
        }
        let before = peak_rss_bytes().unwrap();
        let mut big = vec![0u8; 64 << 20];
        for i in (0..big.len()).step_by(4096) {
            big[i] = 1;
        }
        let touched = peak_rss_bytes().unwrap();
        assert!(touched >= before + (60 << 20), "{before} → {touched}");
        drop(big);
        assert!(reset_peak_rss());
        let after = peak_rss_bytes().unwrap();
        assert!(after + (32 << 20) < touched, "{touched} → {after}");
    }
}
