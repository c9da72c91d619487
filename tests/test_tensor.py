"""Tensor metadata, conversions and printing."""
import numpy as np
import pytest

import ember


def test_metadata():
    x = ember.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == ember.Size([2, 3, 4]) and x.size(1) == 3 and x.size(-1) == 4
    assert x.dim() == 3 and x.ndim == 3 and x.numel() == 24 and len(x) == 2
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12
    assert x.is_contiguous() and x.dtype is ember.float32 and x.device.type == "cpu"
    assert repr(x.shape) in ("ember.Size([2, 3, 4])", "torch.Size([2, 3, 4])")
    assert x.shape[1:] == (3, 4) and isinstance(x.shape[1:], ember.Size)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)


def test_strides_match_torch(torch):
    for f in (lambda m: m.zeros(2, 3, 4).permute(2, 0, 1), lambda m: m.zeros(4, 5)[::2, 1:],
              lambda m: m.zeros(3, 1).expand(3, 4), lambda m: m.zeros(2, 3).t(),
              lambda m: m.zeros(4, 4).diagonal(), lambda m: m.zeros(2, 3, 4)[:, 1]):
        e, t = f(ember), f(torch)
        assert e.stride() == t.stride() and e.is_contiguous() == t.is_contiguous()
        assert e.storage_offset() == t.storage_offset()


def test_repr_matches_pytorch_style():
    a = ember.tensor([1.0], requires_grad=True)
    assert repr(a.exp()) == "tensor([2.7183], grad_fn=<ExpBackward0>)"
    assert repr(a) == "tensor([1.], requires_grad=True)"
    assert repr(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ember.tensor(2.5)) == "tensor(2.5000)"
    assert repr(ember.tensor([1.0, 2.0], dtype=ember.float64)) == "tensor([1., 2.], dtype=torch.float64)" \
        or repr(ember.tensor([1.0, 2.0], dtype=ember.float64)) == "tensor([1., 2.], dtype=ember.float64)"
    assert repr(ember.tensor([True])) == "tensor([True])"
    assert repr(ember.zeros(0)) == "tensor([])"
    assert "grad_fn=<AddBackward0>" in repr(a + 1)


def test_repr_like_torch_for_values(torch):
    for vals in ([[1.5, -2.25], [3.0, 4.0]], [1e-5, 1.0], [123456.0, 1.0], [0.1, 0.2, 0.3]):
        e = repr(ember.tensor(vals))
        t = repr(torch.tensor(vals))
        assert e == t, (e, t)


def test_item_tolist_numpy():
    x = ember.tensor([[1.0, 2.0]])
    assert x[0, 1].item() == 2.0 and x.tolist() == [[1.0, 2.0]]
    assert isinstance(ember.tensor([3]).item(), int)
    with pytest.raises(RuntimeError, match="elements cannot be converted"):
        x.item()
    n = x.numpy()
    n[0, 0] = 9
    assert x[0, 0].item() == 9  # numpy() shares memory
    y = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        y.numpy()
    assert y.detach().numpy().tolist() == [1.0, 1.0]
    assert float(ember.tensor([2.5])) == 2.5 and int(ember.tensor(3)) == 3
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.ones(2))


def test_storage_sharing_and_data_ptr():
    x = ember.zeros(4, 4)
    v = x[1:3]
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert v.data_ptr() == x.data_ptr() + 4 * 4
    assert v._base is x
    c = x.clone()
    assert c.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_iteration_and_len():
    x = ember.arange(6).view(3, 2)
    rows = list(x)
    assert len(rows) == 3 and rows[1].tolist() == [2, 3]
    with pytest.raises(TypeError):
        len(ember.tensor(1.0))


def test_detach_shares_data_and_version():
    x = ember.ones(3, requires_grad=True)
    y = x.detach()
    assert not y.requires_grad and y.is_leaf
    y[0] = 5
    assert x[0].item() == 5
    assert x._version == y._version == 1


def test_contiguous_and_clone():
    x = ember.arange(6.0).view(2, 3).t()
    assert not x.is_contiguous()
    c = x.contiguous()
    assert c.is_contiguous() and c.tolist() == x.tolist()
    y = ember.ones(2)
    assert y.contiguous() is y
    z = y.clone()
    z[0] = 3
    assert y[0].item() == 1


def test_equality_and_hash():
    a = ember.tensor([1, 2])
    assert (a == ember.tensor([1, 3])).tolist() == [True, False]
    assert a != None  # noqa: E711
    d = {a: 1}
    assert d[a] == 1
    assert ember.equal(a, ember.tensor([1, 2])) and not ember.equal(a, ember.tensor([1, 2, 3]))


def test_where_method_takes_self_as_input(torch):
    # Tensor.where(condition, other) == where(condition, self, other); ember used self as the condition
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for m in (ember, torch):
        x = m.tensor(a)
        r = x.where(x > 5, 0.0), x.where(condition=x < 3, other=-x)
        if m is ember:
            got = [t.numpy() for t in r]
        else:
            want = [t.numpy() for t in r]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("expr", [
    "a.view(size=(4, 3))", "a.view(dtype=m.int32)", "a.reshape(shape=(2, 6))", "m.reshape(a, shape=(6, 2))",
    "a.permute(dims=(1, 0))", "m.permute(a, dims=(1, 0))", "a[:1].expand(size=(2, 3, 4))", "a.repeat(repeats=(1, 2))",
    "a.flip(dims=(0,))", "m.flip(a, dims=(0, 1))", "a.tile(dims=(2,))", "m.tile(a, dims=(2, 1))",
    "a.split(split_size=2, dim=1)", "m.zeros(size=(2, 3))", "m.ones(size=[2])", "m.empty(size=(0, 2)).shape",
    "a.new_zeros(size=(2,))", "a.new_ones(size=(1, 2))", "m.broadcast_to(a, size=(2, 3, 4))"])
def test_size_and_dims_keywords(torch, expr):
    # the varargs-or-sequence arguments also go by their PyTorch keyword names
    def run(m):
        a = m.arange(12.0).reshape(3, 4)
        r = eval(expr)
        if hasattr(r, "numpy"):
            return r.numpy()
        return [t.numpy() if hasattr(t, "numpy") else t for t in r]
    np.testing.assert_equal(run(ember), run(torch))
    with pytest.raises(TypeError):
        ember.zeros(2, size=(2,))


def test_contains_itemsize_nbytes(torch):
    for m in (ember, torch):
        x = m.arange(6.0).reshape(3, 2)
        assert (4 in x, 7 in x, m.tensor([2.0, 3.0]) in x, m.tensor([7.0, 9.0]) in x) == (True, False, True, False)
        assert (x.itemsize, x.nbytes, x.long().nbytes, x[:0].nbytes) == (4, 24, 48, 0)
    with pytest.raises(RuntimeError, match="__contains__"):
        "a" in ember.ones(2)


def test_repr_width_ignores_nonfinite_and_zero(torch):
    # nan/inf/-0. do not widen the other elements (ember printed "tensor([nan,  1., inf])")
    for v in ([float("nan"), 1.0, float("inf")], [-0.0, 1.0], [-float("inf"), 2.5, 0.0], [1e9, 0.0, float("nan")],
              [0.0, 0.0], [0.0, 123.456]):
        assert repr(ember.tensor(v)) == repr(torch.tensor(v))


def test_legacy_tensor_types(torch):
    # torch.FloatTensor(2, 3), LongTensor([1, 2]), isinstance(t, FloatTensor), t.type(LongTensor)
    for m in (ember, torch):
        assert tuple(m.FloatTensor(2, 3).shape) == (2, 3) and tuple(m.FloatTensor().shape) == (0,)
        assert m.LongTensor([1, 2]).tolist() == [1, 2] and m.LongTensor([1, 2]).dtype is m.int64
        assert m.ByteTensor([1]).dtype is m.uint8 and m.DoubleTensor([1.5]).dtype is m.float64
        assert isinstance(m.ones(2), m.FloatTensor) and not isinstance(m.ones(2).long(), m.FloatTensor)
        assert m.ones(2).type(m.LongTensor).dtype is m.int64
        assert tuple(m.FloatTensor(m.Size([2])).shape) == (2,)
