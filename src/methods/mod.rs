//! The bundle-family methods the executor runs ([`crate::exec::Method`]):
//! BMRM, P-BMRM, Prox-BMRM and Prox-P-BMRM ([`BundleMethod`] with a step
//! rule), Kelley's cutting-plane baseline and SGD. BCFW is in
//! [`crate::bcfw`].

mod bmrm;
mod bundle;
mod constrained;
mod cutting_plane;
mod prox_bmrm;
mod reduced;
mod sgd;

pub use bundle::BundleMethod;
pub use constrained::{ConstrainedDual, Constraints};
pub use cutting_plane::CuttingPlane;
pub use sgd::SgdMethod;

use crate::vocab::Settings;

/// The step rule of the bundle method `settings.algorithm` names: a prox
/// term for the proximal variants, none for the others.
/// `constraints` (when not empty) restrict `w`; the start must already be
/// feasible ([`Constraints::prepare_start`]).
pub fn bundle_method(
    bundle: crate::bundle::Bundle,
    settings: &Settings,
    constraints: Option<std::sync::Arc<Constraints>>,
) -> BundleMethod {
    let rule: Box<dyn reduced::StepRule> = if settings.algorithm.is_proximal() {
        Box::new(prox_bmrm::ProxSteps::new(
            settings.prox_t,
            settings.prox_k,
            settings.lambda,
        ))
    } else {
        Box::new(bmrm::PlainSteps)
    };
    let constraints = constraints.filter(|c| !c.is_empty());
    let sgd_bounds = constraints.as_ref().and_then(|c| c.bounds.clone());
    let constrained = constraints.map(ConstrainedDual::new);
    BundleMethod::new(bundle, rule, constrained, sgd_bounds)
}
