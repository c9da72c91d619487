"""Creation functions, random generators and *_like, against PyTorch where it is the oracle."""
import numpy as np
import pytest

import ember


def test_tensor_infers_dtypes():
    assert ember.tensor([1.0, 2.0]).dtype is ember.float32
    assert ember.tensor([1, 2]).dtype is ember.int64
    assert ember.tensor([True, False]).dtype is ember.bool
    assert ember.tensor([1, 2.5]).dtype is ember.float32
    assert ember.tensor(3.0).shape == ()
    assert ember.tensor([[1, 2], [3, 4]], dtype=ember.float64).dtype is ember.float64
    assert ember.tensor(np.arange(3, dtype=np.int32)).dtype is ember.int32
    assert ember.tensor([]).shape == (0,) and ember.tensor([]).dtype is ember.float32


def test_tensor_copies_but_from_numpy_shares():
    a = np.zeros(3, np.float32)
    t = ember.tensor(a)
    a[0] = 1
    assert t[0].item() == 0
    s = ember.from_numpy(a)
    a[1] = 5
    assert s[1].item() == 5
    s[2] = 7
    assert a[2] == 7


def test_as_tensor_shares_when_possible():
    a = np.ones(3, np.float64)
    t = ember.as_tensor(a)
    a[0] = 3
    assert t[0].item() == 3
    t2 = ember.as_tensor(a, dtype=ember.float32)
    a[1] = 9
    assert t2[1].item() == 1
    x = ember.ones(2)
    assert ember.as_tensor(x) is x


def test_ragged_and_bad_data_raise():
    with pytest.raises((ValueError, TypeError)):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ember.tensor("abc")


@pytest.mark.parametrize("name,args,kwargs", [
    ("zeros", (2, 3), {}), ("zeros", ((2, 3),), {}), ("ones", ([4],), {"dtype": "int64"}),
    ("full", ((2, 2), 1.5), {}), ("full", ((2,), 3), {}), ("full", ((2,), True), {}),
    ("eye", (3,), {}), ("eye", (2, 4), {}),
    ("arange", (5,), {}), ("arange", (1, 4, 0.5), {}), ("arange", (0.0, 1.0, 0.3), {}), ("arange", (2, 9, 3), {}),
    ("linspace", (0, 1, 5), {}), ("linspace", (-1.0, 1.0, 1), {}),
    ("empty", (2, 0), {}),
])
def test_factories_match_torch(torch, name, args, kwargs):
    kw = dict(kwargs)
    kt = dict(kwargs)
    if "dtype" in kw:
        kw["dtype"] = getattr(ember, kw["dtype"])
        kt["dtype"] = getattr(torch, kt["dtype"])
    e = getattr(ember, name)(*args, **kw)
    t = getattr(torch, name)(*args, **kt)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).split(".")[1]
    if name != "empty":
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_like_functions():
    x = ember.ones(2, 3, dtype=ember.float64)
    for f in (ember.zeros_like, ember.ones_like, ember.empty_like, ember.rand_like, ember.randn_like):
        y = f(x)
        assert y.shape == x.shape and y.dtype is ember.float64
    assert ember.full_like(x, 7).sum().item() == 42
    assert ember.zeros_like(x, dtype=ember.int32).dtype is ember.int32
    r = ember.randint_like(x, 5)
    assert r.dtype is ember.float64 and ((r >= 0) & (r < 5)).all()


def test_manual_seed_reproducible():
    ember.manual_seed(123)
    a = (ember.rand(5), ember.randn(3), ember.randint(0, 10, (4,)), ember.randperm(6))
    ember.manual_seed(123)
    b = (ember.rand(5), ember.randn(3), ember.randint(0, 10, (4,)), ember.randperm(6))
    for x, y in zip(a, b):
        assert ember.equal(x, y)
    ember.manual_seed(124)
    assert not ember.equal(ember.rand(5), a[0])


def test_generator_state_roundtrip():
    st = ember.get_rng_state()
    x = ember.rand(4)
    ember.set_rng_state(st)
    assert ember.equal(ember.rand(4), x)
    g = ember.Generator().manual_seed(5)
    y = ember.rand(3, generator=g)
    g.manual_seed(5)
    assert ember.equal(ember.rand(3, generator=g), y)


def test_random_distributions():
    ember.manual_seed(0)
    u = ember.rand(20000)
    assert u.dtype is ember.float32 and 0 <= u.min().item() and u.max().item() < 1
    assert abs(u.mean().item() - 0.5) < 0.02
    n = ember.randn(20000, dtype=ember.float64)
    assert abs(n.mean().item()) < 0.03 and abs(n.std().item() - 1) < 0.03
    r = ember.randint(3, 7, (1000,))
    assert r.dtype is ember.int64 and r.min().item() == 3 and r.max().item() == 6
    z = ember.empty(10000).normal_(2.0, 0.5)
    assert abs(z.mean().item() - 2.0) < 0.03 and abs(z.std().item() - 0.5) < 0.03
    w = ember.normal(1.0, 2.0, size=(5000,))
    assert abs(w.mean().item() - 1.0) < 0.15


def test_requires_grad_at_creation():
    x = ember.zeros(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        ember.zeros(2, dtype=ember.int64, requires_grad=True)


def test_default_dtype():
    ember.set_default_dtype(ember.float64)
    assert ember.tensor([1.0]).dtype is ember.float64
    assert ember.zeros(2).dtype is ember.float64
    assert ember.arange(0.0, 1.0, 0.5).dtype is ember.float64
    assert ember.get_default_dtype() is ember.float64
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int32)


def test_device_arguments_accepted():
    x = ember.zeros(2, device="cpu")
    assert x.device == ember.device("cpu") and str(x.device) == "cpu"
    assert ember.ones(2, device=ember.device("cpu")).device.type == "cpu"
    assert x.to("cpu") is x


@pytest.mark.parametrize("call", [
    lambda m, o: m.zeros(2, 3, out=o), lambda m, o: m.ones(4, out=o), lambda m, o: m.full((2,), 7, out=o),
    lambda m, o: m.arange(3, out=o), lambda m, o: m.arange(1, 7, 2, out=o)])
def test_factories_write_out(torch, call):
    # out= fills (and resizes) the given tensor, taking its dtype; it was accepted and ignored
    for dtype in ("float32", "int64"):
        eo, to = ember.empty(5, dtype=getattr(ember, dtype)), torch.empty(5, dtype=getattr(torch, dtype))
        r = call(ember, eo)
        call(torch, to)
        assert r is eo and eo.dtype.name == dtype
        np.testing.assert_array_equal(eo.numpy(), to.numpy())


def test_is_nonzero(torch):
    for v in ([2], 0.0, [float("nan")], True):
        assert ember.is_nonzero(ember.tensor(v)) == torch.is_nonzero(torch.tensor(v))
    with pytest.raises(RuntimeError):
        ember.is_nonzero(ember.ones(2))


def test_tensor_from_tensors_range_and_size(torch):
    # one-element tensors inside a list are numbers (shape (2,), not (2, 1)); range data; Tensor(Size)
    for f in (lambda m: m.tensor([m.tensor([1.0]), m.tensor([2.0])]), lambda m: m.tensor([m.tensor(1), m.tensor(2)]),
              lambda m: m.tensor([[m.tensor([1.5])], [m.tensor(2.5)]]), lambda m: m.tensor(range(3)),
              lambda m: m.tensor(range(1, 7, 2), dtype=m.float32), lambda m: m.tensor(m.ones(2, 2))):
        e, t = f(ember), f(torch)
        assert e.dtype.name == str(t.dtype).split(".")[1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    with pytest.raises(ValueError, match="one element"):
        ember.tensor([ember.ones(2), ember.zeros(2)])
    assert ember.Tensor(ember.Size([2, 3])).shape == (2, 3)
