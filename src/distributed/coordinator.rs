//! Rank 0: checks the ranks' shards and lays out the parts, builds the
//! ordinary [`Solver`] over the distributed oracle, whose evaluations are
//! spread over the ranks, and ends each collective call on the other ranks.
//!
//! The oracle talks MPI on the thread that joined (it is not thread-safe,
//! so the solver calls it only on the thread that runs it); the
//! communicator it shares with the [`Coordinator`] may be used only there,
//! which [`SendWrapper`] checks.

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use mpi::topology::{Communicator, Rank, SimpleCommunicator};
use send_wrapper::SendWrapper;

use super::layout::Plan;
use super::wire::{self as t, Message};
use super::worker::Share;
use super::{guarded, lost_ranks, ExampleRange, Options, Shard, Stats};
use crate::bcfw::Breakpoint;
use crate::error::{Error, Result};
use crate::oracle::PassItem;
use crate::oracle::{
    Corner, ExampleParts, Factoring, MaxOracle, PartValues, PartitionedRisk, Problem, Subgradient,
};
use crate::solver::{Algorithm, Info, Settings, Solver};

/// Rank 0's end of the communicator: what the distributed oracle and the
/// [`Coordinator`] share.
struct Hub {
    comm: SimpleCommunicator,
    options: Options,
    /// Rank 0's own share of every evaluation.
    share: Share,
    plan: Plan,
    /// Ranks that did not answer in time: they take no further part.
    lost: Vec<Rank>,
    /// The number of the last command (answers carry it).
    seq: u64,
    stats: Stats,
}

/// The hub, usable from the thread that joined only.
#[derive(Clone)]
struct Remote(SendWrapper<Rc<RefCell<Hub>>>);

impl Remote {
    fn with<T>(&self, f: impl FnOnce(&mut Hub) -> Result<T>) -> Result<T> {
        if !self.0.valid() {
            return Err(Error::invalid_argument(
                "the distributed oracle was called from a thread other than the one that \
                 joined the communicator (MPI is called only from that thread)",
            ));
        }
        let mut hub = self
            .0
            .try_borrow_mut()
            .map_err(|_| Error::internal("the distributed oracle was called while it evaluated"))?;
        f(&mut hub)
    }
}

/// The risk rank 0's solver sees for the bundle methods: all parts of all
/// ranks, evaluated at once through [`PartitionedRisk::eval_all`].
struct DistributedRisk {
    dim: usize,
    num_parts: usize,
    remote: Remote,
}

impl PartitionedRisk for DistributedRisk {
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
    fn thread_safe(&self) -> bool {
        false
    }
    fn eval_all(&self, w: &[f64]) -> Option<Result<PartValues>> {
        Some(self.remote.with(|hub| hub.evaluate(w)))
    }
}

/// The max-oracle BCFW sees on rank 0: rank 0's whole oracle for the block
/// steps, and the passes over all examples spread over the ranks
/// ([`MaxOracle::eval_pass`]).
struct DistributedOracle {
    full: Arc<dyn MaxOracle>,
    remote: Remote,
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
    fn max_oracle_block(&self, first: usize, w: &[f64], out: &mut [Corner]) -> Option<Result<()>> {
        self.full.max_oracle_block(first, w, out)
    }
    fn block_risk(
        &self,
        first: usize,
        n: usize,
        w: &[f64],
        grad: &mut [f64],
    ) -> Option<Result<f64>> {
        self.full.block_risk(first, n, w, grad)
    }
    fn thread_safe(&self) -> bool {
        false
    }
    fn eval_pass(&self, w: &[f64], keep_psi: bool) -> Option<Result<Vec<PassItem>>> {
        Some(self.remote.with(|hub| hub.pass(w, keep_psi)))
    }
    /// Rank 0's whole problem's class rows, answers and pass of class
    /// scores: exact block steps run there, and their exact passes then
    /// keep the same shrinking as in one process (the same bits). Chain
    /// blocks are not kept (their corners are asked as vectors).
    fn factoring(&self) -> Factoring {
        match self.full.factoring() {
            Factoring::Chains(_) => Factoring::Vector,
            other => other,
        }
    }
}

/// Rank 0 of a distributed solver, beside its ordinary [`Solver`] (see
/// [`super::join`]): it ends each collective call on the other ranks
/// ([`Coordinator::finish`], or [`Coordinator::run`] for a run). Use it and
/// the solver on the thread that joined; drop both before MPI is finalised.
pub struct Coordinator {
    remote: Remote,
}

impl Coordinator {
    /// The set-up on rank 0: gathers the ranks' reports, checks them against
    /// its own shard, sends every rank its place (or the error of the
    /// set-up, so that every rank returns it) and builds the solver.
    pub(super) fn join(
        comm: SimpleCommunicator,
        shard: Result<Shard>,
        pool: Result<rayon::ThreadPool>,
        settings: Settings,
        options: Options,
    ) -> Result<(Solver, Coordinator)> {
        let workers: Vec<Rank> = (1..comm.size()).collect();
        let got = t::gather(&comm, &workers, t::deadline(options.reply_timeout));
        let mut stats = Stats::default();
        let mut missing = Vec::new();
        let mut reports = Vec::new();
        let mut verdict: Result<()> = match (&shard, &pool) {
            (Err(e), _) | (_, Err(e)) => Err(e.clone().context("(rank 0)")),
            _ => Ok(()),
        };
        for (&r, m) in workers.iter().zip(got) {
            match m {
                None => missing.push(r),
                Some(Message::Failed(e)) => verdict = verdict.and(Err(e)),
                Some(Message::Numbers(v)) if v.len() == 3 => {
                    stats.bytes_received += 24;
                    reports.push((r, v));
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
                t::seconds(options.reply_timeout)
            )));
        }
        let size = comm.size() as usize;
        let prepared = verdict.and_then(|()| {
            let (shard, pool) = (shard?, pool?);
            let plan = Plan::new(&shard, &settings, size, &reports)?;
            let share = own_share(&shard, &plan, pool)?;
            Ok((shard, plan, share))
        });
        let (shard, plan, share) = match prepared {
            Ok(p) => p,
            Err(e) => {
                for &r in workers.iter().filter(|r| !missing.contains(r)) {
                    t::send_error(&comm, r, &e);
                }
                return Err(e);
            }
        };
        let remote = Remote(SendWrapper::new(Rc::new(RefCell::new(Hub {
            comm,
            options,
            share,
            plan,
            lost: Vec::new(),
            seq: 0,
            stats,
        }))));
        let solver = solver_over(shard, &remote, settings);
        remote.with(|hub| {
            for &r in &workers {
                match &solver {
                    Ok(_) => {
                        let msg = hub.plan.setup_message(r as usize);
                        t::send(&hub.comm, r, t::TAG_CMD, &msg);
                        hub.stats.bytes_sent += 8 * msg.len() as u64;
                    }
                    Err(e) => t::send_error(&hub.comm, r, e),
                }
            }
            Ok(())
        })?;
        Ok((solver?, Coordinator { remote }))
    }

    /// This rank's communication figures (all zero when asked from a thread
    /// other than the one that joined, which cannot see them).
    pub fn stats(&self) -> Stats {
        self.remote.with(|h| Ok(h.stats)).unwrap_or_default()
    }
    /// The number of parts of the whole risk.
    pub fn num_parts(&self) -> usize {
        self.remote.with(|h| Ok(h.plan.num_parts())).unwrap_or(0)
    }
    /// The parts rank 0 evaluates (global part numbers).
    pub fn local_parts(&self) -> Range<usize> {
        self.remote.with(|h| Ok(h.share.parts())).unwrap_or(0..0)
    }

    /// One collective run: `solver.run(w)` (the solver [`super::join`] made
    /// on this rank), then [`Coordinator::finish`] with its outcome, so
    /// every rank returns the same.
    pub fn run(&self, solver: &mut Solver, w: &mut [f64]) -> Result<Info> {
        let result = guarded("the solver", || solver.run(w));
        self.finish(result.as_ref().map(|_| ()), solver.info(), w)?;
        result
    }

    /// BCFW's regularisation path as a collective call: `solver.bcfw_path`,
    /// with its passes spread over the ranks, then [`Coordinator::finish`]
    /// with BCFW's iterate.
    pub fn bcfw_path(
        &self,
        solver: &mut Solver,
        eps: f64,
        lambda_min: f64,
        max_breakpoints: usize,
    ) -> Result<Vec<Breakpoint>> {
        let result = guarded("the solver", || {
            solver
                .bcfw_for_path()?
                .path(eps, lambda_min, max_breakpoints)
        });
        let w = solver.bcfw().and_then(|b| b.iterate()).unwrap_or(&[]);
        self.finish(result.as_ref().map(|_| ()), solver.info(), w)?;
        result
    }

    /// Ends the current collective call (a run, BCFW's path) on every rank
    /// that still answers: their [`super::Worker::serve`] returns `outcome`
    /// (`Ok(info)` or the same error) and writes `w` (when it has the
    /// problem's length) into their point.
    /// Fails only when called from a thread other than the one that joined
    /// (then nothing was sent).
    pub fn finish(
        &self,
        outcome: std::result::Result<(), &Error>,
        info: &Info,
        w: &[f64],
    ) -> Result<()> {
        self.remote.with(|hub| {
            hub.finish(outcome, info, w);
            Ok(())
        })
    }
}

/// Rank 0's own share of the evaluations: its parts, and for shards of
/// examples its examples of the plan (all of its examples, except for BCFW,
/// whose rank 0 holds every example for the block steps and evaluates the
/// front block of a pass).
fn own_share(shard: &Shard, plan: &Plan, pool: rayon::ThreadPool) -> Result<Share> {
    Ok(match shard {
        Shard::Parts(r) => Share::new(r.clone(), 0, None, pool),
        Shard::Examples(o) => {
            let front: Arc<dyn MaxOracle> =
                Arc::new(ExampleRange::new(o.clone(), plan.examples_of(0))?);
            let parts = ExampleParts::shard(
                front.clone(),
                plan.num_examples(),
                plan.num_parts(),
                plan.parts_of(0),
            )?;
            Share::new(Arc::new(parts), 0, Some((front, 0)), pool)
        }
    })
}

/// The ordinary solver over the distributed oracle: a max-oracle for BCFW
/// (block steps on rank 0's whole oracle, passes spread), else the parts of
/// all ranks (`oracle_calls` counts examples for shards of examples, as one
/// process does).
fn solver_over(shard: Shard, remote: &Remote, settings: Settings) -> Result<Solver> {
    let (dim, num_parts, num_examples) =
        remote.with(|h| Ok((shard.dim(), h.plan.num_parts(), h.plan.num_examples())))?;
    let remote = remote.clone();
    match shard {
        Shard::Examples(full) if settings.algorithm == Algorithm::Bcfw => Solver::new(
            Problem::from_max_oracle(DistributedOracle { full, remote }),
            settings,
        ),
        // As for one process: BCFW without a max-oracle has no oracle.
        Shard::Parts(_) if settings.algorithm == Algorithm::Bcfw => Err(Error::no_oracle(
            "distributed BCFW needs max-oracle shards (Shard::Examples)",
        )),
        shard => {
            let calls = match shard {
                Shard::Examples(_) => num_examples,
                Shard::Parts(_) => num_parts,
            } as u64;
            let risk = DistributedRisk {
                dim,
                num_parts,
                remote,
            };
            Solver::with_parts(Arc::new(risk), calls, settings)
        }
    }
}

impl Hub {
    /// Sends command `kind` with `head` and `w` to every other rank, runs
    /// `local` on rank 0's share meanwhile and gathers the answers (in rank
    /// order) until the reply deadline.
    fn round<T>(
        &mut self,
        head: &[f64],
        w: &[f64],
        local: impl FnOnce(&Share) -> Result<T>,
    ) -> (Result<T>, Vec<Option<Message>>) {
        self.seq += 1;
        self.stats.evaluations += 1;
        let workers: Vec<Rank> = (1..self.comm.size()).collect();
        let t0 = Instant::now();
        let mut msg = Vec::with_capacity(head.len() + 1 + w.len());
        msg.extend_from_slice(&head[..1]);
        msg.push(self.seq as f64);
        msg.extend_from_slice(&head[1..]);
        msg.extend_from_slice(w);
        for &r in &workers {
            t::send(&self.comm, r, t::TAG_CMD, &msg);
            self.stats.bytes_sent += 8 * msg.len() as u64;
        }
        let t1 = Instant::now();
        let mine = local(&self.share);
        let t2 = Instant::now();
        let got = t::gather(
            &self.comm,
            &workers,
            t::deadline(self.options.reply_timeout),
        );
        self.stats.local_seconds += (t2 - t1).as_secs_f64();
        self.stats.wait_seconds += (t1 - t0).as_secs_f64() + t2.elapsed().as_secs_f64();
        (mine, got)
    }

    /// Every part of every rank at `w`, in part order.
    fn evaluate(&mut self, w: &[f64]) -> Result<PartValues> {
        self.check_lost()?;
        let dim = w.len();
        let (local, got) = self.round(&[t::CMD_EVAL_PARTS], w, |s| s.eval_parts(w));
        let total = self.plan.num_parts();
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
        let (plan, seq) = (&self.plan, self.seq);
        let missing = sort_answers(got, &mut self.stats, &mut errors, |r, v| {
            let n = plan.parts_of(r as usize).len();
            if v.len() != 1 + n * (1 + dim) || v[0] != seq as f64 {
                return Err(Error::internal(format!(
                    "a malformed answer ({} numbers for {n} parts, sequence {} instead of {seq})",
                    v.len(),
                    v.first().copied().unwrap_or(f64::NAN),
                )));
            }
            risks.extend_from_slice(&v[1..1 + n]);
            grads.extend(
                v[1 + n..]
                    .chunks_exact(dim)
                    .map(|g| Subgradient::Dense(g.to_vec())),
            );
            Ok(())
        });
        self.failures(missing, errors)?;
        // Name the rank of a non-finite value (the solver names the part).
        for (p, (r, g)) in risks.iter().zip(&grads).enumerate() {
            let rank = self.plan.rank_of_part(p);
            if !r.is_finite() {
                return Err(Error::non_finite(format!(
                    "risk is {r} (part {p}) (rank {rank})"
                )));
            }
            if let Some((j, v)) = g.first_non_finite() {
                return Err(Error::non_finite(format!(
                    "subgradient[{j}] is {v} (part {p}) (rank {rank})"
                )));
            }
        }
        Ok((risks, grads))
    }

    /// The answers of every example at `w`, in example order (BCFW's
    /// passes).
    fn pass(&mut self, w: &[f64], keep_psi: bool) -> Result<Vec<PassItem>> {
        self.check_lost()?;
        let head = [t::CMD_EVAL_EXAMPLES, f64::from(u8::from(keep_psi))];
        let (local, got) = self.round(&head, w, |s| s.pass(w, keep_psi));
        let mut items = Vec::with_capacity(self.plan.num_examples());
        let mut errors: Vec<(Rank, Error)> = Vec::new();
        match local {
            Ok(v) => items.extend(v),
            Err(e) => errors.push((0, e)),
        }
        let (plan, seq) = (&self.plan, self.seq);
        let missing = sort_answers(got, &mut self.stats, &mut errors, |r, v| {
            let n = plan.examples_of(r as usize).len();
            items.append(&mut t::decode_items(v, seq, n, keep_psi)?);
            Ok(())
        });
        self.failures(missing, errors)?;
        Ok(items)
    }

    /// Ranks lost in an earlier evaluation end every later one at once.
    fn check_lost(&self) -> Result<()> {
        if self.lost.is_empty() {
            return Ok(());
        }
        Err(lost_ranks(format!(
            "{} did not answer in an earlier run",
            t::name_ranks(&self.lost)
        )))
    }

    /// The error of a round: ranks that did not answer (then lost), or the
    /// first rank's error naming it.
    fn failures(&mut self, missing: Vec<Rank>, errors: Vec<(Rank, Error)>) -> Result<()> {
        if !missing.is_empty() {
            self.lost.extend(&missing);
            return Err(lost_ranks(format!(
                "{} did not answer within {} (died or hung)",
                t::name_ranks(&missing),
                t::seconds(self.options.reply_timeout)
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

    /// Ends the call on every rank that still answers, with the same info,
    /// `w` (when it has the problem's length) and outcome.
    fn finish(&mut self, outcome: std::result::Result<(), &Error>, info: &Info, w: &[f64]) {
        let dim = self.plan.dim();
        let mut msg = Vec::with_capacity(3 + t::INFO_LEN + dim);
        msg.extend_from_slice(&[
            t::CMD_END,
            self.seq as f64,
            f64::from(u8::from(outcome.is_ok())),
        ]);
        msg.extend_from_slice(&t::encode_info(info));
        if w.len() == dim {
            msg.extend_from_slice(w);
        } else {
            msg.resize(msg.len() + dim, f64::NAN);
        }
        for r in 1..self.comm.size() {
            if self.lost.contains(&r) {
                continue;
            }
            t::send(&self.comm, r, t::TAG_CMD, &msg);
            self.stats.bytes_sent += 8 * msg.len() as u64;
            if let Err(e) = outcome {
                t::send_error(&self.comm, r, e);
            }
        }
    }
}

/// Sorts the other ranks' answers `got` (rank `k + 1` at `k`): a silent
/// rank goes to the returned list of missing ranks, a failure or an answer
/// `take` refuses to `errors`, and `take` gets the numbers of every other
/// one (their bytes booked in `stats`). Both kinds of round (parts, passes)
/// share it, so they treat ranks alike.
fn sort_answers(
    got: Vec<Option<Message>>,
    stats: &mut Stats,
    errors: &mut Vec<(Rank, Error)>,
    mut take: impl FnMut(Rank, &[f64]) -> Result<()>,
) -> Vec<Rank> {
    let mut missing = Vec::new();
    for (r, m) in (1..).zip(got) {
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
