//! The OCR handwritten-words data set (Taskar et al., 2003) in the classic
//! `letter.data` layout: one letter a line, tab-separated, plain or gzipped.
//!
//! | column | meaning |
//! |---|---|
//! | 1 | letter id |
//! | 2 | letter, `a`..`z` |
//! | 3 | id of the next letter of the word, `-1` after the last |
//! | 4 | word id |
//! | 5 | position of the letter in its word, from 1 |
//! | 6 | cross-validation fold, 0..9 |
//! | 7..134 | the 16 x 8 binary pixels, row-major, 0 or 1 |
//!
//! Words are built from consecutive letters: a word ends at the letter whose
//! next id is `-1`, and every other letter must be followed by the letter it
//! names. The real file (`ocr_letters.tsv.gz`) holds 6,877 words of 52,152
//! letters.
//!
//! ```no_run
//! use bmrm::data::ocr::{read_ocr, OcrSplit};
//! use bmrm::{Algorithm, Problem, Settings, Solver};
//! let words = read_ocr("../shared/data/ocr_letters.tsv.gz")?;
//! let (train, test) = words.split(OcrSplit::Large);      // 6,251 / 626 words
//! let model = train.chain()?;                            // d = 4,082
//! let mut solver = Solver::new(Problem::from_max_oracle(model), Settings::new(Algorithm::ProxPBmrm, 0.01))?;
//! let mut w = vec![0.0; solver.dim()];
//! solver.run(&mut w)?;
//! println!("test letter error {}", test.chain()?.hamming_error(&w));
//! # Ok::<(), bmrm::Error>(())
//! ```

use std::path::Path;

use super::text::{bad_input, check_columns, parse_field, TextFile};
use crate::error::{Error, Result};
use crate::models::Chain;

/// Pixels per letter (16 rows x 8 columns).
pub const OCR_PIXELS: usize = 128;
/// Labels: the letters `a`..`z`.
pub const OCR_LABELS: usize = 26;
/// Cross-validation folds, numbered `0..OCR_FOLDS`.
pub const OCR_FOLDS: u8 = 10;
/// Columns per line.
const COLUMNS: usize = 6 + OCR_PIXELS;

/// The standard splits of the OCR data set, by fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OcrSplit {
    /// Train on fold 0 (626 words), test on folds 1..9.
    Small,
    /// Train on folds 1..9 (6,251 words), test on fold 0 (626 words): the
    /// setting of the BCFW papers' tables.
    Large,
}

/// OCR words: the letters of all words in file order, with per-word
/// lengths, folds and ids.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrWords {
    /// `OCR_PIXELS` values (0.0 or 1.0) per letter, letter after letter.
    pub pixels: Vec<f32>,
    /// The letters as labels `0..26` (`a` = 0).
    pub labels: Vec<u32>,
    /// Letters per word.
    pub lengths: Vec<usize>,
    /// The fold of every word.
    pub folds: Vec<u8>,
    /// The word id of every word (column 4).
    pub word_ids: Vec<u64>,
}

impl OcrWords {
    /// The number of words.
    pub fn num_words(&self) -> usize {
        self.lengths.len()
    }
    /// The number of letters of all words.
    pub fn num_letters(&self) -> usize {
        self.labels.len()
    }

    /// The words for which `keep(word index)` holds, in order.
    pub fn select(&self, mut keep: impl FnMut(usize) -> bool) -> OcrWords {
        let mut out = OcrWords {
            pixels: Vec::new(),
            labels: Vec::new(),
            lengths: Vec::new(),
            folds: Vec::new(),
            word_ids: Vec::new(),
        };
        let mut start = 0;
        for (i, &len) in self.lengths.iter().enumerate() {
            if keep(i) {
                out.pixels.extend_from_slice(
                    &self.pixels[start * OCR_PIXELS..(start + len) * OCR_PIXELS],
                );
                out.labels
                    .extend_from_slice(&self.labels[start..start + len]);
                out.lengths.push(len);
                out.folds.push(self.folds[i]);
                out.word_ids.push(self.word_ids[i]);
            }
            start += len;
        }
        out
    }

    /// `(train, test)` of a standard split.
    pub fn split(&self, split: OcrSplit) -> (OcrWords, OcrWords) {
        let in_train = |fold: u8| match split {
            OcrSplit::Small => fold == 0,
            OcrSplit::Large => fold != 0,
        };
        (
            self.select(|i| in_train(self.folds[i])),
            self.select(|i| !in_train(self.folds[i])),
        )
    }

    /// The standard chain model over these words: the 128 pixels plus a
    /// constant 1 per letter, 26 labels, `d = 26 * 129 + 26 * 26 + 2 * 26 =
    /// 4082`. Fails when there are no words.
    pub fn chain(&self) -> Result<Chain> {
        Chain::dense(
            self.pixels.clone(),
            OCR_PIXELS,
            &self.lengths,
            self.labels.clone(),
            OCR_LABELS,
            true,
        )
    }
}

/// Reads an OCR file (plain or gzipped, detected by the magic bytes).
///
/// Errors ([`Error::invalid_argument`]) name the file, the line and the
/// column: a wrong number of columns, a field that is not a number, a letter
/// outside `a`..`z`, a fold outside 0..9, a pixel other than 0 or 1, a
/// position that does not continue the word, a word id or fold that changes
/// inside a word, a letter that is not the one the previous line named as
/// next, a file that ends inside a word, a truncated or corrupt gzip stream,
/// or a file without letters. Empty lines are skipped.
pub fn read_ocr(path: impl AsRef<Path>) -> Result<OcrWords> {
    let path = path.as_ref();
    let mut file = TextFile::open(path)?;
    let mut words = OcrWords {
        pixels: Vec::new(),
        labels: Vec::new(),
        lengths: Vec::new(),
        folds: Vec::new(),
        word_ids: Vec::new(),
    };
    // The word being read: its length so far and the next letter id announced.
    let mut len = 0usize;
    let mut expect_next: i64 = -1;
    let mut last_line = 0;
    while let Some((n, line)) = file.next_line()? {
        if line.is_empty() {
            continue;
        }
        last_line = n;
        let fields: Vec<&str> = line.split('\t').collect();
        check_columns(path, n, fields.len(), COLUMNS)?;
        let num =
            |c: usize| -> Result<i64> { parse_field(path, n, c, fields[c - 1], "an integer") };
        let id = num(1)?;
        let letter = fields[1];
        let label = match letter.as_bytes() {
            [c @ b'a'..=b'z'] => u32::from(c - b'a'),
            _ => {
                return Err(bad_input(
                    path,
                    n,
                    2,
                    format_args!("'{}' is not a letter a..z", letter.escape_debug()),
                ))
            }
        };
        let next = num(3)?;
        if next < -1 {
            return Err(bad_input(
                path,
                n,
                3,
                format_args!("next letter id {next} is below -1"),
            ));
        }
        let word = num(4)?;
        if word < 0 {
            return Err(bad_input(
                path,
                n,
                4,
                format_args!("word id {word} is negative"),
            ));
        }
        let position = num(5)?;
        let fold = num(6)?;
        if !(0..i64::from(OCR_FOLDS)).contains(&fold) {
            return Err(bad_input(
                path,
                n,
                6,
                format_args!("fold {fold} is not in 0..9"),
            ));
        }
        if len > 0 && id != expect_next {
            return Err(bad_input(
                path,
                n,
                1,
                format_args!(
                    "letter id {id}, but the previous line names {expect_next} as the next letter \
                     of its word"
                ),
            ));
        }
        if position != len as i64 + 1 {
            return Err(bad_input(
                path,
                n,
                5,
                format_args!(
                    "position {position}, but this is letter {} of its word",
                    len + 1
                ),
            ));
        }
        if len == 0 {
            words.word_ids.push(word as u64);
            words.folds.push(fold as u8);
        } else {
            let w = words.word_ids.len() - 1;
            if words.word_ids[w] != word as u64 {
                return Err(bad_input(
                    path,
                    n,
                    4,
                    format_args!("word id {word} inside word {}", words.word_ids[w]),
                ));
            }
            if words.folds[w] != fold as u8 {
                return Err(bad_input(
                    path,
                    n,
                    6,
                    format_args!("fold {fold} inside a word of fold {}", words.folds[w]),
                ));
            }
        }
        for (j, p) in fields[6..].iter().enumerate() {
            let v = match *p {
                "0" => 0.0,
                "1" => 1.0,
                _ => {
                    return Err(bad_input(
                        path,
                        n,
                        7 + j,
                        format_args!("pixel '{}' is not 0 or 1", p.escape_debug()),
                    ))
                }
            };
            words.pixels.push(v);
        }
        words.labels.push(label);
        len += 1;
        if next == -1 {
            words.lengths.push(len);
            len = 0;
        }
        expect_next = next;
    }
    if len > 0 {
        return Err(bad_input(
            path,
            last_line,
            3,
            format_args!(
                "the file ends inside word {} (its last letter names {expect_next} as next)",
                words.word_ids.last().copied().unwrap_or_default()
            ),
        ));
    }
    if words.lengths.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{}: no letters (an OCR file has one letter a line)",
            file.path().display()
        )));
    }
    Ok(words)
}
