"""Layers against PyTorch (same weights: outputs, input and parameter gradients, buffers) and their
gradients against float64 finite differences; PyTorch's default initialisations."""
import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from _checks import PER_ELEMENT, check_grads, compare_module

rs = np.random.RandomState(0)


def randn(*shape):
    return rs.randn(*shape).astype(np.float32)


def needs(name):
    return pytest.mark.skipif(not hasattr(F, name), reason=f"F.{name} kernel not merged yet")


@pytest.mark.parametrize("make,shape", [
    (lambda m: m.Linear(5, 3), (4, 5)),
    (lambda m: m.Linear(5, 3, bias=False), (2, 4, 5)),
    (lambda m: m.ReLU(), (3, 4)),
    (lambda m: m.LeakyReLU(0.2), (3, 4)),
    (lambda m: m.GELU(), (3, 4)),
    (lambda m: m.GELU("tanh"), (3, 4)),
    (lambda m: m.SiLU(), (3, 4)),
    (lambda m: m.Tanh(), (3, 4)),
    (lambda m: m.Sigmoid(), (3, 4)),
    (lambda m: m.ELU(), (3, 4)),
    (lambda m: m.Softplus(), (3, 4)),
    (lambda m: m.Softmax(dim=1), (3, 4)),
    (lambda m: m.LogSoftmax(dim=-1), (3, 4)),
    (lambda m: m.Flatten(), (2, 3, 4)),
    (lambda m: m.Unflatten(1, (2, 6)), (2, 12)),
    (lambda m: m.Identity(), (2, 3)),
    (lambda m: m.BatchNorm1d(4), (8, 4)),
    (lambda m: m.BatchNorm1d(4), (8, 4, 3)),
    (lambda m: m.BatchNorm1d(4, momentum=None), (8, 4)),
    (lambda m: m.BatchNorm1d(4, affine=False), (8, 4)),
    (lambda m: m.BatchNorm2d(3), (4, 3, 5, 5)),
    (lambda m: m.LayerNorm(6), (3, 6)),
    (lambda m: m.LayerNorm((2, 3)), (4, 2, 3)),
    (lambda m: m.GroupNorm(2, 4), (3, 4, 5)),
    (lambda m: m.Sequential(m.Linear(4, 8), m.ReLU(), m.Linear(8, 2)), (5, 4)),
])
def test_layer_matches_torch(torch, make, shape):
    ember.manual_seed(0)
    emod = make(nn)
    tmod = make(torch.nn)
    compare_module(torch, emod, tmod, randn(*shape))
    if any(True for _ in emod.buffers()):  # eval mode uses the (updated) running statistics
        emod.eval()
        tmod.eval()
        compare_module(torch, emod, tmod, randn(*shape))


def test_bilinear_matches_torch(torch):
    emod, tmod = nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2)
    compare_module(torch, emod, tmod, randn(5, 3), randn(5, 4))


def test_batchnorm_running_stats_and_counter(torch):
    emod, tmod = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    for _ in range(3):
        compare_module(torch, emod, tmod, randn(6, 3))
    assert emod.num_batches_tracked.item() == 3
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        emod(ember.randn(1, 3))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        emod(ember.randn(2, 3, 4, 5))


def test_dropout_train_eval():
    d = nn.Dropout(0.5)
    x = ember.ones(1000)
    y = d(x)
    vals = set(np.unique(y.numpy()).tolist())
    assert vals <= {0.0, 2.0} and 0.3 < (y.numpy() == 0).mean() < 0.7
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(1.5)
    x = ember.ones(5, requires_grad=True)
    ember.manual_seed(1)
    y = nn.Dropout(0.5)(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())


def test_relu_inplace():
    x = ember.tensor([-1.0, 2.0])
    y = nn.ReLU(inplace=True)(x)
    assert y is x and x.tolist() == [0.0, 2.0]


def test_embedding_matches_torch(torch):
    emod, tmod = nn.Embedding(10, 3, padding_idx=0), torch.nn.Embedding(10, 3, padding_idx=0)
    assert np.all(emod.weight.detach().numpy()[0] == 0)
    idx = np.array([[0, 2, 4], [4, 3, 0]])
    compare_module(torch, emod, tmod, idx)
    with pytest.raises(IndexError):
        emod(ember.tensor([10]))


@needs("embedding_bag")
def test_embedding_bag_matches_torch(torch):
    for mode in ("sum", "mean", "max"):
        emod, tmod = nn.EmbeddingBag(10, 3, mode=mode), torch.nn.EmbeddingBag(10, 3, mode=mode)
        compare_module(torch, emod, tmod, np.array([[1, 2, 4], [4, 3, 9]]))


@needs("conv2d")
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(padding="same", dilation=2),
                                dict(groups=2, bias=False), dict(padding=1, padding_mode="reflect")])
def test_conv2d_matches_torch(torch, kw):
    emod, tmod = nn.Conv2d(4, 6, 3, **kw), torch.nn.Conv2d(4, 6, 3, **kw)
    compare_module(torch, emod, tmod, randn(2, 4, 7, 7), atol=1e-4)


@needs("conv1d")
def test_conv1d_matches_torch(torch):
    emod, tmod = nn.Conv1d(3, 5, 3, padding=1), torch.nn.Conv1d(3, 5, 3, padding=1)
    compare_module(torch, emod, tmod, randn(2, 3, 9), atol=1e-4)


@needs("conv_transpose2d")
def test_conv_transpose2d_matches_torch(torch):
    emod = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)
    tmod = torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)
    compare_module(torch, emod, tmod, randn(2, 4, 5, 5), atol=1e-4)


@needs("max_pool2d")
def test_pooling_matches_torch(torch):
    for make in (lambda m: m.MaxPool2d(2), lambda m: m.MaxPool2d(3, 2, padding=1, ceil_mode=True),
                 lambda m: m.AvgPool2d(2), lambda m: m.AvgPool2d(3, 2, padding=1),
                 lambda m: m.AdaptiveAvgPool2d((2, 3)), lambda m: m.AdaptiveAvgPool2d(1)):
        compare_module(torch, make(nn), make(torch.nn), randn(2, 3, 7, 7))
    out, idx = nn.MaxPool2d(2, return_indices=True)(ember.randn(1, 1, 4, 4))
    assert idx.dtype == ember.int64 and tuple(idx.shape) == (1, 1, 2, 2)


# ----------------------------------------------------------------------------- finite differences

@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Linear(3, 2), (4, 3)),
    (lambda: nn.BatchNorm1d(3), (5, 3)),
    (lambda: nn.LayerNorm(4), (2, 4)),
    (lambda: nn.GroupNorm(2, 4), (2, 4, 3)),
    (lambda: nn.GELU(), (2, 3)),
    (lambda: nn.SiLU(), (2, 3)),
    (lambda: nn.LogSoftmax(1), (2, 3)),
    (lambda: nn.Bilinear(2, 2, 3), None),
])
def test_layer_gradients_finite_differences(make, shape):
    ember.set_default_dtype(ember.float64)
    m = make()
    params = list(m.parameters())
    if shape is None:
        x1 = ember.randn(3, 2, requires_grad=True)
        x2 = ember.randn(3, 2, requires_grad=True)

        def fn(a, b, *ps):
            return m(a, b)
        check_grads(fn, [x1, x2] + params, **PER_ELEMENT)
        return
    x = ember.randn(*shape, requires_grad=True)

    def fn(a, *ps):
        return m(a)
    check_grads(fn, [x] + params, **PER_ELEMENT)


@needs("conv2d")
def test_conv2d_finite_differences():
    ember.set_default_dtype(ember.float64)
    m = nn.Conv2d(2, 2, 3, padding=1, groups=2)
    x = ember.randn(1, 2, 4, 4, requires_grad=True)
    check_grads(lambda a, w, b: m(a), [x, m.weight, m.bias], **PER_ELEMENT)


# ----------------------------------------------------------------------------- default initialisation

def test_default_initialisation_ranges():
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    assert np.abs(lin.weight.detach().numpy()).max() <= bound
    assert np.abs(lin.weight.detach().numpy()).max() > 0.8 * bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    bn = nn.BatchNorm2d(4)
    assert bn.weight.tolist() == [1.0] * 4 and bn.bias.tolist() == [0.0] * 4
    assert bn.running_var.tolist() == [1.0] * 4 and bn.num_batches_tracked.dtype == ember.int64
    emb = nn.Embedding(1000, 8)
    assert abs(float(emb.weight.detach().numpy().std()) - 1.0) < 0.05
    conv = nn.Conv2d(3, 8, 3)
    fan_in = 27
    assert np.abs(conv.weight.detach().numpy()).max() <= 1 / math.sqrt(fan_in)
    assert tuple(conv.weight.shape) == (8, 3, 3, 3)
    assert tuple(nn.ConvTranspose2d(3, 8, 3, groups=1).weight.shape) == (3, 8, 3, 3)


def test_dtype_argument():
    lin = nn.Linear(3, 2, dtype=ember.float64)
    assert lin.weight.dtype == ember.float64
    assert lin(ember.randn(2, 3, dtype=ember.float64)).dtype == ember.float64


def test_layer_errors():
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        nn.Linear(3, 2)(ember.randn(4, 5))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same'"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="normalized_shape"):
        nn.LayerNorm(4)(ember.randn(2, 3))


@pytest.mark.parametrize("make,shape", [
    (lambda m: m.ZeroPad2d((1, 2, 0, 1)), (2, 3, 4, 4)),
    (lambda m: m.ConstantPad1d((1, 2), 3.5), (2, 3, 4)),
    (lambda m: m.ReflectionPad2d(1), (2, 3, 4, 4)),
    (lambda m: m.ReplicationPad1d((2, 1)), (2, 3, 4)),
    (lambda m: m.CircularPad2d(1), (1, 2, 3, 3)),
    (lambda m: m.MaxPool1d(3, 2, padding=1), (2, 3, 9)),
    (lambda m: m.AvgPool1d(2), (2, 3, 8)),
    (lambda m: m.AdaptiveAvgPool1d(3), (2, 3, 8)),
    (lambda m: m.Upsample(scale_factor=2), (1, 2, 3, 4)),
    (lambda m: m.Upsample(size=(5, 7)), (1, 2, 3, 4)),
    (lambda m: m.Upsample(size=5), (1, 2, 3)),
    (lambda m: m.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 4)),
    (lambda m: m.Upsample(size=(5, 7), mode="bilinear", align_corners=True), (1, 2, 3, 4)),
    (lambda m: m.Upsample(size=(2, 3), mode="bilinear"), (1, 2, 5, 7)),
    (lambda m: m.Upsample(scale_factor=1.5, mode="linear"), (2, 2, 6)),
    (lambda m: m.UpsamplingBilinear2d(scale_factor=2), (1, 1, 3, 3)),
    (lambda m: m.AdaptiveMaxPool2d((2, 3)), (2, 3, 6, 9)),
    (lambda m: m.AdaptiveMaxPool2d((3, 2)), (2, 3, 7, 5)),
    (lambda m: m.AdaptiveMaxPool2d(1), (2, 3, 4, 4)),
])
def test_padding_pooling1d_upsample_match_torch(torch, make, shape):
    compare_module(torch, make(nn), make(torch.nn), randn(*shape))


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(mask="bool"), dict(mask="float"),
                                dict(scale=0.3), dict(enable_gqa=True)])
def test_scaled_dot_product_attention_matches_torch(torch, kw):
    q, k, v = randn(2, 3, 4, 5), randn(2, 3, 6, 5), randn(2, 3, 6, 7)
    if kw.get("enable_gqa"):  # 6 query heads share 3 key/value heads (the flag was accepted and ignored)
        q = randn(2, 6, 4, 5)
    if kw.get("is_causal"):
        k, v = k[:, :, :4], v[:, :, :4]
    mask = kw.pop("mask", None)
    em = tm = None
    if mask == "bool":
        mk = rs.rand(4, 6) > 0.3
        mk[:, 0] = True
        em, tm = ember.tensor(mk), torch.tensor(mk)
    elif mask == "float":
        mk = randn(4, 6)
        em, tm = ember.tensor(mk), torch.tensor(mk)
    es = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    eo = F.scaled_dot_product_attention(*es, attn_mask=em, **kw)
    to = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=tm, **kw)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-5, rtol=1e-4)
    eo.sum().backward()
    to.sum().backward()
    for a, b in zip(es, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("make,shape", [
    (lambda m: m.InstanceNorm2d(3), (2, 3, 4, 5)),
    (lambda m: m.InstanceNorm2d(3, affine=True, track_running_stats=True), (2, 3, 4, 5)),
    (lambda m: m.InstanceNorm1d(3, affine=True), (2, 3, 6)),
    (lambda m: m.PixelShuffle(2), (2, 8, 3, 3)),
    (lambda m: m.PixelUnshuffle(2), (2, 2, 4, 6)),
    (lambda m: m.Hardshrink(0.3), (3, 4)),
    (lambda m: m.Softshrink(0.3), (3, 4)),
    (lambda m: m.RMSNorm(4), (2, 3, 4)),
    (lambda m: m.RMSNorm([3, 4], eps=1e-3), (2, 3, 4)),
    (lambda m: m.RMSNorm(4, elementwise_affine=False), (3, 4)),
])
def test_more_layers_match_torch(torch, make, shape):
    emod, tmod = make(nn), make(torch.nn)
    assert repr(emod) == repr(tmod)
    compare_module(torch, emod, tmod, randn(*shape))
    if any(True for _ in emod.buffers()):
        emod.eval()
        tmod.eval()
        compare_module(torch, emod, tmod, randn(*shape))


def test_distance_modules_and_compile(torch):
    a, b = randn(4, 5), randn(4, 5)
    for make in (lambda m: m.CosineSimilarity(), lambda m: m.CosineSimilarity(dim=0, eps=1e-6),
                 lambda m: m.PairwiseDistance(), lambda m: m.PairwiseDistance(p=1.0, keepdim=True)):
        e, t = make(nn), make(torch.nn)
        assert repr(e) == repr(t)
        np.testing.assert_allclose(e(ember.tensor(a), ember.tensor(b)).numpy(),
                                   t(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-5, atol=1e-6)
    lin = nn.Linear(2, 3)
    assert ember.compile(lin) is lin and ember.compile(mode="max-autotune")(lin) is lin  # eager: unchanged


def test_sdpa_fully_masked_rows_are_zero(torch):
    # a query with every key masked gives zeros (and zero gradients) in PyTorch; ember gave nan
    qa = randn(1, 2, 3, 4)
    inf = float("inf")
    res = []
    for m in (ember, torch):
        for mask in (m.tensor([[True, True, False], [False, False, False], [True, True, True]]),
                     m.tensor([[0.0, 0.0, -inf], [-inf, -inf, -inf], [0.0, 1.0, 2.0]])):
            q = m.tensor(qa, requires_grad=True)
            o = m.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
            o.sum().backward()
            res.append((o.detach().numpy(), q.grad.numpy()))
    for (eo, eg), (to, tg) in zip(res[:2], res[2:]):
        assert np.isfinite(eo).all() and np.isfinite(eg).all()
        np.testing.assert_allclose(eo, to, atol=1e-6, rtol=1e-5)
        np.testing.assert_allclose(eg, tg, atol=1e-5, rtol=1e-4)
