"""embedding and embedding_bag against PyTorch and finite differences."""
import numpy as np
import pytest

import ember
from ember.ops import nn as F
from _checks import check_grads, compare_with_torch

rng = np.random.default_rng(4)


@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=2), dict(padding_idx=-1), dict(scale_grad_by_freq=True)])
def test_embedding_matches_torch(torch, kw):
    idx = np.array([[0, 2, 4, 2], [3, 2, 9, 0]])
    w = rng.standard_normal((10, 3))
    compare_with_torch(torch, lambda w, i: F.embedding(i, w, **kw),
                       lambda w, i: torch.nn.functional.embedding(i, w, **kw), [w, idx])


def test_embedding_max_norm(torch):
    idx = np.array([1, 3, 3])
    w = rng.standard_normal((5, 4)) * 3
    we, wt = ember.tensor(w.copy()), torch.tensor(w.copy())
    ye = F.embedding(ember.tensor(idx), we, max_norm=1.0)
    yt = torch.nn.functional.embedding(torch.tensor(idx), wt, max_norm=1.0)
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), rtol=1e-6)
    np.testing.assert_allclose(we.numpy(), wt.numpy(), rtol=1e-6)


def test_embedding_finite_differences():
    idx = np.array([[0, 2], [2, 1]])
    check_grads(lambda w, i: F.embedding(i, w), [rng.standard_normal((4, 3)), idx])


def test_embedding_errors():
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(ember.tensor([5]), ember.randn(5, 2))
    with pytest.raises(RuntimeError, match="indices"):
        F.embedding(ember.tensor([1.0]), ember.randn(5, 2))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=3), dict(include_last_offset=True)])
def test_embedding_bag_offsets_matches_torch(torch, mode, kw):
    idx = np.array([1, 3, 4, 3, 7, 0, 2, 3])
    off = np.array([0, 3, 3, 6]) if not kw.get("include_last_offset") else np.array([0, 3, 3, 6, 8])
    w = rng.standard_normal((8, 3))
    compare_with_torch(torch, lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, **kw),
                       lambda w, i, o: torch.nn.functional.embedding_bag(i, w, o, mode=mode, **kw), [w, idx, off])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_matches_torch(torch, mode):
    idx = np.array([[1, 3, 4], [0, 6, 3]])
    w = rng.standard_normal((8, 3))
    compare_with_torch(torch, lambda w, i: F.embedding_bag(i, w, mode=mode),
                       lambda w, i: torch.nn.functional.embedding_bag(i, w, mode=mode), [w, idx])


def test_embedding_bag_per_sample_weights(torch):
    idx = np.array([1, 3, 4, 3, 7])
    off = np.array([0, 2])
    psw = rng.standard_normal(5)
    w = rng.standard_normal((8, 3))
    compare_with_torch(torch, lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                       lambda w, i, o, p: torch.nn.functional.embedding_bag(i, w, o, mode="sum",
                                                                            per_sample_weights=p),
                       [w, idx, off, psw])


def test_embedding_bag_finite_differences():
    idx, off = np.array([1, 3, 2, 0]), np.array([0, 1])
    check_grads(lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"), [rng.standard_normal((4, 3)), idx, off])
