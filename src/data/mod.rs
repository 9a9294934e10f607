//! Readers for the public data sets the examples, benchmarks and tests use.
//!
//! - [`idx`]: the IDX format of MNIST and Fashion-MNIST (plain or gzipped),
//!   and [`idx::fashion_mnist`], which loads Fashion-MNIST as features scaled
//!   to `[0, 1]` ready for [`crate::models::Multiclass`].
//! - [`libsvm`]: the sparse text format of LIBSVM / LIBLINEAR / SVMlight /
//!   SVM-multiclass (`label index:value ...`), with the mapping from the
//!   file's labels to classes `0..k`.

pub mod idx;
pub mod libsvm;
