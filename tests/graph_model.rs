//! The factor-graph model against an independent reference: the joint
//! feature map written densely here, the loss-augmented argmax found by
//! enumerating every labelling, the optimum of tiny problems by enumeration.

use bmrm::models::chain::sequence_id;
use bmrm::models::graph::{
    EdgeFeatures, EngineChoice, EngineKind, GraphExamples, GraphLoss, GraphModel, Grid,
    NodeFeatures, MAX_TYPES,
};
use bmrm::{Algorithm, Corner, ErrorKind, MaxOracle, Problem, Settings, Solver};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Which feature forms a random problem uses.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// Dense class-form node features with a bias, constant edges.
    ClassConstant,
    /// Sparse class-form node features, dense edge features with a symmetric
    /// and an antisymmetric feature, two node types and two edge types.
    SparseEdgeFeatures,
    /// Per-state node features on grids, displacement edges, a loss table.
    Displacement,
    /// Dense class-form node features, Potts edges with two features.
    Potts,
    /// `Displacement` with the per-state features as sparse rows.
    SparseDisplacement,
}

/// A random problem of `m` examples with up to 4 nodes each.
fn random_examples(rng: &mut ChaCha8Rng, m: usize, form: Form) -> (GraphExamples, bool) {
    let sparse_per_state = matches!(form, Form::SparseDisplacement);
    let form = if sparse_per_state {
        Form::Displacement
    } else {
        form
    };
    let mut node_start = vec![0];
    let mut edge_start = vec![0];
    let (mut states, mut labels, mut edges, mut node_types, mut edge_types) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut grids = vec![];
    let typed = matches!(form, Form::SparseEdgeFeatures);
    for _ in 0..m {
        let n = rng.gen_range(1..=4u32);
        for _ in 0..n {
            let t = if typed { rng.gen_range(0..2u32) } else { 0 };
            let k = match form {
                Form::ClassConstant | Form::Potts => 3,
                Form::SparseEdgeFeatures => 2 + t,
                Form::Displacement | Form::SparseDisplacement => {
                    let g = Grid {
                        origin: [rng.gen_range(-2..3), rng.gen_range(-2..3)],
                        width: rng.gen_range(1..4),
                        height: rng.gen_range(1..3),
                    };
                    grids.push(g);
                    g.width * g.height
                }
            };
            states.push(k);
            labels.push(rng.gen_range(0..k));
            node_types.push(t);
        }
        // A random tree plus maybe one extra edge.
        let base = *node_start.last().unwrap() as u32;
        let _ = base;
        for v in 1..n {
            let u = rng.gen_range(0..v);
            edges.push(if rng.gen_bool(0.5) { [u, v] } else { [v, u] });
        }
        if n >= 3 && rng.gen_bool(0.3) {
            edges.push([0, n - 1]);
        }
        node_start.push(states.len());
        edge_start.push(edges.len());
    }
    let first_of: Vec<usize> = node_start.clone();
    let example_of_edge = |e: usize| edge_start.partition_point(|&s| s <= e) - 1;
    for (e, &[u, v]) in edges.iter().enumerate() {
        let i = example_of_edge(e);
        let tu = node_types[first_of[i] + u as usize];
        let tv = node_types[first_of[i] + v as usize];
        edge_types.push(if typed { tu * 2 + tv } else { 0 });
    }
    let n_nodes = states.len();
    let state_rows: usize = states.iter().map(|&s| s as usize).sum();
    let x = |rng: &mut ChaCha8Rng, len: usize| -> Vec<f32> {
        (0..len)
            .map(|_| rng.gen_range(-2..=2) as f32 * 0.5)
            .collect()
    };
    let (node_features, edge_features, loss, bias) = match form {
        Form::ClassConstant => (
            NodeFeatures::Dense {
                values: x(rng, n_nodes * 3),
                d: 3,
            },
            EdgeFeatures::Constant,
            GraphLoss::Hamming {
                class_weight: vec![],
                normalise: true,
            },
            true,
        ),
        Form::Potts => (
            NodeFeatures::Dense {
                values: x(rng, n_nodes * 3),
                d: 3,
            },
            EdgeFeatures::Potts {
                values: x(rng, edges.len() * 2),
                f: 2,
            },
            GraphLoss::Hamming {
                class_weight: vec![],
                normalise: false,
            },
            false,
        ),
        Form::SparseEdgeFeatures => {
            let dense = x(rng, n_nodes * 4);
            let rows = bmrm::models::SparseRows::from_dense(&dense, 4).unwrap();
            (
                NodeFeatures::Sparse(rows),
                EdgeFeatures::Dense {
                    values: x(rng, edges.len() * 3),
                    f: 3,
                    symmetric: vec![1],
                    antisymmetric: vec![2],
                },
                GraphLoss::Hamming {
                    class_weight: vec![1.0, 2.0, 0.5, 1.5],
                    normalise: false,
                },
                false,
            )
        }
        Form::Displacement | Form::SparseDisplacement => {
            let mut table = vec![];
            for (&k, &y) in states.iter().zip(&labels) {
                for s in 0..k {
                    table.push(if s == y {
                        0.0
                    } else {
                        rng.gen_range(1..4) as f64 * 0.25
                    });
                }
            }
            (
                NodeFeatures::PerState {
                    values: x(rng, state_rows * 2),
                    d: 2,
                },
                EdgeFeatures::Displacement { grids },
                GraphLoss::Table(table),
                false,
            )
        }
    };
    // Symmetric features need square tables: with typed nodes of different
    // state counts, keep only edges between nodes of one type.
    let ex = GraphExamples {
        node_start,
        states,
        labels,
        node_types: if typed { node_types } else { vec![] },
        node_features,
        edge_start,
        edges,
        edge_types: if typed || matches!(form, Form::Displacement) {
            if matches!(form, Form::Displacement) {
                vec![]
            } else {
                edge_types
            }
        } else {
            vec![]
        },
        edge_features,
        loss,
    };
    let mut ex = ex;
    if let (true, NodeFeatures::PerState { values, d }) = (sparse_per_state, &ex.node_features) {
        let rows = bmrm::models::SparseRows::from_dense(values, *d).unwrap();
        ex.node_features = NodeFeatures::PerStateSparse(rows);
    }
    (ex, bias)
}

/// Drops the edges whose ends have different types (symmetric features
/// need square tables).
fn square_edges_only(mut ex: GraphExamples) -> GraphExamples {
    let mut edges = vec![];
    let mut types = vec![];
    let mut values = vec![];
    let mut edge_start = vec![0];
    let EdgeFeatures::Dense { values: old, f, .. } = &ex.edge_features else {
        return ex;
    };
    let f = *f;
    for i in 0..ex.node_start.len() - 1 {
        for e in ex.edge_start[i]..ex.edge_start[i + 1] {
            let [u, v] = ex.edges[e];
            let b = ex.node_start[i];
            if ex.node_types[b + u as usize] == ex.node_types[b + v as usize] {
                edges.push([u, v]);
                types.push(ex.node_types[b + u as usize] * 3);
                values.extend_from_slice(&old[e * f..(e + 1) * f]);
            }
        }
        edge_start.push(edges.len());
    }
    if let EdgeFeatures::Dense { values: v, .. } = &mut ex.edge_features {
        *v = values;
    }
    ex.edges = edges;
    ex.edge_types = types;
    ex.edge_start = edge_start;
    ex
}

/// phi(x_i, y), written densely and plainly from the model's definition and
/// its documented layout.
fn phi(model: &GraphModel, bias: bool, i: usize, y: &[u32]) -> Vec<f64> {
    let ex = model.examples();
    let mut out = vec![0.0; model.dim()];
    let first = ex.node_start[i];
    let ty = |node: usize| ex.node_types.get(node).copied().unwrap_or(0) as usize;
    let mut state_row = 0usize;
    for node in 0..first {
        state_row += ex.states[node] as usize;
    }
    for (local, &s) in y.iter().enumerate() {
        let node = first + local;
        let off = model.unary_offset(ty(node));
        match &ex.node_features {
            NodeFeatures::Dense { values, d } => {
                let row = off + s as usize * (d + usize::from(bias));
                for j in 0..*d {
                    out[row + j] += f64::from(values[node * d + j]);
                }
                if bias {
                    out[row + d] += 1.0;
                }
            }
            NodeFeatures::Sparse(rows) => {
                let d = rows.num_cols();
                let row = off + s as usize * (d + usize::from(bias));
                let (idx, val) = rows.row(node);
                for (&j, &x) in idx.iter().zip(val) {
                    out[row + j as usize] += f64::from(x);
                }
                if bias {
                    out[row + d] += 1.0;
                }
            }
            NodeFeatures::PerState { values, d } => {
                let r = state_row + s as usize;
                for j in 0..*d {
                    out[off + j] += f64::from(values[r * d + j]);
                }
            }
            NodeFeatures::PerStateSparse(rows) => {
                let (idx, val) = rows.row(state_row + s as usize);
                for (&j, &x) in idx.iter().zip(val) {
                    out[off + j as usize] += f64::from(x);
                }
            }
        }
        state_row += ex.states[node] as usize;
    }
    for e in ex.edge_start[i]..ex.edge_start[i + 1] {
        let [u, v] = ex.edges[e];
        let (a, b) = (y[u as usize] as usize, y[v as usize] as usize);
        let r = ex.edge_types.get(e).copied().unwrap_or(0) as usize;
        let off = model.pairwise_offset(r);
        let kb = ex.states[first + v as usize] as usize;
        match &ex.edge_features {
            EdgeFeatures::Constant => out[off + a * kb + b] += 1.0,
            EdgeFeatures::Dense {
                values,
                f,
                symmetric,
                antisymmetric,
            } => {
                for k in 0..*f {
                    let x = f64::from(values[e * f + k]);
                    let (ab, ba) = (off + (a * kb + b) * f + k, off + (b * kb + a) * f + k);
                    if symmetric.contains(&k) {
                        out[ab] += 0.5 * x;
                        out[ba] += 0.5 * x;
                    } else if antisymmetric.contains(&k) {
                        out[ab] += 0.5 * x;
                        out[ba] -= 0.5 * x;
                    } else {
                        out[ab] += x;
                    }
                }
            }
            EdgeFeatures::Potts { values, f } => {
                if a != b {
                    for k in 0..*f {
                        out[off + k] -= f64::from(values[e * f + k]);
                    }
                }
            }
            EdgeFeatures::Displacement { grids } => {
                let pu = grids[first + u as usize].position(a as u32);
                let pv = grids[first + v as usize].position(b as u32);
                let (dx, dy) = ((pv[0] - pu[0]) as f64, (pv[1] - pu[1]) as f64);
                for (j, p) in [dx, dy, dx * dx, dy * dy].into_iter().enumerate() {
                    out[off + j] -= p;
                }
            }
        }
    }
    out
}

/// The loss of `y`, from the model's definition.
fn loss(ex: &GraphExamples, i: usize, y: &[u32]) -> f64 {
    let first = ex.node_start[i];
    let truth = &ex.labels[first..ex.node_start[i + 1]];
    match &ex.loss {
        GraphLoss::Hamming {
            class_weight,
            normalise,
        } => {
            let l: f64 = y
                .iter()
                .zip(truth)
                .filter(|(a, b)| a != b)
                .map(|(_, &t)| class_weight.get(t as usize).copied().unwrap_or(1.0))
                .sum();
            if *normalise {
                l / y.len() as f64
            } else {
                l
            }
        }
        GraphLoss::Table(table) => {
            let mut at: usize = ex.states[..first].iter().map(|&s| s as usize).sum();
            let mut l = 0.0;
            for (local, &s) in y.iter().enumerate() {
                l += table[at + s as usize];
                at += ex.states[first + local] as usize;
            }
            l
        }
    }
}

/// Every labelling of example `i`.
fn labellings(ex: &GraphExamples, i: usize) -> Vec<Vec<u32>> {
    let states = &ex.states[ex.node_start[i]..ex.node_start[i + 1]];
    let mut all = vec![vec![]];
    for &k in states {
        all = all
            .into_iter()
            .flat_map(|y: Vec<u32>| {
                (0..k).map(move |s| {
                    let mut z = y.clone();
                    z.push(s);
                    z
                })
            })
            .collect();
    }
    all
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// H_i(w) by enumeration.
fn hinge(model: &GraphModel, bias: bool, i: usize, w: &[f64]) -> f64 {
    let ex = model.examples();
    let truth = &ex.labels[ex.node_start[i]..ex.node_start[i + 1]];
    let at_truth = dot(w, &phi(model, bias, i, truth));
    labellings(ex, i)
        .iter()
        .map(|y| loss(ex, i, y) - (at_truth - dot(w, &phi(model, bias, i, y))))
        .fold(f64::NEG_INFINITY, f64::max)
}

fn build(ex: GraphExamples, bias: bool) -> GraphModel {
    GraphModel::new(ex, bias, EngineChoice::Kind(EngineKind::Exhaustive)).unwrap()
}

#[test]
fn corners_are_the_enumerated_loss_augmented_argmax() {
    let mut rng = ChaCha8Rng::seed_from_u64(27);
    for form in [
        Form::ClassConstant,
        Form::SparseEdgeFeatures,
        Form::Displacement,
        Form::Potts,
        Form::SparseDisplacement,
    ] {
        for _ in 0..40 {
            let (ex, bias) = random_examples(&mut rng, 5, form);
            let ex = square_edges_only(ex);
            let model = build(ex, bias);
            for _ in 0..5 {
                let w: Vec<f64> = (0..model.dim())
                    .map(|_| rng.gen_range(-4..=4) as f64 * 0.25)
                    .collect();
                for i in 0..model.num_examples() {
                    let mut c = Corner::new(model.dim());
                    model.max_oracle(i, &w, &mut c).unwrap();
                    assert!(c.is_exact());
                    let mut psi = vec![0.0; model.dim()];
                    c.add_to(1.0, &mut psi);
                    let h = c.loss() - dot(&w, &psi);
                    let want = hinge(&model, bias, i, &w);
                    assert!(
                        (h - want).abs() <= 1e-9 * (1.0 + want.abs()),
                        "{form:?} example {i}: corner hinge {h}, enumerated {want}"
                    );
                    // The corner is phi(truth) - phi(y^) for the labelling its id names.
                    let ex = model.examples();
                    let truth = &ex.labels[ex.node_start[i]..ex.node_start[i + 1]];
                    let k = *ex.states.iter().max().unwrap() as usize;
                    let y = labellings(ex, i)
                        .into_iter()
                        .find(|y| sequence_id(k, y) == c.label())
                        .expect("the label id names a labelling");
                    let want_psi: Vec<f64> = phi(&model, bias, i, truth)
                        .iter()
                        .zip(phi(&model, bias, i, &y))
                        .map(|(a, b)| a - b)
                        .collect();
                    for (j, (a, b)) in psi.iter().zip(&want_psi).enumerate() {
                        assert!((a - b).abs() < 1e-12, "{form:?} psi[{j}] = {a}, want {b}");
                    }
                    assert!((c.loss() - loss(ex, i, &y)).abs() < 1e-12);
                }
            }
        }
    }
}

fn s_tol(alg: Algorithm) -> f64 {
    if alg == Algorithm::Bcfw {
        1e-3
    } else {
        1e-6
    }
}

/// F(w) by enumeration.
fn objective(model: &GraphModel, bias: bool, lambda: f64, w: &[f64]) -> f64 {
    let m = model.num_examples();
    let r: f64 = (0..m).map(|i| hinge(model, bias, i, w)).sum::<f64>() / m as f64;
    0.5 * lambda * dot(w, w) + r
}

#[test]
fn every_solver_certifies_a_bound_below_the_enumerated_primal() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for form in [
        Form::ClassConstant,
        Form::SparseEdgeFeatures,
        Form::Displacement,
        Form::Potts,
        Form::SparseDisplacement,
    ] {
        let (ex, bias) = random_examples(&mut rng, 8, form);
        let ex = square_edges_only(ex);
        let model = build(ex, bias);
        let lambda = 0.1;
        for alg in [
            Algorithm::Bmrm,
            Algorithm::ProxBmrm,
            Algorithm::PBmrm,
            Algorithm::ProxPBmrm,
            Algorithm::Bcfw,
        ] {
            let mut s = Settings::new(alg, lambda);
            // BCFW converges as 1/t: a tight tolerance would take a million passes.
            s.tol_rel = s_tol(alg);
            if alg.is_partitioned() {
                s.num_parts = 4;
            }
            let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
            let mut w = vec![0.0; model.dim()];
            let info = solver.run(&mut w).unwrap();
            let f = objective(&model, bias, lambda, &w);
            assert!(
                (info.primal - f).abs() <= 1e-9 * (1.0 + f.abs()),
                "{form:?} {alg:?}: primal {} but F(w) = {f}",
                info.primal
            );
            assert!(
                info.lower_bound <= f + 1e-12,
                "{form:?} {alg:?}: bound {} above F(w) = {f}",
                info.lower_bound
            );
            assert!(
                info.gap <= 1.01 * s_tol(alg) * f.abs() + 1e-9,
                "{form:?} {alg:?}: gap {}",
                info.gap
            );
        }
    }
}

#[test]
fn results_are_bit_identical_for_any_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (ex, bias) = random_examples(&mut rng, 40, Form::ClassConstant);
    let model = build(ex, bias);
    for alg in [Algorithm::ProxPBmrm, Algorithm::Bcfw] {
        let mut runs = vec![];
        for threads in [1, 2, 4] {
            let mut s = Settings::new(alg, 0.01);
            s.num_threads = threads;
            if alg.is_partitioned() {
                s.num_parts = 8;
            }
            let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
            let mut w = vec![0.0; model.dim()];
            let info = solver.run(&mut w).unwrap();
            runs.push((
                w.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                info.primal.to_bits(),
            ));
        }
        assert!(
            runs.windows(2).all(|p| p[0] == p[1]),
            "{alg:?}: results differ by threads"
        );
    }
}

/// A valid two-example problem to break.
fn valid() -> GraphExamples {
    GraphExamples {
        node_start: vec![0, 3, 5],
        states: vec![2, 2, 2, 2, 2],
        labels: vec![0, 1, 0, 1, 1],
        node_types: vec![],
        node_features: NodeFeatures::Dense {
            values: vec![1.0; 10],
            d: 2,
        },
        edge_start: vec![0, 2, 3],
        edges: vec![[0, 1], [1, 2], [0, 1]],
        edge_types: vec![],
        edge_features: EdgeFeatures::Constant,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: false,
        },
    }
}

#[test]
fn bad_graphs_get_errors_naming_the_example_and_the_node_or_edge() {
    type Case = (fn(&mut GraphExamples), ErrorKind, &'static str);
    let cases: Vec<Case> = vec![
        (
            |g| g.edges[2] = [0, 5],
            ErrorKind::InvalidArgument,
            "example 1",
        ),
        (
            |g| g.edges[2] = [0, 5],
            ErrorKind::InvalidArgument,
            "node 5, which does not exist",
        ),
        (
            |g| g.states[3] = 0,
            ErrorKind::InvalidArgument,
            "example 1: node 0 has zero states",
        ),
        (
            |g| g.edges[1] = [2, 2],
            ErrorKind::InvalidArgument,
            "edge 1 is a self loop on node 2",
        ),
        (
            |g| g.labels[4] = 2,
            ErrorKind::InvalidArgument,
            "example 1: node 1 has label 2",
        ),
        (
            |g| {
                g.node_features = NodeFeatures::Dense {
                    values: vec![1.0; 9],
                    d: 2,
                }
            },
            ErrorKind::DimensionMismatch,
            "9 node features values given",
        ),
        (
            |g| {
                g.node_features = NodeFeatures::Dense {
                    values: vec![f32::NAN; 10],
                    d: 2,
                }
            },
            ErrorKind::InvalidArgument,
            "NaN",
        ),
        (
            |g| g.edge_start = vec![0, 2],
            ErrorKind::DimensionMismatch,
            "edge_start",
        ),
        (
            |g| g.node_types = vec![0, 1],
            ErrorKind::DimensionMismatch,
            "node_types",
        ),
    ];
    for (break_it, kind, text) in cases {
        let mut g = valid();
        break_it(&mut g);
        let e = GraphModel::new(g, false, EngineKind::Exhaustive.into()).unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        assert!(
            e.to_string().contains(text),
            "'{e}' does not contain '{text}'"
        );
    }
    GraphModel::new(valid(), false, EngineKind::Exhaustive.into()).unwrap();
}

/// `valid()` with dense edge features (two per edge), the symmetric and
/// antisymmetric lists given.
fn with_edge_features(symmetric: Vec<usize>, antisymmetric: Vec<usize>) -> GraphExamples {
    let mut g = valid();
    g.edge_features = EdgeFeatures::Dense {
        values: vec![0.5; 6],
        f: 2,
        symmetric,
        antisymmetric,
    };
    g
}

/// A feature listed twice would enter psi twice but the scores once: the
/// model is refused, naming the list and the index (no false certificate).
#[test]
fn duplicated_edge_features_are_refused_naming_the_list_and_the_index() {
    for (symmetric, antisymmetric, text) in [
        (
            vec![0, 0],
            vec![],
            "symmetric edge feature 0 is listed twice",
        ),
        (
            vec![1, 0, 1],
            vec![],
            "symmetric edge feature 1 is listed twice",
        ),
        (
            vec![],
            vec![1, 1],
            "antisymmetric edge feature 1 is listed twice",
        ),
    ] {
        let g = with_edge_features(symmetric, antisymmetric);
        let e = GraphModel::new(g, false, EngineKind::Exhaustive.into()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(text), "'{e}' lacks '{text}'");
    }
    GraphModel::new(
        with_edge_features(vec![0], vec![1]),
        false,
        EngineKind::Exhaustive.into(),
    )
    .unwrap();
}

/// A type id of `MAX_TYPES` (2^24) or more is refused at once, naming the
/// example, the node or edge, the id and the list: the model keeps a block
/// per type up to the largest id, so an id near 2^32 in a five-node problem
/// would ask for tens of GiB (an abort, or seconds of filling them). The
/// largest valid id gives the unused types below it empty blocks.
#[test]
fn type_ids_of_2_to_the_24_or_more_are_refused_naming_the_node_or_edge() {
    let refused = |g: GraphExamples, text: &str| {
        let e = GraphModel::new(g, false, EngineKind::Exhaustive.into()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(text), "'{e}' lacks '{text}'");
    };
    let mut g = valid();
    g.node_types = vec![0, 0, 0, 0, MAX_TYPES];
    refused(g, "example 1: node 1 has type 16777216 in node_types");
    let mut g = valid();
    g.edge_types = vec![0, 0, MAX_TYPES + 7];
    refused(g, "example 1: edge 0 has type 16777223 in edge_types");
    let mut g = valid();
    g.node_types = vec![0, u32::MAX, 0, 0, 0];
    refused(g, "example 0: node 1 has type 4294967295 in node_types");
    let mut g = valid();
    g.edge_types = vec![u32::MAX, 0, 0];
    refused(g, "example 0: edge 0 has type 4294967295 in edge_types");
    // Declared edge types: as many as ids allow, no more.
    let e = GraphModel::new(valid(), false, EngineKind::Exhaustive.into())
        .unwrap()
        .with_edge_type_states(&vec![[2, 2]; MAX_TYPES as usize + 1])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("16777217 edge types"), "{e}");

    let plain = GraphModel::new(valid(), false, EngineKind::Exhaustive.into()).unwrap();
    let mut g = valid();
    g.node_types = vec![MAX_TYPES - 1; 5];
    let top = GraphModel::new(g, false, EngineKind::Exhaustive.into()).unwrap();
    assert_eq!(top.dim(), plain.dim());
    assert_eq!(top.unary_offset(MAX_TYPES as usize - 1), 0);
}

/// Decoding with a NaN or infinite weight is refused naming the coordinate
/// (every score would be NaN and the argmax arbitrary), in every decoding
/// the model offers.
#[test]
fn decoding_refuses_a_weight_that_is_not_finite() {
    let model = GraphModel::new(valid(), false, EngineKind::Exhaustive.into()).unwrap();
    let mut w = vec![0.5; model.dim()];
    for (j, bad) in [(1, f64::NAN), (model.dim() - 1, f64::NEG_INFINITY)] {
        w[j] = bad;
        let text = format!("w[{j}] is {bad}");
        let errors = [
            model.predict(&w, 0).unwrap_err(),
            model.loss_augmented(&w, 1).unwrap_err(),
            model.relaxed(&w, 0, false, false).unwrap_err(),
            model.hamming_error(&w).unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e.kind(), ErrorKind::NonFinite, "{e}");
            assert!(e.to_string().contains(&text), "'{e}' lacks '{text}'");
        }
        w[j] = 0.5;
    }
    model.predict(&w, 0).unwrap();
}

/// The distance transform's x pass holds `from.height x to.width` cells,
/// more than either grid's states: a tall grid's message to a wide one
/// (2^18 states each, 2^36 cells) is `OutOfMemory` naming the engine and
/// the grids, not an abort; the other direction decodes.
#[test]
fn a_distance_transform_too_big_for_memory_is_an_error_not_an_abort() {
    let k = 1u32 << 18;
    let tall = Grid {
        origin: [0, 0],
        width: 1,
        height: k,
    };
    let wide = Grid {
        origin: [0, 0],
        width: k,
        height: 1,
    };
    let ex = GraphExamples {
        node_start: vec![0, 2, 4],
        states: vec![k; 4],
        labels: vec![0; 4],
        node_types: vec![],
        node_features: NodeFeatures::PerState {
            values: vec![0.0; 4 * k as usize],
            d: 1,
        },
        edge_start: vec![0, 1, 2],
        edges: vec![[0, 1], [0, 1]],
        edge_types: vec![],
        edge_features: EdgeFeatures::Displacement {
            grids: vec![tall, wide, wide, tall],
        },
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: false,
        },
    };
    let model = GraphModel::new(ex, false, EngineKind::DistanceTransform.into()).unwrap();
    let w = vec![0.5; model.dim()];
    let answers: Vec<_> = (0..2).map(|i| model.predict(&w, i)).collect();
    let errors: Vec<_> = answers.iter().filter_map(|a| a.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{answers:?}");
    assert_eq!(errors[0].kind(), ErrorKind::OutOfMemory, "{}", errors[0]);
    let text = "needs 262144 x 262144 cells";
    assert!(
        errors[0].to_string().contains(text),
        "'{}' lacks '{text}'",
        errors[0]
    );
}

/// A value that is not finite is reported by example and node or edge, not
/// by its row in the flat array.
#[test]
fn non_finite_features_are_named_by_example_and_node_or_edge() {
    let mut g = valid();
    // Example 1, node 1 is global node 4.
    g.node_features = NodeFeatures::Dense {
        values: (0..10)
            .map(|k| if k == 9 { f32::NAN } else { 1.0 })
            .collect(),
        d: 2,
    };
    let e = GraphModel::new(g, false, EngineKind::Exhaustive.into()).unwrap_err();
    assert!(
        e.to_string()
            .contains("example 1: node 1: node features: value 1 is NaN"),
        "{e}"
    );
    // Example 1, edge 0 is global edge 2.
    let mut g = with_edge_features(vec![], vec![]);
    if let EdgeFeatures::Dense { values, .. } = &mut g.edge_features {
        values[4] = f32::INFINITY;
    }
    let e = GraphModel::new(g, false, EngineKind::Exhaustive.into()).unwrap_err();
    assert!(
        e.to_string()
            .contains("example 1: edge 0: edge features: value 0 is inf"),
        "{e}"
    );
    let mut g = valid();
    g.edge_features = EdgeFeatures::Potts {
        values: vec![1.0, 1.0, f32::NEG_INFINITY],
        f: 1,
    };
    let e = GraphModel::new(g, false, EngineKind::Exhaustive.into()).unwrap_err();
    assert!(
        e.to_string()
            .contains("example 1: edge 0: Potts edge features: value 0 is -inf"),
        "{e}"
    );
    // Sparse rows: example 1, node 0 is global node 3.
    let node_start = [0, 3, 5];
    let indptr = vec![0, 1, 2, 3, 4, 5];
    let e = bmrm::models::graph::sparse_node_rows(
        &node_start,
        indptr.clone(),
        vec![0, 1, 0, 7, 1],
        None,
        2,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("example 1: node 0: node_indices entry 3 is 7"),
        "{e}"
    );
    let e = bmrm::models::graph::sparse_node_rows(
        &node_start,
        indptr.clone(),
        vec![0, 1, 0, 1, 1],
        Some(vec![1.0, 1.0, 1.0, 1.0, f32::NAN]),
        2,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("example 1: node 1: node_values entry 4"),
        "{e}"
    );
    let e = bmrm::models::graph::sparse_node_rows(
        &node_start,
        vec![0, 1, 2, 3, 2, 5],
        vec![0; 5],
        None,
        2,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("example 1: node 0: node_indptr decreases"),
        "{e}"
    );
}

/// The distance transform decodes displacement edges only: table edges are
/// refused when the model is built, not at the first decoding.
#[test]
fn the_distance_transform_refuses_table_edges_when_the_model_is_built() {
    let e = GraphModel::new(valid(), false, EngineKind::DistanceTransform.into()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.to_string().contains("example 0") && e.to_string().contains("displacement"),
        "{e}"
    );
}

/// Auto's engines (tree max-sum, distance transform, graph cut) give the
/// hinge of exhaustive search on graphs too large for Auto to enumerate.
#[test]
fn auto_engines_give_the_exhaustive_hinge() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    // Binary loopy graphs (4 x 4 grids: a cut set of at most 64
    // labellings, so cut-set conditioning), Potts edges with non-negative
    // features; trees of 7 nodes with 4 states (4^7: tree max-sum);
    // landmarks (distance transform). Every one exact.
    let seg = bmrm::models::graph::synthetic::segmentation(4, 4, 3, 1).select(0..4);
    let mut star = valid();
    star.node_start = vec![0, 7];
    star.states = vec![4; 7];
    star.labels = (0..7).map(|_| rng.gen_range(0..4)).collect();
    star.node_features = NodeFeatures::Dense {
        values: (0..14).map(|_| rng.gen_range(-1.0..1.0)).collect(),
        d: 2,
    };
    star.edge_start = vec![0, 6];
    star.edges = vec![[0, 1], [0, 2], [2, 3], [3, 4], [1, 5], [6, 5]];
    let marks = bmrm::models::graph::synthetic::landmarks(2, 2, 2, 4);
    for (name, ex) in [("segmentation", seg), ("tree", star), ("landmarks", marks)] {
        let auto = GraphModel::new(ex.clone(), false, EngineKind::Auto.into()).unwrap();
        let exhaustive = GraphModel::new(ex, false, EngineKind::Exhaustive.into()).unwrap();
        assert!(auto.exact(), "{name}");
        for _ in 0..20 {
            let mut w: Vec<f64> = (0..auto.dim()).map(|_| rng.gen_range(-1.0..1.0)).collect();
            for j in auto.positivity_coordinates() {
                w[j] = w[j].abs();
            }
            for i in 0..auto.num_examples() {
                let (mut a, mut b) = (Corner::new(auto.dim()), Corner::new(auto.dim()));
                auto.max_oracle(i, &w, &mut a).unwrap();
                exhaustive.max_oracle(i, &w, &mut b).unwrap();
                let (ha, hb) = (a.hinge(&w), b.hinge(&w));
                assert!(
                    (ha - hb).abs() <= 1e-9 * (1.0 + hb.abs()),
                    "{name} {i}: {ha} vs {hb}"
                );
                assert!(a.is_exact(), "{name}: positivity keeps graph cut exact");
            }
        }
    }
}

/// AD3 through the model: with branch and bound every corner is exact and
/// has the hinge of exhaustive search (loopy segmentation lattices without
/// positivity, so the LP is often fractional, and random small graphs of
/// every form); without it a corner marked exact has that hinge too, and
/// the model says it is not exact on every potential.
#[test]
fn ad3_corners_marked_exact_have_the_exhaustive_hinge() {
    let mut rng = ChaCha8Rng::seed_from_u64(2015);
    let mut problems = vec![(
        "segmentation",
        bmrm::models::graph::synthetic::segmentation(4, 3, 3, 2),
    )];
    for form in [
        Form::ClassConstant,
        Form::SparseEdgeFeatures,
        Form::Potts,
        Form::Displacement,
    ] {
        for _ in 0..4 {
            let ex = square_edges_only(random_examples(&mut rng, 6, form).0);
            problems.push(("random", ex));
        }
    }
    let (mut exact, mut inexact) = (0, 0);
    for (name, ex) in problems {
        let bb = GraphModel::new(ex.clone(), false, EngineKind::Ad3BranchAndBound.into()).unwrap();
        let lp = GraphModel::new(ex.clone(), false, EngineKind::Ad3.into()).unwrap();
        let reference = GraphModel::new(ex, false, EngineKind::Exhaustive.into()).unwrap();
        assert!(bb.exact() && !lp.exact(), "{name}");
        for _ in 0..10 {
            let w: Vec<f64> = (0..bb.dim()).map(|_| rng.gen_range(-2.0..2.0)).collect();
            for i in 0..bb.num_examples() {
                let mut c = [Corner::new(bb.dim()), Corner::new(bb.dim())];
                let mut r = Corner::new(bb.dim());
                bb.max_oracle(i, &w, &mut c[0]).unwrap();
                lp.max_oracle(i, &w, &mut c[1]).unwrap();
                reference.max_oracle(i, &w, &mut r).unwrap();
                let hr = r.hinge(&w);
                assert!(c[0].is_exact(), "{name} {i}: branch and bound not exact");
                for (k, c) in c.iter().enumerate() {
                    if c.is_exact() {
                        let h = c.hinge(&w);
                        assert!(
                            (h - hr).abs() <= 1e-9 * (1.0 + hr.abs()),
                            "{name} {i} {k}: {h} vs {hr}"
                        );
                    }
                }
                if c[1].is_exact() {
                    exact += 1;
                } else {
                    inexact += 1;
                }
            }
        }
    }
    assert!(
        exact > 0 && inexact > 0,
        "AD3 alone: {exact} exact, {inexact} not"
    );
}

/// QPBO through the model: a corner marked exact has the hinge of
/// exhaustive search, the model does not claim to be exact, and on these
/// graphs (binary and multi-state, random iterates without positivity, so
/// terms are often not submodular) both exact and inexact corners occur.
#[test]
fn qpbo_corners_marked_exact_have_the_exhaustive_hinge() {
    let mut rng = ChaCha8Rng::seed_from_u64(1984);
    let mut problems = vec![(
        "segmentation",
        bmrm::models::graph::synthetic::segmentation(4, 3, 3, 2),
    )];
    for form in [
        Form::ClassConstant,
        Form::SparseEdgeFeatures,
        Form::Potts,
        Form::Displacement,
    ] {
        for _ in 0..4 {
            let ex = square_edges_only(random_examples(&mut rng, 6, form).0);
            problems.push(("random", ex));
        }
    }
    let (mut exact, mut inexact) = (0, 0);
    for (name, ex) in problems {
        let qpbo = GraphModel::new(ex.clone(), false, EngineKind::Qpbo.into()).unwrap();
        let reference = GraphModel::new(ex, false, EngineKind::Exhaustive.into()).unwrap();
        assert!(!qpbo.exact(), "{name}");
        for _ in 0..10 {
            let w: Vec<f64> = (0..qpbo.dim()).map(|_| rng.gen_range(-2.0..2.0)).collect();
            for i in 0..qpbo.num_examples() {
                let (mut c, mut r) = (Corner::new(qpbo.dim()), Corner::new(qpbo.dim()));
                qpbo.max_oracle(i, &w, &mut c).unwrap();
                reference.max_oracle(i, &w, &mut r).unwrap();
                let (h, hr) = (c.hinge(&w), r.hinge(&w));
                assert!(h <= hr + 1e-9 * (1.0 + hr.abs()), "{name} {i}: {h} > {hr}");
                if c.is_exact() {
                    exact += 1;
                    assert!(
                        (h - hr).abs() <= 1e-9 * (1.0 + hr.abs()),
                        "{name} {i}: {h} vs {hr}"
                    );
                } else {
                    inexact += 1;
                }
            }
        }
    }
    assert!(
        exact > 0 && inexact > 0,
        "QPBO: {exact} exact, {inexact} not"
    );
}

/// Every engine of the registry through the model, on random small
/// problems of every form it accepts: a model that says it is exact
/// (`exact()`, the registry's `Exactness` on each example's graph) gives
/// only corners marked exact, and any corner marked exact has the hinge of
/// exhaustive search; the unary engine is exact on graphs without edges
/// only.
#[test]
fn every_registry_engine_is_exact_where_it_says_so() {
    use bmrm::models::graph::registry::ENGINES;
    let mut rng = ChaCha8Rng::seed_from_u64(4711);
    let mut said_exact = vec![0usize; ENGINES.len()];
    let mut problems = Vec::new();
    for round in 0..12 {
        for form in [
            Form::ClassConstant,
            Form::SparseEdgeFeatures,
            Form::Potts,
            Form::Displacement,
        ] {
            let (mut ex, bias) = random_examples(&mut rng, 4, form);
            ex = square_edges_only(ex);
            if round % 3 == 0 {
                // No edges at all: where the unary engine is exact.
                ex.edges.clear();
                ex.edge_types.clear();
                ex.edge_start = vec![0; ex.node_start.len()];
                ex.edge_features = EdgeFeatures::Constant;
            }
            problems.push((format!("{form:?} round {round}"), ex, bias));
        }
    }
    // Binary loopy graphs with Potts edges (graph cut's).
    for seed in 0..3 {
        let ex = bmrm::models::graph::synthetic::segmentation(3, 3, 2, seed);
        problems.push((format!("segmentation {seed}"), ex, false));
    }
    for (what, ex, bias) in problems {
        let reference = GraphModel::new(ex.clone(), bias, EngineKind::Exhaustive.into()).unwrap();
        for (at, entry) in ENGINES.iter().enumerate() {
            let Ok(model) = GraphModel::new(ex.clone(), bias, entry.kind.into()) else {
                continue; // a graph this engine refuses
            };
            let name = format!("{} {what}", entry.name);
            if entry.name == "unary" {
                assert_eq!(model.exact(), ex.edges.is_empty(), "{name}");
            }
            said_exact[at] += usize::from(model.exact());
            for _ in 0..4 {
                let mut w: Vec<f64> = (0..model.dim()).map(|_| rng.gen_range(-2.0..2.0)).collect();
                if rng.gen_bool(0.5) {
                    // Submodular Potts edges, half the time.
                    for j in model.positivity_coordinates() {
                        w[j] = w[j].abs();
                    }
                }
                for i in 0..model.num_examples() {
                    let mut c = Corner::new(model.dim());
                    let mut r = Corner::new(model.dim());
                    reference.max_oracle(i, &w, &mut r).unwrap();
                    match model.max_oracle(i, &w, &mut c) {
                        Ok(()) => {}
                        // Graph cut refuses a non-submodular edge.
                        Err(e) if e.kind() == ErrorKind::InvalidArgument => continue,
                        Err(e) => panic!("{name}: {e}"),
                    }
                    assert!(!model.exact() || c.is_exact(), "{name} {i}: not exact");
                    if c.is_exact() {
                        let (h, hr) = (c.hinge(&w), r.hinge(&w));
                        assert!(
                            (h - hr).abs() <= 1e-9 * (1.0 + hr.abs()),
                            "{name} {i}: marked exact with hinge {h}, the optimum {hr}"
                        );
                    }
                }
            }
        }
    }
    for (entry, n) in ENGINES.iter().zip(&said_exact) {
        let promised = !matches!(
            entry.exact,
            bmrm::models::graph::registry::Exactness::WhenProven
                | bmrm::models::graph::registry::Exactness::AsPicked
        );
        assert!(!promised || *n > 0, "{} never said exact", entry.name);
    }
}
