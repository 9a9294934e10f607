//! A lambda path with warm starts (the REUSE strategy of the Prox-BMRM
//! report's Table 2): each lambda starts from the previous solution, and the
//! cutting planes are kept (they model R, which lambda does not change).

use super::{Info, Settings, Solver};
use crate::error::Result;
use crate::oracle::Problem;

/// The solution at one lambda of a path.
#[derive(Debug, Clone)]
pub struct PathPoint {
    /// The lambda.
    pub lambda: f64,
    /// The solution at it.
    pub w: Vec<f64>,
    /// The summary of its solve.
    pub info: Info,
}

/// Solves for every lambda of `lambdas` in the order given (decreasing is
/// the useful order), each run warm-started from the previous solution.
/// `settings.lambda` is ignored; `w` is the start of the first run.
pub fn solve_path(
    problem: Problem,
    settings: &Settings,
    lambdas: &[f64],
    w: &mut [f64],
) -> Result<Vec<PathPoint>> {
    let mut out = Vec::with_capacity(lambdas.len());
    let Some(&first) = lambdas.first() else {
        return Ok(out);
    };
    let mut s = settings.clone();
    s.lambda = first;
    let mut solver = Solver::new(problem, s)?;
    for &lambda in lambdas {
        solver.set_lambda(lambda)?;
        let info = solver.run(w)?;
        out.push(PathPoint {
            lambda,
            w: w.to_vec(),
            info,
        });
    }
    Ok(out)
}
