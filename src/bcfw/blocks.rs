//! Per-block dual state: `w_i`, `l_i`, and the corners with their weights
//! (the active set of pairwise/away steps and the cache share this storage).

use super::sparse::BlockVec;
use crate::oracle::SparseVec;

/// A corner of block i other than the ground truth: `psi_i(y)` and `L_i(y)`
/// for the label `y` with id `label`, with its dual weight `alpha_i(y)`.
#[derive(Debug, Clone)]
pub struct Atom {
    pub label: u64,
    pub psi: SparseVec,
    pub loss: f64,
    /// `||psi||^2`, kept for the FW step's curvature.
    pub psi_norm2: f64,
    pub alpha: f64,
    /// The block step at which the corner was last the oracle's answer or the
    /// cache's best corner: the eviction score (least recently useful first).
    pub last_used: u64,
    /// The oracle passes completed when the corner was last useful in
    /// that sense (multi-plane drops corners unused for a number of passes).
    pub used_pass: u64,
}

/// One example's share of the dual.
#[derive(Debug, Clone)]
pub struct Block {
    /// `w_i = (1/(lambda n)) sum_y alpha_i(y) psi_i(y)`.
    pub w: BlockVec,
    /// `||w_i||^2`, kept up to date by the steps.
    pub w_norm2: f64,
    /// `l_i = (1/n) sum_y alpha_i(y) L_i(y)`.
    pub l: f64,
    /// `alpha_i(y_i)`: the ground truth's weight (its psi and loss are 0).
    pub truth_alpha: f64,
    /// The other corners kept: active ones (`alpha > 0`) and, with the cache,
    /// inactive ones.
    pub atoms: Vec<Atom>,
    /// The last computed gap of the block (infinity: never computed).
    pub gap_estimate: f64,
}

impl Block {
    pub fn new() -> Self {
        Block {
            w: BlockVec::default(),
            w_norm2: 0.0,
            l: 0.0,
            truth_alpha: 1.0,
            atoms: Vec::new(),
            gap_estimate: f64::INFINITY,
        }
    }

    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Block>()
            + self.w.bytes()
            + self.atoms.capacity() * std::mem::size_of::<Atom>()
            + self.atoms.iter().map(|a| a.psi.bytes()).sum::<usize>()
    }

    pub fn active_atoms(&self) -> usize {
        self.atoms.iter().filter(|a| a.alpha > 0.0).count() + usize::from(self.truth_alpha > 0.0)
    }

    /// The atom with this label id, if kept.
    pub fn find(&self, label: u64) -> Option<usize> {
        self.atoms.iter().position(|a| a.label == label)
    }

    /// Removes inactive atoms beyond `keep` inactive ones, least recently
    /// used first; active atoms always stay (the dual needs them).
    pub fn evict(&mut self, keep: usize) {
        let inactive = self.atoms.iter().filter(|a| a.alpha <= 0.0).count();
        if inactive <= keep {
            return;
        }
        let mut scores: Vec<u64> = self
            .atoms
            .iter()
            .filter(|a| a.alpha <= 0.0)
            .map(|a| a.last_used)
            .collect();
        scores.sort_unstable();
        // Evict the (inactive - keep) oldest; ties broken by position.
        let threshold = scores[inactive - keep - 1];
        let mut to_drop = inactive - keep;
        let mut older = scores.iter().filter(|&&s| s < threshold).count();
        self.atoms.retain(|a| {
            if to_drop == 0 || a.alpha > 0.0 {
                return true;
            }
            if a.last_used < threshold {
                older -= 1;
                to_drop -= 1;
                false
            } else if a.last_used == threshold && to_drop > older {
                to_drop -= 1;
                false
            } else {
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_keeps_active_atoms_and_drops_the_oldest_inactive() {
        let mut b = Block::new();
        for (label, alpha, used) in [
            (1, 0.0, 5),
            (2, 0.3, 1),
            (3, 0.0, 2),
            (4, 0.0, 9),
            (5, 0.0, 2),
        ] {
            b.atoms.push(Atom {
                label,
                psi: SparseVec::default(),
                loss: 1.0,
                psi_norm2: 0.0,
                alpha,
                last_used: used,
                used_pass: 0,
            });
        }
        b.evict(2);
        let mut left: Vec<u64> = b.atoms.iter().map(|a| a.label).collect();
        left.sort();
        assert_eq!(left, vec![1, 2, 4]);
    }
}
