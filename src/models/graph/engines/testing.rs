//! Random small forests and their potentials, and the check of an engine's
//! labelling against exhaustive search (for the engines' tests).

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::Exhaustive;
use crate::models::graph::{Engine, GraphShape, Grid, Pairwise, Potentials};

/// The kinds of forest the tests draw.
#[derive(Debug, Clone, Copy)]
pub enum Structure {
    /// A path through every node (nodes relabelled at random).
    Chain,
    /// A random tree over every node.
    Tree,
    /// A random tree with some edges dropped: several components.
    Forest,
    /// One node joined to every other.
    Star,
}

impl Structure {
    /// Every structure.
    pub const ALL: [Structure; 4] = [
        Structure::Chain,
        Structure::Tree,
        Structure::Forest,
        Structure::Star,
    ];
}

/// The most labellings a drawn graph has (keeps exhaustive search quick).
const MAX_LABELLINGS: u64 = 20_000;

/// A drawn example, owning what [`Potentials`] borrows.
pub struct Owned {
    states: Vec<u32>,
    edges: Vec<[u32; 2]>,
    unary: Vec<f64>,
    unary_start: Vec<usize>,
    values: Vec<f64>,
    start: Vec<usize>,
    grids: Option<Vec<Grid>>,
    cost: Vec<[f64; 4]>,
}

impl Owned {
    /// The potentials to give an engine.
    pub fn potentials(&self) -> Potentials<'_> {
        Potentials {
            example: 0,
            shape: GraphShape {
                states: &self.states,
                edges: &self.edges,
            },
            unary: &self.unary,
            unary_start: &self.unary_start,
            pairwise: match &self.grids {
                None => Pairwise::Tables {
                    values: &self.values,
                    start: &self.start,
                },
                Some(grids) => Pairwise::Displacement {
                    grids,
                    cost: &self.cost,
                },
            },
        }
    }
}

/// A score: a small integer (ties likely) or a real in `[-2, 2)`.
pub fn draw(rng: &mut ChaCha8Rng, integer: bool) -> f64 {
    if integer {
        f64::from(rng.gen_range(-3i32..=3))
    } else {
        rng.gen_range(-2.0..2.0)
    }
}

/// The edges of a random `structure` over `n` nodes: nodes relabelled at
/// random, each edge in a random direction, the edges in random order.
fn random_edges(rng: &mut ChaCha8Rng, structure: Structure, n: usize) -> Vec<[u32; 2]> {
    let mut edges = Vec::new();
    for i in 1..n {
        let j = match structure {
            Structure::Chain => i - 1,
            Structure::Tree | Structure::Forest => rng.gen_range(0..i),
            Structure::Star => 0,
        };
        if matches!(structure, Structure::Forest) && rng.gen_bool(0.4) {
            continue;
        }
        edges.push([i as u32, j as u32]);
    }
    let mut name: Vec<u32> = (0..n as u32).collect();
    name.shuffle(rng);
    for e in &mut edges {
        *e = [name[e[0] as usize], name[e[1] as usize]];
        if rng.gen_bool(0.5) {
            e.swap(0, 1);
        }
    }
    edges.shuffle(rng);
    edges
}

/// Unary scores for `states`, with their starts.
fn random_unary(rng: &mut ChaCha8Rng, states: &[u32], integer: bool) -> (Vec<f64>, Vec<usize>) {
    let mut unary_start = vec![0];
    let mut unary = Vec::new();
    for &s in states {
        unary.extend((0..s).map(|_| draw(rng, integer)));
        unary_start.push(unary.len());
    }
    (unary, unary_start)
}

/// A random `structure` with 1 to 7 nodes of 1 to `max_states` states and
/// random tables.
pub fn random_tables(rng: &mut ChaCha8Rng, structure: Structure, max_states: u32) -> Owned {
    let n = rng.gen_range(1..=7);
    let states: Vec<u32> = loop {
        let s: Vec<u32> = (0..n).map(|_| rng.gen_range(1..=max_states)).collect();
        if s.iter().map(|&x| u64::from(x)).product::<u64>() <= MAX_LABELLINGS {
            break s;
        }
    };
    let edges = random_edges(rng, structure, n);
    let integer = rng.gen_bool(0.5);
    let (unary, unary_start) = random_unary(rng, &states, integer);
    let mut values = Vec::new();
    let mut start = vec![0];
    for &[u, v] in &edges {
        let size = states[u as usize] * states[v as usize];
        values.extend((0..size).map(|_| draw(rng, integer)));
        start.push(values.len());
    }
    Owned {
        states,
        edges,
        unary,
        unary_start,
        values,
        start,
        grids: None,
        cost: Vec::new(),
    }
}

/// A grid of 1 x 1 to 4 x 3 positions at a random origin.
pub fn random_grid(rng: &mut ChaCha8Rng) -> Grid {
    Grid {
        origin: [rng.gen_range(-4..=4), rng.gen_range(-4..=4)],
        width: rng.gen_range(1..=4),
        height: rng.gen_range(1..=3),
    }
}

/// A quadratic coefficient: positive, zero or negative; an integer when
/// `integer`.
pub fn random_quadratic(rng: &mut ChaCha8Rng, integer: bool) -> f64 {
    match rng.gen_range(0..6) {
        0 => 0.0,
        1 => -draw(rng, false).abs(),
        _ if integer => f64::from(rng.gen_range(1..=3)),
        _ => rng.gen_range(0.01..2.0),
    }
}

/// A random `structure` with 1 to 5 nodes on random grids and random
/// displacement costs (concave, linear and convex).
pub fn random_grids(rng: &mut ChaCha8Rng, structure: Structure) -> Owned {
    let n = rng.gen_range(1..=5);
    let grids: Vec<Grid> = loop {
        let g: Vec<Grid> = (0..n).map(|_| random_grid(rng)).collect();
        let count: u64 = g.iter().map(|g| u64::from(g.width * g.height)).product();
        if count <= MAX_LABELLINGS {
            break g;
        }
    };
    let states: Vec<u32> = grids.iter().map(|g| g.width * g.height).collect();
    let edges = random_edges(rng, structure, n);
    let integer = rng.gen_bool(0.5);
    let (unary, unary_start) = random_unary(rng, &states, integer);
    let cost = edges
        .iter()
        .map(|_| {
            [
                draw(rng, integer) / 2.0,
                draw(rng, integer) / 2.0,
                random_quadratic(rng, integer),
                random_quadratic(rng, integer),
            ]
        })
        .collect();
    Owned {
        states,
        edges,
        unary,
        unary_start,
        values: Vec::new(),
        start: Vec::new(),
        grids: Some(grids),
        cost,
    }
}

impl Owned {
    /// Redraws every grid with up to `width x height` positions (beyond
    /// exhaustive search) and the unary scores to match.
    pub fn enlarge_grids(&mut self, rng: &mut ChaCha8Rng, width: u32, height: u32) {
        let grids = self.grids.as_mut().expect("a displacement example");
        for g in grids.iter_mut() {
            g.width = rng.gen_range(1..=width);
            g.height = rng.gen_range(1..=height);
        }
        self.states = grids.iter().map(|g| g.width * g.height).collect();
        let integer = rng.gen_bool(0.5);
        (self.unary, self.unary_start) = random_unary(rng, &self.states, integer);
    }
}

/// Asserts that `engine` accepts `p`'s shape, calls its answer exact, gives
/// the same labelling twice, and that the labelling's score is exhaustive
/// search's optimum (to 1e-9, relative).
pub fn assert_optimal(engine: &dyn Engine, p: &Potentials, what: &str) {
    let n = p.shape.num_nodes();
    engine.check_shape(&p.shape).unwrap();
    let mut labels = vec![u32::MAX; n];
    assert!(
        engine.maximize(p, &mut labels).unwrap(),
        "{what}: not exact"
    );
    for (i, &y) in labels.iter().enumerate() {
        assert!(y < p.shape.states[i], "{what}: node {i} in state {y}");
    }
    let mut again = vec![u32::MAX; n];
    engine.maximize(p, &mut again).unwrap();
    assert_eq!(labels, again, "{what}: not deterministic");
    let mut reference = vec![0; n];
    Exhaustive.maximize(p, &mut reference).unwrap();
    let (got, best) = (p.score(&labels), p.score(&reference));
    assert!(
        (got - best).abs() <= 1e-9 * best.abs().max(1.0),
        "{what}: {} scores {got}, exhaustive search {best} ({reference:?}) on {:?} {:?}",
        engine.name(),
        p.shape.edges,
        p.shape.states,
    );
}
