//! The bundle methods distributed over MPI (feature `mpi`): every rank holds
//! a shard of the risk, rank 0 keeps the bundle and solves the reduced
//! problem, as the P-BMRM paper proposes (each cutting-plane model computed
//! on its own computer).
//!
//! # How a run goes
//!
//! Every rank calls [`join`] with the communicator and its [`Shard`]
//! (collective). Rank 0 gets [`Node::Root`]: an ordinary [`Solver`] whose
//! problem's oracle is the distributed one, and the [`Coordinator`]; every
//! other rank gets [`Node::Worker`]. A collective run is then
//! [`Coordinator::run`] on rank 0 (the solver's own `run`, followed by
//! [`Coordinator::finish`], which ends the call on the other ranks) and
//! [`Worker::serve`] on the others:
//!
//! ```ignore
//! let universe = bmrm::distributed::mpi::initialize().unwrap();
//! let world = universe.world();
//! let mut w = vec![0.0; dim];
//! let info = match distributed::join(&world, Ok(shard), settings, Options::default())? {
//!     Node::Root(mut solver, coordinator) => coordinator.run(&mut solver, &mut w)?,
//!     Node::Worker(mut worker) => worker.serve(&mut w)?,
//! }; // the same w and info on every rank
//! ```
//!
//! ([`Node::run`] does the same.) Between calls rank 0's solver is used as
//! usual: `set_lambda` keeps its planes for a warm start, `history`,
//! `bcfw_stats` report; only the calls that evaluate the risk are
//! collective ([`Node::run`], [`Node::bcfw_path`]).
//!
//! Each time the solver evaluates the risk (through
//! [`crate::oracle::PartitionedRisk::eval_all`]), rank 0 sends `w` to every
//! rank, each rank evaluates its own parts (in parallel over its threads,
//! with exactly the code a single process uses), and rank 0 gathers the risk
//! and the subgradient of every part, in part order. Everything else, the
//! bundle, the reduced problem, the prox search, the stopping rule, the
//! warm starts of `set_lambda`, is the ordinary solver's on rank 0. At the
//! end every rank gets the same `w` (the best point) and the same [`Info`],
//! or the same error.
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
//! lambda_max passes (the solver's `bcfw_path`, ended like a run with
//! [`Coordinator::finish`] and BCFW's iterate). The examples are
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
//! rank 0's solver ends the run with that error, naming the rank (and the
//! part, the example, the iteration as in one process), e.g. `oracle
//! failed: max-oracle returned 3 (example 41) (part 5) (rank 1) at
//! iteration 6`, and [`Coordinator::finish`] gives every rank the same. An
//! error travels between ranks as its status code and message. MPI has no
//! timeouts, so rank 0 waits for answers in a loop of non-blocking probes
//! with a deadline ([`Options::reply_timeout`], default 600 s): a rank that
//! hangs, or dies without the MPI runtime ending the job, ends the run with
//! `oracle failed: rank 2 did not answer within 600 s ...` on rank 0 and on
//! every rank that still answers ([`ranks_lost`] tells this error apart). A
//! rank that did not answer cannot take part in MPI any more, and
//! `MPI_Finalize` would wait for it: the caller should end the job, by
//! exiting with a non-zero status without `MPI_Finalize` (`mpirun` then ends
//! every rank; the `bmrm-mpi` program does this) or with `MPI_Abort` (which
//! Open MPI 4.1's `mpirun` sometimes answers by crashing or hanging in
//! containers). A rank that exits is noticed by `mpirun`, which ends every
//! rank of the job and names the rank.
//!
//! # Threads
//!
//! MPI is called only from the thread that calls [`join`]
//! (`MPI_THREAD_FUNNELED` is enough; `mpi::initialize()` asks for less and
//! Open MPI and MPICH are fine with it). The distributed oracle says it is
//! not thread-safe, so rank 0's solver calls it on the thread that runs it,
//! which must be that thread (a call from another one is an error); each
//! rank's own share is evaluated in parallel on its own threads
//! (`num_threads`). The solver and its [`Coordinator`] work on their own
//! duplicate of the communicator, so their messages never mix with the
//! caller's; drop them before MPI is finalised.
//!
//! # Modules
//!
//! `layout` says which rank holds which parts and examples, `coordinator`
//! is rank 0 (the set-up, the distributed oracle, the end of each call),
//! `worker` the other ranks (and the evaluation of a rank's own share),
//! `wire` the messages and their encoding, and `train` a ready-made
//! multiclass training run.

mod coordinator;
mod layout;
mod train;
mod wire;
mod worker;

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

/// The MPI bindings this module uses (rsmpi), for callers that do not name
/// the `mpi` crate themselves: `bmrm::distributed::mpi::initialize()`.
pub use mpi;
use mpi::topology::Communicator;

pub use coordinator::Coordinator;
pub use layout::{num_parts_for, Layout};
pub use train::{train_multiclass, Data, Trained};
pub use worker::Worker;

use crate::error::{Error, Result};
use crate::oracle::{Corner, MaxOracle, PartitionedRisk};
use crate::solver::{Info, Settings, Solver};

/// Figures of the communication, kept by each rank.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Evaluations of all parts or examples (one per iteration for the
    /// bundle methods).
    pub evaluations: u64,
    /// Bytes this rank sent (payloads only).
    pub bytes_sent: u64,
    /// Bytes this rank received (payloads only).
    pub bytes_received: u64,
    /// Seconds spent evaluating this rank's own share.
    pub local_seconds: f64,
    /// Rank 0: seconds spent sending `w` and waiting for the other ranks'
    /// answers after its own share was done. Other ranks: seconds spent
    /// waiting for rank 0's next message.
    pub wait_seconds: f64,
}

/// What [`join`] makes on a rank.
pub enum Node {
    /// Rank 0: the ordinary solver over the distributed oracle, and the
    /// coordinator that ends each collective call on the other ranks.
    Root(Box<Solver>, Coordinator),
    /// Any other rank: it serves rank 0's evaluations.
    Worker(Box<Worker>),
}

impl Node {
    /// The summary of the last collective call: rank 0's, on every rank.
    pub fn info(&self) -> Info {
        match self {
            Node::Root(solver, _) => *solver.info(),
            Node::Worker(worker) => *worker.info(),
        }
    }

    /// `set_lambda` on every rank: rank 0's solver keeps its planes, the
    /// other ranks check the value as rank 0 does.
    pub fn set_lambda(&mut self, lambda: f64) -> Result<()> {
        match self {
            Node::Root(solver, _) => solver.set_lambda(lambda),
            Node::Worker(worker) => worker.set_lambda(lambda),
        }
    }

    /// The problem's dimension on this rank.
    pub fn dim(&self) -> usize {
        match self {
            Node::Root(solver, _) => solver.dim(),
            Node::Worker(worker) => worker.dim(),
        }
    }

    /// One collective run from `w` on this rank: [`Coordinator::run`] on
    /// rank 0, [`Worker::serve`] on the others. Every rank ends with the same
    /// `w` and the same summary or error.
    pub fn run(&mut self, w: &mut [f64]) -> Result<Info> {
        match self {
            Node::Root(solver, coordinator) => coordinator.run(solver, w),
            Node::Worker(worker) => worker.serve(w),
        }
    }
    /// BCFW's regularisation path as a collective call
    /// ([`Coordinator::bcfw_path`] on rank 0, which returns the breakpoints;
    /// the other ranks serve and return an empty list, or the same error).
    pub fn bcfw_path(
        &mut self,
        eps: f64,
        lambda_min: f64,
        max_breakpoints: usize,
    ) -> Result<Vec<crate::bcfw::Breakpoint>> {
        match self {
            Node::Root(solver, c) => c.bcfw_path(solver, eps, lambda_min, max_breakpoints),
            Node::Worker(worker) => {
                let mut scratch = vec![0.0; worker.dim()];
                worker.serve(&mut scratch).map(|_| Vec::new())
            }
        }
    }
    /// Rank 0's solver (`None` on the other ranks).
    pub fn solver(&self) -> Option<&Solver> {
        match self {
            Node::Root(solver, _) => Some(solver),
            Node::Worker(_) => None,
        }
    }
    /// Rank 0's solver, to change it (`None` on the other ranks).
    pub fn solver_mut(&mut self) -> Option<&mut Solver> {
        match self {
            Node::Root(solver, _) => Some(solver),
            Node::Worker(_) => None,
        }
    }
    /// This rank's communication figures.
    pub fn stats(&self) -> Stats {
        match self {
            Node::Root(_, c) => c.stats(),
            Node::Worker(w) => w.stats(),
        }
    }
    /// The number of parts of the whole risk.
    pub fn num_parts(&self) -> usize {
        match self {
            Node::Root(_, c) => c.num_parts(),
            Node::Worker(w) => w.num_parts(),
        }
    }
    /// The parts this rank evaluates (global part numbers).
    pub fn local_parts(&self) -> Range<usize> {
        match self {
            Node::Root(_, c) => c.local_parts(),
            Node::Worker(w) => w.local_parts(),
        }
    }
}

/// Joins a distributed solver on every rank of `comm` (collective: every
/// rank calls it, with its own shard; `settings` are rank 0's, the others
/// use `num_threads` for their own evaluations and `lambda` for the checks
/// of [`Worker::set_lambda`]). Checks that the shards fit together: the
/// same dimension and kind everywhere, and for [`Shard::Examples`] that
/// every rank holds the examples [`Layout`] gives it. A rank that could not
/// make its shard passes its error, which, like any error of the set-up on
/// any rank, becomes the error of every rank (no rank is left waiting).
pub fn join(
    comm: &impl Communicator,
    shard: Result<Shard>,
    settings: Settings,
    options: Options,
) -> Result<Node> {
    let comm = comm.duplicate();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(settings.num_threads)
        .build()
        .map_err(|e| Error::internal(format!("cannot build the thread pool: {e}")));
    let shard = shard.and_then(|s| match s.dim() {
        0 => Err(Error::invalid_argument("the shard's dimension is 0")),
        _ => Ok(s),
    });
    if comm.rank() == 0 {
        let (solver, coordinator) = Coordinator::join(comm, shard, pool, settings, options)?;
        Ok(Node::Root(Box::new(solver), coordinator))
    } else {
        Worker::join(comm, shard, pool, settings, options).map(|w| Node::Worker(Box::new(w)))
    }
}

/// [`join`] for a problem every rank has whole (the same file read by every
/// rank, say): each rank takes its share ([`shard_of`]). This is what a
/// command-line `train --distributed` needs.
pub fn join_whole(
    comm: &impl Communicator,
    problem: &crate::Problem,
    settings: Settings,
    options: Options,
) -> Result<Node> {
    let shard = shard_of(
        problem,
        &settings,
        comm.rank() as usize,
        comm.size() as usize,
    );
    join(comm, shard, settings, options)
}

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
    /// A shard of parts of a partitioned risk.
    pub fn from_parts(r: impl PartitionedRisk + 'static) -> Self {
        Shard::Parts(Arc::new(r))
    }
    /// A shard of examples of a max-oracle.
    pub fn from_max_oracle(o: impl MaxOracle + 'static) -> Self {
        Shard::Examples(Arc::new(o))
    }

    fn dim(&self) -> usize {
        match self {
            Shard::Parts(r) => r.dim(),
            Shard::Examples(o) => o.dim(),
        }
    }

    /// What a rank reports about its shard in the set-up: `[kind, dim,
    /// count]`.
    fn report(&self) -> [f64; 3] {
        let (kind, count) = match self {
            Shard::Parts(r) => (wire::KIND_PARTS, r.num_parts()),
            Shard::Examples(o) => (wire::KIND_EXAMPLES, o.num_examples()),
        };
        [kind, self.dim() as f64, count as f64]
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

/// Examples `range` of a max-oracle, as a max-oracle of their own (example
/// `j` is example `range.start + j`): a rank that has the whole problem at
/// hand can make its [`Shard::Examples`] with it.
pub struct ExampleRange {
    oracle: Arc<dyn MaxOracle>,
    range: Range<usize>,
}

impl ExampleRange {
    /// Examples `range` of `oracle` (a range of its examples).
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
    fn max_oracle_block(&self, first: usize, w: &[f64], out: &mut [Corner]) -> Option<Result<()>> {
        self.oracle
            .max_oracle_block(self.range.start + first, w, out)
    }
    fn block_risk(
        &self,
        first: usize,
        n: usize,
        w: &[f64],
        grad: &mut [f64],
    ) -> Option<Result<f64>> {
        self.oracle.block_risk(self.range.start + first, n, w, grad)
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

/// `f`, with a panic in `what` (a user's oracle, say) turned into an
/// error: the other ranks must still hear how the call ended.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::internal(format!("a panic in {what}: {msg}")))
    })
}

/// The error of a call that lost ranks ([`crate::ErrorKind::RankLost`]):
/// `what` happened to them.
fn lost_ranks(what: String) -> Error {
    Error::rank_lost(format!(
        "{what} (it cannot take part in MPI any more: end the job, e.g. exit without \
         MPI_Finalize)"
    ))
}

/// Whether `e` ended a run because ranks did not answer in time: they
/// cannot take part in MPI any more, so `MPI_Finalize` would wait for them;
/// end the job instead (exit without it, or `MPI_Abort`).
pub fn ranks_lost(e: &Error) -> bool {
    e.kind() == crate::ErrorKind::RankLost
}
