"""nn.functional pieces composed here (pad, one_hot, normalize, activations, dropout variants)
against PyTorch and finite differences."""
import numpy as np
import pytest

import ember
from ember.nn import functional as F
from _checks import PER_ELEMENT, check_grads

rs = np.random.RandomState(0)


def both(torch, efn, tfn, x, atol=1e-5):
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    eo, to = efn(e), tfn(t)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol, rtol=1e-5)
    w = np.asarray(rs.randn(*eo.shape)).astype(x.dtype)
    (eo * ember.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=atol, rtol=1e-5)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch(torch, mode):
    x = rs.randn(2, 3, 5, 6).astype(np.float32)
    for pad in [(1, 2), (1, 2, 2, 1), (0, 0, 3, 0), (-1, 2)]:
        if mode != "constant" and min(pad) < 0:
            continue
        xx = x[0] if len(pad) == 2 and mode != "constant" else x
        both(torch, lambda a: F.pad(a, pad, mode=mode), lambda a: torch.nn.functional.pad(a, pad, mode=mode), xx)
    if mode != "constant":
        with pytest.raises(NotImplementedError):
            F.pad(ember.tensor(x), (1, 1), mode=mode)
    both(torch, lambda a: F.pad(a, (1, 1), value=2.5), lambda a: torch.nn.functional.pad(a, (1, 1), value=2.5), x)


@pytest.mark.parametrize("name", ["selu", "celu", "hardsigmoid", "hardswish", "mish", "logsigmoid", "softsign",
                                  "tanhshrink", "relu6", "elu", "softplus", "silu", "gelu", "leaky_relu",
                                  "hardtanh", "sigmoid", "tanh", "relu"])
def test_activations_match_torch(torch, name):
    x = (rs.randn(4, 5) * 3).astype(np.float32)
    both(torch, getattr(F, name), getattr(torch.nn.functional, name), x)


def test_softmax_family_and_glu(torch):
    x = rs.randn(3, 4).astype(np.float32)
    both(torch, lambda a: F.softmax(a, dim=0), lambda a: torch.nn.functional.softmax(a, dim=0), x)
    both(torch, lambda a: F.log_softmax(a, dim=1), lambda a: torch.nn.functional.log_softmax(a, dim=1), x)
    both(torch, lambda a: F.softmin(a, dim=1), lambda a: torch.nn.functional.softmin(a, dim=1), x)
    both(torch, lambda a: F.glu(a, -1), lambda a: torch.nn.functional.glu(a, -1), x)
    both(torch, lambda a: F.normalize(a, dim=1), lambda a: torch.nn.functional.normalize(a, dim=1), x)
    both(torch, lambda a: F.cosine_similarity(a, a * 2 + 1), lambda a: torch.nn.functional.cosine_similarity(a, a * 2 + 1), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_that_need_their_maximum(torch, dtype):
    """softmax exponentiates rows as they are where that is safe and subtracts the maximum in rows
    where it is not: rows that overflow, rows far below zero, all -inf, +inf, NaN, next to ordinary
    ones, over the last dim and through scaled_dot_product_attention's probabilities."""
    big = 800.0 if dtype == np.float64 else 100.0
    x = rs.randn(9, 6).astype(dtype)
    x[1] += big                      # exp overflows
    x[2] -= 10 * big                 # every term underflows
    x[3] = -np.inf
    x[4, 2] = np.inf
    x[5, 1] = np.nan
    x[6, :3] = -np.inf               # a partly masked row
    x[7] *= 40                       # wide range within the row
    for dim in (-1, 0):
        e = F.softmax(ember.tensor(x), dim=dim).numpy()
        t = torch.softmax(torch.tensor(x), dim=dim).numpy()
        assert np.array_equal(np.isnan(e), np.isnan(t))
        x64 = x.astype(np.float64)  # the exact softmax, to float64 rounding
        with np.errstate(invalid="ignore", over="ignore"):
            ref = np.exp(x64 - x64.max(dim, keepdims=True))
            ref /= ref.sum(dim, keepdims=True)
        for got in (e, t):  # as close to it as PyTorch's is (x - max is rounded: |x - max| ulps)
            np.testing.assert_allclose(got, ref.astype(dtype), rtol=1e-5 if dtype == np.float32 else 1e-13,
                                       atol=16 * np.finfo(dtype).tiny)  # (subnormal results: fewer digits)
    q = rs.randn(2, 3, 5, 4).astype(dtype)
    k = rs.randn(2, 3, 5, 4).astype(dtype)
    k[0, 1] *= big                   # scores that overflow in one head
    v = rs.randn(2, 3, 5, 4).astype(dtype)
    e = F.scaled_dot_product_attention(*(ember.tensor(a) for a in (q, k, v)), is_causal=True).numpy()
    t = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), is_causal=True)
    np.testing.assert_allclose(e, t.numpy(), rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-13)


def test_kl_div_and_others(torch):
    x = rs.randn(3, 4).astype(np.float32)
    tgt = np.abs(rs.randn(3, 4)).astype(np.float32)
    for red in ("batchmean", "sum", "none", "mean"):
        both(torch, lambda a: F.kl_div(a, ember.tensor(tgt), reduction=red),
             lambda a: torch.nn.functional.kl_div(a, torch.tensor(tgt), reduction=red), x)


def test_one_hot(torch):
    idx = np.array([[0, 2], [1, 3]])
    assert F.one_hot(ember.tensor(idx)).tolist() == torch.nn.functional.one_hot(torch.tensor(idx)).tolist()
    assert F.one_hot(ember.tensor(idx), 6).shape == (2, 2, 6)
    with pytest.raises(RuntimeError):
        F.one_hot(ember.tensor([4]), 3)


def test_dropout_variants():
    x = ember.ones(4, 3, 5, 5)
    y = F.dropout2d(x, 0.5)
    per_channel = y.numpy().reshape(4, 3, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 1.0).sum().item() == 0
    with pytest.raises(ValueError):
        F.dropout(x, -0.1)
    z = ember.ones(10)
    F.dropout(z, 0.5, inplace=True)
    assert set(z.tolist()) <= {0.0, 2.0}


def test_functional_fd():
    ember.set_default_dtype(ember.float64)
    x = ember.randn(2, 3, 4, requires_grad=True)
    check_grads(lambda a: F.pad(a, (1, 2), mode="reflect"), [x], **PER_ELEMENT)
    check_grads(lambda a: F.normalize(a, dim=-1), [x], **PER_ELEMENT)
    check_grads(lambda a: F.mish(a), [x], **PER_ELEMENT)
    w = ember.randn(5, 4, requires_grad=True)
    check_grads(lambda a, b: F.linear(a, b), [x, w], **PER_ELEMENT)


def test_inplace_flags(torch):
    for name, args in [("relu", ()), ("leaky_relu", (0.2,)), ("elu", (1.0,)), ("hardtanh", (-0.5, 0.5)),
                       ("silu", ()), ("relu6", ())]:
        x = rs.randn(6).astype(np.float32) * 3
        e = ember.tensor(x)
        t = torch.tensor(x)
        r = getattr(F, name)(e, *args, inplace=True)
        getattr(torch.nn.functional, name)(t, *args, inplace=True)
        assert r is e
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)


def test_interpolate_antialias_and_gelu_errors(torch):
    # antialias=True was ignored (a silently different downsampled image); upsampling is unaffected by it
    x = np.random.randn(1, 2, 5, 7).astype(np.float32)
    e = F.interpolate(ember.tensor(x), size=(9, 11), mode="bilinear", antialias=True)
    t = torch.nn.functional.interpolate(torch.tensor(x), size=(9, 11), mode="bilinear", antialias=True)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-5)
    # downsampling with antialias is implemented (the widened filter): PyTorch's numbers
    e = F.interpolate(ember.tensor(x), size=(3, 3), mode="bilinear", antialias=True)
    t = torch.nn.functional.interpolate(torch.tensor(x), size=(3, 3), mode="bilinear", antialias=True)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-5)
    for m in (ember, torch):  # RuntimeError as PyTorch (was ValueError)
        with pytest.raises(RuntimeError, match="approximate"):
            m.nn.functional.gelu(m.ones(2), approximate="fast")
