//! The IDX format of MNIST and Fashion-MNIST.
//!
//! An IDX file is a 4-byte magic number `0x00 0x00 T N` (`T` the element type,
//! `N` the number of dimensions), then `N` dimension sizes as big-endian
//! `u32`, then the elements in row-major order. Only `T = 0x08` (unsigned
//! byte) is supported: it is what the image and label files of MNIST and
//! Fashion-MNIST use. Images files have 3 dimensions (count, rows, cols),
//! label files 1 (count).
//!
//! Files are gunzipped transparently when their name ends in `.gz` or their
//! content starts with the gzip magic bytes. Every error is an
//! [`Error::invalid_argument`] whose message starts with `IDX file <path>:` and
//! says what is wrong (cannot be opened, bad magic, unsupported type,
//! truncated, trailing data, count mismatch).
//!
//! ```no_run
//! use bmrm::data::idx;
//! use bmrm::models::Multiclass;
//!
//! let (x, d, y) = idx::fashion_mnist(idx::FASHION_MNIST_DIR, true, Some(1000))?;
//! let model = Multiclass::new(x, d, y, 10, true)?;
//! # Ok::<(), bmrm::Error>(())
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::error::{Error, Result};

/// Where the Debian package `dataset-fashion-mnist` installs the data set
/// (`train-images-idx3-ubyte.gz`, `train-labels-idx1-ubyte.gz`,
/// `t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz`).
pub const FASHION_MNIST_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// The IDX element type code of unsigned bytes.
const TYPE_U8: u8 = 0x08;

/// An array read from an IDX file of unsigned bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    /// The dimension sizes from the header (the first one possibly reduced
    /// by a `max_items` limit, see [`read_idx_u8`]).
    pub dims: Vec<usize>,
    /// The elements, row-major; `data.len()` is the product of `dims`.
    pub data: Vec<u8>,
}

/// A set of grey-level images: `count` images of `rows x cols` pixels, image
/// after image, each row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Images {
    /// Grey levels 0..=255, `count * rows * cols` of them.
    pub pixels: Vec<u8>,
    /// The number of images.
    pub count: usize,
    /// Pixel rows per image.
    pub rows: usize,
    /// Pixel columns per image.
    pub cols: usize,
}

impl Images {
    /// Pixels per image, `rows * cols`.
    pub fn pixels_per_image(&self) -> usize {
        self.rows * self.cols
    }
    /// The pixels of image `i`.
    pub fn image(&self, i: usize) -> &[u8] {
        let n = self.pixels_per_image();
        &self.pixels[i * n..(i + 1) * n]
    }
}

fn err(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::invalid_argument(format!("IDX file {}: {what}", path.display()))
}

/// Opens `path`, gunzipping when its name ends in `.gz` or it starts with the
/// gzip magic bytes `1f 8b` (an IDX file starts with `00 00`).
fn open(path: &Path) -> Result<Box<dyn Read>> {
    let file = File::open(path)
        .map_err(|e| Error::from_io(format_args!("IDX file {}: cannot open", path.display()), e))?;
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| Error::from_io(format_args!("IDX file {}: read error", path.display()), e))?;
    let gz_magic = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    let gz_name = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    if gz_magic || gz_name {
        Ok(Box::new(MultiGzDecoder::new(reader)))
    } else {
        Ok(Box::new(reader))
    }
}

/// Reads exactly `buf.len()` bytes; `what` names the part for the message.
fn read_exact(r: &mut dyn Read, buf: &mut [u8], path: &Path, what: &str) -> Result<()> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == ErrorKind::UnexpectedEof {
            err(path, format_args!("truncated: the file ends inside {what}"))
        } else {
            err(path, format_args!("read error in {what}: {e}"))
        }
    })
}

/// Reads an IDX file of unsigned bytes.
///
/// With `max_items = Some(n)` only the first `n` items along the first
/// dimension are read (all of them when the file has fewer), and
/// `dims[0]` is reduced accordingly; when that cuts the file short, the rest
/// of the file is not read, so it is checked neither for truncation nor for
/// trailing data. Otherwise (and with `None`) the whole file is read and must
/// hold exactly the data its header declares.
pub fn read_idx_u8(path: impl AsRef<Path>, max_items: Option<usize>) -> Result<IdxArray> {
    let path = path.as_ref();
    let mut r = open(path)?;
    let mut magic = [0u8; 4];
    read_exact(&mut *r, &mut magic, path, "the 4-byte magic number")?;
    if magic[0] != 0 || magic[1] != 0 {
        return Err(err(
            path,
            format_args!(
                "bad magic number {:02x} {:02x} {:02x} {:02x} (an IDX file starts with 00 00)",
                magic[0], magic[1], magic[2], magic[3]
            ),
        ));
    }
    if magic[2] != TYPE_U8 {
        return Err(err(
            path,
            format_args!(
                "bad magic number: element type 0x{:02x} is not supported (only 0x08, unsigned byte)",
                magic[2]
            ),
        ));
    }
    let ndims = usize::from(magic[3]);
    if ndims == 0 {
        return Err(err(path, "bad magic number: 0 dimensions"));
    }
    let mut header = vec![0u8; 4 * ndims];
    read_exact(
        &mut *r,
        &mut header,
        path,
        &format!("the {ndims} dimension sizes of the header"),
    )?;
    let mut dims: Vec<usize> = header
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let declared = dims.clone();
    if let Some(n) = max_items {
        dims[0] = dims[0].min(n);
    }
    let total = dims
        .iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .ok_or_else(|| err(path, format_args!("dimensions {declared:?} overflow")))?;

    // Grow the buffer as data arrives rather than trusting the header with
    // one huge allocation.
    let mut data = Vec::with_capacity(total.min(1 << 16));
    (&mut *r)
        .take(total as u64)
        .read_to_end(&mut data)
        .map_err(|e| err(path, format_args!("read error in the data: {e}")))?;
    if data.len() < total {
        return Err(err(
            path,
            format_args!(
                "truncated: the header declares dimensions {declared:?}, {total} data bytes, \
                 but only {} follow",
                data.len()
            ),
        ));
    }
    if dims == declared {
        let mut extra = [0u8; 1];
        let n = loop {
            match r.read(&mut extra) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(err(path, format_args!("read error after the data: {e}"))),
            }
        };
        if n > 0 {
            return Err(err(
                path,
                format_args!(
                    "trailing data after the {total} data bytes declared by the header \
                     (dimensions {declared:?})"
                ),
            ));
        }
    }
    Ok(IdxArray { dims, data })
}

/// Reads an IDX images file (3 dimensions: count, rows, cols), at most
/// `max_images` of them when given (see [`read_idx_u8`]).
pub fn load_images(path: impl AsRef<Path>, max_images: Option<usize>) -> Result<Images> {
    let path = path.as_ref();
    let a = read_idx_u8(path, max_images)?;
    if a.dims.len() != 3 {
        return Err(err(
            path,
            format_args!(
                "an images file has 3 dimensions (count, rows, cols), this one has {}",
                a.dims.len()
            ),
        ));
    }
    Ok(Images {
        pixels: a.data,
        count: a.dims[0],
        rows: a.dims[1],
        cols: a.dims[2],
    })
}

/// Reads an IDX labels file (1 dimension), at most `max_labels` of them when
/// given (see [`read_idx_u8`]).
pub fn load_labels(path: impl AsRef<Path>, max_labels: Option<usize>) -> Result<Vec<u8>> {
    let path = path.as_ref();
    let a = read_idx_u8(path, max_labels)?;
    if a.dims.len() != 1 {
        return Err(err(
            path,
            format_args!(
                "a labels file has 1 dimension, this one has {}",
                a.dims.len()
            ),
        ));
    }
    Ok(a.data)
}

/// `dir/name` if it exists, else `dir/name.gz` if it exists.
fn find(dir: &Path, name: &str) -> Result<PathBuf> {
    let plain = dir.join(name);
    if plain.is_file() {
        return Ok(plain);
    }
    let gz = dir.join(format!("{name}.gz"));
    if gz.is_file() {
        return Ok(gz);
    }
    Err(Error::invalid_argument(format!(
        "IDX file {}: not found (nor {})",
        plain.display(),
        gz.display()
    )))
}

/// Loads Fashion-MNIST (or MNIST: the file names are the same) from `dir`:
/// the training set (`train-*`, 60000 examples) when `train`, else the test
/// set (`t10k-*`, 10000 examples), each file plain or with `.gz` appended;
/// only the first `max_examples` examples when given.
///
/// Returns the row-major features scaled to `[0, 1]` (pixel / 255, one row of
/// `d = rows * cols = 784` per example), `d`, and the labels in `0..10`.
/// Errors when a file is missing or malformed, when the two files hold
/// different numbers of examples, or a label is 10 or more.
pub fn fashion_mnist(
    dir: impl AsRef<Path>,
    train: bool,
    max_examples: Option<usize>,
) -> Result<(Vec<f32>, usize, Vec<usize>)> {
    let dir = dir.as_ref();
    let prefix = if train { "train" } else { "t10k" };
    let images_path = find(dir, &format!("{prefix}-images-idx3-ubyte"))?;
    let labels_path = find(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
    let images = load_images(&images_path, max_examples)?;
    let labels = load_labels(&labels_path, max_examples)?;
    if images.count != labels.len() {
        return Err(Error::invalid_argument(format!(
            "IDX files {} and {}: count mismatch, {} images but {} labels",
            images_path.display(),
            labels_path.display(),
            images.count,
            labels.len()
        )));
    }
    if let Some(i) = labels.iter().position(|&y| y >= 10) {
        return Err(err(
            &labels_path,
            format_args!("label {} of example {i} is not in 0..10", labels[i]),
        ));
    }
    let d = images.pixels_per_image();
    let features = images
        .pixels
        .iter()
        .map(|&p| f32::from(p) / 255.0)
        .collect();
    let labels = labels.into_iter().map(usize::from).collect();
    Ok((features, d, labels))
}
