//! The counting wrappers: every user callback the methods make goes through
//! one of them, so the executor knows the number of calls and the time spent
//! in them without any method keeping its own tally.
//!
//! A call made alone is timed by itself; a batch (all parts at once, or one
//! call per example at a fixed `w`) is timed as a whole, since its calls run
//! in parallel and their times would overlap.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::error::Result;
use crate::oracle::adapters::{eval_parts, PassDeadline};
use crate::oracle::pass::local_pass_until;
use crate::oracle::{
    ChainAnswer, ChainLayout, ChainRows, ClassAnswer, ClassRows, Corner, Factoring, MaxOracle,
    PartValues, PartitionedRisk, PassItem,
};

/// Calls and seconds spent in the user's callbacks, shared by the wrappers
/// of one solver.
#[derive(Debug, Default)]
pub struct Tally {
    calls: AtomicU64,
    nanos: AtomicU64,
    /// Set while a batch is timed as a whole (its calls are not timed alone).
    in_batch: AtomicBool,
}

impl Tally {
    /// Callback calls so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Seconds inside callbacks so far.
    pub fn seconds(&self) -> f64 {
        self.nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    fn add(&self, calls: u64, since: Option<Instant>) {
        self.calls.fetch_add(calls, Ordering::Relaxed);
        if let Some(t) = since {
            let nanos = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }

    /// The start of a single call's timer, unless a batch times it.
    fn single(&self) -> Option<Instant> {
        (!self.in_batch.load(Ordering::Relaxed)).then(Instant::now)
    }

    /// Runs a batch of `calls` calls, timed as a whole.
    fn batch<T>(&self, calls: u64, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        self.in_batch.store(true, Ordering::Relaxed);
        let out = f();
        self.in_batch.store(false, Ordering::Relaxed);
        self.add(calls, Some(t));
        out
    }
}

/// A max-oracle whose calls are counted: one per example asked, `n` per
/// pass over all examples.
pub struct CountedOracle {
    inner: Arc<dyn MaxOracle>,
    tally: Arc<Tally>,
    /// When its passes over all examples give up (the run's time limit).
    deadline: Arc<PassDeadline>,
}

impl CountedOracle {
    /// Counts the calls to `inner` into `tally`.
    pub fn new(inner: Arc<dyn MaxOracle>, tally: Arc<Tally>) -> Self {
        CountedOracle {
            inner,
            tally,
            deadline: Arc::default(),
        }
    }

    /// The same oracle, whose passes over all examples give up between two
    /// examples at the deadline `deadline` holds.
    pub(crate) fn with_deadline(mut self, deadline: Arc<PassDeadline>) -> Self {
        self.deadline = deadline;
        self
    }
}

impl MaxOracle for CountedOracle {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_examples(&self) -> usize {
        self.inner.num_examples()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        let t = self.tally.single();
        let result = self.inner.max_oracle(example, w, out);
        self.tally.add(1, t);
        result
    }
    fn max_oracle_block(&self, first: usize, w: &[f64], out: &mut [Corner]) -> Option<Result<()>> {
        let t = self.tally.single();
        let result = self.inner.max_oracle_block(first, w, out);
        if result.is_some() {
            self.tally.add(out.len() as u64, t);
        }
        result
    }
    fn block_risk(
        &self,
        first: usize,
        n: usize,
        w: &[f64],
        grad: &mut [f64],
    ) -> Option<Result<f64>> {
        let t = self.tally.single();
        let result = self.inner.block_risk(first, n, w, grad);
        if result.is_some() {
            self.tally.add(n as u64, t);
        }
        result
    }
    fn thread_safe(&self) -> bool {
        self.inner.thread_safe()
    }
    /// The family's oracle calls counted too.
    fn factoring(&self) -> Factoring {
        match self.inner.factoring() {
            Factoring::Vector => Factoring::Vector,
            Factoring::Classes(inner) => Factoring::Classes(Arc::new(CountedClassRows {
                inner,
                tally: self.tally.clone(),
                num_examples: self.inner.num_examples(),
            })),
            Factoring::Chains(inner) => Factoring::Chains(Arc::new(CountedChainRows {
                inner,
                tally: self.tally.clone(),
            })),
        }
    }
    fn eval_pass(&self, w: &[f64], keep_psi: bool) -> Option<Result<Vec<PassItem>>> {
        let n = self.inner.num_examples() as u64;
        Some(self.tally.batch(n, || {
            self.inner.eval_pass(w, keep_psi).unwrap_or_else(|| {
                let deadline = self.deadline.get();
                local_pass_until(self.inner.as_ref(), 0, w, keep_psi, deadline)
            })
        }))
    }
}

/// The class rows of a [`CountedOracle`]: its oracle calls counted, one
/// per example answered; the arithmetic forwarded as it is.
struct CountedClassRows {
    inner: Arc<dyn ClassRows>,
    tally: Arc<Tally>,
    num_examples: usize,
}

impl ClassRows for CountedClassRows {
    fn answer(&self, i: usize, w: &[f64], scores: &mut [f64]) -> Result<ClassAnswer> {
        let t = self.tally.single();
        let result = self.inner.answer(i, w, scores);
        self.tally.add(1, t);
        result
    }
    fn scores_pass(&self, w: &[f64], out: &mut [f64]) -> Option<Result<()>> {
        let t = self.tally.single();
        let result = self.inner.scores_pass(w, out);
        if result.is_some() {
            self.tally.add(self.num_examples as u64, t);
        }
        result
    }
    fn num_classes(&self) -> usize {
        self.inner.num_classes()
    }
    fn truth(&self, i: usize) -> usize {
        self.inner.truth(i)
    }
    fn row_norm2(&self, i: usize) -> f64 {
        self.inner.row_norm2(i)
    }
    fn row_dot(&self, i: usize, k: usize, w: &[f64]) -> f64 {
        self.inner.row_dot(i, k, w)
    }
    fn row_dots(&self, i: usize, off: &[bool], w: &[f64], out: &mut [f64]) {
        self.inner.row_dots(i, off, w, out);
    }
    fn add_row(&self, i: usize, k: usize, a: f64, v: &mut [f64]) {
        self.inner.add_row(i, k, a, v);
    }
    fn prefetch(&self, i: usize) {
        self.inner.prefetch(i);
    }
    fn prefetch_row(&self, i: usize) {
        self.inner.prefetch_row(i);
    }
    fn warm(&self, i: usize) -> Option<f64> {
        self.inner.warm(i)
    }
    fn row_entries(&self, i: usize, f: &mut dyn FnMut(usize, f64)) {
        self.inner.row_entries(i, f);
    }
    fn class_loss(&self, i: usize, y: usize) -> Option<f64> {
        self.inner.class_loss(i, y)
    }
}

/// The chain rows of a [`CountedOracle`]: its oracle calls counted; the
/// arithmetic forwarded as it is.
struct CountedChainRows {
    inner: Arc<dyn ChainRows>,
    tally: Arc<Tally>,
}

impl ChainRows for CountedChainRows {
    fn answer(
        &self,
        i: usize,
        w: &[f64],
        scores: &mut [f64],
        labels: &mut [u32],
    ) -> Result<ChainAnswer> {
        let t = self.tally.single();
        let result = self.inner.answer(i, w, scores, labels);
        self.tally.add(1, t);
        result
    }
    fn num_labels(&self) -> usize {
        self.inner.num_labels()
    }
    fn truth(&self, i: usize) -> &[u32] {
        self.inner.truth(i)
    }
    fn layout(&self) -> ChainLayout {
        self.inner.layout()
    }
    fn gram(&self, i: usize, out: &mut [f64]) {
        self.inner.gram(i, out);
    }
    fn token_dot(&self, i: usize, t: usize, c: &[f64], w: &[f64]) -> f64 {
        self.inner.token_dot(i, t, c, w)
    }
    fn add_token(&self, i: usize, t: usize, change: &[(u32, f64)], v: &mut [f64]) {
        self.inner.add_token(i, t, change, v);
    }
}

/// A partitioned risk whose evaluations are counted in user-callback calls:
/// `calls_per_eval` for all parts at once, and the same share for each part
/// evaluated alone (exact for the parts SGD samples, which all cost the
/// same number of calls).
pub struct CountedParts {
    inner: Arc<dyn PartitionedRisk>,
    calls_per_eval: u64,
    tally: Arc<Tally>,
}

impl CountedParts {
    /// Counts `calls_per_eval` calls per evaluation of all parts of `inner`.
    pub fn new(inner: Arc<dyn PartitionedRisk>, calls_per_eval: u64, tally: Arc<Tally>) -> Self {
        CountedParts {
            inner,
            calls_per_eval,
            tally,
        }
    }
}

impl PartitionedRisk for CountedParts {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_parts(&self) -> usize {
        self.inner.num_parts()
    }
    fn partial_risk(&self, part: usize, w: &[f64], subgrad: &mut [f64]) -> Result<f64> {
        let t = self.tally.single();
        let result = self.inner.partial_risk(part, w, subgrad);
        let share = self.calls_per_eval / self.inner.num_parts().max(1) as u64;
        self.tally.add(share, t);
        result
    }
    fn thread_safe(&self) -> bool {
        self.inner.thread_safe()
    }
    fn eval_all(&self, w: &[f64]) -> Option<Result<PartValues>> {
        let parts = self.inner.num_parts();
        Some(self.tally.batch(self.calls_per_eval, || {
            eval_parts(self.inner.as_ref(), w, parts)
        }))
    }
}

/// The units SGD samples: examples of a max-oracle, or parts of a risk.
#[derive(Clone)]
pub enum Units {
    /// The examples of a (counted) max-oracle.
    Examples(Arc<dyn MaxOracle>),
    /// The parts of a (counted) partitioned risk.
    Parts(Arc<dyn PartitionedRisk>),
}
