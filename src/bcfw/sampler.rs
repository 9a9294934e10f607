//! Block sampling: uniform, a permutation per pass, proportional to a power
//! of the block-gap estimates (gap sampling, Osokin et al. 2016), or the
//! block of the largest estimate (their deterministic 'maxGap').

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::vocab::Sampling;

/// Draws the next block.
pub struct Sampler {
    kind: Sampling,
    n: usize,
    /// Permutation of the current pass (permutation sampling), or the blocks
    /// not visited yet in a random order (gap sampling visits them first).
    order: Vec<usize>,
    next: usize,
    tree: SumTree,
    /// Gap sampling draws proportionally to `gap^degree`.
    degree: f64,
    /// Max-gap sampling: the largest estimate.
    max: MaxTree,
}

impl Sampler {
    pub fn new(kind: Sampling, n: usize, rng: &mut ChaCha8Rng) -> Self {
        let mut order: Vec<usize> = (0..n).collect();
        if kind != Sampling::Uniform {
            order.shuffle(rng);
        }
        Sampler {
            kind,
            n,
            order,
            next: 0,
            tree: SumTree::new(if kind == Sampling::Gap { n } else { 0 }),
            degree: 1.0,
            max: MaxTree::new(if kind == Sampling::MaxGap { n } else { 0 }),
        }
    }

    /// Gap sampling proportionally to `gap^degree` (1 unless set).
    pub fn with_degree(mut self, degree: f64) -> Self {
        self.degree = degree;
        self
    }

    /// Records the latest gap estimate of block `i` (gap sampling only).
    pub fn set_gap(&mut self, i: usize, gap: f64) {
        let g = if gap > 0.0 { gap } else { 0.0 };
        match self.kind {
            Sampling::Gap if self.degree == 1.0 => self.tree.set(i, g),
            Sampling::Gap => self.tree.set(i, g.powf(self.degree)),
            Sampling::MaxGap => self.max.set(i, g),
            _ => {}
        }
    }

    /// Marks every block as visited (after an exact pass has estimated all).
    pub fn all_visited(&mut self) {
        if matches!(self.kind, Sampling::Gap | Sampling::MaxGap) {
            self.next = self.n;
        }
    }

    /// Whether the draws do not depend on the gap estimates (uniform and
    /// permutation sampling): a pass's draws can then be made before its
    /// steps, giving the same blocks in the same order.
    pub fn draws_ahead(&self) -> bool {
        matches!(self.kind, Sampling::Uniform | Sampling::Permutation)
    }

    /// The block [`Sampler::next`] would draw now, from a copy of `rng`:
    /// the same block as long as neither the weights nor `rng` change
    /// before that draw (a guess otherwise). `None` where the draw would
    /// reshuffle a permutation. Changes nothing: the prefetch of the next
    /// block must leave the iterates as they are.
    pub fn peek(&self, rng: &ChaCha8Rng) -> Option<usize> {
        match self.kind {
            Sampling::Permutation if self.next == self.n => None,
            Sampling::Permutation => Some(self.order[self.next]),
            Sampling::Gap | Sampling::MaxGap if self.next < self.n => Some(self.order[self.next]),
            Sampling::MaxGap => Some(self.max.argmax()),
            Sampling::Uniform | Sampling::Gap => Some(self.draw(&mut rng.clone())),
        }
    }

    /// The random draw of uniform sampling, and of gap sampling once every
    /// block has been visited.
    fn draw(&self, rng: &mut ChaCha8Rng) -> usize {
        if self.kind == Sampling::Gap {
            let total = self.tree.total();
            // (a power of the gaps may overflow to inf: uniform then)
            if total > 0.0 && total.is_finite() {
                return self.tree.find(rng.gen::<f64>() * total);
            }
        }
        rng.gen_range(0..self.n)
    }

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> usize {
        match self.kind {
            Sampling::Uniform => self.draw(rng),
            Sampling::Permutation => {
                if self.next == self.n {
                    self.order.shuffle(rng);
                    self.next = 0;
                }
                self.next += 1;
                self.order[self.next - 1]
            }
            Sampling::Gap => {
                if self.next < self.n {
                    self.next += 1;
                    return self.order[self.next - 1];
                }
                self.draw(rng)
            }
            Sampling::MaxGap => {
                if self.next < self.n {
                    self.next += 1;
                    return self.order[self.next - 1];
                }
                self.max.argmax()
            }
        }
    }
}

/// A complete binary tree of maxima: set a weight and find the largest
/// (lowest index on ties), O(log n) and O(1).
struct MaxTree {
    leaves: usize,
    /// The index of the largest leaf under each node.
    best: Vec<usize>,
    weight: Vec<f64>,
}

impl MaxTree {
    fn new(n: usize) -> Self {
        let leaves = n.next_power_of_two();
        let mut best = vec![0; if n == 0 { 0 } else { 2 * leaves }];
        for (i, b) in best.iter_mut().enumerate().skip(leaves) {
            *b = i - leaves;
        }
        let mut t = MaxTree {
            leaves,
            best,
            weight: vec![f64::NEG_INFINITY; leaves],
        };
        // Only real blocks can win: the padding stays at -inf.
        for k in (1..t.leaves).rev() {
            t.best[k] = t.pick(t.best[2 * k], t.best[2 * k + 1]);
        }
        t
    }

    fn pick(&self, a: usize, b: usize) -> usize {
        if self.weight[b] > self.weight[a] {
            b
        } else {
            a
        }
    }

    fn set(&mut self, i: usize, weight: f64) {
        self.weight[i] = weight;
        let mut k = (self.leaves + i) / 2;
        while k >= 1 {
            self.best[k] = self.pick(self.best[2 * k], self.best[2 * k + 1]);
            k /= 2;
        }
    }

    fn argmax(&self) -> usize {
        self.best.get(1).copied().unwrap_or(0)
    }
}

/// Children per node of [`SumTree`]: eight sums fill a cache line, so a
/// draw or an update reads one line per level, and 10,000 blocks need 5
/// levels instead of the 14 of a binary tree.
const FANOUT: usize = 8;

/// A tree of partial sums over non-negative weights, `FANOUT` children per
/// node: set a weight and draw an index proportionally to the weights,
/// both O(log n).
struct SumTree {
    /// `levels[0]` holds the weights (padded with zeros to a multiple of
    /// `FANOUT`), `levels[j + 1][p]` the sum of `levels[j][p F .. (p + 1) F]`;
    /// the last level has at most `FANOUT` entries.
    levels: Vec<Vec<f64>>,
}

impl SumTree {
    fn new(n: usize) -> Self {
        let mut levels = Vec::new();
        let mut len = n;
        while len > 0 {
            let padded = len.div_ceil(FANOUT) * FANOUT;
            levels.push(vec![0.0; padded]);
            if padded == FANOUT {
                break;
            }
            len = padded / FANOUT;
        }
        SumTree { levels }
    }

    fn total(&self) -> f64 {
        self.levels.last().map_or(0.0, |top| top.iter().sum())
    }

    fn set(&mut self, i: usize, weight: f64) {
        self.levels[0][i] = weight;
        let mut p = i;
        for j in 1..self.levels.len() {
            p /= FANOUT;
            // Recomputed from the children, so no rounding drift builds up.
            let sum = self.levels[j - 1][p * FANOUT..(p + 1) * FANOUT]
                .iter()
                .sum();
            self.levels[j][p] = sum;
        }
    }

    /// The leaf whose cumulative interval holds `target` (in `[0, total)`),
    /// never a leaf of weight 0 (a `target` at or past the total, by
    /// rounding, takes the last leaf of positive weight).
    fn find(&self, mut target: f64) -> usize {
        let mut p = 0;
        for level in self.levels.iter().rev() {
            let group = &level[p * FANOUT..(p + 1) * FANOUT];
            let last = group.iter().rposition(|&x| x > 0.0).unwrap_or(0);
            let mut pick = last;
            for (c, &x) in group[..last].iter().enumerate() {
                if x > 0.0 && target < x {
                    pick = c;
                    break;
                }
                target -= x;
            }
            p = p * FANOUT + pick;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn gap_sampling_visits_new_blocks_first_then_follows_the_gaps() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 5;
        let mut s = Sampler::new(Sampling::Gap, n, &mut rng);
        let mut first: Vec<usize> = (0..n).map(|_| s.next(&mut rng)).collect();
        first.sort();
        assert_eq!(first, vec![0, 1, 2, 3, 4]);
        for (i, g) in [0.0, 3.0, 0.0, 1.0, 0.0].into_iter().enumerate() {
            s.set_gap(i, g);
        }
        let mut counts = [0usize; 5];
        for _ in 0..40_000 {
            counts[s.next(&mut rng)] += 1;
        }
        assert_eq!(counts[0] + counts[2] + counts[4], 0);
        let share = counts[1] as f64 / 40_000.0;
        assert!((share - 0.75).abs() < 0.02, "{share}");
    }

    #[test]
    fn a_peek_is_the_next_draw_and_changes_nothing() {
        for kind in [
            Sampling::Uniform,
            Sampling::Permutation,
            Sampling::Gap,
            Sampling::MaxGap,
        ] {
            let mut rng = ChaCha8Rng::seed_from_u64(11);
            let n = 13;
            let mut s = Sampler::new(kind, n, &mut rng);
            let mut reshuffles = 0;
            for step in 0..500 {
                let peeked = s.peek(&rng);
                // Peeking twice, and the draws after it, see the same state.
                assert_eq!(s.peek(&rng), peeked, "{kind:?} step {step}");
                let drawn = s.next(&mut rng);
                match peeked {
                    Some(j) => assert_eq!(j, drawn, "{kind:?} step {step}"),
                    None => reshuffles += 1,
                }
                // New weights after the draw, as a block step sets them
                // (some zero, so gap sampling skips blocks).
                let g = if step % 3 == 0 { 0.0 } else { rng.gen::<f64>() };
                s.set_gap(drawn, g);
                if step == 250 {
                    s.all_visited();
                }
            }
            // Only a permutation's reshuffles go unpredicted.
            let expected = if kind == Sampling::Permutation {
                500 / n
            } else {
                0
            };
            assert_eq!(reshuffles, expected, "{kind:?}");
        }
    }

    #[test]
    fn the_sum_tree_finds_the_interval_of_a_target_as_a_plain_scan_does() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for n in [1, 7, 8, 9, 64, 65, 513, 10_000] {
            let mut tree = SumTree::new(n);
            let weights: Vec<f64> = (0..n)
                .map(|i| {
                    if i % 3 == 0 {
                        0.0
                    } else {
                        rng.gen::<f64>() * 2f64.powi(i as i32 % 7)
                    }
                })
                .collect();
            for (i, &x) in weights.iter().enumerate() {
                tree.set(i, x);
            }
            let total: f64 = weights.iter().sum();
            assert!(
                (tree.total() - total).abs() <= 1e-12 * total.max(1.0),
                "n = {n}"
            );
            if total == 0.0 {
                continue;
            }
            for _ in 0..200 {
                let target = rng.gen::<f64>() * tree.total();
                let i = tree.find(target);
                assert!(weights[i] > 0.0, "n = {n}: leaf {i} of weight 0");
                // The plain scan's interval, up to rounding of the sums.
                let before: f64 = weights[..i].iter().sum();
                let slack = 1e-9 * total;
                assert!(
                    before - slack <= target && target < before + weights[i] + slack,
                    "n = {n}: target {target} outside [{before}, {})",
                    before + weights[i]
                );
            }
            // A target at the total (rounding) takes the last positive leaf.
            let last = weights.iter().rposition(|&x| x > 0.0).unwrap();
            assert_eq!(tree.find(tree.total()), last, "n = {n}");
        }
    }

    #[test]
    fn permutation_sampling_covers_every_block_each_pass() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut s = Sampler::new(Sampling::Permutation, 7, &mut rng);
        for _ in 0..3 {
            let mut pass: Vec<usize> = (0..7).map(|_| s.next(&mut rng)).collect();
            pass.sort();
            assert_eq!(pass, (0..7).collect::<Vec<_>>());
        }
    }

    #[test]
    fn max_gap_sampling_takes_the_largest_estimate_lowest_index_first() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut s = Sampler::new(Sampling::MaxGap, 5, &mut rng);
        let mut first: Vec<usize> = (0..5).map(|_| s.next(&mut rng)).collect();
        first.sort_unstable();
        assert_eq!(first, [0, 1, 2, 3, 4]);
        for (i, g) in [0.5, 2.0, -1.0, 2.0, 1.0].into_iter().enumerate() {
            s.set_gap(i, g);
        }
        assert_eq!(s.next(&mut rng), 1);
        s.set_gap(1, 0.1);
        assert_eq!(s.next(&mut rng), 3);
        s.set_gap(3, 0.0);
        assert_eq!(s.next(&mut rng), 4);
    }

    #[test]
    fn gap_degree_sharpens_the_gap_distribution() {
        let draws = |degree: f64| {
            let mut rng = ChaCha8Rng::seed_from_u64(2);
            let mut s = Sampler::new(Sampling::Gap, 2, &mut rng).with_degree(degree);
            s.next(&mut rng);
            s.next(&mut rng);
            s.set_gap(0, 1.0);
            s.set_gap(1, 3.0);
            (0..40_000).filter(|_| s.next(&mut rng) == 1).count() as f64 / 40_000.0
        };
        // P(block 1) = 3^p / (1 + 3^p): 0.75 at p = 1, 0.9 at p = 2.
        assert!((draws(1.0) - 0.75).abs() < 0.01);
        assert!((draws(2.0) - 0.9).abs() < 0.01);
    }
}
