//! The command-line tool run as a user would: the README's main command
//! (`bmrm demo`, smaller), train then predict on a LIBSVM file generated
//! here, the JSON mode, a lambda path, and bad arguments and bad files giving
//! a clear message and a non-zero exit.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bmrm::data::libsvm;
use bmrm::models::synthetic;

fn bmrm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bmrm"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Succeeds or panics with the output.
fn ok(args: &[&str]) -> String {
    let o = bmrm(args);
    assert!(
        o.status.success(),
        "bmrm {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Fails with exit code `code` and a stderr containing every `want`.
fn fails(args: &[&str], code: i32, want: &[&str]) {
    let o = bmrm(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "bmrm {args:?}\nstderr:\n{err}");
    for w in want {
        assert!(err.contains(w), "bmrm {args:?}: stderr lacks {w:?}:\n{err}");
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A 3-class problem written as LIBSVM files with the labels -1, 3 and 7.
fn libsvm_files(dir: &Path, m: usize, m_test: usize) -> (PathBuf, PathBuf) {
    let d = 8;
    let (x, y) = synthetic::gaussian_multiclass(m + m_test, d, 3, 3.0, 5);
    let names = ["-1", "3", "7"];
    let labels: Vec<&str> = y.iter().map(|&c| names[c]).collect();
    let train = dir.join("train.svm");
    let test = dir.join("test.svm");
    libsvm::write_dense(File::create(&train).unwrap(), &x[..m * d], d, &labels[..m]).unwrap();
    libsvm::write_dense(File::create(&test).unwrap(), &x[m * d..], d, &labels[m..]).unwrap();
    (train, test)
}

fn percent_after(text: &str, key: &str) -> f64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in\n{text}"));
    let rest = &text[at + key.len()..];
    rest.split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(['%', ','])
        .parse()
        .unwrap()
}

#[test]
fn demo_trains_bmrm_prox_p_bmrm_and_bcfw_to_the_same_optimum_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("conv.svg");
    let text = ok(&[
        "demo",
        "--examples",
        "2000",
        "--features",
        "16",
        "--plot",
        s(&plot),
    ]);
    let primals: Vec<f64> = ["BMRM ", "Prox-P-BMRM ", "BCFW "]
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
    let svg = std::fs::read_to_string(&plot).expect("the demo writes its plot");
    assert!(svg.contains("<svg") && svg.contains("</svg>"));
    for name in [
        "BMRM",
        "Prox-P-BMRM (P=16)",
        "BCFW",
        "relative gap vs iteration",
    ] {
        assert!(svg.contains(name), "the plot lacks {name:?}");
    }
    assert!(text.contains(&format!("convergence plot written to {}", s(&plot))));
}

#[test]
fn train_then_predict_writes_the_files_labels_back() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = libsvm_files(dir.path(), 600, 300);
    let model = dir.path().join("model.txt");
    let out = ok(&[
        "train",
        s(&train),
        "--c",
        "1",
        "--algorithm",
        "bmrm",
        "--threads",
        "2",
        "--test",
        s(&test),
        "-o",
        s(&model),
    ]);
    assert!(out.contains("read 600 examples"), "{out}");
    assert!(
        out.contains("multiclass model, 3 labels, 8 features + bias, 27 weights"),
        "{out}"
    );
    assert!(out.contains("ConvergedRel"), "{out}");
    let train_err = percent_after(&out, "training error ");
    let test_err = percent_after(&out, "test error ");
    assert!(test_err < 20.0, "{out}");

    let header = std::fs::read_to_string(&model).unwrap();
    assert!(header.starts_with("bmrm-model 1\n"), "{header}");
    for line in [
        "model multiclass",
        "classes 3",
        "labels -1 3 7",
        "features 8",
        "bias 1",
    ] {
        assert!(
            header.lines().any(|l| l == line),
            "no {line:?} in the model file"
        );
    }
    // lambda = 1/(m C) with m = 600, C = 1.
    assert!(
        header.contains(&format!("lambda {:e}", 1.0 / 600.0)),
        "{header}"
    );

    // Predicting the training file reproduces the training error exactly,
    // the test file the test error.
    let pred = dir.path().join("pred.txt");
    let p = ok(&["predict", s(&model), s(&train), "-o", s(&pred)]);
    assert_eq!(percent_after(&p, "error "), train_err, "{p}");
    let labels = std::fs::read_to_string(&pred).unwrap();
    assert_eq!(labels.lines().count(), 600);
    assert!(labels.lines().all(|l| ["-1", "3", "7"].contains(&l)));
    let p = ok(&["predict", s(&model), s(&test)]);
    assert_eq!(percent_after(&p, "error "), test_err, "{p}");
    assert!(p.contains("300 examples"), "{p}");
}

/// Words in the OCR `letter.data` layout: `words` words of 3..=6 letters
/// from `a..e`, each letter a fixed random 16x8 template with 10 % of its
/// pixels flipped; word `i` is in fold `i % 10`.
fn ocr_file(dir: &Path, words: usize) -> PathBuf {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let templates: Vec<Vec<u8>> = (0..5)
        .map(|_| (0..128).map(|_| rng.gen_range(0..2)).collect())
        .collect();
    let mut text = String::new();
    let mut id = 1;
    for word in 0..words {
        let len = rng.gen_range(3..=6);
        for pos in 1..=len {
            let letter = rng.gen_range(0..5);
            let next = if pos == len { -1 } else { id + 1 };
            let pixels: Vec<String> = templates[letter]
                .iter()
                .map(|&p| (p ^ u8::from(rng.gen_bool(0.1))).to_string())
                .collect();
            text += &format!(
                "{id}\t{}\t{next}\t{word}\t{pos}\t{}\t{}\n",
                char::from(b'a' + letter as u8),
                word % 10,
                pixels.join("\t")
            );
            id += 1;
        }
    }
    let path = dir.join("letters.tsv");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn chain_model_on_ocr_words_trains_and_predicts_words() {
    let dir = tempfile::tempdir().unwrap();
    let ocr = ocr_file(dir.path(), 100);
    let model = dir.path().join("chain.txt");
    let out = ok(&[
        "train",
        s(&ocr),
        "--lambda",
        "1e-2",
        "--test",
        s(&ocr),
        "-o",
        s(&model),
    ]);
    // Auto-detected: a .tsv whose first line is not a `#` header is OCR; the
    // standard split trains on folds 1..9 (90 words) and tests on fold 0.
    assert!(out.contains("read 90 sequences"), "{out}");
    assert!(out.contains("(ocr, folds 1-9)"), "{out}");
    assert!(
        out.contains("chain model, 26 labels, 128 features + bias, 4082 weights"),
        "{out}"
    );
    assert!(out.contains("ConvergedRel"), "{out}");
    let test_err = percent_after(&out, "test error ");
    assert!(test_err < 10.0, "{out}");
    assert!(out.contains("on 10 sequences of"), "{out}");
    let header = std::fs::read_to_string(&model).unwrap();
    assert!(header.lines().any(|l| l == "model chain"));
    assert!(header.lines().any(|l| l == "input ocr"));

    // predict: fold 0 by default, one word a line.
    let pred = dir.path().join("words.txt");
    let p = ok(&["predict", s(&model), s(&ocr), "-o", s(&pred)]);
    assert_eq!(percent_after(&p, "error "), test_err, "{p}");
    assert!(p.contains("10 sequences"), "{p}");
    let words = std::fs::read_to_string(&pred).unwrap();
    assert_eq!(words.lines().count(), 10);
    assert!(words
        .lines()
        .all(|w| (3..=6).contains(&w.len()) && w.chars().all(|c| c.is_ascii_lowercase())));

    // The same data as independent letters (multiclass), OCR-small folds.
    let out = ok(&[
        "train",
        s(&ocr),
        "--model",
        "multiclass",
        "--folds",
        "0",
        "--c",
        "1",
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(summary["model"], "multiclass");
    assert_eq!(summary["exit"], "ConvergedRel");

    // A chain on data without sequences is refused.
    let (train, _) = libsvm_files(dir.path(), 50, 0);
    fails(
        &["train", s(&train), "--model", "chain", "--c", "1"],
        1,
        &["the chain model needs sequences"],
    );
    // A model trained on OCR words cannot read a libsvm file.
    fails(
        &["predict", s(&model), s(&train)],
        1,
        &["trained on ocr data"],
    );
}

#[test]
fn json_mode_prints_one_object_per_iteration_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _) = libsvm_files(dir.path(), 300, 0);
    let out = ok(&[
        "train",
        s(&train),
        "--lambda",
        "1e-2",
        "--algorithm",
        "prox-p-bmrm",
        "--parts",
        "4",
        "--json",
    ]);
    let objects: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let (summary, iterations) = objects.split_last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["algorithm"], "Prox-P-BMRM");
    assert_eq!(summary["exit"], "ConvergedRel");
    let n = summary["iterations"].as_u64().unwrap();
    assert_eq!(iterations.len() as u64, n);
    for (i, it) in iterations.iter().enumerate() {
        assert_eq!(it["type"], "iteration");
        assert_eq!(it["iteration"].as_u64(), Some(i as u64 + 1));
    }
    assert!(summary["rel_gap"].as_f64().unwrap() <= 1e-3);
    assert_eq!(summary["primal"], iterations.last().unwrap()["primal"]);

    // predict --json too.
    let model = dir.path().join("m.txt");
    ok(&[
        "train",
        s(&train),
        "--lambda",
        "1e-2",
        "-q",
        "-o",
        s(&model),
    ]);
    let p = ok(&["predict", s(&model), s(&train), "--json"]);
    let v: serde_json::Value = serde_json::from_str(p.trim()).unwrap();
    assert_eq!(v["examples"], 300);
    assert!(v["accuracy"].as_f64().unwrap() > 0.5);
}

#[test]
fn quiet_mode_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _) = libsvm_files(dir.path(), 200, 0);
    let o = bmrm(&["train", s(&train), "--c", "0.5", "--quiet"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), "");
    assert_eq!(stderr(&o), "");
}

#[test]
fn path_reports_validation_error_per_lambda_and_saves_the_best() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = libsvm_files(dir.path(), 500, 200);
    let best = dir.path().join("best.txt");
    let out = ok(&[
        "path",
        s(&train),
        "--validation",
        s(&test),
        "--lambdas",
        "1e-3,1e-1,1e-2",
        "--json",
        "-o",
        s(&best),
    ]);
    let objects: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["type"] != "iteration")
        .collect();
    let rows: Vec<&serde_json::Value> = objects.iter().filter(|v| v["type"] == "lambda").collect();
    let lambdas: Vec<f64> = rows.iter().map(|r| r["lambda"].as_f64().unwrap()).collect();
    assert_eq!(
        lambdas,
        vec![1e-1, 1e-2, 1e-3],
        "solved in decreasing order"
    );
    let summary = objects.last().unwrap();
    let best_err = summary["best_validation_error"].as_f64().unwrap();
    let min = rows
        .iter()
        .map(|r| r["validation_error"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(best_err, min);
    // The saved model reproduces its validation error.
    let p = ok(&["predict", s(&best), s(&test), "--json"]);
    let v: serde_json::Value = serde_json::from_str(p.trim()).unwrap();
    assert_eq!(v["error"].as_f64().unwrap(), best_err);

    // Holdout and C values, human output.
    let out = ok(&["path", s(&train), "--cs", "0.1,1", "--holdout", "0.25"]);
    assert!(out.contains("375 training examples"), "{out}");
    assert!(out.contains("125 held-out examples"), "{out}");
    assert!(out.contains("lowest validation error"), "{out}");
}

#[test]
fn bad_arguments_and_bad_files_are_refused_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _) = libsvm_files(dir.path(), 50, 0);
    let t = s(&train);
    // Command-line errors: exit 2 (clap).
    fails(
        &["train", t, "--c", "1", "--algorithm", "newton"],
        2,
        &["invalid value 'newton'", "--algorithm", "prox-p-bmrm"],
    );
    fails(&["train", t], 2, &["--lambda", "--c"]);
    fails(
        &["train", t, "--lambda", "1", "--c", "1"],
        2,
        &["cannot be used with"],
    );
    fails(
        &["train", t, "--c", "1", "--json", "--quiet"],
        2,
        &["cannot be used with"],
    );
    // Run errors: exit 1, "bmrm: error: ..." naming what is wrong.
    fails(
        &["train", t, "--lambda", "-1"],
        1,
        &["--lambda must be a positive number, got -1"],
    );
    fails(
        &["train", t, "--c", "0"],
        1,
        &["--c must be a positive number, got 0"],
    );
    fails(
        &["train", t, "--c", "1", "--tol-rel", "-1"],
        1,
        &["--tol-rel must be >= 0"],
    );
    fails(&["demo", "--lambda=0"], 1, &["lambda"]);
    let missing = dir.path().join("nope.svm");
    fails(
        &["train", s(&missing), "--c", "1"],
        1,
        &["bmrm: error:", "nope.svm", "no such file"],
    );
    let bad = dir.path().join("bad.svm");
    std::fs::write(&bad, "1 1:0.5 2:1\n2 1:1\n1 3:1 2:0.5\n").unwrap();
    fails(
        &["train", s(&bad), "--c", "1"],
        1,
        &["bad.svm, line 3, column 7", "index 2 after index 3"],
    );
    let one = dir.path().join("one.svm");
    std::fs::write(&one, "4 1:0.5\n4 2:1\n").unwrap();
    fails(&["train", s(&one), "--c", "1"], 1, &["at least 2 classes"]);
    // A damaged model file.
    let model = dir.path().join("m.txt");
    std::fs::write(&model, "hello\n").unwrap();
    fails(
        &["predict", s(&model), t],
        1,
        &["m.txt", "not a bmrm model file"],
    );
    fails(
        &["predict", s(&missing), t],
        1,
        &["nope.svm", "cannot open"],
    );
}

#[test]
fn bcfw_trains_and_its_regularisation_path_reports_breakpoints() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = libsvm_files(dir.path(), 400, 200);
    let out = ok(&[
        "train",
        s(&train),
        "--lambda",
        "1e-2",
        "-a",
        "bcfw",
        "--step-type",
        "pairwise",
        "--sampling",
        "permutation",
        "--cache",
        "--gap-check",
        "5",
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(summary["algorithm"], "BCFW");
    assert_eq!(summary["exit"], "ConvergedRel");
    // Multi-plane BCFW: converges too, and a bad setting is named as a flag.
    let mp = ok(&[
        "train",
        s(&train),
        "--lambda",
        "1e-2",
        "-a",
        "bcfw",
        "--multi-plane",
        "--mp-approx-passes",
        "5",
        "--mp-block-steps",
        "1",
        "--mp-inactive-passes",
        "3",
        "--mini-batch",
        "16",
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_str(mp.lines().last().unwrap()).unwrap();
    assert_eq!(summary["exit"], "ConvergedRel", "{mp}");
    fails(
        &[
            "train",
            s(&train),
            "--lambda",
            "1e-2",
            "-a",
            "bcfw",
            "--multi-plane",
            "--mp-inactive-passes",
            "0",
        ],
        1,
        &["--mp-inactive-passes must be >= 1"],
    );
    // An option the algorithm would not use is an error naming the flag.
    for (alg, extra, said) in [
        ("bmrm", &["--cache"][..], "--cache is not used by BMRM"),
        (
            "bcfw",
            &["--parts", "4"][..],
            "--parts is 4 but BCFW does not split",
        ),
    ] {
        let mut args = vec!["train", s(&train), "--lambda", "1e-2", "-a", alg];
        args.extend_from_slice(extra);
        fails(&args, 1, &[said]);
    }
    // --early-exact-factor and --gap-degree are honoured: each changes the run.
    let summary = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "train",
            s(&train),
            "--lambda",
            "1e-2",
            "-a",
            "bcfw",
            "--tol-rel",
            "0",
            "--tol-abs",
            "1e-3",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = ok(&args);
        serde_json::from_str(out.lines().last().unwrap()).unwrap()
    };
    let plain = summary(&[]);
    let early = summary(&["--early-exact-factor", "0.9"]);
    let degree = summary(&["--gap-degree", "3"]);
    assert_eq!(plain["exit"], "ConvergedAbs", "{plain}");
    assert!(
        early["iterations"].as_u64() < plain["iterations"].as_u64(),
        "{early}"
    );
    assert_ne!(degree["primal"], plain["primal"], "{degree}");

    let out = ok(&[
        "path",
        s(&train),
        "--validation",
        s(&test),
        "-a",
        "bcfw",
        "--eps",
        "0.05",
        "--lambda-min",
        "1e-2",
        "--json",
    ]);
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["type"] == "lambda")
        .collect();
    assert!(rows.len() >= 2, "{out}");
    for r in &rows {
        // Each breakpoint is solved to a gap of path_a * eps = 0.045.
        assert!(r["gap"].as_f64().unwrap() <= 0.045 + 1e-12, "{r}");
        assert!(r["lambda_low"].as_f64().unwrap() <= r["lambda"].as_f64().unwrap());
    }
    let lambdas: Vec<f64> = rows.iter().map(|r| r["lambda"].as_f64().unwrap()).collect();
    assert!(lambdas.windows(2).all(|p| p[1] < p[0]), "{lambdas:?}");
    fails(
        &["path", s(&train), "-a", "bcfw", "--eps", "0"],
        1,
        &["--eps must be a positive number"],
    );
}

#[test]
fn nonneg_keeps_every_weight_non_negative_or_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _) = libsvm_files(dir.path(), 300, 0);
    for algorithm in ["bmrm", "p-bmrm", "bcfw", "sgd"] {
        let model = dir.path().join(format!("{algorithm}.txt"));
        let out = ok(&[
            "train",
            s(&train),
            "--c",
            "1",
            "--algorithm",
            algorithm,
            "--nonneg",
            "-o",
            s(&model),
        ]);
        let text = std::fs::read_to_string(&model).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("weights "))
            .unwrap();
        let weights: Vec<f64> = lines[at + 1..].iter().map(|l| l.parse().unwrap()).collect();
        assert!(!weights.is_empty(), "{out}");
        assert!(
            weights.iter().all(|&x| x >= 0.0),
            "{algorithm}: {weights:?}"
        );
        // The box binds: some weight sits at 0.
        assert!(weights.contains(&0.0), "{algorithm}: {weights:?}");
    }
    fails(
        &[
            "train",
            s(&train),
            "--c",
            "1",
            "--algorithm",
            "cutting-plane",
            "--nonneg",
        ],
        1,
        &["--nonneg", "cutting-plane", "BCFW"],
    );
}

/// A LIBSVM file of 60 examples with 50 features and 3 classes: its model
/// file (153 weights) is a few KB.
fn wide_file(dir: &Path) -> PathBuf {
    let d = 50;
    let (x, y) = synthetic::gaussian_multiclass(60, d, 3, 3.0, 9);
    let labels: Vec<String> = y.iter().map(|c| c.to_string()).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let path = dir.join("wide.svm");
    libsvm::write_dense(File::create(&path).unwrap(), &x, d, &labels).unwrap();
    path
}

#[test]
fn a_model_write_cut_short_keeps_the_old_model() {
    // Written in place, the model file would be left truncated by a full
    // disk, a failed write or a kill during the write.
    // Under `ulimit -f 1` (1 KB) the write of the new model fails part-way:
    // with SIGXFSZ ignored as a write error, by default as a kill.
    let dir = tempfile::tempdir().unwrap();
    let data = wide_file(dir.path());
    let model = dir.path().join("model.txt");
    ok(&["train", s(&data), "--lambda", "0.1", "-q", "-o", s(&model)]);
    let old = std::fs::read(&model).unwrap();
    assert!(old.len() > 2048, "the model is {} bytes", old.len());
    for trap in ["trap '' XFSZ;", ""] {
        let script =
            format!("{trap} ulimit -f 1; exec \"$0\" train \"$1\" --lambda 0.01 -q -o \"$2\"");
        let o = Command::new("bash")
            .args([
                "-c",
                &script,
                env!("CARGO_BIN_EXE_bmrm"),
                s(&data),
                s(&model),
            ])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{trap:?}: the write succeeded");
        if !trap.is_empty() {
            assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
        }
        assert!(
            std::fs::read(&model).unwrap() == old,
            "{trap:?}: the old model changed"
        );
        ok(&["predict", s(&model), s(&data), "-q"]);
    }
    // The new model replaces the old one whole when the write succeeds; a
    // temporary file left by the kill is not mistaken for it.
    ok(&["train", s(&data), "--lambda", "0.01", "-q", "-o", s(&model)]);
    assert!(std::fs::read(&model).unwrap() != old);
    ok(&["predict", s(&model), s(&data), "-q"]);
}

#[test]
fn the_model_path_is_checked_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let data = wide_file(dir.path());
    let missing = dir.path().join("no-such-dir").join("model.txt");
    let o = bmrm(&[
        "train",
        s(&data),
        "--lambda",
        "0.1",
        "--json",
        "-o",
        s(&missing),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-dir"), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    // Nothing was read or trained.
    assert!(!stdout(&o).contains("\"iteration\""), "{}", stdout(&o));
    let o = bmrm(&[
        "train",
        s(&data),
        "--lambda",
        "0.1",
        "-q",
        "-o",
        s(dir.path()),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    let o = bmrm(&[
        "path",
        s(&data),
        "--lambdas",
        "0.1",
        "-q",
        "-o",
        s(&missing),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
}

/// `-o` writes a regular file or a new path only: the atomic rename would
/// replace a device, a FIFO or a link with the model (made here in a
/// temporary directory, never in /dev).
#[test]
fn the_model_path_must_be_a_regular_file_or_new() {
    let dir = tempfile::tempdir().unwrap();
    let data = wide_file(dir.path());
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut special = vec![(fifo.clone(), "a FIFO")];
    // A character device like /dev/null (1, 3), where the test may make one.
    let null = dir.path().join("null");
    let device = Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .status();
    if device.is_ok_and(|s| s.success()) {
        special.push((null.clone(), "a character device"));
    }
    let link_to_fifo = dir.path().join("link-to-fifo");
    std::os::unix::fs::symlink(&fifo, &link_to_fifo).unwrap();
    special.push((link_to_fifo, "a FIFO"));
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
    special.push((dangling, "cannot be resolved"));
    special.push((dir.path().to_path_buf(), "a directory"));
    for (path, kind) in &special {
        let o = bmrm(&[
            "train",
            s(&data),
            "--lambda",
            "0.1",
            "--json",
            "-o",
            s(path),
        ]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}: {}",
            path.display(),
            stderr(&o)
        );
        assert!(stderr(&o).contains(s(path)), "{}", stderr(&o));
        assert!(stderr(&o).contains(kind), "{}", stderr(&o));
        // Refused before training.
        assert!(!stdout(&o).contains("\"iteration\""), "{}", stdout(&o));
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert!(
            !meta.file_type().is_file(),
            "{} was replaced",
            path.display()
        );
    }
    // A link to a regular file: the link stays, its target gets the model.
    let model = dir.path().join("model.txt");
    std::fs::write(&model, "old").unwrap();
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(&model, &link).unwrap();
    ok(&["train", s(&data), "--lambda", "0.1", "-q", "-o", s(&link)]);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&model)
        .unwrap()
        .starts_with("bmrm-model"));
    ok(&["predict", s(&link), s(&data), "-q"]);
}

#[test]
fn a_file_without_line_breaks_is_an_error_in_bounded_memory() {
    // `/dev/zero` as the data or the model could make train and predict
    // grow one line until the allocation aborted. Under a 2 GB
    // address limit each must end with the reader's error naming line 1.
    let dir = tempfile::tempdir().unwrap();
    let data = wide_file(dir.path());
    let model = dir.path().join("model.txt");
    ok(&["train", s(&data), "--lambda", "0.1", "-q", "-o", s(&model)]);
    let cases = [
        ("train /dev/zero --lambda 0.1 -q", "/dev/zero, line 1"),
        ("predict /dev/zero \"$1\" -q", "/dev/zero, line 1"),
        ("predict \"$2\" /dev/zero -q", "/dev/zero, line 1"),
    ];
    for (args, want) in cases {
        let script = format!("ulimit -v 2000000; exec \"$0\" {args}");
        let o = Command::new("bash")
            .args([
                "-c",
                &script,
                env!("CARGO_BIN_EXE_bmrm"),
                s(&data),
                s(&model),
            ])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args}: {err}");
        assert!(
            err.contains(want) && err.contains("longer than"),
            "{args}: {err}"
        );
    }
}

#[test]
fn unknown_model_keys_are_refused_and_extra_features_noted() {
    // Neither may pass without a word.
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = libsvm_files(dir.path(), 60, 20);
    let model = dir.path().join("model.txt");
    ok(&["train", s(&train), "--lambda", "0.1", "-q", "-o", s(&model)]);
    let text = std::fs::read_to_string(&model).unwrap();
    let edited = dir.path().join("edited.txt");
    std::fs::write(&edited, text.replace("\nbias ", "\nscale 2\nbias ")).unwrap();
    fails(
        &["predict", s(&edited), s(&test), "-q"],
        1,
        &["unknown header key `scale`"],
    );
    // Test data with a feature beyond the model's 8: a warning naming it.
    let wide = dir.path().join("wide.svm");
    let mut lines = std::fs::read_to_string(&test).unwrap();
    lines.push_str("3 1:0.5 12:1.5\n");
    std::fs::write(&wide, lines).unwrap();
    let o = bmrm(&["predict", s(&model), s(&wide), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning")
            && err.contains("1 examples have features beyond the model's 8")
            && err.contains("up to feature 12"),
        "{err}"
    );
    let o = bmrm(&["predict", s(&model), s(&test), "-q"]);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn ctrl_c_ends_the_tool_with_a_message_and_status_130() {
    // SIGINT ends the tool with status 130, and it must say so.
    let dir = tempfile::tempdir().unwrap();
    let data = wide_file(dir.path());
    let child = Command::new(env!("CARGO_BIN_EXE_bmrm"))
        .args([
            "train",
            s(&data),
            "--lambda",
            "1e-9",
            "--tol-rel",
            "1e-15",
            "-q",
        ])
        .args(["-a", "cutting-plane", "--time-limit", "60"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("interrupted (SIGINT)"),
        "{}",
        stderr(&o)
    );
}

/// A graph file of chains of 2..4 ternary nodes with 2 node features and
/// Potts edges with 1 feature (docs/cli.md, "Graph problems"), and its
/// parsed form: per example, (labels, node features, edges (u, v, x)).
type GraphEx = (Vec<u32>, Vec<[f64; 2]>, Vec<(usize, usize, f64)>);
fn graph_file(dir: &Path, m: usize, seed: u64) -> (PathBuf, Vec<GraphEx>) {
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut text = format!(
        "bmrm-graph 1 examples={m} node-features=2 edges=potts edge-features=1 loss=hamming\n"
    );
    let mut exs = Vec::new();
    for i in 0..m {
        let n = 2 + i % 3;
        text += &format!("# example {i}\nexample {n} {}\n", n - 1);
        let (mut y, mut x, mut e) = (vec![], vec![], vec![]);
        for _ in 0..n {
            let label = (next() * 3.0) as u32 % 3;
            let f = [
                f64::from(label) - 1.0 + next() - 0.5,
                (next() * 8.0).round() / 8.0,
            ];
            text += &format!("3 {label} {} {}\n", f[0] as f32, f[1] as f32);
            y.push(label);
            x.push([f64::from(f[0] as f32), f64::from(f[1] as f32)]);
        }
        for u in 0..n - 1 {
            let f = (next() * 4.0).round() / 4.0;
            text += &format!("{u} {} {f}  # an edge\n", u + 1);
            e.push((u, u + 1, f));
        }
        exs.push((y, x, e));
    }
    let p = dir.join("graphs.txt");
    std::fs::write(&p, text).unwrap();
    (p, exs)
}

/// The time limit covers the run and the error pass after it: complete
/// graphs of 20 binary nodes decoded by exhaustive search (2^20 labellings,
/// a long decode each; a pass and the error pass each took all of them).
#[test]
fn graph_training_and_its_error_pass_stop_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (m, n) = (6, 20);
    let mut text = format!(
        "bmrm-graph 1 examples={m} node-features=2 edges=potts edge-features=1 loss=hamming\n"
    );
    for i in 0..m {
        text += &format!("example {n} {}\n", n * (n - 1) / 2);
        for v in 0..n {
            text += &format!("2 {} {} 0.5\n", (i + v) % 2, ((i * n + v) % 7) as f32 / 4.0);
        }
        for u in 0..n {
            for v in u + 1..n {
                text += &format!("{u} {v} 0.25\n");
            }
        }
    }
    let data = dir.path().join("complete.txt");
    std::fs::write(&data, text).unwrap();
    let out = ok(&[
        "train",
        "--graph",
        s(&data),
        "--lambda",
        "0.1",
        "--engine",
        "exhaustive",
        "--time-limit",
        "0.5",
    ]);
    assert!(out.contains(": TimeLimit after"), "{out}");
    assert!(
        out.contains("training error not computed (the time limit passed)"),
        "{out}"
    );
}

/// The error passes after a multiclass run honour its time limit: a run
/// that ends at the limit (a cutting-plane run to 1e-15 on wide data) does
/// not then predict every example.
#[test]
fn multiclass_training_error_pass_stops_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let data = wide_file(dir.path());
    let out = ok(&[
        "train",
        s(&data),
        "--test",
        s(&data),
        "--lambda",
        "1e-9",
        "--tol-rel",
        "1e-15",
        "-a",
        "cutting-plane",
        "--time-limit",
        "0.3",
    ]);
    assert!(out.contains(": TimeLimit after"), "{out}");
    assert!(
        out.contains("training error not computed (the time limit passed)"),
        "{out}"
    );
    assert!(
        out.contains("not computed (the time limit passed)\nmodel"),
        "{out}"
    );
}

/// <w, phi(x, y)> of the graph model: unary rows s (2 features + bias),
/// then the Potts weight, -[a != b] w_p x_e.
fn graph_score(w: &[f64], ex: &GraphEx, y: &[u32]) -> f64 {
    let mut s = 0.0;
    for (i, &yi) in y.iter().enumerate() {
        let row = &w[3 * yi as usize..3 * yi as usize + 3];
        s += row[0] * ex.1[i][0] + row[1] * ex.1[i][1] + row[2];
    }
    for &(u, v, x) in &ex.2 {
        if y[u] != y[v] {
            s -= w[9] * x;
        }
    }
    s
}

/// Every labelling of n ternary nodes.
fn labellings(n: usize) -> impl Iterator<Item = Vec<u32>> {
    (0..3usize.pow(n as u32)).map(move |mut k| {
        (0..n)
            .map(|_| {
                let s = (k % 3) as u32;
                k /= 3;
                s
            })
            .collect()
    })
}

fn model_weights(path: &Path) -> (Vec<f64>, f64) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let primal = text
        .lines()
        .find_map(|l| l.strip_prefix("primal "))
        .unwrap()
        .parse()
        .unwrap();
    lines.find(|l| l.starts_with("weights ")).unwrap();
    (lines.map(|l| l.parse().unwrap()).collect(), primal)
}

#[test]
fn graph_models_train_and_predict_against_enumeration() {
    let dir = tempfile::tempdir().unwrap();
    let (data, exs) = graph_file(dir.path(), 6, 3);
    let lambda = 0.05;
    // AD3 with branch and bound first: bmrm.txt is then exhaustive
    // search's model for the JSON check below.
    for (alg, engine) in [
        ("bmrm", "ad3-branch-and-bound"),
        ("bmrm", "exhaustive"),
        ("bcfw", "auto"),
        ("prox-p-bmrm", "auto"),
        // An alias of the registry's conditioning engine.
        ("p-bmrm", "cut-set-conditioning"),
    ] {
        let model = dir.path().join(format!("{alg}.txt"));
        let out = ok(&[
            "train",
            "--graph",
            s(&data),
            "--lambda",
            "0.05",
            "-a",
            alg,
            "--engine",
            engine,
            "--tol-rel",
            "1e-4",
            "-o",
            s(&model),
        ]);
        assert!(
            out.contains("training a graph model (6 examples, 3 states, 10 weights"),
            "{out}"
        );
        let (w, primal) = model_weights(&model);
        assert_eq!(w.len(), 10);
        // F(w) by enumeration: lambda/2 |w|^2 + mean max_y [Hamming + score(y) - score(y_i)].
        let mut risk = 0.0;
        for ex in &exs {
            let truth = graph_score(&w, ex, &ex.0);
            risk += labellings(ex.0.len())
                .map(|y| {
                    let loss = y.iter().zip(&ex.0).filter(|(a, b)| a != b).count() as f64;
                    loss + graph_score(&w, ex, &y) - truth
                })
                .fold(f64::NEG_INFINITY, f64::max);
        }
        let f = 0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk / exs.len() as f64;
        assert!(
            (f - primal).abs() <= 1e-9 * f,
            "{alg}: F(w) {f} by enumeration, file {primal}"
        );
        assert!(primal > 0.1, "{alg}: a non-trivial problem, F = {primal}");
        // The predictions are the enumeration's argmax of <w, phi> (no loss).
        let pred = ok(&["predict", s(&model), s(&data)]);
        let lines: Vec<&str> = pred.lines().take(exs.len()).collect();
        for (i, ex) in exs.iter().enumerate() {
            let best = labellings(ex.0.len())
                .max_by(|a, b| graph_score(&w, ex, a).total_cmp(&graph_score(&w, ex, b)))
                .unwrap();
            let want: Vec<String> = best.iter().map(|v| v.to_string()).collect();
            assert_eq!(lines[i], want.join(" "), "{alg}: example {i}\n{pred}");
        }
        assert!(pred.contains("6 examples (18 nodes)"), "{pred}");
    }
    // --output and JSON.
    let model = dir.path().join("bmrm.txt");
    let preds = dir.path().join("pred.txt");
    let json = ok(&["predict", s(&model), s(&data), "--json", "-o", s(&preds)]);
    assert!(
        json.contains("\"model\":\"graph\"") && json.contains("\"examples\":6"),
        "{json}"
    );
    assert_eq!(std::fs::read_to_string(&preds).unwrap().lines().count(), 6);
}

#[test]
fn bad_graph_files_and_options_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let (data, _) = graph_file(dir.path(), 3, 5);
    let text = std::fs::read_to_string(&data).unwrap();
    let bad = dir.path().join("bad.txt");
    let case = |t: &str, want: &[&str]| {
        std::fs::write(&bad, t).unwrap();
        fails(&["train", "--graph", s(&bad), "--lambda", "0.1"], 1, want);
    };
    let name = s(&bad).to_string();
    case("hello\n", &[&format!("{name}:1: not a graph file")]);
    case(
        &text.replacen("loss=hamming", "colour=red", 1),
        &[":1: header: unknown key `colour`"],
    );
    case(
        &text.replacen("examples=3", "examples=4", 1),
        &["the file ends before example 3 (of 4)"],
    );
    case(
        &text.replacen("examples=3", "examples=2", 1),
        &[":15: data after the 2 examples"],
    );
    // Line 4 is example 0's node 0: a missing feature, a bad number.
    let lines: Vec<&str> = text.lines().collect();
    let with = |no: usize, l: &str| {
        let mut v = lines.clone();
        v[no - 1] = l;
        v.join("\n") + "\n"
    };
    case(
        &with(4, "3 0 0.5"),
        &[&format!(
            "{name}:4: example 0, node 0: 1 node features, expected 2"
        )],
    );
    case(
        &with(4, "3 0 0.5 x"),
        &[":4: example 0, node 0: node feature `x`"],
    );
    case(
        &with(4, "3 0 0.5 inf"),
        &[":4: example 0, node 0: node feature `inf` is not finite"],
    );
    case(
        &with(4, "2 0 0.5 0.5"),
        &[":5: example 0, node 1: 3 states, but line 4 has 2"],
    );
    case(
        &with(6, "0 2 1"),
        &[":6: example 0, edge 0: node 2 (v) is not in the example's 2 nodes"],
    );
    case(
        &with(6, "0 1 1 2"),
        &[":6: example 0, edge 0: more than 1 edge features"],
    );
    case(&with(4, "3 5 0.5 0.5"), &["example 0", "node 0", "label 5"]);
    case(&with(4, &"9".repeat(1 << 21)), &[":4: a line longer than"]);
    case(
        &with(6, "0 0 1"),
        &["example 0: edge 0 is a self loop on node 0"],
    );
    // Options that do not apply, an engine that cannot handle the graph.
    fails(
        &["train", s(&data), "--lambda", "0.1", "--engine", "auto"],
        1,
        &["--engine is for graph models"],
    );
    fails(
        &[
            "train",
            "--graph",
            s(&data),
            "--lambda",
            "0.1",
            "--split",
            "test",
        ],
        1,
        &["--split does not apply"],
    );
    fails(
        &[
            "train",
            "--graph",
            s(&data),
            "--lambda",
            "0.1",
            "--engine",
            "graph-cut",
        ],
        1,
        &["graph file", "invalid argument"],
    );
    // A graph model: unknown keys in the model file, data of another kind.
    let model = dir.path().join("m.txt");
    ok(&[
        "train",
        "--graph",
        s(&data),
        "--lambda",
        "0.1",
        "-q",
        "-o",
        s(&model),
    ]);
    let m = std::fs::read_to_string(&model).unwrap();
    std::fs::write(&bad, m.replacen("bias 1", "bias 1\nshape round", 1)).unwrap();
    fails(
        &["predict", s(&bad), s(&data)],
        1,
        &["unknown key `shape` in a graph model"],
    );
    std::fs::write(
        &bad,
        text.replacen("loss=hamming", "loss=normalised-hamming", 1),
    )
    .unwrap();
    fails(
        &["predict", s(&model), s(&bad)],
        1,
        &["loss=normalised-hamming", "but the model has"],
    );
}

#[test]
fn train_without_an_algorithm_picks_by_condition_and_says_so() {
    // Rows of squared norm about 18: condition mean |x|^2 / (lambda n) of
    // 1.5 and 15 with 1,200 examples (BCFW), 1,500 at lambda 1e-5, and too
    // few examples for BCFW with 300.
    let big = tempfile::tempdir().unwrap();
    let small = tempfile::tempdir().unwrap();
    let (train, _) = libsvm_files(big.path(), 1200, 0);
    let (few, _) = libsvm_files(small.path(), 300, 0);
    for (file, lambda, said, name) in [
        (
            &train,
            "1e-2",
            "algorithm: bcfw with exact steps (1200 examples",
            "BCFW",
        ),
        (
            &train,
            "1e-3",
            "algorithm: bcfw with exact steps (1200 examples",
            "BCFW",
        ),
        (
            &train,
            "1e-5",
            "algorithm: prox-p-bmrm (1200 examples",
            "Prox-P-BMRM",
        ),
        (
            &few,
            "1e-2",
            "algorithm: prox-p-bmrm (300 examples",
            "Prox-P-BMRM",
        ),
    ] {
        let out = ok(&["train", s(file), "--lambda", lambda]);
        assert!(out.contains(said), "lambda {lambda}: {out}");
        let json = ok(&["train", s(file), "--lambda", lambda, "--json"]);
        let summary: serde_json::Value =
            serde_json::from_str(json.lines().last().unwrap()).unwrap();
        assert_eq!(summary["algorithm"], name, "lambda {lambda}");
        assert!(
            summary["rel_gap"].as_f64().unwrap() <= 1e-3,
            "lambda {lambda}"
        );
    }
    // An algorithm given is kept.
    let json = ok(&[
        "train",
        s(&train),
        "--lambda",
        "1e-2",
        "-a",
        "bmrm",
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
    assert_eq!(summary["algorithm"], "BMRM");
}
