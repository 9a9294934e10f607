//! Where the parts and examples are: the [`Layout`] of example blocks over
//! ranks, and rank 0's [`Plan`] of a run, checked against what every rank
//! reported in the set-up.

use std::ops::Range;

use mpi::topology::Rank;

use super::wire as t;
use super::Shard;
use crate::error::{Error, Result};
use crate::oracle::adapters::block_bounds;
use crate::solver::{Algorithm, Settings, DEFAULT_PARTS};

/// How the `P` example blocks of `m` examples are spread over `R` ranks:
/// part `p` is examples `floor(p m / P) .. floor((p+1) m / P)` (the
/// solver's blocks), rank `r` holds parts `floor(r P / R) .. floor((r+1) P
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
            examples: block_bounds(num_examples, num_parts),
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

    /// The number of examples `m`.
    pub fn num_examples(&self) -> usize {
        *self.examples.last().unwrap_or(&0)
    }
    /// The number of blocks `P`.
    pub fn num_parts(&self) -> usize {
        self.examples.len() - 1
    }
    /// The number of ranks `R`.
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
    if settings.algorithm == Algorithm::Bcfw {
        return num_ranks.min(num_examples).max(1);
    }
    match settings.num_parts {
        0 if settings.algorithm.is_partitioned() => DEFAULT_PARTS.min(num_examples),
        0 => num_ranks.min(num_examples).max(1),
        p => p,
    }
}

/// Rank 0's plan of a distributed solver: which global parts (and, for
/// shards of examples, which examples) each rank evaluates.
pub(super) struct Plan {
    dim: usize,
    /// `first_part[r]..first_part[r + 1]` are rank r's parts.
    first_part: Vec<usize>,
    /// `first_example[r]..first_example[r + 1]` are rank r's examples (all
    /// 0 for a partitioned risk).
    first_example: Vec<usize>,
}

impl Plan {
    /// Checks the ranks' set-up reports `[kind, dim, count]` (ranks 1.. in
    /// order) against rank 0's shard and lays out the parts.
    pub(super) fn new(
        shard: &Shard,
        settings: &Settings,
        size: usize,
        reports: &[(Rank, Vec<f64>)],
    ) -> Result<Self> {
        let mine = shard.report();
        let (kind, dim) = (mine[0], mine[1] as usize);
        let name = |k: f64| {
            if k == t::KIND_PARTS {
                "parts of a partitioned risk"
            } else {
                "examples of a max-oracle"
            }
        };
        let mut counts = vec![mine[2] as usize];
        for (r, v) in reports {
            if v[0] != kind {
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
        if kind == t::KIND_PARTS {
            Self::of_parts(dim, settings, &counts)
        } else {
            Self::of_examples(dim, settings, size, &counts)
        }
    }

    /// The ranks hold `counts` parts of a partitioned risk.
    fn of_parts(dim: usize, settings: &Settings, counts: &[usize]) -> Result<Self> {
        let mut first_part = vec![0];
        for c in counts {
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
            dim,
            first_example: vec![0; first_part.len()],
            first_part,
        })
    }

    /// The ranks hold `counts` examples of a max-oracle, which must be those
    /// of [`Layout::for_settings`] (for BCFW rank 0 holds every example).
    fn of_examples(dim: usize, settings: &Settings, size: usize, counts: &[usize]) -> Result<Self> {
        let bcfw = settings.algorithm == Algorithm::Bcfw;
        let m: usize = if bcfw { counts[0] } else { counts.iter().sum() };
        if m == 0 {
            return Err(Error::invalid_argument("the ranks hold no example"));
        }
        let layout = Layout::for_settings(settings, m, size)?;
        for (r, &c) in counts.iter().enumerate() {
            let want = layout.examples_of(r);
            if !(bcfw && r == 0) && c != want.len() {
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
        let ends = |f: &dyn Fn(usize) -> usize, last: usize| -> Vec<usize> {
            (0..=size)
                .map(|r| if r < size { f(r) } else { last })
                .collect()
        };
        Ok(Plan {
            dim,
            first_part: ends(&|r| layout.parts_of(r).start, layout.num_parts()),
            first_example: ends(&|r| layout.examples_of(r).start, m),
        })
    }

    /// The dimension of the problem.
    pub(super) fn dim(&self) -> usize {
        self.dim
    }
    /// The number of parts of the whole risk.
    pub(super) fn num_parts(&self) -> usize {
        *self.first_part.last().unwrap_or(&0)
    }
    /// The number of examples of the whole problem (0 for parts of a
    /// partitioned risk).
    pub(super) fn num_examples(&self) -> usize {
        *self.first_example.last().unwrap_or(&0)
    }
    /// Rank `r`'s parts.
    pub(super) fn parts_of(&self, r: usize) -> Range<usize> {
        self.first_part[r]..self.first_part[r + 1]
    }
    /// Rank `r`'s examples (empty for a partitioned risk).
    pub(super) fn examples_of(&self, r: usize) -> Range<usize> {
        self.first_example[r]..self.first_example[r + 1]
    }
    /// The rank that evaluates part `p`.
    pub(super) fn rank_of_part(&self, p: usize) -> usize {
        self.first_part.partition_point(|&f| f <= p) - 1
    }
    /// Rank `r`'s set-up verdict: `[CMD_SETUP, 0, examples, parts, its
    /// first part, its number of parts]`.
    pub(super) fn setup_message(&self, r: usize) -> [f64; 6] {
        [
            t::CMD_SETUP,
            0.0,
            self.num_examples() as f64,
            self.num_parts() as f64,
            self.first_part[r] as f64,
            self.parts_of(r).len() as f64,
        ]
    }
}
