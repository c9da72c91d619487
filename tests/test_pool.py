"""max/avg/adaptive pooling against PyTorch (values, indices, gradients, both layouts) and float64
finite differences."""
import numpy as np
import pytest

import ember
from ember.ops import nn as F
from _checks import check_grads, compare_with_torch

rng = np.random.default_rng(2)

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kw", MAX_CASES)
@pytest.mark.parametrize("cl", [False, True])
def test_max_pool2d_matches_torch(torch, kw, cl):
    x = rng.standard_normal((2, 3, 9, 8))
    y = compare_with_torch(torch, lambda x: F.max_pool2d(x, **kw), lambda x: torch.nn.functional.max_pool2d(x, **kw),
                           [x], [cl])
    assert y.is_contiguous(memory_format=ember.channels_last) == cl
    ye, ie = F.max_pool2d(ember.tensor(x), return_indices=True, **kw)
    yt, it = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(ie.numpy(), it.numpy())
    assert ie.dtype == ember.int64


def test_max_pool2d_ties_route_to_first(torch):
    x = np.zeros((1, 2, 4, 4))  # relu outputs: many ties
    x[0, 0, 1, 1] = 1.0
    compare_with_torch(torch, lambda x: F.max_pool2d(x, 3, 1, 1), lambda x: torch.nn.functional.max_pool2d(x, 3, 1, 1),
                       [x])


def test_max_pool2d_no_grad_path_and_unbatched(torch):
    x = rng.standard_normal((3, 7, 7)).astype(np.float32)
    with ember.no_grad():
        y = F.max_pool2d(ember.tensor(x), 3, 2)
    np.testing.assert_array_equal(y.numpy(), torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2).numpy())


@pytest.mark.parametrize("cl", [False, True])
def test_max_pool2d_finite_differences(cl):
    x = rng.permutation(50).reshape(1, 2, 5, 5).astype(np.float64)  # distinct values: differentiable

    def fn(x):
        return F.max_pool2d(x.to(memory_format=ember.channels_last) if cl else x, 3, 2, 1)
    check_grads(fn, [x], eps=1e-3)


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), divisor_override=5),
]


@pytest.mark.parametrize("kw", AVG_CASES)
@pytest.mark.parametrize("cl", [False, True])
def test_avg_pool2d_matches_torch(torch, kw, cl):
    x = rng.standard_normal((2, 3, 9, 8))
    y = compare_with_torch(torch, lambda x: F.avg_pool2d(x, **kw), lambda x: torch.nn.functional.avg_pool2d(x, **kw),
                           [x], [cl])
    assert y.is_contiguous(memory_format=ember.channels_last) == cl


@pytest.mark.parametrize("cl", [False, True])
def test_avg_pool2d_finite_differences(cl):
    def fn(x):
        return F.avg_pool2d(x.to(memory_format=ember.channels_last) if cl else x, 3, 2, 1, ceil_mode=True,
                            count_include_pad=False)
    check_grads(fn, [rng.standard_normal((1, 2, 6, 5))])


@pytest.mark.parametrize("size", [1, (2, 3), (3, 5), (None, 2), 4])
def test_adaptive_avg_pool2d_matches_torch(torch, size):
    x = rng.standard_normal((2, 3, 8, 10))
    compare_with_torch(torch, lambda x: F.adaptive_avg_pool2d(x, size),
                       lambda x: torch.nn.functional.adaptive_avg_pool2d(x, size), [x])


@pytest.mark.parametrize("size", [(4, 5), (3, 4), (5, 7), 1])
def test_adaptive_max_pool2d_matches_torch(torch, size):
    x = rng.standard_normal((2, 3, 8, 10))
    compare_with_torch(torch, lambda x: F.adaptive_max_pool2d(x, size),
                       lambda x: torch.nn.functional.adaptive_max_pool2d(x, size), [x])
    _, ie = F.adaptive_max_pool2d(ember.tensor(x), size, return_indices=True)
    _, it = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), size, return_indices=True)
    np.testing.assert_array_equal(ie.numpy(), it.numpy())


def test_pool1d_matches_torch(torch):
    x = rng.standard_normal((2, 3, 11))
    compare_with_torch(torch, lambda x: F.max_pool1d(x, 3, 2, 1), lambda x: torch.nn.functional.max_pool1d(x, 3, 2, 1),
                       [x])
    compare_with_torch(torch, lambda x: F.avg_pool1d(x, 3, 2, 1), lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1),
                       [x])


def test_pool_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="too small"):
        F.max_pool2d(x, 6)
    with pytest.raises(RuntimeError, match="3D or 4D"):
        F.avg_pool2d(ember.randn(5, 5), 2)


def test_adaptive_avg_pool_result_is_contiguous(torch):
    # the uneven-window path returned an einsum result with permuted strides: .view(N, -1) failed
    x = np.random.randn(2, 3, 7, 5).astype(np.float32)
    for size in ((4, 3), (3, 5), (1, 2)):
        e = F.adaptive_avg_pool2d(ember.tensor(x), size)
        t = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(x), size)
        assert e.stride() == t.stride()
        np.testing.assert_allclose(e.view(2, -1).numpy(), t.view(2, -1).numpy(), rtol=1e-5, atol=1e-6)
