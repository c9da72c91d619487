"""channels_last: strides exactly as PyTorch reports them, conversions, and the propagation rules of
clone/*_like/pointwise ops and of conv/pool/norm outputs."""
import numpy as np
import pytest

import ember
from ember.ops import nn as F

SHAPES = [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 4, 4), (2, 3, 1, 5), (1, 1, 1, 1), (3, 2, 4, 1)]


@pytest.mark.parametrize("shape", SHAPES)
def test_strides_match_torch(torch, shape):
    for mf_e, mf_t in ((ember.channels_last, torch.channels_last), (ember.contiguous_format, torch.contiguous_format)):
        e = ember.empty(*shape, memory_format=mf_e)
        t = torch.empty(*shape, memory_format=mf_t)
        assert e.stride() == t.stride()
        assert e.is_contiguous() == t.is_contiguous()
        assert e.is_contiguous(memory_format=ember.channels_last) == t.is_contiguous(memory_format=torch.channels_last)
        assert ember.zeros(*shape, memory_format=mf_e).stride() == t.stride()
        a = ember.randn(*shape)
        assert a.to(memory_format=mf_e).stride() == torch.randn(*shape).to(memory_format=mf_t).stride()
        assert a.contiguous(memory_format=mf_e).stride() == \
            torch.randn(*shape).contiguous(memory_format=mf_t).stride()


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 3, 4, 4)])
def test_propagation_matches_torch(torch, shape):
    a_np = np.random.randn(*shape).astype(np.float32)
    e = ember.tensor(a_np).to(memory_format=ember.channels_last)
    t = torch.tensor(a_np).to(memory_format=torch.channels_last)
    cases = [
        (lambda m, x: x.clone(), "clone"),
        (lambda m, x: m.empty_like(x), "empty_like"),
        (lambda m, x: m.zeros_like(x), "zeros_like"),
        (lambda m, x: m.ones_like(x), "ones_like"),
        (lambda m, x: m.randn_like(x), "randn_like"),
        (lambda m, x: x.clone(memory_format=m.contiguous_format), "clone contiguous"),
        (lambda m, x: x.to(m.float64), "to dtype"),
        (lambda m, x: x * 2, "mul scalar"),
        (lambda m, x: x + x, "add self"),
        (lambda m, x: x.relu(), "relu"),
        (lambda m, x: x.exp(), "exp"),
        (lambda m, x: x + m.ones(shape[1], 1, 1), "add broadcast"),
        (lambda m, x: x.contiguous(), "contiguous"),
        (lambda m, x: x.permute(0, 2, 3, 1), "permute"),
    ]
    for fn, name in cases:
        assert fn(ember, e).stride() == fn(torch, t).stride(), name
    assert ember.equal(e, ember.tensor(a_np))


def test_layout_preserving_kernels():
    x = ember.randn(2, 3, 8, 8).to(memory_format=ember.channels_last)
    w = ember.randn(4, 3, 3, 3)
    cl = ember.channels_last
    assert F.conv2d(x, w, padding=1).is_contiguous(memory_format=cl)
    assert F.conv2d(ember.randn(2, 3, 8, 8), w.to(memory_format=cl)).is_contiguous(memory_format=cl)
    assert F.conv2d(ember.randn(2, 3, 8, 8), w).is_contiguous()
    assert F.max_pool2d(x, 2).is_contiguous(memory_format=cl)
    assert F.avg_pool2d(x, 2).is_contiguous(memory_format=cl)
    assert F.batch_norm(x, None, None, training=True).is_contiguous(memory_format=cl)
    assert F.batch_norm(x, ember.zeros(3), ember.ones(3)).is_contiguous(memory_format=cl)


def test_memory_format_errors():
    with pytest.raises(RuntimeError, match="rank 4"):
        ember.empty(2, 3, 4, memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="rank 4"):
        ember.randn(2, 3, 4).contiguous(memory_format=ember.channels_last)
    assert not ember.randn(2, 3, 4).is_contiguous(memory_format=ember.channels_last)


def test_channels_last_training_keeps_every_layout():
    """A channels_last ResNet-18 train step: each .grad has its parameter's strides (as PyTorch's
    AccumulateGrad gives), and so does SGD's momentum buffer, so the update is one contiguous pass
    per weight instead of a transposing one."""
    ember.manual_seed(0)
    cl = ember.channels_last
    model = ember.models.resnet18(num_classes=4).to(memory_format=cl)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = ember.randn(2, 3, 32, 32).to(memory_format=cl)
    for _ in range(2):
        opt.zero_grad()
        ember.nn.functional.cross_entropy(model(x), ember.tensor([0, 3])).backward()
        opt.step()
    def order(t):  # strides of the dims that have any (a size-1 dim's stride is arbitrary)
        return [s for s, n in zip(t.stride(), t.shape) if n > 1]
    for name, p in model.named_parameters():
        assert order(p.grad) == order(p), name
        assert order(opt.state[p]["momentum_buffer"]) == order(p), name
        if p.dim() == 4:
            assert p.is_contiguous(memory_format=cl), name
