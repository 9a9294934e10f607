//! Training a multiclass SVM over MPI from data every rank can read (the
//! `bmrm-mpi train` command and the MPI benchmark): each rank reads the
//! data, keeps only its examples ([`Layout`]) and takes part in the
//! distributed solver.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use mpi::topology::Communicator;

use super::{Layout, Options, Shard, Stats};
use crate::error::Result;
use crate::models::{synthetic, Multiclass};
use crate::solver::{Info, Settings};

/// Where the examples come from (every rank reads the same).
#[derive(Debug, Clone)]
pub enum Data {
    /// Fashion-MNIST (or MNIST) IDX files in `dir`: the training set, its
    /// first `max_examples` examples when given; 10 classes, a bias feature.
    Idx {
        /// The directory of the files.
        dir: PathBuf,
        /// Read only the first examples.
        max_examples: Option<usize>,
    },
    /// Gaussian classes generated from `seed` (the `bmrm demo` data).
    Generated {
        /// The number of examples.
        examples: usize,
        /// The number of features.
        features: usize,
        /// The number of classes.
        classes: usize,
        /// The seed of the generator.
        seed: u64,
    },
}

/// What a distributed training run reports (the same on every rank, but
/// `stats`, which are this rank's).
#[derive(Debug, Clone)]
pub struct Trained {
    /// The summary of the run (rank 0's, on every rank).
    pub info: Info,
    /// The solution (every rank has it).
    pub w: Vec<f64>,
    /// The number of ranks.
    pub ranks: usize,
    /// The number of examples read.
    pub examples: usize,
    /// The number of parts of the whole risk.
    pub parts: usize,
    /// The dimension of `w`.
    pub dim: usize,
    /// This rank's examples.
    pub local_examples: std::ops::Range<usize>,
    /// This rank's communication figures.
    pub stats: Stats,
    /// Seconds this rank took to read its data and build its oracle.
    pub load_seconds: f64,
    /// Seconds of the collective run (from the first command to the end).
    pub run_seconds: f64,
}

/// Reads `data`, keeps this rank's examples and trains a linear multiclass
/// SVM (0/1 loss, bias feature) with `settings` over `comm` (collective).
/// With `lambda_sum`, lambda is `lambda_sum / m` (the papers' summed-risk
/// lambda), `m` the number of examples read.
pub fn train_multiclass(
    comm: &impl Communicator,
    data: &Data,
    mut settings: Settings,
    lambda_sum: Option<f64>,
    options: Options,
) -> Result<Trained> {
    let t0 = Instant::now();
    let ranks = comm.size() as usize;
    let rank = comm.rank() as usize;
    // A rank that cannot read its data still takes part in the set-up, so
    // that every rank gets its error.
    let local = (|| -> Result<(Multiclass, usize, std::ops::Range<usize>)> {
        let (x, d, y, k) = match data {
            Data::Idx { dir, max_examples } => {
                let (x, d, y) = crate::data::idx::fashion_mnist(dir, true, *max_examples)?;
                (x, d, y, 10)
            }
            Data::Generated {
                examples,
                features,
                classes,
                seed,
            } => {
                let (x, y) =
                    synthetic::gaussian_multiclass(*examples, *features, *classes, 4.0, *seed);
                (x, *features, y, *classes)
            }
        };
        let m = y.len();
        if let Some(ls) = lambda_sum {
            settings.lambda = ls / m.max(1) as f64;
        }
        let mine = Layout::for_settings(&settings, m, ranks)?.examples_of(rank);
        let xs = x[mine.start * d..mine.end * d].to_vec();
        let ys = y[mine.clone()].to_vec();
        Ok((Multiclass::new(xs, d, ys, k, true)?, m, mine))
    })();
    let (shard, m, mine, dim) = match local {
        Ok((model, m, mine)) => {
            let dim = crate::MaxOracle::dim(&model);
            (Ok(Shard::Examples(Arc::new(model))), m, mine, dim)
        }
        Err(e) => (Err(e), 0, 0..0, 0),
    };
    let load_seconds = t0.elapsed().as_secs_f64();
    let mut node = super::join(comm, shard, settings, options)?;
    let mut w = vec![0.0; dim];
    let t1 = Instant::now();
    let info = node.run(&mut w)?;
    Ok(Trained {
        info,
        w,
        ranks,
        examples: m,
        parts: node.num_parts(),
        dim,
        local_examples: mine,
        stats: node.stats(),
        load_seconds,
        run_seconds: t1.elapsed().as_secs_f64(),
    })
}
