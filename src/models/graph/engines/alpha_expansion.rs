//! Alpha-expansion: approximate maximisation for nodes with several states,
//! from Y. Boykov, O. Veksler and R. Zabih, "Fast approximate energy
//! minimization via graph cuts", IEEE PAMI 23(11), 2001.
//!
//! An expansion move on label `alpha` lets every node that has state
//! `alpha` either keep its state or switch to `alpha`: a binary problem,
//! solved exactly by one minimum cut ([`BinaryCut`]). Starting from the
//! labelling that maximises each node's unary score alone, the moves are
//! made for `alpha = 0, 1, ...` in turn, a move kept only if it raises the
//! score by more than a relative `1e-12`, until a whole sweep over the
//! labels keeps none (or after [`MAX_SWEEPS`] sweeps). Each kept move raises
//! the score, so the result is never worse than the start.
//!
//! A move's pairwise term on an edge between two nodes in states `a, b`,
//! with energies `V = -t`, is `[V(a,b), V(a,alpha), V(alpha,b),
//! V(alpha,alpha)]`; it is submodular iff `V(a,alpha) + V(alpha,b) >=
//! V(a,b) + V(alpha,alpha)`, which holds for every metric `V`
//! (`V(x,y) = 0` iff `x = y`, symmetric, triangle inequality; e.g. Potts and
//! truncated linear). When it does not (a non-metric table), the term is
//! truncated as in C. Rother, S. Kumar, V. Kolmogorov and A. Blake,
//! "Digital tapestry", CVPR 2005: `V(a,alpha)` and `V(alpha,b)` are raised
//! by half the deficit each, which leaves the current labelling's energy
//! unchanged and bounds every other move's from above, so the move found
//! never makes the energy worse (it may just not be the best move).
//!
//! The known bound (Boykov, Veksler and Zabih, Theorem 6.1): with a metric
//! pairwise energy `V_e = w_e d_e` and the energy shifted so that unary and
//! pairwise energies are non-negative (`E_i(s) = max_s' unary_i(s') -
//! unary_i(s)`, `V(x, x) = 0`), a labelling no expansion move improves has
//! energy at most `2c` times the optimum, `c = max over edges of
//! max_{a != b} V_e(a,b) / min_{a != b} V_e(a,b)`. The engine is not exact:
//! [`Engine::maximize`] returns `Ok(false)`.

use std::cell::RefCell;

use super::graph_cut::{check_call, submodular, BinaryCut};
use crate::error::Result;
use crate::models::graph::{Engine, GraphShape, Potentials};
use crate::models::with_scratch;

/// The most sweeps over the labels (a sweep that keeps no move stops
/// earlier).
pub const MAX_SWEEPS: usize = 100;

/// A move must raise the score by more than this, relative to the score's
/// magnitude, to be kept (so rounding cannot make the sweeps cycle).
const MIN_GAIN: f64 = 1e-12;

/// Per-thread buffers of [`AlphaExpansion`], reused across calls.
#[derive(Debug, Default)]
struct Scratch {
    cut: BinaryCut,
    /// Each node's variable in the current move (`u32::MAX`: fixed).
    var_of: Vec<u32>,
    /// The labelling after the current move.
    proposal: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Alpha-expansion by repeated minimum cuts: nodes may have different
/// numbers of states (label `alpha` moves only the nodes that have it).
/// Approximate; within `2c` of the optimum for metric pairwise energies (see
/// the module documentation). `O(sweeps * labels * max-flow)` per call.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlphaExpansion;

impl Engine for AlphaExpansion {
    fn name(&self) -> &str {
        "alpha-expansion"
    }

    fn check_shape(&self, _shape: &GraphShape) -> Result<()> {
        // Any number of states; the pairwise terms are checked per move.
        Ok(())
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        check_call(p, labels)?;
        // The start: each node's best state on its own (the first on ties).
        for (i, label) in labels.iter_mut().enumerate() {
            let u = p.unary_of(i);
            let mut best = 0;
            for (s, &x) in u.iter().enumerate() {
                if x > u[best] {
                    best = s;
                }
            }
            *label = best as u32;
        }
        let num_labels = p.shape.states.iter().copied().max().unwrap_or(0);
        let mut score = p.score(labels);
        with_scratch(&SCRATCH, |scratch| {
            for _ in 0..MAX_SWEEPS {
                let mut moved = false;
                for alpha in 0..num_labels {
                    if let Some(better) = expand(p, labels, alpha, score, scratch)? {
                        labels.copy_from_slice(&scratch.proposal);
                        score = better;
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
            Ok(false)
        })
    }
}

/// The best expansion move on `alpha` from `labels` (whose score is
/// `score`): its score if it raises the score by more than [`MIN_GAIN`]
/// (the labelling is then in `scratch.proposal`), else `None`.
fn expand(
    p: &Potentials,
    labels: &[u32],
    alpha: u32,
    score: f64,
    scratch: &mut Scratch,
) -> Result<Option<f64>> {
    let Scratch {
        cut,
        var_of,
        proposal,
    } = scratch;
    var_of.clear();
    let mut num_vars = 0u32;
    for (i, &y) in labels.iter().enumerate() {
        if p.shape.states[i] > alpha && y != alpha {
            var_of.push(num_vars);
            num_vars += 1;
        } else {
            var_of.push(u32::MAX);
        }
    }
    if num_vars == 0 {
        return Ok(None);
    }
    cut.reset(num_vars as usize);
    for (i, &v) in var_of.iter().enumerate() {
        if v != u32::MAX {
            let u = p.unary_of(i);
            cut.add_unary(v as usize, -u[labels[i] as usize], -u[alpha as usize]);
        }
    }
    for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
        let (a, b) = (labels[u as usize], labels[v as usize]);
        let (xu, xv) = (var_of[u as usize], var_of[v as usize]);
        match (xu != u32::MAX, xv != u32::MAX) {
            (true, true) => {
                let mut energy = [
                    -p.pair(e, a, b),
                    -p.pair(e, a, alpha),
                    -p.pair(e, alpha, b),
                    -p.pair(e, alpha, alpha),
                ];
                if !submodular(energy) {
                    // Truncation (Rother et al. 2005): raise E(0,1) and
                    // E(1,0) by half the deficit each; E(0,0) is kept, so
                    // the move's energy bounds the true one from above and
                    // equals it at the current labelling.
                    let deficit = (energy[0] + energy[3]) - (energy[1] + energy[2]);
                    energy[2] += 0.5 * deficit;
                    energy[1] = (energy[0] + energy[3]) - energy[2];
                }
                cut.add_pair(xu as usize, xv as usize, energy)?;
            }
            (true, false) => cut.add_unary(xu as usize, -p.pair(e, a, b), -p.pair(e, alpha, b)),
            (false, true) => cut.add_unary(xv as usize, -p.pair(e, a, b), -p.pair(e, a, alpha)),
            (false, false) => {}
        }
    }
    cut.solve()?;
    proposal.clear();
    proposal.extend_from_slice(labels);
    let mut changed = false;
    for (y, &v) in proposal.iter_mut().zip(var_of.iter()) {
        if v != u32::MAX && cut.is_one(v as usize) {
            *y = alpha;
            changed = true;
        }
    }
    if !changed {
        return Ok(None);
    }
    let moved = p.score(proposal);
    Ok((moved > score + MIN_GAIN * score.abs()).then_some(moved))
}

#[cfg(test)]
mod tests {
    use super::super::test_graphs::{close, random_graph, value, Problem};
    use super::*;
    use crate::models::graph::engines::{Exhaustive, GraphCut};
    use crate::models::graph::{Grid, Pairwise};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Each node's best state alone (the first on ties): the start.
    fn unary_argmax(p: &Potentials) -> Vec<u32> {
        (0..p.shape.num_nodes())
            .map(|i| {
                let u = p.unary_of(i);
                (0..u.len()).fold(0, |b, s| if u[s] > u[b] { s } else { b }) as u32
            })
            .collect()
    }

    /// The best expansion move on `alpha` from `y`, by trying every subset
    /// of the nodes that may switch.
    fn best_move(p: &Potentials, y: &[u32], alpha: u32) -> f64 {
        let movable: Vec<usize> = (0..y.len())
            .filter(|&i| p.shape.states[i] > alpha && y[i] != alpha)
            .collect();
        let mut z = y.to_vec();
        let mut best = f64::NEG_INFINITY;
        for mask in 0u32..1 << movable.len() {
            for (k, &i) in movable.iter().enumerate() {
                z[i] = if mask >> k & 1 == 1 { alpha } else { y[i] };
            }
            best = best.max(p.score(&z));
        }
        best
    }

    /// `c = max over edges of max_{a != b} V / min_{a != b} V` for the
    /// energies `V = -t` of `problem`'s tables.
    fn ratio(problem: &Problem) -> f64 {
        let p = problem.potentials();
        let mut c: f64 = 1.0;
        for (e, &[u, v]) in problem.edges.iter().enumerate() {
            let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
            for a in 0..problem.states[u as usize] {
                for b in 0..problem.states[v as usize] {
                    if a != b {
                        lo = lo.min(-p.pair(e, a, b));
                        hi = hi.max(-p.pair(e, a, b));
                    }
                }
            }
            if hi > 0.0 {
                c = c.max(hi / lo);
            }
        }
        c
    }

    #[test]
    fn within_the_two_c_bound_for_metric_energies_and_never_worse_than_the_start() {
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        let mut best = Vec::new();
        for trial in 0..1500 {
            let integer = trial % 2 == 0;
            let potts = trial % 4 < 2;
            let (n, edges) = random_graph(&mut rng, 7);
            let states: Vec<u32> = (0..n).map(|_| rng.gen_range(1..=4)).collect();
            let cap = f64::from(rng.gen_range(1..=3u32));
            let problem = Problem::build(
                states,
                edges,
                &mut rng,
                |rng, _, _| value(rng, integer),
                |rng, _, su, sv| {
                    // V = w d(a, b) with w > 0: Potts or truncated linear.
                    let w = value(rng, integer).abs() + 0.5;
                    let mut t = Vec::new();
                    for a in 0..su {
                        for b in 0..sv {
                            let d = f64::from(a.abs_diff(b)).min(cap);
                            t.push(if potts {
                                -w * f64::from(u8::from(a != b))
                            } else {
                                -w * d
                            });
                        }
                    }
                    t
                },
            );
            let p = problem.potentials();
            let mut labels = vec![0; n as usize];
            assert!(!AlphaExpansion.maximize(&p, &mut labels).unwrap());
            assert!(labels.iter().zip(&problem.states).all(|(&y, &s)| y < s));
            best.resize(n as usize, 0);
            Exhaustive.maximize(&p, &mut best).unwrap();
            let got = p.score(&labels);
            let start = p.score(&unary_argmax(&p));
            assert!(got >= start, "trial {trial}: {got} below the start {start}");
            // No expansion move improves on the result.
            for alpha in 0..4 {
                let m = best_move(&p, &labels, alpha);
                assert!(
                    m <= got || close(m, got),
                    "trial {trial}: move {alpha} reaches {m} > {got}"
                );
            }
            // The energy shifted to be non-negative: E = sum_i max u_i - score.
            let shift: f64 = (0..n as usize)
                .map(|i| {
                    p.unary_of(i)
                        .iter()
                        .copied()
                        .fold(f64::NEG_INFINITY, f64::max)
                })
                .sum();
            let (energy, optimum) = (shift - got, shift - p.score(&best));
            let bound = 2.0 * ratio(&problem) * optimum;
            assert!(
                energy <= bound || close(energy, bound),
                "trial {trial}: energy {energy} above 2c E* = {bound}"
            );
        }
    }

    #[test]
    fn exact_on_binary_graphs_with_submodular_terms() {
        let mut rng = ChaCha8Rng::seed_from_u64(32);
        for trial in 0..1000 {
            let integer = trial % 2 == 0;
            let (n, edges) = random_graph(&mut rng, 9);
            let problem = Problem::build(
                vec![2; n as usize],
                edges,
                &mut rng,
                |rng, _, _| value(rng, integer),
                |rng, _, _, _| {
                    let (t00, t01, t10) = (
                        value(rng, integer),
                        value(rng, integer),
                        value(rng, integer),
                    );
                    vec![t00, t01, t10, t01 + t10 - t00 + value(rng, integer).abs()]
                },
            );
            let p = problem.potentials();
            let (mut labels, mut exact) = (vec![0; n as usize], vec![0; n as usize]);
            AlphaExpansion.maximize(&p, &mut labels).unwrap();
            Exhaustive.maximize(&p, &mut exact).unwrap();
            let mut cut = vec![0; n as usize];
            GraphCut.maximize(&p, &mut cut).unwrap();
            let (got, want) = (p.score(&labels), p.score(&exact));
            assert!(close(got, want), "trial {trial}: {got} vs optimum {want}");
            assert!(close(p.score(&cut), want), "trial {trial}");
        }
    }

    #[test]
    fn non_metric_tables_are_truncated_and_never_make_things_worse() {
        let mut rng = ChaCha8Rng::seed_from_u64(33);
        for trial in 0..500 {
            let (n, edges) = random_graph(&mut rng, 6);
            let states: Vec<u32> = (0..n).map(|_| rng.gen_range(1..=4)).collect();
            let problem = Problem::build(
                states,
                edges,
                &mut rng,
                |rng, _, _| value(rng, false),
                |rng, _, su, sv| (0..su * sv).map(|_| value(rng, false)).collect(),
            );
            let p = problem.potentials();
            let mut labels = vec![0; n as usize];
            assert!(!AlphaExpansion.maximize(&p, &mut labels).unwrap());
            assert!(labels.iter().zip(&problem.states).all(|(&y, &s)| y < s));
            let start = p.score(&unary_argmax(&p));
            assert!(p.score(&labels) >= start, "trial {trial}");
            let mut again = vec![0; n as usize];
            AlphaExpansion.maximize(&p, &mut again).unwrap();
            assert_eq!(again, labels, "trial {trial}");
        }
    }

    #[test]
    fn displacement_costs_are_expanded_like_tables() {
        // Two nodes on a 3 x 2 grid each, pulled apart by their unaries and
        // together by a quadratic spring: the result is never worse than
        // the start, and here reaches the optimum.
        let grid = Grid {
            origin: [0, 0],
            width: 3,
            height: 2,
        };
        let problem = Problem::build(
            vec![6, 6],
            vec![[0, 1]],
            &mut (),
            |_, i, s| if (i == 0) == (s == 0) { 1.0 } else { 0.0 },
            |_, _, _, _| vec![0.0; 36],
        );
        let (grids, cost) = ([grid; 2], [[0.0, 0.0, 1.0, 1.0]]);
        let mut p = problem.potentials();
        p.pairwise = Pairwise::Displacement {
            grids: &grids,
            cost: &cost,
        };
        let (mut labels, mut exact) = ([0; 2], [0; 2]);
        AlphaExpansion.maximize(&p, &mut labels).unwrap();
        Exhaustive.maximize(&p, &mut exact).unwrap();
        assert!(p.score(&labels) >= p.score(&unary_argmax(&p)));
        assert_eq!(p.score(&labels), p.score(&exact));
        let e = AlphaExpansion.maximize(&p, &mut [0; 3]).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::DimensionMismatch);
    }
}
