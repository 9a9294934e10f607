//! The sparse text format of LIBSVM, LIBLINEAR, SVMlight and SVM-multiclass.
//!
//! One example a line:
//!
//! ```text
//! <label> <index>:<value> <index>:<value> ... # optional comment
//! ```
//!
//! - `label` is a number (`3`, `-1`, `+1`, `2.0` are all fine); labels are
//!   compared as numbers, so `+1`, `1` and `1.0` are the same class. The
//!   distinct labels are mapped to classes `0..k` in increasing numeric order
//!   and kept as [`LabelMap`], so that predictions can be written back in the
//!   file's own labels.
//! - `index` is 1-based (as in LIBSVM/LIBLINEAR): feature `j` of the file is
//!   column `j - 1` here. Indices must be strictly increasing within a line.
//!   Features not listed are 0.
//! - `value` is a finite number.
//! - Everything from `#` to the end of the line is a comment. Lines that are
//!   empty or hold only a comment are skipped.
//! - SVMlight's `qid:<n>` token (query id of ranking data) is **accepted and
//!   ignored**: it must come right after the label and `n` must be a
//!   non-negative integer. It carries no information for classification.
//! - Tokens are separated by spaces or tabs; a trailing `\r` (Windows line
//!   ends) is fine.
//!
//! Files are gunzipped transparently when their name ends in `.gz` or their
//! content starts with the gzip magic bytes.
//!
//! Every error is an [`Error::invalid_argument`] whose message starts with
//! `libsvm file <path>, line <l>, column <c>:` (1-based line and column of
//! the offending token) and says what was expected.
//!
//! ```
//! use bmrm::data::libsvm;
//!
//! let text = "2 1:0.5 3:1 # a comment\n-1 2:2.5\n\n2 qid:7 1:1\n";
//! let data = libsvm::parse(text.as_bytes(), "inline")?;
//! assert_eq!(data.num_examples(), 3);
//! assert_eq!(data.num_features, 3);
//! assert_eq!(data.labels.names(), &["-1", "2"]);     // classes 0 and 1
//! assert_eq!(data.classes, vec![1, 0, 1]);
//! assert_eq!(data.to_dense(3), vec![0.5, 0.0, 1.0, 0.0, 2.5, 0.0, 1.0, 0.0, 0.0]);
//! # Ok::<(), bmrm::Error>(())
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::text::{read_line_bounded, too_long, MAX_LINE_BYTES};
use crate::error::{Error, Result};
use crate::models::SparseRows;

/// The mapping between a file's labels and the classes `0..k`.
///
/// Labels are kept as their canonical text: the shortest decimal form of the
/// number (`+1` and `1.0` become `1`, `-2.50` becomes `-2.5`), so that they
/// can be written to a model file and read back exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelMap {
    /// Label numbers, sorted increasingly; class `c` is `values[c]`.
    values: Vec<f64>,
    names: Vec<String>,
}

impl LabelMap {
    /// The map of the given label values, sorted increasingly, duplicates
    /// removed. Errors on a non-finite value.
    pub fn from_values(values: &[f64]) -> Result<Self> {
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(Error::invalid_argument(format!("label {v} is not finite")));
        }
        let mut v: Vec<f64> = values.iter().map(|&x| x + 0.0).collect(); // -0 -> 0
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v.dedup();
        let names = v.iter().map(|x| canonical(*x)).collect();
        Ok(LabelMap { values: v, names })
    }

    /// The map of label names (each must parse as a number), e.g. read back
    /// from a model file. The order is the numeric order whatever the order
    /// given.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Self> {
        let mut values = Vec::with_capacity(names.len());
        for n in names {
            let n = n.as_ref();
            values.push(parse_label(n).ok_or_else(|| {
                Error::invalid_argument(format!("label {n:?} is not a finite number"))
            })?);
        }
        let map = Self::from_values(&values)?;
        if map.len() != names.len() {
            return Err(Error::invalid_argument(format!(
                "the labels {:?} name the same class twice",
                names.iter().map(|s| s.as_ref()).collect::<Vec<_>>()
            )));
        }
        Ok(map)
    }

    /// `0..k` labelled `0`, `1`, ..., `k-1`.
    pub fn identity(k: usize) -> Self {
        let values: Vec<f64> = (0..k).map(|c| c as f64).collect();
        let names = values.iter().map(|x| canonical(*x)).collect();
        LabelMap { values, names }
    }

    /// Number of classes.
    pub fn len(&self) -> usize {
        self.values.len()
    }
    /// Whether no class was seen.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// The canonical label text of every class, class 0 first.
    pub fn names(&self) -> &[String] {
        &self.names
    }
    /// The label text of class `c`.
    pub fn name(&self, c: usize) -> &str {
        &self.names[c]
    }
    /// The class of a label value, if the map has it.
    pub fn class_of(&self, value: f64) -> Option<usize> {
        let v = value + 0.0;
        self.values
            .binary_search_by(|x| x.partial_cmp(&v).unwrap())
            .ok()
    }
}

/// The shortest text that parses back to `x` (Rust's `Display` for `f64`
/// round-trips).
fn canonical(x: f64) -> String {
    format!("{x}")
}

/// A label: a finite number, with an optional leading `+`.
fn parse_label(s: &str) -> Option<f64> {
    let t = s.strip_prefix('+').unwrap_or(s);
    if t.starts_with(['+', '-']) && s.starts_with('+') {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A data set read from a LIBSVM-format file, stored as compressed sparse
/// rows (CSR).
#[derive(Debug, Clone, PartialEq)]
pub struct LibsvmData {
    /// The class of every example, in `0..labels.len()`.
    pub classes: Vec<usize>,
    /// The file's labels and the classes they map to.
    pub labels: LabelMap,
    /// The number of features: the largest index in the file (1-based), 0
    /// when there is none.
    pub num_features: usize,
    /// Row `i` is `col[row_ptr[i]..row_ptr[i + 1]]`, `val[...]`.
    pub row_ptr: Vec<usize>,
    /// 0-based column (feature) indices, increasing within a row.
    pub col: Vec<u32>,
    /// The values of `col`, in the same order.
    pub val: Vec<f32>,
}

impl LibsvmData {
    /// The number of examples (rows).
    pub fn num_examples(&self) -> usize {
        self.classes.len()
    }

    /// The (column, value) pairs of example `i`.
    pub fn row(&self, i: usize) -> impl Iterator<Item = (usize, f32)> + '_ {
        let r = self.row_ptr[i]..self.row_ptr[i + 1];
        self.col[r.clone()]
            .iter()
            .zip(&self.val[r])
            .map(|(&c, &v)| (c as usize, v))
    }

    /// The features as a dense row-major `m x d` matrix (what
    /// [`crate::models::Multiclass`] takes). Features with an index beyond
    /// `d` are dropped (as LIBLINEAR does with a test file that has more
    /// features than the model); `d` larger than `num_features` pads with 0.
    pub fn to_dense(&self, d: usize) -> Vec<f32> {
        let m = self.num_examples();
        let mut x = vec![0.0f32; m * d];
        for i in 0..m {
            let row = &mut x[i * d..(i + 1) * d];
            for (j, v) in self.row(i) {
                if j < d {
                    row[j] = v;
                }
            }
        }
        x
    }

    /// The features as sparse rows over `d` columns (for
    /// [`crate::models::Multiclass::new_sparse`]); entries with an index
    /// beyond `d` are dropped, as in [`LibsvmData::to_dense`].
    pub fn to_sparse_rows(&self, d: usize) -> Result<SparseRows> {
        if d >= self.num_features {
            return SparseRows::new(self.row_ptr.clone(), self.col.clone(), self.val.clone(), d);
        }
        let mut indptr = Vec::with_capacity(self.row_ptr.len());
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        indptr.push(0);
        for i in 0..self.num_examples() {
            for (j, v) in self.row(i) {
                if j < d {
                    idx.push(j as u32);
                    val.push(v);
                }
            }
            indptr.push(idx.len());
        }
        SparseRows::new(indptr, idx, val, d)
    }

    /// The density of the features: stored entries over `m * num_features`.
    pub fn density(&self) -> f64 {
        self.col.len() as f64 / (self.num_examples() as f64 * self.num_features.max(1) as f64)
    }

    /// Relabels the examples with the classes of another map (typically the
    /// training set's, read from a model file). Labels that map has not got
    /// become `None`.
    pub fn classes_in(&self, map: &LabelMap) -> Vec<Option<usize>> {
        self.classes
            .iter()
            .map(|&c| map.class_of(self.labels.values[c]))
            .collect()
    }

    /// The first `n` examples (all when there are fewer). Labels that no
    /// longer occur keep their class (the label map is unchanged).
    pub fn truncate(&mut self, n: usize) {
        if n >= self.num_examples() {
            return;
        }
        let nnz = self.row_ptr[n];
        self.classes.truncate(n);
        self.row_ptr.truncate(n + 1);
        self.col.truncate(nnz);
        self.val.truncate(nnz);
    }
}

/// Reads a LIBSVM-format file (plain or gzipped); see the module docs.
pub fn read(path: impl AsRef<Path>) -> Result<LibsvmData> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = File::open(path)
        .map_err(|e| Error::from_io(format_args!("libsvm file {name}: cannot open"), e))?;
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| Error::from_io(format_args!("libsvm file {name}: read error"), e))?;
    let gz = (head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b)
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    if gz {
        parse(BufReader::new(MultiGzDecoder::new(reader)), &name)
    } else {
        parse(reader, &name)
    }
}

/// Parses LIBSVM-format text from `reader`; `name` is used in messages as
/// the file name.
pub fn parse(reader: impl BufRead, name: &str) -> Result<LibsvmData> {
    parse_bounded(reader, name, MAX_LINE_BYTES)
}

/// [`parse`] with lines of at most `max_line` bytes.
pub(crate) fn parse_bounded(
    mut reader: impl BufRead,
    name: &str,
    max_line: usize,
) -> Result<LibsvmData> {
    let mut raw_labels: Vec<f64> = Vec::new();
    let mut row_ptr = vec![0usize];
    let mut col: Vec<u32> = Vec::new();
    let mut val: Vec<f32> = Vec::new();
    let mut max_index = 0usize;
    let mut bytes = Vec::new();
    for line_no in 1.. {
        let read = read_line_bounded(&mut reader, &mut bytes, max_line).map_err(|e| {
            Error::invalid_argument(format!(
                "libsvm file {name}, line {line_no}: read error: {e}"
            ))
        })?;
        match read {
            (0, _) => break,
            (_, true) => {
                return Err(Error::invalid_argument(format!(
                    "libsvm file {name}, line {line_no}: {}",
                    too_long(max_line)
                )))
            }
            _ => {}
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        let line = std::str::from_utf8(&bytes).map_err(|e| {
            Error::invalid_argument(format!(
                "libsvm file {name}, line {line_no}, column {}: not valid UTF-8 text",
                e.valid_up_to() + 1
            ))
        })?;
        let content = match line.find('#') {
            Some(p) => &line[..p],
            None => line,
        };
        let at = |offset: usize, msg: String| {
            // Columns count characters, 1-based.
            let column = line[..offset].chars().count() + 1;
            Error::invalid_argument(format!(
                "libsvm file {name}, line {line_no}, column {column}: {msg}"
            ))
        };
        let mut tokens = tokens(content).peekable();
        let Some((off, label)) = tokens.next() else {
            continue; // empty or comment-only
        };
        let y = parse_label(label).ok_or_else(|| {
            if label.contains(':') {
                at(
                    off,
                    format!(
                        "the line starts with {label:?}: a line must start with the label \
                         (a number), then index:value pairs"
                    ),
                )
            } else {
                at(off, format!("the label {label:?} is not a finite number"))
            }
        })?;
        if let Some((qoff, tok)) = tokens.peek().copied() {
            if let Some(q) = tok.strip_prefix("qid:") {
                if q.parse::<u64>().is_err() {
                    return Err(at(
                        qoff,
                        format!("{tok:?}: a qid must be a non-negative integer"),
                    ));
                }
                tokens.next();
            }
        }
        let mut last = 0usize;
        for (toff, tok) in tokens {
            let Some((idx, value)) = tok.split_once(':') else {
                return Err(at(toff, format!("{tok:?} is not an index:value pair")));
            };
            if idx == "qid" {
                return Err(at(
                    toff,
                    format!("{tok:?}: qid must come right after the label"),
                ));
            }
            let j: usize = match idx.parse() {
                Ok(j) if idx.bytes().all(|b| b.is_ascii_digit()) => j,
                _ => {
                    return Err(at(
                        toff,
                        format!("{tok:?}: the index {idx:?} is not a positive integer"),
                    ))
                }
            };
            if j == 0 {
                return Err(at(
                    toff,
                    format!("{tok:?}: feature indices are 1-based, 0 is not allowed"),
                ));
            }
            if j <= last {
                return Err(at(
                    toff,
                    format!(
                        "{tok:?}: index {j} after index {last}; indices must be strictly \
                         increasing within a line"
                    ),
                ));
            }
            if j > u32::MAX as usize {
                return Err(at(
                    toff,
                    format!("{tok:?}: index {j} is too large (at most {})", u32::MAX),
                ));
            }
            let voff = toff + idx.len() + 1;
            let v: f32 = match value.parse::<f32>() {
                Ok(v) if v.is_finite() => v,
                Ok(v) => {
                    return Err(at(
                        voff,
                        format!("{tok:?}: the value {value:?} is {v} (must be finite)"),
                    ))
                }
                Err(_) => {
                    return Err(at(
                        voff,
                        format!("{tok:?}: the value {value:?} is not a number"),
                    ))
                }
            };
            last = j;
            max_index = max_index.max(j);
            if v != 0.0 {
                col.push((j - 1) as u32);
                val.push(v);
            }
        }
        raw_labels.push(y);
        row_ptr.push(col.len());
    }
    if raw_labels.is_empty() {
        return Err(Error::invalid_argument(format!(
            "libsvm file {name}: no examples (the file is empty or holds only comments)"
        )));
    }
    let labels = LabelMap::from_values(&raw_labels)?;
    let classes = raw_labels
        .iter()
        .map(|&y| labels.class_of(y).expect("every label is in the map"))
        .collect();
    Ok(LibsvmData {
        classes,
        labels,
        num_features: max_index,
        row_ptr,
        col,
        val,
    })
}

/// The whitespace-separated tokens of `s` with their byte offsets.
fn tokens(s: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = s;
    let mut base = 0usize;
    std::iter::from_fn(move || {
        let start = rest.find(|c: char| !c.is_ascii_whitespace())?;
        let after = &rest[start..];
        let len = after
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(after.len());
        let tok = &after[..len];
        let off = base + start;
        rest = &after[len..];
        base = off + len;
        Some((off, tok))
    })
}

/// Writes examples in LIBSVM format: `labels[i]` then the non-zero features
/// of the dense row-major `m x d` matrix `x` as 1-based `index:value` pairs
/// (values in Rust's shortest round-trip form, so reading them back gives
/// the same `f32`).
pub fn write_dense(
    mut out: impl Write,
    x: &[f32],
    d: usize,
    labels: &[impl std::fmt::Display],
) -> std::io::Result<()> {
    assert_eq!(
        x.len(),
        labels.len() * d,
        "x must hold labels.len() rows of d"
    );
    for (i, y) in labels.iter().enumerate() {
        write!(out, "{y}")?;
        for (j, v) in x[i * d..(i + 1) * d].iter().enumerate() {
            if *v != 0.0 {
                write!(out, " {}:{v}", j + 1)?;
            }
        }
        writeln!(out)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests;
