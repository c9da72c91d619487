"""conv1d / conv2d / conv_transpose2d: against PyTorch (forward and gradients, both layouts), float64
finite differences (first and second order), layouts of outputs and gradients, errors."""
import numpy as np
import pytest

import ember
from ember.ops import nn as F
from _checks import check_grads, compare_with_torch

rng = np.random.default_rng(1)

CONV2D_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding="same", dilation=2),
    dict(padding="same"),
    dict(padding="valid", stride=(1, 2)),
    dict(groups=2, stride=(2, 1), padding=(1, 2)),
    dict(groups=4, padding=1),
    dict(stride=3, dilation=(2, 1), padding=2),
]


def _conv_arrays(groups, k=(3, 3), bias=True, N=2, C=4, H=7, W=6, Cout=6):
    x = rng.standard_normal((N, C, H, W))
    w = rng.standard_normal((Cout, C // groups) + k)
    b = rng.standard_normal(Cout) if bias else None
    return x, w, b


@pytest.mark.parametrize("kw", CONV2D_CASES)
@pytest.mark.parametrize("layout", ["nchw", "cl_input", "cl_both"])
def test_conv2d_matches_torch(torch, kw, layout):
    x, w, b = _conv_arrays(kw.get("groups", 1), Cout=8)
    lay = {"nchw": [False, False, False], "cl_input": [True, False, False], "cl_both": [True, True, False]}[layout]
    y = compare_with_torch(torch, lambda x, w, b: F.conv2d(x, w, b, **kw),
                           lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kw), [x, w, b], lay)
    assert y.is_contiguous(memory_format=ember.channels_last) == (layout != "nchw")


@pytest.mark.parametrize("k,kw", [((1, 1), dict()), ((1, 1), dict(stride=2)), ((1, 1), dict(padding=1)),
                                  ((5, 3), dict(padding=(2, 0))), ((2, 2), dict(stride=2))])
@pytest.mark.parametrize("cl", [False, True])
def test_conv2d_kernel_shapes(torch, k, kw, cl):
    x, w, _ = _conv_arrays(1, k, H=8, W=9)
    compare_with_torch(torch, lambda x, w: F.conv2d(x, w, **kw),
                       lambda x, w: torch.nn.functional.conv2d(x, w, **kw), [x, w], [cl, cl])


def test_conv2d_gradient_layouts():
    x = ember.randn(2, 3, 6, 6).to(memory_format=ember.channels_last).requires_grad_()
    w = ember.randn(4, 3, 3, 3).to(memory_format=ember.channels_last).requires_grad_()
    F.conv2d(x, w, padding=1).sum().backward()
    assert x.grad.is_contiguous(memory_format=ember.channels_last)
    assert w.grad.is_contiguous(memory_format=ember.channels_last)
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    w = ember.randn(4, 3, 3, 3, requires_grad=True)
    F.conv2d(x, w, padding=1).sum().backward()
    assert x.grad.is_contiguous() and w.grad.is_contiguous()


def test_conv2d_float32_and_unbatched(torch):
    x = rng.standard_normal((3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    y = F.conv2d(ember.tensor(x), ember.tensor(w), padding=1)
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1)
    assert y.dtype == ember.float32 and tuple(y.shape) == (5, 8, 8)
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1), dict(groups=2, dilation=2, padding=1)])
@pytest.mark.parametrize("cl", [False, True])
def test_conv2d_finite_differences(kw, cl):
    x, w, b = _conv_arrays(kw.get("groups", 1), N=1, C=4, H=5, W=5, Cout=4)

    def fn(x, w, b):
        xx = x.to(memory_format=ember.channels_last) if cl else x
        return F.conv2d(xx, w, b, **kw)
    check_grads(fn, [x, w, b])


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(groups=2, dilation=2, padding=(1, 0)), dict(stride=(1, 3), output_padding=(0, 2))])
@pytest.mark.parametrize("cl", [False, True])
def test_conv_transpose2d_matches_torch(torch, kw, cl):
    g = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 5, 4))
    w = rng.standard_normal((4, 6 // g, 3, 3))
    b = rng.standard_normal(6)
    y = compare_with_torch(torch, lambda x, w, b: F.conv_transpose2d(x, w, b, **kw),
                           lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, **kw), [x, w, b],
                           [cl, False, False])
    assert y.is_contiguous(memory_format=ember.channels_last) == cl


def test_conv_transpose2d_finite_differences():
    x = rng.standard_normal((1, 2, 3, 3))
    w = rng.standard_normal((2, 3, 3, 3))
    check_grads(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), [x, w])


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=2, dilation=2), dict(padding="same", groups=2)])
def test_conv1d_matches_torch(torch, kw):
    x = rng.standard_normal((2, 4, 11))
    w = rng.standard_normal((6, 4 // kw.get("groups", 1), 3))
    b = rng.standard_normal(6)
    compare_with_torch(torch, lambda x, w, b: F.conv1d(x, w, b, **kw),
                       lambda x, w, b: torch.nn.functional.conv1d(x, w, b, **kw), [x, w, b])


def test_conv1d_finite_differences():
    check_grads(lambda x, w: F.conv1d(x, w, stride=2, padding=1),
                      [rng.standard_normal((1, 2, 7)), rng.standard_normal((3, 2, 3))])


def test_conv_errors():
    x = ember.randn(2, 4, 5, 5)
    with pytest.raises(RuntimeError, match="to have 3 channels, but got 4"):
        F.conv2d(x, ember.randn(6, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv2d(x, ember.randn(6, 4, 7, 7))
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(x, ember.randn(6, 4, 3, 3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="strided"):  # (PyTorch's F.conv2d: a RuntimeError; nn.Conv2d: ValueError)
        F.conv2d(x, ember.randn(6, 4, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="4D"):
        F.conv2d(ember.randn(5, 5), ember.randn(6, 4, 3, 3))
    with pytest.raises(RuntimeError, match="divisible"):
        F.conv2d(x, ember.randn(5, 2, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match="output padding"):
        F.conv_transpose2d(x, ember.randn(4, 2, 3, 3), output_padding=1)


@pytest.mark.parametrize("k,kw", [((3, 3), dict(padding=1)), ((3, 3), dict(dilation=2)), ((2, 5), dict(padding=(1, 2))),
                                  ((3, 3), dict(padding=1, groups=2))])
@pytest.mark.parametrize("cl", [False, True])
def test_conv2d_wide_rows(torch, k, kw, cl):
    """Rows wide enough that NCHW stride-1 convolutions take the shifted-plane im2col/col2im."""
    x, w, b = _conv_arrays(kw.get("groups", 1), k, H=5, W=26)
    compare_with_torch(torch, lambda x, w, b: F.conv2d(x, w, b, **kw),
                       lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kw), [x, w, b], [cl, False, False])


def test_conv2d_wide_rows_finite_differences():
    x, w, b = _conv_arrays(1, (3, 3), N=1, C=2, H=3, W=18, Cout=2)
    check_grads(lambda x, w, b: F.conv2d(x, w, b, padding=1), [x, w, b])


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2, padding=2, dilation=2), dict(padding=(0, 1))])
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("blas_threads", [1, 2])
def test_conv2d_blocked_rows(torch, kw, cl, blas_threads, monkeypatch):
    """Images large enough that the forward runs in several blocks of output rows (the blocked kernels
    run with a single-threaded BLAS; the one-GEMM kernels otherwise)."""
    from ember.ops import nn as K
    monkeypatch.setattr(K, "_blocked", lambda N: blas_threads == 1)
    x, w, b = _conv_arrays(1, (3, 3), N=2, C=3, H=47, W=45, Cout=5)
    compare_with_torch(torch, lambda x, w, b: F.conv2d(x, w, b, **kw),
                       lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kw), [x, w, b], [cl, False, False])


@pytest.mark.parametrize("shape,pad", [((2, 5, 9, 8, 6), (1, 1, 1, 1)), ((1, 3, 7, 7, 4), (0, 0, 0, 0)),
                                       ((2, 4, 6, 11, 3), (2, 1, 0, 3)), ((3, 2, 14, 14, 5), (1, 1, 1, 1))])
@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_conv2d_winograd_kernel(torch, shape, pad, nhwc, bias):
    """Winograd F(4x4, 3x3) forward (output sizes that are and are not multiples of 4, asymmetric
    padding, both layouts) against float64 direct convolution and PyTorch's float32 conv2d."""
    from ember.ops import nn as K
    N, C, H, W, Cout = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((Cout, C, 3, 3)).astype(np.float32)
    b = rng.standard_normal(Cout).astype(np.float32) if bias else None
    if nhwc:  # channels_last input and weight (the filter transform's strided branch)
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        w = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    xp = torch.nn.functional.pad(torch.tensor(np.ascontiguousarray(x)), (pad[2], pad[3], pad[0], pad[1]))
    tb = None if b is None else torch.tensor(b)
    tw = torch.tensor(np.ascontiguousarray(w))
    ref32 = torch.nn.functional.conv2d(xp, tw, tb).numpy()
    ref64 = torch.nn.functional.conv2d(xp.double(), tw.double(), None if b is None else tb.double()).numpy()
    Ho, Wo = ref64.shape[2:]
    y = K._conv_winograd(np, x, w, b, pad, Ho, Wo, nhwc)
    assert y.dtype == np.float32 and y.shape == ref64.shape
    assert (y.transpose(0, 2, 3, 1) if nhwc else y).flags.c_contiguous
    np.testing.assert_allclose(y, ref64, rtol=1e-5, atol=1e-5 * np.abs(ref64).max())
    np.testing.assert_allclose(y, ref32, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,pad", [((2, 5, 9, 8, 6), (1, 1, 1, 1)), ((1, 3, 7, 7, 4), (0, 0, 0, 0)),
                                       ((2, 4, 6, 11, 3), (2, 1, 0, 3)), ((3, 2, 14, 14, 5), (1, 1, 1, 1))])
@pytest.mark.parametrize("nhwc", [False, True])
def test_conv2d_winograd_weight_grad_kernel(torch, shape, pad, nhwc):
    """The Winograd weight gradient (adjoint transforms, partial tiles zero-padded) against PyTorch's
    float64 weight gradient, returned in the weight's layout."""
    from ember.ops import nn as K
    N, C, H, W, Cout = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    if nhwc:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    xp = torch.nn.functional.pad(torch.tensor(np.ascontiguousarray(x), dtype=torch.float64),
                                 (pad[2], pad[3], pad[0], pad[1]))
    tw = torch.tensor(rng.standard_normal((Cout, C, 3, 3)), requires_grad=True)
    ty = torch.nn.functional.conv2d(xp, tw)
    g = rng.standard_normal(ty.shape).astype(np.float32)
    ty.backward(torch.tensor(g, dtype=torch.float64))
    ref = tw.grad.numpy()
    gw = K._conv_weight_winograd(np, x, g, pad, nhwc)
    assert gw.dtype == np.float32 and gw.shape == ref.shape
    assert (gw.transpose(0, 2, 3, 1) if nhwc else gw).flags.c_contiguous
    np.testing.assert_allclose(gw, ref, rtol=1e-5, atol=2e-5 * np.abs(ref).max())


@pytest.mark.parametrize("layout", ["nchw", "cl_input", "cl_both"])
def test_conv2d_winograd_dispatch(torch, layout, monkeypatch):
    """conv2d picks Winograd for float32 stride-1 3x3 convolutions within the thresholds (lowered
    here), never for float64, strides or dilations; results and gradients match PyTorch."""
    from ember.ops import nn as K
    monkeypatch.setattr(K, "_blocked", lambda N: True)
    monkeypatch.setattr(K, "_WINO_MIN_C", 1)
    monkeypatch.setattr(K, "_WINO_MIN_TILES", 1)
    calls, wcalls = [], []
    real, realw = K._conv_winograd, K._conv_weight_winograd
    monkeypatch.setattr(K, "_conv_winograd", lambda *a: calls.append(a[-1]) or real(*a))
    monkeypatch.setattr(K, "_conv_weight_winograd", lambda *a: wcalls.append(a[-1]) or realw(*a))
    x = rng.standard_normal((2, 4, 10, 9)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    cl_x, cl_w = {"nchw": (False, False), "cl_input": (True, False), "cl_both": (True, True)}[layout]
    ex = ember.tensor(x, requires_grad=True)
    ew = ember.tensor(w, requires_grad=True)
    xi = ex.contiguous(memory_format=ember.channels_last) if cl_x else ex
    wi = ew.contiguous(memory_format=ember.channels_last) if cl_w else ew
    y = F.conv2d(xi, wi, ember.tensor(b), padding=1)
    assert calls == [cl_x or cl_w]
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, torch.tensor(b), padding=1)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(ty.shape).astype(np.float32)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    assert len(calls) == 2 and wcalls == [cl_w]  # the input gradient is a Winograd convolution too
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-3)
    calls.clear()
    wcalls.clear()
    F.conv2d(ember.tensor(x.astype(np.float64)), ember.tensor(w.astype(np.float64)), padding=1)
    F.conv2d(ember.tensor(x), ember.tensor(w), padding=1, stride=2)
    F.conv2d(ember.tensor(x), ember.tensor(w), padding=2, dilation=2)
    assert calls == [] and wcalls == []
