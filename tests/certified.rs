//! Oracles that do not maximise. A decoder that answers below
//! the ground truth (`L - <w, psi> < 0`) is clipped at the truth and the run
//! says `certified == false`; a decoder that marks its answers inexact does
//! too. The lower bound stays below the optimum computed here with the exact
//! oracle, and the primal is the risk as the oracle answered it (each hinge
//! clipped at 0), recomputed here from the decoder's own answers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bmrm::oracle::{Corner, MaxOracle};
use bmrm::{Algorithm, Problem, Settings, Solver};

/// A small multiclass problem: `psi_i(y) = x_i ⊗ (e_{t_i} - e_y)`, 0/1 loss.
#[derive(Clone)]
struct Multi {
    x: Vec<Vec<f64>>,
    t: Vec<usize>,
    k: usize,
}

impl Multi {
    fn new() -> Self {
        // Deterministic, not separable: two examples share a point.
        let x = vec![
            vec![1.0, 0.5, 1.0],
            vec![-0.5, 1.0, 1.0],
            vec![0.3, -1.0, 1.0],
            vec![1.0, 0.5, 1.0],
            vec![-1.0, -0.2, 1.0],
            vec![0.7, 0.9, 1.0],
        ];
        let t = vec![0, 1, 2, 1, 2, 0];
        Multi { x, t, k: 3 }
    }
    fn d(&self) -> usize {
        self.x[0].len()
    }
    /// `(loss, <w, psi>)` of label `y` for example `i`.
    fn terms(&self, i: usize, y: usize, w: &[f64]) -> (f64, f64) {
        let d = self.d();
        let t = self.t[i];
        let score = |c: usize| (0..d).map(|j| w[c * d + j] * self.x[i][j]).sum::<f64>();
        let loss = if y == t { 0.0 } else { 1.0 };
        (loss, score(t) - score(y))
    }
    fn fill(&self, i: usize, y: usize, loss: f64, out: &mut Corner) {
        let d = self.d();
        out.set_loss(loss);
        out.set_label(y as u64);
        if y != self.t[i] {
            for j in 0..d {
                out.add(self.t[i] * d + j, self.x[i][j]).unwrap();
                out.add(y * d + j, -self.x[i][j]).unwrap();
            }
        }
    }
    /// The exact argmax.
    fn argmax(&self, i: usize, w: &[f64]) -> usize {
        let mut best = (f64::NEG_INFINITY, 0);
        for y in 0..self.k {
            let (l, dot) = self.terms(i, y, w);
            if l - dot > best.0 {
                best = (l - dot, y);
            }
        }
        best.1
    }
    /// The true `F(w)`.
    fn objective(&self, lambda: f64, w: &[f64]) -> f64 {
        let m = self.t.len();
        let risk: f64 = (0..m)
            .map(|i| {
                let (l, dot) = self.terms(i, self.argmax(i, w), w);
                l - dot
            })
            .sum::<f64>()
            / m as f64;
        0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk
    }
}

/// How the decoder answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Decoder {
    Exact,
    /// Loss -1, psi 0: below the truth's hinge 0.
    NegativeLoss,
    /// A label picked from a hash of (example, w), marked inexact.
    RandomMarked,
    /// A label picked from a hash of (example, w), not marked.
    RandomUnmarked,
    /// The ground truth every time, marked inexact.
    TruthMarked,
}

struct Oracle {
    p: Multi,
    how: Decoder,
    /// Whether some answer was below the truth (what the library clips).
    below: Arc<AtomicBool>,
}

impl Oracle {
    /// The label the decoder answers for example `i` at `w`, and its loss.
    fn answer(&self, i: usize, w: &[f64]) -> (usize, f64) {
        match self.how {
            Decoder::Exact => {
                let y = self.p.argmax(i, w);
                (y, self.p.terms(i, y, w).0)
            }
            Decoder::NegativeLoss => (self.p.t[i], -1.0),
            Decoder::RandomMarked | Decoder::RandomUnmarked => {
                let mut h = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                for v in w {
                    h = (h ^ v.to_bits()).wrapping_mul(0x1000_0000_01b3);
                }
                let y = (h >> 33) as usize % self.p.k;
                (y, self.p.terms(i, y, w).0)
            }
            Decoder::TruthMarked => (self.p.t[i], 0.0),
        }
    }
    /// The risk as the decoder answers it, each hinge clipped at 0.
    fn surrogate(&self, lambda: f64, w: &[f64]) -> f64 {
        let m = self.p.t.len();
        let risk: f64 = (0..m)
            .map(|i| {
                let (y, loss) = self.answer(i, w);
                let dot = if y == self.p.t[i] {
                    0.0
                } else {
                    self.p.terms(i, y, w).1
                };
                (loss - dot).max(0.0)
            })
            .sum::<f64>()
            / m as f64;
        0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk
    }
}

impl MaxOracle for Oracle {
    fn dim(&self) -> usize {
        self.p.k * self.p.d()
    }
    fn num_examples(&self) -> usize {
        self.p.t.len()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        let (y, loss) = self.answer(i, w);
        self.p.fill(i, y, loss, out);
        if loss - out.dot(w) < -1e-9 {
            self.below.store(true, Ordering::Relaxed);
        }
        if matches!(self.how, Decoder::RandomMarked | Decoder::TruthMarked) {
            out.mark_inexact();
        }
        Ok(())
    }
}

const LAMBDA: f64 = 0.1;

fn solve(how: Decoder, algorithm: Algorithm) -> (bmrm::Info, Vec<f64>, bool, Oracle) {
    let below = Arc::new(AtomicBool::new(false));
    let oracle = Oracle {
        p: Multi::new(),
        how,
        below: below.clone(),
    };
    let twin = Oracle {
        p: Multi::new(),
        how,
        below: Arc::new(AtomicBool::new(false)),
    };
    let mut s = Settings::new(algorithm, LAMBDA);
    s.num_threads = 1;
    s.max_iterations = 300;
    if how == Decoder::Exact {
        s.tol_abs = 1e-10;
        s.tol_rel = 0.0;
    }
    if algorithm == Algorithm::Sgd {
        s.sgd_passes = 20;
    }
    let dim = oracle.dim();
    let mut solver = Solver::new(Problem::from_max_oracle(oracle), s).unwrap();
    let mut w = vec![0.0; dim];
    let info = solver
        .run(&mut w)
        .unwrap_or_else(|e| panic!("{how:?} with {algorithm:?}: {e}"));
    (info, w, below.load(Ordering::Relaxed), twin)
}

#[test]
fn wrong_decoders_give_valid_bounds_and_say_not_certified() {
    let p = Multi::new();
    // The optimum, bracketed by an exact run to a gap of 1e-10.
    let (exact, w_star, _, _) = solve(Decoder::Exact, Algorithm::Bmrm);
    assert!(exact.certified, "an exact oracle certifies");
    assert!(exact.gap <= 1e-10, "{exact:?}");
    let f_star = p.objective(LAMBDA, &w_star);
    assert!((f_star - exact.primal).abs() <= 1e-12 * (1.0 + f_star.abs()));
    let min_f_upper = exact.lower_bound + 1e-10;
    for algorithm in [
        Algorithm::Bmrm,
        Algorithm::ProxPBmrm,
        Algorithm::Bcfw,
        Algorithm::Sgd,
    ] {
        for how in [
            Decoder::NegativeLoss,
            Decoder::RandomMarked,
            Decoder::RandomUnmarked,
            Decoder::TruthMarked,
        ] {
            let (info, w, below, twin) = solve(how, algorithm);
            let what = format!("{how:?} with {algorithm:?}: {info:?}");
            let expect_certified = how == Decoder::RandomUnmarked && !below;
            assert_eq!(info.certified, expect_certified, "{what}");
            if how == Decoder::NegativeLoss {
                assert!(!info.certified, "{what}");
            }
            // A valid bound: below min F, which is below the exact run's
            // bound plus its gap.
            assert!(info.lower_bound <= min_f_upper, "{what}");
            assert!(info.lower_bound <= p.objective(LAMBDA, &w), "{what}");
            // (Not below `primal`: an uncertified primal may be too low.)
            if info.certified {
                assert!(info.lower_bound <= info.primal, "{what}");
            }
            // The primal is F of the returned w with the risk as the
            // oracle answered it, clipped at the truth.
            let surrogate = twin.surrogate(LAMBDA, &w);
            assert!(
                (info.primal - surrogate).abs() <= 1e-12 * (1.0 + surrogate.abs()),
                "{what}: surrogate F(w) = {surrogate}"
            );
            // Never above the true F(w).
            assert!(info.primal <= p.objective(LAMBDA, &w) + 1e-12, "{what}");
        }
    }
}

#[test]
fn an_exact_decoder_certifies_with_every_algorithm() {
    for algorithm in [
        Algorithm::Bmrm,
        Algorithm::PBmrm,
        Algorithm::ProxPBmrm,
        Algorithm::Bcfw,
        Algorithm::Sgd,
    ] {
        let (info, _, below, _) = solve(Decoder::Exact, algorithm);
        assert!(!below);
        assert!(info.certified, "{algorithm:?}: {info:?}");
    }
}
