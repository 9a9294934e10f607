use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::super::ad3_admm::{solve, State, Stop, Tables};
use super::super::test_graphs::{close, random_graph, value, Problem};
use super::super::Exhaustive;
use super::*;
use crate::error::ErrorKind;

/// A random graph with cycles likely (`test_graphs`' families), 1 to 3
/// states per node, at most 7 nodes; integer scores (many ties) or real.
fn problem(rng: &mut ChaCha8Rng) -> Problem {
    let (n, edges) = random_graph(rng, 7);
    let states: Vec<u32> = (0..n).map(|_| rng.gen_range(1..=3)).collect();
    let integer = rng.gen_bool(0.5);
    Problem::build(
        states,
        edges,
        rng,
        |rng, _, _| value(rng, integer),
        |rng, _, su, sv| (0..su * sv).map(|_| value(rng, integer)).collect(),
    )
}

fn exhaustive_max(p: &Potentials) -> f64 {
    let mut y = vec![0; p.shape.num_nodes()];
    Exhaustive.maximize(p, &mut y).unwrap();
    p.score(&y)
}

/// Whenever AD3 says exact, its labelling scores the exhaustive maximum;
/// with branch and bound it always says exact on these small graphs. The
/// same potentials give the same labelling.
#[test]
fn exactness_claims_hold_against_exhaustive_search() {
    let mut rng = ChaCha8Rng::seed_from_u64(2015);
    let (mut claimed, mut fractional, total) = (0, 0, 600);
    for case in 0..total {
        let prob = problem(&mut rng);
        let p = prob.potentials();
        let best = exhaustive_max(&p);
        let n = p.shape.num_nodes();
        let mut y = vec![u32::MAX; n];
        let exact = Ad3::default().maximize(&p, &mut y).unwrap();
        assert!(p.score(&y) <= best + 1e-12 * best.abs().max(1.0));
        if exact {
            claimed += 1;
            assert!(
                close(p.score(&y), best),
                "case {case}: AD3 claims exact with {} < {best} on {:?} {:?}",
                p.score(&y),
                p.shape.edges,
                p.shape.states
            );
        } else {
            fractional += 1;
        }
        let mut again = vec![u32::MAX; n];
        Ad3::default().maximize(&p, &mut again).unwrap();
        assert_eq!(y, again, "case {case}: not deterministic");
        let bb = Ad3 {
            branch_and_bound: true,
        };
        let mut z = vec![u32::MAX; n];
        assert!(
            bb.maximize(&p, &mut z).unwrap(),
            "case {case}: branch and bound not exact on {:?} {:?}",
            p.shape.edges,
            p.shape.states
        );
        assert!(
            close(p.score(&z), best),
            "case {case}: branch and bound scores {} < {best}",
            p.score(&z)
        );
    }
    // Both outcomes occur: the test exercises the claims and the branching.
    assert!(claimed > total / 2, "{claimed} of {total} exact");
    assert!(fractional > 0, "no inexact answer in {total}");
}

/// The dual bound plus its allowance is never below the maximum, after any
/// number of rounds (here: the root solve, branch by branch limits aside).
#[test]
fn the_dual_bound_is_an_upper_bound() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for case in 0..300 {
        let prob = problem(&mut rng);
        let p = prob.potentials();
        let best = exhaustive_max(&p);
        let tables = Tables::new(&p);
        let allowed = vec![true; p.unary.len()];
        let mut st = State::new(&p, &tables, &allowed);
        let r = solve(&p, &tables, &mut st, &allowed, f64::NEG_INFINITY);
        assert!(
            r.bound.value + r.bound.allowance >= best,
            "case {case}: bound {} + {} < {best}",
            r.bound.value,
            r.bound.allowance
        );
        assert!(r.bound.allowance >= 0.0 && r.bound.allowance < 1e-10 * tables.scale * 100.0);
        // The bound of a branch (node 0 fixed to its last state) bounds
        // the labellings of the branch.
        let mut fixed = allowed.clone();
        let s0 = p.shape.states[0] as usize;
        fixed[..s0 - 1].iter_mut().for_each(|a| *a = false);
        st.restrict(&p, &fixed);
        let r = solve(&p, &tables, &mut st, &fixed, f64::NEG_INFINITY);
        let mut sub = f64::NEG_INFINITY;
        let mut y = vec![0u32; p.shape.num_nodes()];
        loop {
            if y[0] as usize == s0 - 1 {
                sub = sub.max(p.score(&y));
            }
            let mut i = 0;
            while i < y.len() {
                y[i] += 1;
                if y[i] < p.shape.states[i] {
                    break;
                }
                y[i] = 0;
                i += 1;
            }
            if i == y.len() {
                break;
            }
        }
        assert!(
            r.bound.value + r.bound.allowance >= sub,
            "case {case}: branch bound"
        );
        assert_eq!(
            r.labels[0] as usize,
            s0 - 1,
            "case {case}: branch labelling"
        );
    }
}

/// A frustrated triangle: two states, each edge scores 1 when its ends
/// differ. The maximum is 2 (an odd cycle cannot alternate), the LP's 3
/// (every marginal 1/2): AD3 converges to the LP bound and says inexact;
/// branch and bound proves 2.
#[test]
fn a_frustrated_cycle_is_fractional_and_branch_and_bound_closes_it() {
    let prob = Problem::build(
        vec![2, 2, 2],
        vec![[0, 1], [1, 2], [2, 0]],
        &mut (),
        |_, _, _| 0.0,
        |_, _, _, _| vec![0.0, 1.0, 1.0, 0.0],
    );
    let p = prob.potentials();
    let tables = Tables::new(&p);
    let allowed = vec![true; 6];
    let mut st = State::new(&p, &tables, &allowed);
    let r = solve(&p, &tables, &mut st, &allowed, f64::NEG_INFINITY);
    assert_ne!(r.stop, Stop::Closed);
    assert!(
        (r.bound.value - 3.0).abs() < 1e-5,
        "bound {}",
        r.bound.value
    );
    for x in &st.p {
        assert!((x - 0.5).abs() < 1e-4, "marginal {x}");
    }
    let mut y = vec![0; 3];
    assert!(!Ad3::default().maximize(&p, &mut y).unwrap());
    let bb = Ad3 {
        branch_and_bound: true,
    };
    assert!(bb.maximize(&p, &mut y).unwrap());
    assert_eq!(p.score(&y), 2.0);
}

/// On a chain with real scores the LP is tight and AD3 alone proves its
/// labelling (the optimum is unique with probability 1).
#[test]
fn tight_lps_are_proven_without_branching() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut proven = 0;
    for _ in 0..50 {
        let n = rng.gen_range(2..=6u32);
        let states: Vec<u32> = (0..n).map(|_| rng.gen_range(2..=3)).collect();
        let edges = (1..n).map(|i| [i - 1, i]).collect();
        let prob = Problem::build(
            states,
            edges,
            &mut rng,
            |rng, _, _| value(rng, false),
            |rng, _, su, sv| (0..su * sv).map(|_| value(rng, false)).collect(),
        );
        let p = prob.potentials();
        let mut y = vec![0; n as usize];
        if Ad3::default().maximize(&p, &mut y).unwrap() {
            proven += 1;
            assert!(close(p.score(&y), exhaustive_max(&p)));
        }
    }
    assert!(proven >= 45, "{proven} of 50 chains proven");
}

#[test]
fn bad_potentials_are_refused() {
    let mut prob = Problem::build(
        vec![2, 2],
        vec![[0, 1]],
        &mut (),
        |_, _, _| 0.0,
        |_, _, _, _| vec![0.0; 4],
    );
    prob.unary[1] = f64::NAN;
    let mut y = vec![0; 2];
    let err = Ad3::default()
        .maximize(&prob.potentials(), &mut y)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NonFinite);
    let err = Ad3::default()
        .maximize(&prob.potentials(), &mut [0])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DimensionMismatch);
}

/// The relaxation of the frustrated triangle is the LP's fractional
/// optimum (node marginals 1/2, each edge's mass on the disagreeing pairs,
/// consistent with the node marginals); a chain's labelling is the
/// maximiser and proven.
#[test]
fn relaxations_are_the_lp_marginals() {
    let prob = Problem::build(
        vec![2, 2, 2],
        vec![[0, 1], [1, 2], [2, 0]],
        &mut (),
        |_, _, _| 0.0,
        |_, _, _, _| vec![0.0, 1.0, 1.0, 0.0],
    );
    let r = Ad3::default().relax(&prob.potentials()).unwrap();
    assert!(!r.exact);
    assert!(
        r.node.iter().all(|x| (x - 0.5).abs() < 1e-4),
        "{:?}",
        r.node
    );
    assert_eq!(r.edge.len(), 12);
    for t in r.edge.chunks(4) {
        assert!(t[0].abs() < 1e-4 && t[3].abs() < 1e-4, "{t:?}");
        assert!(
            (t[1] - 0.5).abs() < 1e-4 && (t[2] - 0.5).abs() < 1e-4,
            "{t:?}"
        );
    }
    let bb = Ad3 {
        branch_and_bound: true,
    };
    let r = bb.relax(&prob.potentials()).unwrap();
    assert!(r.exact && prob.potentials().score(&r.labels) == 2.0);
    let chain = Problem::build(
        vec![2, 3],
        vec![[0, 1]],
        &mut (),
        |_, i, s| [[0.5, 0.0, 0.0], [0.0, 1.0, -1.0]][i][s as usize],
        |_, _, _, _| vec![0.0, 0.25, 0.0, 2.0, 0.0, 0.0],
    );
    let r = Ad3::default().relax(&chain.potentials()).unwrap();
    assert!(r.exact);
    assert_eq!(r.labels, vec![1, 0]);
    // The gap closed at some round: the marginals are that round's
    // (distributions, not necessarily integral yet).
    assert!((r.node[..2].iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert!((r.node[2..].iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert!((r.edge.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}
