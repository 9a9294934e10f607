//! Max-sum dynamic programming on a tree or forest: exact (Pearl,
//! "Probabilistic Reasoning in Intelligent Systems", 1988, ch. 4; Bishop,
//! "Pattern Recognition and Machine Learning", 2006, sec. 8.4.5), in
//! `O(sum over edges of states_u * states_v)`.
//!
//! A child's message to its parent is `message[a] = max_b belief[b] +
//! pairwise(a, b)`: a step of the max-plus (Viterbi) recursion with the
//! child's states as predecessors, so when both ends have the same number
//! of states it runs [`crate::linalg::max_plus`] on a table laid out with a
//! row per child state (the edge's own table when the edge is written
//! `[child, parent]`, else a transposed copy; a displacement edge's scores
//! are written into that layout). Ends with different numbers of states go
//! through the same recursion in plain code. Ties go to the lowest state at
//! every step.
//!
//! An example that is a path in node order (edge `t` written `[t, t + 1]`,
//! every node with the same number of states, tables) is the chain model's
//! case: it runs the chain's Viterbi ([`crate::models::path`]) forwards
//! over the edges' own tables, so a chain decoded as a graph and as a
//! [`crate::models::Chain`] gives the same labelling, ties included.

use std::cell::RefCell;

use super::forest::{check_forest, check_potentials, Edge, MaxSum};
use crate::error::Result;
use crate::models::graph::{Engine, GraphShape, Pairwise, Potentials};
use crate::models::path::PathMaxSum;
use crate::models::with_scratch;

const NAME: &str = "tree max-sum";

/// Max-sum on a tree or forest with table or displacement pairwise terms:
/// exact. Refuses a graph with a cycle.
#[derive(Debug, Clone, Copy, Default)]
pub struct TreeMaxSum;

/// The per-thread tables: the walk and one edge's table in the max-plus
/// layout.
#[derive(Default)]
struct Scratch {
    max_sum: MaxSum,
    table: Vec<f64>,
    /// The parent's grid positions (displacement edges).
    positions: Vec<[i64; 2]>,
    /// The path programme (examples that are chains).
    path: PathMaxSum,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Engine for TreeMaxSum {
    fn name(&self) -> &str {
        NAME
    }

    fn check_shape(&self, shape: &GraphShape) -> Result<()> {
        check_forest(shape, NAME)
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        p.shape.check()?;
        check_potentials(p, labels)?;
        with_scratch(&SCRATCH, |s| {
            if let Some((values, start)) = chain_tables(p) {
                let k = p.shape.states[0] as usize;
                s.path.run(
                    labels.len(),
                    k,
                    |t, cur| {
                        for (c, u) in cur.iter_mut().zip(p.unary_of(t)) {
                            *c += u;
                        }
                    },
                    |t| &values[start[t - 1]..start[t]],
                    |_| 0.0,
                );
                labels.copy_from_slice(&s.path.path);
                return Ok(());
            }
            let (table, positions) = (&mut s.table, &mut s.positions);
            s.max_sum.run(p, labels, NAME, |edge, message, best| {
                table_message(p, edge, table, positions, message, best);
                Ok(())
            })
        })?;
        Ok(true)
    }
}

/// The edges' tables of `p` when its graph is a path in node order (edge
/// `t` is `[t, t + 1]`), every node with the same number of states: the
/// chain model's case, decoded by its Viterbi.
fn chain_tables<'a>(p: &Potentials<'a>) -> Option<(&'a [f64], &'a [usize])> {
    let Pairwise::Tables { values, start } = p.pairwise else {
        return None;
    };
    let states = p.shape.states;
    let k = *states.first()?;
    let chain = p.shape.edges.len() + 1 == states.len()
        && p.shape
            .edges
            .iter()
            .enumerate()
            .all(|(t, &[u, v])| u as usize == t && v as usize == t + 1)
        && states.iter().all(|&s| s == k);
    chain.then_some((values, start))
}

/// `message[a] = max_b belief[b] + pairwise(a, b)` over the child's states
/// `b`, `best[a]` the lowest maximising `b`; `table` is scratch.
fn table_message(
    p: &Potentials,
    edge: &Edge,
    table: &mut Vec<f64>,
    positions: &mut Vec<[i64; 2]>,
    message: &mut [f64],
    best: &mut [u32],
) {
    let parent_states = message.len();
    let child_states = edge.belief.len();
    let e = edge.edge;
    // `rows[b * parent_states + a]` = pairwise(a, b).
    let rows: &[f64] = match p.pairwise {
        Pairwise::Tables { values, start } if edge.child_first => &values[start[e]..start[e + 1]],
        Pairwise::Tables { values, start } => {
            // The edge's table has a row per parent state: transpose it.
            let t = &values[start[e]..start[e + 1]];
            table.clear();
            table.resize(child_states * parent_states, 0.0);
            for (a, row) in t.chunks_exact(child_states).enumerate() {
                for (b, &v) in row.iter().enumerate() {
                    table[b * parent_states + a] = v;
                }
            }
            table
        }
        Pairwise::Displacement { grids, cost } => {
            // `Potentials::pair`'s formula, with the parent's positions
            // found once rather than per entry.
            let c = cost[e];
            let grid = &grids[edge.parent];
            positions.clear();
            positions.extend((0..parent_states as u32).map(|a| grid.position(a)));
            table.clear();
            for b in 0..child_states as u32 {
                let [xb, yb] = grids[edge.child].position(b);
                for &[xa, ya] in positions.iter() {
                    // The edge's (dx, dy): second end minus first end.
                    let (dx, dy) = if edge.child_first {
                        ((xa - xb) as f64, (ya - yb) as f64)
                    } else {
                        ((xb - xa) as f64, (yb - ya) as f64)
                    };
                    table.push(-(c[0] * dx + c[1] * dy + c[2] * dx * dx + c[3] * dy * dy));
                }
            }
            table
        }
    };
    if parent_states == child_states {
        crate::linalg::max_plus(edge.belief, rows, message, best);
    } else {
        max_plus_rect(edge.belief, rows, message, best);
    }
}

/// The max-plus step with as many predecessors as `prev` has entries and
/// as many labels as `cur`: `cur[a] = max_b prev[b] + rows[b * cur.len() +
/// a]`, `from[a]` the lowest maximising `b` (what
/// [`crate::linalg::max_plus`] does for a square table).
fn max_plus_rect(prev: &[f64], rows: &[f64], cur: &mut [f64], from: &mut [u32]) {
    let k = cur.len();
    cur.copy_from_slice(&rows[..k]);
    for c in cur.iter_mut() {
        *c += prev[0];
    }
    from.fill(0);
    for (b, row) in rows.chunks_exact(k).enumerate().skip(1) {
        let pb = prev[b];
        for ((c, f), &r) in cur.iter_mut().zip(from.iter_mut()).zip(row) {
            let v = pb + r;
            if v > *c {
                *c = v;
                *f = b as u32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, Structure};
    use super::*;
    use crate::error::ErrorKind;
    use crate::models::graph::Grid;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn matches_exhaustive_search_on_random_forests_with_tables() {
        let mut rng = ChaCha8Rng::seed_from_u64(27);
        for structure in Structure::ALL {
            for round in 0..1000 {
                let g = testing::random_tables(&mut rng, structure, 4);
                let p = g.potentials();
                testing::assert_optimal(&TreeMaxSum, &p, &format!("{structure:?} {round}"));
            }
        }
    }

    #[test]
    fn matches_exhaustive_search_on_random_forests_with_displacements() {
        let mut rng = ChaCha8Rng::seed_from_u64(28);
        for structure in Structure::ALL {
            for round in 0..300 {
                let g = testing::random_grids(&mut rng, structure);
                let p = g.potentials();
                testing::assert_optimal(&TreeMaxSum, &p, &format!("{structure:?} {round}"));
            }
        }
    }

    #[test]
    fn paths_in_node_order_take_the_chains_viterbi_and_are_optimal() {
        let mut rng = ChaCha8Rng::seed_from_u64(30);
        for round in 0..1000 {
            let n = rng.gen_range(1..7usize);
            let k = rng.gen_range(1..6u32);
            let int = round % 2 == 0;
            let states = vec![k; n];
            let edges: Vec<[u32; 2]> = (1..n as u32).map(|t| [t - 1, t]).collect();
            let kk = (k * k) as usize;
            let unary: Vec<f64> = (0..n * k as usize)
                .map(|_| testing::draw(&mut rng, int))
                .collect();
            let unary_start: Vec<usize> = (0..=n).map(|i| i * k as usize).collect();
            let values: Vec<f64> = (0..edges.len() * kk)
                .map(|_| testing::draw(&mut rng, int))
                .collect();
            let start: Vec<usize> = (0..=edges.len()).map(|e| e * kk).collect();
            let p = Potentials {
                example: 0,
                shape: GraphShape {
                    states: &states,
                    edges: &edges,
                },
                unary: &unary,
                unary_start: &unary_start,
                pairwise: Pairwise::Tables {
                    values: &values,
                    start: &start,
                },
            };
            assert!(chain_tables(&p).is_some());
            testing::assert_optimal(&TreeMaxSum, &p, &format!("path {round}"));
        }
        // Not a path in node order: an edge written backwards, or unequal
        // state counts, go through the forest walk.
        let states = [2, 2, 2];
        let unary = [0.0; 6];
        let values = [0.0; 8];
        for edges in [[[0, 1], [2, 1]], [[1, 2], [0, 1]]] {
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
                    start: &[0, 4, 8],
                },
            };
            assert!(chain_tables(&p).is_none());
        }
    }

    #[test]
    fn displacement_messages_use_the_models_scores() {
        // With a zero belief a message is the best pairwise score for each
        // parent state: the same bits as the maximum of `Potentials::pair`.
        let mut rng = ChaCha8Rng::seed_from_u64(29);
        let (mut table, mut positions) = (Vec::new(), Vec::new());
        for _ in 0..300 {
            let g = testing::random_grids(&mut rng, Structure::Tree);
            let p = g.potentials();
            for (e, &[u, v]) in p.shape.edges.iter().enumerate() {
                for (child, parent) in [(u, v), (v, u)] {
                    let (child, parent) = (child as usize, parent as usize);
                    let zeros = vec![0.0; p.shape.states[child] as usize];
                    let edge = Edge {
                        edge: e,
                        child,
                        parent,
                        child_first: child == u as usize,
                        belief: &zeros,
                    };
                    let k = p.shape.states[parent] as usize;
                    let (mut message, mut best) = (vec![0.0; k], vec![0; k]);
                    table_message(
                        &p,
                        &edge,
                        &mut table,
                        &mut positions,
                        &mut message,
                        &mut best,
                    );
                    for a in 0..k as u32 {
                        let pair = |b: u32| match child == u as usize {
                            true => p.pair(e, b, a),
                            false => p.pair(e, a, b),
                        };
                        let want = (0..zeros.len() as u32)
                            .map(pair)
                            .fold(f64::NEG_INFINITY, f64::max);
                        assert_eq!(message[a as usize], want);
                        assert_eq!(pair(best[a as usize]), want);
                    }
                }
            }
        }
    }

    #[test]
    fn the_rectangular_step_is_the_plain_recursion() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..500 {
            let (nb, na) = (rng.gen_range(1..6), rng.gen_range(1..6));
            let int = rng.gen_bool(0.5);
            let mut draw = || {
                if int {
                    f64::from(rng.gen_range(-2i32..3))
                } else {
                    rng.gen_range(-1.0..1.0)
                }
            };
            let prev: Vec<f64> = (0..nb).map(|_| draw()).collect();
            let rows: Vec<f64> = (0..nb * na).map(|_| draw()).collect();
            let (mut cur, mut from) = (vec![0.0; na], vec![0; na]);
            max_plus_rect(&prev, &rows, &mut cur, &mut from);
            for a in 0..na {
                let mut best = (f64::NEG_INFINITY, 0);
                for b in 0..nb {
                    let v = prev[b] + rows[b * na + a];
                    if v > best.0 {
                        best = (v, b as u32);
                    }
                }
                assert_eq!((cur[a], from[a]), best);
            }
        }
    }

    #[test]
    fn a_cycle_is_refused_naming_the_edge_that_closes_it() {
        let states = [2, 2, 2, 2];
        let edges = [[0, 1], [1, 2], [3, 0], [2, 0]];
        let shape = GraphShape {
            states: &states,
            edges: &edges,
        };
        let err = TreeMaxSum.check_shape(&shape).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(
            err.message().contains("edge 3 (2, 0) closes a cycle"),
            "{err}"
        );
        // Parallel edges are a cycle too, named with their twin.
        let edges = [[0, 1], [2, 1], [1, 0]];
        let shape = GraphShape {
            states: &states,
            edges: &edges,
        };
        let err = TreeMaxSum.check_shape(&shape).unwrap_err();
        assert!(err.message().contains("edge 2 (1, 0)"), "{err}");
        assert!(err.message().contains("as edge 0"), "{err}");
        // maximize refuses it too, with the same message.
        let unary = [0.0; 8];
        let unary_start = [0, 2, 4, 6, 8];
        let values = [0.0; 12];
        let start = [0, 4, 8, 12];
        let p = Potentials {
            example: 0,
            shape,
            unary: &unary,
            unary_start: &unary_start,
            pairwise: Pairwise::Tables {
                values: &values,
                start: &start,
            },
        };
        let again = TreeMaxSum.maximize(&p, &mut [0; 4]).unwrap_err();
        assert_eq!(again, err);
    }

    #[test]
    fn a_forest_is_accepted() {
        let states = [3, 1, 2, 2, 4, 1];
        let edges = [[4, 0], [2, 3], [0, 1]];
        let shape = GraphShape {
            states: &states,
            edges: &edges,
        };
        TreeMaxSum.check_shape(&shape).unwrap();
        let none: [[u32; 2]; 0] = [];
        let shape = GraphShape {
            states: &states,
            edges: &none,
        };
        TreeMaxSum.check_shape(&shape).unwrap();
    }

    #[test]
    fn bad_potentials_are_errors_naming_what_is_wrong() {
        let states = [2, 3];
        let edges = [[0, 1]];
        let shape = GraphShape {
            states: &states,
            edges: &edges,
        };
        let unary = [0.0, 1.0, 2.0, f64::NAN, 4.0];
        let values = [0.0; 6];
        let mut p = Potentials {
            example: 0,
            shape,
            unary: &unary,
            unary_start: &[0, 2, 5],
            pairwise: Pairwise::Tables {
                values: &values,
                start: &[0, 6],
            },
        };
        let err = TreeMaxSum.maximize(&p, &mut [0; 2]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NonFinite);
        assert!(err.message().contains("node 1"), "{err}");
        let err = TreeMaxSum.maximize(&p, &mut [0; 3]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DimensionMismatch);
        p.unary = &[0.0; 5];
        p.pairwise = Pairwise::Tables {
            values: &values,
            start: &[0, 5],
        };
        let err = TreeMaxSum.maximize(&p, &mut [0; 2]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DimensionMismatch);
        assert!(err.message().contains("edge 0"), "{err}");
        let grids = [Grid {
            origin: [0, 0],
            width: 2,
            height: 1,
        }; 2];
        p.pairwise = Pairwise::Displacement {
            grids: &grids,
            cost: &[[0.0; 4]],
        };
        let err = TreeMaxSum.maximize(&p, &mut [0; 2]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DimensionMismatch);
        assert!(err.message().contains("node 1's grid"), "{err}");
    }
}
