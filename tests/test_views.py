"""Views share memory and the version counter with their base; shapes/strides like PyTorch."""
import numpy as np
import pytest

import ember

VIEWS = [
    ("view", lambda x: x.view(4, 6)), ("view_as", lambda x: x.view_as(x.new_zeros(6, 4))),
    ("reshape", lambda x: x.reshape(-1)), ("permute", lambda x: x.permute(1, 0, 2)),
    ("transpose", lambda x: x.transpose(0, 2)), ("t", lambda x: x[0].t()), ("T", lambda x: x[0].T),
    ("mT", lambda x: x.mT), ("expand", lambda x: x[:, :1].expand(2, 5, 4)),
    ("squeeze", lambda x: x[:, :1].squeeze(1)), ("unsqueeze", lambda x: x.unsqueeze(0)),
    ("flatten", lambda x: x.flatten()), ("unflatten", lambda x: x.unflatten(2, (2, 2))),
    ("narrow", lambda x: x.narrow(1, 1, 2)), ("select", lambda x: x.select(2, 3)),
    ("unbind", lambda x: x.unbind(1)[2]), ("split", lambda x: x.split(2, 2)[1]),
    ("chunk", lambda x: x.chunk(3, 1)[0]), ("movedim", lambda x: x.movedim(0, -1)),
    ("diagonal", lambda x: x.diagonal(0, 1, 2)), ("getitem_basic", lambda x: x[1, ::2, None, 1:]),
    ("getitem_ellipsis", lambda x: x[..., 0]), ("expand_as", lambda x: x[:1].expand_as(x)),
]


@pytest.mark.parametrize("name,f", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_shares_memory_and_version(name, f, torch):
    x = ember.arange(24.0).view(2, 3, 4)
    v = f(x)
    tx = torch.arange(24.0).view(2, 3, 4)
    tv = f(tx)
    assert tuple(v.shape) == tuple(tv.shape)
    assert v.stride() == tv.stride(), name
    assert v.storage_offset() == tv.storage_offset()
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    before = x._version
    x.add_(1)
    assert v._version == x._version == before + 1
    np.testing.assert_array_equal(v.numpy(), f(tx + 1).numpy())


def test_writes_through_views():
    x = ember.zeros(3, 4)
    x[1].fill_(2)
    x.t()[0].add_(1)
    x.narrow(1, 2, 2).mul_(3)
    expect = np.zeros((3, 4))
    expect[1] = 2
    expect[:, 0] += 1
    expect[:, 2:] *= 3
    np.testing.assert_array_equal(x.numpy(), expect)
    v = x.view(-1)
    v[5] = 7
    assert x[1, 1].item() == 7


def test_reshape_copies_only_when_needed():
    x = ember.arange(6.0).view(2, 3)
    assert x.reshape(3, 2).data_ptr() == x.data_ptr()
    y = x.t().reshape(-1)
    assert y.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_view_errors():
    x = ember.arange(6.0).view(2, 3)
    with pytest.raises(RuntimeError, match="view size is not compatible|shape"):
        x.t().view(6)
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        x.view(4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match="expand"):
        x.expand(3, 3)
    with pytest.raises(RuntimeError, match="number of dims|permute"):
        x.permute(0)
    with pytest.raises((RuntimeError, IndexError)):
        x.narrow(1, 2, 5)


def test_split_chunk_unbind_values(torch):
    for f in (lambda m, x: m.split(x, [1, 3, 2], 1), lambda m, x: m.chunk(x, 4, 1),
              lambda m, x: m.tensor_split(x, 4, 1), lambda m, x: m.unbind(x, 0),
              lambda m, x: x.split(4, dim=1)):
        e = f(ember, ember.arange(12.0).view(2, 6))
        t = f(torch, torch.arange(12.0).view(2, 6))
        assert len(e) == len(t)
        for a, b in zip(e, t):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_view_of_view_base_is_root():
    x = ember.zeros(4, 4)
    v = x[1:][:, 2]
    assert v._base is x
    assert x[0]._base is x


def test_squeeze_unsqueeze_shapes(torch):
    for f in (lambda x: x.squeeze(), lambda x: x.squeeze(0), lambda x: x.squeeze(1), lambda x: x.squeeze((0, 2)),
              lambda x: x.unsqueeze(-1), lambda x: x.unsqueeze(3)):
        assert tuple(f(ember.zeros(1, 3, 1)).shape) == tuple(f(torch.zeros(1, 3, 1)).shape)


def test_diagonal_is_a_writable_view_and_pad_copies(torch):
    # x.diagonal().add_(eps) raised (NumPy's read-only diagonal view); F.pad(x, (0, 0)) returned x itself
    res = []
    for m in (ember, torch):
        x = m.arange(6.0).reshape(2, 3)
        x.diagonal().add_(10.0)
        x.diagonal(1).zero_()
        x.diagonal()[0] = -1.0
        w = m.eye(3, requires_grad=True)
        y = w * 2
        y.diagonal().add_(1.0)
        (y * m.arange(9.0).reshape(3, 3)).sum().backward()
        z = m.zeros(2, 3, 3)
        z.diagonal(dim1=-2, dim2=-1).fill_(1.0)
        p = m.nn.functional.pad(x, (0, 0))
        p += 1
        res.append([x.numpy(), w.grad.numpy(), z.numpy()])
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


def test_expand_without_repeats_is_writable(torch):
    for m in (ember, torch):
        x = m.arange(6.0) + 1
        x[None].expand(1, 6).zero_()
        z = m.ones(2, 3)
        z.expand_as(z).mul_(3)
        assert x.sum().item() == 0 and z.sum().item() == 18
        with pytest.raises(RuntimeError):
            m.ones(3, 1).expand(3, 4).add_(1)  # a real broadcast stays unwritable
