//! The crate's import graph runs downward only: no cycle between top-level
//! modules, none between sibling modules, the shared vocabulary and the
//! oracle layer import none of the solvers, and no module of the engine is
//! over ~600 lines outside its tests.
//!
//! The graph is read from the source: every `crate::a::b` path (in `use`
//! lines and inline) and every `super::x` path, per file, mapped to the
//! module that holds the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// The library's source files (the command-line tool's are a separate crate).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().unwrap() != "bin" {
                files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(SRC).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without comments and without `#[cfg(test)]` modules.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0i32;
    let mut pending_test = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            pending_test = true;
            continue;
        }
        let opens = line.matches('{').count() as i32;
        let closes = line.matches('}').count() as i32;
        if pending_test && skip_depth.is_none() && trimmed.starts_with("mod ") {
            skip_depth = Some(depth);
        }
        pending_test = false;
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        let line = match line.find("//") {
            Some(k) if !line[..k].contains('"') => &line[..k],
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The identifiers after each occurrence of `prefix` (`crate::`, `super::`),
/// including those in a braced group right after it: `crate::{a, b::c}`.
fn targets(code: &str, prefix: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(k) = rest.find(prefix) {
        let before = rest[..k].chars().last();
        rest = &rest[k + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut push = |s: &str| {
            let first = ident(s);
            let after = &s[first.len()..];
            let second = after.strip_prefix("::").map(ident);
            if !first.is_empty() {
                out.push((first, second.filter(|x| !x.is_empty())));
            }
        };
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                push(item.trim());
            }
        } else {
            push(rest);
        }
    }
    out
}

/// Edges between modules: `(from, to)` by full module path.
fn edges() -> BTreeSet<(Vec<String>, Vec<String>)> {
    let mut list = Vec::new();
    files(Path::new(SRC), &mut list);
    let mut edges = BTreeSet::new();
    for file in list {
        let module = module_of(&file);
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for (first, second) in targets(&text, "crate::") {
            let mut to = vec![first];
            to.extend(second);
            edges.insert((module.clone(), to));
        }
        // `super::x` from a file module `a::b` names `a::x`; from `a/b/mod.rs`
        // (module `a::b`) also `a::x`.
        if !module.is_empty() {
            let parent = &module[..module.len() - 1];
            for (first, _) in targets(&text, "super::") {
                if first == "super" {
                    continue;
                }
                let mut to = parent.to_vec();
                to.push(first);
                edges.insert((module.clone(), to));
            }
        }
    }
    edges
}

/// A cycle in `graph`, if any (depth-first search).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == next).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(node, graph, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

/// The graph between the children of `parent` (top level: `parent` empty).
fn level(
    edges: &BTreeSet<(Vec<String>, Vec<String>)>,
    parent: &[String],
) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let n = parent.len();
    for (from, to) in edges {
        if from.len() > n && to.len() > n && from[..n] == *parent && to[..n] == *parent {
            let (a, b) = (&from[n], &to[n]);
            if a != b {
                graph.entry(a.clone()).or_default().insert(b.clone());
            }
        }
    }
    graph
}

#[test]
fn the_reader_sees_the_edges_it_must() {
    // A self-test of the parser on the shapes the crate uses.
    let t = targets(
        "use crate::{a, b::c};\nlet x = crate::d::e(1);\nuse super::f::g;",
        "crate::",
    );
    let names: Vec<&str> = t.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(names, ["a", "b", "d"]);
    let c = code("use crate::x;\n#[cfg(test)]\nmod tests {\n    use crate::y;\n}\nuse crate::z;\n");
    assert!(c.contains("crate::x") && c.contains("crate::z") && !c.contains("crate::y"));
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(find_cycle(&g).is_some());
}

#[test]
fn no_cycle_between_top_level_or_sibling_modules() {
    let edges = edges();
    let mut parents: BTreeSet<Vec<String>> = BTreeSet::new();
    for (from, _) in &edges {
        for k in 0..from.len() {
            parents.insert(from[..k].to_vec());
        }
    }
    let mut cycles = Vec::new();
    for parent in &parents {
        if let Some(c) = find_cycle(&level(&edges, parent)) {
            cycles.push(format!(
                "in `crate::{}`: {}",
                parent.join("::"),
                c.join(" -> ")
            ));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_bottom_layers_import_no_solver() {
    let edges = edges();
    let top = level(&edges, &[]);
    let above = [
        "solver",
        "methods",
        "exec",
        "bcfw",
        "bundle",
        "qp",
        "ffi",
        "distributed",
    ];
    for bottom in ["vocab", "oracle"] {
        for to in top.get(bottom).into_iter().flatten() {
            assert!(
                !above.contains(&to.as_str()),
                "`{bottom}` imports `{to}`, which is above it"
            );
        }
    }
    let vocab: Vec<&String> = top.get("vocab").into_iter().flatten().collect();
    assert!(
        vocab.iter().all(|m| *m == "error"),
        "the vocabulary imports {vocab:?}"
    );
}

#[test]
fn the_solver_families_are_siblings() {
    // BCFW and the bundle family share the oracle layer and the rounding
    // bounds below them; neither imports the other, nor the solver above.
    let edges = edges();
    let top = level(&edges, &[]);
    let forbidden: [(&str, &[&str]); 3] = [
        ("bcfw", &["methods", "bundle", "qp", "solver"]),
        ("methods", &["bcfw", "solver"]),
        (
            "models",
            &["bcfw", "methods", "bundle", "qp", "exec", "solver"],
        ),
    ];
    for (from, banned) in forbidden {
        for to in top.get(from).into_iter().flatten() {
            assert!(
                !banned.contains(&to.as_str()),
                "`{from}` imports `{to}`: the solver families are siblings"
            );
        }
    }
    let rounding: Vec<&String> = top.get("rounding").into_iter().flatten().collect();
    assert!(
        rounding.is_empty(),
        "the rounding bounds import {rounding:?}"
    );
}

#[test]
fn source_files_are_small() {
    // Every file of the library and the command-line tool: at most 600
    // lines of code before its tests.
    fn all(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                all(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut list = Vec::new();
    all(Path::new(SRC), &mut list);
    assert!(list.len() > 100, "the walk found only {} files", list.len());
    let mut big = Vec::new();
    for file in list {
        let lines = code(&std::fs::read_to_string(&file).unwrap())
            .lines()
            .count();
        if lines > 600 {
            big.push(format!("{} has {lines} lines", file.display()));
        }
    }
    assert!(big.is_empty(), "{}", big.join("\n"));
}
