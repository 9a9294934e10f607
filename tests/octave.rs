//! The MATLAB/Octave front end (bindings/matlab) under GNU Octave.
//!
//! - `bindings/matlab/build_mex.m` builds the MEX gateway with
//!   `mkoctfile --mex` against the static library cargo built for this test
//!   run (BMRM_LIB), into `target/<profile>/octave`.
//! - `tests/octave/run_tests.m` checks bmrm.m in the BMRM toolbox's
//!   convention on a problem with a known optimum, every Algorithm value,
//!   cell-array partitions, bcfw.m's oracles against bmrm.m on a multiclass
//!   SVM, and the error cases (the user's own message, NaN, bad arguments,
//!   Ctrl-C), after which the session goes on.
//! - `tests/octave/graph_tests.m` checks bmrm_graph.m: the built-in
//!   exhaustive engine, a MATLAB decoder and bmrm.m over a MATLAB risk by
//!   enumeration agree; bad graphs and decoders give errors naming them.
//! - `examples/matlab/multiclass_svm.m` and `examples/matlab/chain_ocr.m` run.
//!
//! Without Octave the tests say so and pass, unless BMRM_REQUIRE_OCTAVE is
//! set (scripts/test.sh sets it after installing Octave).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use support::*;

fn octave() -> Option<&'static str> {
    static OCTAVE: OnceLock<Option<&'static str>> = OnceLock::new();
    *OCTAVE.get_or_init(|| {
        let found = ["octave-cli", "octave"]
            .into_iter()
            .find(|p| has_program(p));
        if found.is_none() {
            assert!(
                std::env::var_os("BMRM_REQUIRE_OCTAVE").is_none(),
                "GNU Octave is not installed but BMRM_REQUIRE_OCTAVE is set \
                 (apt-get install octave liboctave-dev)"
            );
        }
        found
    })
}

/// Runs `code` in Octave from `dir`, with the MEX on the path.
fn run_octave(dir: &Path, code: &str, what: &str) -> Output {
    let octave = octave().expect("checked by the caller");
    let out = Command::new(octave)
        .args([
            "--no-gui",
            "--no-window-system",
            "--norc",
            "--quiet",
            "--eval",
        ])
        .arg(code)
        .current_dir(dir)
        .env("BMRM_MEX_DIR", mex_dir())
        .env("BMRM_LIB", lib_dir().join("libbmrm.a"))
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {octave}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    out
}

/// The MEX gateway, built once per test run.
fn mex_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = work_dir("octave");
        let _ = std::fs::remove_file(dir.join("bmrm_mex.mex"));
        let octave = octave().expect("checked by the caller");
        let code = format!(
            "addpath('{}'); build_mex('{}')",
            path_arg(&root().join("bindings/matlab")),
            path_arg(&dir)
        );
        let out = Command::new(octave)
            .args([
                "--no-gui",
                "--no-window-system",
                "--norc",
                "--quiet",
                "--eval",
            ])
            .arg(&code)
            .current_dir(root())
            .env("BMRM_LIB", lib_dir().join("libbmrm.a"))
            .output()
            .expect("octave runs");
        assert!(
            out.status.success() && dir.join("bmrm_mex.mex").is_file(),
            "build_mex failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
}

fn skip() -> bool {
    if octave().is_none() {
        println!(
            "GNU Octave is not installed: the MATLAB/Octave front-end tests are skipped \
             (apt-get install octave liboctave-dev; scripts/test.sh does)"
        );
        return true;
    }
    false
}

/// Runs the check script `tests/octave/{name}.m`: its output and the last
/// "N passed, M failed" line of it (empty when there is none).
fn octave_checks(name: &str) -> (String, String) {
    let out = run_octave(
        &root().join("tests/octave"),
        name,
        &format!("tests/octave/{name}.m"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = stdout
        .lines()
        .rfind(|l| l.contains(" passed, "))
        .unwrap_or_default()
        .to_owned();
    (stdout, summary)
}

#[test]
fn octave_graph_problems_match_a_matlab_oracle() {
    if skip() {
        return;
    }
    let (stdout, summary) = octave_checks("graph_tests");
    assert!(
        summary.ends_with(" passed, 0 failed"),
        "Octave graph checks: {summary}\n{stdout}"
    );
    // The MATLAB decoder gives the built-in exhaustive engine's solve bit
    // for bit (checked inside), and the line is printed only at the end.
    assert!(
        stdout.lines().any(|l| l.starts_with("graph: Fp")),
        "{stdout}"
    );
    println!("Octave graph checks: {summary}");
}

#[test]
fn octave_front_end_tests_pass() {
    if skip() {
        return;
    }
    let (stdout, summary) = octave_checks("run_tests");
    assert!(
        summary.ends_with(" passed, 0 failed"),
        "Octave checks: {summary}\n{stdout}"
    );
    for l in stdout.lines().filter(|l| {
        l.starts_with("toolbox")
            || l.starts_with("Algorithm")
            || l.starts_with("multiclass")
            || l.starts_with("bcfw")
            || l.starts_with("SKIP")
    }) {
        println!("{l}");
    }
    println!("Octave checks: {summary}");
}

#[test]
fn ocr_demos_in_the_style_of_gapbcfw_and_bcfwstruct_run_unmodified() {
    if skip() {
        return;
    }
    let (stdout, summary) = octave_checks("run_ocr_demos");
    assert!(
        summary.ends_with(" passed, 0 failed") && !summary.starts_with("0 passed"),
        "OCR demo checks: {summary}\n{stdout}"
    );
    for l in stdout.lines().filter(|l| l.starts_with("bcfw OCR")) {
        println!("{l}");
    }
}

fn example(name: &str) -> String {
    let out = run_octave(
        &root().join("examples/matlab"),
        &format!("addpath('{}'); {name};", path_arg(mex_dir())),
        &format!("examples/matlab/{name}.m"),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{text}");
    text
}

/// The last "test [letter] error <x>" figure of an example's output.
fn test_error(text: &str) -> f64 {
    text.lines()
        .filter_map(|l| {
            let at = l.rfind("test ")?;
            let words: Vec<&str> = l[at..].split_whitespace().collect();
            let k = words.iter().position(|w| *w == "error")?;
            words.get(k + 1)?.trim_end_matches(',').parse().ok()
        })
        .next_back()
        .unwrap_or_else(|| panic!("no test error in\n{text}"))
}

#[test]
fn matlab_multiclass_example_runs() {
    if skip() {
        return;
    }
    let text = example("multiclass_svm");
    assert!(text.contains("exitflag 1"), "{text}");
    let e = test_error(&text);
    assert!(e < 0.1, "test error {e}");
}

#[test]
fn matlab_chain_ocr_example_runs() {
    if skip() {
        return;
    }
    let text = example("chain_ocr");
    let e = test_error(&text);
    // OCR words: 200 training words give ~0.2 letter error; the synthetic
    // fallback is easier.
    assert!(e < 0.35, "test letter error {e}");
}

/// The README's MATLAB program, saved as `svm_demo.m` as the README says:
/// bmrm on the summed hinge at lambda 0.4 and bcfw on the mean hinge at
/// lambda 0.1, each with its own options struct, solve the four-point SVM
/// whose optimum is known (`w* = (1/3, 1/3, 0)`: `F* = 0.4/2 |w*|^2 = 4/90`
/// and `0.1/2 |w*|^2 = 1/90`); each run's bound and primal bracket it.
#[test]
fn readme_matlab_program_finds_the_known_optimum() {
    if skip() {
        return;
    }
    let dir = work_dir("readme-matlab");
    std::fs::write(dir.join("svm_demo.m"), readme_block("matlab")).unwrap();
    let out = run_octave(
        &dir,
        &format!(
            "addpath('{}'); addpath('{}'); svm_demo",
            path_arg(&root().join("bindings/matlab")),
            path_arg(mex_dir())
        ),
        "the README's MATLAB program",
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let number = |key: &str| -> f64 {
        let at = text
            .find(key)
            .unwrap_or_else(|| panic!("no {key:?} in\n{text}"));
        text[at + key.len()..]
            .split([',', ' ', '\n'])
            .find(|w| !w.is_empty())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no number after {key:?} in\n{text}"))
    };
    let printed = 1e-8;
    let (fp, fd) = (number("Fp = "), number("Fd = "));
    assert!(
        fd <= 4.0 / 90.0 + printed && 4.0 / 90.0 <= fp + printed,
        "{text}"
    );
    assert!(fp - fd <= 1e-3 * fp + printed, "{text}");
    let (primal, gap) = (number("bcfw: primal "), number("gap "));
    assert!(
        primal - gap <= 1.0 / 90.0 + printed && 1.0 / 90.0 <= primal + printed,
        "{text}"
    );
    assert!(gap <= 1e-4 * 1.001, "{text}");
}
