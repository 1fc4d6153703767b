//! No file of the workspace imports, directly or through others, a file that imports
//! it back: inside every crate the `use crate::…` / `super::…` / `self::…` paths of
//! its source files (tests and comments left out) form an acyclic graph of modules, so
//! each file can be read after the files it names. A path is resolved to the longest
//! module of the crate it names. Not seen: a cycle through a name re-exported at the
//! crate root (`use crate::AbmState` counts as an import of `lib.rs`, whose `pub use`
//! lines are not followed), nested braces (`crate::{a::{b, c}}`), and `super` inside an
//! inline module.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module of one crate: its path below the crate root (`["report", "sweep"]`).
type Module = Vec<String>;
type Graph = BTreeMap<Module, BTreeSet<Module>>;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, with its module path.
fn source_files(src: &Path) -> Vec<(Module, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).unwrap().with_extension("");
                let mut module: Module = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    module.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    module.pop();
                }
                out.push((module, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out
}

/// The text a file's imports are read from: no unit-test module, no comments.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a file names that starts at `crate`, `super` or `self`, braces expanded
/// one level (`crate::a::{b, c::d}` gives `crate::a::b` and `crate::a::c`).
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start = i == 0 || !is_ident(bytes[i - 1]);
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|p| rest.starts_with(p));
        if !(at_word_start && starts) {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < bytes.len() && is_ident(bytes[j]) {
                j += 1;
            }
            if start == j {
                break;
            }
            segments.push(bytes[start..j].iter().collect::<String>());
            if bytes.get(j) == Some(&':') && bytes.get(j + 1) == Some(&':') {
                j += 2;
                if bytes.get(j) == Some(&'{') {
                    let end = (j..bytes.len()).find(|&k| bytes[k] == '}').unwrap_or(j);
                    let group: String = bytes[j + 1..end].iter().collect();
                    for item in group.split(',') {
                        let first = item.trim().split("::").next().unwrap_or("");
                        let first = first.split_whitespace().next().unwrap_or("");
                        if !first.is_empty() && first != "self" {
                            let mut path = segments.clone();
                            path.push(first.to_string());
                            out.push(path);
                        }
                    }
                    j = end;
                    break;
                }
            } else {
                break;
            }
        }
        if segments.len() > 1 {
            out.push(segments);
        }
        i = j.max(i + 1);
    }
    out
}

/// The module a path from `from` names: the longest existing prefix.
fn resolve(modules: &BTreeSet<Module>, from: &Module, path: &[String]) -> Option<Module> {
    let (mut base, mut rest): (Module, &[String]) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("super" | "self") => (from.clone(), path),
        _ => return None,
    };
    while let Some(first) = rest.first() {
        match first.as_str() {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    (1..=base.len())
        .rev()
        .map(|k| base[..k].to_vec())
        .find(|m| modules.contains(m))
}

/// Which modules each module of one crate imports.
fn import_graph(files: &[(Module, String)]) -> Graph {
    let modules: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graph = Graph::new();
    for (module, text) in files {
        let targets = graph.entry(module.clone()).or_default();
        for path in paths_in(&code_of(text)) {
            if let Some(target) = resolve(&modules, module, &path) {
                if &target != module {
                    targets.insert(target);
                }
            }
        }
    }
    graph
}

/// One cycle of `graph`, if it has any (a path that comes back to its start).
fn a_cycle(graph: &Graph) -> Option<Vec<Module>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        graph: &Graph,
        node: &Module,
        marks: &mut BTreeMap<Module, Mark>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        marks.insert(node.clone(), Mark::Open);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next) {
                Some(Mark::Open) => {
                    let start = stack.iter().position(|m| m == next).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(cycle) = visit(graph, next, marks, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        marks.insert(node.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if !marks.contains_key(node) {
            if let Some(cycle) = visit(graph, node, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|m| {
            if m.is_empty() {
                "lib".into()
            } else {
                m.join("/")
            }
        })
        .collect::<Vec<String>>()
        .join(" -> ")
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let crates = workspace_root().join("crates");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let files = source_files(&src);
        checked += files.len();
        if let Some(cycle) = a_cycle(&import_graph(&files)) {
            panic!("{}: import cycle {}", src.display(), show(&cycle));
        }
    }
    assert!(
        checked > 100,
        "only {checked} files found under {}",
        crates.display()
    );
}

#[test]
fn a_cycle_through_super_and_braces_is_found() {
    let file = |m: &str, text: &str| {
        let module: Module = m
            .split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        (module, text.to_string())
    };
    let files = vec![
        file("", "mod report;\npub use report::x;"),
        file("report", "pub mod sweep;\npub mod findings;"),
        file("report/sweep", "use super::{findings, other};\nfn f() {}"),
        file(
            "report/findings",
            "// use crate::nothing::here;\nuse crate::report::sweep::Group;",
        ),
    ];
    let cycle = a_cycle(&import_graph(&files)).unwrap();
    assert_eq!(
        show(&cycle),
        "report/findings -> report/sweep -> report/findings"
    );
    // Without the back edge there is none; a commented or test-only import is no edge.
    let acyclic = vec![
        files[0].clone(),
        files[1].clone(),
        file(
            "report/sweep",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n use super::super::findings; }",
        ),
        files[3].clone(),
    ];
    assert!(a_cycle(&import_graph(&acyclic)).is_none());
}
