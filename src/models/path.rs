//! Max-sum (Viterbi) on a path of nodes with `K` states each: the one
//! dynamic programme of the chain model ([`super::Chain`]) and of the graph
//! model's tree engine on an example that is a path in node order
//! ([`super::graph::EngineKind::TreeMaxSum`]), so that both decode chains
//! with the same code, the same sums and the same ties.
//!
//! The recursion runs forwards: `cur_0 = node_0`, then for `t = 1..L`
//! `cur_t[y] = max_p cur_{t-1}[p] + table_t[p K + y]` (one
//! [`crate::linalg::max_plus`] step: the lowest maximising `p` on ties)
//! plus `node_t[y]`; the last node takes the lowest `y` maximising
//! `cur_{L-1}[y] + last(y)` and the others follow the recorded
//! predecessors back.

/// The tables of one decode, reused between calls.
#[derive(Default)]
pub(crate) struct PathMaxSum {
    /// The best score of a path ending in each state at the current /
    /// previous node.
    cur: Vec<f64>,
    prev: Vec<f64>,
    /// `back[t K + y]`: the best predecessor of state `y` at node `t`.
    back: Vec<u32>,
    /// The decoded states, one per node.
    pub path: Vec<u32>,
}

impl PathMaxSum {
    /// Maximises `sum_t node_t(y_t) + sum_{t >= 1} table_t[y_{t-1} K + y_t]
    /// + last(y_{L-1})` over the labellings of `len >= 1` nodes with `k`
    /// states each; writes the maximiser to `self.path` and returns its
    /// score. `node(t, scores)` adds node `t`'s scores to `scores` (which
    /// hold zeros for `t = 0`, so node 0 may write them instead); `table(t)`
    /// is the `K x K` table of the edge from node `t - 1` to node `t`, a row
    /// per state of node `t - 1`.
    #[inline]
    pub(crate) fn run<'a>(
        &mut self,
        len: usize,
        k: usize,
        mut node: impl FnMut(usize, &mut [f64]),
        table: impl Fn(usize) -> &'a [f64],
        last: impl Fn(usize) -> f64,
    ) -> f64 {
        let PathMaxSum {
            cur,
            prev,
            back,
            path,
        } = self;
        cur.clear();
        cur.resize(k, 0.0);
        prev.clear();
        prev.resize(k, 0.0);
        back.clear();
        back.resize(len * k, 0);
        node(0, cur);
        for t in 1..len {
            std::mem::swap(cur, prev);
            let b = &mut back[t * k..(t + 1) * k];
            // Predecessor 0 first, then a strict improvement only: the lowest
            // predecessor wins ties.
            crate::linalg::max_plus(prev, table(t), cur, b);
            node(t, cur);
        }
        let mut best = 0;
        let mut best_score = cur[0] + last(0);
        for (y, &c) in cur.iter().enumerate().skip(1) {
            let v = c + last(y);
            if v > best_score {
                best = y;
                best_score = v;
            }
        }
        path.clear();
        path.resize(len, 0);
        path[len - 1] = best as u32;
        for t in (1..len).rev() {
            path[t - 1] = back[t * k + path[t] as usize];
        }
        best_score
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every labelling of a small path, the lowest (in lexicographic order
    /// from the last node) among the best kept: the reference the
    /// programme's value is checked against.
    fn exhaustive(len: usize, k: usize, node: &[f64], tables: &[f64], last: &[f64]) -> f64 {
        let mut y = vec![0usize; len];
        let mut best = f64::NEG_INFINITY;
        loop {
            let mut s = last[y[len - 1]];
            for t in 0..len {
                s += node[t * k + y[t]];
                if t > 0 {
                    s += tables[t * k * k + y[t - 1] * k + y[t]];
                }
            }
            best = best.max(s);
            let mut t = 0;
            while t < len && y[t] == k - 1 {
                y[t] = 0;
                t += 1;
            }
            if t == len {
                return best;
            }
            y[t] += 1;
        }
    }

    #[test]
    fn finds_a_maximiser_of_random_paths_with_ties() {
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let mut dp = PathMaxSum::default();
        for round in 0..2000 {
            let (len, k) = (rng.gen_range(1..6), rng.gen_range(1..10));
            let int = round % 2 == 0;
            let mut draw = || {
                if int {
                    f64::from(rng.gen_range(-2i32..3))
                } else {
                    rng.gen_range(-1.0..1.0)
                }
            };
            let node: Vec<f64> = (0..len * k).map(|_| draw()).collect();
            let tables: Vec<f64> = (0..len * k * k).map(|_| draw()).collect();
            let last: Vec<f64> = (0..k).map(|_| draw()).collect();
            let value = dp.run(
                len,
                k,
                |t, s| {
                    for (v, n) in s.iter_mut().zip(&node[t * k..(t + 1) * k]) {
                        *v += n;
                    }
                },
                |t| &tables[t * k * k..(t + 1) * k * k],
                |y| last[y],
            );
            let want = exhaustive(len, k, &node, &tables, &last);
            assert!(
                (value - want).abs() <= 1e-12,
                "round {round}: {value} vs {want}"
            );
            // The path's own score is the value.
            let p = &dp.path;
            let mut s = last[p[len - 1] as usize];
            for t in 0..len {
                s += node[t * k + p[t] as usize];
                if t > 0 {
                    s += tables[t * k * k + p[t - 1] as usize * k + p[t] as usize];
                }
            }
            assert!((s - value).abs() <= 1e-12, "round {round}: path scores {s}");
        }
    }
}
