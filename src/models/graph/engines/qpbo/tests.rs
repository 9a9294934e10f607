use super::super::test_graphs::{close, random_graph, value, Problem};
use super::*;
use crate::error::ErrorKind;
use crate::models::graph::engines::{Exhaustive, GraphCut};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A random table (scores): submodular (`t(0,0) + t(1,1) >= t(0,1) +
/// t(1,0)` on binary ends) when `submodular`, any values otherwise.
fn table(rng: &mut ChaCha8Rng, su: u32, sv: u32, integer: bool, submodular: bool) -> Vec<f64> {
    if su == 2 && sv == 2 && submodular {
        let (t00, t01, t10) = (
            value(rng, integer),
            value(rng, integer),
            value(rng, integer),
        );
        let r = value(rng, integer).abs();
        return vec![t00, t01, t10, t01 + t10 - t00 + r];
    }
    (0..su * sv).map(|_| value(rng, integer)).collect()
}

/// A random problem: `max_states` states at most per node (one node in ten
/// has one), edges from [`random_graph`].
fn random_problem(
    rng: &mut ChaCha8Rng,
    max_nodes: u32,
    max_states: u32,
    integer: bool,
    submodular: bool,
) -> Problem {
    let (n, edges) = random_graph(rng, max_nodes);
    let states: Vec<u32> = (0..n)
        .map(|_| {
            if rng.gen_bool(0.1) {
                1
            } else {
                rng.gen_range(2..=max_states)
            }
        })
        .collect();
    Problem::build(
        states,
        edges,
        rng,
        |rng, _, _| value(rng, integer),
        |rng, _, su, sv| table(rng, su, sv, integer, submodular),
    )
}

/// Every labelling of `p`'s graph, node 0 fastest.
fn labellings(p: &Potentials) -> Vec<Vec<u32>> {
    let states = p.shape.states;
    let mut all = Vec::new();
    let mut y = vec![0u32; states.len()];
    loop {
        all.push(y.clone());
        let mut i = 0;
        loop {
            if i == y.len() {
                return all;
            }
            y[i] += 1;
            if y[i] < states[i] {
                break;
            }
            y[i] = 0;
            i += 1;
        }
    }
}

/// The roof dual's strong persistencies hold in every maximiser, and fixing
/// them never lowers the score of any labelling (autarky); on binary
/// graphs with integer scores, so that ties are exact.
#[test]
fn persistencies_agree_with_every_maximiser_and_never_lower_a_score() {
    let mut rng = ChaCha8Rng::seed_from_u64(45);
    let mut scratch = Scratch::default();
    let (mut labelled, mut open) = (0usize, 0usize);
    for trial in 0..1500 {
        let problem = random_problem(&mut rng, 9, 2, true, trial % 3 == 0);
        let p = problem.potentials();
        let zeros = vec![0u32; problem.states.len()];
        solve_move(&p, &zeros, 1, &mut scratch).unwrap();
        let all = labellings(&p);
        let scores: Vec<f64> = all.iter().map(|y| p.score(y)).collect();
        let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let persistent = |i: usize| -> Option<u32> {
            let v = scratch.var_of[i];
            if v == u32::MAX {
                return None;
            }
            match scratch.roof.persistency(v as usize) {
                Persistency::Zero => Some(0),
                Persistency::One => Some(1),
                Persistency::Unlabelled => None,
            }
        };
        for i in 0..problem.states.len() {
            match persistent(i) {
                Some(x) => {
                    labelled += 1;
                    for (y, &s) in all.iter().zip(&scores) {
                        if s == best {
                            assert_eq!(y[i], x, "trial {trial}: maximiser {y:?}, node {i}");
                        }
                    }
                }
                None if scratch.var_of[i] != u32::MAX => open += 1,
                None => {}
            }
        }
        for (y, &s) in all.iter().zip(&scores) {
            let mut fixed = y.clone();
            for (i, x) in fixed.iter_mut().enumerate() {
                if let Some(v) = persistent(i) {
                    *x = v;
                }
            }
            assert!(p.score(&fixed) >= s, "trial {trial}: {y:?} -> {fixed:?}");
        }
    }
    // Both cases were met many times.
    assert!(
        labelled > 1000 && open > 300,
        "{labelled} labelled, {open} open"
    );
}

/// On binary graphs: an answer flagged exact is a maximiser; on submodular
/// tables it is always flagged exact and is graph cut's labelling (with
/// integer scores, exactly); the answer is never worse than all zeros (the
/// start) and the same potentials give the same labelling.
#[test]
fn binary_answers_flagged_exact_are_optimal_and_submodular_ones_are_graph_cut() {
    let mut rng = ChaCha8Rng::seed_from_u64(46);
    let (mut exact_count, mut inexact_count) = (0, 0);
    for trial in 0..3000 {
        let integer = trial % 2 == 0;
        let submodular = trial % 4 < 2;
        let problem = random_problem(&mut rng, 10, 2, integer, submodular);
        let p = problem.potentials();
        let n = problem.states.len();
        let (mut labels, mut best) = (vec![7; n], vec![7; n]);
        let exact = Qpbo.maximize(&p, &mut labels).unwrap();
        Exhaustive.maximize(&p, &mut best).unwrap();
        assert!(labels.iter().zip(&problem.states).all(|(&y, &s)| y < s));
        let (got, want) = (p.score(&labels), p.score(&best));
        assert!(got <= want + 1e-9 * want.abs().max(1.0), "trial {trial}");
        assert!(got >= p.score(&vec![0; n]) - 1e-12, "trial {trial}");
        if exact {
            exact_count += 1;
            assert!(
                close(got, want),
                "trial {trial}: QPBO {got}, optimum {want}"
            );
            if integer {
                assert_eq!(got, want, "trial {trial}");
            }
        } else {
            inexact_count += 1;
        }
        if submodular {
            assert!(exact, "trial {trial}: a submodular graph not exact");
            let mut cut = vec![7; n];
            assert!(GraphCut.maximize(&p, &mut cut).unwrap());
            if integer {
                assert_eq!(labels, cut, "trial {trial}");
            }
        }
        let mut again = vec![0; n];
        assert_eq!(Qpbo.maximize(&p, &mut again).unwrap(), exact);
        assert_eq!(again, labels, "trial {trial}");
    }
    assert!(
        exact_count > 1000 && inexact_count > 50,
        "{exact_count} / {inexact_count}"
    );
}

/// With 3-4 states: every QPBO move from a random labelling (non-metric
/// tables) never lowers the score, the engine's answer is never worse than
/// its start (each node's best unary state) nor better than the optimum,
/// and it is never flagged exact.
#[test]
fn expansion_moves_never_lower_the_score_and_answers_are_not_exact() {
    let mut rng = ChaCha8Rng::seed_from_u64(47);
    let mut scratch = Scratch::default();
    let mut improved = 0;
    for trial in 0..1500 {
        let integer = trial % 2 == 0;
        let max_states = 3 + (trial % 2) as u32;
        let problem = random_problem(&mut rng, 7, max_states, integer, false);
        let p = problem.potentials();
        let n = problem.states.len();
        let start: Vec<u32> = problem
            .states
            .iter()
            .map(|&s| rng.gen_range(0..s))
            .collect();
        for alpha in 0..max_states {
            solve_move(&p, &start, alpha, &mut scratch).unwrap();
            let (before, after) = (p.score(&start), p.score(&scratch.proposal));
            assert!(
                after >= before - 1e-12 * before.abs().max(1.0),
                "trial {trial} alpha {alpha}: {before} -> {after}"
            );
            for (i, (&y, &z)) in start.iter().zip(&scratch.proposal).enumerate() {
                assert!(z == y || z == alpha, "trial {trial}: node {i} {y} -> {z}");
            }
        }
        let (mut labels, mut best) = (vec![9; n], vec![9; n]);
        let multi = problem.states.iter().any(|&s| s > 2);
        let exact = Qpbo.maximize(&p, &mut labels).unwrap();
        Exhaustive.maximize(&p, &mut best).unwrap();
        assert!(labels.iter().zip(&problem.states).all(|(&y, &s)| y < s));
        let mut unary = vec![0; n];
        unary_argmax(&p, &mut unary);
        let (got, want) = (p.score(&labels), p.score(&best));
        assert!(got <= want + 1e-9 * want.abs().max(1.0), "trial {trial}");
        if multi {
            assert!(!exact, "trial {trial}");
            assert!(got >= p.score(&unary), "trial {trial}");
            improved += usize::from(got > p.score(&unary));
        } else if exact {
            assert!(close(got, want), "trial {trial}");
        }
        let mut again = vec![0; n];
        Qpbo.maximize(&p, &mut again).unwrap();
        assert_eq!(again, labels, "trial {trial}");
    }
    assert!(improved > 300, "{improved}");
}

/// A frustrated triangle (every edge rewards disagreement, no unary
/// preference) leaves every node unlabelled: not exact. An antiferromagnetic
/// chain with one pinned end is labelled whole: exact, and alternating.
#[test]
fn a_frustrated_cycle_is_not_exact_and_a_pinned_chain_is() {
    let disagree = vec![0.0, 1.0, 1.0, 0.0];
    let triangle = Problem::build(
        vec![2, 2, 2],
        vec![[0, 1], [1, 2], [2, 0]],
        &mut (),
        |_, _, _| 0.0,
        |_, _, _, _| disagree.clone(),
    );
    let mut labels = vec![5; 3];
    assert!(!Qpbo.maximize(&triangle.potentials(), &mut labels).unwrap());
    // Two of the three edges can disagree: score 2, the optimum.
    assert_eq!(triangle.potentials().score(&labels), 2.0);
    let chain = Problem::build(
        vec![2; 4],
        vec![[0, 1], [1, 2], [2, 3]],
        &mut (),
        |_, i, s| if i == 0 && s == 1 { 0.5 } else { 0.0 },
        |_, _, _, _| disagree.clone(),
    );
    let mut labels = vec![5; 4];
    assert!(Qpbo.maximize(&chain.potentials(), &mut labels).unwrap());
    assert_eq!(labels, [1, 0, 1, 0]);
}

#[test]
fn non_finite_scores_and_wrong_label_counts_are_refused() {
    let mut problem = Problem::build(
        vec![2, 3],
        vec![[0, 1]],
        &mut (),
        |_, _, _| 1.0,
        |_, _, _, _| vec![0.0; 6],
    );
    problem.values[4] = f64::INFINITY;
    let e = Qpbo
        .maximize(&problem.potentials(), &mut [0, 0])
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NonFinite);
    assert!(e.message.contains("edge 0 (0, 1)"), "{}", e.message);
    let e = Qpbo
        .maximize(&problem.potentials(), &mut [0, 0, 0])
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::DimensionMismatch);
}
