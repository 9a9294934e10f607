//! BCFW inside the solver: its dual state kept between runs, its box, and
//! the operations only BCFW has, reachable through [`Solver::bcfw`] and
//! [`Solver::bcfw_mut`] (which answer `None` for the other algorithms).
//!
//! [`Solver::bcfw`]: super::Solver::bcfw
//! [`Solver::bcfw_mut`]: super::Solver::bcfw_mut

use super::Core;
use crate::bcfw::{BcfwMethod, BcfwState, BcfwStats, BlockDual, Breakpoint, PathTarget};
use crate::error::{Error, Result};
use crate::oracle::Bounds;
use crate::oracle::Problem;
use crate::vocab::{Exit, Info};

/// BCFW's part of a solver: the dual state (after the first run) and the
/// box constraints.
#[derive(Default)]
pub struct Bcfw {
    state: Option<BcfwState>,
    bounds: Option<Bounds>,
}

impl Bcfw {
    /// BCFW's figures (passes, effective passes, cache hits, memory, `ell`),
    /// once BCFW has run.
    pub fn stats(&self) -> Option<BcfwStats> {
        self.state.as_ref().map(BcfwState::stats)
    }

    /// BCFW's current iterate `clip(sum_i w_i)`, whose exact gap the last
    /// exact pass measured (the run returns the best point seen, which may be
    /// an earlier iterate or the averaged one).
    pub fn iterate(&self) -> Option<&[f64]> {
        self.state.as_ref().map(BcfwState::w)
    }

    /// Block `i`'s dual state (its corners and weights), once BCFW has run
    /// with corners kept (a cache or pairwise/away steps).
    pub fn block_dual(&self, i: usize) -> Option<BlockDual> {
        self.state.as_ref().and_then(|s| s.block_dual(i))
    }

    pub(super) fn set_lambda(&mut self, lambda: f64) {
        if let Some(state) = &mut self.state {
            state.set_lambda(lambda);
        }
    }

    /// BCFW continues from its dual state: the first run starts at
    /// `alpha_i = delta(y_i)`, i.e. `w = 0` (projected onto the box), and a
    /// later run from where the last one ended. `w` must be that point: a
    /// primal start cannot be turned into a dual one, and ignoring it would
    /// drop the caller's input silently.
    pub(super) fn run(&mut self, core: &mut Core, w: &mut [f64]) -> Result<Info> {
        let Problem::Examples(oracle) = &core.problem else {
            return Err(Error::no_oracle("BCFW needs an example max-oracle"));
        };
        let mut state = match self.state.take() {
            Some(s) => s,
            None => BcfwState::new(oracle.as_ref(), &core.settings, self.bounds.clone())?,
        };
        let expected: &[f64] = match &state.returned_w {
            Some(r) => r,
            None => state.w(),
        };
        // The first run starts at the box's projection of 0; w = 0 names
        // that start too (its projection), as the documentation says.
        let names_start = state.returned_w.is_none() && w.iter().all(|&x| x == 0.0);
        if w != expected && !names_start {
            let msg = if state.returned_w.is_some() {
                "BCFW continues from its own dual state: pass the w the last run returned \
                 (or make a new solver to start again)"
            } else {
                "BCFW starts from the dual point alpha_i = delta(y_i), that is w = 0 \
                 (projected onto the box when one is set): pass w = 0 or that projection"
            };
            self.state = Some(state);
            return Err(Error::invalid_argument(msg));
        }
        w.copy_from_slice(state.w());
        let result = run_from(core, &mut state, w);
        let info = result.map(|_| core.info);
        state.returned_w = Some(w.to_vec());
        self.state = Some(state);
        info
    }
}

/// One BCFW run from `state`; `w` (the state's iterate) receives the best
/// point.
fn run_from(core: &mut Core, state: &mut BcfwState, w: &mut [f64]) -> Result<Exit> {
    let settings = core.settings.clone();
    core.execute(&mut BcfwMethod::new(state, &settings), w)
}

/// BCFW's operations on a solver that runs BCFW.
pub struct BcfwHandle<'a> {
    core: &'a mut Core,
    bcfw: &'a mut Bcfw,
}

impl<'a> BcfwHandle<'a> {
    pub(super) fn new(core: &'a mut Core, bcfw: &'a mut Bcfw) -> Self {
        BcfwHandle { core, bcfw }
    }

    /// BCFW's figures, once BCFW has run ([`Bcfw::stats`]).
    pub fn stats(&self) -> Option<BcfwStats> {
        self.bcfw.stats()
    }

    /// BCFW's current iterate ([`Bcfw::iterate`]).
    pub fn iterate(&self) -> Option<&[f64]> {
        self.bcfw.iterate()
    }

    /// Block `i`'s dual state ([`Bcfw::block_dual`]).
    pub fn block_dual(&self, i: usize) -> Option<BlockDual> {
        self.bcfw.block_dual(i)
    }

    /// Replaces BCFW's dual state by `blocks` (a warm start from a saved
    /// state, recomputed at this solver's lambda) and returns the iterate the
    /// next run must be given as its start.
    pub fn set_dual(&mut self, blocks: Vec<BlockDual>) -> Result<&[f64]> {
        let Problem::Examples(oracle) = &self.core.problem else {
            return Err(Error::no_oracle("BCFW needs an example max-oracle"));
        };
        let mut state = match self.bcfw.state.take() {
            Some(s) => s,
            None => BcfwState::new(
                oracle.as_ref(),
                &self.core.settings,
                self.bcfw.bounds.clone(),
            )?,
        };
        let result = state.set_dual(blocks);
        let state = self.bcfw.state.insert(state);
        result?;
        Ok(state.w())
    }

    /// Box constraints `lower <= w <= upper` (use infinities for free
    /// coordinates). Setting them restarts BCFW from its start.
    pub fn set_bounds(&mut self, lower: Vec<f64>, upper: Vec<f64>) -> Result<()> {
        self.bcfw.bounds = Some(Bounds::new(lower, upper, self.core.problem.dim())?);
        self.bcfw.state = None;
        Ok(())
    }

    /// The epsilon-approximate regularisation path of BCFW from lambda_max
    /// down to `lambda_min` (at most `max_breakpoints`), see
    /// docs/bcfw.md. Each breakpoint is solved to an exact gap of
    /// `settings.path_a * eps`, warm-started from the previous one. The
    /// solver is left at the last breakpoint's lambda and state.
    pub fn path(
        &mut self,
        eps: f64,
        lambda_min: f64,
        max_breakpoints: usize,
    ) -> Result<Vec<Breakpoint>> {
        let core = &mut *self.core;
        let Problem::Examples(oracle) = core.problem.clone() else {
            return Err(Error::no_oracle(
                "the regularisation path needs an example max-oracle",
            ));
        };
        // A path that fails, also before it starts, leaves "not run" behind.
        core.info = Info::default();
        if !(eps.is_finite() && eps > 0.0) {
            return Err(Error::invalid_argument(format!(
                "eps must be positive and finite, got {eps}"
            )));
        }
        let saved = core.settings.clone();
        let mut path_settings = saved.clone();
        path_settings.tol_abs = path_settings.path_a * eps;
        path_settings.tol_rel = 0.0;
        let mut state = BcfwState::new(oracle.as_ref(), &path_settings, self.bcfw.bounds.clone())?;
        let pool = core.pool()?;
        let a = path_settings.path_a;
        let result = {
            let mut solve = |state: &mut BcfwState| -> Result<Exit> {
                let mut s = path_settings.clone();
                s.lambda = state.lambda();
                let mut w = state.w().to_vec();
                core.settings = s;
                run_from(core, state, &mut w)
            };
            let mut run = || {
                crate::bcfw::regularization_path(
                    oracle.as_ref(),
                    &pool,
                    &mut state,
                    PathTarget {
                        eps,
                        a,
                        lambda_min,
                        max_breakpoints,
                    },
                    &mut solve,
                )
            };
            if oracle.thread_safe() {
                pool.install(run)
            } else {
                run()
            }
        };
        let mut s = saved;
        s.lambda = state.lambda();
        core.settings = s;
        state.returned_w = Some(state.w().to_vec());
        self.bcfw.state = Some(state);
        result
    }
}

impl super::Solver {
    /// The BCFW handle for the regularisation path, or the error (the C
    /// ABI's status) on a solver that does not run BCFW.
    pub(crate) fn bcfw_for_path(&mut self) -> Result<BcfwHandle<'_>> {
        let examples = matches!(self.core.problem, Problem::Examples(_));
        let algorithm = self.settings().algorithm;
        self.bcfw_mut().ok_or_else(|| {
            if !examples {
                return Error::no_oracle("the regularisation path needs an example max-oracle");
            }
            Error::invalid_argument(format!(
                "the regularisation path is BCFW's; the solver runs {}",
                algorithm.name()
            ))
        })
    }
}
