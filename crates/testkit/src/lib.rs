//! What the crash tests share (the delta log's, a transaction's over several tables, a
//! bulk append's): the test binary runs itself again as a child — one of its own tests,
//! which does nothing unless an environment variable names its work — that commits and
//! prints `acked i` after each commit returns; the child dies at a point it planned
//! (`abort` inside the code under test) or is killed at a random instant; the parent
//! then reopens what the child wrote and compares it with the commits acknowledged. A
//! child run under a file-size limit stands for a full disk.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Kills a crash test makes: `COOPSCAN_CRASH_KILLS`, else `default`.
pub fn kills(default: u64) -> u64 {
    std::env::var("COOPSCAN_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs this test binary's test `child` alone with `env` set to `spec`, kills it after
/// `kill_after` if given (else waits for it to die or end), and returns its output.
pub fn run_child(child: &str, env: &str, spec: &str, kill_after: Option<Duration>) -> Output {
    let mut process = Command::new(std::env::current_exe().expect("the test binary"))
        .args([child, "--exact", "--nocapture", "--test-threads=1"])
        .env(env, spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    if let Some(after) = kill_after {
        std::thread::sleep(after);
        // It may have ended already; what it wrote is checked either way.
        let _ = process.kill();
    }
    process.wait_with_output().expect("wait for the child")
}

/// Whether `prlimit` (util-linux) is here to run [`run_child_with_file_limit`].
pub fn has_prlimit() -> bool {
    Command::new("prlimit").arg("--version").output().is_ok()
}

/// [`run_child`] to its end under a file-size limit of `limit` bytes, as a full disk
/// would stop its writes: with `SIGXFSZ` ignored (inherited through exec) a write past
/// the limit fails with `EFBIG` ("File too large") instead of killing it.
pub fn run_child_with_file_limit(child: &str, env: &str, spec: &str, limit: u64) -> Output {
    let exe = std::env::current_exe().expect("the test binary");
    let script = format!(
        "trap '' XFSZ; exec prlimit --fsize={limit} -- '{}' {child} --exact --nocapture --test-threads=1",
        exe.display()
    );
    Command::new("sh")
        .args(["-c", &script])
        .env(env, spec)
        .output()
        .expect("run the child")
}

/// Commits a child acknowledged: one more than the last `acked i` it printed (the test
/// harness may print on the same line before the first).
pub fn acknowledged(stdout: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(stdout);
    let last = text.split("acked ").skip(1).filter_map(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    last.max().map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_are_read_after_the_harness_line() {
        assert_eq!(acknowledged(b""), 0);
        assert_eq!(
            acknowledged(b"running 1 test\ntest child ... acked 0\nacked 1\n"),
            2
        );
        assert_eq!(acknowledged(b"acked 0\nacked 1\nacked 2"), 3);
    }
}
