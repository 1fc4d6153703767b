//! `/proc/PID/stat`, read once per question: the fields the benchmark asks about a
//! process (its state, parent, CPU time, start time).

/// The fields of one process's `/proc/PID/stat` that the peers use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatFields {
    /// Field 3: `R`, `S`, `Z` (zombie), `X` (dead), …
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Fields 14-17: utime + stime + cutime + cstime, in clock ticks.
    pub cpu_ticks: u64,
    /// Field 22: clock ticks after boot when the process started. With the pid it names
    /// one process for good: a reused pid starts later.
    pub start_time: u64,
}

impl StatFields {
    /// Whether the process runs (a zombie or a dead one does not).
    pub fn running(&self) -> bool {
        !matches!(self.state, 'Z' | 'X')
    }
}

/// The fields of `pid`, or `None` if it does not exist (or vanished while being read).
pub fn stat(pid: u32) -> Option<StatFields> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the fields after it
    // follow the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3.
    let field = |n: usize| fields.get(n - 3).copied();
    let cpu_ticks = (14..=17)
        .map(|n| field(n).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0))
        .sum();
    Some(StatFields {
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        cpu_ticks,
        start_time: field(22)?.parse().ok()?,
    })
}

/// Whether `pid` exists and runs.
pub fn running(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.running())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_its_finished_child() {
        let own = stat(std::process::id()).unwrap();
        assert!(own.running() && own.start_time > 0);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not yet reaped: a zombie, no longer running, our child.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while running(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let zombie = stat(pid).unwrap();
        assert_eq!((zombie.state, zombie.ppid), ('Z', std::process::id()));
        child.wait().unwrap();
        assert!(stat(pid).is_none());
    }
}
