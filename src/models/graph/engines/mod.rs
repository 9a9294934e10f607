//! The built-in inference engines, each derived from its paper and tested
//! against [`Exhaustive`] on random small graphs.

mod distance;
mod exhaustive;
mod forest;
#[cfg(test)]
mod testing;
mod tree;

pub use distance::DistanceTransform;
pub use exhaustive::{Exhaustive, MAX_LABELLINGS};
pub use tree::TreeMaxSum;
