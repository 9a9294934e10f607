//! Loading data sets for the command line: the formats, their detection, the
//! standard splits, and the feature space a model is trained in (so that a
//! test file is read into the same space).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::time::Instant;

use bmrm::data::conll::{read_conll, ConllSentences, CONLL_LABELS};
use bmrm::data::idx;
use bmrm::data::libsvm::{self, LabelMap};
use bmrm::data::ocr::{read_ocr, OcrWords, OCR_LABELS, OCR_PIXELS};
use bmrm::models::SparseRows;
use clap::ValueEnum;

/// The data formats the tool reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Guess: a directory is idx; a .tsv[.gz] file is conll when its first line starts
    /// with `#`, else ocr; anything else is libsvm.
    Auto,
    /// `label index:value ...` text (LIBSVM, LIBLINEAR, SVMlight, SVM-multiclass), plain or .gz.
    Libsvm,
    /// A directory with the four IDX files of MNIST / Fashion-MNIST
    /// (train-images-idx3-ubyte[.gz], ...).
    Idx,
    /// OCR handwritten words, letter.data layout (one letter a line; ocr_letters.tsv.gz).
    Ocr,
    /// CoNLL-2000 chunking attributes (one token a line, `#` header; conll2000_chunk_test.tsv.gz).
    Conll,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Libsvm => "libsvm",
            Format::Idx => "idx",
            Format::Ocr => "ocr",
            Format::Conll => "conll",
        }
    }
    fn from_name(s: &str) -> Option<Format> {
        Format::value_variants()
            .iter()
            .copied()
            .find(|f| f.name() == s)
    }
}

/// Which part of a data set to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Split {
    /// idx: the train-* files; ocr: folds 1..9 (OCR-large); conll: the first 1,500 sentences.
    Train,
    /// idx: the t10k-* files; ocr: fold 0; conll: the sentences after the first 1,500.
    Test,
    /// The whole file (ocr, conll).
    All,
}

/// Where a data set comes from, as given on the command line.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    pub path: &'a Path,
    pub format: Format,
    /// The split; `None` when not given (then the command's default).
    pub split: Option<Split>,
    /// The command's default split.
    pub default_split: Split,
    /// OCR folds (override the split).
    pub folds: Option<&'a [u8]>,
    /// Only the first `limit` examples (sequences for ocr / conll).
    pub limit: Option<usize>,
}

impl Source<'_> {
    /// The format, with `auto` resolved.
    pub fn resolved_format(&self) -> Result<Format, String> {
        if !self.path.exists() {
            return Err(format!(
                "data {}: no such file or directory",
                self.path.display()
            ));
        }
        Ok(match self.format {
            Format::Auto if self.path.is_dir() => Format::Idx,
            Format::Auto => {
                let name = self.path.to_string_lossy().to_ascii_lowercase();
                if name.ends_with(".tsv") || name.ends_with(".tsv.gz") {
                    if first_byte(self.path) == Some(b'#') {
                        Format::Conll
                    } else {
                        Format::Ocr
                    }
                } else {
                    Format::Libsvm
                }
            }
            f => f,
        })
    }

    fn split(&self) -> Split {
        self.split.unwrap_or(self.default_split)
    }

    /// A short description for messages: `file.svm (libsvm)`.
    pub fn describe(&self) -> String {
        let f = self.resolved_format().unwrap_or(self.format);
        let part = match (f, self.folds, self.split()) {
            (Format::Libsvm, ..) => String::new(),
            (Format::Ocr, Some(folds), _) => format!(", folds {folds:?}"),
            (Format::Idx, _, Split::Train) => ", train-* files".into(),
            (Format::Idx, _, _) => ", t10k-* files".into(),
            (Format::Ocr, _, Split::Train) => ", folds 1-9".into(),
            (Format::Ocr, _, Split::Test) => ", fold 0".into(),
            (Format::Conll, _, Split::Train) => ", first 1500 sentences".into(),
            (Format::Conll, _, Split::Test) => ", sentences after the first 1500".into(),
            (_, _, Split::All) => ", all".into(),
            (Format::Auto, ..) => String::new(),
        };
        format!("{} ({}{part})", self.path.display(), f.name())
    }
}

/// The first byte of the (possibly gzipped) file.
fn first_byte(path: &Path) -> Option<u8> {
    let mut r = BufReader::new(std::fs::File::open(path).ok()?);
    let head = r.fill_buf().ok()?;
    let gz = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    let mut b = [0u8; 1];
    if gz {
        flate2::read::MultiGzDecoder::new(r)
            .read_exact(&mut b)
            .ok()?;
    } else {
        r.read_exact(&mut b).ok()?;
    }
    Some(b[0])
}

/// Token (or example) features.
pub enum Features {
    /// Row-major, `d` per row.
    Dense {
        x: Vec<f32>,
        d: usize,
    },
    Sparse(SparseRows),
}

/// The feature space and label set of a model: what a data set is read into.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub input: Format,
    /// Label names of classes `0..k`.
    pub labels: Vec<String>,
    /// Features per example (token).
    pub d: usize,
    /// CoNLL: the vocabulary size of every attribute (fixes the indicator offsets).
    pub conll_vocab: Option<Vec<usize>>,
}

/// A data set read into a feature space.
pub struct Examples {
    pub features: Features,
    /// The class of every example (token) in the space's labels; `None` for
    /// a label the space does not have (libsvm test files only).
    pub truth: Vec<Option<usize>>,
    /// Sequence lengths (ocr, conll); `None` for independent examples.
    pub lengths: Option<Vec<usize>>,
    pub space: Space,
    pub what: String,
    pub seconds: f64,
}

impl Examples {
    /// Examples (tokens) in all.
    pub fn len(&self) -> usize {
        self.truth.len()
    }
    /// Sequences (or examples when there are no sequences).
    pub fn num_sequences(&self) -> usize {
        self.lengths.as_ref().map_or(self.len(), Vec::len)
    }
}

impl Examples {
    /// The sequences (examples) `ids`, in that order, as a new set.
    pub fn select(&self, ids: &[usize]) -> Examples {
        let starts: Vec<usize> = match &self.lengths {
            Some(l) => std::iter::once(0)
                .chain(l.iter().scan(0, |acc, &x| {
                    *acc += x;
                    Some(*acc)
                }))
                .collect(),
            None => (0..=self.len()).collect(),
        };
        let tokens: Vec<usize> = ids.iter().flat_map(|&i| starts[i]..starts[i + 1]).collect();
        let features = match &self.features {
            Features::Dense { x, d } => Features::Dense {
                x: tokens
                    .iter()
                    .flat_map(|&t| x[t * d..(t + 1) * d].iter().copied())
                    .collect(),
                d: *d,
            },
            Features::Sparse(rows) => Features::Sparse(rows.select(tokens.iter().copied())),
        };
        Examples {
            features,
            truth: tokens.iter().map(|&t| self.truth[t]).collect(),
            lengths: self
                .lengths
                .as_ref()
                .map(|l| ids.iter().map(|&i| l[i]).collect()),
            space: self.space.clone(),
            what: self.what.clone(),
            seconds: 0.0,
        }
    }
}

fn letters() -> Vec<String> {
    (0..OCR_LABELS as u8)
        .map(|c| char::from(b'a' + c).to_string())
        .collect()
}
fn conll_tags() -> Vec<String> {
    (1..=CONLL_LABELS).map(|t| t.to_string()).collect()
}

/// Reads `src`; with `space` (a trained model's) the data is read into that
/// space: the same label set and features (extra libsvm features dropped,
/// CoNLL ids remapped to the model's vocabulary, unknown ids dropped).
pub fn load(src: &Source, space: Option<&Space>) -> Result<Examples, String> {
    let t = Instant::now();
    let format = src.resolved_format()?;
    if let Some(sp) = space {
        if sp.input != format && !(sp.input == Format::Idx && format == Format::Libsvm) {
            return Err(format!(
                "data {}: the model was trained on {} data, this is {}",
                src.describe(),
                sp.input.name(),
                format.name()
            ));
        }
    }
    if src.folds.is_some() && format != Format::Ocr {
        return Err("--folds applies to ocr data only".into());
    }
    if src.split.is_some() && format == Format::Libsvm {
        return Err("--split applies to idx, ocr and conll data, not to a libsvm file".into());
    }
    let e = |e: bmrm::Error| e.to_string();
    let mut out = match format {
        Format::Idx => {
            let train = match src.split() {
                Split::Train => true,
                Split::Test => false,
                Split::All => {
                    return Err("--split all: an idx directory is read as train-* or t10k-*".into())
                }
            };
            let (x, d, y) = idx::fashion_mnist(src.path, train, src.limit).map_err(e)?;
            let labels = LabelMap::identity(10).names().to_vec();
            if let Some(sp) = space {
                if sp.d != d {
                    return Err(format!(
                        "data {}: {d} features per example but the model has {}",
                        src.describe(),
                        sp.d
                    ));
                }
            }
            Examples {
                features: Features::Dense { x, d },
                truth: y.into_iter().map(Some).collect(),
                lengths: None,
                space: Space {
                    input: Format::Idx,
                    labels,
                    d,
                    conll_vocab: None,
                },
                what: String::new(),
                seconds: 0.0,
            }
        }
        Format::Libsvm | Format::Auto => {
            let mut data = libsvm::read(src.path).map_err(e)?;
            if let Some(n) = src.limit {
                data.truncate(n);
            }
            let (d, labels, truth) = match space {
                Some(sp) => {
                    let map = LabelMap::from_names(&sp.labels).map_err(e)?;
                    warn_features_beyond(&data, sp.d, &src.describe());
                    (sp.d, sp.labels.clone(), data.classes_in(&map))
                }
                None => {
                    if data.num_features == 0 {
                        return Err(format!(
                            "data {}: no example has a feature (every line is just a label)",
                            src.describe()
                        ));
                    }
                    (
                        data.num_features,
                        data.labels.names().to_vec(),
                        data.classes.iter().map(|&c| Some(c)).collect(),
                    )
                }
            };
            // Sparse storage when it saves memory and time.
            let features = if data.density() < 0.25 {
                Features::Sparse(data.to_sparse_rows(d).map_err(e)?)
            } else {
                Features::Dense {
                    x: data.to_dense(d),
                    d,
                }
            };
            Examples {
                features,
                truth,
                lengths: None,
                space: Space {
                    input: Format::Libsvm,
                    labels,
                    d,
                    conll_vocab: None,
                },
                what: String::new(),
                seconds: 0.0,
            }
        }
        Format::Ocr => {
            let words = read_ocr(src.path).map_err(e)?;
            let mut words: OcrWords = match (src.folds, src.split()) {
                (Some(folds), _) => {
                    if let Some(f) = folds.iter().find(|&&f| f >= 10) {
                        return Err(format!("--folds: fold {f} is not in 0..9"));
                    }
                    words.select(|i| folds.contains(&words.folds[i]))
                }
                (None, Split::Train) => words.select(|i| words.folds[i] != 0),
                (None, Split::Test) => words.select(|i| words.folds[i] == 0),
                (None, Split::All) => words,
            };
            if let Some(n) = src.limit {
                words = words.select(|i| i < n);
            }
            if words.num_words() == 0 {
                return Err(format!("data {}: no words selected", src.describe()));
            }
            Examples {
                features: Features::Dense {
                    x: words.pixels,
                    d: OCR_PIXELS,
                },
                truth: words.labels.iter().map(|&y| Some(y as usize)).collect(),
                lengths: Some(words.lengths),
                space: Space {
                    input: Format::Ocr,
                    labels: letters(),
                    d: OCR_PIXELS,
                    conll_vocab: None,
                },
                what: String::new(),
                seconds: 0.0,
            }
        }
        Format::Conll => {
            let all = read_conll(src.path).map_err(e)?;
            let n = all.num_sentences();
            let cut = bmrm::data::conll::CONLL_TRAIN_SENTENCES.min(n);
            let mut s: ConllSentences = match src.split() {
                Split::Train => all.select(0..cut),
                Split::Test => all.select(cut..n),
                Split::All => all,
            };
            if let Some(limit) = src.limit {
                s = s.select(0..limit.min(s.num_sentences()));
            }
            if s.num_sentences() == 0 {
                return Err(format!("data {}: no sentences selected", src.describe()));
            }
            let (rows, vocab) = match space.and_then(|sp| sp.conll_vocab.as_ref()) {
                Some(vocab) => (remap_conll(&s, vocab)?, vocab.clone()),
                None => (s.features.clone(), s.vocab_sizes.clone()),
            };
            let d = rows.num_cols();
            Examples {
                features: Features::Sparse(rows),
                truth: s.labels.iter().map(|&y| Some(y as usize)).collect(),
                lengths: Some(s.lengths),
                space: Space {
                    input: Format::Conll,
                    labels: conll_tags(),
                    d,
                    conll_vocab: Some(vocab),
                },
                what: String::new(),
                seconds: 0.0,
            }
        }
    };
    out.what = src.describe();
    out.seconds = t.elapsed().as_secs_f64();
    Ok(out)
}

/// Notes on stderr the features of `data` beyond the model's `d`: they are
/// dropped (a linear model's weights for them would be 0), which is
/// LIBLINEAR's behaviour, but not silently.
fn warn_features_beyond(data: &libsvm::LibsvmData, d: usize, what: &str) {
    if data.num_features <= d {
        return;
    }
    let examples = (0..data.num_examples())
        .filter(|&i| data.row(i).any(|(j, _)| j >= d))
        .count();
    eprintln!(
        "bmrm: warning: data {what}: {examples} examples have features beyond the model's {d} \
         (up to feature {}); they are ignored (weight 0)",
        data.num_features
    );
}

/// CoNLL indicator rows of `s` (in its own feature space) moved to the space
/// of the vocabulary sizes `vocab` (a model's); ids beyond it are dropped.
fn remap_conll(s: &ConllSentences, vocab: &[usize]) -> Result<SparseRows, String> {
    if vocab.len() != s.vocab_sizes.len() {
        return Err(format!(
            "the model has {} CoNLL attributes, the data {}",
            vocab.len(),
            s.vocab_sizes.len()
        ));
    }
    let mut offsets = vec![0usize];
    for v in vocab {
        offsets.push(offsets.last().unwrap() + v);
    }
    let (indptr, indices, _) = s.features.parts();
    let mut new_ptr = Vec::with_capacity(indptr.len());
    let mut new_idx = Vec::with_capacity(indices.len());
    new_ptr.push(0);
    for r in 0..s.features.num_rows() {
        for &f in &indices[indptr[r]..indptr[r + 1]] {
            let f = f as usize;
            // The attribute a with offsets[a] <= f < offsets[a + 1].
            let a = s.offsets.partition_point(|&o| o <= f) - 1;
            let id = f - s.offsets[a] + 1;
            if id <= vocab[a] {
                new_idx.push((offsets[a] + id - 1) as u32);
            }
        }
        new_ptr.push(new_idx.len());
    }
    SparseRows::indicators(new_ptr, new_idx, offsets[vocab.len()]).map_err(|e| e.to_string())
}

/// Parses the `input` value of a model file.
pub fn format_from_name(s: &str) -> Option<Format> {
    Format::from_name(s).filter(|f| *f != Format::Auto)
}
