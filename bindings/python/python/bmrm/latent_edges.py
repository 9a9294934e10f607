"""pystruct's ``EdgeFeatureLatentNodeCRF``: :class:`bmrm.latent_nodes.LatentNodeCRF`
(graphs with hidden nodes) whose edges carry features, as
:class:`bmrm.graph_models.EdgeFeatureGraphCRF`'s. Re-exported by
:mod:`bmrm.latent`, :mod:`bmrm.models` and :mod:`bmrm.graph_models`.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .graph_models import EdgeFeatureGraphCRF, _feature_list, _matrix
from .latent_nodes import LatentNodeCRF


class EdgeFeatureLatentNodeCRF(LatentNodeCRF):
    """pystruct's ``EdgeFeatureLatentNodeCRF``: ``X`` is a list of
    ``(features, edges, edge_features (n_edges, n_edge_features),
    n_hidden)``; the hidden nodes follow the observed ones, as in
    :class:`LatentNodeCRF`, and edge ``(u, v)`` in joint states ``(a, b)``
    scores ``sum_k edge_features[k] W[a, b, k]``.

    ``w`` (``layout='pystruct'``, the default) is pystruct's: the unary
    block as :class:`LatentNodeCRF`'s, then the ``n_edge_features x
    n_states x n_states`` tables, feature outermost. ``layout='bmrm'``:
    ``n_states`` unary rows, then the ``n_states x n_states x
    n_edge_features`` table, feature innermost (bmrm's former ``w``).
    Edges are directed;
    ``symmetric_edge_features`` / ``antisymmetric_edge_features`` enter psi
    as ``(E + E^T)/2`` / ``(E - E^T)/2``, as pystruct. Loss, completion
    (``latent``), ``init_latent`` and ``class_weight``: as
    :class:`LatentNodeCRF`.
    """

    def __init__(self, n_labels: Optional[int] = None, n_features: Optional[int] = None,
                 n_edge_features: Optional[int] = None, n_hidden_states: int = 2,
                 inference_method: Any = None, class_weight: Any = None,
                 symmetric_edge_features: Any = None, antisymmetric_edge_features: Any = None,
                 latent_node_features: bool = False, layout: str = "pystruct") -> None:
        name = "EdgeFeatureLatentNodeCRF"
        self.n_edge_features = n_edge_features
        self.symmetric_edge_features = _feature_list(
            name, symmetric_edge_features, "symmetric_edge_features")
        self.antisymmetric_edge_features = _feature_list(
            name, antisymmetric_edge_features, "antisymmetric_edge_features")
        both = set(self.symmetric_edge_features) & set(self.antisymmetric_edge_features)
        if both:
            raise ValueError(f"{name}: edge feature {min(both)} is listed as both symmetric "
                             "and antisymmetric")
        listed = self.symmetric_edge_features + self.antisymmetric_edge_features
        if n_edge_features is not None and any(k < 0 or k >= n_edge_features for k in listed):
            bad = next(k for k in listed if k < 0 or k >= n_edge_features)
            raise ValueError(f"{name}: edge feature {bad} is listed as (anti)symmetric but "
                             f"n_edge_features={n_edge_features}")
        super().__init__(n_labels, n_features, n_hidden_states, inference_method, class_weight,
                         latent_node_features, layout)
        self.directed = True
        self.full_pairwise = False

    def __repr__(self) -> str:
        return (f"EdgeFeatureLatentNodeCRF(n_labels={self.n_labels}, "
                f"n_features={self.n_features}, n_edge_features={self.n_edge_features}, "
                f"n_hidden_states={self.n_hidden_states}, "
                f"inference_method={self.inference_method!r})")

    def _n_pair(self) -> int:
        return self.n_states ** 2 * (self.n_edge_features or 0)

    def _table_form(self) -> str:
        return "feature-major" if self.layout == "pystruct" else "state-major"

    def _size(self) -> Optional[int]:
        if self.n_edge_features is None:
            return None
        return super()._size()

    def _unpack(self, x: Any, i: int) -> Tuple[Any, ...]:
        """``(features, edges, n_hidden)`` (the edge features are read by
        :meth:`_parts`)."""
        if not isinstance(x, (tuple, list)) or len(x) != 4:
            raise ValueError(f"EdgeFeatureLatentNodeCRF: X[{i}] must be a tuple (features, "
                             "edges, edge_features, n_hidden)")
        return super()._unpack((x[0], x[1], x[3]), i)

    def _parts(self, x: Any, i: int) -> dict:
        p = super()._parts(x, i)
        n_edges = len(p["edges"])
        ef = _matrix("EdgeFeatureLatentNodeCRF", x[2], f"X[{i}][2] (edge_features)",
                     self.n_edge_features, str(n_edges))
        if ef.shape[0] != n_edges:
            raise ValueError(f"EdgeFeatureLatentNodeCRF: X[{i}][2] (edge_features) must have "
                             f"shape ({n_edges}, {self.n_edge_features}), got {ef.shape}")
        p["edge_features"] = ef
        return p

    def _anchor(self) -> Optional[dict]:
        if self.n_features is None or self.n_edge_features is None:
            return None
        f = np.zeros((2, self.n_features))
        return dict(features=self._state_rows(f) if self._per_state else f,
                    edges=np.array([[0, 1]]), edge_features=np.zeros((1, self.n_edge_features)),
                    states=np.full(2, self._k()))

    def _symmetric(self) -> Optional[List[int]]:
        return self.symmetric_edge_features

    def _antisymmetric(self) -> Optional[List[int]]:
        return self.antisymmetric_edge_features

    def initialize(self, X: Sequence[Any], Y: Sequence[Any]) -> None:
        """``n_features``, ``n_edge_features`` and ``n_labels`` from the data
        when not given."""
        self._check_x(X)
        self._unpack(X[0], 0)
        f = np.shape(X[0][2])
        if self.n_edge_features is None:
            if len(f) != 2:
                raise ValueError("EdgeFeatureLatentNodeCRF: X[0][2] (edge_features) must have "
                                 f"shape (n_edges, n_edge_features), got {f}")
            self.n_edge_features = f[1]
        super().initialize(X, Y)

    def _pair_psi(self, p: dict, y: np.ndarray) -> np.ndarray:
        # EdgeFeatureGraphCRF's table (it reads only the state count and the
        # (anti)symmetric lists).
        t = EdgeFeatureGraphCRF._edge_tables(self, p, y)  # type: ignore[arg-type]
        return (t.transpose(2, 0, 1) if self.layout == "pystruct" else t).ravel()
