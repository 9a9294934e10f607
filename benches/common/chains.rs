//! Graph examples the graph benches share.

use bmrm::models::graph::{EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};

/// `m` chains of 8 nodes with 5 states and 16 features, labels following
/// the features' strongest class.
pub fn chains(m: usize, seed: u64) -> GraphExamples {
    let (x, y) = bmrm::models::synthetic::gaussian_multiclass(8 * m, 16, 5, 1.0, seed);
    GraphExamples {
        node_start: (0..=m).map(|i| 8 * i).collect(),
        states: vec![5; 8 * m],
        labels: y.iter().map(|&c| c as u32).collect(),
        node_types: vec![],
        node_features: NodeFeatures::Dense { values: x, d: 16 },
        edge_start: (0..=m).map(|i| 7 * i).collect(),
        edges: (0..m).flat_map(|_| (0..7u32).map(|t| [t, t + 1])).collect(),
        edge_types: vec![],
        edge_features: EdgeFeatures::Constant,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: true,
        },
    }
}
