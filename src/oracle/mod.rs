//! The three oracle levels of docs/algorithms-and-settings.md, as traits, and the
//! [`Problem`] that holds one of them.
//!
//! | level | trait | what the caller computes |
//! |---|---|---|
//! | full risk | [`FullRisk`] | `R(w)` and one subgradient |
//! | partitioned risk | [`PartitionedRisk`] | `R(w, p)` and its subgradient, `R = sum_p R(w, p)` |
//! | example max-oracle | [`MaxOracle`] | the loss-augmented argmax of example i as a [`Corner`] |
//!
//! Each level can be turned into the one above it by the adapters in
//! [`adapters`]; the solvers see partitioned risks only.

pub mod adapters;
mod answers;
mod bounds;
mod calls;
pub mod chains;
pub mod classes;
mod corner;
pub mod pass;
pub mod sparse;

use std::sync::Arc;

pub use adapters::{ExampleParts, SinglePart};
pub use bounds::Bounds;
pub use chains::{ChainAnswer, ChainLayout, ChainRows};
pub use classes::{ClassAnswer, ClassRows};
pub use corner::Corner;
pub use pass::{AnswerLog, PassItem};
pub use sparse::{CornerScratch, SparseVec};

use crate::error::Result;

/// The full risk `R(w)`: the lowest oracle level.
pub trait FullRisk: Send + Sync {
    /// Length of `w`.
    fn dim(&self) -> usize;
    /// Returns `R(w)` and writes one subgradient of `R` at `w` into `subgrad`
    /// (length `dim`, to be overwritten entirely).
    fn risk(&self, w: &[f64], subgrad: &mut [f64]) -> Result<f64>;
    /// Whether `risk` may be called from a thread other than the one that
    /// runs the solver (it is never called from two threads at once).
    fn thread_safe(&self) -> bool {
        true
    }
}

/// A risk that is a sum of `num_parts` convex parts, `R(w) = sum_p R(w, p)`.
/// P-BMRM keeps one cutting-plane model per part.
pub trait PartitionedRisk: Send + Sync {
    /// The dimension of `w`.
    fn dim(&self) -> usize;
    /// The number of parts `P`.
    fn num_parts(&self) -> usize;
    /// Returns `R(w, part)` and writes one of its subgradients into `subgrad`
    /// (length `dim`, to be overwritten entirely).
    fn partial_risk(&self, part: usize, w: &[f64], subgrad: &mut [f64]) -> Result<f64>;
    /// Whether `partial_risk` may be called from several threads at once.
    fn thread_safe(&self) -> bool {
        true
    }
    /// Evaluates every part at `w` in one call, for a risk whose parts are
    /// not evaluated one by one in this process (the distributed parts of
    /// `bmrm::distributed`, which evaluate them on several MPI ranks).
    /// `None`, the default, makes the solver call
    /// [`PartitionedRisk::partial_risk`] for each part; `Some` holds the
    /// risks and subgradients of all `num_parts` parts, in part order, or
    /// the error that ended the evaluation.
    fn eval_all(&self, _w: &[f64]) -> Option<Result<PartValues>> {
        None
    }
    /// Part `part`'s risk and subgradient with the subgradient sparse, for a
    /// risk that can form it without a dense vector (the adapter of a
    /// max-oracle without `block_risk`), with the bits `partial_risk` would
    /// give. `None`, the default: the caller uses `partial_risk`.
    fn partial_risk_sparse(&self, _part: usize, _w: &[f64]) -> Option<Result<(f64, SparseVec)>> {
        None
    }
}

/// How an example max-oracle's corners factor ([`MaxOracle::factoring`]),
/// with the family's arithmetic and oracle calls.
#[derive(Clone)]
pub enum Factoring {
    /// The corners are general vectors.
    Vector,
    /// `psi_i(y) = r_i ⊗ (e_{t_i} - e_y)` with label id `y` ([`classes`]):
    /// BCFW then keeps `K` coefficients per block.
    Classes(Arc<dyn ClassRows>),
    /// Sums over the positions of a chain ([`chains`]): BCFW then keeps
    /// per-position label coefficients per block.
    Chains(Arc<dyn ChainRows>),
}

/// The risks and subgradients of all parts at one point, in part order.
pub type PartValues = (Vec<f64>, Vec<Subgradient>);

/// A part's subgradient: every entry, or the non-zero entries of a vector
/// of the risk's dimension (a max-oracle's part: its corners touch a few
/// thousand of 1.7 million weights on CoNLL).
#[derive(Debug, Clone, PartialEq)]
pub enum Subgradient {
    /// Every entry.
    Dense(Vec<f64>),
    /// The non-zero entries, coordinates increasing.
    Sparse(SparseVec),
}

impl Subgradient {
    /// The first non-finite entry, as (coordinate, value).
    pub fn first_non_finite(&self) -> Option<(usize, f64)> {
        match self {
            Subgradient::Dense(a) => crate::linalg::first_non_finite(a),
            Subgradient::Sparse(s) => s
                .idx
                .iter()
                .zip(&s.val)
                .find(|(_, v)| !v.is_finite())
                .map(|(&j, &v)| (j as usize, v)),
        }
    }

    /// `<a, w>` for a finite `w`, with the bits of the dense
    /// [`crate::linalg::dot`] either way.
    pub fn dot(&self, w: &[f64]) -> f64 {
        match self {
            Subgradient::Dense(a) => crate::linalg::dot(a, w),
            Subgradient::Sparse(s) => crate::linalg::sparse_dot(&s.idx, &s.val, w),
        }
    }

    /// `sum_k |a_k w_k|`: what bounds the rounding of
    /// [`Subgradient::dot`]. The same bits dense or sparse (a dense sum
    /// only adds zeros between the sparse one's terms).
    pub fn abs_dot(&self, w: &[f64]) -> f64 {
        match self {
            Subgradient::Dense(a) => a.iter().zip(w).map(|(x, y)| (x * y).abs()).sum(),
            Subgradient::Sparse(s) => s
                .idx
                .iter()
                .zip(&s.val)
                .map(|(&j, v)| (v * w[j as usize]).abs())
                .sum(),
        }
    }

    /// `y += a`, with the bits of `linalg::axpy(1.0, a, y)` either way.
    pub fn add_to(&self, y: &mut [f64]) {
        match self {
            Subgradient::Dense(a) => crate::linalg::axpy(1.0, a, y),
            Subgradient::Sparse(s) => s.add_to(1.0, y),
        }
    }

    /// Every entry, for a vector of dimension `dim`.
    pub fn into_dense(self, dim: usize) -> Vec<f64> {
        match self {
            Subgradient::Dense(a) => a,
            Subgradient::Sparse(s) => s.to_dense(dim),
        }
    }
}

/// The loss-augmented decoder of a structured-output SVM over `m` examples.
///
/// For example `i` at `w` it finds `y^ = argmax_y L_i(y) - <w, psi_i(y)>` and
/// reports, through the [`Corner`], the loss `L_i(y^)`, the vector
/// `psi_i(y^) = phi(x_i, y_i) - phi(x_i, y^)` (sparse or dense) and a 64-bit
/// label id. The risk it defines is the mean structured hinge
/// `R(w) = (1/m) sum_i max_y [L_i(y) - <w, psi_i(y)>]`.
pub trait MaxOracle: Send + Sync {
    /// The dimension of `w`.
    fn dim(&self) -> usize;
    /// The number of examples `m`.
    fn num_examples(&self) -> usize;
    /// Fills `out` (cleared by the caller) with the loss-augmented argmax of
    /// `example` at `w`.
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()>;
    /// Fills `out[j]` (each cleared by the caller) with the answer for
    /// example `first + j`: the answers of [`MaxOracle::max_oracle`], for an
    /// oracle that answers a block faster at once (the built-in multiclass
    /// model scores a block as one matrix product). `None`, the default,
    /// makes the caller call `max_oracle` for each example. An oracle that
    /// answers blocks must give the same answers when asked again: on an
    /// error the caller asks the block's examples one by one to name the
    /// one that failed.
    fn max_oracle_block(
        &self,
        _first: usize,
        _w: &[f64],
        _out: &mut [Corner],
    ) -> Option<Result<()>> {
        None
    }
    /// The sum of the hinges `H_i(w)` of examples `first..first + n`, with
    /// the sum of their `-psi_i(y^_i)` added to `grad`: what the bundle
    /// methods need of a block, for an oracle that computes it without
    /// forming the corners (the built-in multiclass model adds its rows to
    /// `grad` with a vector kernel, where most examples violate as every
    /// row in block `y^` less the span's per-class sums, and takes the
    /// hinges from its scores; either way its result depends only on `w`
    /// and the span). The bundle methods' pass asks for spans of up to 1024
    /// examples (a chunk of its examples when shorter), so that an oracle
    /// may prepare `w` once per span. The values equal those of the corners of
    /// [`MaxOracle::max_oracle`] up to rounding. `None`, the default, makes
    /// the caller go through the corners; an oracle answers every block or
    /// none (after a `None` the caller asks no more blocks). As for
    /// `max_oracle_block`, on an error the caller asks the examples one by
    /// one. A wrapper around
    /// another oracle should forward this method (and
    /// [`MaxOracle::max_oracle_block`]): otherwise its risks are the
    /// corners', which differ from the wrapped oracle's in the last bits.
    fn block_risk(
        &self,
        _first: usize,
        _n: usize,
        _w: &[f64],
        _grad: &mut [f64],
    ) -> Option<Result<f64>> {
        None
    }
    /// Whether `max_oracle` may be called from several threads at once.
    fn thread_safe(&self) -> bool {
        true
    }
    /// How the oracle's corners factor: general vectors (the default), over
    /// classes or over the positions of a chain. BCFW keeps its blocks in
    /// the form this names (docs/bcfw.md) and makes its oracle calls
    /// through the family's answers ([`ClassRows::answer`],
    /// [`ChainRows::answer`]), which must be those of
    /// [`MaxOracle::max_oracle`]. Asked once per BCFW pass: an oracle
    /// should make it cheap (share what it computes). A wrapper around
    /// another oracle should forward it.
    fn factoring(&self) -> Factoring {
        Factoring::Vector
    }
    /// Answers for every example at `w` in one call (BCFW's exact gap
    /// passes and lambda_max passes), for an oracle whose examples are not
    /// all evaluated in this process (the distributed oracle of
    /// `bmrm::distributed`). `None`, the default, makes the engine call
    /// [`MaxOracle::max_oracle`] for each example; `Some` holds the answers
    /// in example order (with `psi` when `keep_psi`) or the error.
    fn eval_pass(&self, _w: &[f64], _keep_psi: bool) -> Option<Result<Vec<PassItem>>> {
        None
    }
}

/// A problem: one oracle, at the highest level the caller can provide.
/// Cheap to clone (the oracle is shared).
#[derive(Clone)]
pub enum Problem {
    /// Only `R(w)` and a subgradient.
    Risk(Arc<dyn FullRisk>),
    /// `R(w) = sum_p R(w, p)`.
    Partitioned(Arc<dyn PartitionedRisk>),
    /// A max-oracle over examples, with the mean structured hinge as the risk.
    Examples(Arc<dyn MaxOracle>),
}

impl Problem {
    /// A problem given by its full risk.
    pub fn from_risk(r: impl FullRisk + 'static) -> Self {
        Problem::Risk(Arc::new(r))
    }
    /// A problem given by a partitioned risk.
    pub fn from_partitioned(r: impl PartitionedRisk + 'static) -> Self {
        Problem::Partitioned(Arc::new(r))
    }
    /// A problem given by an example max-oracle.
    pub fn from_max_oracle(o: impl MaxOracle + 'static) -> Self {
        Problem::Examples(Arc::new(o))
    }

    /// The dimension of `w`.
    pub fn dim(&self) -> usize {
        match self {
            Problem::Risk(r) => r.dim(),
            Problem::Partitioned(r) => r.dim(),
            Problem::Examples(o) => o.dim(),
        }
    }

    /// Whether the oracle may be called from several threads at once. When
    /// not, the solver calls it only from the thread that called `run`.
    pub fn thread_safe(&self) -> bool {
        match self {
            Problem::Risk(r) => r.thread_safe(),
            Problem::Partitioned(r) => r.thread_safe(),
            Problem::Examples(o) => o.thread_safe(),
        }
    }

    /// The name of the oracle level, for messages.
    pub fn level_name(&self) -> &'static str {
        match self {
            Problem::Risk(_) => "a full risk",
            Problem::Partitioned(_) => "a partitioned risk",
            Problem::Examples(_) => "an example max-oracle",
        }
    }

    /// The risk as `num_parts` parts (0 = the problem's natural number: 1 for
    /// a full risk, its own parts for a partitioned risk).
    ///
    /// A partitioned risk asked for 1 part is summed into one; a max-oracle is
    /// split into contiguous example blocks. A full risk cannot be split.
    pub fn parts(&self, num_parts: usize) -> Result<Arc<dyn PartitionedRisk>> {
        self.parts_until(num_parts, &Arc::default(), &Arc::default())
    }

    /// [`Problem::parts`] whose example passes give up at `deadline`.
    pub(crate) fn parts_until(
        &self,
        num_parts: usize,
        deadline: &Arc<adapters::PassDeadline>,
        answers: &Arc<AnswerLog>,
    ) -> Result<Arc<dyn PartitionedRisk>> {
        use crate::error::Error;
        match self {
            Problem::Risk(r) => {
                if num_parts > 1 {
                    return Err(Error::no_oracle(format!(
                        "{num_parts} parts were asked for but the problem has only a full risk \
                         (set a partitioned risk or a max-oracle)"
                    )));
                }
                Ok(Arc::new(SinglePart::Full(r.clone())))
            }
            Problem::Partitioned(r) => match num_parts {
                0 => Ok(r.clone()),
                1 => Ok(Arc::new(SinglePart::Summed(r.clone()))),
                p if p == r.num_parts() => Ok(r.clone()),
                p => Err(Error::invalid_argument(format!(
                    "num_parts = {p} but the partitioned risk has {} parts (use 0, 1 or {})",
                    r.num_parts(),
                    r.num_parts()
                ))),
            },
            Problem::Examples(o) => {
                let m = o.num_examples();
                let p = num_parts.max(1);
                if p > m {
                    return Err(Error::invalid_argument(format!(
                        "num_parts = {p} exceeds the number of examples {m}"
                    )));
                }
                Ok(Arc::new(
                    ExampleParts::new(o.clone(), p)
                        .with_deadline(deadline.clone())
                        .with_answers(answers.clone()),
                ))
            }
        }
    }
}
