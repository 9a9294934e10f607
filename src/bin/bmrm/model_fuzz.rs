//! A mutation fuzzer over model files, through what `bmrm predict` does in
//! this process (read the model, load the data into its space, rebuild the
//! task, predict): every corrupted file gives an error or a prediction,
//! never a panic. Settings: `BMRM_FUZZ_SEED` (default 1) and
//! `BMRM_FUZZ_MODEL_CASES` (default 6000, shared among the three models).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Kind, Provenance, Saved, Task};
use crate::data::{self, Format, Source, Split};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn source(path: &Path, format: Format) -> Source<'_> {
    Source {
        path,
        format,
        split: (format != Format::Libsvm).then_some(Split::All),
        default_split: Split::All,
        folds: None,
        limit: None,
    }
}

/// What `bmrm predict` does with a model file and a data file.
fn predict(model: &Path, data_file: &Path, format: Format) -> Result<usize, String> {
    let saved = Saved::read(model)?;
    let ex = data::load(&source(data_file, format), Some(&saved.space))?;
    let task = saved.task(ex)?;
    Ok(task.errors(&saved.w).predictions.len())
}

fn ocr_text() -> String {
    let words = [("ab", 0), ("c", 3), ("zed", 1)];
    let mut out = String::new();
    let mut id = 1i64;
    for (w, (word, fold)) in words.iter().enumerate() {
        for (p, ch) in word.chars().enumerate() {
            let next = if p + 1 == word.len() { -1 } else { id + 1 };
            let mut fields = vec![
                id.to_string(),
                ch.to_string(),
                next.to_string(),
                (w + 1).to_string(),
                (p + 1).to_string(),
                fold.to_string(),
            ];
            fields.extend((0..128).map(|j| u8::from((id + j) % 3 == 0).to_string()));
            out.push_str(&fields.join("\t"));
            out.push('\n');
            id += 1;
        }
    }
    out
}

const CONLL: &str = "# sentence\tlabel\ta0\ta1\ta2\n0\t1\t1\t0\t2\n0\t3\t2\t1\t0\n1\t23\t0\t0\t1\n\
                     4\t2\t3\t1\t2\n4\t2\t1\t2\t0\n";
const LIBSVM: &str = "2 1:0.5 3:1\n-1 2:2.5\n7 1:1 4:-3\n2 2:1\n";

/// A valid model file of `kind` over the data at `path` (weights made up:
/// only their count and layout matter here).
fn model_text(path: &Path, format: Format, kind: Kind) -> String {
    let ex = data::load(&source(path, format), None).unwrap();
    let n = ex.truth.len();
    let task = Task::new(ex, kind, true).unwrap();
    let dim = task.problem().dim();
    let w: Vec<f64> = (0..dim).map(|j| ((j * 7919) % 13) as f64 - 6.0).collect();
    let info = bmrm::Info::default();
    let how = Provenance {
        algorithm: "BMRM",
        lambda: 0.1,
        train_examples: n,
        info: &info,
    };
    let file = path.with_extension("model");
    task.to_file(&w, &how).write(&file).unwrap();
    std::fs::read_to_string(&file).unwrap()
}

const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "18446744073709551615",
    "18446744073709551614",
    "4294967296",
    "9223372036854775807",
    "1e308",
    "nan",
    "",
    "x",
    "3 3",
];

/// A corrupted copy of a model file: header values replaced (by edge values
/// or a neighbour of their own), lines dropped or repeated, bytes flipped.
fn mutate(rng: &mut ChaCha8Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..rng.gen_range(1..=3) {
        let header_end = lines
            .iter()
            .position(|l| l.starts_with("weights"))
            .unwrap_or(lines.len());
        let i = rng.gen_range(0..lines.len().max(1));
        match rng.gen_range(0..6) {
            0 | 1 if header_end > 1 => {
                // A header value: an edge value, or each number shifted by one.
                let h = rng.gen_range(1..header_end);
                let (k, v) = lines[h].split_once(' ').unwrap_or((&lines[h], ""));
                let v = if rng.gen_bool(0.5) {
                    VALUES[rng.gen_range(0..VALUES.len())].to_string()
                } else {
                    let shift: i64 = if rng.gen_bool(0.5) { 1 } else { -1 };
                    v.split(' ')
                        .map(|x| match x.parse::<i64>() {
                            Ok(n) if rng.gen_bool(0.5) => (n + shift).to_string(),
                            _ => x.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                lines[h] = format!("{k} {v}");
            }
            2 if !lines.is_empty() => {
                lines.remove(i);
            }
            3 if !lines.is_empty() => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            4 if !lines.is_empty() => {
                let v = VALUES[rng.gen_range(0..VALUES.len())];
                lines[i] = v.to_string();
            }
            _ if !lines.is_empty() => {
                let mut b = lines[i].clone().into_bytes();
                if !b.is_empty() {
                    let j = rng.gen_range(0..b.len());
                    b[j] = rng.gen_range(0x20..0x7f);
                }
                lines[i] = String::from_utf8_lossy(&b).into_owned();
            }
            _ => {}
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[test]
fn corrupted_model_files_give_an_error_or_a_prediction_never_a_panic() {
    let seed = setting("BMRM_FUZZ_SEED", 1);
    let cases = setting("BMRM_FUZZ_MODEL_CASES", 6000);
    let dir = tempfile::tempdir().unwrap();
    let mut models = Vec::new();
    for (name, text, format, kind) in [
        (
            "mc.svm",
            LIBSVM.to_string(),
            Format::Libsvm,
            Kind::Multiclass,
        ),
        ("ocr.tsv", ocr_text(), Format::Ocr, Kind::Chain),
        ("conll.tsv", CONLL.to_string(), Format::Conll, Kind::Chain),
    ] {
        let data_file = dir.path().join(name);
        std::fs::write(&data_file, text).unwrap();
        let model = model_text(&data_file, format, kind);
        let path = data_file.with_extension("model");
        assert!(
            predict(&path, &data_file, format).is_ok(),
            "the seed {name}"
        );
        models.push((name, data_file, format, model));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut ok, mut errors, mut panics) = (0, 0, Vec::new());
    for case in 0..cases {
        let (name, data_file, format, good) = &models[(case % 3) as usize];
        let text = mutate(&mut rng, good);
        let path = dir.path().join("case.model");
        std::fs::write(&path, &text).unwrap();
        match catch_unwind(AssertUnwindSafe(|| predict(&path, data_file, *format))) {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(_)) => errors += 1,
            Err(_) if panics.len() < 5 => panics.push(format!("seed {seed} case {case} ({name})")),
            Err(_) => panics.push(String::new()),
        }
    }
    println!("FUZZ model files, seed {seed}: {cases} cases: {ok} predicted, {errors} errors");
    assert!(panics.is_empty(), "{} panics: {:?}", panics.len(), panics);
    assert!(ok > 0 && errors > 0);
}
