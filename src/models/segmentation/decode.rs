//! Decoding: the segment scores of an example, the loss-augmented
//! semi-Markov programme, the corner it writes, and prediction (see the
//! parent module).

use rayon::prelude::*;

use super::*;

/// No predecessor: the segment is the first.
const FIRST: u32 = u32::MAX;

impl Segmentation {
    /// Fills `s.seg[st K + c]` with the score of every segment `(c, st)`
    /// that fits in example `example` (`-inf` for those that do not).
    fn segment_scores(&self, w: &[f64], example: usize, s: &mut Scratch) {
        let (k, d) = (self.widths.len(), self.d);
        let t_len = self.num_columns(example);
        let cols = self.columns(example);
        s.seg.clear();
        s.seg.resize(t_len * k, f64::NEG_INFINITY);
        for st in 0..t_len {
            for (c, (&wc, &off)) in self.widths.iter().zip(&self.template_offsets).enumerate() {
                if wc <= t_len - st {
                    let x = &cols[st * d..(st + wc) * d];
                    s.seg[st * k + c] = crate::linalg::dot_f32(x, &w[off..off + wc * d]);
                }
            }
        }
    }

    /// Fills `s.count[c (T + 1) + t]` with the columns before `t` of
    /// example `example` whose true label is `c`.
    fn label_counts(&self, example: usize, s: &mut Scratch) {
        let k = self.widths.len();
        let truth = self.column_labels(example);
        let t_len = truth.len();
        s.count.clear();
        s.count.resize(k * (t_len + 1), 0);
        for c in 0..k {
            let row = &mut s.count[c * (t_len + 1)..(c + 1) * (t_len + 1)];
            for (t, &y) in truth.iter().enumerate() {
                row[t + 1] = row[t] + u32::from(y as usize == c);
            }
        }
    }

    /// The semi-Markov programme over the segment scores in `s.seg` of a
    /// sequence of `t_len` columns; with `aug = Some(a)` every wrong column
    /// of a segment adds `a` (the counts in `s.count` must be those of the
    /// example). Writes the best segmentation to `s.path` and returns its
    /// score. The score of a path is accumulated as
    /// `((start + seg_0) + trans) + seg_1 ...`, the order of
    /// [`Segmentation::truth_score`].
    fn best_segmentation(&self, w: &[f64], t_len: usize, aug: Option<f64>, s: &mut Scratch) -> f64 {
        let k = self.widths.len();
        let Scratch {
            seg,
            count,
            best,
            back,
            path,
        } = s;
        best.clear();
        best.resize((t_len + 1) * k, f64::NEG_INFINITY);
        back.clear();
        back.resize((t_len + 1) * k, FIRST);
        let trans = &w[self.trans..self.trans + k * k];
        for t in 1..=t_len {
            for (c, &wc) in self.widths.iter().enumerate() {
                if wc > t {
                    continue;
                }
                let st = t - wc;
                let loss = match aug {
                    Some(a) => {
                        let row = &count[c * (t_len + 1)..];
                        let right = row[t] - row[st];
                        a * (wc - right as usize) as f64
                    }
                    None => 0.0,
                };
                let own = seg[st * k + c] + loss;
                if st == 0 {
                    best[t * k + c] = w[self.start + c] + own;
                    continue;
                }
                // The lowest predecessor label wins ties (strict improvement).
                let mut top = f64::NEG_INFINITY;
                let mut arg = FIRST;
                for b in 0..k {
                    let prev = best[st * k + b];
                    if prev == f64::NEG_INFINITY {
                        continue;
                    }
                    let v = prev + trans[b * k + c];
                    if v > top {
                        top = v;
                        arg = b as u32;
                    }
                }
                if arg != FIRST {
                    best[t * k + c] = top + own;
                    back[t * k + c] = arg;
                }
            }
        }
        let mut top = f64::NEG_INFINITY;
        let mut last = FIRST;
        for c in 0..k {
            let v = best[t_len * k + c];
            if v == f64::NEG_INFINITY {
                continue;
            }
            let v = v + w[self.end + c];
            if v > top {
                top = v;
                last = c as u32;
            }
        }
        path.clear();
        if last == FIRST {
            // No finite path: only non-finite weights get here (the truth
            // is a path); the caller reports it.
            return f64::NAN;
        }
        let (mut t, mut c) = (t_len, last);
        loop {
            let st = t - self.widths[c as usize];
            path.push((c, st));
            let b = back[t * k + c as usize];
            if b == FIRST {
                break;
            }
            (t, c) = (st, b);
        }
        path.reverse();
        top
    }

    /// `<w, phi(x_i, segments)>` from the segment scores in `seg`, added in
    /// the order of the programme.
    fn truth_score(&self, w: &[f64], seg: &[f64], segments: &[(u32, usize)]) -> f64 {
        let k = self.widths.len();
        let mut v = 0.0;
        for (j, &(c, st)) in segments.iter().enumerate() {
            let own = seg[st * k + c as usize] + 0.0;
            v = if j == 0 {
                w[self.start + c as usize] + own
            } else {
                let b = segments[j - 1].0 as usize;
                (v + w[self.trans + b * k + c as usize]) + own
            };
        }
        let last = segments[segments.len() - 1].0 as usize;
        v + w[self.end + last]
    }

    /// Adds `sign` times the columns of segment `(c, st)` of `example` to
    /// its template block, and the transition into it from the segment
    /// before (`prev`), if any.
    fn add_segment(
        &self,
        out: &mut Corner,
        example: usize,
        (c, st): (u32, usize),
        prev: Option<u32>,
        sign: f64,
    ) -> Result<()> {
        let (c, d) = (c as usize, self.d);
        let wc = self.widths[c];
        let cols = &self.columns(example)[st * d..(st + wc) * d];
        out.add_row(self.template_offsets[c], cols, sign)?;
        if let Some(b) = prev {
            out.add(self.transition_index(b as usize, c), sign)?;
        }
        Ok(())
    }

    /// Writes the corner of `yhat` against the ground truth of `example`:
    /// loss, label id and psi restricted to what differs.
    fn write_corner(&self, example: usize, yhat: &[(u32, usize)], out: &mut Corner) -> Result<()> {
        let truth = self.segments(example);
        out.set_label(self.label_id(yhat));
        let wrong = self.wrong_columns(example, yhat);
        if wrong == 0 {
            out.set_loss(0.0);
            return Ok(());
        }
        out.set_loss(wrong as f64 / self.num_columns(example) as f64);
        // Both lists are sorted by start: merge, skipping the segments in
        // both (and their transitions when the segments before agree too).
        let (mut i, mut j) = (0, 0);
        let prev = |segs: &[(u32, usize)], n: usize| n.checked_sub(1).map(|p| segs[p].0);
        while i < truth.len() || j < yhat.len() {
            let ts = truth.get(i).map_or(usize::MAX, |s| s.1);
            let ys = yhat.get(j).map_or(usize::MAX, |s| s.1);
            if ts == ys && truth[i].0 == yhat[j].0 {
                let c = truth[i].0 as usize;
                if let (Some(a), Some(b)) = (prev(truth, i), prev(yhat, j)) {
                    if a != b {
                        out.add(self.transition_index(a as usize, c), 1.0)?;
                        out.add(self.transition_index(b as usize, c), -1.0)?;
                    }
                }
                i += 1;
                j += 1;
            } else if ts <= ys {
                self.add_segment(out, example, truth[i], prev(truth, i), 1.0)?;
                i += 1;
            } else {
                self.add_segment(out, example, yhat[j], prev(yhat, j), -1.0)?;
                j += 1;
            }
        }
        let (t0, y0) = (truth[0].0 as usize, yhat[0].0 as usize);
        if t0 != y0 {
            out.add(self.start_index(t0), 1.0)?;
            out.add(self.start_index(y0), -1.0)?;
        }
        let (tl, yl) = (
            truth[truth.len() - 1].0 as usize,
            yhat[yhat.len() - 1].0 as usize,
        );
        if tl != yl {
            out.add(self.end_index(tl), 1.0)?;
            out.add(self.end_index(yl), -1.0)?;
        }
        Ok(())
    }

    /// The oracle of `example` at `w` (checked by the caller).
    pub(super) fn oracle_in(
        &self,
        example: usize,
        w: &[f64],
        out: &mut Corner,
        s: &mut Scratch,
    ) -> Result<()> {
        let t_len = self.num_columns(example);
        self.segment_scores(w, example, s);
        self.label_counts(example, s);
        let best = self.best_segmentation(w, t_len, Some(1.0 / t_len as f64), s);
        let truth = self.segments(example);
        let gt = self.truth_score(w, &s.seg, truth);
        if !best.is_finite() || !gt.is_finite() {
            return Err(Error::non_finite(format!(
                "{NAME}: the best loss-augmented score is {best} and the ground truth's score \
                 is {gt} for example {example}"
            )));
        }
        if gt >= best {
            out.set_label(self.label_id(truth));
            out.set_loss(0.0);
            return Ok(());
        }
        self.write_corner(example, &s.path, out)
    }

    /// Writes the best segmentation (no loss) of example `example` at `w`
    /// into `out` (cleared first); ties go to the lowest labels, as in the
    /// oracle.
    ///
    /// Errors: a `w` of the wrong length or an example out of range, and
    /// [`Error::non_finite`] when no segmentation has a finite score.
    pub fn predict_into(
        &self,
        w: &[f64],
        example: usize,
        out: &mut Vec<(u32, usize)>,
    ) -> Result<()> {
        check_w_len(NAME, w, self.dim)?;
        check_example(NAME, example, self.num_examples())?;
        with_scratch(&SCRATCH, |s| {
            self.segment_scores(w, example, s);
            let best = self.best_segmentation(w, self.num_columns(example), None, s);
            if !best.is_finite() {
                return Err(Error::non_finite(format!(
                    "{NAME}: the best score of example {example} is {best}"
                )));
            }
            out.clear();
            out.extend_from_slice(&s.path);
            Ok(())
        })
    }

    /// The best segmentation (no loss) of example `example` at `w`, as
    /// `(label, start)` segments; see [`Segmentation::predict_into`].
    pub fn predict(&self, w: &[f64], example: usize) -> Result<Vec<(u32, usize)>> {
        let mut out = Vec::new();
        self.predict_into(w, example, &mut out)?;
        Ok(out)
    }

    /// The columns whose predicted label differs from the truth's, over
    /// all columns of all examples: the report's error measure.
    pub fn column_error(&self, w: &[f64]) -> Result<f64> {
        let wrong: Result<Vec<usize>> = (0..self.num_examples())
            .into_par_iter()
            .map_init(Vec::new, |buf, i| {
                self.predict_into(w, i, buf)?;
                Ok(self.wrong_columns(i, buf))
            })
            .collect();
        let wrong: usize = wrong?.into_iter().sum();
        Ok(wrong as f64 / self.total_columns() as f64)
    }

    /// The columns of example `example` whose label in `segments` (a
    /// segmentation of it) differs from the truth's.
    ///
    /// # Panics
    /// When `segments` runs past the example's columns.
    pub fn wrong_columns(&self, example: usize, segments: &[(u32, usize)]) -> usize {
        let labels = self.column_labels(example);
        segments
            .iter()
            .map(|&(c, st)| {
                let wc = self.widths[c as usize];
                labels[st..st + wc].iter().filter(|&&y| y != c).count()
            })
            .sum()
    }
}
