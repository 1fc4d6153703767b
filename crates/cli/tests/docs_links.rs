//! The project's documents point where they say: every link to a heading (`#anchor`,
//! `file.md#anchor`) names a heading that exists, every relative link a file that
//! exists, and every `crates/…` path a file or directory of the tree. Documents are
//! read by engineers who follow those pointers; a renamed file or heading must not
//! leave them dangling.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documents checked: the top-level guides and everything under `docs/`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    let dir = std::fs::read_dir(root.join("docs")).expect("docs/ is readable");
    for entry in dir {
        let path = entry.expect("a docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    docs.sort();
    docs
}

/// A heading's anchor as GitHub makes it: lower case, characters other than letters,
/// digits, `-`, `_` and spaces dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of `text`'s headings, outside fenced code; a repeated heading's later
/// anchors get `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        if fenced {
            continue;
        }
        let base = slug(heading.trim_start_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while !found.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    found
}

/// The targets of `text`'s markdown links `[…](target)`.
fn link_targets(text: &str) -> Vec<&str> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let end = rest.find(')')?;
            Some(&rest[..end])
        })
        .collect()
}

/// The `crates/…` paths `text` names (up to the first character a path here never
/// has), without a trailing `.` or `,` of the sentence.
fn crate_paths(text: &str) -> Vec<&str> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-');
    text.match_indices("crates/")
        .filter(|(at, _)| {
            let before = text[..*at].chars().next_back();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-'))
        })
        .map(|(at, _)| {
            let rest = &text[at..];
            let end = rest.find(|c: char| !allowed(c)).unwrap_or(rest.len());
            rest[..end].trim_end_matches(['.', ','])
        })
        .collect()
}

/// What is wrong with one link target of `doc`, if anything.
fn check_link(doc: &Path, target: &str, own: &HashSet<String>) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
        return None;
    }
    let (file, anchor) = match target.split_once('#') {
        Some((file, anchor)) => (file, Some(anchor)),
        None => (target, None),
    };
    if file.is_empty() {
        let anchor = anchor?;
        return (!own.contains(anchor)).then(|| format!("no heading for #{anchor}"));
    }
    let path = doc.parent().expect("a document's folder").join(file);
    if !path.exists() {
        return Some(format!("no file {file}"));
    }
    let anchor = anchor?;
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            (!anchors(&text).contains(anchor)).then(|| format!("no heading for {file}#{anchor}"))
        }
        Err(e) => Some(format!("{file} unreadable for #{anchor}: {e}")),
    }
}

#[test]
fn every_link_and_crate_path_of_the_documents_resolves() {
    let root = repo_root();
    let mut broken = Vec::new();
    for doc in documents(&root) {
        let text = std::fs::read_to_string(&doc).expect("a document is readable");
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        let own = anchors(&text);
        for target in link_targets(&text) {
            if let Some(problem) = check_link(&doc, target, &own) {
                broken.push(format!("{name}: {problem}"));
            }
        }
        for path in crate_paths(&text) {
            if !root.join(path).exists() {
                broken.push(format!("{name}: no path {path}"));
            }
        }
    }
    broken.sort();
    broken.dedup();
    assert!(
        broken.is_empty(),
        "dangling pointers:\n{}",
        broken.join("\n")
    );
}

#[test]
fn anchors_and_paths_are_read_as_github_and_the_tree_name_them() {
    let text = "# Clotho's A-pages (fourteenth session, 2026-11-27)\n\
                ## Twice\n## Twice\n```sh\n# not a heading\n```\n";
    let found = anchors(text);
    let expected = [
        "clothos-a-pages-fourteenth-session-2026-11-27",
        "twice",
        "twice-1",
    ];
    assert_eq!(found, expected.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        link_targets("see [a](#x) and [b](docs/abm.md#y)."),
        ["#x", "docs/abm.md#y"]
    );
    assert_eq!(
        crate_paths("in `crates/buffer/src/abm.rs`, and crates/sim. Not mycrates/x."),
        ["crates/buffer/src/abm.rs", "crates/sim"]
    );
}
