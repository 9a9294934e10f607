"""Native versions of pystruct's ``MultiClassClf`` and ``ChainCRF`` (and
bmrm's own chain with start and end weights, ``StartEndChainCRF``).

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
from ._protocol import is_sparse as _is_sparse
from .graph_models import (  # noqa: F401  (pystruct's graph models, re-exported)
    BinaryClf, DirectionalGridCRF, EdgeFeatureGraphCRF, GraphCRF, GridCRF, MultiLabelClf)


def _labels(model: str, y: Any, what: str) -> np.ndarray:
    """``y`` as int64 labels, refused (naming ``what``) unless every entry is
    a non-negative whole number: a float label is never truncated."""
    a = np.asarray(y)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{model}: {what} must hold integer labels, got dtype {a.dtype}")
    flat = a.ravel()
    ok = np.isfinite(flat) & (flat >= 0) & (flat == np.floor(flat)) if a.dtype.kind == "f" else flat >= 0
    if not np.all(ok):
        j = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"{model}: {what} element {j} is {flat[j]}, expected a non-negative integer")
    return flat.astype(np.int64)


def _shape2d(model: str, x: Any, what: str) -> tuple:
    """The ``(rows, columns)`` of a 2-D array or sparse matrix ``x``."""
    shape = x.shape if _is_sparse(x) else np.shape(x)
    if len(shape) != 2:
        raise ValueError(f"{model}: {what} must be a 2-D array (rows, n_features), got shape {shape}")
    return int(shape[0]), int(shape[1])


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
    class_weight : None or array-like, optional
        pystruct's loss weights, one per class: the loss of predicting
        ``y_hat`` for ``y`` is ``class_weight[y] * (y != y_hat)`` (and
        ``max_loss(y) = class_weight[y]``). The oracle then runs in Python
        over the protocol methods (the Rust model has the 0/1 loss).
    rescale_C : bool
        Must be False (pystruct's per-class ``C`` is not supported).
    """

    def __init__(
        self,
        n_features: Optional[int] = None,
        n_classes: Optional[int] = None,
        class_weight: Any = None,
        rescale_C: bool = False,
    ) -> None:
        if class_weight is not None:
            cw = np.asarray(class_weight, dtype=np.float64)
            if cw.ndim != 1 or not np.all(np.isfinite(cw)) or np.any(cw < 0):
                raise ValueError("MultiClassClf: class_weight must be a 1-D array of finite, "
                                 f"non-negative weights, got {class_weight!r}")
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
            if self.class_weight is not None and len(self.class_weight) != self.n_classes:
                raise ValueError(f"MultiClassClf: class_weight has {len(self.class_weight)} "
                                 f"entries, expected n_classes={self.n_classes}")

    def _weight_of(self, y: Any) -> Any:
        """``class_weight[y]`` (1 without class weights)."""
        if self.class_weight is None:
            return np.ones(np.shape(y)) if np.ndim(y) else 1.0
        return np.asarray(self.class_weight, dtype=np.float64)[np.asarray(y, dtype=np.int64)]

    def __repr__(self) -> str:
        cw = "" if self.class_weight is None else f", class_weight={list(self.class_weight)!r}"
        return f"MultiClassClf(n_features={self.n_features}, n_classes={self.n_classes}{cw})"

    def _check(self, X: Any, Y: Sequence[int]) -> np.ndarray:
        """Refuses an empty ``X``, a ``Y`` of another length and non-integral
        labels (naming them); returns the labels as int64."""
        n, _ = _shape2d("MultiClassClf", X, "X")
        if n == 0:
            raise ValueError("MultiClassClf: X is empty; expected a 2-D array or sparse matrix of "
                             "shape (n_samples, n_features) with n_samples >= 1")
        y = _labels("MultiClassClf", Y, "Y")
        if np.ndim(Y) != 1 or len(y) != n:
            raise ValueError(f"MultiClassClf: X has {n} rows but Y has shape {np.shape(Y)}; "
                             f"expected Y of shape ({n},)")
        return y

    def initialize(self, X: Any, Y: Sequence[int]) -> None:
        """Takes the sizes from the data when they were not given."""
        y = self._check(X, Y)
        n_features = _shape2d("MultiClassClf", X, "X")[1]
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(
                f"MultiClassClf: X has {n_features} features, the model was given n_features="
                f"{self.n_features}"
            )
        n_classes = int(np.max(y)) + 1
        if self.n_classes is None:
            self.n_classes = n_classes
        elif self.n_classes < n_classes:
            raise ValueError(
                f"MultiClassClf: Y has label {n_classes - 1} but n_classes={self.n_classes}"
            )
        self._set_size()

    @property
    def _native(self) -> Any:
        """The Rust model's builder (the 0/1 loss), or None with class
        weights other than all ones: the learners then use the protocol
        methods."""
        cw = self.class_weight
        return self._native_model if cw is None or np.all(np.asarray(cw) == 1) else None

    def _native_model(self, X: Any, Y: Sequence[int]) -> MulticlassModel:
        """The model over ``(X, Y)`` whose oracle runs in Rust."""
        y = self._check(X, Y)
        X = X if _is_sparse(X) else np.asarray(X)
        return MulticlassModel(X, y, num_classes=self.n_classes, bias=False)

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
        X = X.tocsr() if _is_sparse(X) else np.asarray(X)  # COO cannot select rows
        for c in range(self.n_classes):
            rows = X[Y == c]
            out[c] = np.asarray(rows.sum(axis=0)).ravel()
        return out.ravel()

    def _scores(self, X: Any, w: np.ndarray) -> np.ndarray:
        W = self._weights(w)
        return np.asarray(X @ W.T)

    def inference(self, x: Any, w: np.ndarray, relaxed: Any = None,
                  return_energy: bool = False) -> Any:
        """The best class; with ``return_energy`` also its score ``<w, psi(x, y)>``."""
        scores = self._scores(np.atleast_2d(x) if not _is_sparse(x) else x, w).ravel()
        y = int(np.argmax(scores))
        return (y, float(scores[y])) if return_energy else y

    def batch_inference(self, X: Any, w: np.ndarray, relaxed: Any = None) -> np.ndarray:
        return np.argmax(self._scores(X, w), axis=1)

    def loss_augmented_inference(self, x: Any, y: int, w: np.ndarray, relaxed: Any = None,
                                 return_energy: bool = False) -> Any:
        """The class of highest score plus loss (pystruct's sum: the class
        weight of ``y`` added to the other classes only); with
        ``return_energy`` also that value."""
        y = int(y)
        cw = float(self._weight_of(y))
        if isinstance(x, np.ndarray) and x.ndim == 1:
            # One dense example (SubgradientSSVM's step), least overhead.
            scores = self._weights(w) @ x
        else:
            scores = self._scores(np.atleast_2d(x) if not _is_sparse(x) else x, w).ravel()
        truth = scores[y]
        scores = scores + cw
        scores[y] = truth
        y_hat = int(np.argmax(scores))
        return (y_hat, float(scores[y_hat])) if return_energy else y_hat

    def batch_loss_augmented_inference(
        self, X: Any, Y: Sequence[int], w: np.ndarray, relaxed: Any = None
    ) -> np.ndarray:
        scores = self._scores(X, w)
        rows, Y = np.arange(scores.shape[0]), np.asarray(Y, dtype=np.int64)
        cw = self._weight_of(Y)
        truth = scores[rows, Y]
        scores += cw[:, None]  # pystruct's sum: the loss added to the other classes only
        scores[rows, Y] = truth
        return np.argmax(scores, axis=1)

    def loss(self, y: int, y_hat: int) -> float:
        return float(self._weight_of(int(y))) * float(int(y) != int(y_hat))

    def batch_loss(self, Y: Sequence[int], Y_hat: Sequence[int]) -> np.ndarray:
        Y = np.asarray(Y, dtype=np.int64)
        return self._weight_of(Y) * (Y != np.asarray(Y_hat)).astype(np.float64)

    def max_loss(self, y: int) -> float:
        return float(self._weight_of(int(y)))


_CHAIN_EDGES: dict = {}


def _chain_edges(n: int) -> np.ndarray:
    """The edges ``(j, j + 1)`` of a chain of ``n`` tokens, read-only and kept
    per length (SubgradientSSVM asks for one word's at every step)."""
    edges = _CHAIN_EDGES.get(n)
    if edges is None:
        edges = np.empty((max(n - 1, 0), 2), dtype=np.int64)
        edges[:, 0] = np.arange(n - 1)
        edges[:, 1] = edges[:, 0] + 1
        edges.flags.writeable = False
        _CHAIN_EDGES[n] = edges
    return edges


class ChainCRF(GraphCRF):
    """pystruct's ``ChainCRF``: a ``GraphCRF`` over the chain of a word's
    tokens (edges ``(t, t + 1)``), directed by default.

    ``X`` is a list of ``(n_tokens, n_features)`` arrays, ``Y`` a list of
    label arrays. ``w`` is pystruct's: the emission block (``n_states x
    n_features``, state-major), then the transition table (``n_states x
    n_states``, rows the earlier token; with ``directed=False`` its lower
    triangle, as ``GraphCRF``); the loss is the Hamming loss (unnormalised,
    weighted by ``class_weight[y_true]``). Decoded in Rust by the core's
    graph model: ``None`` and ``'max-product'`` run exact max-sum on the
    chain; every ``inference_method`` of ``GraphCRF`` is accepted.

    bmrm's extensions, explicit: ``normalized_loss=True`` divides the loss by
    the word's length (``max_loss`` 1); ``start_end=True`` (with
    ``normalized_loss=True``) is bmrm's native chain, a
    :class:`StartEndChainCRF` (a start and an end weight per label,
    Viterbi in Rust: ``size_joint_feature = n_states * n_features +
    n_states**2 + 2 * n_states``).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        start_end = kwargs.get("start_end", args[5] if len(args) > 5 else False)
        if start_end:
            # ChainCRF's defaults, not StartEndChainCRF's: normalized_loss
            # must be asked for too.
            kwargs.setdefault("normalized_loss", args[6] if len(args) > 6 else False)
            model = object.__new__(StartEndChainCRF)
            model.__init__(*args[:6], **kwargs)
            return model
        return object.__new__(cls)

    def __init__(self, n_states: Optional[int] = None, n_features: Optional[int] = None,
                 inference_method: Any = None, class_weight: Any = None,
                 directed: bool = True, start_end: bool = False,
                 normalized_loss: bool = False) -> None:
        self.start_end = bool(start_end)
        self.normalized_loss = bool(normalized_loss)
        super().__init__(n_states, n_features, inference_method, class_weight, directed)

    def __repr__(self) -> str:
        return (f"ChainCRF(n_states={self.n_states}, n_features={self.n_features}, "
                f"inference_method={self.inference_method!r})")

    def _words(self, x: Any, i: int) -> np.ndarray:
        if _is_sparse(x):
            raise ValueError(f"ChainCRF: X[{i}] is a scipy.sparse matrix; ChainCRF takes dense "
                             f"(n_tokens, n_features) arrays (X[{i}].toarray())")
        rows = _shape2d("ChainCRF", x, f"X[{i}]")[0]
        if rows == 0:
            raise ValueError(f"ChainCRF: X[{i}] has no tokens; expected shape "
                             "(n_tokens, n_features) with n_tokens >= 1")
        return x

    def _unpack(self, x: Any, i: int) -> tuple:
        x = self._words(x, i)
        return x, _chain_edges(np.shape(x)[0])

    def _normalise(self) -> bool:
        return self.normalized_loss

    def loss(self, y: Any, y_hat: Any) -> float:
        loss = super().loss(y, y_hat)
        return loss / np.size(y) if self.normalized_loss else loss

    def max_loss(self, y: Any) -> float:
        return 1.0 if self.normalized_loss else super().max_loss(y)


class StartEndChainCRF:
    """bmrm's native chain (``ChainCRF(start_end=True,
    normalized_loss=True)``): linear chain CRF with Viterbi in Rust.

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
        start_end: bool = True,
        normalized_loss: bool = True,
    ) -> None:
        if not (start_end and normalized_loss):
            raise ValueError("ChainCRF: start_end=True needs normalized_loss=True (bmrm's native "
                             "chain divides the Hamming loss by the length); pystruct's chain is "
                             "start_end=False")
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
        self.start_end = True
        self.normalized_loss = True
        self._set_size()

    def __repr__(self) -> str:
        return (f"ChainCRF(n_states={self.n_states}, n_features={self.n_features}, "
                "start_end=True, normalized_loss=True)")

    def _set_size(self) -> None:
        if self.n_states is not None and self.n_features is not None:
            k, d = self.n_states, self.n_features
            self.size_joint_feature = k * d + k * k + 2 * k

    def _check_words(self, X: Sequence[Any]) -> int:
        """Refuses an empty ``X``, a word that is not a non-empty 2-D array
        and words of different widths; returns the number of features."""
        if len(X) == 0:
            raise ValueError("ChainCRF: X is empty; expected a list of (n_tokens, n_features) "
                             "arrays, one per word, with at least one word")
        d = None
        for i, x in enumerate(X):
            if _is_sparse(x):
                # The native chain lays sparse tokens' weights out feature-major,
                # not as this model's joint_feature: refused, not densified.
                raise ValueError(f"ChainCRF: X[{i}] is a scipy.sparse matrix; ChainCRF takes dense "
                                 f"(n_tokens, n_features) arrays (X[{i}].toarray()), "
                                 "bmrm.ChainModel takes sparse tokens")
            rows, cols = _shape2d("ChainCRF", x, f"X[{i}]")
            if rows == 0:
                raise ValueError(f"ChainCRF: X[{i}] has no tokens; expected shape "
                                 "(n_tokens, n_features) with n_tokens >= 1")
            if d is None:
                d = cols
            elif cols != d:
                raise ValueError(f"ChainCRF: X[{i}] has {cols} features but X[0] has {d}")
        return d

    def _check(self, X: Sequence[Any], Y: Sequence[Any]) -> List[np.ndarray]:
        """Checks the words (as ``_check_words``) and that word ``i`` has as
        many labels as tokens, all non-negative integers; returns them."""
        self._check_words(X)
        if len(Y) != len(X):
            raise ValueError(f"ChainCRF: X has {len(X)} words but Y has {len(Y)}")
        labels = []
        for i, (x, y) in enumerate(zip(X, Y)):
            if np.ndim(y) != 1:
                raise ValueError(f"ChainCRF: Y[{i}] must be a 1-D array of labels, got shape "
                                 f"{np.shape(y)}")
            y = _labels("ChainCRF", y, f"Y[{i}]")
            tokens = _shape2d("ChainCRF", x, f"X[{i}]")[0]
            if len(y) != tokens:
                raise ValueError(f"ChainCRF: word {i} has {tokens} tokens in X[{i}] but "
                                 f"{len(y)} labels in Y[{i}]")
            labels.append(y)
        return labels

    def initialize(self, X: Sequence[np.ndarray], Y: Sequence[np.ndarray]) -> None:
        """Takes the sizes from the data when they were not given."""
        labels = self._check(X, Y)
        d = _shape2d("ChainCRF", X[0], "X[0]")[1]
        if self.n_features is None:
            self.n_features = d
        elif self.n_features != d:
            raise ValueError(f"ChainCRF: X has {d} features, the model n_features={self.n_features}")
        k = int(max(int(np.max(y)) for y in labels)) + 1
        if self.n_states is None:
            self.n_states = k
        elif self.n_states < k:
            raise ValueError(f"ChainCRF: Y has label {k - 1} but n_states={self.n_states}")
        self._set_size()

    def _stack(self, X: Sequence[Any], Y: Optional[List[np.ndarray]] = None):
        """The words' tokens stacked, their lengths, and the checked labels
        ``Y`` (zeros when None)."""
        lengths = np.array([np.shape(x)[0] for x in X], dtype=np.int64)
        feats = np.concatenate([np.asarray(x, dtype=np.float64) for x in X], axis=0)
        labels = np.zeros(int(lengths.sum()), dtype=np.int64) if Y is None else np.concatenate(Y)
        return feats, lengths, labels

    def _native(self, X: Sequence[np.ndarray], Y: Sequence[np.ndarray]) -> ChainModel:
        """The model over ``(X, Y)`` whose oracle (Viterbi) runs in Rust."""
        feats, lengths, labels = self._stack(X, self._check(X, Y))
        return ChainModel(feats, lengths, labels, num_labels=self.n_states, bias=False)

    def _split(self, flat: np.ndarray, X: Sequence[np.ndarray]) -> List[np.ndarray]:
        ends = np.cumsum([np.shape(x)[0] for x in X])
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
        self._check_words(X)
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


def __getattr__(name: str) -> Any:
    """pystruct's ``pystruct.models`` paths of the node-typed and latent
    graph models (see :mod:`bmrm.graph_models`)."""
    if name in ("NodeTypeEdgeFeatureGraphCRF", "LatentGraphCRF", "LatentNodeCRF",
                "EdgeFeatureLatentNodeCRF", "LatentGridCRF", "LatentDirectionalGridCRF",
                "kmeans_init"):
        from . import graph_models
        return getattr(graph_models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
