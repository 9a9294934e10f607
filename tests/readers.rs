//! The OCR and CoNLL readers on files written here (good ones, plain and
//! gzipped, and malformed ones whose errors must name the file, the line
//! and the column), and on the real files in ../shared/data when present.

use std::io::Write;
use std::path::{Path, PathBuf};

use bmrm::data::conll::{read_conll, CONLL_LABELS, CONLL_TRAIN_SENTENCES};
use bmrm::data::ocr::{read_ocr, OcrSplit, OCR_PIXELS};
use bmrm::oracle::MaxOracle;
use bmrm::Error;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bmrm-readers-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The message of an InvalidArgument error, checked to name the file.
fn message(r: Result<impl std::fmt::Debug, Error>, path: &Path) -> String {
    match r {
        Err(Error {
            kind: bmrm::ErrorKind::InvalidArgument,
            message: m,
            ..
        }) => {
            assert!(
                m.contains(&path.display().to_string()),
                "{m} lacks the file name"
            );
            m
        }
        other => panic!(
            "expected InvalidArgument for {}, got {other:?}",
            path.display()
        ),
    }
}

fn assert_at(m: &str, line: usize, column: usize, fragment: &str) {
    let at = format!("line {line}, column {column}:");
    assert!(m.contains(&at), "'{m}' does not name {at}");
    assert!(m.contains(fragment), "'{m}' lacks '{fragment}'");
}

/// A malformed-file case: a name, the edit of the good lines, and the line,
/// column and message fragment the error must give.
type Case = (
    &'static str,
    fn(&mut Vec<String>),
    usize,
    usize,
    &'static str,
);

/// Applies each case's edit to `good`, writes the result plain and gzipped
/// (named `<name>-<gz><suffix>`) and checks that `read` fails naming the
/// file, the case's line and column, and its fragment. Both readers share
/// this check, so they are held to the same standard.
fn check_edits<T: std::fmt::Debug>(
    dir: &Path,
    good: &[String],
    cases: Vec<Case>,
    suffix: &str,
    read: impl Fn(&Path) -> Result<T, Error>,
) {
    for (name, edit, line, col, fragment) in cases {
        let mut lines = good.to_vec();
        edit(&mut lines);
        for gz in [false, true] {
            let bytes = if gz {
                gzip(&join(&lines))
            } else {
                join(&lines)
            };
            let p = write(dir, &format!("{name}-{gz}{suffix}"), &bytes);
            let m = message(read(&p), &p);
            assert_at(&m, line, col, fragment);
        }
    }
}

// ---------------------------------------------------------------------------
// OCR

/// Lines of a small OCR file: words "ab" (fold 0), "c" (fold 3), "zed"
/// (fold 0); the pixels of letter n are (n + j) % 3 == 0.
fn ocr_lines() -> Vec<String> {
    let words = [("ab", 0), ("c", 3), ("zed", 0)];
    let mut lines = Vec::new();
    let mut id = 1;
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
            fields.extend(
                (0..OCR_PIXELS).map(|j| u8::from((id as usize + j).is_multiple_of(3)).to_string()),
            );
            lines.push(fields.join("\t"));
            id += 1;
        }
    }
    lines
}

fn join(lines: &[String]) -> Vec<u8> {
    let mut s = lines.join("\n");
    s.push('\n');
    s.into_bytes()
}

#[test]
fn ocr_reads_plain_and_gzipped() {
    let dir = temp_dir("ocr-good");
    let text = join(&ocr_lines());
    let plain = read_ocr(write(&dir, "ocr.tsv", &text)).unwrap();
    // gzip is detected by the magic bytes, not the name.
    let gz = read_ocr(write(&dir, "ocr-no-suffix", &gzip(&text))).unwrap();
    assert_eq!(plain, gz);
    // CRLF line ends and a missing final newline are fine.
    let crlf = lines_crlf(&ocr_lines());
    assert_eq!(read_ocr(write(&dir, "crlf.tsv", &crlf)).unwrap(), plain);
    assert_eq!(plain.num_words(), 3);
    assert_eq!(plain.num_letters(), 6);
    assert_eq!(plain.lengths, vec![2, 1, 3]);
    assert_eq!(plain.labels, vec![0, 1, 2, 25, 4, 3]);
    assert_eq!(plain.folds, vec![0, 3, 0]);
    assert_eq!(plain.word_ids, vec![1, 2, 3]);
    assert_eq!(plain.pixels.len(), 6 * OCR_PIXELS);
    assert_eq!(plain.pixels[0], 0.0); // letter 1, pixel 0: (1 + 0) % 3 != 0
    assert_eq!(plain.pixels[2], 1.0);
    let (train, test) = plain.split(OcrSplit::Small);
    assert_eq!(
        (train.lengths.clone(), test.lengths.clone()),
        (vec![2, 3], vec![1])
    );
    assert_eq!(train.labels, vec![0, 1, 25, 4, 3]);
    assert_eq!(
        &train.pixels[2 * OCR_PIXELS..],
        &plain.pixels[3 * OCR_PIXELS..]
    );
    let (train, test) = plain.split(OcrSplit::Large);
    assert_eq!((train.num_words(), test.num_words()), (1, 2));
    let model = plain.chain().unwrap();
    assert_eq!(model.dim(), 4082);
    assert_eq!(model.num_examples(), 3);
    std::fs::remove_dir_all(&dir).ok();
}

fn lines_crlf(lines: &[String]) -> Vec<u8> {
    lines.join("\r\n").into_bytes()
}

#[test]
fn ocr_errors_name_file_line_and_column() {
    let dir = temp_dir("ocr-bad");
    let good = ocr_lines();
    let cases: Vec<Case> = vec![
        (
            "columns",
            |l| {
                let i = l[1].rfind('\t').unwrap();
                l[1].truncate(i);
            },
            2,
            134,
            "expected 134 tab-separated columns, found 133",
        ),
        ("extra", |l| l[0].push_str("\t0"), 1, 135, "found 135"),
        (
            "number",
            |l| l[2] = l[2].replacen("3", "x3", 1),
            3,
            1,
            "'x3' is not an integer",
        ),
        (
            "pixel",
            |l| set_field(l, 0, 9, "2"),
            1,
            10,
            "pixel '2' is not 0 or 1",
        ),
        (
            "pixel-text",
            |l| set_field(l, 3, 133, "0.5"),
            4,
            134,
            "pixel '0.5' is not 0 or 1",
        ),
        (
            "letter",
            |l| set_field(l, 1, 1, "B"),
            2,
            2,
            "'B' is not a letter a..z",
        ),
        (
            "fold",
            |l| set_field(l, 2, 5, "10"),
            3,
            6,
            "fold 10 is not in 0..9",
        ),
        (
            "position",
            |l| set_field(l, 1, 4, "3"),
            2,
            5,
            "position 3, but this is letter 2",
        ),
        (
            "next",
            |l| set_field(l, 0, 2, "7"),
            2,
            1,
            "names 7 as the next letter",
        ),
        (
            "word",
            |l| set_field(l, 1, 3, "9"),
            2,
            4,
            "word id 9 inside word 1",
        ),
        (
            "fold-change",
            |l| set_field(l, 4, 5, "1"),
            5,
            6,
            "fold 1 inside a word of fold 0",
        ),
        (
            "ends",
            |l| {
                l.pop();
            },
            5,
            3,
            "ends inside word 3",
        ),
    ];
    check_edits(&dir, &good, cases, ".tsv", |p| read_ocr(p));
    // Truncated gzip: the message names the file and the line reached.
    let gz = gzip(&join(&good));
    let p = write(&dir, "truncated.gz", &gz[..gz.len() / 2]);
    let m = message(read_ocr(&p), &p);
    println!("truncated gzip: {m}");
    assert!(
        m.contains(": line ") && m.contains("the gzip data is truncated"),
        "{m}"
    );
    // Corrupt gzip body.
    let mut bad = gz.clone();
    for b in &mut bad[20..40] {
        *b ^= 0x5a;
    }
    let p = write(&dir, "corrupt.gz", &bad);
    let m = message(read_ocr(&p), &p);
    println!("corrupt gzip: {m}");
    assert!(m.contains("line "), "{m}");
    let p = write(&dir, "empty.tsv", b"");
    assert!(message(read_ocr(&p), &p).contains("no letters"));
    let p = dir.join("missing.tsv");
    let e = read_ocr(&p).unwrap_err();
    assert_eq!(e.kind(), bmrm::ErrorKind::Io, "{e}");
    assert!(e.message().contains("cannot open") && e.message().contains("missing.tsv"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Replaces field `field` (0-based) of line `line` (0-based).
fn set_field(lines: &mut [String], line: usize, field: usize, value: &str) {
    let mut f: Vec<String> = lines[line].split('\t').map(String::from).collect();
    f[field] = value.to_string();
    lines[line] = f.join("\t");
}

// ---------------------------------------------------------------------------
// CoNLL

fn conll_text() -> Vec<String> {
    [
        "# sentence\tlabel\ta0\ta1\ta2",
        "0\t1\t1\t0\t2",
        "0\t3\t2\t1\t0",
        "1\t23\t0\t0\t1",
        "4\t2\t3\t1\t2",
        "4\t2\t1\t2\t0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn conll_reads_plain_and_gzipped() {
    let dir = temp_dir("conll-good");
    let text = join(&conll_text());
    let plain = read_conll(write(&dir, "c.tsv", &text)).unwrap();
    assert_eq!(
        plain,
        read_conll(write(&dir, "c.bin", &gzip(&text))).unwrap()
    );
    assert_eq!(plain.attribute_names, vec!["a0", "a1", "a2"]);
    assert_eq!(plain.vocab_sizes, vec![3, 2, 2]);
    assert_eq!(plain.offsets, vec![0, 3, 5, 7]);
    assert_eq!(plain.num_features(), 7);
    assert_eq!(plain.lengths, vec![2, 1, 2]);
    assert_eq!(plain.sentence_ids, vec![0, 1, 4]);
    assert_eq!(plain.labels, vec![0, 2, 22, 1, 1]);
    let row = |t: usize| plain.features.row(t).0.to_vec();
    assert_eq!(row(0), vec![0, 6]); // a0 = 1 -> 0, a2 = 2 -> 5 + 1
    assert_eq!(row(1), vec![1, 3]);
    assert_eq!(row(2), vec![5]);
    assert_eq!(row(3), vec![2, 3, 6]);
    assert_eq!(plain.feature_index(1, 2), Some(4));
    assert_eq!(plain.feature_index(1, 0), None);
    assert_eq!(plain.feature_index(1, 3), None);
    let (train, test) = plain.standard_split();
    assert_eq!((train.num_sentences(), test.num_sentences()), (3, 0));
    let sub = plain.select([2, 0]);
    assert_eq!(sub.lengths, vec![2, 2]);
    assert_eq!(sub.labels, vec![1, 1, 0, 2]);
    assert_eq!(sub.features.row(0).0, &[2, 3, 6]);
    let model = plain.chain(true).unwrap();
    assert_eq!(
        model.dim(),
        CONLL_LABELS * 8 + CONLL_LABELS * CONLL_LABELS + 2 * CONLL_LABELS
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn conll_errors_name_file_line_and_column() {
    let dir = temp_dir("conll-bad");
    let cases: Vec<Case> = vec![
        (
            "header",
            |l| {
                l.remove(0);
            },
            1,
            1,
            "header line starting with '#'",
        ),
        (
            "header-name",
            |l| l[0] = "# sentence\ttag\ta0\ta1\ta2".into(),
            1,
            2,
            "expected 'label'",
        ),
        (
            "columns",
            |l| l[2] = "0\t3\t2\t1".into(),
            3,
            5,
            "expected 5 tab-separated columns, found 4",
        ),
        ("extra", |l| l[2].push_str("\t7"), 3, 6, "found 6"),
        (
            "number",
            |l| l[3] = "1\t23\t0\tx\t1".into(),
            4,
            4,
            "'x' is not an attribute id",
        ),
        (
            "negative",
            |l| l[3] = "1\t23\t0\t-1\t1".into(),
            4,
            4,
            "'-1' is not",
        ),
        (
            "tag",
            |l| l[3] = "1\t24\t0\t0\t1".into(),
            4,
            2,
            "chunk tag 24 is not in 1..23",
        ),
        (
            "tag0",
            |l| l[3] = "1\t0\t0\t0\t1".into(),
            4,
            2,
            "chunk tag 0",
        ),
        (
            "order",
            |l| l.push("1\t2\t1\t1\t1".into()),
            7,
            1,
            "sentence 1 after sentence 4",
        ),
    ];
    check_edits(&dir, &conll_text(), cases, "", |p| read_conll(p));
    let gz = gzip(&join(&conll_text()));
    let p = write(&dir, "truncated", &gz[..gz.len() - 12]);
    let m = message(read_conll(&p), &p);
    assert!(m.contains("line "), "{m}");
    let p = write(&dir, "only-header", b"# sentence\tlabel\ta0\n");
    assert!(message(read_conll(&p), &p).contains("no tokens"));
    std::fs::remove_dir_all(&dir).ok();
}

// ---------------------------------------------------------------------------
// The real files, when present.

fn shared_data(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(name);
    if p.is_file() {
        Some(p)
    } else {
        println!(
            "skipped: {} is absent (the project works without ../shared)",
            p.display()
        );
        None
    }
}

#[test]
fn real_ocr_file() {
    let Some(path) = shared_data("ocr_letters.tsv.gz") else {
        return;
    };
    let words = read_ocr(&path).unwrap();
    assert_eq!(words.num_words(), 6877);
    assert_eq!(words.num_letters(), 52152);
    assert!(words.pixels.iter().all(|&p| p == 0.0 || p == 1.0));
    let (train, test) = words.split(OcrSplit::Large);
    assert_eq!((train.num_words(), test.num_words()), (6251, 626));
    let (train, test) = words.split(OcrSplit::Small);
    assert_eq!((train.num_words(), test.num_words()), (626, 6251));
    let model = train.chain().unwrap();
    assert_eq!(model.dim(), 4082);
    // At w = 0 the oracle picks the lowest wrong letter everywhere: loss 1.
    let w = vec![0.0; model.dim()];
    let mut c = bmrm::Corner::new(model.dim());
    model.max_oracle(0, &w, &mut c).unwrap();
    assert_eq!(c.loss(), 1.0);
    println!(
        "OCR: {} words, {} letters, longest word {}",
        words.num_words(),
        words.num_letters(),
        words.lengths.iter().max().unwrap()
    );
}

#[test]
fn real_conll_file() {
    let Some(path) = shared_data("conll2000_chunk_test.tsv.gz") else {
        return;
    };
    let data = read_conll(&path).unwrap();
    assert_eq!(data.num_sentences(), 2012);
    assert_eq!(data.num_tokens(), 47377);
    assert_eq!(data.attribute_names.len(), 19);
    let (train, test) = data.standard_split();
    assert_eq!(train.num_sentences(), CONLL_TRAIN_SENTENCES);
    assert_eq!(test.num_sentences(), 512);
    assert_eq!(train.num_tokens() + test.num_tokens(), 47377);
    let model = train.chain(true).unwrap();
    assert_eq!(
        model.dim(),
        CONLL_LABELS * (data.num_features() + 1) + CONLL_LABELS * CONLL_LABELS + 2 * CONLL_LABELS
    );
    let distinct: std::collections::BTreeSet<u32> = data.labels.iter().copied().collect();
    assert_eq!(distinct.len(), 19);
    println!(
        "CoNLL: {} sentences, {} tokens, {} features ({:.1} active per token), dim {}",
        data.num_sentences(),
        data.num_tokens(),
        data.num_features(),
        data.features.nnz() as f64 / data.num_tokens() as f64,
        model.dim()
    );
}

#[test]
fn bad_utf8_names_line_and_column_in_both_readers() {
    let dir = temp_dir("utf8");
    // A 0xff byte in field 4 of line 3 (CoNLL) and in field 2 of line 2 (OCR).
    let mut conll = conll_text();
    conll[2] = "0\t3\t2\tX\t1".into();
    let conll_bytes: Vec<u8> = join(&conll)
        .into_iter()
        .map(|b| if b == b'X' { 0xff } else { b })
        .collect();
    let mut ocr = ocr_lines();
    ocr[1] = ocr[1].replacen("\tb\t", "\tX\t", 1);
    let ocr_bytes: Vec<u8> = join(&ocr)
        .into_iter()
        .map(|b| if b == b'X' { 0xff } else { b })
        .collect();
    for gz in [false, true] {
        let pack = |b: &[u8]| if gz { gzip(b) } else { b.to_vec() };
        let p = write(&dir, &format!("conll-{gz}"), &pack(&conll_bytes));
        assert_at(&message(read_conll(&p), &p), 3, 4, "not UTF-8");
        let p = write(&dir, &format!("ocr-{gz}"), &pack(&ocr_bytes));
        assert_at(&message(read_ocr(&p), &p), 2, 2, "not UTF-8");
    }
    std::fs::remove_dir_all(&dir).ok();
}
