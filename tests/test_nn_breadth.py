"""The nn breadth of PyTorch's op_db and issue 20: 3-d convolution and pooling, adaptive/fractional
pooling, unpooling, unfold/fold, interpolate in every mode, grid_sample/affine_grid, CTC loss,
margin losses, channel ops, multi-head attention, parametrizations, pruning, hooks and
nn.attention -- each against PyTorch (values, gradients, state_dict keys) and float64 finite
differences. The registry primitives are also checked by tests/op_db_nn.py's entries."""
import itertools

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def _t(a, rg=False):
    return ember.tensor(np.array(a), requires_grad=rg)


def _both(torch, fe, ft, *arrays, nondiff=(), atol=1e-10, seed=0):
    """Run fe on ember tensors and ft on torch tensors of the same arrays; compare the outputs and
    the gradients of a random cotangent."""
    rng = np.random.default_rng(seed)
    te = [ember.tensor(a, requires_grad=(i not in nondiff and a.dtype.kind == "f")) for i, a in enumerate(arrays)]
    tt = [torch.tensor(a, requires_grad=(i not in nondiff and a.dtype.kind == "f")) for i, a in enumerate(arrays)]
    oe, ot = fe(*te), ft(*tt)
    if isinstance(ot, tuple):
        for a, b in zip(oe[1:], ot[1:]):
            if b is not None:
                np.testing.assert_array_equal(a.numpy(), b.numpy())
        oe, ot = oe[0], ot[0]
    assert tuple(oe.shape) == tuple(ot.shape)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), atol=atol, rtol=atol)
    g = rng.standard_normal(tuple(ot.shape))
    oe.backward(ember.tensor(g))
    ot.backward(torch.tensor(g))
    for a, b in zip(te, tt):
        if b.grad is not None:
            ga = np.zeros(tuple(a.shape)) if a.grad is None else a.grad.numpy()
            np.testing.assert_allclose(ga, b.grad.numpy(), atol=atol, rtol=atol)
    return oe


def _load(me, mt):
    me.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in mt.state_dict().items()})


R = np.random.default_rng(1234)


def _r(*shape):
    return R.standard_normal(shape)


# ----------------------------------------------------------------------------- convolution


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(stride=(1, 2, 1), padding=(1, 0, 2),
                                                                     dilation=(2, 1, 1), groups=2),
                                dict(padding="same", dilation=2), dict(padding="valid")])
def test_conv3d_matches_torch(torch, kw):
    x, w, b = _r(2, 4, 6, 5, 7), _r(6, 4 // kw.get("groups", 1), 3, 2, 3), _r(6)
    _both(torch, lambda x, w, b: F.conv3d(x, w, b, **kw), lambda x, w, b: torch.nn.functional.conv3d(x, w, b, **kw),
          x, w, b)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1), dict(stride=(1, 2, 3),
                                dilation=2, output_padding=(1, 1, 0)), dict(groups=2, stride=2)])
def test_conv_transpose3d_and_1d_match_torch(torch, kw):
    x, w, b = _r(2, 4, 3, 4, 3), _r(4, 3, 2, 3, 2), _r(3 * kw.get("groups", 1))
    _both(torch, lambda x, w, b: F.conv_transpose3d(x, w, b, **kw),
          lambda x, w, b: torch.nn.functional.conv_transpose3d(x, w, b, **kw), x, w, b)
    kw1 = {k: (v[0] if isinstance(v, tuple) else v) for k, v in kw.items()}
    x, w = _r(2, 4, 5), _r(4, 3, 3)
    _both(torch, lambda x, w, b: F.conv_transpose1d(x, w, b, **kw1),
          lambda x, w, b: torch.nn.functional.conv_transpose1d(x, w, b, **kw1), x, w, b)


def test_conv_transpose2d_output_padding_above_stride(torch):
    # allowed below the dilation: the backward used to fail on the cropped adjoint
    x, w = _r(1, 2, 3, 3), _r(2, 2, 2, 2)
    _both(torch, lambda x, w: F.conv_transpose2d(x, w, stride=1, dilation=2, output_padding=1),
          lambda x, w: torch.nn.functional.conv_transpose2d(x, w, stride=1, dilation=2, output_padding=1), x, w)


def test_conv3d_gradcheck_second_order():
    x = _t(_r(1, 2, 3, 4, 3), True)
    w = _t(_r(2, 2, 2, 2, 2), True)
    assert gradcheck(lambda x, w: F.conv3d(x, w, stride=2, padding=1), (x, w))
    assert gradgradcheck(lambda x, w: F.conv3d(x, w, stride=2, padding=1), (x, w))
    assert gradgradcheck(lambda x, w: F.conv_transpose3d(x, w, stride=2, output_padding=1), (x, w))


def test_conv_modules_state_dict_and_forward(torch):
    for ec, tc, args, shape in ((nn.Conv3d, torch.nn.Conv3d, (2, 4, 3), (2, 2, 5, 5, 5)),
                                (nn.ConvTranspose1d, torch.nn.ConvTranspose1d, (2, 4, 3), (2, 2, 5)),
                                (nn.ConvTranspose3d, torch.nn.ConvTranspose3d, (2, 4, 3), (2, 2, 3, 3, 3))):
        kw = dict(stride=2, padding=1)
        me, mt = ec(*args, **kw), tc(*args, **kw)
        assert list(me.state_dict()) == list(mt.state_dict())
        assert repr(me) == repr(mt)
        _load(me, mt)
        x = R.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(me(ember.tensor(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(),
                                   atol=1e-5)
    me, mt = nn.Conv3d(2, 2, 3, padding=1, padding_mode="circular"), torch.nn.Conv3d(2, 2, 3, padding=1,
                                                                                        padding_mode="circular")
    _load(me, mt)
    x = R.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(me(ember.tensor(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(), atol=1e-5)
    me, mt = nn.ConvTranspose3d(2, 3, 3, stride=2), torch.nn.ConvTranspose3d(2, 3, 3, stride=2)
    _load(me, mt)
    x = R.standard_normal((1, 2, 3, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(me(ember.tensor(x), output_size=(8, 8, 7)).detach().numpy(),
                               mt(torch.tensor(x), output_size=(8, 8, 7)).detach().numpy(), atol=1e-5)


def test_conv3d_errors(torch):
    for m in (ember, torch):
        with pytest.raises(RuntimeError):
            m.nn.functional.conv3d(m.ones(1, 2, 3, 3), m.ones(2, 2, 1, 1, 1))
        with pytest.raises(RuntimeError):
            m.nn.functional.conv3d(m.ones(1, 3, 3, 3, 3), m.ones(2, 2, 1, 1, 1))
        with pytest.raises(RuntimeError):
            m.nn.functional.conv_transpose3d(m.ones(1, 2, 3, 3, 3), m.ones(2, 2, 2, 2, 2), stride=1,
                                             output_padding=1)


# ----------------------------------------------------------------------------- pooling


def _distinct(*shape):
    n = int(np.prod(shape))
    v = np.linspace(-2, 2, n) + R.uniform(0, 1e-3, n)
    R.shuffle(v)
    return v.reshape(shape)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 0, 1), dilation=(2, 1, 1),
                                     ceil_mode=True),
                                dict(kernel_size=2)])
def test_max_avg_pool3d_match_torch(torch, kw):
    x = _distinct(2, 3, 7, 6, 5)
    _both(torch, lambda x: F.max_pool3d(x, return_indices=True, **kw),
          lambda x: torch.nn.functional.max_pool3d(x, return_indices=True, **kw), x)
    _both(torch, lambda x: F.max_pool3d(x, **kw), lambda x: torch.nn.functional.max_pool3d(x, **kw), x[0])
    akw = {k: v for k, v in kw.items() if k != "dilation"}
    for extra in (dict(), dict(count_include_pad=False), dict(divisor_override=3)):
        _both(torch, lambda x: F.avg_pool3d(x, **akw, **extra),
              lambda x: torch.nn.functional.avg_pool3d(x, **akw, **extra), x)


def test_adaptive_pools_match_torch(torch):
    x = _distinct(2, 3, 7, 6, 5)
    TF = torch.nn.functional
    _both(torch, lambda x: F.adaptive_max_pool3d(x, (3, 4, 2), True), lambda x: TF.adaptive_max_pool3d(x, (3, 4, 2), True), x)
    _both(torch, lambda x: F.adaptive_max_pool3d(x, 2), lambda x: TF.adaptive_max_pool3d(x, 2), x[0])
    _both(torch, lambda x: F.adaptive_max_pool1d(x, 4, True), lambda x: TF.adaptive_max_pool1d(x, 4, True), x[:, :, 0, 0])
    _both(torch, lambda x: F.adaptive_max_pool2d(x, (4, 4), True), lambda x: TF.adaptive_max_pool2d(x, (4, 4), True), x[:, :, 0])
    _both(torch, lambda x: F.adaptive_avg_pool3d(x, (3, None, 2)), lambda x: TF.adaptive_avg_pool3d(x, (3, None, 2)), x)
    for ec, tc, a in ((nn.AdaptiveMaxPool1d, torch.nn.AdaptiveMaxPool1d, 3), (nn.AdaptiveMaxPool3d,
                      torch.nn.AdaptiveMaxPool3d, (2, 3, 2)), (nn.AdaptiveAvgPool3d, torch.nn.AdaptiveAvgPool3d, 2)):
        xx = x[:, :, 0, 0] if ec is nn.AdaptiveMaxPool1d else x
        np.testing.assert_allclose(ec(a)(_t(xx)).numpy(), tc(a)(torch.tensor(xx)).numpy(), atol=1e-12)
        assert repr(ec(a)) == repr(tc(a))


def test_fractional_max_pool_matches_torch_with_given_samples(torch):
    x = _distinct(2, 3, 7, 6)
    s = R.uniform(0, 1, (2, 3, 2))
    TF = torch.nn.functional
    _both(torch, lambda x, s: F.fractional_max_pool2d(x, 2, output_size=(4, 3), _random_samples=s, return_indices=True),
          lambda x, s: TF.fractional_max_pool2d(x, 2, output_size=(4, 3), _random_samples=s, return_indices=True),
          x, s, nondiff=(1,))
    x3, s3 = _distinct(1, 2, 6, 5, 7), R.uniform(0, 1, (1, 2, 3))
    _both(torch, lambda x, s: F.fractional_max_pool3d(x, (2, 1, 3), output_ratio=(0.5, 0.6, 0.5), _random_samples=s),
          lambda x, s: TF.fractional_max_pool3d(x, (2, 1, 3), output_ratio=(0.5, 0.6, 0.5), _random_samples=s),
          x3, s3, nondiff=(1,))
    # without samples: fresh random windows, each output a window maximum of the right size
    out, idx = nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)(_t(x))
    assert tuple(out.shape) == (2, 3, 3, 3)
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1),
                                                                  2).reshape(out.shape))


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_unpool_roundtrip_matches_torch(torch, nsp):
    x = _distinct(*((2, 3) + (6, 4, 8)[:nsp]))
    tp = getattr(torch.nn.functional, f"max_pool{nsp}d")
    o, i = tp(torch.tensor(x), 2, return_indices=True)
    eu = getattr(F, f"max_unpool{nsp}d")
    tu = getattr(torch.nn.functional, f"max_unpool{nsp}d")
    _both(torch, lambda a, i: eu(a, i, 2), lambda a, i: tu(a, i, 2), o.numpy(), i.numpy())
    size = x.shape[2:]
    _both(torch, lambda a, i: eu(a, i, 2, output_size=size), lambda a, i: tu(a, i, 2, output_size=size),
          o.numpy(), i.numpy())
    me, mt = getattr(nn, f"MaxUnpool{nsp}d")(2), getattr(torch.nn, f"MaxUnpool{nsp}d")(2)
    assert repr(me) == repr(mt)
    with pytest.raises(RuntimeError, match="invalid max index"):
        eu(_t(o.numpy()), _t(i.numpy() + 1000), 2)


def test_pool_modules(torch):
    x = _distinct(1, 2, 4, 6, 4)
    for ec, tc, a in ((nn.MaxPool3d, torch.nn.MaxPool3d, (2,)), (nn.AvgPool3d, torch.nn.AvgPool3d, (2,))):
        np.testing.assert_allclose(ec(*a)(_t(x)).numpy(), tc(*a)(torch.tensor(x)).numpy(), atol=1e-12)


# ----------------------------------------------------------------------------- activations, channel ops, norms


def test_prelu_rrelu_channel_shuffle_lrn(torch):
    TF = torch.nn.functional
    x = _r(2, 6, 4, 5)
    _both(torch, F.prelu, TF.prelu, x, np.abs(_r(6)))
    _both(torch, F.prelu, TF.prelu, x, np.abs(_r(1)))
    _both(torch, lambda x: F.rrelu(x, 0.1, 0.3), lambda x: TF.rrelu(x, 0.1, 0.3), x)
    _both(torch, lambda x: F.channel_shuffle(x, 3), lambda x: TF.channel_shuffle(x, 3), x)
    for size, kw in ((3, {}), (4, dict(alpha=0.1, beta=0.5, k=2.0))):
        _both(torch, lambda x: F.local_response_norm(x, size, **kw), lambda x: TF.local_response_norm(x, size, **kw), x)
    _both(torch, lambda x: F.local_response_norm(x, 2), lambda x: TF.local_response_norm(x, 2), _r(2, 5, 3, 2, 2))
    assert gradcheck(lambda x: F.local_response_norm(x, 3), (_t(_r(1, 4, 3), True),))
    # modules: PReLU's weight, the others' repr
    me, mt = nn.PReLU(6), torch.nn.PReLU(6)
    assert list(me.state_dict()) == list(mt.state_dict())
    for ec, tc, a in ((nn.ChannelShuffle, torch.nn.ChannelShuffle, (2,)), (nn.LocalResponseNorm,
                      torch.nn.LocalResponseNorm, (3,)), (nn.RReLU, torch.nn.RReLU, ())):
        assert repr(ec(*a)) == repr(tc(*a))


def test_rrelu_training_draws_slopes_in_range():
    x = _t(_r(1000), True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    xv, yv, g = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    pos = xv > 0
    np.testing.assert_array_equal(yv[pos], xv[pos])
    slope = yv[~pos] / xv[~pos]
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.01
    np.testing.assert_allclose(g[~pos], slope)
    m = nn.RReLU(0.1, 0.3)
    m.eval()
    np.testing.assert_allclose(m(_t([-1.0])).numpy(), [-0.2])


def test_channel_dropouts():
    x = _t(np.ones((4, 8, 2, 3, 2)))
    y = F.dropout3d(x, 0.5, training=True).numpy().reshape(4, 8, -1)
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert (y.min(-1) == y.max(-1)).all()  # whole channels
    y = F.feature_alpha_dropout(_t(_r(4, 8, 5)), 0.5, training=True).numpy()
    assert tuple(y.shape) == (4, 8, 5)
    alpha = -1.7580993408473766
    a = (0.5 * (1 + 0.5 * alpha ** 2)) ** -0.5
    b = -a * alpha * 0.5
    dropped = np.isclose(y, alpha * a + b).all(-1)
    assert dropped.any() and not dropped.all()
    assert nn.FeatureAlphaDropout(0.2).eval()(x) is x
    assert nn.Dropout3d(0.2).eval()(x) is x
    with pytest.warns(UserWarning, match="dropout3d"):
        F.dropout3d(_t(np.ones((2, 3))), 0.5)


# ----------------------------------------------------------------------------- losses


def test_margin_losses(torch):
    TF = torch.nn.functional
    t = R.integers(0, 5, (4,))
    for kw in (dict(), dict(p=2, margin=0.5), dict(reduction="none"), dict(reduction="sum")):
        _both(torch, lambda x, t: F.multi_margin_loss(x, t, **kw), lambda x, t: TF.multi_margin_loss(x, t, **kw),
              _r(4, 5), t)
    _both(torch, lambda x, t, w: F.multi_margin_loss(x, t, weight=w), lambda x, t, w: TF.multi_margin_loss(x, t, weight=w),
          _r(4, 5), t, np.abs(_r(5)), nondiff=(2,))
    tg = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [0, 1, 2, 3], [-1, 1, 2, 0]])
    for red in ("mean", "none", "sum"):
        _both(torch, lambda x, t: F.multilabel_margin_loss(x, t, reduction=red),
              lambda x, t: TF.multilabel_margin_loss(x, t, reduction=red), _r(4, 4), tg)
    a, p, n = _r(3, 4, 5)
    _both(torch, lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, swap=True, margin=0.3),
          lambda a, p, n: TF.triplet_margin_with_distance_loss(a, p, n, swap=True, margin=0.3), a, p, n)
    me, mt = nn.MultiMarginLoss(weight=_t(np.ones(5))), torch.nn.MultiMarginLoss(weight=torch.ones(5))
    assert list(me.state_dict()) == list(mt.state_dict())
    assert isinstance(nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance()),
                      nn.TripletMarginWithDistanceLoss)
    with pytest.raises(ValueError):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(RuntimeError, match="target"):
        F.multi_margin_loss(_t(_r(2, 3)), _t(np.array([0, 7])))


def _ctc_case(T=8, N=3, C=5, S=4, il=(8, 6, 7), tl=(4, 0, 2)):
    x = _r(T, N, C)
    tg = R.integers(1, C, (N, S))
    tg[0, :2] = tg[0, 0]
    return x, tg, np.array(il), np.array(tl)


@pytest.mark.parametrize("kw", [dict(), dict(reduction="none"), dict(reduction="sum", blank=4),
                                dict(zero_infinity=True, reduction="none")])
def test_ctc_loss_matches_torch(torch, kw):
    x, tg, il, tl = _ctc_case()
    if kw.get("blank") == 4:
        tg = np.where(tg == 4, 1, tg)
    if kw.get("zero_infinity"):
        il = np.array([3, 6, 7])  # sample 0 cannot be aligned: an infinite loss, zeroed
    TF = torch.nn.functional
    _both(torch, lambda x, t, i, l: F.ctc_loss(x.log_softmax(2), t, i, l, **kw),
          lambda x, t, i, l: TF.ctc_loss(x.log_softmax(2), t, i, l, **kw), x, tg, il, tl)
    # concatenated targets, lengths as tuples, unbatched input
    flat = np.concatenate([tg[n, :tl[n]] for n in range(3)])
    _both(torch, lambda x, t: F.ctc_loss(x.log_softmax(2), t, tuple(il), tuple(tl)),
          lambda x, t: TF.ctc_loss(x.log_softmax(2), t, tuple(il), tuple(tl)), x, flat)
    _both(torch, lambda x, t: F.ctc_loss(x.log_softmax(1), t, (8,), (4,)),
          lambda x, t: TF.ctc_loss(x.log_softmax(1), t, (8,), (4,)), x[:, 0], tg[0])
    for m in (ember, torch):
        with pytest.raises(TypeError):
            m.nn.functional.ctc_loss(m.zeros(8, 5), m.ones(4, dtype=m.int64), 8, 4)


def test_ctc_loss_finite_differences_and_forward_mode():
    x, tg, il, tl = _ctc_case(T=5, N=2, C=4, S=3, il=(5, 4), tl=(3, 1))

    def f(x):
        return F.ctc_loss(x.log_softmax(2), _t(tg), _t(il), _t(tl))
    assert gradcheck(f, (_t(x, True),))
    import ember.autograd.forward_ad as fwAD
    v = _r(*x.shape)
    with fwAD.dual_level():
        out = f(fwAD.make_dual(_t(x), _t(v)))
        tan = fwAD.unpack_dual(out).tangent.item()
    eps = 1e-6
    fd = (f(_t(x + eps * v)).item() - f(_t(x - eps * v)).item()) / (2 * eps)
    assert abs(tan - fd) < 1e-6
    m = nn.CTCLoss(blank=0, reduction="sum")
    assert m(_t(x).log_softmax(2), _t(tg), _t(il), _t(tl)).item() == pytest.approx(
        F.ctc_loss(_t(x).log_softmax(2), _t(tg), _t(il), _t(tl), reduction="sum").item())


def test_ctc_loss_errors():
    x, tg, il, tl = _ctc_case()
    with pytest.raises(RuntimeError, match="blank"):
        F.ctc_loss(_t(x), _t(tg), _t(il), _t(tl), blank=9)
    with pytest.raises(RuntimeError, match="input_lengths"):
        F.ctc_loss(_t(x), _t(tg), _t(np.array([9, 1, 1])), _t(tl))
    with pytest.raises(ValueError):
        F.ctc_loss(_t(x), _t(tg), _t(il), _t(tl), reduction="avg")


def test_linear_cross_entropy(torch):
    x, w, b, t = _r(4, 5), _r(3, 5), _r(3), R.integers(0, 3, 4)
    _both(torch, lambda x, w, b, t: F.linear_cross_entropy(x, w, t, linear_bias=b, label_smoothing=0.1),
          lambda x, w, b, t: torch.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, label_smoothing=0.1),
          x, w, b, t)
    opts = nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    _both(torch, lambda x, w, t: F.linear_cross_entropy(x, w, t, options=opts),
          lambda x, w, t: torch.nn.functional.linear_cross_entropy(x, w, t, options=torch.nn.LinearCrossEntropyOptions(
              batch_chunk_size=2)), x, w, t, atol=1e-6)
    for m in (nn, torch.nn):
        with pytest.raises(ValueError):
            m.LinearCrossEntropyOptions(batch_chunk_size=0)


# ----------------------------------------------------------------------------- unfold / fold, resampling


def test_unfold_fold(torch):
    TF = torch.nn.functional
    x = _r(2, 3, 5, 6)
    for kw in (dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))):
        _both(torch, lambda x: F.unfold(x, **kw), lambda x: TF.unfold(x, **kw), x)
        cols = TF.unfold(torch.tensor(x), **kw).numpy()
        _both(torch, lambda c: F.fold(c, (5, 6), **kw), lambda c: TF.fold(c, (5, 6), **kw), cols)
        me, mt = nn.Unfold(**kw), torch.nn.Unfold(**kw)
        assert repr(me) == repr(mt)
        np.testing.assert_allclose(nn.Fold((5, 6), **kw)(_t(cols)).numpy(), torch.nn.Fold((5, 6), **kw)(
            torch.tensor(cols)).numpy(), atol=1e-12)
    assert gradgradcheck(lambda x: F.fold(F.unfold(x, 2, stride=1), (3, 4), 2), (_t(_r(1, 2, 3, 4), True),))
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="sliding blocks"):
            m.nn.functional.fold(m.ones(1, 12, 7), (4, 5), 2)


_MODES = {1: ["nearest", "nearest-exact", "linear", "area"], 2: ["nearest", "nearest-exact", "bilinear", "bicubic",
                                                                   "area"], 3: ["nearest", "nearest-exact", "trilinear",
                                                                               "area"]}


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_interpolate_every_mode_matches_torch(torch, nsp):
    x = _r(*((2, 3) + (5, 7, 6)[:nsp]))
    sizes = [dict(size=(9, 4, 8)[:nsp]), dict(scale_factor=1.7), dict(scale_factor=0.4),
             dict(scale_factor=(2.5, 0.6, 1.3)[:nsp], recompute_scale_factor=True)]
    for mode in _MODES[nsp]:
        acs = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
        aas = [False, True] if mode in ("bilinear", "bicubic") else [False]
        for sz, ac, aa in itertools.product(sizes, acs, aas):
            kw = dict(mode=mode, align_corners=ac, antialias=aa, **sz)
            _both(torch, lambda x: F.interpolate(x, **kw), lambda x: torch.nn.functional.interpolate(x, **kw), x)


def test_interpolate_long_dims_tap_path(torch):
    # past ember.ops.sampling._DENSE_MAX the resampling runs tap by tap instead of as one matmul
    x = _r(1, 2, 3, 200)
    for kw in (dict(size=(5, 90), mode="bilinear"), dict(size=(4, 333), mode="bicubic", align_corners=True),
               dict(size=(2, 70), mode="bicubic", antialias=True), dict(scale_factor=(1.0, 0.3), mode="bilinear",
                                                                      antialias=True)):
        _both(torch, lambda x: F.interpolate(x, **kw), lambda x: torch.nn.functional.interpolate(x, **kw), x)


def test_interpolate_gradcheck_and_errors(torch):
    x = _t(_r(1, 2, 5, 4), True)
    assert gradcheck(lambda x: F.interpolate(x, size=(3, 7), mode="bicubic", antialias=True), (x,))
    assert gradcheck(lambda x: F.interpolate(x, scale_factor=0.6, mode="area"), (x,))
    for m in (ember, torch):
        with pytest.raises(ValueError, match="Anti-alias"):
            m.nn.functional.interpolate(m.ones(1, 2, 4), size=2, mode="linear", antialias=True)
        with pytest.raises(ValueError, match="align_corners"):
            m.nn.functional.interpolate(m.ones(1, 2, 4), size=2, mode="nearest", align_corners=True)
        with pytest.raises(NotImplementedError):
            m.nn.functional.interpolate(m.ones(1, 2, 4), size=2, mode="bicubic")
    _both(torch, lambda x: F.upsample_bilinear(x, scale_factor=2), lambda x: torch.nn.functional.upsample_bilinear(
        x, scale_factor=2), _r(1, 2, 3, 4))
    _both(torch, lambda x: F.upsample_nearest(x, size=(5, 7)), lambda x: torch.nn.functional.upsample_nearest(
        x, size=(5, 7)), _r(1, 2, 3, 4))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(torch, mode, padding_mode, align_corners):
    TF = torch.nn.functional
    x, g = _r(2, 3, 5, 6), R.uniform(-1.3, 1.3, (2, 4, 3, 2))
    _both(torch, lambda x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
          lambda x, g: TF.grid_sample(x, g, mode, padding_mode, align_corners), x, g)
    if mode != "bicubic":
        x, g = _r(2, 3, 4, 5, 3), R.uniform(-1.3, 1.3, (2, 3, 2, 4, 3))
        _both(torch, lambda x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
              lambda x, g: TF.grid_sample(x, g, mode, padding_mode, align_corners), x, g)


def test_affine_grid_and_spatial_transformer(torch):
    TF = torch.nn.functional
    for ac in (False, True):
        _both(torch, lambda t: F.affine_grid(t, (2, 3, 4, 5), align_corners=ac),
              lambda t: TF.affine_grid(t, (2, 3, 4, 5), align_corners=ac), _r(2, 2, 3))
        _both(torch, lambda t: F.affine_grid(t, (2, 3, 4, 5, 3), align_corners=ac),
              lambda t: TF.affine_grid(t, (2, 3, 4, 5, 3), align_corners=ac), _r(2, 3, 4))
    theta = _t(np.array([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.0]]]), True)
    img = _t(_r(1, 2, 5, 6), True)
    assert gradcheck(lambda t, x: F.grid_sample(x, F.affine_grid(t, (1, 2, 4, 4), align_corners=False),
                                                align_corners=False), (theta, img))
    for m in (ember, torch):
        with pytest.raises(ValueError):
            m.nn.functional.grid_sample(m.ones(1, 1, 2, 2), m.zeros(1, 1, 1, 2), mode="linear")


# ----------------------------------------------------------------------------- attention


def test_multi_head_attention_forward_and_module(torch):
    TF = torch.nn.functional
    L, S, N, E, H = 4, 5, 2, 6, 2
    q, k, v = _r(L, N, E), _r(S, N, E), _r(S, N, E)
    ipw, ipb, opw, opb = _r(3 * E, E), _r(3 * E), _r(E, E), _r(E)
    mask = np.triu(np.ones((L, S), bool), 1)
    kpm = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]], bool)
    for need in (True, False):
        def fe(q, k, v, a, b, c, d, need=need):
            return F.multi_head_attention_forward(q, k, v, E, H, a, b, None, None, False, 0.0, c, d,
                                                  attn_mask=_t(mask), key_padding_mask=_t(kpm), need_weights=need)

        def ft(q, k, v, a, b, c, d, need=need):
            return TF.multi_head_attention_forward(q, k, v, E, H, a, b, None, None, False, 0.0, c, d,
                                                   attn_mask=torch.tensor(mask), key_padding_mask=torch.tensor(kpm),
                                                   need_weights=need)
        _both(torch, lambda *a: fe(*a)[0], lambda *a: ft(*a)[0], q, k, v, ipw, ipb, opw, opb)
    # the module with kdim/vdim, bias_k/bias_v and a zero attention slot: PyTorch's parameters and numbers
    me = nn.MultiheadAttention(E, H, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    mt = torch.nn.MultiheadAttention(E, H, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    assert list(me.state_dict()) == list(mt.state_dict())
    _load(me, mt)
    q, k, v = (R.standard_normal(s).astype(np.float32) for s in ((N, L, E), (N, S, 3), (N, S, 5)))
    oe, we = me(_t(q), _t(k), _t(v))
    ot, wt = mt(torch.tensor(q), torch.tensor(k), torch.tensor(v))
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), atol=1e-5)


def test_sdpa_kernel(torch):
    from ember.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention import SDPBackend as TB
    assert [(b.name, int(b)) for b in SDPBackend] == [(b.name, int(b.value)) for b in TB.__members__.values()]
    q = ember.randn(1, 2, 3, 4)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel(SDPBackend.MATH):
        F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]):
        with pytest.raises(RuntimeError, match="No viable backend"):
            F.scaled_dot_product_attention(q, q, q)
    F.scaled_dot_product_attention(q, q, q)  # restored
    with pytest.raises(AssertionError):
        with sdpa_kernel(["math"]):
            pass


# ----------------------------------------------------------------------------- parametrizations, pruning, hooks


class _Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


def test_parametrize_register_assign_cache_remove(torch):
    from ember.nn.utils import parametrize as P
    m = nn.Linear(3, 3)
    P.register_parametrization(m, "weight", _Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and P.type_before_parametrizations(m) is nn.Linear
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    m(ember.randn(2, 3)).sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    A = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 5.0, 6.0]], np.float32)
    m.weight = _t(A)  # through right_inverse
    np.testing.assert_allclose(m.weight.detach().numpy(), A)
    with P.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and list(m.state_dict()) == ["bias", "weight"]  # (PyTorch's order too)
    np.testing.assert_allclose(m.weight.detach().numpy(), A)
    # the same keys as PyTorch's for a parametrization of PyTorch's own
    mt = torch.nn.Linear(3, 3)

    class TS(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT
    torch.nn.utils.parametrize.register_parametrization(mt, "weight", TS())
    me = P.register_parametrization(nn.Linear(3, 3), "weight", _Symmetric())
    assert list(me.state_dict()) == list(mt.state_dict())
    with pytest.raises(ValueError, match="shape"):
        class Bad(nn.Module):
            def forward(self, X):
                return X[:2]
        P.register_parametrization(nn.Linear(3, 3), "weight", Bad())


def test_weight_norm_and_spectral_norm_match_torch(torch):
    from ember.nn.utils.parametrizations import weight_norm, spectral_norm
    tp = torch.nn.utils.parametrizations
    x = R.standard_normal((2, 4)).astype(np.float32)
    for fe, ft in ((weight_norm, tp.weight_norm), (spectral_norm, tp.spectral_norm)):
        me, mt = fe(nn.Linear(4, 3)), ft(torch.nn.Linear(4, 3))
        assert list(me.state_dict()) == list(mt.state_dict())
        _load(me, mt)
        for _ in range(2):  # spectral_norm: a power iteration per training forward, on both sides
            np.testing.assert_allclose(me(_t(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(), atol=1e-5)
        me.eval()
        mt.eval()
        np.testing.assert_allclose(me.weight.detach().numpy(), mt.weight.detach().numpy(), atol=1e-6)
    me = weight_norm(nn.Conv2d(2, 3, 3), dim=None)
    assert me.parametrizations.weight.original0.dim() == 0
    me = spectral_norm(nn.ConvTranspose2d(2, 3, 3))
    assert tuple(me.parametrizations.weight[0]._u.shape) == (3,)


def _numpy_linalg_standins(monkeypatch):
    """Forward-only NumPy/SciPy stand-ins for the ember.linalg ops orthogonal needs (added by the
    linalg work in parallel): they let the parametrization's own logic be checked against PyTorch."""
    import scipy.linalg as sl

    def wrap(f):
        def g(*a):
            out = f(*[x.detach().numpy() for x in a])
            return tuple(ember.tensor(o) for o in out) if isinstance(out, tuple) else ember.tensor(out)
        return g

    def householder_product(A, tau):
        n, k = A.shape
        Q = np.eye(n)
        for i in range(len(tau)):
            v = np.zeros(n)
            v[i] = 1
            v[i + 1:] = A[i + 1:, i]
            Q = Q @ (np.eye(n) - tau[i] * np.outer(v, v))
        return Q[:, :k]
    for name, f in (("matrix_exp", sl.expm), ("qr", lambda a: np.linalg.qr(a)), ("solve", np.linalg.solve),
                    ("householder_product", householder_product)):
        monkeypatch.setattr(ember.linalg, name, wrap(f), raising=False)


def test_orthogonal(torch, monkeypatch):
    from ember.nn.utils.parametrizations import orthogonal
    L = ember.linalg
    real = all(hasattr(L, n) for n in ("matrix_exp", "qr", "householder_product", "solve"))
    if not real:
        with pytest.raises(NotImplementedError, match="ember.linalg"):
            orthogonal(nn.Linear(3, 3))
        _numpy_linalg_standins(monkeypatch)
    for shape, mapname in (((3, 3), "matrix_exp"), ((3, 3), "cayley"), ((5, 3), "householder"),
                           ((3, 5), "matrix_exp"), ((4, 4), "householder"), ((3, 5), "cayley")):
        me = orthogonal(nn.Linear(shape[1], shape[0]).double(), orthogonal_map=mapname)
        mt = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(shape[1], shape[0]).double(),
                                                        orthogonal_map=mapname)
        assert list(me.state_dict()) == list(mt.state_dict())
        Q = me.weight.detach().numpy()
        G = Q @ Q.T if shape[0] <= shape[1] else Q.T @ Q
        np.testing.assert_allclose(G, np.eye(min(shape)), atol=1e-10)
        with torch.no_grad():  # away from the identity: the map itself against PyTorch's
            o = mt.parametrizations.weight.original
            o.add_(torch.tensor(R.standard_normal(tuple(o.shape)) * 0.3))
        _load(me, mt)
        np.testing.assert_allclose(me.weight.detach().numpy(), mt.weight.detach().numpy(), atol=1e-10)
        if real:
            me(ember.randn(2, shape[1], dtype=ember.float64)).sum().backward()
            assert me.parametrizations.weight.original.grad is not None


def test_orthogonal_without_trivialization(torch):
    """use_trivialization=False: the map of the unconstrained matrix itself (no base buffer); assigning
    works for Householder (the reflectors of the new value's QR) and is refused for the other maps, as
    in PyTorch; complex Householder is refused at registration."""
    from ember.nn.utils.parametrizations import orthogonal
    TO = torch.nn.utils.parametrizations.orthogonal
    for mapname in ("matrix_exp", "cayley", "householder"):
        for shape in ((4, 4), (5, 3), (3, 5)):
            mt = torch.nn.Linear(shape[1], shape[0]).double()
            me = nn.Linear(shape[1], shape[0]).double()
            _load(me, mt)
            TO(mt, orthogonal_map=mapname, use_trivialization=False)
            orthogonal(me, orthogonal_map=mapname, use_trivialization=False)
            assert list(me.state_dict()) == list(mt.state_dict())
            for a, b in ((me.weight, mt.weight), (me.parametrizations.weight.original,
                                                  mt.parametrizations.weight.original)):
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
            q = np.linalg.qr(R.standard_normal((max(shape), max(shape))))[0][:shape[0], :shape[1]]
            if mapname == "householder":
                me.weight = _t(q)
                mt.weight = torch.tensor(q)
                np.testing.assert_allclose(me.weight.detach().numpy(), q, atol=1e-12)
                np.testing.assert_allclose(me.parametrizations.weight.original.detach().numpy(),
                                           mt.parametrizations.weight.original.detach().numpy(), atol=1e-12)
            else:
                for m, lib in ((me, ember), (mt, torch)):
                    with pytest.raises(NotImplementedError, match="not possible to assign"):
                        m.weight = lib.tensor(q)
            x = R.standard_normal((2, shape[1]))
            me(_t(x)).square().sum().backward()
            mt(torch.tensor(x)).square().sum().backward()
            np.testing.assert_allclose(me.parametrizations.weight.original.grad.numpy(),
                                       mt.parametrizations.weight.original.grad.numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="householder parametrization does not support complex"):
        orthogonal(nn.Linear(3, 4, dtype=ember.complex64), orthogonal_map="householder")


def test_prune_matches_torch(torch):
    import torch.nn.utils.prune as TP
    from ember.nn.utils import prune as EP
    me, mt = nn.Linear(5, 4), torch.nn.Linear(5, 4)
    _load(me, mt)
    EP.l1_unstructured(me, "weight", 0.3)
    TP.l1_unstructured(mt, "weight", 0.3)
    assert list(me.state_dict()) == list(mt.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    np.testing.assert_array_equal(me.weight_mask.numpy(), mt.weight_mask.numpy())
    EP.ln_structured(me, "weight", 0.5, 2, 0)
    TP.ln_structured(mt, "weight", 0.5, 2, 0)
    EP.l1_unstructured(me, "weight", 2)
    TP.l1_unstructured(mt, "weight", 2)
    np.testing.assert_array_equal(me.weight_mask.numpy(), mt.weight_mask.numpy())
    x = R.standard_normal((2, 5)).astype(np.float32)
    np.testing.assert_allclose(me(_t(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(), atol=1e-6)
    assert EP.is_pruned(me)
    me(_t(x)).sum().backward()
    assert (me.weight_orig.grad.numpy()[me.weight_mask.numpy() == 0] == 0).all()
    EP.remove(me, "weight")
    TP.remove(mt, "weight")
    assert list(me.state_dict()) == list(mt.state_dict()) and not EP.is_pruned(me)
    np.testing.assert_allclose(me.weight.detach().numpy(), mt.weight.detach().numpy())
    a, at, b, bt = nn.Linear(5, 4), torch.nn.Linear(5, 4), nn.Linear(4, 3), torch.nn.Linear(4, 3)
    _load(a, at)
    _load(b, bt)
    EP.global_unstructured([(a, "weight"), (b, "weight")], EP.L1Unstructured, amount=0.4)
    TP.global_unstructured([(at, "weight"), (bt, "weight")], TP.L1Unstructured, amount=0.4)
    np.testing.assert_array_equal(a.weight_mask.numpy(), at.weight_mask.numpy())
    np.testing.assert_array_equal(b.weight_mask.numpy(), bt.weight_mask.numpy())
    c = nn.Conv2d(2, 4, 3)
    EP.random_structured(c, "weight", 0.5, 0)
    assert sorted(c.weight_mask.numpy().reshape(4, -1).sum(1)) == [0, 0, 18, 18]
    with pytest.raises(ValueError):
        EP.l1_unstructured(nn.Linear(2, 2), "weight", 1.5)
    with pytest.raises(ValueError, match="pruned"):
        EP.remove(nn.Linear(2, 2), "weight")


def test_utils_hooks():
    from ember.utils.hooks import RemovableHandle, unserializable_hook
    d, e = {}, {}
    h = RemovableHandle(d, extra_dict=e)
    d[h.id] = 1
    e[h.id] = 2
    h.remove()
    assert d == {} and e == {}
    with RemovableHandle(d) as h2:
        d[h2.id] = 3
    assert d == {}
    assert unserializable_hook(lambda g: g).__torch_unserializable__
    m = nn.Linear(2, 2)
    assert isinstance(m.register_forward_hook(lambda *a: None), RemovableHandle)


def test_channel_dropout_shapes_and_warnings_as_pytorch(torch):
    # dropout2d draws one value per entry of the first two dims whatever the rank (a 3-D input is
    # (N, C, L), with PyTorch's warning; a 2-D input elementwise, with its deprecation warning)
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        y = F.dropout2d(ember.ones(4, 6, 50), 0.5).numpy()
    assert (y.min(2) == y.max(2)).all() and not (y.reshape(4, -1).min(1) == y.reshape(4, -1).max(1)).all()
    with pytest.warns(UserWarning, match="2-D input to dropout2d"):
        y = F.dropout2d(ember.ones(40, 50), 0.5).numpy()
    assert not (y.min(1) == y.max(1)).all()
    y = F.dropout1d(ember.ones(40, 50), 0.5).numpy()
    assert (y.min(1) == y.max(1)).all()
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="dropout1d"):
            m.nn.functional.dropout1d(m.ones(2, 3, 4, 5), 0.5)


def test_legacy_spectral_norm_matches_torch(torch):
    me = nn.utils.spectral_norm(nn.Conv2d(2, 3, 3))
    mt = torch.nn.utils.spectral_norm(torch.nn.Conv2d(2, 3, 3))
    assert list(me.state_dict()) == list(mt.state_dict())
    _load(me, mt)
    x = R.standard_normal((2, 2, 5, 5)).astype(np.float32)
    for _ in range(3):  # one power iteration per training forward on both sides
        np.testing.assert_allclose(me(_t(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(), atol=1e-5)
    me.eval()
    mt.eval()
    np.testing.assert_allclose(me(_t(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(), atol=1e-5)
    me(_t(x)).sum().backward()
    assert me.weight_orig.grad is not None
    nn.utils.remove_spectral_norm(me)
    torch.nn.utils.remove_spectral_norm(mt)
    assert list(me.state_dict()) == list(mt.state_dict())
    np.testing.assert_allclose(me.weight.detach().numpy(), mt.weight.detach().numpy(), atol=1e-6)
