//! What a `bench` run scans: its table (lineitem or Table 4's synthetic relation,
//! generated into the cache if missing), the bytes its queries' columns read, and how
//! many of its scans the buffer admits at once.

use std::path::PathBuf;

use anyhow::Context;
use coopscan_bench::presets::Dataset;
use coopscan_bench::{Mix, Params, QueryKind};
use coopscan_exec::{attribute_name, COLUMNS_PER_QUERY, FAST_COLUMNS, SLOW_COLUMNS};
use coopscan_runtime::ADMISSION_CHUNKS_PER_SCAN;
use coopscan_storage::{Layout, Table};

use crate::dataset::ensure_dataset;
use crate::synthetic::{ensure_synthetic, SyntheticSpec, SYNTHETIC_SEED};

/// The table `params` scans, generated into the cache if it is not there yet.
pub fn dataset_of(params: &Params, sf: f64) -> anyhow::Result<PathBuf> {
    let layout: Layout = params.layout.parse()?;
    match params.dataset {
        Dataset::Lineitem => ensure_dataset(sf, layout, params.chunk_mb),
        Dataset::Synthetic { rows, columns } => {
            let spec = SyntheticSpec {
                rows,
                columns,
                seed: SYNTHETIC_SEED,
                layout,
                chunk_mb: params.chunk_mb,
            };
            ensure_synthetic(&spec, None, false)
        }
    }
}

/// The columns of the query whose full read sets the balance and the stagger: FAST's
/// (Q6) for lineitem's mixes, whatever they draw (the calibration measures F-100),
/// else the mix's first kind (Table 4: its 3 attributes).
pub fn reference_columns(mix: &Mix) -> Vec<String> {
    let lineitem = mix
        .speeds
        .iter()
        .any(|k| matches!(k, QueryKind::Fast | QueryKind::Slow));
    let kind = match mix.speeds.first() {
        Some(&first) if !lineitem => first,
        _ => QueryKind::Fast,
    };
    columns_of(kind)
}

/// The columns of the mix's widest query (SLOW reads the most): admission's worst case.
fn widest_columns(mix: &Mix) -> Vec<String> {
    mix.speeds
        .iter()
        .map(|&k| columns_of(k))
        .max_by_key(Vec::len)
        .unwrap_or_default()
}

/// The columns a query of `kind` reads.
fn columns_of(kind: QueryKind) -> Vec<String> {
    let names = |cols: &[&str]| cols.iter().map(|c| c.to_string()).collect();
    match kind {
        QueryKind::Fast => names(&FAST_COLUMNS),
        QueryKind::Slow => names(&SLOW_COLUMNS),
        QueryKind::Columns { first } => {
            let first = usize::from(first);
            (first..first + COLUMNS_PER_QUERY)
                .map(attribute_name)
                .collect()
        }
    }
}

/// Bytes a full scan of `columns` reads: the whole table in NSM/PAX, those columns'
/// extents in DSM.
pub fn projected_bytes(table: &Table, columns: &[String]) -> anyhow::Result<u64> {
    let projection = column_indexes(table, columns)?;
    let bytes = (0..table.chunk_count())
        .flat_map(|k| table.chunk_extents(k, &projection))
        .fold(0u64, |sum, e| sum.saturating_add(e.len));
    Ok(bytes)
}

/// The indexes of `columns` in `table`; an error names a missing one.
fn column_indexes(table: &Table, columns: &[String]) -> anyhow::Result<Vec<usize>> {
    columns
        .iter()
        .map(|c| {
            table
                .schema()
                .index_of(c)
                .with_context(|| format!("the table has no column {c} for this mix's queries"))
        })
        .collect()
}

/// Bytes a full scan of every column reads.
pub fn table_bytes(table: &Table) -> u64 {
    let layout = table.layout();
    (0..table.chunk_count()).fold(0u64, |sum, k| {
        sum.saturating_add(table.chunk(k).extent_bytes(layout))
    })
}

/// The ABM admits a scan only with room for 2 chunks of its own (in DSM and CSM: of its own
/// columns, each at its largest piece): with more streams than that budget holds,
/// some queries wait for others to finish (Figure 7's runs must not, or concurrency is
/// capped below what the run says).
pub fn warn_if_not_all_admitted(table: &Table, params: &Params) -> anyhow::Result<()> {
    let frames = crate::engine::frames_for(table, params.buffer_pct);
    let widest = widest_columns(&params.mix);
    let at_once = admitted_at_once(table, frames, &column_indexes(table, &widest)?);
    if at_once < params.streams as u64 {
        eprintln!(
            "warning: {}: {frames} frames admit only {at_once} of {} concurrent queries \
             ({ADMISSION_CHUNKS_PER_SCAN} chunks of their columns each); a smaller --chunk-mb \
             or a larger --buffer-pct admits all",
            params.label, params.streams
        );
    }
    Ok(())
}

/// Concurrent scans of `projection` a buffer of `frames` admits.
fn admitted_at_once(table: &Table, frames: u32, projection: &[usize]) -> u64 {
    if !table.layout().columnar() {
        return u64::from(frames / ADMISSION_CHUNKS_PER_SCAN);
    }
    let largest = |c: usize| {
        (0..table.chunk_count())
            .map(|k| table.chunk(k).columns[c].extent.len)
            .max()
            .unwrap_or(0)
    };
    let all: u64 = (0..table.schema().len()).map(largest).sum();
    let ours: u64 = projection.iter().map(|&c| largest(c)).sum();
    let footprint = ours.saturating_mul(u64::from(ADMISSION_CHUNKS_PER_SCAN));
    (u64::from(frames).saturating_mul(all))
        .checked_div(footprint)
        .unwrap_or(u64::MAX)
}
