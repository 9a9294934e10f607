//! The built-in inference engines, each derived from its paper and tested
//! against [`Exhaustive`] on random small graphs.

mod exhaustive;
mod maxflow;

pub use exhaustive::{Exhaustive, MAX_LABELLINGS};
pub use maxflow::MaxFlow;
