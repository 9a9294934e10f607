//! AD3's outer loop (Martins et al., JMLR 16, 2015, algorithm 2): ADMM on
//! the local-polytope LP of a pairwise graph, with the dual bound at the
//! current multipliers and its rounding allowance.
//!
//! Each edge `e` keeps its own copy `q_ie` of its ends' marginals; the
//! consensus `p_i` is their mean. With node `i`'s scores split evenly over
//! its `deg_i` edges, `xi_ie = unary_i / deg_i + lambda_ie`, one round is
//!
//! ```text
//! q_e    = argmax over e's local polytope of
//!          theta_e . q_uv + sum_(i in e) xi_ie . q_ie - eta/2 ||q_ie - p_i||^2
//! p_i    = mean over i's edges of q_ie
//! lambda_ie -= eta (q_ie - p_i)
//! ```
//!
//! (the first by [`super::ad3_factor`]'s active-set method), with `eta`
//! doubled or halved when the primal and dual residuals are more than ten
//! times apart (the paper's section 8).
//!
//! **The bound.** For every labelling `y` and any multipliers, the identity
//! `score(y) = sum_e [theta_e(y_u, y_v) + xi_ue(y_u) + xi_ve(y_v)] + sum_i
//! [unary_i(y_i) - sum_(e at i) xi_ie(y_i)]` holds for the stored `xi`,
//! whatever their roundings, so
//!
//! ```text
//! max_y score(y) <= sum_e max_(a,b) [theta_e + xi_ue + xi_ve](a, b)
//!                 + sum_i max_s [unary_i(s) - sum_(e at i) xi_ie(s)]
//! ```
//!
//! (maxima over the allowed states). This is the dual function of the LP
//! where the multipliers balance, and a valid upper bound on the maximum
//! where roundings leave them unbalanced. It is evaluated in floating
//! point; [`Bound::allowance`] bounds the evaluation's error with Higham's
//! `gamma_k` (a `k`-term sum errs by at most `gamma_k` times the sum of
//! the terms' magnitudes), so the exact bound is at most `value +
//! allowance`.

use super::ad3_factor::{ActiveSet, Factor};
use crate::models::graph::Potentials;
use crate::rounding::gamma;

/// The most ADMM rounds per LP solve.
pub const MAX_ROUNDS: usize = 1000;

/// The LP counts as solved when the primal and dual residuals (root mean
/// square per marginal entry, the dual one over `eta`) are below this.
pub const RESIDUAL_TOLERANCE: f64 = 1e-7;

/// The graph's tables, each edge's `states_u x states_v`, materialised
/// once (for displacement edges too).
pub(super) struct Tables {
    /// Every edge's table, row-major, one after another.
    pub values: Vec<f64>,
    /// Where each edge's table starts.
    pub start: Vec<usize>,
    /// Each node's degree.
    pub degree: Vec<usize>,
    /// The largest score magnitude (at least 1).
    pub scale: f64,
}

impl Tables {
    /// Reads the tables of `p`.
    pub(super) fn new(p: &Potentials) -> Tables {
        let states = p.shape.states;
        let mut values = Vec::new();
        let mut start = vec![0];
        let mut degree = vec![0; states.len()];
        for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
            degree[u as usize] += 1;
            degree[v as usize] += 1;
            for a in 0..states[u as usize] {
                for b in 0..states[v as usize] {
                    values.push(p.pair(e, a, b));
                }
            }
            start.push(values.len());
        }
        let scale = values
            .iter()
            .chain(p.unary)
            .fold(1.0f64, |m, x| m.max(x.abs()));
        Tables {
            values,
            start,
            degree,
            scale,
        }
    }
}

/// The state of the ADMM iteration, kept to warm-start a branch.
#[derive(Debug, Clone)]
pub(super) struct State {
    /// The consensus marginals `p`, laid out like the unary scores.
    pub p: Vec<f64>,
    /// The multipliers: edge `e`'s for its first node at `end_start[2e]`,
    /// for its second at `end_start[2e + 1]`.
    pub lambda: Vec<f64>,
    /// The edges' copies `q`, laid out like `lambda`.
    pub q: Vec<f64>,
    /// Where each edge end's entries start.
    pub end_start: Vec<usize>,
    /// Each edge's active set.
    pub active: Vec<ActiveSet>,
    /// The penalty.
    pub eta: f64,
}

impl State {
    /// The starting point: uniform marginals over the allowed states, zero
    /// multipliers.
    pub(super) fn new(p: &Potentials, tables: &Tables, allowed: &[bool]) -> State {
        let states = p.shape.states;
        let mut end_start = vec![0];
        for &[u, v] in p.shape.edges {
            let at = *end_start.last().unwrap_or(&0);
            end_start.push(at + states[u as usize] as usize);
            end_start.push(at + (states[u as usize] + states[v as usize]) as usize);
        }
        let ends = *end_start.last().unwrap_or(&0);
        let mut state = State {
            p: vec![0.0; p.unary.len()],
            lambda: vec![0.0; ends],
            q: vec![0.0; ends],
            end_start,
            active: vec![ActiveSet::default(); p.shape.edges.len()],
            eta: 0.1 * tables.scale,
        };
        state.restrict(p, allowed);
        state
    }

    /// Makes the state feasible for `allowed` (a branch's restriction):
    /// the marginals renormalised over the allowed states (uniform where
    /// none is left), active sets dropped where they use a state no longer
    /// allowed.
    pub(super) fn restrict(&mut self, p: &Potentials, allowed: &[bool]) {
        for i in 0..p.shape.num_nodes() {
            let r = p.unary_start[i]..p.unary_start[i + 1];
            let ok = &allowed[r.clone()];
            let own = &mut self.p[r];
            let mut s = 0.0;
            for (x, &a) in own.iter_mut().zip(ok) {
                if !a {
                    *x = 0.0;
                }
                s += *x;
            }
            if s > 0.0 {
                own.iter_mut().for_each(|x| *x /= s);
            } else {
                let count = ok.iter().filter(|&&a| a).count() as f64;
                for (x, &a) in own.iter_mut().zip(ok) {
                    *x = if a { 1.0 / count } else { 0.0 };
                }
            }
        }
        for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
            let rows = &allowed[p.unary_start[u as usize]..p.unary_start[u as usize + 1]];
            let cols = &allowed[p.unary_start[v as usize]..p.unary_start[v as usize + 1]];
            self.active[e].restrict(rows, cols);
        }
    }
}

/// The dual bound at some multipliers: the floating-point value and a bound
/// on its rounding error.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bound {
    /// The bound as evaluated.
    pub value: f64,
    /// The exact bound is at most `value + allowance`.
    pub allowance: f64,
}

/// Node `i`'s share `xi_ie(s)` of edge end `k` (`i` its node).
#[inline]
fn xi(p: &Potentials, tables: &Tables, st: &State, i: usize, k: usize, s: usize) -> f64 {
    p.unary_of(i)[s] / tables.degree[i] as f64 + st.lambda[st.end_start[k] + s]
}

/// The dual bound at `st`'s multipliers over the labellings `allowed`
/// permits (module documentation).
pub(super) fn bound(p: &Potentials, tables: &Tables, st: &State, allowed: &[bool]) -> Bound {
    let states = p.shape.states;
    let (mut value, mut magnitude, mut error) = (0.0, 0.0, 0.0);
    let mut terms = 0usize;
    for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
        let (u, v) = (u as usize, v as usize);
        let (ru, rv) = (p.unary_start[u], p.unary_start[v]);
        let nv = states[v] as usize;
        let table = &tables.values[tables.start[e]..tables.start[e + 1]];
        let (mut best, mut abs_max) = (f64::NEG_INFINITY, 0.0f64);
        for a in (0..states[u] as usize).filter(|&a| allowed[ru + a]) {
            let xa = xi(p, tables, st, u, 2 * e, a);
            for b in (0..nv).filter(|&b| allowed[rv + b]) {
                let xb = xi(p, tables, st, v, 2 * e + 1, b);
                let t = table[a * nv + b];
                best = best.max(t + xa + xb);
                abs_max = abs_max.max(t.abs() + xa.abs() + xb.abs());
            }
        }
        // xi itself is one division and one sum of the stored values:
        // the exact xi differs from the one used, but the identity only
        // needs the same xi on both sides; the residual below uses the
        // same function, so only the sums' roundings count.
        error += gamma(3) * abs_max;
        value += best;
        magnitude += best.abs();
        terms += 1;
    }
    let mut at_node: Vec<Vec<usize>> = vec![Vec::new(); states.len()];
    for k in 0..2 * p.shape.edges.len() {
        at_node[p.shape.edges[k / 2][k % 2] as usize].push(k);
    }
    for (i, ends) in at_node.iter().enumerate() {
        let (mut best, mut abs_max) = (f64::NEG_INFINITY, 0.0f64);
        for s in (0..states[i] as usize).filter(|&s| allowed[p.unary_start[i] + s]) {
            let mut r = p.unary_of(i)[s];
            let mut abs = r.abs();
            for &k in ends {
                let x = xi(p, tables, st, i, k, s);
                r -= x;
                abs += x.abs();
            }
            best = best.max(r);
            abs_max = abs_max.max(abs);
        }
        error += gamma(ends.len() + 2) * abs_max;
        value += best;
        magnitude += best.abs();
        terms += 1;
    }
    // The outer sum, and the allowance's own roundings.
    let allowance = (error + gamma(terms + 1) * magnitude) * (1.0 + gamma(terms + 4));
    Bound { value, allowance }
}

/// The rounding allowance of `p.score(y)`: the exact score is within it of
/// the evaluated one.
pub(super) fn score_allowance(p: &Potentials, labels: &[u32]) -> f64 {
    let mut magnitude = 0.0;
    for (i, &y) in labels.iter().enumerate() {
        magnitude += p.unary_of(i)[y as usize].abs();
    }
    for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
        magnitude += p.pair(e, labels[u as usize], labels[v as usize]).abs();
    }
    let terms = labels.len() + p.shape.edges.len();
    gamma(terms + 1) * magnitude * (1.0 + gamma(terms + 4))
}

/// The node-wise argmax of the marginals over the allowed states (the
/// lowest on ties).
pub(super) fn round(p: &Potentials, st: &State, allowed: &[bool], labels: &mut [u32]) {
    for (i, y) in labels.iter_mut().enumerate() {
        let r = p.unary_start[i]..p.unary_start[i + 1];
        let mut best = (0u32, f64::NEG_INFINITY);
        for (s, (&x, &a)) in st.p[r.clone()].iter().zip(&allowed[r]).enumerate() {
            if a && x > best.1 {
                best = (s as u32, x);
            }
        }
        *y = best.0;
    }
}

/// How one LP solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The best labelling met scores at least the bound minus the
    /// allowances: proven a maximiser (over the allowed labellings).
    Closed,
    /// The bound minus its allowance fell to `prune_at` or below.
    Pruned,
    /// The residuals met [`RESIDUAL_TOLERANCE`] (the LP is solved, the
    /// gap is not closed: the LP is fractional or not tight).
    Converged,
    /// [`MAX_ROUNDS`] rounds ran.
    Rounds,
}

/// What one LP solve returns.
#[derive(Debug, Clone)]
pub(super) struct Solved {
    /// How it ended.
    pub stop: Stop,
    /// The best labelling (over the allowed states) met: each round's
    /// rounding is scored, the first of the best scores kept.
    pub labels: Vec<u32>,
    /// Its evaluated score.
    pub score: f64,
    /// The last bound.
    pub bound: Bound,
}

/// Runs AD3 from `st` (updated) over the labellings `allowed` permits,
/// stopping early once the bound minus its allowance is at most
/// `prune_at` (a branch that cannot beat the incumbent).
pub(super) fn solve(
    p: &Potentials,
    tables: &Tables,
    st: &mut State,
    allowed: &[bool],
    prune_at: f64,
) -> Solved {
    let states = p.shape.states;
    let n = states.len();
    let mut labels = vec![0u32; n];
    round(p, st, allowed, &mut labels);
    let mut best = Solved {
        stop: Stop::Rounds,
        score: p.score(&labels),
        labels: labels.clone(),
        bound: bound(p, tables, st, allowed),
    };
    let ends = st.q.len().max(1) as f64;
    let mut scaled = Vec::new();
    let mut z_u = Vec::new();
    let mut z_v = Vec::new();
    let mut previous = st.p.clone();
    for _ in 0..MAX_ROUNDS {
        // The factors' sub-problems.
        for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
            let (u, v) = (u as usize, v as usize);
            let (ru, rv) = (
                p.unary_start[u]..p.unary_start[u + 1],
                p.unary_start[v]..p.unary_start[v + 1],
            );
            let table = &tables.values[tables.start[e]..tables.start[e + 1]];
            scaled.clear();
            scaled.extend(table.iter().map(|t| t / st.eta));
            z_u.clear();
            z_u.extend(
                (0..states[u] as usize)
                    .map(|s| st.p[ru.start + s] + xi(p, tables, st, u, 2 * e, s) / st.eta),
            );
            z_v.clear();
            z_v.extend(
                (0..states[v] as usize)
                    .map(|s| st.p[rv.start + s] + xi(p, tables, st, v, 2 * e + 1, s) / st.eta),
            );
            let f = Factor {
                scaled: &scaled,
                z_u: &z_u,
                z_v: &z_v,
                rows: &allowed[ru],
                cols: &allowed[rv],
            };
            let (qu, qv) =
                st.q[st.end_start[2 * e]..st.end_start[2 * e + 2]].split_at_mut(states[u] as usize);
            f.solve(&mut st.active[e], qu, qv);
        }
        // The consensus.
        previous.copy_from_slice(&st.p);
        st.p.iter_mut().for_each(|x| *x = 0.0);
        for k in 0..2 * p.shape.edges.len() {
            let i = p.shape.edges[k / 2][k % 2] as usize;
            let share = 1.0 / tables.degree[i] as f64;
            let q = &st.q[st.end_start[k]..st.end_start[k + 1]];
            for (x, &y) in st.p[p.unary_start[i]..].iter_mut().zip(q) {
                *x += share * y;
            }
        }
        for i in (0..n).filter(|&i| tables.degree[i] == 0) {
            // An isolated node: its best allowed state (the lowest on ties).
            let r = p.unary_start[i]..p.unary_start[i + 1];
            let mut top = (0, f64::NEG_INFINITY);
            for (s, (&x, &a)) in p.unary[r.clone()]
                .iter()
                .zip(&allowed[r.clone()])
                .enumerate()
            {
                if a && x > top.1 {
                    top = (s, x);
                }
            }
            st.p[r.start + top.0] = 1.0;
        }
        // The multipliers and the residuals.
        let mut primal = 0.0;
        for k in 0..2 * p.shape.edges.len() {
            let i = p.shape.edges[k / 2][k % 2] as usize;
            let (a, b) = (st.end_start[k], st.end_start[k + 1]);
            for (s, j) in (a..b).enumerate() {
                let d = st.q[j] - st.p[p.unary_start[i] + s];
                primal += d * d;
                st.lambda[j] -= st.eta * d;
            }
        }
        let mut dual = 0.0;
        for i in 0..n {
            let r = p.unary_start[i]..p.unary_start[i + 1];
            let d: f64 = st.p[r.clone()]
                .iter()
                .zip(&previous[r])
                .map(|(a, b)| (a - b) * (a - b))
                .sum();
            dual += tables.degree[i] as f64 * d;
        }
        let (primal, dual) = ((primal / ends).sqrt(), (dual / ends).sqrt());
        // The bound and the rounding.
        best.bound = bound(p, tables, st, allowed);
        round(p, st, allowed, &mut labels);
        let score = p.score(&labels);
        if score > best.score {
            best.score = score;
            best.labels.copy_from_slice(&labels);
        }
        let top = best.bound.value - best.bound.allowance;
        if best.score + score_allowance(p, &best.labels) >= top {
            best.stop = Stop::Closed;
            return best;
        }
        if top <= prune_at {
            best.stop = Stop::Pruned;
            return best;
        }
        if primal <= RESIDUAL_TOLERANCE && dual <= RESIDUAL_TOLERANCE {
            best.stop = Stop::Converged;
            return best;
        }
        if primal > 10.0 * dual {
            st.eta = (st.eta * 2.0).min(1e6 * tables.scale);
        } else if dual > 10.0 * primal {
            st.eta = (st.eta / 2.0).max(1e-6 * tables.scale);
        }
    }
    best
}
