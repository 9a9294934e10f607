//! The README's C and C++ programs, compiled against the library built for
//! this test run and run, so that the README cannot drift from the header or
//! the wrapper. Both solve a linear SVM on four points whose optimum is known:
//! the positive points (2, 1) and (1, 2) sit on the margin `w1 x1 + w2 x2 = 1`
//! and the negative ones mirror them, so `w* = (1/3, 1/3, 0)` (the bias
//! weight last) and `F* = lambda/2 |w*|^2 = lambda/9`. A program must print a
//! certified `F` whose gap brackets `F*`, and the C program a `w` within
//! `sqrt(2 gap / lambda)` of `w*` (`F` is lambda-strongly convex).
//!
//! The README's Rust blocks are doctests (src/lib.rs), its MATLAB program
//! runs in tests/octave.rs and its Python program in the Python package's
//! tests.

mod support;

use std::process::Command;

use support::*;

/// The README's programs use lambda = 0.1.
const LAMBDA: f64 = 0.1;
const F_STAR: f64 = LAMBDA / 9.0;

/// Compiles the README's block `lang` as `file` with `compiler` and the
/// strict flags, runs it and returns what it printed.
fn build_and_run(lang: &str, compiler: &str, std: &'static str, file: &str) -> String {
    let dir = work_dir("readme");
    std::fs::write(dir.join(file), readme_block(lang)).expect("write the README's program");
    let mut args = vec![
        format!("-I{}", path_arg(&root().join("include"))),
        format!("-I{}", path_arg(&root().join("bindings/cpp"))),
        path_arg(&dir.join(file)),
        path_arg(&lib_dir().join("libbmrm.a")),
    ];
    args.extend(static_lib_deps().iter().map(|s| s.to_string()));
    let exe = compile(
        compiler,
        &strict_flags(std),
        &args,
        &dir,
        &format!("{lang}_readme"),
    );
    let out = run_ok(
        &mut Command::new(&exe),
        &format!("the README's {lang} program"),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The number after `key` in `text` (up to a comma, a parenthesis or a space).
fn after(text: &str, key: &str) -> f64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {text:?}"));
    text[at + key.len()..]
        .split([',', ')', ' ', '\n'])
        .next()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?} in {text:?}"))
}

/// The printed `F`, gap and certificate: certified, the gap within the
/// default 0.1 %, and `F - gap <= F* <= F` up to the printed digits.
fn check_certificate(text: &str) -> (f64, f64) {
    let (f, gap) = (after(text, "F = "), after(text, "gap = "));
    assert_eq!(after(text, "certified = "), 1.0, "{text}");
    assert!(gap >= 0.0 && gap <= 1e-3 * f, "{text}");
    let printed = 1e-8 + 1e-3 * gap;
    assert!(
        f - gap <= F_STAR + printed,
        "the bound is above F* = {F_STAR}: {text}"
    );
    assert!(F_STAR <= f + printed, "F is below F* = {F_STAR}: {text}");
    (f, gap)
}

#[test]
fn readme_c_program_finds_the_known_optimum() {
    let cc = compiler("CC", "cc");
    let text = build_and_run("c", &cc, "-std=c11", "svm.c");
    let (_, gap) = check_certificate(&text);
    let w: Vec<f64> = text
        .split("w = (")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("no w in {text:?}"))
        .split(',')
        .map(|v| v.trim().parse().expect("a weight"))
        .collect();
    let dist = w
        .iter()
        .zip([1.0 / 3.0, 1.0 / 3.0, 0.0])
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    assert!(
        dist <= (2.0 * gap / LAMBDA).sqrt() + 1e-5,
        "w = {w:?} is {dist} from (1/3, 1/3, 0): {text}"
    );
}

#[test]
fn readme_cpp_program_finds_the_known_optimum() {
    let cxx = compiler("CXX", "c++");
    let text = build_and_run("cpp", &cxx, "-std=c++17", "svm.cpp");
    check_certificate(&text);
}
