//! The form BCFW holds its blocks' iterates `w_i` in, chosen once per state
//! from how the oracle's corners factor and from the settings
//! ([`BlockForm::choose`]): as vectors (any oracle), as class
//! coefficients ([`ClassBlocks`]) or as per-position label coefficients
//! ([`ChainBlocks`]). Each form carries what only its steps keep: the
//! shrinking of exact steps and, on class blocks, the pass average. What
//! every form shares (`l_i`, the gap estimates, kept corners) stays in
//! [`Block`].

use super::super::blocks::Block;
use super::super::chains::ChainBlocks;
use super::super::classes::ClassBlocks;
use super::average::DualAverage;
use super::chain_steps::chain_steps_fit;
use super::exact::ExactSteps;
use super::kept_exact::KeptExact;
use super::Result;
use crate::oracle::{Factoring, MaxOracle};
use crate::vocab::{Settings, StepType};

/// How the blocks' iterates are held, with the state of the steps only
/// that form takes.
pub(crate) enum BlockForm {
    /// `w_i` in [`Block::w`]; exact steps solve each block's sub-problem
    /// over its kept corners (`kept_exact.rs`), with their shrinking.
    Vectors { exact: Option<KeptExact> },
    /// `w_i` as class coefficients (then [`Block::w`] is unused and kept
    /// corners hold no psi); exact steps solve each block's sub-problem
    /// over all its classes (`exact.rs`), with the pass average of their
    /// dual points (`average.rs`) when a run asks for it.
    Classes {
        blocks: ClassBlocks,
        exact: Option<ExactSteps>,
        average: Option<DualAverage>,
    },
    /// `w_i` as per-position label coefficients (Frank-Wolfe steps only).
    Chains(ChainBlocks),
}

impl BlockForm {
    /// The form for `oracle` under `settings`: class blocks for a
    /// class-factored oracle without a box, stepping one block at a time
    /// (a mini-batch steps towards answers held as vectors, except under
    /// exact steps); chain blocks for a chain-factored oracle without a box
    /// under plain FW steps ([`super::chain_steps::chain_steps_fit`]);
    /// vectors otherwise.
    pub(crate) fn choose(
        oracle: &dyn MaxOracle,
        settings: &Settings,
        boxed: bool,
        n: usize,
    ) -> Result<Self> {
        let exact_steps = settings.step_type == StepType::Exact;
        let class_steps_fit = settings.mini_batch == 0 || exact_steps;
        match oracle.factoring() {
            Factoring::Classes(rows) if !boxed && class_steps_fit => {
                let blocks = ClassBlocks::new(rows, n);
                let exact = exact_steps
                    .then(|| ExactSteps::of_blocks(&blocks, n))
                    .transpose()?;
                return Ok(BlockForm::Classes {
                    blocks,
                    exact,
                    average: None,
                });
            }
            Factoring::Chains(rows) if !boxed && chain_steps_fit(settings) => {
                let chains = ChainBlocks::new(rows, n, oracle.dim())?;
                return Ok(BlockForm::Chains(chains));
            }
            _ => {}
        }
        let exact = exact_steps
            .then(|| KeptExact::new(n, settings))
            .transpose()?;
        Ok(BlockForm::Vectors { exact })
    }

    /// Takes the class or chain rows from `oracle` again, before a pass
    /// that calls it: the state may have been made from another wrapper of
    /// the same oracle (a run's oracle counts its calls, the uncounted one
    /// does not), and the rows make the oracle calls of these forms.
    pub(crate) fn bind(&mut self, oracle: &dyn MaxOracle) {
        if matches!(self, BlockForm::Vectors { .. }) {
            return;
        }
        match (self, oracle.factoring()) {
            (BlockForm::Classes { blocks, .. }, Factoring::Classes(rows)) => blocks.rows = rows,
            (BlockForm::Chains(chains), Factoring::Chains(rows)) => chains.rows = rows,
            _ => {}
        }
    }

    /// The blocks as vectors, for corners that come as vectors (a path's
    /// start, an imported dual). Exact steps on class blocks keep no
    /// corners, so no dual is imported under them.
    pub(crate) fn become_vectors(&mut self) {
        if !matches!(self, BlockForm::Vectors { .. }) {
            debug_assert!(self.class_exact().is_none());
            *self = BlockForm::Vectors { exact: None };
        }
    }

    pub(crate) fn classes(&self) -> Option<&ClassBlocks> {
        match self {
            BlockForm::Classes { blocks, .. } => Some(blocks),
            _ => None,
        }
    }

    pub(crate) fn classes_mut(&mut self) -> Option<&mut ClassBlocks> {
        match self {
            BlockForm::Classes { blocks, .. } => Some(blocks),
            _ => None,
        }
    }

    pub(crate) fn chains(&self) -> Option<&ChainBlocks> {
        match self {
            BlockForm::Chains(chains) => Some(chains),
            _ => None,
        }
    }

    pub(crate) fn chains_mut(&mut self) -> Option<&mut ChainBlocks> {
        match self {
            BlockForm::Chains(chains) => Some(chains),
            _ => None,
        }
    }

    /// The exact steps' state on class blocks.
    pub(crate) fn class_exact(&self) -> Option<&ExactSteps> {
        match self {
            BlockForm::Classes { exact, .. } => exact.as_ref(),
            _ => None,
        }
    }

    /// Takes the exact steps' state on class blocks out while a pass
    /// steps (the steps borrow the rest of the state);
    /// [`Self::put_class_exact`] puts it back.
    pub(crate) fn take_class_exact(&mut self) -> Option<ExactSteps> {
        match self {
            BlockForm::Classes { exact, .. } => exact.take(),
            _ => None,
        }
    }

    pub(crate) fn put_class_exact(&mut self, steps: Option<ExactSteps>) {
        if let BlockForm::Classes { exact, .. } = self {
            *exact = steps;
        }
    }

    /// Takes the exact steps' state on vector blocks out while a pass steps;
    /// [`Self::put_kept_exact`] puts it back.
    pub(crate) fn take_kept_exact(&mut self) -> Option<KeptExact> {
        match self {
            BlockForm::Vectors { exact } => exact.take(),
            _ => None,
        }
    }

    pub(crate) fn put_kept_exact(&mut self, steps: KeptExact) {
        if let BlockForm::Vectors { exact } = self {
            *exact = Some(steps);
        }
    }

    /// Exact steps on vector blocks: they solve each block's sub-problem
    /// over its kept corners, so corners are kept.
    pub(crate) fn keeps_corners_for_exact(&self) -> bool {
        matches!(self, BlockForm::Vectors { exact: Some(_) })
    }

    /// `<w, w_i>` of block `i`, `b`: from its class or chain coefficients
    /// when the form holds them.
    pub(crate) fn dot(&self, b: &Block, i: usize, w: &[f64]) -> f64 {
        match self {
            BlockForm::Vectors { .. } => b.w.dot_dense(w),
            BlockForm::Classes { blocks, .. } => blocks.dot(i, w),
            BlockForm::Chains(chains) => chains.dot(i, w),
        }
    }

    /// Every block the exact steps shrunk is visited again.
    pub(crate) fn unshrink_all(&mut self) {
        match self {
            BlockForm::Vectors { exact: Some(kept) } => kept.unshrink_all(),
            BlockForm::Classes {
                exact: Some(ex), ..
            } => ex.unshrink_all(),
            _ => {}
        }
    }

    /// The bytes the form holds beyond the blocks' shared parts.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            BlockForm::Vectors { exact } => exact.as_ref().map_or(0, KeptExact::bytes),
            BlockForm::Classes {
                blocks,
                exact,
                average,
            } => {
                blocks.bytes()
                    + exact.as_ref().map_or(0, ExactSteps::bytes)
                    + average.as_ref().map_or(0, DualAverage::bytes)
            }
            BlockForm::Chains(chains) => chains.bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BlockForm;
    use crate::models::{synthetic, Chain, Multiclass};
    use crate::oracle::MaxOracle;
    use crate::vocab::{Algorithm, Settings, StepType};

    /// An oracle, its step type, mini-batch and box, and the form wanted.
    type Case<'a> = (&'a dyn MaxOracle, StepType, u32, bool, (&'a str, bool));

    /// The form's name, and whether it keeps exact steps' state.
    fn chosen(oracle: &dyn MaxOracle, step: StepType, batch: u32, boxed: bool) -> (&str, bool) {
        let mut s = Settings::new(Algorithm::Bcfw, 1e-2);
        s.step_type = step;
        s.mini_batch = batch;
        let n = oracle.num_examples();
        match BlockForm::choose(oracle, &s, boxed, n).unwrap() {
            BlockForm::Vectors { exact } => ("vectors", exact.is_some()),
            BlockForm::Classes { exact, .. } => ("classes", exact.is_some()),
            BlockForm::Chains(_) => ("chains", false),
        }
    }

    /// Class blocks for the multiclass model one block at a time (and
    /// under exact steps with mini-batches), chain blocks for the chain
    /// model under plain FW steps only, vectors under a box or otherwise;
    /// exact steps' state with the form that steps them.
    #[test]
    fn the_form_follows_the_factoring_and_the_settings() {
        let (x, y) = synthetic::gaussian_multiclass(12, 3, 3, 1.0, 1);
        let classes = Multiclass::new(x, 3, y, 3, true).unwrap();
        let (values, lengths, labels) = synthetic::markov_chain(6, 3, 4, 2);
        let chains = Chain::dense(values, 4, &lengths, labels, 3, true).unwrap();
        use StepType::{Exact, FrankWolfe, Pairwise};
        let cases: [Case; 10] = [
            (&classes, FrankWolfe, 0, false, ("classes", false)),
            (&classes, Pairwise, 0, false, ("classes", false)),
            (&classes, Exact, 0, false, ("classes", true)),
            (&classes, Exact, 4, false, ("classes", true)),
            (&classes, FrankWolfe, 4, false, ("vectors", false)),
            (&classes, Exact, 0, true, ("vectors", true)),
            (&chains, FrankWolfe, 0, false, ("chains", false)),
            (&chains, Pairwise, 0, false, ("vectors", false)),
            (&chains, Exact, 0, false, ("vectors", true)),
            (&chains, FrankWolfe, 0, true, ("vectors", false)),
        ];
        for (k, (oracle, step, batch, boxed, want)) in cases.into_iter().enumerate() {
            assert_eq!(chosen(oracle, step, batch, boxed), want, "case {k}");
        }
    }
}
