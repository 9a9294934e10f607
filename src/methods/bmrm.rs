//! BMRM (Teo et al.) and P-BMRM: every step minimises the reduced problem
//! without a prox term. With one part it is BMRM; with P parts it keeps one
//! cutting-plane model per part (P-BMRM). The loop is in
//! [`super::bundle`]; this file is the step rule.

use super::reduced::{StepContext, StepRule};
use crate::error::Result;

/// Always `alpha = 0`.
pub struct PlainSteps;

impl StepRule for PlainSteps {
    fn start(&mut self, _norm: f64, _objective: f64, _lambda: f64) {}
    fn alpha(&self) -> f64 {
        0.0
    }
    fn update(&mut self, _step: &mut StepContext<'_>) -> Result<()> {
        Ok(())
    }
}
