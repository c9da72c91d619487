"""In-place ops: values, the shared version counter, autograd through them and their errors."""
import numpy as np
import pytest

import ember

OPS = [
    ("add_", lambda x: x.add_(2.0)), ("add_alpha", lambda x: x.add_(x.new_ones(4), alpha=3)),
    ("sub_", lambda x: x.sub_(1.5)), ("mul_", lambda x: x.mul_(x.new_full((4,), 2.0))),
    ("div_", lambda x: x.div_(4)), ("zero_", lambda x: x.zero_()), ("fill_", lambda x: x.fill_(3)),
    ("copy_", lambda x: x.copy_(x.new_tensor([4.0, 3.0, 2.0, 1.0]))), ("clamp_", lambda x: x.clamp_(-1, 1)),
    ("relu_", lambda x: x.relu_()), ("masked_fill_", lambda x: x.masked_fill_(x > 0, 9.0)),
    ("iadd", lambda x: x.__iadd__(1)), ("imul", lambda x: x.__imul__(3)), ("pow_", lambda x: x.pow_(2)),
    ("exp_", lambda x: x.exp_()), ("neg_", lambda x: x.neg_()), ("abs_", lambda x: x.abs_()),
    ("sigmoid_", lambda x: x.sigmoid_()), ("tanh_", lambda x: x.tanh_()),
]


@pytest.mark.parametrize("name,f", OPS, ids=[o[0] for o in OPS])
def test_inplace_values_and_version(torch, name, f):
    vals = [-1.5, -0.25, 0.5, 2.0]
    e = ember.tensor(vals)
    view = e[1:]
    t = torch.tensor(vals)
    r = f(e)
    f(t)
    assert r is e
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    assert e._version == 1 and view._version == 1
    np.testing.assert_allclose(view.numpy(), t.numpy()[1:], rtol=1e-6)


@pytest.mark.parametrize("name,f", OPS, ids=[o[0] for o in OPS])
def test_inplace_autograd_matches_torch(torch, name, f):
    vals = [-1.5, -0.25, 0.5, 2.0]
    grads = []
    for m in (ember, torch):
        w = m.tensor(vals, requires_grad=True)
        y = w * 1.5
        f(y)
        (y * m.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


def test_inplace_on_view_flows_to_base(torch):
    for m in (ember, torch):
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = w * 2
        y[1:].mul_(w[:2])
        y.sum().backward()
        if m is ember:
            eg = w.grad.numpy().copy()
        else:
            np.testing.assert_allclose(eg, w.grad.numpy())


def test_inplace_on_leaf_requiring_grad_raises():
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place"):
        w.add_(1)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        w[0].mul_(2)
    with ember.no_grad():
        w.add_(1)  # allowed (optimizer steps)
    assert w.tolist() == [2.0, 2.0]


def test_modified_saved_tensor_error_names_everything():
    a = ember.randn(3, requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)
    with pytest.raises(RuntimeError) as ei:
        b.sum().backward()
    msg = str(ei.value)
    assert "modified by an inplace operation" in msg
    assert "[torch.FloatTensor [3]]" in msg and "SigmoidBackward0" in msg
    assert "is at version 1; expected version 0 instead" in msg
    assert "mul_" in msg  # ember names the op that changed it


def test_modified_input_error():
    a = ember.randn(3, requires_grad=True)
    x = a * 1
    y = x * x
    x.add_(1)
    with pytest.raises(RuntimeError, match=r"which is input 0 of MulBackward0, is at version 1"):
        y.sum().backward()


def test_inplace_dtype_and_shape_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 3\] doesn't match the broadcast shape"):
        x.add_(ember.ones(4, 2, 3))
    i = ember.zeros(3, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.mul_(1.5)
    with pytest.raises(RuntimeError):
        x.copy_(ember.ones(4))


def test_version_counter_counts_every_write():
    x = ember.zeros(3)
    x.add_(1)
    x[0] = 2
    x.zero_()
    assert x._version == 3
    y = x.view(3)
    y.fill_(1)
    assert x._version == 4


@pytest.mark.parametrize("call", [
    lambda m, a: a.cumsum_(1), lambda m, a: a.cumprod_(0), lambda m, a: a.tan_(), lambda m, a: a.eq_(2.0),
    lambda m, a: a.lt_(m.full((3,), 2.0)), lambda m, a: a.addmm_(m.ones(2, 2), m.ones(2, 3), alpha=0.5),
    lambda m, a: a.hypot_(a), lambda m, a: a.log10_(), lambda m, a: a.negative_(), lambda m, a: a.xlogy_(2.0),
    lambda m, a: a.divide_(2.0), lambda m, a: a.logit_(), lambda m, a: a.sinh_()])
def test_more_inplace_twins_match_torch(torch, call):
    # PyTorch's in-place twins (cumsum_, eq_, addmm_, ...) raised AttributeError; each returns self
    res = []
    for m in (ember, torch):
        a = m.arange(1.0, 7.0).reshape(2, 3) / 7
        assert call(m, a) is a
        res.append(a.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-6)


def test_more_tensor_methods(torch):
    for m in (ember, torch):
        a = m.arange(6.0).reshape(2, 3)
        assert a.ravel().tolist() == list(range(6)) and m.ravel(a).shape == (6,) and a.is_cpu
        assert a.arcsinh().shape == (2, 3) and m.tensor([1]).is_nonzero()
        assert sorted(m.tensor([0.5, 0.5]).multinomial(2).tolist()) == [0, 1] and m.ones(3).bernoulli().tolist() == [1, 1, 1]


def test_fill_diagonal_wrap_and_softmin_dtype(torch):
    for shape in ((7, 3), (4, 3), (3, 5)):
        for wrap in (False, True):
            e = ember.zeros(*shape).fill_diagonal_(5.0, wrap=wrap)
            t = torch.zeros(*shape).fill_diagonal_(5.0, wrap=wrap)
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert ember.nn.functional.softmin(ember.ones(3), 0, dtype=ember.float64).dtype is ember.float64
