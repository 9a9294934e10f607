//! Helpers shared by the integration tests: exact references computed
//! without the library's solvers.

#![allow(dead_code)]

fn ternary(g: &dyn Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..200 {
        let a = lo + (hi - lo) / 3.0;
        let b = hi - (hi - lo) / 3.0;
        if g(a) <= g(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    0.5 * (lo + hi)
}

/// The minimum of a convex function of two variables on `[lo, hi]^2`, by
/// nested ternary search (exact to rounding after 200 rounds each).
pub fn nested_ternary(f: &dyn Fn(f64, f64) -> f64, lo: f64, hi: f64) -> (f64, f64, f64) {
    nested_ternary_in(f, (lo, hi), (lo, hi))
}

/// The same on the rectangle `xs x ys`.
pub fn nested_ternary_in(
    f: &dyn Fn(f64, f64) -> f64,
    xs: (f64, f64),
    ys: (f64, f64),
) -> (f64, f64, f64) {
    let inner = |x: f64| {
        let y = ternary(&|y| f(x, y), ys.0, ys.1);
        f(x, y)
    };
    let x = ternary(&inner, xs.0, xs.1);
    let y = ternary(&|y| f(x, y), ys.0, ys.1);
    (x, y, f(x, y))
}

/// A synthetic Gaussian multiclass model without bias (seeded).
pub fn multiclass(m: usize, d: usize, k: usize, seed: u64) -> bmrm::models::Multiclass {
    let (x, y) = bmrm::models::synthetic::gaussian_multiclass(m, d, k, 2.0, seed);
    bmrm::models::Multiclass::new(x, d, y, k, false).unwrap()
}

/// `F(w)` of a multiclass model without bias, by enumerating every class
/// with the 0/1 loss (no library oracle involved).
pub fn brute_primal(model: &bmrm::models::Multiclass, w: &[f64], lambda: f64) -> f64 {
    let d = model.feature_dim();
    let k = model.num_classes();
    let m = bmrm::oracle::MaxOracle::num_examples(model);
    let score = |x: &[f32], c: usize| -> f64 {
        x.iter()
            .zip(&w[c * d..(c + 1) * d])
            .map(|(&a, &b)| a as f64 * b)
            .sum()
    };
    let mut risk = 0.0;
    for i in 0..m {
        let x = model.example(i);
        let yi = model.labels()[i];
        let truth = score(x, yi);
        risk += (0..k)
            .map(|c| f64::from(u8::from(c != yi)) + score(x, c) - truth)
            .fold(f64::NEG_INFINITY, f64::max);
    }
    0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk / m as f64
}

/// BCFW's box test case: two classes, one feature, no bias, so `w = (w_0,
/// w_1)` and the constrained primal has an exact nested ternary search. The
/// box `w_0 >= |u_0| / 2`, `w_1 <= -|u_1| / 2` cuts the unconstrained
/// optimum `u` off.
pub struct BoxCase {
    pub model: std::sync::Arc<bmrm::models::Multiclass>,
    pub lambda: f64,
    pub lo: [f64; 2],
    pub hi: [f64; 2],
    /// The constrained optimum `(w_0, w_1, F)`.
    pub optimum: (f64, f64, f64),
}

impl BoxCase {
    pub fn new() -> Self {
        let model = std::sync::Arc::new(multiclass(40, 1, 2, 4));
        let lambda = 0.02;
        let f = |a: f64, b: f64| brute_primal(&model, &[a, b], lambda);
        let (u0, u1, _) = nested_ternary(&f, -200.0, 200.0);
        let lo = [u0.abs() * 0.5, f64::NEG_INFINITY];
        let hi = [f64::INFINITY, -(u1.abs() * 0.5)];
        let optimum = nested_ternary_in(&f, (lo[0], 200.0), (-200.0, hi[1]));
        assert!(
            optimum.2 > f(u0, u1) + 1e-6,
            "the box must change the optimum"
        );
        BoxCase {
            model,
            lambda,
            lo,
            hi,
            optimum,
        }
    }

    /// Runs BCFW with `settings` (lambda set here) in the box, from its
    /// corner nearest 0, and checks that it converges to the exact
    /// constrained optimum inside the box with a bound below it.
    pub fn check(&self, mut settings: bmrm::Settings, what: &str) {
        use bmrm::{Exit, Problem, Solver};
        settings.lambda = self.lambda;
        let (lo, hi) = (self.lo, self.hi);
        let (x, y, f_box) = self.optimum;
        let mut solver = Solver::new(Problem::Examples(self.model.clone()), settings).unwrap();
        solver
            .bcfw_mut()
            .unwrap()
            .set_bounds(lo.to_vec(), hi.to_vec())
            .unwrap();
        let mut w = vec![lo[0], 0.0_f64.min(hi[1])];
        let info = solver.run(&mut w).unwrap();
        assert!(
            matches!(info.exit, Exit::ConvergedRel | Exit::ConvergedAbs),
            "{what}: {info:?}"
        );
        assert!(
            w[0] >= lo[0] && w[1] <= hi[1],
            "{what}: {w:?} outside the box"
        );
        assert!(
            (info.primal - f_box).abs() <= 2e-6 * f_box.abs(),
            "{what}: {} vs exact {f_box} at ({x}, {y})",
            info.primal
        );
        assert!(info.lower_bound <= f_box + 1e-9, "{what}");
    }
}
