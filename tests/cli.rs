//! The README's main command, `bmrm demo`, run as a user would (smaller
//! sizes), and a bad argument giving a clear message and a non-zero exit.

use std::process::Command;

#[test]
fn demo_trains_every_bundle_method_to_the_same_optimum() {
    let out = Command::new(env!("CARGO_BIN_EXE_bmrm"))
        .args(["demo", "--examples", "2000", "--features", "16"])
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let primals: Vec<f64> = ["BMRM ", "Prox-BMRM ", "P-BMRM ", "Prox-P-BMRM "]
        .iter()
        .map(|name| {
            let line = text
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no row for {name} in\n{text}"));
            line.split_whitespace().nth(4).unwrap().parse().unwrap()
        })
        .collect();
    let best = primals.iter().cloned().fold(f64::INFINITY, f64::min);
    for p in &primals {
        // Each stopped at tol_rel = 1e-3 of the optimum.
        assert!((p - best) <= 2e-3 * best, "{primals:?}");
    }
}

#[test]
fn a_bad_argument_is_refused_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_bmrm"))
        .args(["demo", "--lambda=0"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lambda"), "{err}");
}
