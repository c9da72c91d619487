"""float16 and bfloat16 kernels that compute in float32 and round once, as PyTorch's CPU kernels do
(issue 17; tests/test_torch_op_db_lowp.py runs op_db in these dtypes)."""
import numpy as np
import pytest

import ember

F = ember.nn.functional
DTYPES = ["float16", "bfloat16"]


def _pair(torch, dtype, *shapes, seed=0, scale=1.0):
    rs = np.random.RandomState(seed)
    xs = [(rs.randn(*s) * scale).astype(np.float32) for s in shapes]
    return ([ember.tensor(x).to(getattr(ember, dtype)) for x in xs],
            [torch.tensor(x).to(getattr(torch, dtype)) for x in xs])


def _same(e, t, ulps=0, atol=1e-6):
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    ev, tv = e.detach().float().numpy(), t.detach().float().numpy()
    if ulps == 0:
        np.testing.assert_array_equal(ev, tv)
    else:
        bits = 11 if e.dtype is ember.float16 else 8
        np.testing.assert_allclose(ev, tv, rtol=ulps * 2.0 ** (1 - bits), atol=atol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulating_kernels_match_torch(torch, dtype):
    (x, w, v), (tx, tw, tv) = _pair(torch, dtype, (2, 3, 9, 9), (4, 3, 3, 3), (3, 200), scale=3)
    _same(F.conv2d(x, w, padding=1), torch.nn.functional.conv2d(tx, tw, padding=1), ulps=1)
    _same(F.avg_pool2d(x, 3), torch.nn.functional.avg_pool2d(tx, 3), ulps=1)
    _same(F.layer_norm(x, [9]), torch.nn.functional.layer_norm(tx, [9]), ulps=2)
    _same(F.group_norm(x, 3), torch.nn.functional.group_norm(tx, 3), ulps=2)
    _same(v @ v.T, tv @ tv.T, ulps=1)
    _same(v.sum(1), tv.sum(1), ulps=1)
    _same(v.cumsum(1, dtype=getattr(ember, dtype)), tv.cumsum(1, dtype=getattr(torch, dtype)), ulps=1)
    # (float32 inside on both sides; the erf and exp approximations differ in the last float32 bits)
    _same(F.gelu(v), torch.nn.functional.gelu(tv), ulps=1, atol=1e-5)
    _same(F.silu(v), torch.nn.functional.silu(tv), ulps=1, atol=1e-5)
    _same(ember.addcdiv(v, v, v.abs() + 1, value=0.3), torch.addcdiv(tv, tv, tv.abs() + 1, value=0.3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_updates_running_stats(torch, dtype):
    (x, rm, rv), (tx, trm, trv) = _pair(torch, dtype, (4, 3, 5), (3,), (3,))
    rv, trv = rv.abs() + 0.5, trv.abs() + 0.5
    y = F.batch_norm(x, rm, rv, training=True, momentum=0.5)
    ty = torch.nn.functional.batch_norm(tx, trm, trv, training=True, momentum=0.5)
    _same(y, ty, ulps=2, atol=1e-3)   # (values near 0 come from cancellation in x - mean)
    assert rm.dtype is getattr(ember, dtype)
    _same(rm, trm, ulps=1)
    _same(rv, trv, ulps=1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_keep_the_dtype(torch, dtype):
    (x,), _ = _pair(torch, dtype, (6,))
    for f in (F.leaky_relu, F.hardsigmoid, F.hardswish, lambda t: F.huber_loss(t, t * 0, reduction="none")):
        xg = x.clone().requires_grad_()
        y = f(xg)
        g, = ember.autograd.grad(y.sum(), xg)
        assert y.dtype is xg.dtype and g.dtype is xg.dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_refused_like_torch(torch, dtype):
    """Ops PyTorch's CPU build has no float16/bfloat16 kernel for raise its exception type."""
    (a,), (ta,) = _pair(torch, dtype, (4, 4))
    calls = [lambda m, t: m.special.bessel_j0(t), lambda m, t: m.cdist(t, t), lambda m, t: m.linalg.cholesky(t),
             lambda m, t: m.linalg.svd(t), lambda m, t: m.nn.functional.pdist(t)]
    for call in calls:
        with pytest.raises(Exception) as te:
            call(torch, ta)
        with pytest.raises(type(te.value)):
            call(ember, a)
