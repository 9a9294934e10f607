//! The model file: a readable text header, then the weights, one a line.
//!
//! ```text
//! bmrm-model 1
//! # written by bmrm 0.1.0; every weight is written in the shortest form that reads back exactly
//! model multiclass
//! classes 3
//! labels -1 2 7
//! features 4
//! bias 1
//! lambda 0.001
//! C 2
//! train-examples 500
//! algorithm Prox-P-BMRM
//! primal 0.123
//! gap 0.0001
//! weights 15
//! 0.5
//! ...
//! ```
//!
//! The first line is the magic `bmrm-model 1` (1 is the format version).
//! Then `key value` lines (`#` lines are comments), in any order, up to
//! `weights N`, which is followed by exactly `N` numbers, one a line. A key
//! `bmrm predict` does not know is an error naming it (model.rs), never
//! silently ignored. The weights are laid out as the library's model lays out `w`
//! (for multiclass: class `c`'s block of `features + bias` weights at
//! `c * (features + bias)`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &str = "bmrm-model";
const VERSION: &str = "1";

/// A model as stored: the header's key-value pairs (in the order written)
/// and the weights.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFile {
    pub header: Vec<(String, String)>,
    pub weights: Vec<f64>,
}

impl ModelFile {
    pub fn new() -> Self {
        ModelFile {
            header: Vec::new(),
            weights: Vec::new(),
        }
    }

    /// Adds `key value` (the value must not contain a line break).
    pub fn set(&mut self, key: &str, value: impl std::fmt::Display) {
        let v = value.to_string();
        debug_assert!(!v.contains('\n') && !key.contains(char::is_whitespace));
        self.header.push((key.to_string(), v));
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of a required key, parsed.
    pub fn require<T: std::str::FromStr>(&self, path: &Path, key: &str) -> Result<T, String> {
        let v = self.get(key).ok_or_else(|| {
            format!(
                "model file {}: the header has no `{key}` line",
                path.display()
            )
        })?;
        v.parse().map_err(|_| {
            format!(
                "model file {}: `{key} {v}`: the value is not a valid {}",
                path.display(),
                std::any::type_name::<T>()
            )
        })
    }

    /// Writes the model to `path` atomically: into a temporary file in the
    /// same directory, synced, then renamed over `path`. A failed write or a
    /// kill at any moment leaves the old file (or none) whole, never a
    /// truncated model.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let e = |err: std::io::Error| format!("model file {}: cannot write: {err}", path.display());
        let path = &target(path)?;
        let (tmp, file) = create_temporary(path)?;
        let written = (|| -> std::io::Result<()> {
            let mut out = BufWriter::new(file);
            self.write_to(&mut out)?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map_err(e)
    }

    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(out, "{MAGIC} {VERSION}")?;
        writeln!(
            out,
            "# written by bmrm {}; weights in the shortest form that reads back exactly",
            env!("CARGO_PKG_VERSION")
        )?;
        for (k, v) in &self.header {
            writeln!(out, "{k} {v}")?;
        }
        writeln!(out, "weights {}", self.weights.len())?;
        for w in &self.weights {
            writeln!(out, "{w:e}")?;
        }
        out.flush()
    }

    pub fn read(path: &Path) -> Result<ModelFile, String> {
        let name = path.display();
        let file = std::fs::File::open(path)
            .map_err(|e| format!("model file {name}: cannot open: {e}"))?;
        let mut reader = BufReader::new(file);
        let mut no = 0;
        // Lines are bounded like the data readers' (a file without line
        // breaks, /dev/zero, would grow one line without end).
        let mut next = || -> Result<Option<(usize, String)>, String> {
            let mut buf = Vec::new();
            let limit = bmrm::data::MAX_LINE_BYTES;
            let n = (&mut reader)
                .take(limit as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| format!("model file {name}, line {}: {e}", no + 1))?;
            if n == 0 {
                return Ok(None);
            }
            no += 1;
            if buf.len() > limit && buf.last() != Some(&b'\n') {
                return Err(format!(
                    "model file {name}, line {no}: the line is longer than {limit} bytes \
                     (no line break within them): not a bmrm model file"
                ));
            }
            if buf.last() == Some(&b'\n') {
                buf.pop();
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
            }
            String::from_utf8(buf)
                .map(|l| Some((no, l)))
                .map_err(|_| format!("model file {name}, line {no}: not UTF-8 text"))
        };
        match next()? {
            Some((_, l)) if l.trim_end() == format!("{MAGIC} {VERSION}") => {}
            Some((_, l)) if l.starts_with(MAGIC) => {
                return Err(format!(
                "model file {name}, line 1: `{}`: this bmrm reads format version {VERSION} only",
                l.trim_end()
            ))
            }
            _ => {
                return Err(format!(
                    "model file {name}, line 1: not a bmrm model file (it starts with \
                     `{MAGIC} {VERSION}`; write one with `bmrm train ... --output FILE`)"
                ))
            }
        }
        let mut model = ModelFile::new();
        let mut seen = BTreeMap::new();
        let n = loop {
            let Some((no, line)) = next()? else {
                return Err(format!(
                    "model file {name}: the file ends before the `weights N` line"
                ));
            };
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line.split_once(' ').unwrap_or((line, ""));
            if k == "weights" {
                break v.trim().parse::<usize>().map_err(|_| {
                    format!("model file {name}, line {no}: `{line}`: N must be a count")
                })?;
            }
            if let Some(first) = seen.insert(k.to_string(), no) {
                return Err(format!(
                    "model file {name}, line {no}: `{k}` again (first on line {first})"
                ));
            }
            model.header.push((k.to_string(), v.trim().to_string()));
        };
        model.weights.reserve(n.min(1 << 24));
        for _ in 0..n {
            let Some((no, line)) = next()? else {
                return Err(format!(
                    "model file {name}: truncated: {} weights of {n} read",
                    model.weights.len()
                ));
            };
            let w: f64 = line
                .trim()
                .parse()
                .map_err(|_| format!("model file {name}, line {no}: `{line}` is not a number"))?;
            if !w.is_finite() {
                return Err(format!(
                    "model file {name}, line {no}: weight {w} is not finite"
                ));
            }
            model.weights.push(w);
        }
        while let Some((no, line)) = next()? {
            if !line.trim().is_empty() {
                return Err(format!(
                    "model file {name}, line {no}: data after the {n} weights"
                ));
            }
        }
        Ok(model)
    }
}

/// The path the model replaces: `path` itself when it is a regular file or
/// does not exist, the file a symbolic link names (so the link is kept and
/// its target written). Anything else (a directory, a device such as
/// /dev/null, a FIFO, a socket, a link to one of them or to nothing) is
/// refused: the rename would replace the special file itself.
fn target(path: &Path) -> Result<PathBuf, String> {
    let name = path.display();
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(path.to_path_buf()),
        Err(e) => return Err(format!("model file {name}: cannot inspect: {e}")),
        Ok(m) => m,
    };
    let (resolved, meta) = if meta.file_type().is_symlink() {
        let resolved = std::fs::canonicalize(path).map_err(|e| {
            format!("model file {name}: a symbolic link whose target cannot be resolved: {e}")
        })?;
        let meta = std::fs::metadata(&resolved)
            .map_err(|e| format!("model file {name}: cannot inspect: {e}"))?;
        (resolved, meta)
    } else {
        (path.to_path_buf(), meta)
    };
    if !meta.file_type().is_file() {
        let kind = kind_of(&meta.file_type());
        let via = if resolved.as_path() == path {
            String::new()
        } else {
            format!(" (the link's target {})", resolved.display())
        };
        return Err(format!(
            "model file {name}{via}: is {kind}, not a regular file; give a new path or a regular file"
        ));
    }
    Ok(resolved)
}

/// What a file that is not a regular file is, for messages.
fn kind_of(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// Creates a new temporary file beside `path` (same directory, so the
/// rename is atomic): `.NAME.PID.K.tmp`.
fn create_temporary(path: &Path) -> Result<(PathBuf, std::fs::File), String> {
    let name = path.display();
    let file_name = path
        .file_name()
        .ok_or_else(|| format!("model file {name}: not a file name"))?
        .to_string_lossy();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "model file {name}: the directory {} does not exist",
            dir.display()
        ));
    }
    let mut last = None;
    for k in 0..100 {
        let tmp = dir.join(format!(".{file_name}.{}.{k}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(format!(
                    "model file {name}: cannot create a file in {}: {e}",
                    dir.display()
                ))
            }
        }
    }
    Err(format!(
        "model file {name}: cannot create a temporary file in {}: {}",
        dir.display(),
        last.map_or(String::new(), |e| e.to_string())
    ))
}

/// Checks before training that the model can be written to `path`: its
/// directory exists and takes a new file, and `path` is not a directory.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let (tmp, _file) = create_temporary(&target(path)?)?;
    std::fs::remove_file(&tmp).map_err(|e| {
        format!(
            "model file {}: cannot remove the test file {}: {e}",
            path.display(),
            tmp.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly_and_rejects_damage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.txt");
        let mut m = ModelFile::new();
        m.set("model", "multiclass");
        m.set("labels", "-1 2 7");
        m.set("lambda", 1e-3 / 3.0);
        m.weights = vec![
            0.1,
            -1.0 / 3.0,
            1e-300,
            0.0,
            -0.0,
            123456789.125,
            f64::MIN_POSITIVE,
        ];
        m.write(&p).unwrap();
        let r = ModelFile::read(&p).unwrap();
        assert_eq!(r.header, m.header);
        assert_eq!(
            r.weights.iter().map(|w| w.to_bits()).collect::<Vec<_>>(),
            m.weights.iter().map(|w| w.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(r.require::<f64>(&p, "lambda").unwrap(), 1e-3 / 3.0);
        assert!(r.require::<f64>(&p, "labels").is_err());
        assert!(r
            .require::<f64>(&p, "nothing")
            .unwrap_err()
            .contains("no `nothing`"));

        let text = std::fs::read_to_string(&p).unwrap();
        let bad = |t: &str, want: &str| {
            std::fs::write(&p, t).unwrap();
            let e = ModelFile::read(&p).unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        bad("hello\n", "not a bmrm model file");
        bad("bmrm-model 2\n", "version 1 only");
        bad(
            &text.replace("weights 7", "weights 8"),
            "truncated: 7 weights of 8",
        );
        bad(
            &text.replace("weights 7", "weights 6"),
            "data after the 6 weights",
        );
        bad(&text.replace("1e-1\n", "x\n"), "`x` is not a number");
        bad("bmrm-model 1\nmodel a\nmodel b\n", "`model` again");
        bad(
            "bmrm-model 1\nmodel a\n",
            "ends before the `weights N` line",
        );
    }
}
