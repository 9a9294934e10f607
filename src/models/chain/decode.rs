//! Decoding: the emission scores of a sequence, loss-augmented Viterbi,
//! the corner it writes, and prediction (see the parent module).

use rayon::prelude::*;

use super::*;

impl Chain {
    /// Fills `emit[t K + y]` with the emission scores of the tokens `toks`.
    pub(super) fn emission_scores(
        &self,
        w: &[f64],
        toks: std::ops::Range<usize>,
        emit: &mut Vec<f64>,
    ) {
        let k = self.k;
        emit.clear();
        emit.resize(toks.len() * k, 0.0);
        match &*self.features {
            ChainFeatures::Dense { values, d } => {
                let d = *d;
                let rows: Vec<&[f32]> = toks.map(|tok| &values[tok * d..(tok + 1) * d]).collect();
                crate::models::class_scores(&rows, w, k, d, self.bias, emit);
            }
            ChainFeatures::Sparse(rows) => {
                let bias_row = rows.num_cols() * k;
                for (t, tok) in toks.enumerate() {
                    let e = &mut emit[t * k..(t + 1) * k];
                    if self.bias {
                        e.copy_from_slice(&w[bias_row..bias_row + k]);
                    }
                    let (idx, val) = rows.row(tok);
                    for (&j, &x) in idx.iter().zip(val) {
                        let x = f64::from(x);
                        let v = &w[j as usize * k..(j as usize + 1) * k];
                        for (ey, vy) in e.iter_mut().zip(v) {
                            *ey += vy * x;
                        }
                    }
                }
            }
        }
    }

    /// Viterbi over the emission scores in `s.emit`, with `aug` added to
    /// every label other than `truth[t]` when `truth` is given: the shared
    /// path programme ([`crate::models::path`]) with the start biases on the
    /// first token, the transition table on every step and the end biases
    /// after the last. Writes the best path to `s.dp.path` and returns its
    /// score.
    pub(super) fn viterbi(
        &self,
        w: &[f64],
        len: usize,
        truth: Option<&[u32]>,
        aug: f64,
        s: &mut Scratch,
    ) -> f64 {
        let k = self.k;
        let Scratch { emit, dp } = s;
        let emit: &[f64] = emit;
        let trans = &w[self.trans..self.trans + k * k];
        let bonus = |t: usize, y: usize| match truth {
            Some(g) if g[t] as usize != y => aug,
            _ => 0.0,
        };
        let start = &w[self.start..self.start + k];
        let end = &w[self.end..self.end + k];
        dp.run(
            len,
            k,
            |t, cur| {
                let e = &emit[t * k..(t + 1) * k];
                if t == 0 {
                    for y in 0..k {
                        cur[y] = start[y] + e[y] + bonus(0, y);
                    }
                } else {
                    for y in 0..k {
                        cur[y] += e[y] + bonus(t, y);
                    }
                }
            },
            |_| trans,
            |y| end[y],
        )
    }

    /// `<w, phi(x_i, labels)>` from the emission scores in `emit`.
    pub(super) fn path_score(&self, w: &[f64], emit: &[f64], labels: &[u32]) -> f64 {
        let k = self.k;
        let mut s =
            w[self.start + labels[0] as usize] + w[self.end + labels[labels.len() - 1] as usize];
        for (t, &y) in labels.iter().enumerate() {
            s += emit[t * k + y as usize];
            if t > 0 {
                s += w[self.trans + labels[t - 1] as usize * k + y as usize];
            }
        }
        s
    }

    /// Adds `sign * emission(x_tok)` for `label` to the corner.
    pub(super) fn add_emission(
        &self,
        out: &mut Corner,
        tok: usize,
        label: usize,
        sign: f64,
    ) -> Result<()> {
        match &*self.features {
            ChainFeatures::Dense { values, d } => {
                let x = &values[tok * d..(tok + 1) * d];
                crate::models::add_class_row(out, label * self.de, x, self.bias, sign)?;
            }
            ChainFeatures::Sparse(rows) => {
                let (idx, val) = rows.row(tok);
                for (&j, &v) in idx.iter().zip(val) {
                    out.add(j as usize * self.k + label, sign * f64::from(v))?;
                }
                if self.bias {
                    out.add(rows.num_cols() * self.k + label, sign)?;
                }
            }
        }
        Ok(())
    }

    /// Writes the corner of `yhat` against the ground truth of `example`:
    /// loss, label id and psi restricted to what differs.
    pub(super) fn write_corner(
        &self,
        example: usize,
        yhat: &[u32],
        out: &mut Corner,
    ) -> Result<()> {
        let toks = self.tokens(example);
        let truth = &self.labels[toks.clone()];
        let len = truth.len();
        let wrong = truth.iter().zip(yhat).filter(|(a, b)| a != b).count();
        out.set_label(sequence_id(self.k, yhat));
        if wrong == 0 {
            out.set_loss(0.0);
            return Ok(());
        }
        out.set_loss(wrong as f64 / len as f64);
        for (t, tok) in toks.enumerate() {
            let (a, b) = (truth[t] as usize, yhat[t] as usize);
            if a != b {
                self.add_emission(out, tok, a, 1.0)?;
                self.add_emission(out, tok, b, -1.0)?;
            }
            if t > 0 {
                let (pa, pb) = (truth[t - 1] as usize, yhat[t - 1] as usize);
                if (pa, a) != (pb, b) {
                    out.add(self.transition_index(pa, a), 1.0)?;
                    out.add(self.transition_index(pb, b), -1.0)?;
                }
            }
        }
        if truth[0] != yhat[0] {
            out.add(self.start_index(truth[0] as usize), 1.0)?;
            out.add(self.start_index(yhat[0] as usize), -1.0)?;
        }
        if truth[len - 1] != yhat[len - 1] {
            out.add(self.end_index(truth[len - 1] as usize), 1.0)?;
            out.add(self.end_index(yhat[len - 1] as usize), -1.0)?;
        }
        Ok(())
    }

    /// The oracle on the emission scores already in `s.emit`.
    pub(super) fn oracle_in(
        &self,
        example: usize,
        w: &[f64],
        out: &mut Corner,
        s: &mut Scratch,
    ) -> Result<()> {
        let toks = self.tokens(example);
        let len = toks.len();
        let truth = &self.labels[toks];
        let aug = 1.0 / len as f64;
        let best = self.viterbi(w, len, Some(truth), aug, s);
        let gt = self.path_score(w, &s.emit, truth);
        if !best.is_finite() || !gt.is_finite() {
            return Err(Error::non_finite(format!(
                "{NAME}: the Viterbi score is {best} and the ground truth's score is {gt} \
                 for example {example}"
            )));
        }
        if gt >= best {
            out.set_label(sequence_id(self.k, truth));
            out.set_loss(0.0);
            return Ok(());
        }
        self.write_corner(example, &s.dp.path, out)
    }

    /// The max-oracle and the plain prediction (Viterbi without the loss) of
    /// `example` at `w` in one call, sharing the emission scores (most of the
    /// work for dense features): what BCFW's regularisation path needs.
    pub fn max_oracle_and_predict(
        &self,
        example: usize,
        w: &[f64],
        out: &mut Corner,
        prediction: &mut Vec<u32>,
    ) -> Result<()> {
        check_w_len(NAME, w, self.dim)?;
        check_example(NAME, example, self.num_examples())?;
        with_scratch(&SCRATCH, |s| {
            self.emission_scores(w, self.tokens(example), &mut s.emit);
            let len = self.tokens(example).len();
            self.viterbi(w, len, None, 0.0, s);
            prediction.clear();
            prediction.extend_from_slice(&s.dp.path);
            self.oracle_in(example, w, out, s)
        })
    }

    /// Writes the plain Viterbi labelling (no loss) of sequence `example`
    /// at `w` into `out` (cleared first); ties go to the lowest labels.
    ///
    /// # Panics
    /// When `w.len() != dim()` or `example` is out of range.
    pub fn predict_into(&self, w: &[f64], example: usize, out: &mut Vec<u32>) {
        assert_eq!(w.len(), self.dim, "{NAME}: w has the wrong length");
        let toks = self.tokens(example);
        with_scratch(&SCRATCH, |s| {
            self.emission_scores(w, toks.clone(), &mut s.emit);
            self.viterbi(w, toks.len(), None, 0.0, s);
            out.clear();
            out.extend_from_slice(&s.dp.path);
        });
    }

    /// The plain Viterbi labelling (no loss) of sequence `example` at `w`.
    ///
    /// # Panics
    /// When `w.len() != dim()` or `example` is out of range.
    pub fn predict(&self, w: &[f64], example: usize) -> Vec<u32> {
        let mut out = Vec::new();
        self.predict_into(w, example, &mut out);
        out
    }

    /// The predicted labels of every token, sequence after sequence.
    ///
    /// # Panics
    /// When `w.len() != dim()`.
    pub fn predict_all(&self, w: &[f64]) -> Vec<u32> {
        let per: Vec<Vec<u32>> = (0..self.num_examples())
            .into_par_iter()
            .map(|i| self.predict(w, i))
            .collect();
        per.concat()
    }

    /// The **per-token** (per-letter) error of the plain prediction: wrong
    /// tokens over all tokens of this model's sequences, the figure the
    /// OCR papers report. (For a test set, build a second `Chain` over it.)
    ///
    /// # Panics
    /// When `w.len() != dim()`.
    pub fn hamming_error(&self, w: &[f64]) -> f64 {
        assert_eq!(w.len(), self.dim, "{NAME}: w has the wrong length");
        let wrong: usize = (0..self.num_examples())
            .into_par_iter()
            .map_init(Vec::new, |buf, i| {
                self.predict_into(w, i, buf);
                buf.iter()
                    .zip(self.labels(i))
                    .filter(|(a, b)| a != b)
                    .count()
            })
            .sum();
        wrong as f64 / self.num_tokens() as f64
    }
}
