//! The C++ front end, bindings/cpp/bmrm.hpp.
//!
//! - `tests/cpp/bmrm_test.cpp` is compiled with the system C++ compiler
//!   (C++17, warnings as errors) against the static library cargo built for
//!   this test run, and run: it checks every callback kind and corner writer,
//!   the progress observer, exceptions thrown in callbacks (rethrown by
//!   `run()`), C errors as `bmrm::error`, that callbacks of problems that are
//!   not thread-safe run on the caller's thread, moves, and the SHOGUN-style
//!   adapter against the C API on a multiclass SVM, and graph problems
//!   (`Problem::graph`, a C++ decoder matching the exhaustive engine).
//! - `examples/cpp/multiclass_shogun.cpp` is built and run.
//! - `cpp_programs_under_valgrind` (ignored by default; scripts/test.sh runs
//!   it) runs both under valgrind's memcheck.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use support::*;

fn cxx() -> String {
    compiler("CXX", "c++")
}

/// Compiles a C++ source of the project against the static library.
fn build(source: &str, name: &str) -> PathBuf {
    assert!(
        has_program(&cxx()),
        "no C++ compiler ({}): scripts/test.sh installs g++",
        cxx()
    );
    let args = static_link_args(&["include", "bindings/cpp"], source);
    compile(
        &cxx(),
        &strict_flags("-std=c++17"),
        &args,
        &work_dir("cpp"),
        name,
    )
}

fn test_program() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| build("tests/cpp/bmrm_test.cpp", "bmrm_test"))
}

fn example_program() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| build("examples/cpp/multiclass_shogun.cpp", "multiclass_shogun"))
}

#[test]
fn cpp_test_program_passes() {
    let out = run_ok(&mut Command::new(test_program()), "tests/cpp/bmrm_test.cpp");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.ends_with(" passed, 0 failed"),
        "C++ checks: {summary}\n{stdout}"
    );
    for l in stdout.lines().filter(|l| {
        ["WRITERS", "THREADS", "SHOGUN", "BCFW", "GRAPH"]
            .iter()
            .any(|tag| l.starts_with(tag))
    }) {
        println!("{l}");
    }
    println!("C++ checks: {summary}");
    // The adapter's BMRM run with sparse psi is the C API's run, bit for bit.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("SHOGUN sparse") && l.ends_with("(bit-identical)")),
        "{stdout}"
    );
    // A C++ decoder over the potentials gives the built-in exhaustive
    // engine's solve bit for bit.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("GRAPH decoder") && l.ends_with("(bit-identical)")),
        "{stdout}"
    );
}

#[test]
fn cpp_example_runs() {
    let out = run_ok(
        &mut Command::new(example_program()),
        "examples/cpp/multiclass_shogun.cpp",
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{text}");
    let test_error: f64 = text
        .lines()
        .rfind(|l| l.starts_with("test error"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no test error in\n{text}"));
    assert!(test_error < 0.15, "test error {test_error}");
    assert!(text.contains("exitflag 1"), "{text}");
}

/// The header also compiles with the strictest flags in C++20 (if the
/// compiler knows it) and as the only include of a translation unit.
#[test]
fn header_is_self_contained() {
    if !has_program(&cxx()) {
        panic!("no C++ compiler ({}): scripts/test.sh installs g++", cxx());
    }
    let dir = work_dir("cpp");
    let src = dir.join("self_contained.cpp");
    std::fs::write(
        &src,
        "#include \"bmrm.hpp\"\nint main() { bmrm::Settings s(bmrm::Algorithm::bmrm, 1.0); \
         return s.lambda == 1.0 ? 0 : 1; }\n",
    )
    .unwrap();
    for std in ["-std=c++17", "-std=c++20"] {
        let ok = Command::new(cxx())
            .args([std, "-fsyntax-only", "-x", "c++", "/dev/null"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            println!("{} does not know {std}: skipped", cxx());
            continue;
        }
        run_ok(
            Command::new(cxx())
                .args([
                    std,
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-pedantic",
                    "-Wshadow",
                    "-Wconversion",
                    "-fsyntax-only",
                ])
                .arg(format!("-I{}", path_arg(&root().join("include"))))
                .arg(format!("-I{}", path_arg(&root().join("bindings/cpp"))))
                .arg(&src),
            &format!("bmrm.hpp with {std}"),
        );
    }
}

/// Slow; scripts/test.sh runs it with `cargo test --release --test cpp --
/// --ignored`.
#[test]
#[ignore = "slow: scripts/test.sh runs it (needs valgrind)"]
fn cpp_programs_under_valgrind() {
    for program in [test_program(), example_program()] {
        let started = std::time::Instant::now();
        let summary = valgrind(program);
        println!(
            "valgrind {} ({:.1} s): {summary}",
            program.file_name().unwrap().to_string_lossy(),
            started.elapsed().as_secs_f64()
        );
    }
}
