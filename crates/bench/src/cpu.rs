//! Process CPU time, for Table 2's "CPU use": user + system seconds of the whole process
//! (every engine thread) over wall time × available cores.

use std::time::Duration;

/// User + system CPU time consumed by this process so far (every thread): the
/// process CPU-time clock.
pub fn process_cpu_time() -> Duration {
    use rustix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::ProcessCPUTime);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(t.tv_nsec).unwrap_or(0);
    Duration::new(secs, nanos)
}

/// Cores this process may run on (1 when unknown).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CPU use in 0..=1: `cpu` spent over `wall` on `cores` cores.
pub fn cpu_use(cpu: Duration, wall: Duration, cores: usize) -> f64 {
    let capacity = wall.as_secs_f64() * cores.max(1) as f64;
    if capacity > 0.0 {
        cpu.as_secs_f64() / capacity
    } else {
        0.0
    }
}

/// Measures process CPU time (and wall time) spent in `work`.
pub fn measure<T>(work: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let cpu_before = process_cpu_time();
    let start = std::time::Instant::now();
    let value = work();
    let wall = start.elapsed();
    (value, process_cpu_time().saturating_sub(cpu_before), wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_shows_up_as_cpu_time() {
        // Spin until this process has burnt 30 ms of CPU (on a loaded machine that can
        // take much longer than 30 ms of wall time, hence no wall-time deadline below 5 s).
        let (_, cpu, wall) = measure(|| {
            let mut x = 0u64;
            let (cpu0, start) = (process_cpu_time(), std::time::Instant::now());
            while process_cpu_time().saturating_sub(cpu0) < Duration::from_millis(30)
                && start.elapsed() < Duration::from_secs(5)
            {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            x
        });
        assert!(cpu >= Duration::from_millis(30), "cpu {cpu:?} in {wall:?}");
        assert!(wall >= Duration::from_millis(15), "wall {wall:?}");
    }

    #[test]
    fn cpu_use_is_a_fraction_of_all_cores() {
        let use_ = cpu_use(Duration::from_secs(3), Duration::from_secs(2), 2);
        assert!((use_ - 0.75).abs() < 1e-12);
        assert_eq!(cpu_use(Duration::from_secs(1), Duration::ZERO, 2), 0.0);
    }
}
