//! Factor-graph linear models: an example is a graph whose nodes each take
//! one of a few states; the library computes the potentials, the loss
//! augmentation and the joint-feature difference, and an inference engine
//! ([`Engine`]) only maximises over labellings.

mod engine;
pub mod engines;
mod examples;
mod layout;
mod model;
mod potentials;
mod select;

pub use engine::{Engine, EngineKind};
pub use examples::{EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};
pub use model::GraphModel;
pub use potentials::{GraphShape, Grid, Pairwise, Potentials};
pub use select::EngineChoice;
