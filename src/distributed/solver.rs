//! [`DistributedSolver`]: the collective solver object, rank 0's side (the
//! engine's [`Solver`] over [`DistributedParts`]) and the other ranks' side
//! (a loop that evaluates the rank's parts whenever rank 0 asks).

use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mpi::topology::{Communicator, Rank, SimpleCommunicator};
use rayon::prelude::*;

use super::transport::{self as t, Message};
use super::{num_parts_for, ExampleRange, Layout, Options, Shard};
use crate::bcfw::{local_pass, on_oracle_thread, Breakpoint, PassItem, SparseVec};
use crate::error::{Error, Result};
use crate::linalg::first_non_finite;
use crate::oracle::{Corner, ExampleParts, MaxOracle, PartValues, PartitionedRisk, Problem};
use crate::solver::{Algorithm, Info, Iteration, Settings, Solver};

/// Figures of the communication, kept by each rank over the solver's life.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Evaluations of all parts (one per iteration for the bundle methods).
    pub evaluations: u64,
    /// Bytes this rank sent (payloads only).
    pub bytes_sent: u64,
    /// Bytes this rank received (payloads only).
    pub bytes_received: u64,
    /// Seconds spent evaluating this rank's own parts.
    pub local_seconds: f64,
    /// Rank 0: seconds spent sending `w` and waiting for the other ranks'
    /// answers after its own parts were done. Other ranks: seconds spent
    /// waiting for rank 0's next message.
    pub wait_seconds: f64,
}

/// A request from the engine's thread to the thread that owns MPI.
enum Request {
    /// Every part at `w`.
    Eval(Vec<f64>),
    /// Every example at `w` (BCFW's passes), with psi or not.
    Pass(Vec<f64>, bool),
    Done,
}

/// The answer to a request.
enum Reply {
    Parts(Result<PartValues>),
    Pass(Result<Vec<PassItem>>),
}

/// The engine's end of the channel to the thread that owns MPI.
struct Link {
    requests: Sender<Request>,
    replies: Mutex<Receiver<Reply>>,
}

impl Link {
    fn ask(&self, r: Request) -> Result<Reply> {
        let gone = || Error::internal("the distributed evaluation has ended");
        let replies = self.replies.lock().unwrap_or_else(|p| p.into_inner());
        self.requests.send(r).map_err(|_| gone())?;
        replies.recv().map_err(|_| gone())
    }
}

fn unexpected<T>() -> Result<T> {
    Err(Error::internal("a reply of the wrong kind"))
}

/// The risk the engine sees on rank 0: all parts of all ranks, evaluated at
/// once through [`PartitionedRisk::eval_all`] by the thread that owns the
/// communicator (the engine runs on a helper thread and asks for every
/// evaluation over a channel, so MPI stays on the caller's thread).
struct DistributedParts {
    dim: usize,
    num_parts: usize,
    link: Link,
}

impl PartitionedRisk for DistributedParts {
    fn dim(&self) -> usize {
        self.dim
    }
    fn num_parts(&self) -> usize {
        self.num_parts
    }
    fn partial_risk(&self, part: usize, _w: &[f64], _subgrad: &mut [f64]) -> Result<f64> {
        Err(Error::internal(format!(
            "part {part} of a distributed risk can only be evaluated with all the others"
        )))
    }
    fn eval_all(&self, w: &[f64]) -> Option<Result<PartValues>> {
        Some(match self.link.ask(Request::Eval(w.to_vec())) {
            Ok(Reply::Parts(r)) => r,
            Ok(_) => unexpected(),
            Err(e) => Err(e),
        })
    }
}

/// The max-oracle BCFW sees on rank 0: rank 0's whole oracle for the block
/// steps, and the passes over all examples spread over the ranks
/// ([`MaxOracle::eval_pass`]).
struct DistributedOracle {
    full: Arc<dyn MaxOracle>,
    link: Link,
}

impl MaxOracle for DistributedOracle {
    fn dim(&self) -> usize {
        self.full.dim()
    }
    fn num_examples(&self) -> usize {
        self.full.num_examples()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        self.full.max_oracle(example, w, out)
    }
    fn thread_safe(&self) -> bool {
        self.full.thread_safe()
    }
    fn eval_pass(&self, w: &[f64], keep_psi: bool) -> Option<Result<Vec<PassItem>>> {
        Some(match self.link.ask(Request::Pass(w.to_vec(), keep_psi)) {
            Ok(Reply::Pass(r)) => r,
            Ok(_) => unexpected(),
            Err(e) => Err(e),
        })
    }
}

/// Sends `Done` when the engine's thread ends, also by a panic.
struct DoneOnDrop(Sender<Request>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Request::Done);
    }
}

/// Rank 0's state.
struct Root {
    solver: Solver,
    exchange: Exchange,
    requests: Receiver<Request>,
    replies: Sender<Reply>,
    done: Sender<Request>,
}

/// What rank 0 needs to evaluate all parts (or all examples).
struct Exchange {
    local: Arc<dyn PartitionedRisk>,
    /// `first_part[r]..first_part[r + 1]` are rank r's parts.
    first_part: Vec<usize>,
    /// Rank 0's examples of a pass (its share), when the shards are examples.
    pass_local: Option<Arc<dyn MaxOracle>>,
    /// `first_example[r]..first_example[r + 1]` are rank r's examples
    /// (empty for a partitioned risk).
    first_example: Vec<usize>,
    /// Ranks that did not answer in time: they take no further part.
    lost: Vec<Rank>,
    seq: u64,
}

/// Another rank's state.
struct Worker {
    local: Option<Arc<dyn PartitionedRisk>>,
    first_part: usize,
    /// Its examples and the number of the first, for BCFW's passes.
    examples: Option<(Arc<dyn MaxOracle>, usize)>,
}

enum Role {
    Root(Box<Root>),
    Worker(Worker),
}

/// A bundle-method solver whose risk is spread over the ranks of an MPI
/// communicator (see the [module docs](super)). Every rank makes one with
/// its [`Shard`], and every rank calls [`DistributedSolver::run`]; both are
/// collective. Keep it for warm starts: [`DistributedSolver::set_lambda`]
/// (on every rank) keeps rank 0's cutting planes.
///
/// It works on its own duplicate of the communicator, so its messages never
/// mix with the caller's. Drop it before MPI is finalised.
pub struct DistributedSolver {
    comm: SimpleCommunicator,
    rank: Rank,
    options: Options,
    dim: usize,
    settings: Settings,
    pool: rayon::ThreadPool,
    role: Role,
    info: Info,
    stats: Stats,
}

/// In the message of a run that lost ranks (an [`crate::ErrorKind::RankLost`]).
pub(crate) const LOST_MARK: &str = "it cannot take part in MPI any more";

/// What a rank says about its shard in the set-up: `[kind, dim, count]`.
const KIND_PARTS: f64 = 1.0;
const KIND_EXAMPLES: f64 = 2.0;

/// The plan rank 0 sends each rank: its parts of the whole.
struct Plan {
    total_examples: usize,
    total_parts: usize,
    first_part: Vec<usize>,
    /// Rank r's examples are `first_example[r]..first_example[r + 1]`
    /// (empty for a partitioned risk).
    first_example: Vec<usize>,
}

impl DistributedSolver {
    /// Makes the solver on every rank of `comm` (collective: every rank
    /// calls it, with its own shard; `settings` are rank 0's, the others
    /// use only `num_threads` for their own evaluations). Checks that the
    /// shards fit together: the same dimension and kind everywhere, and for
    /// [`Shard::Examples`] that every rank holds the examples [`Layout`]
    /// gives it. An error on any rank is the error of every rank.
    pub fn new(
        comm: &impl Communicator,
        shard: Shard,
        settings: Settings,
        options: Options,
    ) -> Result<Self> {
        Self::with_shard(comm, Ok(shard), settings, options)
    }

    /// [`DistributedSolver::new`] for a problem every rank has whole (the
    /// same file read by every rank, say): each rank takes its share
    /// ([`super::shard_of`]). Collective. This is what a command-line
    /// `train --distributed` needs: load the data as usual, then
    ///
    /// ```ignore
    /// let universe = bmrm::distributed::mpi::initialize().unwrap();
    /// let world = universe.world();
    /// let mut d = DistributedSolver::from_problem(&world, problem, settings, Options::default())?;
    /// let info = d.run(&mut w)?; // the same w and info on every rank
    /// ```
    pub fn from_problem(
        comm: &impl Communicator,
        problem: Problem,
        settings: Settings,
        options: Options,
    ) -> Result<Self> {
        let shard = super::shard_of(
            &problem,
            &settings,
            comm.rank() as usize,
            comm.size() as usize,
        );
        Self::with_shard(comm, shard, settings, options)
    }

    /// [`DistributedSolver::new`] for a rank that may have failed to make
    /// its shard (or its settings): it still takes part in the set-up, so
    /// that every rank returns the error instead of waiting for it.
    pub(crate) fn with_shard(
        comm: &impl Communicator,
        shard: Result<Shard>,
        settings: Settings,
        options: Options,
    ) -> Result<Self> {
        let comm = comm.duplicate();
        let rank = comm.rank();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(settings.num_threads)
            .build()
            .map_err(|e| Error::internal(format!("cannot build the thread pool: {e}")));
        let dim = shard.as_ref().map_or(0, |s| s.dim());
        let local_check = match (&pool, &shard) {
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
            _ if dim == 0 => Err(Error::invalid_argument("the shard's dimension is 0")),
            _ => Ok(()),
        };
        let mut stats = Stats::default();
        let role = if rank == 0 {
            let shard = local_check.and(shard);
            Self::setup_root(&comm, shard.as_ref(), &settings, &options, &mut stats)?
        } else {
            let msg = match (&local_check, &shard) {
                (Ok(()), Ok(sh)) => {
                    let (kind, count) = match sh {
                        Shard::Parts(r) => (KIND_PARTS, r.num_parts()),
                        Shard::Examples(o) => (KIND_EXAMPLES, o.num_examples()),
                    };
                    t::send(&comm, 0, t::TAG_DATA, &[kind, dim as f64, count as f64]);
                    stats.bytes_sent += 24;
                    Self::wait_setup(&comm, &options)
                }
                (Err(e), _) | (_, Err(e)) => {
                    t::send_error(&comm, 0, &e.clone().context(format!("(rank {rank})")));
                    Self::wait_setup(&comm, &options)
                }
            }?;
            // [CMD_SETUP, 0, total examples, total parts, first part, parts]
            let (m, p, first, n) = (
                msg[2] as usize,
                msg[3] as usize,
                msg[4] as usize,
                msg[5] as usize,
            );
            let (local, examples): (Arc<dyn PartitionedRisk>, _) = match shard? {
                Shard::Parts(r) => (r, None),
                Shard::Examples(o) => {
                    let offset = crate::oracle::adapters::block_bounds(m, p)[first];
                    let parts = ExampleParts::shard(o.clone(), m, p, first..first + n)?;
                    (Arc::new(parts), Some((o, offset)))
                }
            };
            Role::Worker(Worker {
                local: Some(local),
                first_part: first,
                examples,
            })
        };
        Ok(DistributedSolver {
            comm,
            rank,
            options,
            dim,
            settings,
            pool: pool?,
            role,
            info: Info::default(),
            stats,
        })
    }

    /// A worker waits for rank 0's verdict on the set-up.
    fn wait_setup(comm: &SimpleCommunicator, options: &Options) -> Result<Vec<f64>> {
        // Rank 0 waits at most `reply_timeout` for the ranks, then answers.
        let timeout = options.reply_timeout.map(|t| 2 * t);
        match t::receive(comm, 0, t::deadline(timeout)) {
            Some(Message::Numbers(v)) if v.len() == 6 && v[0] == t::CMD_SETUP => Ok(v),
            Some(Message::Numbers(_)) => Err(Error::internal(
                "an unexpected message from rank 0 in the set-up",
            )),
            Some(Message::Failed(e)) => Err(e),
            None => Err(Error::oracle_failed(format!(
                "rank 0 did not answer the set-up within {}",
                seconds(timeout)
            ))),
        }
    }

    fn setup_root(
        comm: &SimpleCommunicator,
        shard: std::result::Result<&Shard, &Error>,
        settings: &Settings,
        options: &Options,
        stats: &mut Stats,
    ) -> Result<Role> {
        let size = comm.size();
        let workers: Vec<Rank> = (1..size).collect();
        let got = t::gather(comm, &workers, t::deadline(options.reply_timeout));
        let mut missing = Vec::new();
        let mut answers = Vec::new();
        let mut verdict: Result<()> = shard.map(|_| ()).map_err(|e| e.clone().context("(rank 0)"));
        for (&r, m) in workers.iter().zip(got) {
            match m {
                None => missing.push(r),
                Some(Message::Failed(e)) => {
                    if verdict.is_ok() {
                        verdict = Err(e);
                    }
                }
                Some(Message::Numbers(v)) if v.len() == 3 => {
                    stats.bytes_received += 24;
                    answers.push((r, v));
                }
                Some(Message::Numbers(_)) => {
                    verdict = verdict.and(Err(Error::internal(format!(
                        "an unexpected set-up message from rank {r}"
                    ))))
                }
            }
        }
        if !missing.is_empty() {
            verdict = Err(Error::oracle_failed(format!(
                "{} did not answer the set-up within {}",
                t::name_ranks(&missing),
                seconds(options.reply_timeout)
            )));
        }
        // Rank 0's own shard and the plan.
        let root = verdict.and_then(|()| {
            let shard = shard.map_err(Clone::clone)?;
            let plan = Self::plan(comm, shard, settings, &answers)?;
            Self::make_root(comm, shard, settings, plan)
        });
        for &r in &workers {
            if missing.contains(&r) {
                continue;
            }
            match &root {
                Ok((_, plan)) => {
                    let p = &plan.first_part;
                    let i = r as usize;
                    let msg = [
                        t::CMD_SETUP,
                        0.0,
                        plan.total_examples as f64,
                        plan.total_parts as f64,
                        p[i] as f64,
                        (p[i + 1] - p[i]) as f64,
                    ];
                    t::send(comm, r, t::TAG_CMD, &msg);
                    stats.bytes_sent += 48;
                }
                Err(e) => t::send_error(comm, r, e),
            }
        }
        root.map(|(root, _)| Role::Root(Box::new(root)))
    }

    /// Checks the ranks' shards against each other and lays out the parts.
    fn plan(
        comm: &SimpleCommunicator,
        shard: &Shard,
        settings: &Settings,
        answers: &[(Rank, Vec<f64>)],
    ) -> Result<Plan> {
        let size = t::size_of(comm);
        let (kind, count) = match shard {
            Shard::Parts(r) => (KIND_PARTS, r.num_parts()),
            Shard::Examples(o) => (KIND_EXAMPLES, o.num_examples()),
        };
        let dim = shard.dim();
        let mut counts = vec![count];
        for (r, v) in answers {
            if v[0] != kind {
                let name = |k: f64| {
                    if k == KIND_PARTS {
                        "parts of a partitioned risk"
                    } else {
                        "examples of a max-oracle"
                    }
                };
                return Err(Error::invalid_argument(format!(
                    "rank {r} holds {} but rank 0 holds {}",
                    name(v[0]),
                    name(kind)
                )));
            }
            if v[1] as usize != dim {
                return Err(Error::dimension_mismatch(format!(
                    "rank {r}'s shard has dimension {} but rank 0's has {dim}",
                    v[1]
                )));
            }
            counts.push(v[2] as usize);
        }
        if kind == KIND_PARTS {
            let mut first_part = vec![0];
            for c in &counts {
                first_part.push(first_part.last().unwrap_or(&0) + c);
            }
            let total = *first_part.last().unwrap_or(&0);
            if total == 0 {
                return Err(Error::invalid_argument("no rank holds a part"));
            }
            if settings.algorithm.is_partitioned()
                && settings.num_parts != 0
                && settings.num_parts != total
            {
                return Err(Error::invalid_argument(format!(
                    "num_parts = {} but the ranks hold {total} parts together (use 0 or {total})",
                    settings.num_parts
                )));
            }
            Ok(Plan {
                total_examples: 0,
                total_parts: total,
                first_part,
                first_example: Vec::new(),
            })
        } else {
            // BCFW: rank 0 holds every example (it makes the block steps).
            let bcfw = settings.algorithm == Algorithm::Bcfw;
            let m: usize = if bcfw { counts[0] } else { counts.iter().sum() };
            if m == 0 {
                return Err(Error::invalid_argument("the ranks hold no example"));
            }
            let layout = Layout::new(m, num_parts_for(settings, m, size), size)?;
            for (r, &c) in counts.iter().enumerate() {
                let want = layout.examples_of(r);
                if bcfw && r == 0 {
                    continue;
                }
                if c != want.len() {
                    return Err(Error::invalid_argument(format!(
                        "rank {r} holds {c} examples, but {m} examples in {} parts over {size} \
                         ranks give it parts {:?}, examples {want:?} ({}); see \
                         bmrm::distributed::Layout",
                        layout.num_parts(),
                        layout.parts_of(r),
                        want.len()
                    )));
                }
            }
            Ok(Plan {
                total_examples: m,
                total_parts: layout.num_parts(),
                first_part: (0..=size)
                    .map(|r| {
                        if r < size {
                            layout.parts_of(r).start
                        } else {
                            layout.num_parts()
                        }
                    })
                    .collect(),
                first_example: (0..=size)
                    .map(|r| {
                        if r < size {
                            layout.examples_of(r).start
                        } else {
                            m
                        }
                    })
                    .collect(),
            })
        }
    }

    fn make_root(
        comm: &SimpleCommunicator,
        shard: &Shard,
        settings: &Settings,
        plan: Plan,
    ) -> Result<(Root, Plan)> {
        let _ = comm;
        let bcfw = settings.algorithm == Algorithm::Bcfw;
        let mine = plan.first_part[0]..plan.first_part[1];
        let (local, pass_local): (Arc<dyn PartitionedRisk>, Option<Arc<dyn MaxOracle>>) =
            match shard {
                Shard::Parts(r) => (r.clone(), None),
                Shard::Examples(o) => {
                    // BCFW: rank 0's oracle is the whole; its share is the front.
                    let share: Arc<dyn MaxOracle> = if bcfw {
                        Arc::new(ExampleRange::new(o.clone(), 0..plan.first_example[1])?)
                    } else {
                        o.clone()
                    };
                    let parts = ExampleParts::shard(
                        share.clone(),
                        plan.total_examples,
                        plan.total_parts,
                        mine,
                    )?;
                    (Arc::new(parts), Some(share))
                }
            };
        let (req_tx, req_rx) = channel();
        let (rep_tx, rep_rx) = channel();
        let link = Link {
            requests: req_tx.clone(),
            replies: Mutex::new(rep_rx),
        };
        let solver = match (shard, bcfw) {
            (Shard::Examples(o), true) => Solver::new(
                Problem::from_max_oracle(DistributedOracle {
                    full: o.clone(),
                    link,
                }),
                settings.clone(),
            )?,
            (Shard::Parts(_), true) => {
                return Err(Error::no_oracle(
                    "distributed BCFW needs max-oracle shards (Shard::Examples)",
                ))
            }
            (_, false) => {
                let parts = DistributedParts {
                    dim: shard.dim(),
                    num_parts: plan.total_parts,
                    link,
                };
                let calls_per_eval = if plan.total_examples > 0 {
                    plan.total_examples
                } else {
                    plan.total_parts
                } as u64;
                Solver::with_parts(Arc::new(parts), calls_per_eval, settings.clone())?
            }
        };
        let root = Root {
            solver,
            exchange: Exchange {
                local,
                first_part: plan.first_part.clone(),
                pass_local,
                first_example: plan.first_example.clone(),
                lost: Vec::new(),
                seq: 0,
            },
            requests: req_rx,
            replies: rep_tx,
            done: req_tx,
        };
        Ok((root, plan))
    }

    /// This rank in the communicator.
    pub fn rank(&self) -> i32 {
        self.rank
    }
    /// The number of ranks.
    pub fn num_ranks(&self) -> usize {
        t::size_of(&self.comm)
    }
    /// The dimension of `w`.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The number of parts of the whole risk (on every rank after `new`).
    pub fn num_parts(&self) -> usize {
        match &self.role {
            Role::Root(r) => *r.exchange.first_part.last().unwrap_or(&0),
            Role::Worker(w) => w.local.as_ref().map_or(0, |l| l.num_parts()),
        }
    }
    /// The parts this rank evaluates (global part numbers).
    pub fn local_parts(&self) -> std::ops::Range<usize> {
        match &self.role {
            Role::Root(r) => 0..r.exchange.first_part[1],
            Role::Worker(w) => {
                let n = w.local.as_ref().map_or(0, |l| l.num_parts());
                w.first_part..w.first_part + n
            }
        }
    }
    /// The settings given to `new` (lambda as set since).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    /// The summary of the last run: the same on every rank (rank 0's).
    pub fn info(&self) -> &Info {
        &self.info
    }
    /// The rows of the last run (rank 0 only; empty on the other ranks).
    pub fn history(&self) -> &[Iteration] {
        match &self.role {
            Role::Root(r) => r.solver.history(),
            Role::Worker(_) => &[],
        }
    }
    /// This rank's communication figures.
    pub fn stats(&self) -> Stats {
        self.stats
    }
    /// The progress observer of rank 0's engine (ignored on the other ranks).
    pub fn set_observer(
        &mut self,
        observer: impl FnMut(&Info) -> ControlFlow<()> + Send + 'static,
    ) {
        if let Role::Root(r) = &mut self.role {
            r.solver.set_observer(observer);
        }
    }

    /// Changes lambda, keeping rank 0's cutting planes (call it on every
    /// rank; only rank 0's value is used).
    pub fn set_lambda(&mut self, lambda: f64) -> Result<()> {
        if let Role::Root(r) = &mut self.role {
            r.solver.set_lambda(lambda)?;
        }
        let mut s = self.settings.clone();
        s.lambda = lambda;
        s.validate()?;
        self.settings = s;
        Ok(())
    }

    /// Minimises `F` from rank 0's `w` (collective). On return every rank's
    /// `w` holds the best point (also after a failed run: then the last
    /// valid one), and every rank returns the same [`Info`] or the same
    /// error.
    pub fn run(&mut self, w: &mut [f64]) -> Result<Info> {
        let DistributedSolver {
            comm,
            options,
            dim,
            pool,
            role,
            info,
            stats,
            ..
        } = self;
        let result = match role {
            Role::Root(root) => run_root(comm, options, *dim, pool, root, stats, w),
            Role::Worker(worker) => serve(comm, options, pool, worker, stats, w),
        };
        *info = match &result {
            Ok(i) => *i,
            Err(_) => match role {
                Role::Root(r) => *r.solver.info(),
                Role::Worker(_) => *info,
            },
        };
        result
    }
}

impl DistributedSolver {
    /// BCFW's epsilon-approximate regularisation path (see
    /// [`Solver::bcfw_path`]), collective: rank 0 runs it, with its
    /// lambda_max passes and exact gap passes spread over the ranks, and
    /// returns the breakpoints; the other ranks return an empty list (or the
    /// same error).
    pub fn bcfw_path(
        &mut self,
        eps: f64,
        lambda_min: f64,
        max_breakpoints: usize,
    ) -> Result<Vec<Breakpoint>> {
        let DistributedSolver {
            comm,
            options,
            dim,
            pool,
            role,
            stats,
            ..
        } = self;
        match role {
            Role::Root(root) => {
                let result = drive(comm, options, pool, root, stats, move |s| {
                    s.bcfw_path(eps, lambda_min, max_breakpoints)
                });
                let info = *root.solver.info();
                let w = root.solver.bcfw_iterate().map(<[f64]>::to_vec);
                end_run(
                    comm,
                    *dim,
                    root,
                    stats,
                    result.as_ref().map(|_| &info),
                    w.as_deref().unwrap_or(&[]),
                );
                result
            }
            Role::Worker(worker) => {
                let mut scratch = vec![0.0; *dim];
                serve(comm, options, pool, worker, stats, &mut scratch).map(|_| Vec::new())
            }
        }
    }

    /// BCFW's figures (rank 0, once BCFW has run; `None` on the other ranks).
    pub fn bcfw_stats(&self) -> Option<crate::bcfw::BcfwStats> {
        match &self.role {
            Role::Root(r) => r.solver.bcfw_stats(),
            Role::Worker(_) => None,
        }
    }

    /// BCFW's box constraints on rank 0's engine (call it on every rank;
    /// only rank 0's are used).
    pub fn set_bounds(&mut self, lower: Vec<f64>, upper: Vec<f64>) -> Result<()> {
        match &mut self.role {
            Role::Root(r) => r.solver.set_bounds(lower, upper),
            Role::Worker(_) => Ok(()),
        }
    }
}

/// "600 s" or "forever".
fn seconds(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!("{} s", d.as_secs_f64()),
        None => "forever".into(),
    }
}

/// Rank 0: runs `job` on the engine on a helper thread and serves its
/// evaluations on this thread, which owns MPI.
fn drive<T: Send>(
    comm: &SimpleCommunicator,
    options: &Options,
    pool: &rayon::ThreadPool,
    root: &mut Root,
    stats: &mut Stats,
    job: impl FnOnce(&mut Solver) -> Result<T> + Send,
) -> Result<T> {
    if !root.exchange.lost.is_empty() {
        return Err(Error::rank_lost(format!(
            "{} did not answer in an earlier run ({LOST_MARK})",
            t::name_ranks(&root.exchange.lost)
        )));
    }
    let Root {
        solver,
        exchange,
        requests,
        replies,
        done,
    } = root;
    let outcome = std::thread::scope(|s| {
        let done = done.clone();
        let engine = s.spawn(move || {
            let _done = DoneOnDrop(done);
            job(solver)
        });
        loop {
            let reply = match requests.recv() {
                Ok(Request::Eval(x)) => {
                    Reply::Parts(exchange.evaluate(comm, options, pool, stats, &x))
                }
                Ok(Request::Pass(x, keep)) => {
                    Reply::Pass(exchange.pass(comm, options, pool, stats, &x, keep))
                }
                Ok(Request::Done) | Err(_) => break,
            };
            let _ = replies.send(reply);
        }
        engine.join()
    });
    outcome.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::internal(format!("panic in the solver: {msg}")))
    })
}

/// Rank 0: ends the run on every rank that still answers, with the same
/// info, `w` (when it has the problem's length) and error.
fn end_run(
    comm: &SimpleCommunicator,
    dim: usize,
    root: &Root,
    stats: &mut Stats,
    outcome: std::result::Result<&Info, &Error>,
    w: &[f64],
) {
    let info = match outcome {
        Ok(i) => *i,
        Err(_) => *root.solver.info(),
    };
    let mut msg = Vec::with_capacity(3 + t::INFO_LEN + dim);
    msg.extend_from_slice(&[
        t::CMD_END,
        root.exchange.seq as f64,
        f64::from(u8::from(outcome.is_ok())),
    ]);
    msg.extend_from_slice(&t::encode_info(&info));
    if w.len() == dim {
        msg.extend_from_slice(w);
    } else {
        msg.resize(msg.len() + dim, f64::NAN);
    }
    for r in 1..comm.size() {
        if root.exchange.lost.contains(&r) {
            continue;
        }
        t::send(comm, r, t::TAG_CMD, &msg);
        stats.bytes_sent += 8 * msg.len() as u64;
        if let Err(e) = outcome {
            t::send_error(comm, r, e);
        }
    }
}

/// Rank 0's side of [`DistributedSolver::run`].
fn run_root(
    comm: &SimpleCommunicator,
    options: &Options,
    dim: usize,
    pool: &rayon::ThreadPool,
    root: &mut Root,
    stats: &mut Stats,
    w: &mut [f64],
) -> Result<Info> {
    let result = if w.len() != dim {
        Err(Error::dimension_mismatch(format!(
            "w has length {} but the problem's dimension is {dim} (rank 0)",
            w.len()
        )))
    } else {
        let w_engine: &mut [f64] = w;
        drive(comm, options, pool, root, stats, move |s| s.run(w_engine))
    };
    end_run(comm, dim, root, stats, result.as_ref(), w);
    result
}

impl Exchange {
    /// Rank 0: evaluates every part of every rank at `w`, in part order.
    fn evaluate(
        &mut self,
        comm: &SimpleCommunicator,
        options: &Options,
        pool: &rayon::ThreadPool,
        stats: &mut Stats,
        w: &[f64],
    ) -> Result<PartValues> {
        let dim = w.len();
        self.seq += 1;
        stats.evaluations += 1;
        let workers: Vec<Rank> = (1..comm.size()).collect();
        let t0 = Instant::now();
        let mut msg = Vec::with_capacity(2 + dim);
        msg.extend_from_slice(&[t::CMD_EVAL_PARTS, self.seq as f64]);
        msg.extend_from_slice(w);
        for &r in &workers {
            t::send(comm, r, t::TAG_CMD, &msg);
            stats.bytes_sent += 8 * msg.len() as u64;
        }
        let t1 = Instant::now();
        let local = on_oracle_thread(self.local.thread_safe(), pool, || {
            eval_local(self.local.as_ref(), w, 0)
        });
        let t2 = Instant::now();
        let got = t::gather(comm, &workers, t::deadline(options.reply_timeout));
        stats.local_seconds += (t2 - t1).as_secs_f64();
        stats.wait_seconds += (t1 - t0).as_secs_f64() + t2.elapsed().as_secs_f64();

        let total = *self.first_part.last().unwrap_or(&0);
        let mut risks = Vec::with_capacity(total);
        let mut grads = Vec::with_capacity(total);
        let mut errors: Vec<(Rank, Error)> = Vec::new();
        match local {
            Ok((r, g)) => {
                risks.extend(r);
                grads.extend(g);
            }
            Err(e) => errors.push((0, e)),
        }
        let (first, seq) = (&self.first_part, self.seq);
        let missing = sort_answers(&workers, got, stats, &mut errors, |r, v| {
            let n = first[r as usize + 1] - first[r as usize];
            if v.len() != 1 + n * (1 + dim) || v[0] != seq as f64 {
                return Err(Error::internal(format!(
                    "a malformed answer ({} numbers for {n} parts, sequence {} instead of {})",
                    v.len(),
                    v.first().copied().unwrap_or(f64::NAN),
                    seq
                )));
            }
            risks.extend_from_slice(&v[1..1 + n]);
            grads.extend(v[1 + n..].chunks_exact(dim).map(|g| g.to_vec()));
            Ok(())
        });
        self.failures(options, missing, errors)?;
        // Name the rank of a non-finite value (the engine names the part).
        for (p, (r, g)) in risks.iter().zip(&grads).enumerate() {
            let rank = self.first_part.partition_point(|&f| f <= p) - 1;
            if !r.is_finite() {
                return Err(Error::non_finite(format!(
                    "risk is {r} (part {p}) (rank {rank})"
                )));
            }
            if let Some((j, v)) = first_non_finite(g) {
                return Err(Error::non_finite(format!(
                    "subgradient[{j}] is {v} (part {p}) (rank {rank})"
                )));
            }
        }
        Ok((risks, grads))
    }
}

impl Exchange {
    /// Rank 0: the answers of every example at `w`, in example order (BCFW's
    /// passes): each rank answers for its examples with the code a single
    /// process runs, so every answer is the same bits.
    fn pass(
        &mut self,
        comm: &SimpleCommunicator,
        options: &Options,
        pool: &rayon::ThreadPool,
        stats: &mut Stats,
        w: &[f64],
        keep_psi: bool,
    ) -> Result<Vec<PassItem>> {
        let share = self
            .pass_local
            .clone()
            .ok_or_else(|| Error::no_oracle("a pass over examples needs max-oracle shards"))?;
        self.seq += 1;
        stats.evaluations += 1;
        let workers: Vec<Rank> = (1..comm.size()).collect();
        let t0 = Instant::now();
        let mut msg = Vec::with_capacity(3 + w.len());
        msg.extend_from_slice(&[
            t::CMD_EVAL_EXAMPLES,
            self.seq as f64,
            f64::from(u8::from(keep_psi)),
        ]);
        msg.extend_from_slice(w);
        for &r in &workers {
            t::send(comm, r, t::TAG_CMD, &msg);
            stats.bytes_sent += 8 * msg.len() as u64;
        }
        let t1 = Instant::now();
        let local = on_oracle_thread(share.thread_safe(), pool, || {
            local_pass(share.as_ref(), 0, w, keep_psi)
        });
        let t2 = Instant::now();
        let got = t::gather(comm, &workers, t::deadline(options.reply_timeout));
        stats.local_seconds += (t2 - t1).as_secs_f64();
        stats.wait_seconds += (t1 - t0).as_secs_f64() + t2.elapsed().as_secs_f64();

        let mut items = Vec::with_capacity(*self.first_example.last().unwrap_or(&0));
        let mut errors: Vec<(Rank, Error)> = Vec::new();
        match local {
            Ok(v) => items.extend(v),
            Err(e) => errors.push((0, e)),
        }
        let (first, seq) = (&self.first_example, self.seq);
        let missing = sort_answers(&workers, got, stats, &mut errors, |r, v| {
            let n = first[r as usize + 1] - first[r as usize];
            items.append(&mut decode_items(v, seq, n, keep_psi)?);
            Ok(())
        });
        self.failures(options, missing, errors)?;
        Ok(items)
    }

    /// The error of an exchange: ranks that did not answer (then lost), or
    /// the first rank's error naming it.
    fn failures(
        &mut self,
        options: &Options,
        missing: Vec<Rank>,
        errors: Vec<(Rank, Error)>,
    ) -> Result<()> {
        if !missing.is_empty() {
            self.lost.extend(&missing);
            return Err(Error::rank_lost(format!(
                "{} did not answer within {} (died or hung; {LOST_MARK}: end the job, e.g. \
                 exit without MPI_Finalize)",
                t::name_ranks(&missing),
                seconds(options.reply_timeout)
            )));
        }
        if let Some((r, e)) = errors.first() {
            let mut e = e.clone().context(format!("(rank {r})"));
            if errors.len() > 1 {
                let others: Vec<Rank> = errors[1..].iter().map(|(r, _)| *r).collect();
                e = e.context(format!("(also failed: {})", t::name_ranks(&others)));
            }
            return Err(e);
        }
        Ok(())
    }
}

/// Rank 0: sorts the workers' answers `got` (in the order of `workers`): a
/// silent rank goes to the returned list of missing ranks, a failure or an
/// answer `take` refuses to `errors`, and `take` gets the numbers of every
/// other one (their bytes booked in `stats`). Both kinds of round
/// (partitioned risk, example passes) share it, so they treat ranks alike.
fn sort_answers(
    workers: &[Rank],
    got: Vec<Option<Message>>,
    stats: &mut Stats,
    errors: &mut Vec<(Rank, Error)>,
    mut take: impl FnMut(Rank, &[f64]) -> Result<()>,
) -> Vec<Rank> {
    let mut missing = Vec::new();
    for (&r, m) in workers.iter().zip(got) {
        match m {
            None => missing.push(r),
            Some(Message::Failed(e)) => errors.push((r, e)),
            Some(Message::Numbers(v)) => {
                stats.bytes_received += 8 * v.len() as u64;
                if let Err(e) = take(r, &v) {
                    errors.push((r, e));
                }
            }
        }
    }
    missing
}

/// A worker's answers as numbers: `[seq, count, per example: hinge, loss,
/// label bits, and with psi: nnz, indices, values]`.
fn encode_items(seq: f64, items: &[PassItem], keep_psi: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(2 + 3 * items.len());
    out.extend_from_slice(&[seq, items.len() as f64]);
    for it in items {
        out.extend_from_slice(&[it.hinge, it.loss, f64::from_bits(it.label)]);
        if keep_psi {
            let p = it.psi.as_ref();
            let nnz = p.map_or(0, |p| p.idx.len());
            out.push(nnz as f64);
            if let Some(p) = p {
                out.extend(p.idx.iter().map(|&j| f64::from(j)));
                out.extend_from_slice(&p.val);
            }
        }
    }
    out
}

/// The inverse of [`encode_items`], checking the sequence and the count.
fn decode_items(v: &[f64], seq: u64, n: usize, keep_psi: bool) -> Result<Vec<PassItem>> {
    let bad = |what: &str| Error::internal(format!("a malformed pass answer: {what}"));
    if v.len() < 2 || v[0] != seq as f64 || v[1] as usize != n {
        return Err(bad("sequence or count"));
    }
    let mut items = Vec::with_capacity(n);
    let mut k = 2;
    for _ in 0..n {
        let head = v.get(k..k + 3).ok_or_else(|| bad("short"))?;
        let (hinge, loss, label) = (head[0], head[1], head[2].to_bits());
        k += 3;
        let psi = if keep_psi {
            let nnz = *v.get(k).ok_or_else(|| bad("short"))? as usize;
            let idx = v.get(k + 1..k + 1 + nnz).ok_or_else(|| bad("short"))?;
            let val = v
                .get(k + 1 + nnz..k + 1 + 2 * nnz)
                .ok_or_else(|| bad("short"))?;
            k += 1 + 2 * nnz;
            Some(SparseVec {
                idx: idx.iter().map(|&j| j as u32).collect(),
                val: val.to_vec(),
            })
        } else {
            None
        };
        items.push(PassItem {
            hinge,
            loss,
            label,
            psi,
        });
    }
    if k != v.len() {
        return Err(bad("trailing numbers"));
    }
    Ok(items)
}

/// Evaluates a rank's parts at `w` (in parallel when thread-safe), naming
/// parts by their global number `first + p` in errors. Each part's values
/// are those a single process computes for it.
fn eval_local(local: &dyn PartitionedRisk, w: &[f64], first: usize) -> Result<PartValues> {
    let n = local.num_parts();
    let dim = local.dim();
    let one = |p: usize| -> Result<(f64, Vec<f64>)> {
        let mut g = vec![0.0; dim];
        let risk = local
            .partial_risk(p, w, &mut g)
            .map_err(|e| e.context(format!("(part {})", first + p)))?;
        Ok((risk, g))
    };
    let results: Vec<Result<(f64, Vec<f64>)>> = if local.thread_safe() && n > 1 {
        (0..n).into_par_iter().map(one).collect()
    } else {
        (0..n).map(one).collect()
    };
    let mut risks = Vec::with_capacity(n);
    let mut grads = Vec::with_capacity(n);
    for r in results {
        let (risk, g) = r?;
        risks.push(risk);
        grads.push(g);
    }
    Ok((risks, grads))
}

/// Another rank: evaluates its parts whenever rank 0 asks, until rank 0
/// ends the run.
fn serve(
    comm: &SimpleCommunicator,
    options: &Options,
    pool: &rayon::ThreadPool,
    worker: &mut Worker,
    stats: &mut Stats,
    w: &mut [f64],
) -> Result<Info> {
    let local = worker
        .local
        .clone()
        .ok_or_else(|| Error::internal("the shard was not set up"))?;
    let n = local.num_parts();
    loop {
        let t0 = Instant::now();
        let message = t::receive(comm, 0, t::deadline(options.command_timeout));
        stats.wait_seconds += t0.elapsed().as_secs_f64();
        let v = match message {
            None => {
                return Err(Error::oracle_failed(format!(
                    "rank 0 sent nothing for {} (rank {})",
                    seconds(options.command_timeout),
                    comm.rank()
                )))
            }
            Some(Message::Failed(e)) => return Err(e),
            Some(Message::Numbers(v)) => v,
        };
        stats.bytes_received += 8 * v.len() as u64;
        let kind = v.first().copied().unwrap_or(f64::NAN);
        if kind == t::CMD_EVAL_PARTS && v.len() >= 2 {
            let x = &v[2..];
            stats.evaluations += 1;
            let t1 = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| {
                on_oracle_thread(local.thread_safe(), pool, || {
                    eval_local(local.as_ref(), x, worker.first_part)
                })
            }))
            .unwrap_or_else(|_| Err(Error::internal("a panic in the oracle")));
            stats.local_seconds += t1.elapsed().as_secs_f64();
            match result {
                Ok((risks, grads)) => {
                    let mut out = Vec::with_capacity(1 + n * (1 + x.len()));
                    out.push(v[1]);
                    out.extend_from_slice(&risks);
                    for g in &grads {
                        out.extend_from_slice(g);
                    }
                    t::send(comm, 0, t::TAG_DATA, &out);
                    stats.bytes_sent += 8 * out.len() as u64;
                }
                Err(e) => t::send_error(comm, 0, &e),
            }
        } else if kind == t::CMD_EVAL_EXAMPLES && v.len() >= 3 {
            let keep = v[2] == 1.0;
            let x = &v[3..];
            stats.evaluations += 1;
            let t1 = Instant::now();
            let result = match &worker.examples {
                Some((o, offset)) => catch_unwind(AssertUnwindSafe(|| {
                    on_oracle_thread(o.thread_safe(), pool, || {
                        local_pass(o.as_ref(), *offset, x, keep)
                    })
                }))
                .unwrap_or_else(|_| Err(Error::internal("a panic in the oracle"))),
                None => Err(Error::no_oracle(
                    "a pass over examples needs max-oracle shards",
                )),
            };
            stats.local_seconds += t1.elapsed().as_secs_f64();
            match result {
                Ok(items) => {
                    let out = encode_items(v[1], &items, keep);
                    t::send(comm, 0, t::TAG_DATA, &out);
                    stats.bytes_sent += 8 * out.len() as u64;
                }
                Err(e) => t::send_error(comm, 0, &e),
            }
        } else if kind == t::CMD_END && v.len() >= 3 + t::INFO_LEN {
            let ok = v[2] == 1.0;
            let info = t::decode_info(&v[3..3 + t::INFO_LEN]);
            let best = &v[3 + t::INFO_LEN..];
            let copied = best.len() == w.len();
            if copied {
                w.copy_from_slice(best);
            }
            if !ok {
                return Err(
                    match t::receive(comm, 0, t::deadline(options.reply_timeout)) {
                        Some(Message::Failed(e)) => e,
                        _ => Error::internal("rank 0 ended the run with no reason"),
                    },
                );
            }
            if !copied {
                return Err(Error::dimension_mismatch(format!(
                    "w has length {} but the problem's dimension is {} (rank {})",
                    w.len(),
                    best.len(),
                    comm.rank()
                )));
            }
            return Ok(info);
        } else {
            return Err(Error::internal(format!(
                "an unexpected message from rank 0 (kind {kind}, {} numbers)",
                v.len()
            )));
        }
    }
}
