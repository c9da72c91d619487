"""batch_norm (training/eval, running stats, both layouts), layer_norm, group_norm against PyTorch and
float64 finite differences (first and second order)."""
import numpy as np
import pytest

import ember
from ember.ops import nn as F
from _checks import check_grads, compare_with_torch

rng = np.random.default_rng(3)


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_matches_torch(torch, shape, training, cl, affine):
    if cl and len(shape) != 4:
        pytest.skip("channels_last is 4-d")
    x = rng.standard_normal(shape) * 2 + 1
    C = shape[1]
    w, b = rng.standard_normal(C), rng.standard_normal(C)
    rm_np, rv_np = rng.standard_normal(C), rng.random(C) + 0.5
    rm_e, rv_e = ember.tensor(rm_np.copy()), ember.tensor(rv_np.copy())
    rm_t, rv_t = torch.tensor(rm_np.copy()), torch.tensor(rv_np.copy())
    arrays = [x, w, b] if affine else [x]

    def fe(x, w=None, b=None):
        return F.batch_norm(x, rm_e, rv_e, w, b, training, 0.3, 1e-4)

    def ft(x, w=None, b=None):
        return torch.nn.functional.batch_norm(x, rm_t, rv_t, w, b, training, 0.3, 1e-4)
    y = compare_with_torch(torch, fe, ft, arrays, [cl, False, False])
    np.testing.assert_allclose(rm_e.numpy(), rm_t.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rv_e.numpy(), rv_t.numpy(), rtol=1e-10, atol=1e-12)
    if len(shape) == 4:
        assert y.is_contiguous(memory_format=ember.channels_last) == cl
    if training:
        assert rm_e._version > 0


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("cl", [False, True])
def test_batch_norm_finite_differences(training, cl):
    x = rng.standard_normal((3, 2, 2, 3))
    w, b = rng.standard_normal(2), rng.standard_normal(2)
    rm, rv = ember.tensor(rng.standard_normal(2)), ember.tensor(rng.random(2) + 0.5)

    def fn(x, w, b):
        xx = x.to(memory_format=ember.channels_last) if cl else x
        return F.batch_norm(xx, rm, rv, w, b, training, 0.0, 1e-5)
    check_grads(fn, [x, w, b])


def test_batch_norm_float32_fast_backward_matches_composite(torch):
    x = rng.standard_normal((8, 4, 5, 5)).astype(np.float32)
    xe = ember.tensor(x).to(memory_format=ember.channels_last).requires_grad_()
    w = ember.ones(4, requires_grad=True)
    y = F.batch_norm(xe, None, None, w, None, True)
    (y * y).sum().backward()  # fused kernel
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.batch_norm(xt, None, None, torch.ones(4), None, True)
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(ember.randn(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements"):
        F.batch_norm(ember.randn(2, 3), ember.zeros(4), ember.ones(3))


@pytest.mark.parametrize("nshape", [(5,), (4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch(torch, nshape, affine):
    x = rng.standard_normal((2, 3, 4, 5))
    arrays = [x, rng.standard_normal(nshape), rng.standard_normal(nshape)] if affine else [x]
    compare_with_torch(torch, lambda x, w=None, b=None: F.layer_norm(x, nshape, w, b, 1e-5),
                       lambda x, w=None, b=None: torch.nn.functional.layer_norm(x, nshape, w, b, 1e-5), arrays)


def test_layer_norm_finite_differences():
    check_grads(lambda x, w, b: F.layer_norm(x, (4,), w, b),
                      [rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(4)])


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_matches_torch(torch, groups):
    x = rng.standard_normal((2, 6, 4, 3))
    compare_with_torch(torch, lambda x, w, b: F.group_norm(x, groups, w, b),
                       lambda x, w, b: torch.nn.functional.group_norm(x, groups, w, b),
                       [x, rng.standard_normal(6), rng.standard_normal(6)])


def test_group_norm_finite_differences():
    check_grads(lambda x, w, b: F.group_norm(x, 2, w, b),
                      [rng.standard_normal((2, 4, 3)), rng.standard_normal(4), rng.standard_normal(4)])


def test_norm_errors():
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(ember.randn(2, 3), (4,))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(ember.randn(2, 3, 4), 2)
