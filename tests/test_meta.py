"""Issue 14: the 'meta' device. A meta tensor holds a shape, a dtype and strides, never data, so
that huge models can be built and inspected: creation allocates nothing, views, elementwise,
reduction and matmul ops give meta results of any size, other ops on small meta tensors too, and
the rest is a clear NotImplementedError. Compared with PyTorch where it has an answer."""
import tracemalloc

import pytest

import ember
import ember.nn as nn

HUGE = (2 ** 20, 2 ** 20)       # 4 TiB of float32


class _Peak:
    """The peak of memory allocated (NumPy's arrays included) inside the block, in MiB."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.mb = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()


@pytest.mark.parametrize("make", [
    lambda: ember.empty(*HUGE, device="meta"),
    lambda: ember.zeros(HUGE, device="meta"),
    lambda: ember.ones(*HUGE, device="meta"),
    lambda: ember.full(HUGE, 2.0, device="meta"),
    lambda: ember.rand(*HUGE, device="meta"),
    lambda: ember.randn(*HUGE, device="meta"),
    lambda: ember.randint(0, 5, HUGE, device="meta"),
    lambda: ember.empty_strided(HUGE, (1, 2 ** 20), device="meta"),
    lambda: ember.eye(2 ** 20, device="meta"),
    lambda: ember.empty_like(ember.empty(*HUGE, device="meta")),
    lambda: ember.zeros_like(ember.empty(*HUGE, device="meta")),
    lambda: ember.rand_like(ember.empty(*HUGE, device="meta")),
], ids=["empty", "zeros", "ones", "full", "rand", "randn", "randint", "empty_strided", "eye", "empty_like",
        "zeros_like", "rand_like"])
def test_creation_allocates_nothing(make):
    with _Peak() as peak:
        t = make()
    assert t.is_meta and t.device.type == "meta" and tuple(t.shape) == HUGE
    assert t.nbytes == 2 ** 40 * t.element_size()            # what it would hold, as PyTorch reports
    assert peak.mb < 1


def test_meta_does_not_advance_the_generator():
    ember.manual_seed(3)
    a = ember.rand(3)
    ember.manual_seed(3)
    ember.rand(*HUGE, device="meta")
    assert ember.rand(3).tolist() == a.tolist()


def test_strides_shapes_and_dtypes_match_pytorch(torch):
    for M in (ember, torch):
        x = M.empty(*HUGE, device="meta")
        got = (x.t().stride(), x[3].stride(), x[:, ::2].stride(), x.unsqueeze(1).stride(),
               M.empty(3, 1, device="meta").expand(2, 3, 4).stride(),
               M.empty(2, 3, 4, 5, device="meta", memory_format=M.channels_last).stride(),
               x.t().is_contiguous(), x.is_contiguous(), x.t().contiguous().stride(),
               tuple((x + 1).shape), str((x.to(M.float64) * 2).dtype).split(".")[-1],
               tuple(x.sum(1).shape), tuple(x.sum().shape), tuple(x.mean(0, keepdim=True).shape),
               tuple((x @ x).shape), tuple(x.reshape(2 ** 10, -1).shape), tuple(x.view(-1).shape),
               tuple(x.amax(1).shape), str((x > 0).dtype).split(".")[-1], tuple(x.exp().shape),
               tuple(M.nn.functional.linear(M.empty(8, 2 ** 17, device="meta"),
                                            M.empty(2 ** 16, 2 ** 17, device="meta")).shape))
        if M is ember:
            mine = got
    assert mine == got


def test_inplace_and_random_fills_are_no_ops_on_meta():
    x = ember.empty(*HUGE, device="meta")
    for f in (lambda: x.uniform_(), lambda: x.normal_(), lambda: x.fill_(1), lambda: x.zero_(),
              lambda: x.add_(1), lambda: x.mul_(ember.empty(2 ** 20, device="meta")),
              lambda: nn.init.kaiming_uniform_(x), lambda: nn.init.trunc_normal_(x)):
        assert f() is x and x.is_meta
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.empty(3, device="meta").add_(ember.empty(2, 3, device="meta"))


def test_huge_module_on_meta_and_to_empty():
    with _Peak() as peak:
        m = nn.Linear(2 ** 17, 2 ** 17, device="meta")        # 64 GiB of weights, none allocated
        y = m(ember.empty(8, 2 ** 17, device="meta"))
    assert m.weight.is_meta and tuple(m.weight.shape) == (2 ** 17, 2 ** 17) and m.bias.is_meta
    assert y.is_meta and tuple(y.shape) == (8, 2 ** 17)
    assert peak.mb < 5
    assert m.to_empty(device="meta").weight.is_meta
    small = nn.Sequential(nn.Conv2d(3, 8, 3, device="meta"), nn.BatchNorm2d(8, device="meta"), nn.ReLU(),
                          nn.Flatten(), nn.Linear(8 * 14 * 14, 10, device="meta"))
    assert all(t.is_meta for t in list(small.parameters()) + list(small.buffers()))
    out = small(ember.empty(2, 3, 16, 16, device="meta"))
    assert out.is_meta and tuple(out.shape) == (2, 10)
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        small.to("cpu")
    small.to_empty(device="cpu")
    assert not any(t.is_meta for t in list(small.parameters()) + list(small.buffers()))
    with ember.no_grad():
        for p in small.parameters():
            p.normal_()
        small[1].reset_running_stats()
    assert tuple(small(ember.randn(2, 3, 16, 16)).shape) == (2, 10)


def test_meta_errors_are_clear(torch):
    x = ember.empty(3, 4, device="meta")
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta"):
        x + ember.ones(3, 4)
    assert (x + ember.tensor(2.0)).is_meta                   # a 0-d CPU tensor is a scalar, as in PyTorch
    with pytest.raises(RuntimeError, match=r"item\(\) cannot be called on meta tensors"):
        ember.empty(1, device="meta").item()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.tolist()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.to("cpu")
    with pytest.raises((RuntimeError, TypeError), match="meta"):
        x.numpy()
    big = ember.empty(*HUGE, device="meta")
    with pytest.raises(NotImplementedError, match=r"index_select: no shape rule for meta tensors this large .*"
                                                  r"\[1048576, 1048576\]"):
        big.index_select(0, ember.empty(3, dtype=ember.int64, device="meta"))
    # shapes that do not fit: the error names the real shapes (not the small stand-ins computed on)
    with pytest.raises(RuntimeError, match=r"add: the shapes \[\[1048576, 1048576\], \[3\]\] of the meta "
                                           r"inputs do not fit"):
        big + ember.empty(3, device="meta")
    with pytest.raises(IndexError, match="Dimension out of range"):
        big.sum(5)
    # small meta tensors: any op runs, on stand-ins, and gives the shape PyTorch gives
    a = ember.cat([x, x])
    b = torch.cat([torch.empty(3, 4, device="meta")] * 2)
    assert a.is_meta and tuple(a.shape) == tuple(b.shape)
    assert tuple(ember.nn.functional.cross_entropy(ember.empty(4, 10, device="meta"),
                                                   ember.empty(4, dtype=ember.int64, device="meta")).shape) == ()
    assert "device='meta'" in repr(big)


def test_cat_stack_and_joins_of_huge_meta_tensors(torch):
    res = []
    for M in (ember, torch):
        x, y = M.empty(*HUGE, device="meta"), M.empty(2 ** 20, 3, device="meta")
        v, i = x.sort(1)
        res.append([str(v.dtype), str(i.dtype), tuple(i.shape), tuple(x.cumsum(0).shape),
                    str(M.empty(*HUGE, dtype=M.int32, device="meta").cumsum(1).dtype)])
        res[-1] = [r.split(".")[-1] if isinstance(r, str) else r for r in res[-1]]
        res[-1] += [tuple(M.cat([x, y], 1).shape), tuple(M.stack([x, x]).shape), tuple(M.flip(x, (0,)).shape),
                    tuple(x.tril().shape), str(M.cat([x, M.empty(5, 2 ** 20, dtype=M.float64,
                                                                  device="meta")]).dtype).split(".")[-1]]
    assert res[0] == res[1]


def test_autograd_on_meta():
    """backward runs on meta tensors as well: meta gradients of the parameters' shapes."""
    m = nn.Linear(2 ** 17, 2 ** 17, device="meta")
    x = ember.empty(4, 2 ** 17, device="meta", requires_grad=True)
    m(x).relu().sum().backward()
    assert m.weight.grad.is_meta and tuple(m.weight.grad.shape) == (2 ** 17, 2 ** 17)
    assert x.grad.is_meta and tuple(x.grad.shape) == (4, 2 ** 17)
    net = ember.models.resnet18(num_classes=10).to("meta")
    y = net(ember.empty(2, 3, 32, 32, device="meta"))
    assert y.is_meta and tuple(y.shape) == (2, 10)
    y.sum().backward()
    assert all(p.grad.is_meta and p.grad.shape == p.shape for p in net.parameters())


def test_nn_ops_on_a_large_meta_batch(torch):
    """Convolutions, pools, norms and embeddings treat dim 0 as independent samples: on a large meta
    batch they run on one sample's stand-in and put the batch size back (PyTorch's shapes)."""
    res = []
    for M in (ember, torch):
        F = M.nn.functional
        x = M.empty(2 ** 12, 3, 64, 64, device="meta")
        res.append([tuple(F.conv2d(x, M.empty(8, 3, 3, 3, device="meta"), stride=2, padding=1).shape),
                    tuple(F.max_pool2d(x, 3, 2, return_indices=True)[1].shape), tuple(F.avg_pool2d(x, 2).shape),
                    tuple(F.interpolate(x, scale_factor=2).shape), tuple(F.layer_norm(x, (64,)).shape),
                    tuple(F.group_norm(x, 1).shape),
                    tuple(F.batch_norm(x, M.empty(3, device="meta"), M.empty(3, device="meta")).shape),
                    tuple(F.embedding(M.empty(2 ** 12, 2 ** 11, dtype=M.int64, device="meta"),
                                      M.empty(10, 8, device="meta")).shape)])
    assert res[0] == res[1]


def test_resnet18_forward_and_backward_on_a_large_meta_batch():
    m = ember.models.resnet18(num_classes=10).to("meta")
    x = ember.empty(1024, 3, 64, 64, device="meta", requires_grad=True)    # 12.6M elements per activation
    with _Peak() as peak:
        y = m(x)
        y.sum().backward()
    assert y.is_meta and tuple(y.shape) == (1024, 10)
    assert x.grad.is_meta and tuple(x.grad.shape) == (1024, 3, 64, 64)
    assert all(p.grad.is_meta and p.grad.shape == p.shape for p in m.parameters())
    assert peak.mb < 200           # one sample's stand-ins, never the batch's 50 MB activations x layers
