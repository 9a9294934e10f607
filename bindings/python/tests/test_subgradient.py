"""SubgradientSSVM's defaults and its passes against pystruct's loop.

The reference is pystruct 0.3.2's SubgradientSSVM written out here in numpy
for the multiclass model as pystruct computes it (``W x``, 1 added to the
other classes, argmax; ``find_constraint``; the step
``w += lr / (t + t0) * (dpsi - w / (C n))``; after each pass
``objective_primal`` over every example).
"""

import numpy as np
import pytest

from bmrm.latent import LatentSubgradientSSVM
from bmrm.learners import SubgradientSSVM
from bmrm.models import MultiClassClf
from conftest import multiclass_data


def find_constraint(X, Y, i, w, k):
    d = X.shape[1]
    scores = w.reshape(k, d) @ X[i]
    scores[np.arange(k) != Y[i]] += 1
    y_hat = int(np.argmax(scores))
    dpsi = np.zeros(k * d)
    dpsi[Y[i] * d:(Y[i] + 1) * d] += X[i]
    dpsi[y_hat * d:(y_hat + 1) * d] -= X[i]
    return dpsi, max(float(y_hat != Y[i]) - float(w @ dpsi), 0.0)


def pystruct_passes(X, Y, C, passes, t0=10.0):
    """pystruct's online SubgradientSSVM at its defaults (learning_rate 'auto'):
    the objective after each pass."""
    n, d = X.shape
    k = int(Y.max()) + 1
    w, t, curve = np.zeros(k * d), 0, []
    for _ in range(passes):
        for i in range(n):
            dpsi, _ = find_constraint(X, Y, i, w, k)
            w += C * n / (t + t0) * (dpsi - w / (C * n))
            t += 1
        slacks = sum(find_constraint(X, Y, i, w, k)[1] for i in range(n))
        curve.append(C * slacks + 0.5 * float(w @ w))
    return w, curve


def test_the_default_schedule_is_pystructs():
    """Defaults: decay_t0 = 10 and learning_rate C n, pystruct's (both
    learners); the objective after every pass equals pystruct's loop."""
    assert SubgradientSSVM(MultiClassClf()).decay_t0 == 10
    assert LatentSubgradientSSVM(MultiClassClf()).decay_t0 == 10
    X, Y = multiclass_data(n=12, d=3, k=3, seed=4)
    C, passes = 0.5, 6
    est = SubgradientSSVM(MultiClassClf(), C=C, max_iter=passes,
                          break_on_no_constraints=False).fit(X, Y)
    w, curve = pystruct_passes(X, Y, C, passes)
    assert est.t0_ == 10.0
    assert len(est.objective_curve_) == passes
    np.testing.assert_allclose(est.objective_curve_, curve, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.w, w, rtol=1e-10, atol=1e-12)


class Counting(MultiClassClf):
    """MultiClassClf counting its per-example and batch loss-augmented calls."""

    def __init__(self):
        super().__init__()
        self.single = self.batched = 0

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        self.single += 1
        return super().loss_augmented_inference(x, y, w, relaxed)

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None):
        self.batched += 1
        return super().batch_loss_augmented_inference(X, Y, w, relaxed)


class CountingWithoutBatch(Counting):
    """The same model without ``batch_loss_augmented_inference``."""

    def __getattribute__(self, name):
        if name == "batch_loss_augmented_inference":
            raise AttributeError(name)
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("batch_size", [4, -1])
def test_a_mini_batch_is_decoded_in_one_call(batch_size):
    """With the model's batch_loss_augmented_inference, each mini-batch is one
    call and no example is decoded alone; the iterates equal those of the
    per-example calls (a model without the batch method)."""
    X, Y = multiclass_data(n=20, d=4, k=3, seed=2)
    passes = 3
    kw = dict(C=0.5, max_iter=passes, batch_size=batch_size, break_on_no_constraints=False)
    batched = SubgradientSSVM(Counting(), **kw).fit(X, Y)
    one_by_one = SubgradientSSVM(CountingWithoutBatch(), **kw).fit(X, Y)
    batches = 1 if batch_size == -1 else int(np.ceil(len(X) / batch_size))
    assert batched.model.single == 0
    # One call per mini-batch (the pass's objective is the native model's).
    assert batched.model.batched == passes * batches
    assert one_by_one.model.single == passes * len(X)
    np.testing.assert_allclose(batched.w, one_by_one.w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(batched.objective_curve_, one_by_one.objective_curve_,
                               rtol=1e-12)


def test_multiclass_inference_is_pystructs_sum():
    """One example and a batch: the answer maximises ``W x`` plus 1 on the
    other classes (pystruct's sum), ties to the lowest class."""
    rng = np.random.RandomState(3)
    k, d = 4, 3
    model = MultiClassClf(n_features=d, n_classes=k)
    for _ in range(50):
        X = rng.randint(-2, 3, size=(6, d)).astype(float)
        Y = rng.randint(k, size=6)
        w = rng.randint(-2, 3, size=k * d).astype(float)  # integer scores: ties
        want = []
        for x, y in zip(X, Y):
            scores = w.reshape(k, d) @ x
            scores[np.arange(k) != y] += 1
            want.append(int(np.argmax(scores)))
        assert [model.loss_augmented_inference(x, y, w) for x, y in zip(X, Y)] == want
        assert list(model.batch_loss_augmented_inference(X, Y, w)) == want


def test_binary_decoders_equal_the_native_engine():
    """BinaryClf's vectorised loss-augmented decoder gives the native
    engine's answers, ties included (integer data: ``<w, x>`` is often 0 or
    1, a tie of inference or of loss-augmented inference), and its
    inference pystruct's sign (a tie predicts +1); malformed input still
    gets the native path's error naming it."""
    from bmrm.graph_models import BinaryClf, _GraphBase

    rng = np.random.RandomState(5)
    model = BinaryClf(n_features=4)
    ties = 0
    for _ in range(40):
        X = rng.randint(-1, 2, size=(12, 4)).astype(float)
        Y = rng.choice([-1, 1], size=12)
        w = rng.randint(-1, 2, size=4).astype(float)
        native_la = np.array(_GraphBase.batch_loss_augmented_inference(model, X, Y, w))
        np.testing.assert_array_equal(model.batch_loss_augmented_inference(X, Y, w), native_la)
        np.testing.assert_array_equal(model.batch_inference(X, w), np.where(X @ w >= 0, 1, -1))
        assert [model.loss_augmented_inference(x, y, w) for x, y in zip(X, Y)] == list(native_la)
        ties += int(np.sum(X @ w == 0) + np.sum(X @ w == 1))
    assert ties > 50
    with pytest.raises(ValueError, match=r"Y\[0\]"):
        model.batch_loss_augmented_inference(np.ones((2, 4)), [0, 1], np.ones(4))
    with pytest.raises(ValueError, match=r"X\[0\]"):
        model.batch_loss_augmented_inference(np.ones((2, 3)), [1, 1], np.ones(4))


def graph_examples(n=8, k=3, d=4, seed=6):
    """Random graphs of 3-6 nodes (a tree plus one edge closing a cycle)."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        m = rng.randint(3, 7)
        edges = np.array([(rng.randint(v), v) for v in range(1, m)] + [(0, m - 1)])
        X.append((np.round(rng.randn(m, d) * 8) / 8, edges))
        Y.append(rng.randint(k, size=m))
    return X, Y


def test_one_example_decoders_answer_as_the_model():
    """A native graph model's one-example decoder (its native problem built
    once, reused at every step) answers as ``loss_augmented_inference`` at
    every ``w``; a model whose decoding differs (BinaryClf) has none; a fit
    with the decoders equals the fit through the model's own calls."""
    from bmrm.graph_models import BinaryClf, GraphCRF
    from bmrm.models import ChainCRF
    from conftest import chain_data

    rng = np.random.RandomState(7)
    for model, (X, Y) in [(GraphCRF(n_states=3, n_features=4), graph_examples()),
                          (ChainCRF(), chain_data(n=8))]:
        model.initialize(X, Y)
        for x, y in zip(X, Y):
            decode = model._example_decoder(x, y)
            for _ in range(5):
                w = rng.randn(model.size_joint_feature)
                np.testing.assert_array_equal(decode(w), model.loss_augmented_inference(x, y, w))
    assert BinaryClf(n_features=2)._example_decoder(np.ones(2), 1) is None

    class OwnCalls(GraphCRF):
        _example_decoder = None

    X, Y = graph_examples(n=12, seed=8)
    kw = dict(C=0.5, max_iter=4, break_on_no_constraints=False)
    fast = SubgradientSSVM(GraphCRF(n_states=3, n_features=4), **kw).fit(X, Y)
    slow = SubgradientSSVM(OwnCalls(n_states=3, n_features=4), **kw).fit(X, Y)
    np.testing.assert_array_equal(fast.w, slow.w)
    assert fast.objective_curve_ == slow.objective_curve_
    assert np.abs(fast.w).max() > 0


@pytest.mark.parametrize("problem, args", [("multiclass", ["--n", "200"]), ("binary", []),
                                           ("chain", ["--n", "40"])])
def test_speed_example_matches_its_reference(problem, args):
    """examples/python/subgradient_speed.py runs (2 passes) and prints, every
    pass, bmrm's objective equal to pystruct's loop's (relative 1e-8)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("sklearn")
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python",
                        "subgradient_speed.py")
    if not os.path.exists(path):
        pytest.skip("not in a source tree")
    out = subprocess.run([sys.executable, path, "--problem", problem, "--passes", "2"] + args,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [line.split("|") for line in out.stdout.splitlines()
            if line.split("|")[0].strip().isdigit()]
    assert len(rows) == 2
    for row in rows:
        ref, difference = float(row[1].split()[1]), float(row[4])
        assert abs(difference) <= 1e-8 * abs(ref), (problem, row)
