"""Losses against PyTorch (values and input gradients) and float64 finite differences."""
import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from _checks import PER_ELEMENT, check_grads

rs = np.random.RandomState(0)


def _pair(torch, x, *others):
    e = [ember.tensor(x, requires_grad=True)] + [ember.tensor(o) for o in others]
    t = [torch.tensor(x, requires_grad=True)] + [torch.tensor(o) for o in others]
    return e, t


def _check(torch, efn, tfn, x, *others, atol=1e-5):
    e, t = _pair(torch, x, *others)
    eo, to = efn(*e), tfn(*t)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol, rtol=1e-4)
    w = np.asarray(rs.randn(*eo.shape)).astype(x.dtype)
    (eo * ember.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(e[0].grad.numpy(), t[0].grad.numpy(), atol=atol, rtol=1e-4)


REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kw", [dict(), dict(ignore_index=1), dict(label_smoothing=0.2),
                                dict(weight=True), dict(weight=True, label_smoothing=0.1, ignore_index=2)])
def test_cross_entropy_class_indices(torch, reduction, kw):
    x = rs.randn(6, 4).astype(np.float32)
    y = np.array([0, 1, 2, 3, 1, 2])
    kw = dict(kw)
    if kw.pop("weight", False):
        w = rs.rand(4).astype(np.float32) + 0.5
        ekw, tkw = dict(kw, weight=ember.tensor(w)), dict(kw, weight=torch.tensor(w))
    else:
        ekw, tkw = kw, kw
    _check(torch, lambda a, b: nn.CrossEntropyLoss(reduction=reduction, **ekw)(a, b),
           lambda a, b: torch.nn.CrossEntropyLoss(reduction=reduction, **tkw)(a, b), x, y)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_spatial_and_probabilities(torch, reduction):
    x = rs.randn(2, 3, 4, 5).astype(np.float32)
    y = rs.randint(0, 3, (2, 4, 5))
    _check(torch, lambda a, b: F.cross_entropy(a, b, reduction=reduction, ignore_index=0),
           lambda a, b: torch.nn.functional.cross_entropy(a, b, reduction=reduction, ignore_index=0), x, y)
    p = rs.rand(5, 3).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    x2 = rs.randn(5, 3).astype(np.float32)
    w = np.array([0.5, 1.0, 2.0], np.float32)
    _check(torch, lambda a, b: F.cross_entropy(a, b, weight=ember.tensor(w), reduction=reduction,
                                               label_smoothing=0.1),
           lambda a, b: torch.nn.functional.cross_entropy(a, b, weight=torch.tensor(w), reduction=reduction,
                                                          label_smoothing=0.1), x2, p)
    x1 = rs.randn(4).astype(np.float32)  # a single unbatched sample
    _check(torch, lambda a, b: F.cross_entropy(a, b), lambda a, b: torch.nn.functional.cross_entropy(a, b),
           x1, np.array(2))


def test_cross_entropy_fused_double_backward(torch):
    x = rs.randn(5, 4)
    y = np.array([0, 3, 1, 1, 2])
    for red in REDUCTIONS:
        e = ember.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        el = F.cross_entropy(e, ember.tensor(y), reduction=red, ignore_index=3).sum()
        tl = torch.nn.functional.cross_entropy(t, torch.tensor(y), reduction=red, ignore_index=3).sum()
        assert type(el.grad_fn).__name__ in ("NllLossBackward0", "SumBackward0")
        (eg,) = ember.autograd.grad(el, e, create_graph=True)
        (tg,) = torch.autograd.grad(tl, t, create_graph=True)
        np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), atol=1e-10)
        (eg * eg).sum().backward()
        (tg * tg).sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-10)


def test_cross_entropy_errors():
    x = ember.randn(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, ember.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(x, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="dtype"):
        F.nll_loss(x, ember.tensor([True, False, True]).to(ember.float16).bool().float().bool())
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(x, x, reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(torch, reduction):
    x = rs.randn(5, 3).astype(np.float32)
    y = np.array([0, 2, 1, 2, 0])
    w = np.array([1.0, 0.5, 2.0], np.float32)
    _check(torch, lambda a, b: nn.NLLLoss(weight=ember.tensor(w), reduction=reduction, ignore_index=1)(a, b),
           lambda a, b: torch.nn.NLLLoss(weight=torch.tensor(w), reduction=reduction, ignore_index=1)(a, b),
           x, y)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss"])
def test_regression_losses(torch, reduction, name):
    x = rs.randn(4, 3).astype(np.float32)
    y = rs.randn(4, 3).astype(np.float32)
    _check(torch, lambda a, b: getattr(nn, name)(reduction=reduction)(a, b),
           lambda a, b: getattr(torch.nn, name)(reduction=reduction)(a, b), x, y)


def test_smooth_l1_beta(torch):
    x = rs.randn(10).astype(np.float32)
    y = rs.randn(10).astype(np.float32)
    for beta in (0.0, 0.5, 2.0):
        _check(torch, lambda a, b: F.smooth_l1_loss(a, b, beta=beta),
               lambda a, b: torch.nn.functional.smooth_l1_loss(a, b, beta=beta), x, y)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_losses(torch, reduction):
    p = rs.rand(4, 3).astype(np.float32) * 0.98 + 0.01
    y = (rs.rand(4, 3) > 0.5).astype(np.float32)
    w = rs.rand(3).astype(np.float32)
    _check(torch, lambda a, b: nn.BCELoss(weight=ember.tensor(w), reduction=reduction)(a, b),
           lambda a, b: torch.nn.BCELoss(weight=torch.tensor(w), reduction=reduction)(a, b), p, y)
    x = rs.randn(4, 3).astype(np.float32) * 5
    pw = rs.rand(3).astype(np.float32) * 2
    _check(torch, lambda a, b: nn.BCEWithLogitsLoss(pos_weight=ember.tensor(pw), reduction=reduction)(a, b),
           lambda a, b: torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw), reduction=reduction)(a, b),
           x, y)


def test_bce_input_range_error():
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))


def test_bce_log_clamp(torch):
    e = F.binary_cross_entropy(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 0.0]))
    t = torch.nn.functional.binary_cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0]))
    assert abs(e.item() - t.item()) < 1e-4


_TARGET = ember.tensor(np.random.RandomState(3).randn(4, 3))


@pytest.mark.parametrize("fn", [
    lambda x, t: F.cross_entropy(x, t),
    lambda x, t: F.cross_entropy(x, t, label_smoothing=0.3, reduction="sum"),
    lambda x, t: F.nll_loss(F.log_softmax(x, 1), t),
    lambda x, t: F.mse_loss(x, _TARGET),
    lambda x, t: F.smooth_l1_loss(x, _TARGET),
    lambda x, t: F.l1_loss(x, _TARGET),
    lambda x, t: F.binary_cross_entropy_with_logits(x, (x.detach() > 0).double()),
    lambda x, t: F.binary_cross_entropy(x.sigmoid(), (x.detach() > 0).double()),
])
def test_loss_finite_differences(fn):
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0, 2, 1, 1])
    check_grads(lambda a: fn(a, t).reshape(1), [x], **PER_ELEMENT)


def test_cross_entropy_ignored_everything_is_nan(torch):
    x = rs.randn(2, 3).astype(np.float32)
    e = F.cross_entropy(ember.tensor(x), ember.tensor([-100, -100]))
    t = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor([-100, -100]))
    assert np.isnan(e.item()) and np.isnan(t.item())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_more_losses_match_torch(torch, reduction):
    a, p, n = (rs.randn(4, 5).astype(np.float32) for _ in range(3))
    _check(torch, lambda x, y, z: nn.TripletMarginLoss(margin=0.5, swap=True, reduction=reduction)(x, y, z),
           lambda x, y, z: torch.nn.TripletMarginLoss(margin=0.5, swap=True, reduction=reduction)(x, y, z), a, p, n)
    sign = np.sign(rs.randn(4, 5)).astype(np.float32)
    _check(torch, lambda x, y: nn.HingeEmbeddingLoss(reduction=reduction)(x, y),
           lambda x, y: torch.nn.HingeEmbeddingLoss(reduction=reduction)(x, y), a, sign)
    lab = (rs.rand(4, 5) > 0.5).astype(np.float32)
    _check(torch, lambda x, y: nn.MultiLabelSoftMarginLoss(reduction=reduction)(x, y),
           lambda x, y: torch.nn.MultiLabelSoftMarginLoss(reduction=reduction)(x, y), a, lab)
    _check(torch, lambda x: F.pdist(x), lambda x: torch.nn.functional.pdist(x), a)


def test_binary_cross_entropy_saturated_gradient(torch):
    # p exactly 0 or 1 (a saturated sigmoid): PyTorch's gradient is large and finite, ember's was nan
    g = []
    for m in (ember, torch):
        p = m.tensor([0.0, 1.0, 0.5, 1e-30], requires_grad=True)
        loss = m.nn.functional.binary_cross_entropy(p, m.tensor([1.0, 0.0, 0.5, 1.0]))
        loss.backward()
        g.append((loss.item(), p.grad.numpy()))
    assert g[0][0] == pytest.approx(g[1][0], rel=1e-6)
    np.testing.assert_allclose(g[0][1], g[1][1], rtol=1e-5)
