//! Seeded synthetic licence plates for the segmentation model: the shape of
//! the report's licence-plate problem, generated in code.
//!
//! Every plate draws from `ChaCha8Rng::seed_from_u64(seed)`, so the same
//! arguments give the same plates on every platform and run.
//!
//! Label 0 is the background, of width 1: a column of zeros. Labels
//! `1..=chars` are characters, each of a width drawn uniformly from
//! `min_width..=max_width` and a template of `width x rows` pixels, each 0
//! or 1 with probability 1/2 (a random glyph). A plate is a random string of
//! `min_len..=max_len` characters, with `0..=max_gap` background columns
//! before, between and after the characters (a gap of 0 puts two characters
//! side by side, which only the widths and templates separate). Every pixel
//! of a plate is its glyph's value times the plate's contrast (uniform in
//! `[0.7, 1.3]`) plus Gaussian noise of standard deviation `noise`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Segmentation, SegmentedSequence};
use crate::error::Result;

/// The shape of the generated plates.
#[derive(Debug, Clone, PartialEq)]
pub struct PlateConfig {
    /// Character labels (the background is one more label).
    pub chars: usize,
    /// Narrowest character, in columns (at least 1).
    pub min_width: usize,
    /// Widest character, in columns.
    pub max_width: usize,
    /// Pixels per column: the feature dimension `d`.
    pub rows: usize,
    /// Fewest characters on a plate (at least 1).
    pub min_len: usize,
    /// Most characters on a plate.
    pub max_len: usize,
    /// Most background columns in a gap.
    pub max_gap: usize,
    /// Standard deviation of the pixel noise.
    pub noise: f64,
}

impl Default for PlateConfig {
    /// 30 characters of 3..=7 columns of 16 pixels, plates of 5..=8
    /// characters with gaps of 0..=2 columns, noise 1: `n = 16 (1 + sum of
    /// widths) + 31^2 + 62`, about 3,450 weights (the report's problem has
    /// 4,059).
    fn default() -> Self {
        PlateConfig {
            chars: 30,
            min_width: 3,
            max_width: 7,
            rows: 16,
            min_len: 5,
            max_len: 8,
            max_gap: 2,
            noise: 1.0,
        }
    }
}

/// Generated plates: everything [`Segmentation::new`] takes.
#[derive(Debug, Clone)]
pub struct Plates {
    /// Features per column.
    pub d: usize,
    /// The width of every label (label 0, the background, has width 1).
    pub widths: Vec<usize>,
    /// The plates.
    pub examples: Vec<SegmentedSequence>,
}

impl Plates {
    /// The segmentation model over these plates.
    pub fn model(&self) -> Result<Segmentation> {
        Segmentation::new(self.d, self.widths.clone(), &self.examples)
    }
}

/// One standard normal draw (Box-Muller, one of the pair discarded).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = 1.0 - rng.gen::<f64>();
    let u2 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `m` plates of the shape `config` (see the module documentation). The
/// templates and widths depend on `seed` only, not on `m`: two calls with
/// one seed and different `m` share their characters, and the first plates.
///
/// Errors: [`crate::Error::invalid_argument`] for `chars = 0`, `rows = 0`,
/// `min_width = 0`, `min_len = 0`, a minimum above its maximum, or a
/// negative or non-finite `noise`.
pub fn licence_plates(m: usize, seed: u64, config: &PlateConfig) -> Result<Plates> {
    let c = config;
    let bad = |m: &str| {
        Err(crate::Error::invalid_argument(format!(
            "licence_plates: {m} (config {c:?})"
        )))
    };
    if c.chars == 0 || c.rows == 0 {
        return bad("chars and rows must be at least 1");
    }
    if c.min_width == 0 || c.min_width > c.max_width {
        return bad("the widths must satisfy 1 <= min_width <= max_width");
    }
    if c.min_len == 0 || c.min_len > c.max_len {
        return bad("the lengths must satisfy 1 <= min_len <= max_len");
    }
    if !c.noise.is_finite() || c.noise < 0.0 {
        return bad("noise must be finite and non-negative");
    }
    let d = c.rows;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut widths = vec![1usize];
    widths.extend((0..c.chars).map(|_| rng.gen_range(c.min_width..=c.max_width)));
    // Template of label l: widths[l] x d pixels, column after column.
    let templates: Vec<Vec<f64>> = widths
        .iter()
        .enumerate()
        .map(|(l, &w)| {
            (0..w * d)
                .map(|_| if l > 0 && rng.gen_bool(0.5) { 1.0 } else { 0.0 })
                .collect()
        })
        .collect();
    let mut examples = Vec::with_capacity(m);
    for _ in 0..m {
        let len = rng.gen_range(c.min_len..=c.max_len);
        let contrast = rng.gen_range(0.7..1.3);
        let mut segments = Vec::new();
        let mut pos = 0usize;
        let gap = |rng: &mut ChaCha8Rng, segments: &mut Vec<(u32, usize)>, pos: &mut usize| {
            for _ in 0..rng.gen_range(0..=c.max_gap) {
                segments.push((0u32, *pos));
                *pos += 1;
            }
        };
        for _ in 0..len {
            gap(&mut rng, &mut segments, &mut pos);
            let l = rng.gen_range(1..=c.chars);
            segments.push((l as u32, pos));
            pos += widths[l];
        }
        gap(&mut rng, &mut segments, &mut pos);
        let mut columns = Vec::with_capacity(pos * d);
        for &(l, _) in &segments {
            for &v in &templates[l as usize] {
                columns.push((contrast * v + c.noise * normal(&mut rng)) as f32);
            }
        }
        examples.push(SegmentedSequence { columns, segments });
    }
    Ok(Plates {
        d,
        widths,
        examples,
    })
}
