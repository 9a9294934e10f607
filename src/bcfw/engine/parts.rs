//! The named parts of [`super::BcfwState`]: what it counts, the weighted
//! average, the gap estimates, the block sampling, the fresh corner of the
//! last oracle call and the scratch the steps reuse.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::super::sampler::Sampler;
use crate::oracle::sparse::{CornerScratch, SparseVec};
use crate::oracle::Corner;
use crate::vocab::Settings;

/// What the state counts over its life (its runs' statistics).
#[derive(Default)]
pub(crate) struct StepCounts {
    /// Block steps so far (for the step 2n/(k + 2n) and the eviction score).
    pub(crate) steps: u64,
    pub(crate) passes: u64,
    pub(crate) oracle_calls: u64,
    /// Oracle answers not trusted as maximisers (marked inexact, or clipped
    /// at the ground truth).
    pub(crate) doubtful: u64,
    pub(crate) cache_hits: u64,
    /// Multi-plane approximate passes (no oracle calls).
    pub(crate) approx_passes: u64,
}

/// Weighted averaging (an option): the averages of `v` and `l`.
#[derive(Default)]
pub(crate) struct Averaging {
    /// The average of `v`, when averaging is on.
    pub(crate) v: Option<Vec<f64>>,
    pub(crate) l: f64,
    /// Steps averaged since the last restart.
    pub(crate) steps: u64,
}

/// The block-gap estimates' sums (each block's is in its [`super::Block`]).
pub(crate) struct GapEstimates {
    /// The last exact total gap (infinity before the first exact pass).
    pub(crate) last_exact: f64,
    /// The sum of the finite block-gap estimates.
    pub(crate) sum: f64,
    /// Blocks whose gap estimate is not known (not finite): counted as it
    /// changes, not by walking the blocks every pass.
    pub(crate) unknown: usize,
}

impl GapEstimates {
    /// No block estimated yet.
    pub(crate) fn new(n: usize) -> Self {
        GapEstimates {
            last_exact: f64::INFINITY,
            sum: 0.0,
            unknown: n,
        }
    }
}

/// Which block steps next: the sampler and its random stream.
pub(crate) struct Sampling {
    pub(crate) rng: ChaCha8Rng,
    pub(crate) sampler: Sampler,
}

impl Sampling {
    /// The sampler of `settings` for `n` blocks, seeded by `settings.seed`.
    pub(crate) fn new(settings: &Settings, n: usize) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
        let sampler = Sampler::new(settings.sampling, n, &mut rng).with_degree(settings.gap_degree);
        Sampling { rng, sampler }
    }
}

/// The dot products a block step needs of the oracle's fresh answer on a
/// sparse block, gathered in the one pass over `w_i` that forms psi.
#[derive(Clone, Copy)]
pub(crate) struct FreshDots {
    pub(crate) block: usize,
    pub(crate) w_dot_wi: f64,
    pub(crate) psi_dot_wi: f64,
    /// Every coordinate of psi is one of `w_i`'s.
    pub(crate) psi_within: bool,
}

/// The oracle's last answer as a step uses it, when it is not kept as a
/// corner (a step towards it follows its call).
#[derive(Default)]
pub(crate) struct FreshCorner {
    /// Its psi (vector blocks).
    pub(crate) psi: SparseVec,
    pub(crate) norm2: f64,
    /// `<w, w_i>` and `<psi, w_i>` of its block, gathered while psi was
    /// dense (sparse blocks; cleared after the step).
    pub(crate) dots: Option<FreshDots>,
    pub(crate) loss: f64,
    /// Its class (class blocks).
    pub(crate) class: usize,
    /// `<w, psi>` (chain blocks).
    pub(crate) w_dot_psi: f64,
}

/// Buffers reused so that block steps do not allocate.
pub(crate) struct Scratch {
    pub(crate) corner: Corner,
    pub(crate) corner_sums: CornerScratch,
    /// A step's direction, and the best one so far while another is tried.
    pub(crate) dir: SparseVec,
    pub(crate) dir_parked: SparseVec,
    pub(crate) merged: SparseVec,
    /// The block order of an approximate pass.
    pub(crate) order: Vec<usize>,
}

impl Scratch {
    pub(crate) fn new(dim: usize) -> Self {
        Scratch {
            corner: Corner::new(dim),
            corner_sums: CornerScratch::default(),
            dir: SparseVec::default(),
            dir_parked: SparseVec::default(),
            merged: SparseVec::default(),
            order: Vec::new(),
        }
    }
}
