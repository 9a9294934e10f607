//! Adapters between the oracle levels: a max-oracle becomes a partitioned risk
//! over contiguous example blocks; a full risk (or a partitioned risk summed)
//! becomes a partitioned risk with one part.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use super::answers::{screen_answer, AnswerLog};
pub(crate) use super::calls::call_max_oracle_block_until;
pub use super::calls::{
    call_max_oracle, call_max_oracle_block, call_max_oracle_named, ORACLE_BLOCK,
};
pub(crate) use super::calls::{deadline_passed, is_deadline_passed, past};
use super::sparse::{merge, CornerScratch, SparseVec};
use super::{Corner, FullRisk, MaxOracle, PartValues, PartitionedRisk, Subgradient};
use crate::error::{Error, Result};

/// A partitioned risk with exactly one part.
pub enum SinglePart {
    /// A full risk seen as one part.
    Full(Arc<dyn FullRisk>),
    /// All parts of a partitioned risk summed into one (plain BMRM on a
    /// partitioned problem).
    Summed(Arc<dyn PartitionedRisk>),
}

impl PartitionedRisk for SinglePart {
    fn dim(&self) -> usize {
        match self {
            SinglePart::Full(r) => r.dim(),
            SinglePart::Summed(r) => r.dim(),
        }
    }
    fn num_parts(&self) -> usize {
        1
    }
    fn thread_safe(&self) -> bool {
        match self {
            SinglePart::Full(r) => r.thread_safe(),
            SinglePart::Summed(r) => r.thread_safe(),
        }
    }
    fn partial_risk(&self, part: usize, w: &[f64], subgrad: &mut [f64]) -> Result<f64> {
        debug_assert_eq!(part, 0);
        match self {
            SinglePart::Full(r) => r.risk(w, subgrad),
            SinglePart::Summed(r) => {
                let parts = r.num_parts();
                let (risks, grads) = eval_parts(r.as_ref(), w, parts)?;
                subgrad.iter_mut().for_each(|g| *g = 0.0);
                let mut total = 0.0;
                for (risk, grad) in risks.iter().zip(&grads) {
                    total += risk;
                    grad.add_to(subgrad);
                }
                Ok(total)
            }
        }
    }
}

/// Evaluates all parts (in parallel when the risk is thread-safe), returning
/// the risks and subgradients in part order. Errors name the part. A risk
/// that evaluates all its parts at once ([`PartitionedRisk::eval_all`]) is
/// asked to do so.
pub fn eval_parts(r: &dyn PartitionedRisk, w: &[f64], parts: usize) -> Result<PartValues> {
    if let Some(all) = r.eval_all(w) {
        let (risks, grads) = all?;
        if risks.len() != parts || grads.len() != parts {
            return Err(Error::internal(format!(
                "eval_all gave {} risks and {} subgradients for {parts} parts",
                risks.len(),
                grads.len()
            )));
        }
        return Ok((risks, grads));
    }
    let dim = r.dim();
    let one = |p: usize| -> Result<(f64, Subgradient)> {
        // A one-part risk (a full risk, or the sum of a partitioned one whose
        // own parts already name themselves) has no part worth naming.
        let name = |e: Error| {
            if parts > 1 {
                e.context(format!("(part {p})"))
            } else {
                e
            }
        };
        if let Some(sparse) = r.partial_risk_sparse(p, w) {
            let (risk, g) = sparse.map_err(name)?;
            return Ok((risk, Subgradient::Sparse(g)));
        }
        let mut g = vec![0.0; dim];
        let risk = r.partial_risk(p, w, &mut g).map_err(name)?;
        Ok((risk, Subgradient::Dense(g)))
    };
    let results: Vec<Result<(f64, Subgradient)>> = if r.thread_safe() && parts > 1 {
        (0..parts).into_par_iter().map(one).collect()
    } else {
        (0..parts).map(one).collect()
    };
    let mut risks = Vec::with_capacity(parts);
    let mut grads = Vec::with_capacity(parts);
    for res in results {
        let (risk, g) = res?;
        risks.push(risk);
        grads.push(g);
    }
    Ok((risks, grads))
}

/// The mean structured hinge of a max-oracle, split into `P` contiguous
/// blocks of examples: part `p` is `(1/m) sum_{i in block p} H_i(w)` with
/// `H_i(w) = L_i(y^) - <w, psi_i(y^)>`, so the parts add up to `R(w)`.
/// Blocks differ in size by at most one; no example is dropped.
///
/// Inside a part, examples are evaluated in parallel (when the oracle is
/// thread-safe) in chunks whose boundaries depend only on the problem's
/// sizes, and the chunk sums are added in chunk order, so the result is the
/// same bits for any number of threads.
///
/// A *shard* ([`ExampleParts::shard`]) is a contiguous range of the parts of
/// such a split, over an oracle that holds only their examples: each of its
/// parts is the same bits as the same part of the whole (the distributed
/// solvers evaluate parts on several MPI ranks this way).
pub struct ExampleParts {
    oracle: Arc<dyn MaxOracle>,
    /// When a pass must give up (the run's time limit), set by the run.
    deadline: Arc<PassDeadline>,
    /// `bounds[p]..bounds[p + 1]` are the examples of part `p` of the whole
    /// split (all `total_parts` of them, global example indices).
    bounds: Vec<usize>,
    /// The parts this object evaluates: `first_part..first_part + num_parts`.
    first_part: usize,
    num_parts: usize,
    /// The number of examples of the whole problem, `m`.
    total_examples: usize,
    /// Set once the oracle has answered `block_risk` with `None` (it then
    /// answers no block): chunks sum corners sparse from then on, and
    /// allocate no dense gradient of their own.
    corners_only: Arc<AtomicBool>,
    /// Where the answers that cannot be trusted are counted (the solver's).
    answers: Arc<AnswerLog>,
    /// The chunks' dense accumulators of the last pass, reused by the next
    /// ([`SPARE_BYTES`]).
    spare: Arc<Mutex<Vec<Vec<f64>>>>,
}

/// The most bytes of chunk accumulators kept between passes. Allocated
/// afresh every pass, the 64 accumulators of a multiclass pass (4 MB) were
/// returned to the system and faulted in again: 1 ms of a 34 ms pass over
/// the 60,000 Fashion-MNIST images.
const SPARE_BYTES: usize = 1 << 25;

/// The end of the run's time, shared between a solver and the example
/// passes it runs: a pass over very many examples gives up at it instead of
/// running far past the time limit.
#[derive(Debug, Default)]
pub(crate) struct PassDeadline(Mutex<Option<Instant>>);

impl PassDeadline {
    /// Sets (or clears) the deadline for the passes that follow.
    pub(crate) fn set(&self, at: Option<Instant>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    pub(crate) fn get(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Examples between two readings of the clock in a pass.
const DEADLINE_EVERY: usize = 1024;

/// The most chunk accumulators (dense, `dim` each) all parts together allocate.
const MAX_CHUNKS: usize = 64;
/// Keep the chunk accumulators under this many bytes.
const CHUNK_MEMORY: usize = 1 << 28;

/// The first example of each of `num_parts` contiguous blocks of `m`
/// examples, and `m` at the end: block `p` is `b[p]..b[p + 1]`, of size
/// `floor(m/P)` or `ceil(m/P)`.
pub fn block_bounds(m: usize, num_parts: usize) -> Vec<usize> {
    let p = num_parts.max(1);
    (0..=p).map(|k| k * m / p).collect()
}

impl ExampleParts {
    /// The examples of `oracle` cut into `num_parts` contiguous blocks (see [`block_bounds`]).
    pub fn new(oracle: Arc<dyn MaxOracle>, num_parts: usize) -> Self {
        let m = oracle.num_examples();
        let bounds = block_bounds(m, num_parts);
        let num_parts = bounds.len() - 1;
        ExampleParts {
            oracle,
            deadline: Arc::default(),
            bounds,
            first_part: 0,
            num_parts,
            total_examples: m,
            corners_only: Arc::default(),
            answers: Arc::default(),
            spare: Arc::default(),
        }
    }

    /// Parts `parts` of the split of `total_examples` examples into
    /// `total_parts` blocks, over `oracle`, which holds exactly the examples
    /// of those parts: its example `j` is example `first + j` of the whole,
    /// `first` the first example of part `parts.start`. Part `k` of the shard
    /// is part `parts.start + k` of the whole, computed in the same order.
    pub fn shard(
        oracle: Arc<dyn MaxOracle>,
        total_examples: usize,
        total_parts: usize,
        parts: std::ops::Range<usize>,
    ) -> Result<Self> {
        let bounds = block_bounds(total_examples, total_parts);
        let total_parts = bounds.len() - 1;
        if parts.end > total_parts || parts.start > parts.end {
            return Err(Error::invalid_argument(format!(
                "parts {parts:?} are not a range of the {total_parts} parts"
            )));
        }
        let held = bounds[parts.end] - bounds[parts.start];
        if oracle.num_examples() != held {
            return Err(Error::dimension_mismatch(format!(
                "the oracle holds {} examples but parts {parts:?} of {total_examples} examples \
                 in {total_parts} parts are examples {}..{} ({held})",
                oracle.num_examples(),
                bounds[parts.start],
                bounds[parts.end]
            )));
        }
        Ok(ExampleParts {
            oracle,
            deadline: Arc::default(),
            bounds,
            first_part: parts.start,
            num_parts: parts.len(),
            total_examples,
            corners_only: Arc::default(),
            answers: Arc::default(),
            spare: Arc::default(),
        })
    }

    /// The same parts, recording the answers they cannot trust in `answers`.
    pub(crate) fn with_answers(mut self, answers: Arc<AnswerLog>) -> Self {
        self.answers = answers;
        self
    }

    /// The same parts, giving up at the deadline `deadline` holds.
    pub(crate) fn with_deadline(mut self, deadline: Arc<PassDeadline>) -> Self {
        self.deadline = deadline;
        self
    }

    /// The examples of part `p` of this object (global example indices).
    pub fn block(&self, p: usize) -> std::ops::Range<usize> {
        let g = self.first_part + p;
        self.bounds[g]..self.bounds[g + 1]
    }

    /// The global index of the oracle's example 0.
    fn offset(&self) -> usize {
        self.bounds[self.first_part]
    }

    /// Chunk length for a block of `len` examples (a function of sizes only,
    /// so sums are the same for any thread count). Parts are evaluated in
    /// parallel already, so each of `P` parts gets `1/P` of the chunks (`P`
    /// of the whole split, so a shard chunks as the whole does).
    fn chunk_len(&self, len: usize) -> usize {
        let dim = self.oracle.dim().max(1);
        let parts = self.bounds.len() - 1;
        let max_chunks = (CHUNK_MEMORY / (8 * dim))
            .clamp(1, MAX_CHUNKS)
            .div_ceil(parts)
            .max(2);
        len.div_ceil(max_chunks).max(8)
    }
}

/// A chunk's sum of `-psi` over its examples: dense when the oracle adds
/// its blocks into a gradient (`block_risk`), else its corners summed into
/// a sparse vector (a chain model's corner touches a few hundred of 1.7
/// million weights: a dense vector per chunk cost more than the sum).
struct ChunkSums {
    dense: Option<Vec<f64>>,
    sparse: Option<SparseVec>,
}

thread_local! {
    /// The accumulator of a chunk's corners, per thread: `dim` numbers
    /// allocated once per thread rather than once per chunk, zero between
    /// chunks.
    static CHUNK_SUMS: RefCell<CornerScratch> = RefCell::new(CornerScratch::default());
}

/// Frees this thread's chunk accumulator (the next chunk allocates one).
pub(crate) fn release_thread_scratch() {
    CHUNK_SUMS.with(|cell| drop(cell.take()));
}

impl ExampleParts {
    /// A chunk's dense accumulator of `dim` zeros, kept from an earlier
    /// pass when there is one.
    fn zeroed_accumulator(&self, dim: usize) -> Vec<f64> {
        let kept = self.spare.lock().ok().and_then(|mut s| s.pop());
        match kept {
            Some(mut acc) if acc.len() == dim => {
                acc.fill(0.0);
                acc
            }
            _ => vec![0.0; dim],
        }
    }

    /// Keeps a summed chunk accumulator for the next pass, up to
    /// [`SPARE_BYTES`] of them.
    fn keep_accumulator(&self, acc: Vec<f64>) {
        if let Ok(mut spare) = self.spare.lock() {
            if (spare.len() + 1) * acc.len() * 8 <= SPARE_BYTES {
                spare.push(acc);
            }
        }
    }

    /// Part `part`'s chunks at `w`, in example order: each the sum of its
    /// hinges and of its `-psi` (not yet divided by `m`).
    fn part_chunks(&self, part: usize, w: &[f64]) -> Result<Vec<(f64, ChunkSums)>> {
        let dim = self.oracle.dim();
        let offset = self.offset();
        let block = self.block(part);
        let chunk = self.chunk_len(block.len());
        let starts: Vec<usize> = block.clone().step_by(chunk).collect();
        let oracle = self.oracle.as_ref();
        let deadline = self.deadline.get();
        // One chunk: the sum of its hinges and the sum of its -psi, in example order.
        let run_chunk = |&start: &usize| -> Result<(f64, ChunkSums)> {
            let end = (start + chunk).min(block.end);
            let mut corners = vec![Corner::new(dim); ORACLE_BLOCK.min(end - start)];
            let mut dense: Option<Vec<f64>> = None;
            let mut sums: Option<CornerScratch> = None;
            let mut risk = 0.0;
            let mut i = start;
            while i < end {
                let corners_only = self.corners_only.load(Ordering::Relaxed);
                // `block_risk` is asked for spans up to the next multiple
                // of DEADLINE_EVERY from the chunk's start (the whole chunk
                // when it is shorter: the oracle then prepares `w` once per
                // chunk, e.g. the multiclass model's packed class rows);
                // the corners, for blocks of ORACLE_BLOCK.
                let (done, len) = if corners_only {
                    (i - start, ORACLE_BLOCK.min(end - i))
                } else {
                    let done = i - start;
                    let span_end = start + (done / DEADLINE_EVERY + 1) * DEADLINE_EVERY;
                    (done, span_end.min(end) - i)
                };
                // The clock about every DEADLINE_EVERY examples, at the
                // block or span that crosses the next multiple.
                let next = done + len;
                if let Some(d) = deadline {
                    if done / DEADLINE_EVERY < next / DEADLINE_EVERY && Instant::now() >= d {
                        return Err(deadline_passed());
                    }
                }
                let answer = if corners_only {
                    None
                } else {
                    let acc = dense.get_or_insert_with(|| self.zeroed_accumulator(dim));
                    oracle.block_risk(i - offset, len, w, acc)
                };
                match answer {
                    Some(Ok(r)) => risk += r,
                    Some(Err(block_error)) => {
                        // Name the failing example as the corners would.
                        for b in (i..i + len).step_by(ORACLE_BLOCK) {
                            let block = &mut corners[..ORACLE_BLOCK.min(i + len - b)];
                            call_max_oracle_block(oracle, b - offset, b, w, block)?;
                        }
                        return Err(block_error.context(format!(
                            "(examples {i}..{}; their corners succeed)",
                            i + len
                        )));
                    }
                    // Declined: this span again, through the corners.
                    None if !corners_only => {
                        self.corners_only.store(true, Ordering::Relaxed);
                        continue;
                    }
                    None => {
                        let block = &mut corners[..len];
                        call_max_oracle_block_until(oracle, i - offset, i, w, block, deadline)?;
                        // The thread's accumulator (taken, so that an error
                        // or a panic drops it rather than leave it dirty).
                        let sums = sums.get_or_insert_with(|| CHUNK_SUMS.with(RefCell::take));
                        for (j, corner) in block.iter_mut().enumerate() {
                            // Clipped at the ground truth (then it adds no psi).
                            let dot = corner.dot(w);
                            let (hinge, exact) = screen_answer(corner, dot, i + j)?;
                            if !exact {
                                self.answers.note(1);
                            }
                            risk += hinge;
                            sums.add_corner(corner, -1.0);
                        }
                    }
                }
                i += len;
            }
            let sparse = sums.map(|mut sums| {
                let out = sums.take_sums();
                CHUNK_SUMS.with(|cell| *cell.borrow_mut() = sums);
                out
            });
            Ok((risk, ChunkSums { dense, sparse }))
        };
        let chunks: Vec<Result<(f64, ChunkSums)>> = if oracle.thread_safe() {
            starts.par_iter().map(run_chunk).collect()
        } else {
            starts.iter().map(run_chunk).collect()
        };
        chunks.into_iter().collect()
    }

    /// The part's mean risk from its chunks, and its subgradient into
    /// `subgrad`: the chunks' sums added in order, then divided by `m`.
    fn sum_dense(&self, chunks: Vec<(f64, ChunkSums)>, subgrad: &mut [f64]) -> f64 {
        let m = self.total_examples as f64;
        subgrad.iter_mut().for_each(|g| *g = 0.0);
        let mut risk = 0.0;
        for (r, sums) in chunks {
            risk += r;
            // A dense sum first, then the corners' (an oracle answers
            // `block_risk` for every block or for none, so one of the two
            // is empty); a coordinate the corners lack adds nothing.
            if let Some(acc) = sums.dense {
                crate::linalg::axpy(1.0, &acc, subgrad);
                self.keep_accumulator(acc);
            }
            if let Some(sparse) = &sums.sparse {
                sparse.add_to(1.0, subgrad);
            }
        }
        subgrad.iter_mut().for_each(|g| *g /= m);
        risk / m
    }
}

impl PartitionedRisk for ExampleParts {
    fn dim(&self) -> usize {
        self.oracle.dim()
    }
    fn num_parts(&self) -> usize {
        self.num_parts
    }
    fn thread_safe(&self) -> bool {
        self.oracle.thread_safe()
    }

    fn partial_risk(&self, part: usize, w: &[f64], subgrad: &mut [f64]) -> Result<f64> {
        let chunks = self.part_chunks(part, w)?;
        Ok(self.sum_dense(chunks, subgrad))
    }

    fn partial_risk_sparse(&self, part: usize, w: &[f64]) -> Option<Result<(f64, SparseVec)>> {
        // Known only once the oracle has declined `block_risk`.
        if !self.corners_only.load(Ordering::Relaxed) {
            return None;
        }
        let chunks = match self.part_chunks(part, w) {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        if chunks.iter().any(|(_, sums)| sums.dense.is_some()) {
            // (Not met: `corners_only` is set once no block is answered.)
            let mut g = vec![0.0; self.dim()];
            let risk = self.sum_dense(chunks, &mut g);
            return Some(Ok((risk, SparseVec::from_dense(&g))));
        }
        let m = self.total_examples as f64;
        let mut risk = 0.0;
        let mut sum = SparseVec::default();
        let mut merged = SparseVec::default();
        for (r, sums) in chunks {
            risk += r;
            // The sums of `sum_dense`, coordinate by coordinate: 1 x and
            // x + y are its `0 + x` and `x + y`.
            if let Some(sparse) = sums.sparse {
                merged.idx.clear();
                merged.val.clear();
                merge(&sum, 1.0, &sparse, 1.0, &mut merged);
                std::mem::swap(&mut sum, &mut merged);
            }
        }
        sum.val.iter_mut().for_each(|g| *g /= m);
        // A sum so small that dividing it by m gives 0 is dropped, as the
        // dense vector's zeros are when it becomes a plane.
        sum.drop_zeros();
        Some(Ok((risk / m, sum)))
    }
}
