//! Block sampling: uniform, a permutation per pass, or proportional to the
//! block-gap estimates (gap sampling, Osokin et al. 2016).

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
        }
    }

    /// Records the latest gap estimate of block `i` (gap sampling only).
    pub fn set_gap(&mut self, i: usize, gap: f64) {
        if self.kind == Sampling::Gap {
            self.tree.set(i, if gap > 0.0 { gap } else { 0.0 });
        }
    }

    /// Marks every block as visited (after an exact pass has estimated all).
    pub fn all_visited(&mut self) {
        if self.kind == Sampling::Gap {
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
                if total > 0.0 && total.is_finite() {
                    self.tree.find(rng.gen::<f64>() * total)
                } else {
                    rng.gen_range(0..self.n)
                }
            }
        }
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
}
