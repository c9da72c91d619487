"""The UCI 8x8 handwritten digits, bundled in ``data/digits.csv.gz``.

The train/test split is fixed, stratified and needs no random numbers: going through the file in
order, the 1st, 6th, 11th, ... sample *of each class* (its rank within its class ``% 5 == 0``) is a
test sample, every other one a training sample. That gives 1,433 training and 364 test images,
each class about 4:1 in both.
"""
import gzip
import os

import numpy as np

DIGITS_TEST_EVERY = 5
_FILE = os.path.join(os.path.dirname(__file__), "data", "digits.csv.gz")
_cache = None


def digits_arrays():
    """All 1,797 samples as NumPy arrays: ``images`` (1797, 8, 8) uint8 in 0..16, ``labels`` (1797,) int64."""
    global _cache
    if _cache is None:
        if not os.path.exists(_FILE):
            raise FileNotFoundError(f"the bundled digits file is missing: {_FILE} (reinstall ember)")
        with gzip.open(_FILE, "rt") as f:
            table = np.loadtxt(f, delimiter=",", dtype=np.int64)
        if table.shape != (1797, 65):
            raise RuntimeError(f"digits.csv.gz: expected 1797 rows of 65 values, got shape {table.shape}")
        _cache = (table[:, :64].astype(np.uint8).reshape(-1, 8, 8), table[:, 64].copy())
    images, labels = _cache
    return images.copy(), labels.copy()


def split_mask(labels):
    """Boolean mask of the test samples: rank within its class (in file order) % DIGITS_TEST_EVERY == 0."""
    labels = np.asarray(labels)
    rank = np.empty(len(labels), np.int64)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        rank[idx] = np.arange(len(idx))
    return rank % DIGITS_TEST_EVERY == 0


def digits(train=True, flatten=False, dtype=None):
    """The bundled digits as a ``TensorDataset(images, labels)``.

    Images are float (``dtype``, default the default dtype) scaled from 0..16 to 0..1, shaped
    ``(N, 1, 8, 8)``, or ``(N, 64)`` with ``flatten=True``; labels are int64 class indices.
    ``train=True`` gives the 1,433 training samples, ``train=False`` the 364 test samples
    (see the module docstring for the split rule).
    """
    import ember
    from ember.utils.data import TensorDataset
    images, labels = digits_arrays()
    test = split_mask(labels)
    keep = ~test if train else test
    dtype = dtype or ember.get_default_dtype()
    x = images[keep].astype(np.float64) / 16.0
    x = x.reshape(-1, 64) if flatten else x.reshape(-1, 1, 8, 8)
    return TensorDataset(ember.tensor(x, dtype=dtype), ember.tensor(labels[keep], dtype=ember.int64))
