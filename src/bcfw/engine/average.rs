//! The pass average of exact steps on class blocks: the average of the
//! dual points that ended the passes since the last exact pass, pass `s`
//! of them weighted by `s` (the weights `2 / (s + 1)` of weighted
//! averaging, per pass instead of per step). It is kept as a dual point
//! (every block's coefficients and `l_i`, `v`, `l`; all linear in the
//! weights `alpha`, so their averages are the averaged point's own) so
//! that when its primal point `v` is the better one the state moves there:
//! the iterate, `ell` and the dual value reported then belong to the point
//! returned, and `ell - lambda/2 ||w||^2` computed from them is that
//! point's dual value, a valid bound (the dual is concave: the averaged
//! point's value is at least the average of the values).

use super::{BcfwState, BlockForm};

/// The averaged dual point.
pub(crate) struct DualAverage {
    coef: Vec<f64>,
    block_l: Vec<f64>,
    v: Vec<f64>,
    l: f64,
    /// Passes averaged since the last restart.
    passes: u32,
}

impl DualAverage {
    pub(crate) fn bytes(&self) -> usize {
        8 * (self.coef.capacity() + self.block_l.capacity() + self.v.capacity())
    }
}

/// `avg <- (1 - rho) avg + rho x`: a copy of `x` when `rho` is 1 (the
/// first pass after a restart), as `avg` is finite.
fn mix(avg: &mut [f64], x: impl Iterator<Item = f64>, rho: f64) {
    for (a, b) in avg.iter_mut().zip(x) {
        *a = (1.0 - rho) * *a + rho * b;
    }
}

impl BcfwState {
    /// Starts the pass average of a run (`on`), where the state can move
    /// to it: exact steps on class blocks (which have no box).
    pub(crate) fn start_pass_average(&mut self, on: bool) {
        let fits = on && self.bounds.is_none();
        if let BlockForm::Classes {
            blocks: cb,
            exact,
            average,
        } = &mut self.form
        {
            *average = (fits && exact.is_some()).then(|| DualAverage {
                coef: vec![0.0; cb.all_coef().len()],
                block_l: vec![0.0; self.n],
                v: vec![0.0; self.dim],
                l: 0.0,
                passes: 0,
            });
        }
    }

    /// Adds the dual point that ended a pass.
    pub(crate) fn add_to_pass_average(&mut self) {
        let BlockForm::Classes {
            blocks: cb,
            average: Some(avg),
            ..
        } = &mut self.form
        else {
            return;
        };
        avg.passes += 1;
        let rho = 2.0 / (f64::from(avg.passes) + 1.0);
        mix(&mut avg.coef, cb.all_coef().iter().copied(), rho);
        mix(&mut avg.block_l, self.blocks.iter().map(|b| b.l), rho);
        mix(&mut avg.v, self.v.iter().copied(), rho);
        mix(
            std::slice::from_mut(&mut avg.l),
            std::iter::once(self.l),
            rho,
        );
    }

    /// The pass average's primal point when it differs from the iterate
    /// (two passes or more), and a restart: the next pass starts a new
    /// average (the point stays until then, for [`Self::adopt_pass_average`]).
    pub(crate) fn take_pass_average(&mut self) -> Option<Vec<f64>> {
        let BlockForm::Classes {
            average: Some(avg), ..
        } = &mut self.form
        else {
            return None;
        };
        let passes = std::mem::take(&mut avg.passes);
        (passes >= 2).then(|| avg.v.clone())
    }

    /// Moves the state to the pass average's dual point (that of the point
    /// [`Self::take_pass_average`] gave last). The blocks' `||w_i||^2` and
    /// truth weights follow from the coefficients; the shrinking and the
    /// gap estimates are the next exact pass's to set.
    pub(crate) fn adopt_pass_average(&mut self) {
        let BlockForm::Classes {
            blocks: cb,
            exact,
            average: Some(avg),
        } = &mut self.form
        else {
            return;
        };
        cb.all_coef_mut().copy_from_slice(&avg.coef);
        let lambda_n = self.lambda * self.n as f64;
        let mut alpha = Vec::new();
        for (i, (b, &l)) in self.blocks.iter_mut().zip(&avg.block_l).enumerate() {
            let truth = cb.rows.truth(i);
            super::exact::alpha_of(cb.coef(i), truth, lambda_n, &mut alpha);
            b.l = l;
            b.w_norm2 = cb.norm2(i);
            b.truth_alpha = alpha[truth];
        }
        self.v.copy_from_slice(&avg.v);
        self.l = avg.l;
        if let Some(ex) = exact {
            ex.unshrink_all();
        }
        self.fresh.dots = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::BcfwState;
    use crate::models::{synthetic, Multiclass};
    use crate::vocab::{Algorithm, Settings, StepType};

    /// The averaged dual point is the weighted average of the passes'
    /// points, and after the move `v` is the sum of the blocks' `r_i ⊗
    /// c_i` and `l` the sum of their `l_i`: the state is one dual point.
    #[test]
    fn the_state_moves_to_the_weighted_average_of_the_passes() {
        let (m, d, k) = (60, 4, 3);
        let (x, y) = synthetic::gaussian_multiclass(m, d, k, 1.0, 3);
        let model = Multiclass::new(x, d, y, k, true).unwrap();
        let mut s = Settings::new(Algorithm::Bcfw, 1e-3);
        s.step_type = StepType::Exact;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let mut state = BcfwState::new(&model, &s, None).unwrap();
        state.start_pass_average(true);
        let mut seen = Vec::new();
        for _ in 0..3 {
            state.exact_steps_pass(&model, &s, &pool).unwrap();
            state.add_to_pass_average();
            let cb = state.form.classes().unwrap();
            let ls: Vec<f64> = state.blocks.iter().map(|b| b.l).collect();
            seen.push((cb.all_coef().to_vec(), ls, state.v.clone(), state.l));
        }
        let avg = |f: &dyn Fn(usize) -> f64| (f(0) + 2.0 * f(1) + 3.0 * f(2)) / 6.0;
        let v_avg = state.take_pass_average().unwrap();
        state.adopt_pass_average();
        let cb = state.form.classes().unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-14 * (1.0 + b.abs());
        for (j, &c) in cb.all_coef().iter().enumerate() {
            let want = avg(&|p| seen[p].0[j]);
            assert!(close(c, want), "coefficient {j}: {c} against {want}");
        }
        for (i, b) in state.blocks.iter().enumerate() {
            assert!(close(b.l, avg(&|p| seen[p].1[i])), "l_{i}");
        }
        assert_eq!(state.v, v_avg);
        assert!(close(state.l, avg(&|p| seen[p].3)));
        let mut v = vec![0.0; state.v.len()];
        let mut l = 0.0;
        for i in 0..m {
            for (class, &c) in cb.coef(i).iter().enumerate() {
                cb.rows.add_row(i, class, c, &mut v);
            }
            l += state.blocks[i].l;
        }
        for (a, b) in v.iter().zip(&state.v) {
            assert!((a - b).abs() <= 1e-12, "v: {a} against {b}");
        }
        assert!(close(l, state.l), "l: {l} against {}", state.l);
        // The passes moved the point: the average differs from each.
        assert!(seen.iter().all(|p| p.2 != state.v));
    }
}
