//! The bundle methods distributed over MPI (feature `mpi`): every rank holds
//! a shard of the risk, rank 0 keeps the bundle and solves the reduced
//! problem, as the P-BMRM paper proposes (each cutting-plane model computed
//! on its own computer).
//!
//! # How a run goes
//!
//! Each rank makes a [`DistributedSolver`] from the communicator and its
//! [`Shard`], and calls [`DistributedSolver::run`]; both calls are
//! collective (every rank of the communicator makes them, in the same
//! order). Every iteration rank 0 sends the iterate `w` to every rank, each
//! rank evaluates its own parts at `w` (in parallel over its threads, with
//! exactly the code a single process uses), and rank 0 gathers the risk and
//! the subgradient of every part, in part order. The rest of the iteration,
//! the bundle, the reduced problem, the prox search, the stopping rule, is
//! the single-process engine's, unchanged, on rank 0. At the end every rank
//! gets the same `w` (the best point) and the same [`Info`], or the same
//! error.
//!
//! # Parts and ranks
//!
//! The global parts are the ranks' parts in rank order: rank 0's parts
//! first, then rank 1's, and so on. Ranks may hold different numbers of
//! parts, also none.
//!
//! - [`Shard::Parts`]: the rank's parts of a partitioned risk, any number.
//! - [`Shard::Examples`]: the rank's examples of a max-oracle. The parts
//!   are the engine's contiguous example blocks of the whole problem (`P`
//!   blocks of `m` examples, see [`Layout`]); rank `r` holds parts
//!   `floor(r P / R) .. floor((r+1) P / R)` of `R` ranks and exactly their
//!   examples, a contiguous range ([`Layout::examples_of`] tells a rank
//!   which examples to load before it makes its oracle). `m` is the sum of
//!   the ranks' example counts; `P` is `num_parts` for P-BMRM and
//!   Prox-P-BMRM (0: 16, or `m` if smaller) and, for the one-model
//!   algorithms, `num_parts` if set, else one block per rank (the blocks are
//!   then summed into one model, as a single process sums a partitioned
//!   risk).
//!
//! # BCFW
//!
//! With [`crate::Algorithm::Bcfw`] rank 0 holds the *whole* max-oracle: the
//! block steps (one example at a time, on the current iterate) stay on rank
//! 0. What is spread over the ranks are the passes that call the oracle of
//! every example at one point: the exact gap passes every `gap_check`
//! passes, the pass at the averaged point, and the regularisation path's
//! lambda_max passes ([`DistributedSolver::bcfw_path`]). The examples are
//! split into one contiguous block per rank ([`Layout`] with `P = R`; rank 0
//! answers for the first block, rank `r >= 1` holds exactly block `r`).
//! Rank 0 sends `w`; each rank sends back, per example, three numbers (the
//! hinge `H_i(w)`, the loss and the label id), and in the lambda_max pass
//! at `w = 0` also the sparse `psi_i` (the path's starting corners). Every
//! answer is computed by the single-process code and reduced on rank 0 in
//! example order, so distributed BCFW, its passes and its path are
//! bit-identical to one process's. A distributed mini-batch BCFW (block
//! steps on every rank) is not built: it would change the algorithm.
//!
//! # Same iterates as one process
//!
//! Each part's risk and subgradient are computed by the same code on
//! whichever rank holds it, from the same bits of `w`, so they are the same
//! bits; rank 0 hands them to the engine in part order, where they are
//! combined exactly as in one process. So a distributed run is
//! **bit-identical**, `w`, iterations and every figure, to the
//! single-process run *with the same parts*: for P-BMRM and Prox-P-BMRM over
//! examples, `Problem::from_max_oracle` with the same `num_parts`; for the
//! one-model algorithms, the partitioned risk of the same `P` example blocks
//! (`Problem::from_partitioned(ExampleParts::new(oracle, P))`). Against a
//! single-process BMRM over the max-oracle itself (one block), the risk sums
//! are added in another order (relative difference about 1e-16 per
//! evaluation), so iterates agree to rounding, not to the bit; the
//! certificate (`primal - lower_bound <= tol`) holds for both.
//!
//! # Failures
//!
//! A rank whose oracle fails (or gives NaN/Inf) answers with the error;
//! rank 0 ends the run on every rank with that error, naming the rank (and
//! the part, the example, the iteration as in one process), e.g.
//! `oracle failed: max-oracle returned 3 (example 41) (part 5) (rank 1) at
//! iteration 6`. MPI has no timeouts, so rank 0 waits for answers in a loop
//! of non-blocking probes with a deadline ([`Options::reply_timeout`],
//! default 600 s): a rank that hangs, or dies without the MPI runtime ending
//! the job, ends the run with `oracle failed: rank 2 did not answer within
//! 600 s ...` on rank 0 and on every rank that still answers. A rank that
//! did not answer cannot take part in MPI any more, and `MPI_Finalize` would
//! wait for it: the caller should end the job, by exiting with a non-zero
//! status without `MPI_Finalize` (`mpirun` then ends every rank; the
//! `bmrm-mpi` program does this) or with `MPI_Abort` (which Open MPI 4.1's
//! `mpirun` sometimes answers by crashing or hanging in containers). A rank
//! that exits is noticed by `mpirun`, which ends every rank of the job and
//! names the rank.
//!
//! # Threads
//!
//! MPI is called only from the thread that calls `new` and `run`
//! (`MPI_THREAD_FUNNELED` is enough; `mpi::initialize()` asks for less and
//! Open MPI and MPICH are fine with it). On rank 0 the engine runs on a
//! helper thread and asks the calling thread, which owns the communicator,
//! for every evaluation.

mod solver;
mod train;
mod transport;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// The MPI bindings this module uses (rsmpi), for callers that do not name
/// the `mpi` crate themselves: `bmrm::distributed::mpi::initialize()`.
pub use mpi;
pub use solver::{DistributedSolver, Stats};
pub use train::{train_multiclass, Data, Trained};

use crate::error::{Error, Result};
use crate::oracle::{Corner, MaxOracle, PartitionedRisk};
use crate::solver::{Settings, DEFAULT_PARTS};
use crate::Info;

/// What this rank holds of the problem (for BCFW, rank 0 holds every
/// example; see the module docs).
#[derive(Clone)]
pub enum Shard {
    /// This rank's parts of a partitioned risk (any number, also 0); the
    /// global parts are the ranks' parts in rank order.
    Parts(Arc<dyn PartitionedRisk>),
    /// A max-oracle over this rank's examples only: its example `j` is
    /// example `Layout::examples_of(rank).start + j` of the whole problem.
    Examples(Arc<dyn MaxOracle>),
}

impl Shard {
    /// A shard of partial risks (wrapped in an `Arc`).
    pub fn from_parts(r: impl PartitionedRisk + 'static) -> Self {
        Shard::Parts(Arc::new(r))
    }
    /// A shard of this rank's examples (wrapped in an `Arc`).
    pub fn from_max_oracle(o: impl MaxOracle + 'static) -> Self {
        Shard::Examples(Arc::new(o))
    }

    fn dim(&self) -> usize {
        match self {
            Shard::Parts(r) => r.dim(),
            Shard::Examples(o) => o.dim(),
        }
    }
}

/// How long to wait for the other ranks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// How long rank 0 waits for a rank's answer (its evaluation of its
    /// parts at one point) before the run ends with an error naming it.
    /// `None`: forever. Default 600 s. Set it above the slowest rank's
    /// evaluation time.
    pub reply_timeout: Option<Duration>,
    /// How long a rank other than 0 waits for rank 0's next message (rank 0
    /// solves the reduced problem between two evaluations, and the caller
    /// may do anything between two runs). `None` (the default): forever; a
    /// rank 0 that exits is then left to the MPI runtime (`mpirun` ends the
    /// job when a rank exits without `MPI_Finalize`).
    pub command_timeout: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            reply_timeout: Some(Duration::from_secs(600)),
            command_timeout: None,
        }
    }
}

/// How the `P` example blocks of `m` examples are spread over `R` ranks:
/// part `p` is examples `floor(p m / P) .. floor((p+1) m / P)` (the
/// engine's blocks), rank `r` holds parts `floor(r P / R) .. floor((r+1) P
/// / R)`, and so a contiguous range of examples. Counts may differ by rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    examples: Vec<usize>,
    ranks: Vec<usize>,
}

impl Layout {
    /// `num_examples` examples in `num_parts` blocks over `num_ranks` ranks.
    pub fn new(num_examples: usize, num_parts: usize, num_ranks: usize) -> Result<Self> {
        if num_examples == 0 || num_parts == 0 || num_ranks == 0 {
            return Err(Error::invalid_argument(format!(
                "a layout needs examples, parts and ranks, got {num_examples}, {num_parts} \
                 and {num_ranks}"
            )));
        }
        if num_parts > num_examples {
            return Err(Error::invalid_argument(format!(
                "num_parts = {num_parts} exceeds the number of examples {num_examples}"
            )));
        }
        Ok(Layout {
            examples: crate::oracle::adapters::block_bounds(num_examples, num_parts),
            ranks: (0..=num_ranks).map(|r| r * num_parts / num_ranks).collect(),
        })
    }

    /// The layout the distributed solver uses for `settings` (see
    /// [`num_parts_for`]).
    pub fn for_settings(
        settings: &Settings,
        num_examples: usize,
        num_ranks: usize,
    ) -> Result<Self> {
        Self::new(
            num_examples,
            num_parts_for(settings, num_examples, num_ranks),
            num_ranks,
        )
    }

    /// The number of examples of the whole problem.
    pub fn num_examples(&self) -> usize {
        *self.examples.last().unwrap_or(&0)
    }
    /// The number of parts (cutting-plane models).
    pub fn num_parts(&self) -> usize {
        self.examples.len() - 1
    }
    /// The number of ranks.
    pub fn num_ranks(&self) -> usize {
        self.ranks.len() - 1
    }
    /// The global parts rank `rank` holds.
    pub fn parts_of(&self, rank: usize) -> Range<usize> {
        self.ranks[rank]..self.ranks[rank + 1]
    }
    /// The examples rank `rank` holds (those of its parts).
    pub fn examples_of(&self, rank: usize) -> Range<usize> {
        let p = self.parts_of(rank);
        self.examples[p.start]..self.examples[p.end]
    }
}

/// The number of example blocks `P` the distributed solver makes of
/// `num_examples` examples on `num_ranks` ranks: P-BMRM and Prox-P-BMRM use
/// `num_parts` (0: 16, or `m` when smaller), as one process does; the
/// one-model algorithms use `num_parts` when set, else one block per rank
/// (at most `m`); BCFW one block per rank (its passes' shares).
pub fn num_parts_for(settings: &Settings, num_examples: usize, num_ranks: usize) -> usize {
    if settings.algorithm == crate::Algorithm::Bcfw {
        return num_ranks.min(num_examples).max(1);
    }
    match settings.num_parts {
        0 if settings.algorithm.is_partitioned() => DEFAULT_PARTS.min(num_examples),
        0 => num_ranks.min(num_examples).max(1),
        p => p,
    }
}

/// Examples `range` of a max-oracle, as a max-oracle of their own (example
/// `j` is example `range.start + j`): a rank that has the whole problem at
/// hand can make its [`Shard::Examples`] with it.
pub struct ExampleRange {
    oracle: Arc<dyn MaxOracle>,
    range: Range<usize>,
}

impl ExampleRange {
    /// Examples `range` of `oracle`, as a max-oracle of their own (an error when the range is not inside it).
    pub fn new(oracle: Arc<dyn MaxOracle>, range: Range<usize>) -> Result<Self> {
        if range.start > range.end || range.end > oracle.num_examples() {
            return Err(Error::invalid_argument(format!(
                "examples {range:?} are not a range of the oracle's {} examples",
                oracle.num_examples()
            )));
        }
        Ok(ExampleRange { oracle, range })
    }
}

impl MaxOracle for ExampleRange {
    fn dim(&self) -> usize {
        self.oracle.dim()
    }
    fn num_examples(&self) -> usize {
        self.range.len()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        self.oracle.max_oracle(self.range.start + example, w, out)
    }
    fn thread_safe(&self) -> bool {
        self.oracle.thread_safe()
    }
}

/// Parts `range` of a partitioned risk, as a partitioned risk of their own.
struct PartRange {
    risk: Arc<dyn PartitionedRisk>,
    range: Range<usize>,
}

impl PartitionedRisk for PartRange {
    fn dim(&self) -> usize {
        self.risk.dim()
    }
    fn num_parts(&self) -> usize {
        self.range.len()
    }
    fn partial_risk(&self, part: usize, w: &[f64], subgrad: &mut [f64]) -> Result<f64> {
        self.risk.partial_risk(self.range.start + part, w, subgrad)
    }
    fn thread_safe(&self) -> bool {
        self.risk.thread_safe()
    }
}

/// This rank's shard of a problem every rank has at hand whole (read from
/// the same file, say): its examples of [`Layout::for_settings`] (BCFW: rank
/// 0 keeps them all), or its parts `floor(r P / R) .. floor((r+1) P / R)` of
/// a partitioned risk. The oracle work is split; the memory is not (a rank
/// that reads only its examples saves that too, see [`Shard`]).
pub fn shard_of(
    problem: &crate::Problem,
    settings: &Settings,
    rank: usize,
    num_ranks: usize,
) -> Result<Shard> {
    use crate::Problem;
    match problem {
        Problem::Examples(o) => {
            if settings.algorithm == crate::Algorithm::Bcfw && rank == 0 {
                return Ok(Shard::Examples(o.clone()));
            }
            let layout = Layout::for_settings(settings, o.num_examples(), num_ranks)?;
            Ok(Shard::Examples(Arc::new(ExampleRange::new(
                o.clone(),
                layout.examples_of(rank),
            )?)))
        }
        Problem::Partitioned(r) => {
            let p = r.num_parts();
            let range = rank * p / num_ranks..(rank + 1) * p / num_ranks;
            Ok(Shard::Parts(Arc::new(PartRange {
                risk: r.clone(),
                range,
            })))
        }
        Problem::Risk(_) => Err(Error::no_oracle(
            "a distributed solver needs a partitioned risk or a max-oracle, but the problem \
             has a full risk",
        )),
    }
}

/// Whether `e` ended a run because ranks did not answer in time: they
/// cannot take part in MPI any more, so `MPI_Finalize` would wait for them;
/// end the job instead (exit without it, or `MPI_Abort`).
pub fn ranks_lost(e: &Error) -> bool {
    e.kind() == crate::ErrorKind::RankLost
}

/// Makes a [`DistributedSolver`] and runs it once from `w` (collective).
pub fn solve(
    comm: &impl mpi::topology::Communicator,
    shard: Shard,
    settings: Settings,
    w: &mut [f64],
) -> Result<Info> {
    DistributedSolver::new(comm, shard, settings, Options::default())?.run(w)
}
