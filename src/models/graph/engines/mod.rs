//! The built-in inference engines, each derived from its paper and tested
//! against [`Exhaustive`] on random small graphs.

mod exhaustive;

pub use exhaustive::{Exhaustive, MAX_LABELLINGS};
