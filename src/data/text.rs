//! Line-by-line reading of tab-separated text files, plain or gzipped, with
//! errors that name the file, the line and the column.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use flate2::read::MultiGzDecoder;

use crate::error::{Error, Result};

/// The longest line the text readers accept, end included: 256 MiB, far
/// above any valid line (a dense LIBSVM row of ten million features is about
/// 150 MB) and below what a 4 GB address space can grow a buffer to. A file
/// with no line break (6 GB of zero bytes, `/dev/zero`) made the readers
/// grow one line until the allocation aborted.
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// Reads one line, its `\n` included, into `buf` (cleared first), at most
/// `limit + 1` bytes of it: returns the bytes read (0 at the end) and
/// whether the line is longer than `limit` (then `buf` holds its start).
pub(crate) fn read_line_bounded(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<(usize, bool)> {
    use std::io::Read;
    buf.clear();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let n = loop {
        match reader.take(cap).read_until(b'\n', buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    let too_long = buf.len() > limit && buf.last() != Some(&b'\n');
    Ok((n, too_long))
}

/// The message for a line longer than `limit` bytes.
pub(crate) fn too_long(limit: usize) -> String {
    format!(
        "the line is longer than {limit} bytes (no line break within them): not a text \
         file of this format"
    )
}

/// A text file read one line at a time, gunzipped when it starts with the
/// gzip magic bytes `1f 8b` (whatever its name).
pub(crate) struct TextFile {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    /// The 1-based number of the line in `line` (0 before the first).
    line_no: usize,
    line: String,
}

impl TextFile {
    /// Opens `path`.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file = File::open(path)
            .map_err(|e| Error::from_io(format_args!("{}: cannot open", path.display()), e))?;
        let mut raw = BufReader::new(file);
        let head = raw
            .fill_buf()
            .map_err(|e| Error::from_io(format_args!("{}: read error", path.display()), e))?;
        let gz = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
        let reader: Box<dyn BufRead> = if gz {
            Box::new(BufReader::new(MultiGzDecoder::new(raw)))
        } else {
            Box::new(raw)
        };
        Ok(TextFile {
            path: path.to_path_buf(),
            reader,
            line_no: 0,
            line: String::new(),
        })
    }

    /// The next line without its end-of-line characters, with its 1-based
    /// number; `None` at the end. Text that is not UTF-8 is an error naming
    /// the line and the tab-separated column of the first bad byte.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, &str)>> {
        let mut bytes = std::mem::take(&mut self.line).into_bytes();
        bytes.clear();
        let n = match read_line_bounded(self.reader.as_mut(), &mut bytes, MAX_LINE_BYTES) {
            Ok((_, true)) => {
                return Err(Error::invalid_argument(format!(
                    "{}: line {}: {}",
                    self.path.display(),
                    self.line_no + 1,
                    too_long(MAX_LINE_BYTES)
                )))
            }
            Ok((n, false)) => n,
            Err(e) => {
                let what = match e.kind() {
                    ErrorKind::UnexpectedEof => {
                        "the gzip data is truncated (unexpected end of file)".to_string()
                    }
                    ErrorKind::InvalidData => format!("invalid data (corrupt gzip data): {e}"),
                    _ => format!("read error: {e}"),
                };
                return Err(Error::invalid_argument(format!(
                    "{}: line {}: {what}",
                    self.path.display(),
                    self.line_no + 1
                )));
            }
        };
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        self.line = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let column = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\t').count();
                return Err(bad_input(
                    &self.path,
                    self.line_no,
                    column,
                    format_args!("not UTF-8 text (byte {} of the line)", at + 1),
                ));
            }
        };
        let end = self.line.trim_end_matches(['\n', '\r']).len();
        Ok(Some((self.line_no, &self.line[..end])))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// The error for bad input at `line`, `column` (both 1-based) of `path`.
pub(crate) fn bad_input(
    path: &Path,
    line: usize,
    column: usize,
    what: impl std::fmt::Display,
) -> Error {
    Error::invalid_argument(format!(
        "{}: line {line}, column {column}: {what}",
        path.display()
    ))
}

/// Parses field `column` (1-based) of a line, naming `what` it should be.
pub(crate) fn parse_field<T: FromStr>(
    path: &Path,
    line: usize,
    column: usize,
    field: &str,
    what: &str,
) -> Result<T> {
    field.parse().map_err(|_| {
        bad_input(
            path,
            line,
            column,
            format_args!("'{}' is not {what}", field.escape_debug()),
        )
    })
}

/// Checks that `fields` has `want` columns.
pub(crate) fn check_columns(path: &Path, line: usize, got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(bad_input(
            path,
            line,
            got.min(want) + 1,
            format_args!("expected {want} tab-separated columns, found {got}"),
        ));
    }
    Ok(())
}
