//! `coopscan bench` against hostile flags and report files, through the binary: every
//! refusal is a clear error (exit 1, or clap's 2 for a flag it parses) that comes before
//! the dataset is generated — never a panic (101), a hang, a run that eats the machine's
//! memory, or a silent exit 0 without what was asked for. Each command runs under a
//! deadline, so a hang fails the test instead of stalling it.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::assert_nothing_generated;

/// What a refused command may take: it fails before generating data or calibrating.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(60);

fn command(args: &[&str], data: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_coopscan"));
    cmd.args(args)
        .env("COOPSCAN_DATA", data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Drains a pipe on its own thread (a full pipe would block the child).
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut bytes);
        }
        bytes
    })
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `cmd` to its end, or kills it at `limit` and fails the test (a hang).
fn output_within(mut cmd: Command, limit: Duration, what: &str) -> Output {
    let mut child = cmd.spawn().expect("spawn coopscan");
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() >= deadline {
            kill(&mut child);
            let err = err.join().expect("stderr");
            panic!(
                "{what}: still running after {limit:?} (a hang); stderr:\n{}",
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
    }
}

/// A refusal: exit 1 (ours) or 2 (clap's), an `error:` line, no panic; returns stderr.
fn assert_refused(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "{what}: expected a refusal, got {:?}; stderr:\n{err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{what} panicked: {err}");
    assert!(
        err.starts_with("error: ") || err.contains("\nerror: "),
        "{what}: {err}"
    );
    err
}

/// A bench that would be short if it ran: SF 0.01, 1 MB chunks, 2 streams (unless
/// `extra` sets them) × 1 query, one policy, reports in `dir`; then `extra`.
fn small_bench(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "bench",
        "--sf",
        "0.01",
        "--chunk-mb",
        "1",
        "--queries",
        "1",
        "--policies",
        "normal",
        "--standalone-runs",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if !extra.contains(&"--streams") {
        args.extend(["--streams".to_string(), "2".to_string()]);
    }
    for (flag, name) in [("--json", "r.json"), ("--html", "r.html")] {
        args.push(flag.to_string());
        args.push(dir.join(name).to_string_lossy().into_owned());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// `--stagger-s 1e20` (also 1.8e19, 1e308) panicked converting float seconds to a
/// `Duration` after the calibration, `1e19` panicked a stream thread, and `1e12` was
/// accepted: the streams would have waited 31 700 years. A stagger is now at most
/// `MAX_STAGGER_S`, checked when the flag is parsed.
#[test]
fn bench_refuses_an_absurd_stagger_up_front() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for value in [
        "1e20", "1.8e19", "1e308", "1e19", "1e12", "3601", "-1", "NaN", "inf",
    ] {
        let flag = format!("--stagger-s={value}");
        let args = small_bench(tmp.path(), &[&flag]);
        let what = format!("--stagger-s {value}");
        let out = output_within(command(&refs(&args), tmp.path()), REFUSAL_DEADLINE, &what);
        let err = assert_refused(&out, &what);
        assert!(
            err.contains("--stagger-s") && err.contains("3600"),
            "{what} must name the flag and its bound: {err}"
        );
        assert_nothing_generated(tmp.path(), &what);
    }
}

/// `--slow-extra 100000` was accepted and the bench was still calibrating 45 s later
/// (every SLOW query planned 100 000 aggregates). Now at most `SLOW_EXTRA_MAX`.
#[test]
fn bench_refuses_slow_extra_beyond_its_bound() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for value in ["100000", "257", "4294967295"] {
        let args = small_bench(tmp.path(), &["--slow-extra", value]);
        let what = format!("--slow-extra {value}");
        let out = output_within(command(&refs(&args), tmp.path()), REFUSAL_DEADLINE, &what);
        let err = assert_refused(&out, &what);
        assert!(
            err.contains("--slow-extra") && err.contains("256"),
            "{what} must name the flag and its bound: {err}"
        );
        assert_nothing_generated(tmp.path(), &what);
    }
    let help = output_within(
        command(&["bench", "--help"], tmp.path()),
        REFUSAL_DEADLINE,
        "bench --help",
    );
    let help = String::from_utf8_lossy(&help.stdout);
    let line = help
        .lines()
        .skip_while(|l| !l.contains("--slow-extra"))
        .take(4)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(line.contains("256"), "the help states the bound: {line}");
}

/// A report whose calibration is the given bandwidth (the rest a real calibration).
fn calibration_report(bandwidth: &str) -> String {
    format!(
        r#"{{"calibration": {{"input": {{"fast_cpu_s": 1.0, "slow_cpu_s": 3.5,
        "fast_read_bytes": 700000000, "query_parallelism": 1.0,
        "slow_cpu_over_fast_read": 1.75}}, "bandwidth_mb_s": {bandwidth},
        "fast_read_s": 2.0, "fast_cpu_over_read": 0.5, "slow_cpu_over_read": 1.75,
        "note": "n"}}}}"#
    )
}

/// A report with `bandwidth_mb_s` 1e-300 printed a 300-digit estimate and exited 101;
/// 1e300 ran with a nonsense estimate. A report's bandwidth now passes the checks of
/// `--bandwidth-mb` (one type, one message), and so do the flag's own values.
#[test]
fn a_calibrations_bandwidth_passes_the_flags_checks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bounds = |err: &str| err.contains("0.001") && err.contains("1000000");
    for bandwidth in ["1e-300", "1e300", "0.0009", "1000001", "0", "-5"] {
        let file = tmp.path().join("calibration.json");
        std::fs::write(&file, calibration_report(bandwidth)).expect("write");
        let file = file.to_string_lossy().into_owned();
        let args = small_bench(tmp.path(), &["--calibration", &file]);
        let what = format!("a calibration of {bandwidth} MB/s");
        let out = output_within(command(&refs(&args), tmp.path()), REFUSAL_DEADLINE, &what);
        let err = assert_refused(&out, &what);
        assert!(
            err.contains("calibration.json") && bounds(&err),
            "{what}: must name the file and the bounds: {err}"
        );
        assert_nothing_generated(tmp.path(), &what);
    }
    for bandwidth in ["1e300", "1e-300", "0.0009", "NaN", "inf", "-5"] {
        let flag = format!("--bandwidth-mb={bandwidth}");
        let args = small_bench(tmp.path(), &[&flag]);
        let what = format!("--bandwidth-mb {bandwidth}");
        let out = output_within(command(&refs(&args), tmp.path()), REFUSAL_DEADLINE, &what);
        let err = assert_refused(&out, &what);
        assert!(
            err.contains("--bandwidth-mb") && bounds(&err),
            "{what}: {err}"
        );
        assert_nothing_generated(tmp.path(), &what);
    }
}

/// `--calibration /dev/zero` grew to 24 GB until the kernel killed it, and a FIFO
/// blocked forever: the size was checked with `metadata().len()`, which is 0 for
/// both. Now the file must be a regular file, read at most up to its limit. The
/// command runs under a 4 GiB address-space limit, so that a regression fails here
/// (an allocation failure) rather than exhausting the machine.
#[test]
fn a_calibration_must_be_a_small_regular_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = tmp.path().join("fifo.json");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success(), "mkfifo");
    let huge = tmp.path().join("huge.json");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len((512 << 20) + 1))
        .expect("sparse file");
    let dir = tmp.path().join("a-directory");
    std::fs::create_dir(&dir).expect("mkdir");
    let cases = [
        (Path::new("/dev/zero"), "not a regular file"),
        (fifo.as_path(), "not a regular file"),
        (dir.as_path(), "not a regular file"),
        (huge.as_path(), "limit"),
    ];
    for (path, says) in cases {
        let path = path.to_string_lossy().into_owned();
        let args = small_bench(tmp.path(), &["--calibration", &path]);
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("ulimit -v 4194304 && exec \"$@\"")
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_coopscan"))
            .args(&args)
            .env("COOPSCAN_DATA", tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let what = format!("--calibration {path}");
        let out = output_within(cmd, REFUSAL_DEADLINE, &what);
        let err = assert_refused(&out, &what);
        assert!(err.contains(&path) && err.contains(says), "{what}: {err}");
        assert_nothing_generated(tmp.path(), &what);
    }
}

/// The bench's announced duration left out the stagger: with `--stagger-s 1e12` it
/// said "expect roughly 1 min". With 16 streams 3000 s apart the last stream starts
/// 12.5 h in, and the estimate must say at least that. The bench is stopped as soon
/// as it has said it.
#[test]
fn the_estimate_includes_the_stagger() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let args = small_bench(tmp.path(), &["--streams", "16", "--stagger-s", "3000"]);
    let mut child = command(&refs(&args), tmp.path()).spawn().expect("spawn");
    let _out = drain(child.stdout.take());
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut seen = Vec::new();
    let estimate = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("expect roughly") => break line,
            Ok(line) => seen.push(line),
            Err(_) => {
                kill(&mut child);
                panic!("no estimate within 300 s; stderr:\n{}", seen.join("\n"));
            }
        }
    };
    kill(&mut child);
    let seconds = estimate_seconds(&estimate);
    let last_start = 15.0 * 3000.0;
    assert!(
        seconds >= last_start,
        "the estimate ({estimate}) is shorter than the last stream's start, {last_start} s"
    );
}

/// The duration in "… expect roughly N UNIT …", in seconds (UNIT: min, h or days).
fn estimate_seconds(line: &str) -> f64 {
    let rest = line
        .split("expect roughly ")
        .nth(1)
        .unwrap_or_else(|| panic!("no estimate in {line:?}"));
    let mut words = rest.split_whitespace();
    let number: f64 = words
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"));
    let unit = words.next().unwrap_or_default();
    let per = match unit.trim_end_matches([',', ';', '(']) {
        "min" => 60.0,
        "h" => 3600.0,
        "days" | "day" => 86400.0,
        other => panic!("unit {other:?} in {line:?}"),
    };
    number * per
}

/// `--engines duckdb` or `postgres` with the peer missing printed "*** SKIPPING" and
/// exited 0, a report without the engine asked for; with an empty PATH the message
/// named the peers directory. An engine named in `--engines` that cannot run is now an
/// error naming the missing program, before any data is generated.
#[test]
fn an_engine_asked_for_that_cannot_run_is_an_error_naming_the_program() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let only_sh = tmp.path().join("only-sh");
    std::fs::create_dir(&only_sh).expect("mkdir");
    std::os::unix::fs::symlink("/bin/sh", only_sh.join("sh")).expect("symlink");
    let cases = [
        ("duckdb", "", "`sh`"),
        ("postgres", "", "`sh`"),
        ("duckdb", only_sh.to_str().expect("utf8"), "`python3`"),
        ("coopscan,duckdb", "", "`sh`"),
    ];
    for (engines, path, program) in cases {
        let args = small_bench(tmp.path(), &["--engines", engines]);
        let mut cmd = command(&refs(&args), tmp.path());
        cmd.env("PATH", path);
        let what = format!("--engines {engines} with PATH={path:?}");
        let out = output_within(cmd, REFUSAL_DEADLINE, &what);
        let err = assert_refused(&out, &what);
        assert!(!err.contains("SKIPPING"), "{what}: {err}");
        assert!(
            err.contains(program) && err.contains("--engines"),
            "{what} must name {program}: {err}"
        );
        assert_nothing_generated(tmp.path(), &what);
    }
}
