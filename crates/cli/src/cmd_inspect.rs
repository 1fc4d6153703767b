//! `coopscan inspect DIR`: a JSON summary of a table's manifest.

use std::path::PathBuf;

use coopscan_storage::read::page_codecs;
use coopscan_storage::zonemap::Zonemap;
use coopscan_storage::{Layout, Table};
use serde_json::{json, Value};

use coopscan_lab::data_dir::dataset_dir;

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// Table directory. Default: lineitem of the default `gen` dataset.
    pub dir: Option<PathBuf>,
}

pub fn run(args: &InspectArgs) -> anyhow::Result<()> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| dataset_dir(1.0, Layout::Pax, 4.0).join("lineitem"));
    let table = Table::open(&dir)?;
    println!("{}", serde_json::to_string_pretty(&summary(&table)?)?);
    Ok(())
}

fn summary(table: &Table) -> anyhow::Result<Value> {
    let m = table.manifest();
    let columns = m
        .schema
        .columns
        .iter()
        .enumerate()
        .map(|(c, def)| {
            // Saturating: VARCHAR byte counts come from the file unchecked.
            let encoded = m.chunks.iter().fold(0u64, |sum, k| sum.saturating_add(k.columns[c].bytes));
            // On-disk bytes: the column's own file in DSM, its runs in CSM; in NSM/PAX
            // columns share pages.
            let on_disk = match m.layout {
                Layout::Dsm => Some(m.file_len(c)),
                Layout::Csm => Some(m.chunks.iter().fold(0u64, |sum, k| {
                    sum.saturating_add(k.columns[c].extent.len)
                })),
                Layout::Nsm | Layout::Pax => None,
            };
            // DSM and CSM: pages per codec (each page picks its own); NSM/PAX pages are plain.
            let codecs = page_codecs(table, c)?;
            // DSM integer columns: the pages whose min/max a filtered scan can rule out
            // (0 in a table written before page bounds were kept).
            let bounded = (m.layout == Layout::Dsm).then(|| m.files[c].page_bounds.len());
            Ok(json!({ "name": def.name, "type": def.ty.to_string(), "bytes": encoded, "file_bytes": on_disk, "page_codecs": codecs, "pages_with_bounds": bounded }))
        })
        .collect::<anyhow::Result<Vec<Value>>>()?;
    let zonemap: serde_json::Map<String, Value> = m
        .schema
        .columns
        .iter()
        .enumerate()
        .filter_map(|(c, def)| {
            let (lo, hi) = table_zonemap(m.chunks.iter().map(|k| k.columns[c].zonemap.as_ref()))?
                .render(def.ty);
            Some((def.name.clone(), json!({ "min": lo, "max": hi })))
        })
        .collect();
    let rows: Vec<u64> = m.chunks.iter().map(|k| k.row_count).collect();
    let extents = m
        .chunks
        .iter()
        .fold(0u64, |sum, k| sum.saturating_add(k.extent_bytes(m.layout)));
    Ok(json!({
        "dir": table.dir().display().to_string(),
        "name": m.name,
        "layout": m.layout.to_string(),
        "rows": m.rows,
        "chunks": m.chunks.len(),
        "chunk_summary": {
            "chunk_bytes": m.chunk_bytes,
            "rows_min": rows.iter().min(),
            "rows_max": rows.iter().max(),
            "extent_bytes_avg": extents.checked_div(m.chunks.len() as u64),
        },
        "page_bytes": m.page_bytes,
        "files": m.files.iter().enumerate().map(|(i, f)| json!({"name": f.name, "bytes": m.file_len(i)})).collect::<Vec<_>>(),
        "columns": columns,
        "zonemap": zonemap,
    }))
}

/// Table-wide zonemap of per-chunk zonemaps; `None` if any chunk lacks one.
fn table_zonemap<'a>(mut maps: impl Iterator<Item = Option<&'a Zonemap>>) -> Option<Zonemap> {
    let first = maps.next()??.clone();
    maps.try_fold(first, |acc, z| acc.union(z?))
}
