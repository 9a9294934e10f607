//! Readers for the public data sets the examples, benchmarks and tests use.
//!
//! - [`idx`]: the IDX format of MNIST and Fashion-MNIST (plain or gzipped),
//!   and [`idx::fashion_mnist`], which loads Fashion-MNIST as features scaled
//!   to `[0, 1]` ready for [`crate::models::Multiclass`].
//! - [`libsvm`]: the sparse text format of LIBSVM / LIBLINEAR / SVMlight /
//!   SVM-multiclass (`label index:value ...`), with the mapping from the
//!   file's labels to classes `0..k`.
//! - [`ocr`]: the OCR handwritten words (`letter.data` layout) as dense
//!   letter sequences with their folds and the standard OCR-small /
//!   OCR-large splits, ready for [`crate::models::Chain`].
//! - [`conll`]: the CoNLL-2000 chunking sentences as numberised attributes,
//!   turned into sparse indicator features for [`crate::models::Chain`].
//!
//! The text readers detect gzip by its magic bytes, and their errors name the
//! file, the line and the column of the bad input (always
//! [`crate::Error::invalid_argument`]).

pub mod conll;
pub mod idx;
pub mod libsvm;
pub mod ocr;
mod text;

pub use text::MAX_LINE_BYTES;
