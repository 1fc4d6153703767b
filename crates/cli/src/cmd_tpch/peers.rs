//! The TPC-H presets' peers (`--engines coopscan,duckdb,datafusion-parquet`): the same
//! streams' statements on DuckDB's own file and on plain DataFusion over Parquet files
//! of the same rows (`coopscan_peers::tpch`), on the same throttled device (a blkio
//! cgroup at the point's bandwidth), every result checked against coopscan's. Memory:
//! DuckDB's `memory_limit` is the point's buffer, doubled while it runs out of memory
//! (it holds its operators' memory in the same budget; at SF1's 45 MB it cannot run 4
//! streams) up to the most coopscan's runs of the round grew beyond its idle process
//! (buffer and operators); DataFusion has no buffer and keeps no page cache.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Context;
use coopscan_bench::tpch_throughput::TpchRun;
use coopscan_lab::data_dir::data_root;
use coopscan_peers::tpch::{PeerLimits, TpchData, TpchPeer};

use super::throughput::{Conditions, PolicyRun, Results, Setup};
use crate::session_args::OpenTables;

/// What `--engines` asked for: whether coopscan runs, and which peers.
pub struct Engines {
    pub coopscan: bool,
    pub peers: Vec<TpchPeer>,
}

/// Parses `--engines` (coopscan, duckdb, datafusion-parquet), checking that every peer
/// named can run here before any work.
pub fn parse_engines(list: &str) -> anyhow::Result<Engines> {
    let mut engines = Engines {
        coopscan: false,
        peers: Vec::new(),
    };
    for name in list.split(',').map(str::trim) {
        if name == "coopscan" {
            engines.coopscan = true;
            continue;
        }
        let peer = TpchPeer::by_name(name).with_context(|| {
            format!(
                "--engines: unknown engine {name:?} for the TPC-H presets (known: coopscan, \
                 duckdb, datafusion-parquet)"
            )
        })?;
        if !engines.peers.contains(&peer) {
            engines.peers.push(peer);
        }
    }
    // The peers' results are checked against coopscan's, and their memory is its.
    anyhow::ensure!(
        engines.coopscan,
        "--engines: the TPC-H presets need coopscan (its results check every peer's, \
         and its memory is theirs)"
    );
    for peer in &engines.peers {
        let name = peer.name();
        peer.check_installed()
            .with_context(|| format!("--engines {name}: {name} cannot run here"))?;
    }
    Ok(engines)
}

/// The peers of a preset run, set up.
pub struct Peers {
    data: TpchData,
    peers: Vec<TpchPeer>,
    use_cgroups: bool,
    /// The `memory_limit` DuckDB ran with at each (buffer, streams): a later round
    /// starts there instead of running out of memory again.
    found: Mutex<HashMap<(u64, usize), u64>>,
}

impl Peers {
    /// The peers' copy of the database `db` (cached), and whether they can be confined.
    pub fn prepare(peers: Vec<TpchPeer>, open: &OpenTables, db: &Path) -> anyhow::Result<Peers> {
        let cache = cache_dir(db)?;
        let started = Instant::now();
        eprintln!(
            "[peers] their copy of {} in {}",
            db.display(),
            cache.display()
        );
        let data = TpchData::prepare(&open.names, &open.tables, &cache)
            .context("setting up the peers' copy of the database")?;
        eprintln!("[peers] ready in {:.1} s", started.elapsed().as_secs_f64());
        Ok(Peers {
            data,
            peers,
            use_cgroups: coopscan_lab::peers::cgroups_usable(),
            found: Mutex::default(),
        })
    }

    pub fn peers(&self) -> &[TpchPeer] {
        &self.peers
    }

    /// The first `streams` streams at once on `peer` on the device of `conditions`,
    /// its memory the point's buffer, raised up to `most_memory_bytes` (coopscan's
    /// buffer and operators) where it needs more; every result checked against
    /// coopscan's.
    pub fn run(
        &self,
        peer: TpchPeer,
        setup: &Setup,
        streams: usize,
        conditions: Conditions,
        most_memory_bytes: u64,
        results: &mut Results,
    ) -> anyhow::Result<PolicyRun> {
        let sqls = setup
            .streams
            .iter()
            .take(streams)
            .map(|params| params.iter().map(|p| Ok(p.sql()?)).collect())
            .collect::<anyhow::Result<Vec<Vec<String>>>>()?;
        let buffer = conditions.buffer_bytes.unwrap_or(0);
        let key = (buffer, streams);
        let found = match peer {
            TpchPeer::DuckDb => self.found.lock().ok().and_then(|f| f.get(&key).copied()),
            TpchPeer::DataFusionParquet => None,
        };
        let limits = PeerLimits {
            bandwidth_mb_s: conditions.bandwidth_mb_s,
            memory_bytes: found.unwrap_or(buffer),
            most_memory_bytes: most_memory_bytes.max(buffer),
            use_cgroups: self.use_cgroups,
        };
        let done = self
            .data
            .run_streams(peer, &sqls, &limits)
            .with_context(|| format!("the streams on {}", peer.name()))?;
        if let (TpchPeer::DuckDb, Ok(mut f), Some(m)) = (peer, self.found.lock(), done.memory_bytes)
        {
            f.insert(key, m);
        }
        for (s, stream) in done.rows.into_iter().enumerate() {
            for (q, (params, rows)) in setup.streams[s].iter().zip(stream).enumerate() {
                results.record_peer((s + 1, q), peer.name(), params, rows)?;
            }
        }
        let avg = done.stream_s.iter().sum::<f64>() / done.stream_s.len().max(1) as f64;
        let run = TpchRun {
            policy: peer.name().to_string(),
            streams: done.stream_s.len(),
            avg_stream_s: avg,
            max_stream_s: done.stream_s.iter().copied().fold(0.0, f64::max),
            stream_s: done.stream_s,
            cpu_s: done.cpu_s,
            // From the disk when confined; otherwise what its processes read.
            bytes_read: done.disk_read_bytes.unwrap_or(done.read_bytes),
            piece_loads: None,
            opt_piece_loads: None,
            opt_bytes: None,
            rounds_avg_stream_s: vec![avg],
            memory_bytes: done.memory_bytes,
            engine_version: Some(done.version),
        };
        Ok(PolicyRun {
            run,
            trace: None,
            registered: Default::default(),
        })
    }
}

/// Where the peers keep their copy of `db`: below the data directory, named after the
/// database's absolute path.
fn cache_dir(db: &Path) -> anyhow::Result<PathBuf> {
    let absolute =
        std::fs::canonicalize(db).with_context(|| format!("the database {}", db.display()))?;
    let name: String = absolute
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(data_root().join("peers").join("tpch").join(name))
}
