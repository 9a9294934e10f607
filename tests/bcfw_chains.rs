//! BCFW's chain-factored blocks: the chain model's corners are `sum_t x_t
//! ⊗ (e_{y_it} - e_{y_t})` plus transition, start and end entries, so BCFW
//! keeps per-position label coefficients per block instead of a sparse
//! vector. The steps must be the sparse blocks' steps (the same oracle
//! calls, iterates equal up to rounding), their certificates valid
//! against BMRM's optimum, and their results the same bits for 1 and 2
//! threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bmrm::models::{synthetic, Chain, SparseRows};
use bmrm::oracle::{ChainAnswer, ChainLayout, ChainRows, Factoring};
use bmrm::{
    Algorithm, BcfwStats, Corner, Exit, Info, MaxOracle, Problem, Result, Sampling, Settings,
    Solver, StepType,
};

/// The chain model, seen either through its corners alone (general
/// blocks) or with its chain rows, counting the chain answers.
struct Wrapped {
    model: Chain,
    chain: bool,
    chain_answers: Arc<AtomicU64>,
}

fn wrap(model: Chain, chain: bool) -> Arc<Wrapped> {
    Arc::new(Wrapped {
        model,
        chain,
        chain_answers: Arc::default(),
    })
}

impl MaxOracle for Wrapped {
    fn dim(&self) -> usize {
        self.model.dim()
    }
    fn num_examples(&self) -> usize {
        self.model.num_examples()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        self.model.max_oracle(example, w, out)
    }
    fn factoring(&self) -> Factoring {
        match self.model.factoring() {
            Factoring::Chains(rows) if self.chain => Factoring::Chains(Arc::new(CountedRows {
                rows,
                answers: self.chain_answers.clone(),
            })),
            _ => Factoring::Vector,
        }
    }
}

/// The chain model's rows, counting their answers.
struct CountedRows {
    rows: Arc<dyn ChainRows>,
    answers: Arc<AtomicU64>,
}

impl ChainRows for CountedRows {
    fn answer(
        &self,
        i: usize,
        w: &[f64],
        scores: &mut [f64],
        labels: &mut [u32],
    ) -> Result<ChainAnswer> {
        self.answers.fetch_add(1, Ordering::Relaxed);
        self.rows.answer(i, w, scores, labels)
    }
    fn num_labels(&self) -> usize {
        self.rows.num_labels()
    }
    fn truth(&self, i: usize) -> &[u32] {
        self.rows.truth(i)
    }
    fn layout(&self) -> ChainLayout {
        self.rows.layout()
    }
    fn gram(&self, i: usize, out: &mut [f64]) {
        self.rows.gram(i, out);
    }
    fn token_dot(&self, i: usize, t: usize, c: &[f64], w: &[f64]) -> f64 {
        self.rows.token_dot(i, t, c, w)
    }
    fn add_token(&self, i: usize, t: usize, change: &[(u32, f64)], v: &mut [f64]) {
        self.rows.add_token(i, t, change, v);
    }
}

/// The rows of a chain model.
fn chain_rows(m: &Chain) -> Arc<dyn ChainRows> {
    match m.factoring() {
        Factoring::Chains(rows) => rows,
        _ => panic!("the chain model factors over positions"),
    }
}

/// A chain of `m` sequences over `k` labels and `d` features; sparse
/// features come with unsorted and repeated indices (which add up).
fn model(m: usize, k: usize, d: usize, bias: bool, sparse: bool, seed: u64) -> Chain {
    let (mut values, lengths, labels) = synthetic::markov_chain(m, k, d, seed);
    // Zero a third of the features, so sparse rows skip entries.
    for (j, v) in values.iter_mut().enumerate() {
        if j % 3 == 1 {
            *v = 0.0;
        }
    }
    if !sparse {
        return Chain::dense(values, d, &lengths, labels, k, bias).unwrap();
    }
    let mut indptr = vec![0];
    let (mut indices, mut vals) = (Vec::new(), Vec::new());
    for row in values.chunks_exact(d) {
        // Backwards, and the first non-zero feature split in two halves.
        let mut split = false;
        for j in (0..d).rev() {
            if row[j] != 0.0 {
                if !split {
                    indices.extend([j as u32, j as u32]);
                    vals.extend([0.5 * row[j], 0.5 * row[j]]);
                    split = true;
                } else {
                    indices.push(j as u32);
                    vals.push(row[j]);
                }
            }
        }
        indptr.push(indices.len());
    }
    let rows = SparseRows::new(indptr, indices, vals, d).unwrap();
    Chain::sparse(rows, &lengths, labels, k, bias).unwrap()
}

fn settings(lambda: f64, sampling: Sampling, line_search: bool, avg: bool) -> Settings {
    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.sampling = sampling;
    s.line_search = line_search;
    s.weighted_averaging = avg;
    s.tol_rel = 0.0;
    s.tol_abs = 0.0;
    s.max_iterations = 25;
    s.gap_check = 5;
    s.seed = 11;
    s
}

struct Run {
    infos: Vec<Info>,
    w: Vec<f64>,
    stats: BcfwStats,
}

/// Runs at the settings' lambda, then moves to each of `lambdas` and runs again.
fn run(oracle: Arc<Wrapped>, s: Settings, lambdas: &[f64]) -> Run {
    let mut solver = Solver::new(Problem::Examples(oracle), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let mut infos = vec![solver.run(&mut w).unwrap()];
    for &lambda in lambdas {
        solver.set_lambda(lambda).unwrap();
        infos.push(solver.run(&mut w).unwrap());
    }
    let stats = solver.bcfw().unwrap().stats().unwrap();
    Run { infos, w, stats }
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * scale.max(1e-3)
}

#[test]
fn chain_blocks_take_the_sparse_blocks_steps() {
    // (70 labels: more than a position's label mask holds, so the steps
    // visit every label of a position in use.)
    let cases = [
        (Sampling::Gap, true, false, true, false, 4),
        (Sampling::Uniform, true, false, false, false, 4),
        (Sampling::Gap, false, true, true, false, 4),
        (Sampling::Gap, true, false, true, true, 4),
        (Sampling::Permutation, true, true, false, true, 4),
        (Sampling::Gap, true, false, true, false, 70),
        (Sampling::Uniform, false, false, false, true, 70),
    ];
    for (sampling, line_search, avg, bias, sparse, k) in cases {
        let what = format!(
            "{sampling:?}, line search {line_search}, averaging {avg}, bias {bias}, sparse \
             {sparse}, {k} labels"
        );
        let m = model(60, k, 7, bias, sparse, 3);
        let s = settings(0.01, sampling, line_search, avg);
        // Down (w_i kept), then up past the truths' weights (w_i shrunk).
        let lambdas = [0.002, 0.5];
        let chain = wrap(m.clone(), true);
        let factored = run(chain.clone(), s.clone(), &lambdas);
        let general = run(wrap(m, false), s, &lambdas);
        // Every block step's oracle call went through the chain answers
        // (the exact passes ask for corners).
        assert_eq!(
            chain.chain_answers.load(Ordering::Relaxed),
            60 * factored.stats.passes,
            "{what}"
        );
        assert_eq!(
            factored.stats.oracle_calls, general.stats.oracle_calls,
            "{what}"
        );
        for (f, g) in factored.infos.iter().zip(&general.infos) {
            assert_eq!(f.exit, g.exit, "{what}");
            assert_eq!(f.iterations, g.iterations, "{what}");
            let scale = g.primal.abs();
            assert!(
                close(f.primal, g.primal, scale) && close(f.lower_bound, g.lower_bound, scale),
                "{what}: primal {} vs {}, lower bound {} vs {}",
                f.primal,
                g.primal,
                f.lower_bound,
                g.lower_bound
            );
        }
        let wmax = general.w.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        let diff = factored
            .w
            .iter()
            .zip(&general.w)
            .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
        assert!(
            wmax > 0.0 && diff <= 1e-9 * wmax,
            "{what}: w differs by {diff} (max |w| {wmax})"
        );
        assert!(
            close(factored.stats.ell, general.stats.ell, general.stats.ell),
            "{what}: ell {} vs {}",
            factored.stats.ell,
            general.stats.ell
        );
    }
}

#[test]
fn chain_blocks_give_the_same_bits_for_one_and_two_threads() {
    for sparse in [false, true] {
        let m = model(80, 5, 6, true, sparse, 7);
        let runs: Vec<Run> = [1, 2]
            .iter()
            .map(|&threads| {
                let mut s = settings(0.005, Sampling::Gap, true, false);
                s.num_threads = threads;
                run(wrap(m.clone(), true), s, &[])
            })
            .collect();
        let bits = |r: &Run| r.w.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        assert_eq!(bits(&runs[0]), bits(&runs[1]), "sparse {sparse}");
        let (a, b) = (&runs[0].infos[0], &runs[1].infos[0]);
        assert_eq!(a.primal.to_bits(), b.primal.to_bits(), "sparse {sparse}");
        assert_eq!(
            a.lower_bound.to_bits(),
            b.lower_bound.to_bits(),
            "sparse {sparse}"
        );
    }
}

#[test]
fn chain_blocks_certify_against_bmrm() {
    let m = model(100, 4, 8, true, false, 5);
    let lambda = 1e-2;
    let mut b = Settings::new(Algorithm::Bmrm, lambda);
    b.tol_rel = 0.0;
    b.tol_abs = 1e-9;
    let mut solver = Solver::new(Problem::from_max_oracle(m.clone()), b).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let opt = solver.run(&mut w).unwrap();
    assert_eq!(opt.exit, Exit::ConvergedAbs);

    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-4;
    s.max_iterations = 3000;
    let chain = wrap(m, true);
    let mut solver = Solver::new(Problem::Examples(chain.clone()), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::ConvergedAbs, "{info:?}");
    assert!(chain.chain_answers.load(Ordering::Relaxed) > 0);
    assert!(
        info.lower_bound <= opt.primal + 1e-12 && opt.lower_bound <= info.primal + 1e-12,
        "BCFW [{}, {}] against BMRM [{}, {}]",
        info.lower_bound,
        info.primal,
        opt.lower_bound,
        opt.primal
    );
    assert!(info.primal - opt.primal <= 1e-4 + 1e-9);
    for r in solver.history() {
        assert!(
            r.lower_bound <= opt.primal + 1e-12,
            "pass {}: lower bound {} above the optimum {}",
            r.iteration,
            r.lower_bound,
            opt.primal
        );
    }
}

#[test]
fn other_settings_keep_general_blocks() {
    let m = model(30, 3, 5, true, false, 9);
    // Pairwise steps keep corners: general blocks, no chain answers.
    let mut s = settings(0.01, Sampling::Gap, true, false);
    s.step_type = StepType::Pairwise;
    let chain = wrap(m.clone(), true);
    let pairwise = run(chain.clone(), s, &[]);
    assert!(pairwise.stats.oracle_calls > 0);
    assert_eq!(chain.chain_answers.load(Ordering::Relaxed), 0);
}

/// The features of token `tok` as a dense vector (bias last), from the
/// model's own description of its rows.
fn token_vector(m: &Chain, tok: usize) -> Vec<f64> {
    let d = m.feature_dim();
    let mut x = vec![0.0; d + usize::from(m.has_bias())];
    match m.features() {
        bmrm::models::ChainFeatures::Dense { values, d } => {
            for j in 0..*d {
                x[j] = f64::from(values[tok * d + j]);
            }
        }
        bmrm::models::ChainFeatures::Sparse(rows) => {
            let (idx, val) = rows.row(tok);
            for (&j, &v) in idx.iter().zip(val) {
                x[j as usize] += f64::from(v);
            }
        }
    }
    if m.has_bias() {
        x[d] = 1.0;
    }
    x
}

#[test]
fn chain_rows_agree_with_the_feature_map_and_the_oracle() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    for (bias, sparse) in [(true, false), (false, false), (true, true), (false, true)] {
        let what = format!("bias {bias}, sparse {sparse}");
        let m = model(12, 4, 5, bias, sparse, 2);
        let k = m.num_labels();
        let rows = chain_rows(&m);
        let w: Vec<f64> = (0..m.dim()).map(|_| rng.gen_range(-1.0..1.0)).collect();
        for i in 0..m.num_examples() {
            let toks = m.tokens(i);
            let l = toks.len();
            assert_eq!(rows.truth(i), m.labels(i), "{what}");
            let x: Vec<Vec<f64>> = toks.clone().map(|tok| token_vector(&m, tok)).collect();
            let mut g = vec![0.0; l * l];
            rows.gram(i, &mut g);
            for t in 0..l {
                for s in 0..l {
                    let want: f64 = x[t].iter().zip(&x[s]).map(|(a, b)| a * b).sum();
                    assert!((g[t * l + s] - want).abs() <= 1e-12 * want.abs().max(1.0));
                }
            }
            // The answer's labelling and loss are max_oracle's, its
            // scores the emission scores of the weights' layout.
            let (mut scores, mut labels) = (vec![0.0; l * k], vec![0u32; l]);
            let answer = rows.answer(i, &w, &mut scores, &mut labels).unwrap();
            let mut corner = Corner::new(m.dim());
            m.max_oracle(i, &w, &mut corner).unwrap();
            assert_eq!(answer.loss, corner.loss(), "{what}");
            assert_eq!(m.label_id(i, &labels), corner.label(), "{what}");
            for t in 0..l {
                let c: Vec<f64> = (0..k).map(|_| rng.gen_range(-1.0..1.0)).collect();
                let mut want_dot = 0.0;
                let mut want_v = vec![0.0; m.dim()];
                for y in 0..k {
                    let s: f64 = (0..x[t].len())
                        .map(|j| w[m.emission_index(y, j)] * x[t][j])
                        .sum();
                    assert!((scores[t * k + y] - s).abs() <= 1e-9, "{what}");
                    want_dot += c[y] * s;
                    for (j, &xj) in x[t].iter().enumerate() {
                        want_v[m.emission_index(y, j)] += c[y] * xj;
                    }
                }
                assert!(
                    (rows.token_dot(i, t, &c, &w) - want_dot).abs() <= 1e-9,
                    "{what}"
                );
                let mut v = vec![0.0; m.dim()];
                let change: Vec<(u32, f64)> = (0..k)
                    .filter(|&y| c[y] != 0.0)
                    .map(|y| (y as u32, c[y]))
                    .collect();
                rows.add_token(i, t, &change, &mut v);
                let err = v
                    .iter()
                    .zip(&want_v)
                    .fold(0.0f64, |a, (p, q)| a.max((p - q).abs()));
                assert!(err <= 1e-12, "{what}: add_token off by {err}");
            }
        }
        let layout = rows.layout();
        assert_eq!(layout.transitions, m.transition_index(0, 0), "{what}");
        assert_eq!(layout.start, Some(m.start_index(0)), "{what}");
        assert_eq!(layout.end, Some(m.end_index(0)), "{what}");
    }
}
