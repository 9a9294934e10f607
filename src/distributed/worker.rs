//! The ranks other than 0: each evaluates its share of the problem whenever
//! rank 0 asks, until rank 0 ends the collective call; and the evaluation of
//! one rank's share, which rank 0 uses for its own share too.

use std::ops::Range;
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Instant;

use mpi::topology::{Communicator, SimpleCommunicator};
use rayon::prelude::*;

use super::wire::{self as t, Message};
use super::{guarded, Options, Shard, Stats};
use crate::error::{Error, Result};
use crate::oracle::adapters::block_bounds;
use crate::oracle::pass::{local_pass, on_oracle_thread};
use crate::oracle::PassItem;
use crate::oracle::{ExampleParts, MaxOracle, PartValues, PartitionedRisk, Subgradient};
use crate::solver::{Info, Settings};

/// What one rank evaluates: its parts of the whole risk and, for shards of
/// examples, its examples for BCFW's passes. Each value is computed by the
/// code a single process runs for the same part or example, so it is the
/// same bits. A thread-safe oracle is called on the share's threads, one
/// that is not only on the thread that joined.
pub(super) struct Share {
    parts: Arc<dyn PartitionedRisk>,
    /// The global number of `parts`' part 0.
    first_part: usize,
    /// The rank's examples and the global number of their example 0.
    examples: Option<(Arc<dyn MaxOracle>, usize)>,
    pool: rayon::ThreadPool,
}

impl Share {
    pub(super) fn new(
        parts: Arc<dyn PartitionedRisk>,
        first_part: usize,
        examples: Option<(Arc<dyn MaxOracle>, usize)>,
        pool: rayon::ThreadPool,
    ) -> Self {
        Share {
            parts,
            first_part,
            examples,
            pool,
        }
    }

    /// The global parts this share evaluates.
    pub(super) fn parts(&self) -> Range<usize> {
        self.first_part..self.first_part + self.parts.num_parts()
    }

    /// Every part of the share at `w` (in parallel when thread-safe), with
    /// errors naming parts by their global number; a panic is an error.
    pub(super) fn eval_parts(&self, w: &[f64]) -> Result<PartValues> {
        let local = self.parts.as_ref();
        let first = self.first_part;
        guarded("the oracle", || {
            on_oracle_thread(local.thread_safe(), &self.pool, || {
                eval_local(local, w, first)
            })
        })
    }

    /// BCFW's pass over the share's examples at `w`.
    pub(super) fn pass(&self, w: &[f64], keep_psi: bool) -> Result<Vec<PassItem>> {
        let (oracle, offset) = self
            .examples
            .as_ref()
            .ok_or_else(|| Error::no_oracle("a pass over examples needs max-oracle shards"))?;
        guarded("the oracle", || {
            on_oracle_thread(oracle.thread_safe(), &self.pool, || {
                local_pass(oracle.as_ref(), *offset, w, keep_psi)
            })
        })
    }
}

/// Evaluates a rank's parts at `w` (in parallel when thread-safe), naming
/// parts by their global number `first + p` in errors.
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
        grads.push(Subgradient::Dense(g));
    }
    Ok((risks, grads))
}

/// A rank other than 0 of a distributed solver: it serves rank 0's
/// evaluations during each collective call ([`Worker::serve`]) and ends the
/// call with rank 0's outcome. Made by [`super::join`]; drop it before MPI
/// is finalised.
pub struct Worker {
    comm: SimpleCommunicator,
    /// The thread that joined: the only one that calls MPI.
    owner: ThreadId,
    options: Options,
    share: Share,
    total_parts: usize,
    dim: usize,
    settings: Settings,
    info: Info,
    stats: Stats,
}

impl Worker {
    /// The set-up on a rank other than 0: reports the shard (or its error)
    /// to rank 0 and takes its place in rank 0's plan.
    pub(super) fn join(
        comm: SimpleCommunicator,
        shard: Result<Shard>,
        pool: Result<rayon::ThreadPool>,
        settings: Settings,
        options: Options,
    ) -> Result<Self> {
        let rank = comm.rank();
        let mut stats = Stats::default();
        let shard = pool.and_then(|p| shard.map(|s| (s, p)));
        match &shard {
            Ok((sh, _)) => {
                t::send(&comm, 0, t::TAG_DATA, &sh.report());
                stats.bytes_sent += 24;
            }
            Err(e) => t::send_error(&comm, 0, &e.clone().context(format!("(rank {rank})"))),
        }
        // Rank 0 waits at most `reply_timeout` for the ranks, then answers.
        let timeout = options.reply_timeout.map(|t| 2 * t);
        let verdict = match t::receive(&comm, 0, t::deadline(timeout)) {
            Some(Message::Numbers(v)) if v.len() == 6 && v[0] == t::CMD_SETUP => Ok(v),
            Some(Message::Numbers(_)) => Err(Error::internal(
                "an unexpected message from rank 0 in the set-up",
            )),
            Some(Message::Failed(e)) => Err(e),
            None => Err(Error::oracle_failed(format!(
                "rank 0 did not answer the set-up within {}",
                t::seconds(timeout)
            ))),
        }?;
        stats.bytes_received += 48;
        let (m, p, first, n) = (
            verdict[2] as usize,
            verdict[3] as usize,
            verdict[4] as usize,
            verdict[5] as usize,
        );
        let (shard, pool) = shard?;
        let dim = shard.dim();
        let share = match shard {
            Shard::Parts(r) => Share::new(r, first, None, pool),
            Shard::Examples(o) => {
                let offset = block_bounds(m, p)[first];
                let parts = ExampleParts::shard(o.clone(), m, p, first..first + n)?;
                Share::new(Arc::new(parts), first, Some((o, offset)), pool)
            }
        };
        Ok(Worker {
            comm,
            owner: std::thread::current().id(),
            options,
            share,
            total_parts: p,
            dim,
            settings,
            info: Info::default(),
            stats,
        })
    }

    /// The dimension of the problem.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The number of parts of the whole risk.
    pub fn num_parts(&self) -> usize {
        self.total_parts
    }
    /// The parts this rank evaluates (global part numbers).
    pub fn local_parts(&self) -> Range<usize> {
        self.share.parts()
    }
    /// The summary of the last collective call: rank 0's.
    pub fn info(&self) -> &Info {
        &self.info
    }
    /// This rank's communication figures.
    pub fn stats(&self) -> Stats {
        self.stats
    }
    /// The settings given to [`super::join`] (lambda as set since).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Checks `lambda` as rank 0's solver does for its `set_lambda` (only
    /// rank 0's value is used), so that every rank gives the same answer.
    pub fn set_lambda(&mut self, lambda: f64) -> Result<()> {
        let mut s = self.settings.clone();
        s.lambda = lambda;
        s.validate()?;
        self.settings = s;
        Ok(())
    }

    /// Takes part in one collective call of rank 0's solver (`run`, BCFW's
    /// path): evaluates this rank's share whenever rank 0 asks, until rank 0
    /// ends the call. Then `w` holds rank 0's point (when it has the
    /// problem's length), and the result is rank 0's summary or error.
    pub fn serve(&mut self, w: &mut [f64]) -> Result<Info> {
        if std::thread::current().id() != self.owner {
            return Err(Error::invalid_argument(
                "a worker was asked to serve on a thread other than the one that joined the \
                 communicator (MPI is called only from that thread)",
            ));
        }
        let result = self.serve_call(w);
        if let Ok(info) = &result {
            self.info = *info;
        }
        result
    }

    fn serve_call(&mut self, w: &mut [f64]) -> Result<Info> {
        let comm = &self.comm;
        let stats = &mut self.stats;
        loop {
            let t0 = Instant::now();
            let message = t::receive(comm, 0, t::deadline(self.options.command_timeout));
            stats.wait_seconds += t0.elapsed().as_secs_f64();
            let v = match message {
                None => {
                    return Err(Error::oracle_failed(format!(
                        "rank 0 sent nothing for {} (rank {})",
                        t::seconds(self.options.command_timeout),
                        comm.rank()
                    )))
                }
                Some(Message::Failed(e)) => return Err(e),
                Some(Message::Numbers(v)) => v,
            };
            stats.bytes_received += 8 * v.len() as u64;
            let kind = v.first().copied().unwrap_or(f64::NAN);
            let answer = if kind == t::CMD_EVAL_PARTS && v.len() >= 2 {
                let x = &v[2..];
                let t1 = Instant::now();
                let result = self.share.eval_parts(x);
                stats.local_seconds += t1.elapsed().as_secs_f64();
                result.map(|(risks, grads)| {
                    let mut out = Vec::with_capacity(1 + risks.len() * (1 + x.len()));
                    out.push(v[1]);
                    out.extend_from_slice(&risks);
                    for g in grads {
                        // (A rank's parts answer dense: see eval_local.)
                        out.extend_from_slice(&g.into_dense(x.len()));
                    }
                    out
                })
            } else if kind == t::CMD_EVAL_EXAMPLES && v.len() >= 3 {
                let keep = v[2] == 1.0;
                let t1 = Instant::now();
                let result = self.share.pass(&v[3..], keep);
                stats.local_seconds += t1.elapsed().as_secs_f64();
                result.map(|items| t::encode_items(v[1], &items, keep))
            } else if kind == t::CMD_END && v.len() >= 3 + t::INFO_LEN {
                return self.end(&v, w);
            } else {
                return Err(Error::internal(format!(
                    "an unexpected message from rank 0 (kind {kind}, {} numbers)",
                    v.len()
                )));
            };
            stats.evaluations += 1;
            match answer {
                Ok(out) => {
                    t::send(comm, 0, t::TAG_DATA, &out);
                    stats.bytes_sent += 8 * out.len() as u64;
                }
                Err(e) => t::send_error(comm, 0, &e),
            }
        }
    }

    /// The end of a call: rank 0's outcome, summary and point.
    fn end(&mut self, v: &[f64], w: &mut [f64]) -> Result<Info> {
        let ok = v[2] == 1.0;
        let info = t::decode_info(&v[3..3 + t::INFO_LEN]);
        let best = &v[3 + t::INFO_LEN..];
        let copied = best.len() == w.len();
        if copied {
            w.copy_from_slice(best);
        }
        if !ok {
            self.info = info;
            return Err(
                match t::receive(&self.comm, 0, t::deadline(self.options.reply_timeout)) {
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
                self.comm.rank()
            )));
        }
        Ok(info)
    }
}
