//! The CoNLL-2000 chunking test half as numberised attributes
//! (`conll2000_chunk_test.tsv.gz`): one token a line, tab-separated, plain or
//! gzipped, after a header line starting with `#`:
//!
//! | column | meaning |
//! |---|---|
//! | `sentence` | sentence index; the tokens of a sentence are consecutive |
//! | `label` | chunk tag id, 1..23 |
//! | `a0`, `a1`, ... | attributes, each with its own vocabulary of ids 1..max, 0 = absent |
//!
//! Every (attribute, id) pair with id >= 1 becomes one indicator feature:
//! attribute `a` with id `v` is feature `offsets[a] + v - 1`, where
//! `offsets[a]` is the sum of the vocabulary sizes (the largest id seen in
//! the file) of the attributes before `a`. The real file has 2,012 sentences,
//! 47,377 tokens, 19 attributes and 74,624 indicator features, about 17
//! active per token; with 23 labels and a bias the chain model has
//! `23 * 74,625 + 23 * 23 + 2 * 23 = 1,716,950` weights.
//!
//! Only the test half of CoNLL-2000 is available, so experiments split it:
//! [`ConllSentences::standard_split`] trains on the first
//! [`CONLL_TRAIN_SENTENCES`] = 1,500 sentences and tests on the remaining 512
//! (file order; the feature space is that of the whole file, so the two
//! halves share it).

use std::path::Path;

use super::text::{bad_input, parse_field, TextFile};
use crate::error::{Error, Result};
use crate::models::{Chain, SparseRows};

/// Chunk tag ids are `1..=CONLL_LABELS` in the file, labels `0..CONLL_LABELS`
/// in the model.
pub const CONLL_LABELS: usize = 23;
/// Sentences in the training part of [`ConllSentences::standard_split`].
pub const CONLL_TRAIN_SENTENCES: usize = 1500;

/// CoNLL sentences with indicator features.
#[derive(Debug, Clone, PartialEq)]
pub struct ConllSentences {
    /// The attribute names of the header (`a0`, `a1`, ...).
    pub attribute_names: Vec<String>,
    /// Vocabulary size (largest id) of every attribute.
    pub vocab_sizes: Vec<usize>,
    /// `offsets[a]`: the first feature of attribute `a`; `offsets[A]` is
    /// the number of features.
    pub offsets: Vec<usize>,
    /// One indicator row per token, sentence after sentence.
    pub features: SparseRows,
    /// The chunk tags as labels `0..23` (tag id - 1).
    pub labels: Vec<u32>,
    /// Tokens per sentence.
    pub lengths: Vec<usize>,
    /// The sentence index of the file for every sentence.
    pub sentence_ids: Vec<usize>,
}

impl ConllSentences {
    /// The number of sentences.
    pub fn num_sentences(&self) -> usize {
        self.lengths.len()
    }
    /// The number of tokens of all sentences.
    pub fn num_tokens(&self) -> usize {
        self.labels.len()
    }
    /// Indicator features in all.
    pub fn num_features(&self) -> usize {
        *self.offsets.last().unwrap_or(&0)
    }
    /// The feature of `attribute` with vocabulary id `id` (`None` for id 0,
    /// absent, or an id beyond the vocabulary).
    pub fn feature_index(&self, attribute: usize, id: usize) -> Option<usize> {
        (id >= 1 && id <= *self.vocab_sizes.get(attribute)?)
            .then(|| self.offsets[attribute] + id - 1)
    }

    /// The sentences `sentences` (indices into this set, in that order) over
    /// the same feature space.
    pub fn select(&self, sentences: impl IntoIterator<Item = usize>) -> ConllSentences {
        let mut starts = Vec::with_capacity(self.lengths.len() + 1);
        starts.push(0);
        for &l in &self.lengths {
            starts.push(starts.last().unwrap_or(&0) + l);
        }
        let chosen: Vec<usize> = sentences.into_iter().collect();
        let tokens = chosen.iter().flat_map(|&s| starts[s]..starts[s + 1]);
        ConllSentences {
            attribute_names: self.attribute_names.clone(),
            vocab_sizes: self.vocab_sizes.clone(),
            offsets: self.offsets.clone(),
            features: self.features.select(tokens.clone()),
            labels: tokens.map(|t| self.labels[t]).collect(),
            lengths: chosen.iter().map(|&s| self.lengths[s]).collect(),
            sentence_ids: chosen.iter().map(|&s| self.sentence_ids[s]).collect(),
        }
    }

    /// `(train, test)`: the first [`CONLL_TRAIN_SENTENCES`] sentences and the
    /// rest (all in train when there are fewer).
    pub fn standard_split(&self) -> (ConllSentences, ConllSentences) {
        let cut = CONLL_TRAIN_SENTENCES.min(self.num_sentences());
        (self.select(0..cut), self.select(cut..self.num_sentences()))
    }

    /// The chain model over these sentences: indicator features (plus a
    /// constant 1 when `bias`), 23 labels. Fails when there are no
    /// sentences.
    pub fn chain(&self, bias: bool) -> Result<Chain> {
        Chain::sparse(
            self.features.clone(),
            &self.lengths,
            self.labels.clone(),
            CONLL_LABELS,
            bias,
        )
    }
}

/// Reads a CoNLL attribute file (plain or gzipped, detected by the magic
/// bytes).
///
/// Errors ([`Error::invalid_argument`]) name the file, the line and the
/// column: a missing or malformed header, a wrong number of columns, a field
/// that is not a non-negative integer, a tag outside 1..23, a sentence whose
/// tokens are not consecutive (sentence indices must increase), a truncated
/// or corrupt gzip stream, or a file without tokens. Empty lines are skipped.
pub fn read_conll(path: impl AsRef<Path>) -> Result<ConllSentences> {
    let path = path.as_ref();
    let mut file = TextFile::open(path)?;
    let header = loop {
        match file.next_line()? {
            None => {
                return Err(Error::invalid_argument(format!(
                    "{}: empty file (expected a header line starting with '#')",
                    path.display()
                )))
            }
            Some((_, "")) => continue,
            Some((n, h)) => break (n, h.to_string()),
        }
    };
    let (hline, header) = header;
    let Some(names) = header.strip_prefix('#') else {
        return Err(bad_input(
            path,
            hline,
            1,
            "expected a header line starting with '#' (# sentence, label, a0, a1, ...)",
        ));
    };
    let names: Vec<&str> = names.trim_start().split('\t').map(str::trim).collect();
    for (c, want) in [(0, "sentence"), (1, "label")] {
        if names.get(c) != Some(&want) {
            return Err(bad_input(
                path,
                hline,
                c + 1,
                format_args!(
                    "header column {} is '{}', expected '{want}'",
                    c + 1,
                    names.get(c).unwrap_or(&"").escape_debug()
                ),
            ));
        }
    }
    if names.len() < 3 {
        return Err(bad_input(
            path,
            hline,
            3,
            "the header names no attribute column",
        ));
    }
    let attributes = names.len() - 2;
    let columns = names.len();

    let mut ids: Vec<u32> = Vec::new(); // attributes per token
    let mut labels = Vec::new();
    let mut lengths: Vec<usize> = Vec::new();
    let mut sentence_ids: Vec<usize> = Vec::new();
    let mut vocab = vec![0usize; attributes];
    while let Some((n, line)) = file.next_line()? {
        if line.is_empty() {
            continue;
        }
        let mut count = 0;
        let mut sentence = 0usize;
        for (c, field) in line.split('\t').enumerate() {
            count += 1;
            if c >= columns {
                continue;
            }
            let col = c + 1;
            match c {
                0 => sentence = parse_field(path, n, col, field, "a sentence index")?,
                1 => {
                    let tag: usize = parse_field(path, n, col, field, "a chunk tag id")?;
                    if !(1..=CONLL_LABELS).contains(&tag) {
                        return Err(bad_input(
                            path,
                            n,
                            col,
                            format_args!("chunk tag {tag} is not in 1..{CONLL_LABELS}"),
                        ));
                    }
                    labels.push((tag - 1) as u32);
                }
                _ => {
                    let v: u32 = parse_field(path, n, col, field, "an attribute id (0 = absent)")?;
                    vocab[c - 2] = vocab[c - 2].max(v as usize);
                    ids.push(v);
                }
            }
        }
        if count != columns {
            return Err(bad_input(
                path,
                n,
                count.min(columns) + 1,
                format_args!("expected {columns} tab-separated columns, found {count}"),
            ));
        }
        match sentence_ids.last() {
            Some(&s) if s == sentence => *lengths.last_mut().expect("a sentence") += 1,
            Some(&s) if sentence < s => {
                return Err(bad_input(
                    path,
                    n,
                    1,
                    format_args!(
                        "sentence {sentence} after sentence {s}: the tokens of a sentence must \
                         be consecutive and sentence indices increase"
                    ),
                ))
            }
            _ => {
                sentence_ids.push(sentence);
                lengths.push(1);
            }
        }
    }
    if labels.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{}: no tokens after the header",
            path.display()
        )));
    }
    let mut offsets = Vec::with_capacity(attributes + 1);
    offsets.push(0);
    for &v in &vocab {
        offsets.push(offsets.last().unwrap_or(&0) + v);
    }
    let num_features = *offsets.last().unwrap_or(&0);
    if num_features > u32::MAX as usize {
        return Err(Error::invalid_argument(format!(
            "{}: {num_features} indicator features do not fit 32-bit indices",
            path.display()
        )));
    }
    let mut indptr = Vec::with_capacity(labels.len() + 1);
    indptr.push(0);
    let mut indices = Vec::new();
    for token in ids.chunks_exact(attributes) {
        for (a, &v) in token.iter().enumerate() {
            if v > 0 {
                indices.push((offsets[a] + v as usize - 1) as u32);
            }
        }
        indptr.push(indices.len());
    }
    let features = SparseRows::indicators(indptr, indices, num_features)?;
    Ok(ConllSentences {
        attribute_names: names[2..].iter().map(|s| s.to_string()).collect(),
        vocab_sizes: vocab,
        offsets,
        features,
        labels,
        lengths,
        sentence_ids,
    })
}
