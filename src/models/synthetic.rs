//! Seeded Gaussian data for tests, benchmarks and demos.
//!
//! Every generator draws from `ChaCha8Rng::seed_from_u64(seed)`, so the same
//! arguments give the same data on every platform and run. Features are
//! returned row-major (`m x d`) as `f32`, the layout [`super::Multiclass`]
//! and [`super::BinaryHinge`] take.
//!
//! The data are Gaussian clouds of unit variance per coordinate around class
//! means at distance about `separation` from each other. With `m` well above
//! `d` the classes overlap and the problem is not linearly separable unless
//! `separation` is large (a few units gives a few percent of errors; 0 gives
//! pure noise). Note that any `m <= d` points in general position are
//! separable whatever the separation.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One standard normal draw (Box-Muller; one of the pair is discarded so that
/// the stream of draws does not depend on call parity).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    // u1 in (0, 1] so that ln(u1) is finite.
    let u1 = 1.0 - rng.gen::<f64>();
    let u2 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A random unit vector of dimension `d` (uniform on the sphere).
fn unit_vector(rng: &mut ChaCha8Rng, d: usize) -> Vec<f64> {
    loop {
        let v: Vec<f64> = (0..d).map(|_| normal(rng)).collect();
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if n > 1e-12 {
            return v.into_iter().map(|x| x / n).collect();
        }
    }
}

/// Labels `i % k` for `i` in `0..m`, shuffled: every class gets `m / k` or
/// `m / k + 1` examples, in random order.
fn balanced_labels(rng: &mut ChaCha8Rng, m: usize, k: usize) -> Vec<usize> {
    let mut labels: Vec<usize> = (0..m).map(|i| i % k).collect();
    labels.shuffle(rng);
    labels
}

/// `m` examples of dimension `d` in `k` classes: returns the row-major
/// features (`m x d`) and the labels in `0..k`.
///
/// Class `c` has mean `separation / sqrt(2) * u_c` with `u_c` a random unit
/// vector, so two class means are about `separation` apart when `d` is large
/// (random directions are nearly orthogonal); each example is its class mean
/// plus standard normal noise. Classes are balanced (sizes differ by at most
/// one) and the examples come in random order.
///
/// # Panics
/// When `d == 0` or `k == 0`.
pub fn gaussian_multiclass(
    m: usize,
    d: usize,
    k: usize,
    separation: f64,
    seed: u64,
) -> (Vec<f32>, Vec<usize>) {
    assert!(d > 0, "gaussian_multiclass: d must be at least 1");
    assert!(k > 0, "gaussian_multiclass: k must be at least 1");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let scale = separation / std::f64::consts::SQRT_2;
    let means: Vec<Vec<f64>> = (0..k)
        .map(|_| {
            unit_vector(&mut rng, d)
                .into_iter()
                .map(|u| scale * u)
                .collect()
        })
        .collect();
    let labels = balanced_labels(&mut rng, m, k);
    let mut features = Vec::with_capacity(m * d);
    for &y in &labels {
        for mu in &means[y] {
            features.push((mu + normal(&mut rng)) as f32);
        }
    }
    (features, labels)
}

/// `m` examples of dimension `d` with labels `±1.0`: returns the row-major
/// features (`m x d`) and the labels.
///
/// The class means are `±(separation / 2) u` for one random unit vector `u`
/// (so they are exactly `separation` apart); each example is its class mean
/// plus standard normal noise. The Bayes error is `Phi(-separation / 2)`.
/// Classes are balanced and the examples come in random order.
///
/// # Panics
/// When `d == 0`.
pub fn gaussian_binary(m: usize, d: usize, separation: f64, seed: u64) -> (Vec<f32>, Vec<f64>) {
    assert!(d > 0, "gaussian_binary: d must be at least 1");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let u = unit_vector(&mut rng, d);
    let half = separation / 2.0;
    let labels: Vec<f64> = balanced_labels(&mut rng, m, 2)
        .into_iter()
        .map(|c| if c == 1 { 1.0 } else { -1.0 })
        .collect();
    let mut features = Vec::with_capacity(m * d);
    for &y in &labels {
        for uj in &u {
            features.push((y * half * uj + normal(&mut rng)) as f32);
        }
    }
    (features, labels)
}

/// A sequence-labelling problem with learnable structure: `m` sequences of
/// 2..=7 tokens, `k` labels following a Markov chain (the next label is the
/// successor with probability 0.7, else uniform), each token's `d` features
/// its label's mean (uniform in [-1, 1)) plus uniform noise in [-1, 1).
/// Returns the token features (row-major `f32`), the sequence lengths and
/// the labels, the inputs of [`super::Chain::dense`].
pub fn markov_chain(m: usize, k: usize, d: usize, seed: u64) -> (Vec<f32>, Vec<usize>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let means: Vec<Vec<f64>> = (0..k)
        .map(|_| (0..d).map(|_| rng.gen_range(-1.0..1.0)).collect())
        .collect();
    let mut lengths = Vec::with_capacity(m);
    let mut labels = Vec::new();
    let mut values = Vec::new();
    for _ in 0..m {
        let len = rng.gen_range(2..8);
        lengths.push(len);
        let mut y = rng.gen_range(0..k);
        for _ in 0..len {
            labels.push(y as u32);
            for mean in &means[y] {
                values.push((mean + rng.gen_range(-1.0..1.0)) as f32);
            }
            y = if rng.gen_bool(0.7) {
                (y + 1) % k
            } else {
                rng.gen_range(0..k)
            };
        }
    }
    (values, lengths, labels)
}
