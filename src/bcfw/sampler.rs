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

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> usize {
        match self.kind {
            Sampling::Uniform => rng.gen_range(0..self.n),
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
                let total = self.tree.total();
                // (a power of the gaps may overflow to inf: uniform then)
                if total > 0.0 && total.is_finite() {
                    self.tree.find(rng.gen::<f64>() * total)
                } else {
                    rng.gen_range(0..self.n)
                }
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

/// A complete binary tree of partial sums over non-negative weights: set a
/// weight and draw an index proportionally to the weights, both O(log n).
struct SumTree {
    leaves: usize,
    node: Vec<f64>,
}

impl SumTree {
    fn new(n: usize) -> Self {
        let leaves = n.next_power_of_two();
        SumTree {
            leaves,
            node: vec![0.0; if n == 0 { 0 } else { 2 * leaves }],
        }
    }

    fn total(&self) -> f64 {
        self.node.get(1).copied().unwrap_or(0.0)
    }

    fn set(&mut self, i: usize, weight: f64) {
        let mut k = self.leaves + i;
        self.node[k] = weight;
        while k > 1 {
            k /= 2;
            // Recomputed from the children, so no rounding drift builds up.
            self.node[k] = self.node[2 * k] + self.node[2 * k + 1];
        }
    }

    /// The leaf whose cumulative interval holds `target` (in `[0, total)`),
    /// never a leaf of weight 0.
    fn find(&self, mut target: f64) -> usize {
        let mut k = 1;
        while k < self.leaves {
            let left = self.node[2 * k];
            if (target < left || self.node[2 * k + 1] <= 0.0) && left > 0.0 {
                k *= 2;
            } else {
                target -= left;
                k = 2 * k + 1;
            }
        }
        k - self.leaves
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

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
