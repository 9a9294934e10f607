//! Graph cut: exact maximisation for binary labellings with submodular
//! pairwise terms, by one minimum s-t cut ([`MaxFlow`]).
//!
//! The energy minimised is `E(x) = -score(x)` over `x_i in {0, 1}`. The
//! network is built as in V. Kolmogorov and R. Zabih, "What energy functions
//! can be minimized via graph cuts?", IEEE PAMI 26(2), 2004: node `i` on the
//! source side means `x_i = 0`, on the sink side `x_i = 1`; a unary term
//! puts `E_i(1) - E_i(0)` on the source edge (cut when `x_i = 1`) or its
//! negative on the sink edge; a pairwise term with energies
//! `A = E(0,0), B = E(0,1), C = E(1,0), D = E(1,1)` is written
//!
//! ```text
//! E(x_u, x_v) = A + (C - A) x_u + (D - C) x_v + (B + C - A - D) (1 - x_u) x_v
//! ```
//!
//! i.e. two unary terms and an edge `u -> v` of capacity `B + C - A - D`,
//! which is cut exactly when `x_u = 0, x_v = 1`. It is a capacity (`>= 0`)
//! iff the term is submodular, `A + D <= B + C`; in scores `t = -E`:
//! `t(0,0) + t(1,1) >= t(0,1) + t(1,0)`. A violation within rounding (eight
//! units in the last place of the four values' magnitudes) is taken as a
//! modular term, so the labelling is a maximiser up to that rounding.
//!
//! Ties: the maximisers of a submodular score are closed under the
//! componentwise minimum and maximum, so there is a least one; the cut's
//! largest source side ([`MaxFlow::source_side`]) is that least maximiser,
//! the one with the most nodes in state 0. It is also the first maximiser in
//! [`super::Exhaustive`]'s order (node 0 fastest), so on exact ties both
//! engines return the same labelling.

use std::cell::RefCell;

use super::maxflow::MaxFlow;
use crate::error::{Error, Result};
use crate::models::graph::{Engine, GraphShape, Pairwise, Potentials};
use crate::models::with_scratch;

/// How much a pairwise term may violate submodularity through rounding
/// alone, relative to the sum of its four values' magnitudes.
pub(super) const ROUNDING: f64 = 8.0 * f64::EPSILON;

/// A binary energy being built on a [`MaxFlow`]: variables `0..n`, each
/// `x_v in {0, 1}`.
#[derive(Debug, Default)]
pub(super) struct BinaryCut {
    flow: MaxFlow,
    /// `E_v(1) - E_v(0)` of each variable, summed over its terms.
    slope: Vec<f64>,
}

impl BinaryCut {
    /// Empties the energy and gives it `num_vars` variables.
    pub(super) fn reset(&mut self, num_vars: usize) {
        self.flow.reset(num_vars);
        self.slope.clear();
        self.slope.resize(num_vars, 0.0);
    }

    /// Adds the unary energy `e0` for `x_v = 0`, `e1` for `x_v = 1`.
    #[inline]
    pub(super) fn add_unary(&mut self, v: usize, e0: f64, e1: f64) {
        self.slope[v] += e1 - e0;
    }

    /// Adds the pairwise energy `[A, B, C, D] = [E(0,0), E(0,1), E(1,0),
    /// E(1,1)]` of `(x_u, x_v)`. The caller has made it submodular
    /// (`A + D <= B + C` up to rounding; a negative capacity from rounding
    /// is taken as zero).
    pub(super) fn add_pair(&mut self, u: usize, v: usize, [a, b, c, d]: [f64; 4]) -> Result<()> {
        self.slope[u] += c - a;
        self.slope[v] += d - c;
        let cap = (b + c) - (a + d);
        if cap > 0.0 {
            self.flow.add_edge(u, v, cap, 0.0)?;
        }
        Ok(())
    }

    /// Minimises the energy; afterwards [`BinaryCut::is_one`] reads the
    /// minimiser.
    pub(super) fn solve(&mut self) -> Result<()> {
        for v in 0..self.slope.len() {
            let s = self.slope[v];
            if s > 0.0 {
                // x_v = 1 costs s more: cut the source edge.
                self.flow.add_terminal(v, s, 0.0)?;
            } else if s < 0.0 {
                self.flow.add_terminal(v, 0.0, -s)?;
            }
        }
        self.flow.solve();
        Ok(())
    }

    /// `x_v` of the minimiser found by the last [`BinaryCut::solve`].
    #[inline]
    pub(super) fn is_one(&self, v: usize) -> bool {
        !self.flow.source_side(v)
    }
}

/// Whether `[A, B, C, D]` (energies) is submodular up to rounding.
#[inline]
pub(super) fn submodular([a, b, c, d]: [f64; 4]) -> bool {
    let scale = a.abs() + b.abs() + c.abs() + d.abs();
    (a + d) - (b + c) <= ROUNDING * scale
}

/// The first non-finite score (or displacement cost) of `p`, as an error
/// naming its node or edge.
pub(super) fn check_finite(p: &Potentials) -> Result<()> {
    for i in 0..p.shape.num_nodes() {
        if let Some(s) = p.unary_of(i).iter().position(|x| !x.is_finite()) {
            return Err(Error::non_finite(format!(
                "node {i} state {s} has score {}",
                p.unary_of(i)[s]
            )));
        }
    }
    if let Pairwise::Tables { values, start } = p.pairwise {
        for e in 0..p.shape.edges.len() {
            let table = &values[start[e]..start[e + 1]];
            if let Some(k) = table.iter().position(|x| !x.is_finite()) {
                let [u, v] = p.shape.edges[e];
                return Err(Error::non_finite(format!(
                    "edge {e} ({u}, {v}) has score {} at table entry {k}",
                    table[k]
                )));
            }
        }
    }
    if let Pairwise::Displacement { cost, .. } = p.pairwise {
        if let Some(e) = cost.iter().position(|c| c.iter().any(|x| !x.is_finite())) {
            return Err(Error::non_finite(format!(
                "edge {e} has displacement cost {:?}",
                cost[e]
            )));
        }
    }
    Ok(())
}

/// What every call of an engine that takes any potentials checks first:
/// one label per node, and every score finite (an error naming the node or
/// edge).
pub(super) fn check_call(p: &Potentials, labels: &[u32]) -> Result<()> {
    let n = p.shape.num_nodes();
    if labels.len() != n {
        return Err(Error::dimension_mismatch(format!(
            "{} labels for a graph of {n} nodes",
            labels.len()
        )));
    }
    check_finite(p)
}

/// Per-thread buffers of [`GraphCut`], reused across calls.
#[derive(Debug, Default)]
struct Scratch {
    cut: BinaryCut,
    /// Each node's variable (`u32::MAX`: a one-state node, fixed).
    var_of: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Exact maximisation by one minimum cut, for graphs whose nodes have two
/// states (or one, fixed at state 0) and whose pairwise tables are
/// submodular: `t(0,0) + t(1,1) >= t(0,1) + t(1,0)` on every edge.
/// `O(max-flow)` per call; see the module documentation for the network.
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphCut;

impl Engine for GraphCut {
    fn name(&self) -> &str {
        "graph cut"
    }

    fn check_shape(&self, shape: &GraphShape) -> Result<()> {
        if let Some(i) = shape.states.iter().position(|&s| s > 2) {
            return Err(Error::invalid_argument(format!(
                "graph cut needs binary nodes, but node {i} has {} states; \
                 use alpha-expansion for more states",
                shape.states[i]
            )));
        }
        Ok(())
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        self.check_shape(&p.shape)?;
        let n = p.shape.num_nodes();
        if labels.len() != n {
            return Err(Error::dimension_mismatch(format!(
                "{} labels for a graph of {n} nodes",
                labels.len()
            )));
        }
        if matches!(p.pairwise, Pairwise::Displacement { .. }) {
            return Err(Error::invalid_argument(
                "graph cut takes pairwise tables, not displacement costs \
                 (use tree max-sum or the distance transform)",
            ));
        }
        check_finite(p)?;
        with_scratch(&SCRATCH, |scratch| {
            let Scratch { cut, var_of } = scratch;
            var_of.clear();
            let mut num_vars = 0u32;
            for &s in p.shape.states {
                if s == 2 {
                    var_of.push(num_vars);
                    num_vars += 1;
                } else {
                    var_of.push(u32::MAX);
                }
            }
            cut.reset(num_vars as usize);
            for (i, &v) in var_of.iter().enumerate() {
                if v != u32::MAX {
                    let u = p.unary_of(i);
                    cut.add_unary(v as usize, -u[0], -u[1]);
                }
            }
            for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
                let (xu, xv) = (var_of[u as usize], var_of[v as usize]);
                match (xu != u32::MAX, xv != u32::MAX) {
                    (true, true) => {
                        let energy = [
                            -p.pair(e, 0, 0),
                            -p.pair(e, 0, 1),
                            -p.pair(e, 1, 0),
                            -p.pair(e, 1, 1),
                        ];
                        if !submodular(energy) {
                            return Err(Error::invalid_argument(format!(
                                "edge {e} ({u}, {v}) is not submodular: t(0,0) + t(1,1) = \
                                 {} + {} < t(0,1) + t(1,0) = {} + {}; graph cut needs \
                                 t(0,0) + t(1,1) >= t(0,1) + t(1,0)",
                                -energy[0], -energy[3], -energy[1], -energy[2]
                            )));
                        }
                        cut.add_pair(xu as usize, xv as usize, energy)?;
                    }
                    (true, false) => cut.add_unary(xu as usize, -p.pair(e, 0, 0), -p.pair(e, 1, 0)),
                    (false, true) => cut.add_unary(xv as usize, -p.pair(e, 0, 0), -p.pair(e, 0, 1)),
                    (false, false) => {}
                }
            }
            cut.solve()?;
            for (label, &v) in labels.iter_mut().zip(var_of.iter()) {
                *label = u32::from(v != u32::MAX && cut.is_one(v as usize));
            }
            Ok(true)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_graphs::{close, random_graph, value, Problem};
    use super::*;
    use crate::error::ErrorKind;
    use crate::models::graph::engines::Exhaustive;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A random submodular table (scores): `t(1,1) = t(0,1) + t(1,0) -
    /// t(0,0) + r` with `r >= 0`, `r = 0` (a modular table) a quarter of the
    /// time. Tables of one-state ends are any values.
    fn submodular_table(rng: &mut ChaCha8Rng, su: u32, sv: u32, integer: bool) -> Vec<f64> {
        if su < 2 || sv < 2 {
            return (0..su * sv).map(|_| value(rng, integer)).collect();
        }
        let (t00, t01, t10) = (
            value(rng, integer),
            value(rng, integer),
            value(rng, integer),
        );
        let r = if rng.gen_bool(0.25) {
            0.0
        } else {
            value(rng, integer).abs()
        };
        vec![t00, t01, t10, t01 + t10 - t00 + r]
    }

    #[test]
    fn graph_cut_finds_the_exhaustive_optimum_on_random_graphs() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let mut labels = Vec::new();
        let mut best = Vec::new();
        for trial in 0..3000 {
            let integer = trial % 2 == 0;
            let (n, edges) = random_graph(&mut rng, 10);
            // One node in ten has a single state (fixed at 0).
            let states: Vec<u32> = (0..n)
                .map(|_| if rng.gen_bool(0.1) { 1 } else { 2 })
                .collect();
            let problem = Problem::build(
                states,
                edges,
                &mut rng,
                |rng, _, _| value(rng, integer),
                |rng, _, su, sv| submodular_table(rng, su, sv, integer),
            );
            let p = problem.potentials();
            GraphCut.check_shape(&p.shape).unwrap();
            labels.resize(n as usize, 7);
            best.resize(n as usize, 7);
            assert!(GraphCut.maximize(&p, &mut labels).unwrap());
            Exhaustive.maximize(&p, &mut best).unwrap();
            assert!(labels.iter().zip(&problem.states).all(|(&y, &s)| y < s));
            let (got, want) = (p.score(&labels), p.score(&best));
            assert!(
                close(got, want),
                "trial {trial}: graph cut {got}, optimum {want}"
            );
            if integer {
                // Exact arithmetic: the least maximiser, as exhaustive.
                assert_eq!(got, want, "trial {trial}");
                assert_eq!(labels, best, "trial {trial}");
            }
            // The same potentials give the same labelling.
            let mut again = vec![0; n as usize];
            GraphCut.maximize(&p, &mut again).unwrap();
            assert_eq!(again, labels);
        }
    }

    #[test]
    fn a_non_submodular_edge_is_refused_naming_it() {
        // Edge 1 (1, 2) rewards disagreement: t(0,1) + t(1,0) = 2 > 0.
        let problem = Problem::build(
            vec![2, 2, 2],
            vec![[0, 1], [1, 2]],
            &mut (),
            |_, _, _| 0.0,
            |_, e, _, _| {
                if e == 0 {
                    vec![1.0, 0.0, 0.0, 1.0]
                } else {
                    vec![0.0, 1.0, 1.0, 0.0]
                }
            },
        );
        let mut labels = vec![0; 3];
        let e = GraphCut
            .maximize(&problem.potentials(), &mut labels)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("edge 1 (1, 2)"), "{}", e.message);
        assert!(
            e.message.contains("0 + 0 < t(0,1) + t(1,0) = 1 + 1"),
            "{}",
            e.message
        );
    }

    #[test]
    fn more_than_two_states_displacement_and_non_finite_scores_are_refused() {
        let shape = GraphShape {
            states: &[2, 1, 3],
            edges: &[],
        };
        let e = GraphCut.check_shape(&shape).unwrap_err();
        assert!(e.message.contains("node 2 has 3 states"), "{}", e.message);
        let mut problem = Problem::build(
            vec![2, 2],
            vec![[0, 1]],
            &mut (),
            |_, _, _| 1.0,
            |_, _, _, _| vec![0.0; 4],
        );
        problem.values[3] = f64::NAN;
        let e = GraphCut
            .maximize(&problem.potentials(), &mut [0, 0])
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::NonFinite);
        assert!(e.message.contains("edge 0 (0, 1)"), "{}", e.message);
        let grids = [crate::models::graph::Grid {
            origin: [0, 0],
            width: 2,
            height: 1,
        }; 2];
        let mut p = problem.potentials();
        p.pairwise = Pairwise::Displacement {
            grids: &grids,
            cost: &[[0.0, 0.0, 1.0, 1.0]],
        };
        let e = GraphCut.maximize(&p, &mut [0, 0]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("displacement"), "{}", e.message);
    }
}
