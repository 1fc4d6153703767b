//! ARCHITECTURE.md's Codemap lists the crate graph as "A -> B, C" lines (B and C depend
//! on A); this checks them against the workspace's manifests, both ways: every listed
//! edge is a dependency and every dependency between workspace crates is listed.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

type Edges = BTreeSet<(String, String)>;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (dependency, dependent) of every non-dev dependency between workspace crates.
fn manifest_edges() -> Edges {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let mut edges = Edges::new();
    for p in packages {
        for d in p["dependencies"].as_array().unwrap() {
            let dep = d["name"].as_str().unwrap();
            if names.contains(dep) && d["kind"].as_str() != Some("dev") {
                edges.insert((dep.to_string(), p["name"].as_str().unwrap().to_string()));
            }
        }
    }
    edges
}

/// The "A -> B, C" lines of the Codemap's text block.
fn codemap_edges() -> Edges {
    let doc = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).unwrap();
    let codemap = doc.split("## Codemap").nth(1).expect("a Codemap section");
    let block = codemap.split("```text").nth(1).expect("a text block");
    let block = &block[..block.find("```").expect("a closed block")];
    let mut edges = Edges::new();
    for line in block.lines() {
        let Some((from, to)) = line.split_once(" -> ") else {
            continue;
        };
        // A crate's name, not prose that explains the arrow.
        if !from
            .trim()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            continue;
        }
        for dependent in to.split(',') {
            edges.insert((from.trim().to_string(), dependent.trim().to_string()));
        }
    }
    edges
}

#[test]
fn the_codemap_lists_exactly_the_workspace_dependencies() {
    let (drawn, real) = (codemap_edges(), manifest_edges());
    assert!(
        !real.is_empty(),
        "no dependencies between workspace crates found"
    );
    let not_real: Vec<_> = drawn.difference(&real).collect();
    let not_drawn: Vec<_> = real.difference(&drawn).collect();
    assert!(
        not_real.is_empty(),
        "listed but no dependency: {not_real:?}"
    );
    assert!(
        not_drawn.is_empty(),
        "a dependency the Codemap lacks: {not_drawn:?}"
    );
}
