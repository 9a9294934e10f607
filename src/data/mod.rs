//! Readers for the public data sets the examples, benchmarks and tests use.
//!
//! - [`idx`]: the IDX format of MNIST and Fashion-MNIST (plain or gzipped),
//!   and [`idx::fashion_mnist`], which loads Fashion-MNIST as features scaled
//!   to `[0, 1]` ready for [`crate::models::Multiclass`].

pub mod idx;
