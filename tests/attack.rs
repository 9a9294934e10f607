//! The C ABI under attack: `tests/c/attack_test.c` runs the
//! regression cases of the attack run's findings and a randomized
//! call-sequence test (at least 100,000 checked calls by default) against
//! the static library. The ignored test (run by scripts/test.sh) builds the
//! C test programs and the C example with AddressSanitizer and
//! UndefinedBehaviorSanitizer and runs them.
//!
//! Settings (environment, passed on to the program): `BMRM_ATTACK_SEEDS`
//! (comma-separated seeds, default 1,2,3,4) and `BMRM_ATTACK_CALLS` (calls
//! per seed, default 25000).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{compiler, run_ok, static_link_args, strict_flags};

fn build(name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let mut flags = strict_flags("-std=c11");
    // common.h's helpers that a program does not use.
    flags.push("-Wno-unused-function");
    flags.extend_from_slice(extra);
    let mut args = static_link_args(&["include", "tests/c"], source);
    args.push("-lm".into());
    support::compile(
        &compiler("CC", "cc"),
        &flags,
        &args,
        &support::work_dir("attack-c"),
        name,
    )
}

/// Runs a program; it must pass and print nothing on stderr (no panic
/// message, no sanitizer report). Returns its stdout.
fn run_clean(program: &Path, what: &str) -> String {
    run_command_clean(Command::new(program), what)
}

/// [`run_clean`] for a prepared command.
fn run_command_clean(mut command: Command, what: &str) -> String {
    let out = run_ok(
        command.env(
            "ASAN_OPTIONS",
            "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
        ),
        what,
    );
    // ASan notes each allocation it refuses (the library's memory
    // reservation for a hostile size fails on purpose); anything else is a
    // report or a printed panic.
    let stderr: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.contains("WARNING: AddressSanitizer failed to allocate"))
        .map(str::to_string)
        .collect();
    assert!(
        stderr.iter().all(|l| l.trim().is_empty()),
        "{what} wrote on stderr:\n{}",
        stderr.join("\n")
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The number after `key` on the program's ATTACK line.
fn figure(stdout: &str, key: &str) -> i64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("ATTACK "))
        .unwrap_or_else(|| panic!("no ATTACK line in:\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == key).expect(key);
    words[at + 1].parse().expect("a number")
}

fn check_attack(program: &Path, what: &str) {
    check_attack_command(Command::new(program), what);
}

fn check_attack_command(command: Command, what: &str) {
    let started = std::time::Instant::now();
    let stdout = run_command_clean(command, what);
    let calls = figure(&stdout, "calls");
    println!(
        "{what}: {calls} checked calls in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(figure(&stdout, "violations"), 0, "{stdout}");
    assert_eq!(figure(&stdout, "failed"), 0, "{stdout}");
    let per_seed: i64 = std::env::var("BMRM_ATTACK_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25_000);
    assert!(calls >= per_seed, "{stdout}");
}

#[test]
fn random_call_sequences_keep_every_invariant() {
    let program = build("attack_test", "tests/c/attack_test.c", &[]);
    check_attack(&program, "attack_test");
}

/// The same sequences (graph problems included) under a 400 MB limit on
/// the address space, as on a small machine: the hostile sizes'
/// reservations fail, and every call still returns a status
/// (`BMRM_ERROR_OUT_OF_MEMORY` where the docs promise it), never an abort.
#[test]
fn random_call_sequences_keep_every_invariant_under_a_memory_limit() {
    let program = build("attack_test_limited", "tests/c/attack_test.c", &[]);
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -v 400000 && exec \"$0\"")
        .arg(&program);
    check_attack_command(command, "attack_test under ulimit -v 400000");
}

/// The C tests, the attack test and the C example under AddressSanitizer
/// and UndefinedBehaviorSanitizer: no report, no panic message.
#[test]
#[ignore = "slow: scripts/test.sh runs it"]
fn c_programs_under_address_and_undefined_behavior_sanitizers() {
    let sanitize = [
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
        "-fno-omit-frame-pointer",
    ];
    let attack = build("attack_test_asan", "tests/c/attack_test.c", &sanitize);
    check_attack(&attack, "attack_test under ASan/UBSan");
    for (name, source) in [
        ("ffi_test_asan", "tests/c/ffi_test.c"),
        ("models_test_asan", "tests/c/models_test.c"),
        ("graph_test_asan", "tests/c/graph_test.c"),
        ("multiclass_asan", "examples/c/multiclass.c"),
    ] {
        let program = build(name, source, &sanitize);
        run_clean(&program, name);
        println!("{name}: passed under ASan/UBSan");
    }
}
