//! Runs the 2012 paper's simulated presets without the CLI (which needs DataFusion to
//! build): `pbm-buffer`, `pbm-bandwidth`, `pbm-streams`, `pbm-sharing`, `mixed-pool`
//! (which runs its own fixed policies), and prints their tables.
//!
//! ```text
//! cargo run -p coopscan-sim --release --example pbm_presets -- pbm-bandwidth \
//!     [--policies normal,pbm,pbm-lru,relevance] [--seed 42] [--json FILE]
//! ```
//!
//! `pbm-bandwidth` also takes `--cores N`, `--clock-ghz G` and `--slow-cost-ratio R`
//! (SLOW's CPU cost per chunk over FAST's, total CPU work kept): see
//! `coopscan_sim::PbmBandwidthOptions`.

use coopscan_buffer::PolicyKind;
use coopscan_sim::experiments::{
    bandwidth_points, buffer_points, defs, in_order_points, stream_points,
};
use coopscan_sim::{
    mixed_pool, mixed_pool_text, pbm_bandwidth_text, pbm_bandwidth_with, pbm_buffer,
    pbm_buffer_text, pbm_lru_hot, pbm_lru_hot_text, pbm_sharing, pbm_sharing_text, pbm_streams,
    pbm_streams_text, PbmBandwidthOptions, PresetName,
};
use std::process::ExitCode;

const DEFAULT_POLICIES: &str = "normal,pbm,pbm-lru,relevance";
const DEFAULT_SEED: u64 = 42;

/// The example's own experiment (`coopscan_sim::pbm_lru_hot`).
const HOT: &str = "pbm-lru-hot";

struct Args {
    /// `None`: [`HOT`].
    preset: Option<PresetName>,
    policies: Vec<PolicyKind>,
    seed: u64,
    json: Option<String>,
    /// The machine of `pbm-bandwidth` (its flags are refused for the other presets).
    bandwidth: PbmBandwidthOptions,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let name = it
        .next()
        .ok_or("usage: pbm_presets PRESET [--policies a,b] [--seed N] [--json F]")?;
    // pbm-lru-hot is no paper figure and no CLI preset: a name of this example only.
    let preset = match name.as_str() {
        HOT => None,
        _ => Some(name.parse::<PresetName>().map_err(|e| format!("{e}"))?),
    };
    let (mut policies, mut seed, mut json) = (DEFAULT_POLICIES.to_string(), DEFAULT_SEED, None);
    let mut bandwidth = PbmBandwidthOptions::default();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--policies" => policies = value,
            "--seed" => seed = value.parse().map_err(|e| format!("--seed: {e}"))?,
            "--json" => json = Some(value),
            "--cores" | "--clock-ghz" | "--slow-cost-ratio" => {
                if preset != Some(PresetName::PbmBandwidth) {
                    return Err(format!("{flag} is for pbm-bandwidth only"));
                }
                bandwidth_flag(&mut bandwidth, &flag, &value)?;
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let policies = policies
        .split(',')
        .map(|p| p.parse::<PolicyKind>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    Ok(Args {
        preset,
        policies,
        seed,
        json,
        bandwidth,
    })
}

/// One `pbm-bandwidth` machine flag; the simulator checks the ranges.
fn bandwidth_flag(o: &mut PbmBandwidthOptions, flag: &str, value: &str) -> Result<(), String> {
    let number = |v: &str| v.parse::<f64>().map_err(|e| format!("{flag}: {e}"));
    match flag {
        "--cores" => o.cores = value.parse().map_err(|e| format!("{flag}: {e}"))?,
        // GHz on the command line; a non-finite product is refused by the simulator.
        "--clock-ghz" => o.clock_hz = number(value)? * 1e9,
        _ => o.slow_over_fast_cpu = Some(number(value)?),
    }
    Ok(())
}

fn run(args: &Args) -> Result<(String, String), String> {
    let err = |e: coopscan_sim::SimError| e.to_string();
    let json = |v: &dyn erased::Json| v.json();
    let Some(preset) = args.preset else {
        let r = pbm_lru_hot(&args.policies, args.seed).map_err(err)?;
        return Ok((pbm_lru_hot_text(&r), json(&r)));
    };
    match preset {
        PresetName::PbmBuffer => {
            let r = pbm_buffer(
                &args.policies,
                args.seed,
                &buffer_points(&defs::PBM_BUFFER).map_err(err)?,
            )
            .map_err(err)?;
            Ok((pbm_buffer_text(&r), json(&r)))
        }
        PresetName::PbmBandwidth => {
            let r = pbm_bandwidth_with(
                &args.policies,
                args.seed,
                &bandwidth_points(&defs::PBM_BANDWIDTH).map_err(err)?.1,
                &args.bandwidth,
            )
            .map_err(err)?;
            Ok((pbm_bandwidth_text(&r), json(&r)))
        }
        PresetName::PbmStreams => {
            let r = pbm_streams(
                &args.policies,
                args.seed,
                &stream_points(&defs::PBM_STREAMS),
            )
            .map_err(err)?;
            Ok((pbm_streams_text(&r), json(&r)))
        }
        PresetName::PbmSharing => {
            let r = pbm_sharing(&args.policies, args.seed).map_err(err)?;
            Ok((pbm_sharing_text(&r), json(&r)))
        }
        PresetName::MixedPool => {
            let r = mixed_pool(
                args.seed,
                &buffer_points(&defs::MIXED_POOL).map_err(err)?,
                &in_order_points(&defs::MIXED_POOL),
            )
            .map_err(err)?;
            Ok((mixed_pool_text(&r), json(&r)))
        }
        other => Err(format!("{other}: use `coopscan sim --preset {other}`")),
    }
}

/// Serializes any report (a tiny object-safe wrapper over serde).
mod erased {
    pub trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
        }
    }
}

fn main() -> ExitCode {
    let outcome = parse().and_then(|args| {
        let (text, json) = run(&args)?;
        println!("{text}");
        if let Some(path) = &args.json {
            std::fs::write(path, json).map_err(|e| format!("writing {path}: {e}"))?;
        }
        Ok(())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pbm_presets: {e}");
            ExitCode::FAILURE
        }
    }
}
