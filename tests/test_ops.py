"""Op semantics and error messages beyond the registry-wide checks in test_ops_registry.py."""
import numpy as np
import pytest

import ember


def test_broadcast_error_names_op_and_sizes():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) "
                                           r"at non-singleton dimension 1"):
        ember.ones(2, 3) + ember.ones(2, 4)
    with pytest.raises(RuntimeError, match="mul"):
        ember.ones(3) * ember.ones(2)


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x3 and 4x5\)"):
        ember.ones(2, 3) @ ember.ones(4, 5)
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        ember.dot(ember.ones(2, 2), ember.ones(2))
    with pytest.raises(RuntimeError):
        ember.mm(ember.ones(2), ember.ones(2, 2))
    with pytest.raises(RuntimeError):
        ember.bmm(ember.ones(2, 2), ember.ones(2, 2))


def test_bad_dims():
    x = ember.ones(2, 3)
    for f in (lambda: x.sum(2), lambda: x.softmax(-3), lambda: x.max(5), lambda: ember.cat([x, x], 2),
              lambda: x.select(3, 0), lambda: x.cumsum(2)):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\]"):
            f()


def test_cat_stack_errors():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ember.cat([ember.ones(2, 3), ember.ones(2, 4)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([ember.ones(2), ember.ones(3)])
    with pytest.raises((RuntimeError, ValueError)):
        ember.cat([])


def test_max_min_with_indices(torch):
    x = np.array([[1.0, 5.0, 3.0], [7.0, 2.0, 7.0]])
    for f in (lambda m, t: m.max(t, 1), lambda m, t: m.min(t, 0, keepdim=True), lambda m, t: t.max(dim=-1)):
        ev, ei = f(ember, ember.tensor(x))
        tv, ti = f(torch, torch.tensor(x))
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    r = ember.max(ember.tensor(x), 1)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    assert ember.max(ember.tensor(x), ember.tensor(x[::-1].copy())).shape == (2, 3)
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        ember.zeros(0).max()


def test_var_std_correction(torch):
    x = np.random.default_rng(0).standard_normal((4, 5))
    for kw in ({}, {"dim": 1}, {"dim": 0, "correction": 0}, {"unbiased": False}, {"dim": (0, 1), "keepdim": True}):
        np.testing.assert_allclose(ember.var(ember.tensor(x), **kw).numpy(), torch.var(torch.tensor(x), **kw).numpy())
        np.testing.assert_allclose(ember.std(ember.tensor(x), **kw).numpy(), torch.std(torch.tensor(x), **kw).numpy())


def test_norm_variants(torch):
    x = np.random.default_rng(1).standard_normal((3, 4))
    for kw in ({}, {"p": 1}, {"p": float("inf")}, {"p": 3, "dim": 1}, {"dim": 0, "keepdim": True}, {"p": "fro"}):
        np.testing.assert_allclose(ember.norm(ember.tensor(x), **kw).numpy(),
                                   torch.norm(torch.tensor(x), **kw).numpy(), rtol=1e-6)
    z = ember.zeros(3, requires_grad=True)
    z.norm().backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]


def test_sort_topk(torch):
    x = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, -1.0, 5.0, 5.0]])
    for f in (lambda m, t: m.sort(t, dim=1, stable=True), lambda m, t: m.sort(t, 0, descending=True),
              lambda m, t: m.topk(t, 2), lambda m, t: m.topk(t, 1, dim=0, largest=False)):
        ev, ei = f(ember, ember.tensor(x))
        tv, ti = f(torch, torch.tensor(x))
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    # the results are fresh contiguous tensors as in PyTorch (topk/kthvalue/median returned strided
    # views of the sorted buffer, so .view() on them failed); diag of a matrix is a copy, not a view
    for f in (lambda m, t: m.topk(t, 2), lambda m, t: m.kthvalue(t, 2, 1), lambda m, t: m.median(t, 1)):
        ev, ei = f(ember, ember.tensor(x))
        tv, ti = f(torch, torch.tensor(x))
        assert ev.stride() == tv.stride() and ei.stride() == ti.stride()
        np.testing.assert_array_equal(ev.view(-1).numpy(), tv.view(-1).numpy())
    a = ember.tensor(x)
    d = a.diag()
    d += 100
    assert d.is_contiguous() and float(a.sum()) == float(x.sum())
    with pytest.raises(RuntimeError, match="k out of range|selected index k"):
        ember.topk(ember.ones(3), 4)


def test_comparisons_and_logical_no_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    for r in (x > 1, x == 1, x <= 2, ember.logical_and(x > 0, x < 2), ~(x > 1), ember.isnan(x)):
        assert r.dtype is ember.bool and not r.requires_grad
    assert ember.argmax(x).item() == 1 and not ember.argmax(x).requires_grad


def test_clamp_where_semantics(torch):
    x = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(ember.clamp(ember.tensor(x), min=0).numpy(), torch.clamp(torch.tensor(x), min=0).numpy())
    np.testing.assert_array_equal(ember.tensor(x).clip(-1, 1).numpy(), [-1.0, 0.5, 1.0])
    w = ember.where(ember.tensor(x) > 0, ember.tensor(x), 0.0)
    assert w.tolist() == [0.0, 0.5, 3.0] and w.dtype is ember.float64
    for a, b in ((1.0, 0.2), (1, 2), (True, False), (1, 0.5)):
        e = ember.where(ember.tensor([True, False]), a, b)
        t = torch.where(torch.tensor([True, False]), a, b)
        assert e.dtype.name == str(t.dtype)[6:] and e.tolist() == t.tolist()
    i, = ember.where(ember.tensor(x) > 0)
    assert i.tolist() == [1, 2]


def test_gelu_relu_softplus_values(torch):
    x = np.linspace(-3, 3, 13)
    for name in ("gelu", "silu", "softplus", "relu", "sigmoid", "tanh"):
        e = getattr(ember.nn.functional, name)(ember.tensor(x)) if hasattr(ember, "nn") else None
        t = getattr(torch.nn.functional, name)(torch.tensor(x))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-12)


def test_integer_ops(torch):
    a, b = np.array([7, -7, 5]), np.array([2, 2, -3])
    for f in (lambda m, x, y: x // y, lambda m, x, y: x % y, lambda m, x, y: m.div(x, y, rounding_mode="trunc"),
              lambda m, x, y: x / y, lambda m, x, y: x ** 2, lambda m, x, y: m.fmod(x, y)):
        e = f(ember, ember.tensor(a), ember.tensor(b))
        t = f(torch, torch.tensor(a), torch.tensor(b))
        assert e.dtype.name == str(t.dtype)[6:]
        np.testing.assert_allclose(e.numpy(), t.numpy())
    # PyTorch computes integer ** negative integer *tensor* (truncating) and refuses a negative scalar exponent
    base, ex = np.array([2, 1, -1, 3]), np.array([-1, -2, -3, 2])
    np.testing.assert_array_equal((ember.tensor(base) ** ember.tensor(ex)).numpy(),
                                  (torch.tensor(base) ** torch.tensor(ex)).numpy())
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        ember.tensor([2]) ** -1


def test_einsum_and_outer(torch):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    for eq, ops in (("ij,jk->ik", (a, b)), ("ij->ji", (a,)), ("ij,ij->", (a, a)), ("i,j", (a[0], b[0]))):
        np.testing.assert_allclose(ember.einsum(eq, *[ember.tensor(o) for o in ops]).numpy(),
                                   torch.einsum(eq, *[torch.tensor(o) for o in ops]).numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match="einsum"):
        ember.einsum("ij,jk->ik", ember.ones(2, 3), ember.ones(4, 5))


def test_repeat_tile_flip_roll_tril(torch):
    x = np.arange(6.0).reshape(2, 3)
    for f in (lambda m, t: t.repeat(2, 2), lambda m, t: t.tile((2,)), lambda m, t: t.tile(2),
              lambda m, t: t.tile(3, 1, 2), lambda m, t: m.tile(t, [2, 1]), lambda m, t: t.flip(0),
              lambda m, t: m.roll(t, 1), lambda m, t: m.roll(t, -1, 1), lambda m, t: m.tril(t, -1),
              lambda m, t: m.triu(t, 1), lambda m, t: t.repeat_interleave(2, dim=1),
              lambda m, t: m.rot90(t), lambda m, t: m.cumsum(t, 1), lambda m, t: m.cumprod(t, 0),
              lambda m, t: t.logsumexp(1), lambda m, t: m.softmax(t, 0), lambda m, t: t.prod(1)):
        np.testing.assert_allclose(f(ember, ember.tensor(x)).numpy(), f(torch, torch.tensor(x)).numpy())


def test_out_keyword_writes_result(torch):
    # matmul/cat/stack/max accepted out= and left it untouched (a silent wrong answer)
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    cases = [lambda m, x, o: m.matmul(x, x.t(), out=o), lambda m, x, o: m.cat([x, x], out=o),
             lambda m, x, o: m.stack([x, x], 1, out=o), lambda m, x, o: m.max(x, x.flip(0), out=o),
             lambda m, x, o: m.add(x, 1, out=o), lambda m, x, o: m.nn.functional.normalize(x, out=o)]
    for call in cases:
        eo, to = ember.zeros(3), torch.zeros(3)  # wrong shape: resized
        r = call(ember, ember.tensor(a), eo)
        call(torch, torch.tensor(a), to)
        assert r is eo
        np.testing.assert_allclose(eo.numpy(), to.numpy(), rtol=1e-6)
    ev, ei = ember.zeros(3), ember.zeros(3, dtype=ember.int64)
    r = ember.max(ember.tensor(a), 1, out=(ev, ei))
    assert r[0] is ev and r[1] is ei and r.indices is ei
    np.testing.assert_array_equal(ev.numpy(), [3, 7, 11])
    np.testing.assert_array_equal(ei.numpy(), [3, 3, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.add(ember.ones(2), 1.5, out=ember.zeros(2, dtype=ember.int64))


def test_aminmax_names_and_bincount_dtype(torch):
    x = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]], dtype=np.float32)
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        e, t = ember.aminmax(ember.tensor(x), **kw), torch.aminmax(torch.tensor(x), **kw)
        np.testing.assert_array_equal(e.min.numpy(), t.min.numpy())
        np.testing.assert_array_equal(e.max.numpy(), t.max.numpy())
    idx = [0, 1, 1, 3]
    for w in (None, [0.5, 1.0, 2.0, 1.0], np.array([1.0, 2.0, 3.0, 4.0]), [1, 2, 3, 4]):
        ew = None if w is None else ember.tensor(w)
        tw = None if w is None else torch.tensor(w)
        e, t = ember.bincount(ember.tensor(idx), ew), torch.bincount(torch.tensor(idx), tw)
        assert e.dtype.name == str(t.dtype).split(".")[1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_integer_nansum_and_uint8_all_any_dtypes(torch):
    # nansum of an integer tensor is an int64 sum (ember gave float32); all/any of uint8 are uint8
    cases = [lambda m: m.tensor([1, 2, 3]).nansum(), lambda m: m.tensor([True, True]).nansum(),
             lambda m: m.tensor([[1, 2], [3, 4]], dtype=m.int32).nansum(1),
             lambda m: m.tensor([0, 1, 2], dtype=m.uint8).all(), lambda m: m.tensor([0, 1, 2], dtype=m.uint8).any(),
             lambda m: m.tensor([[0, 1], [2, 3]], dtype=m.uint8).any(0, keepdim=True),
             lambda m: m.tensor([0.0, 1.0]).any(), lambda m: m.tensor([1, 2]).all()]
    for f in cases:
        e, t = f(ember), f(torch)
        assert e.dtype.name == str(t.dtype).split(".")[1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_xlogy_scalars_and_nan(torch):
    # xlogy(t, 2.0) raised TypeError; xlogy(0, nan) is nan, not 0
    nan = float("nan")
    for f in (lambda m, x, y: m.xlogy(x, y), lambda m, x, y: m.xlogy(x, 2.0), lambda m, x, y: m.xlogy(x, nan),
              lambda m, x, y: m.xlogy(0.0, y), lambda m, x, y: m.xlogy(3.0, y), lambda m, x, y: x.xlogy(0.0)):
        e = f(ember, ember.tensor([0.0, 1.0, 2.0, 0.0]), ember.tensor([nan, 2.0, 0.0, 3.0]))
        t = f(torch, torch.tensor([0.0, 1.0, 2.0, 0.0]), torch.tensor([nan, 2.0, 0.0, 3.0]))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_argmax_of_empty_batch_and_repeat_interleave_is_new_tensor(torch):
    # argmax over a non-empty dim of an empty tensor (an empty batch) raised; repeat_interleave of a
    # size-1 dim returned a stride-0 view (repeats=1: the input itself, so writes went through)
    for f in (lambda m: m.zeros(0, 3, 2).argmax(1), lambda m: m.zeros(0, 3, 2).argmin(2, keepdim=True),
              lambda m: m.zeros(2, 0).argmax(0)):
        e, t = f(ember), f(torch)
        assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.int64
    with pytest.raises(IndexError):
        ember.zeros(0, 3).argmax(0)
    for m in (ember, torch):
        x = m.ones(1, 3)
        y = x.repeat_interleave(2, 0)
        z = x.repeat_interleave(1, 0)
        z += 1
        assert y.stride() == (3, 1) and x.sum().item() == 3.0


def test_gradients_at_zeros_match_torch(torch):
    # cumprod's gradient at a zero was 0 (it is the product of the others); std of a constant input
    # gave nan gradients (PyTorch: 0); celu's max+min tie split the gradient near 0 and overflowed at inf
    cases = [(lambda m, x: x.cumprod(0).sum(), [2.0, 0.0, 3.0, 0.0, 5.0]),
             (lambda m, x: (x.cumprod(0) * m.arange(3.0)).sum(), [0.0, 4.0, 2.0]),
             (lambda m, x: x.std(), [1.0, 1.0, 1.0]), (lambda m, x: x.std(0, keepdim=True).sum(), [2.0, 2.0]),
             (lambda m, x: m.nn.functional.celu(x, 0.7).sum(), [-1e-8, 0.0, 1e-8, 30.0, 1000.0, -1000.0])]
    for f, v in cases:
        g = []
        for m in (ember, torch):
            x = m.tensor(v, requires_grad=True)
            f(m, x).backward()
            g.append(x.grad.numpy())
        np.testing.assert_allclose(g[0], g[1], rtol=1e-5)
    x = [-1e-8, float("inf"), -float("inf"), 2.0, -2.0]
    np.testing.assert_allclose(ember.nn.functional.celu(ember.tensor(x)).numpy(),
                               torch.nn.functional.celu(torch.tensor(x)).numpy(), rtol=1e-6)
    assert np.isnan(ember.tensor([1.0]).std().item())  # one element, correction 1: nan as in PyTorch


def test_more_gradients_at_special_points(torch):
    # PyTorch's slopes: d(0**b)/db = 0 for b >= 0 (ember: -inf at b = 0); atan2 at (0, 0): 0 (nan);
    # a p-norm (p > 1) of a zero vector: 0 (nan); xlogy in x where x = 0: 0 (nan)
    def grads(m, f, *vals):
        xs = [m.tensor(v, requires_grad=True) for v in vals]
        f(m, *xs).backward()
        return [x.grad.numpy() for x in xs]
    cases = [(lambda m, b, e: (b ** e).sum(), [0.0, 0.0, 2.0], [0.0, 0.5, 3.0]),
             (lambda m, y: m.atan2(y, m.zeros(2)).sum(), [0.0, 1.0]),
             (lambda m, x: x.norm(p=3), [0.0, 0.0]), (lambda m, x: x.norm(p=3, dim=1).sum(), [[0.0, 0.0], [1.0, 2.0]]),
             (lambda m, x, y: m.xlogy(x, y).sum(), [0.0, 1.0, 0.0], [0.5, 2.0, 3.0])]
    for f, *vals in cases:
        for a, b in zip(grads(ember, f, *vals), grads(torch, f, *vals)):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_float16_scans_accumulate_in_float32(torch):
    # float16 cumsum stalled at 2048 (a float16 running sum); var/cumprod also accumulate in float32
    x = np.random.RandomState(0).rand(20000).astype(np.float16)
    for f in (lambda t: t.cumsum(0), lambda t: t.view(20, 1000).var(1), lambda t: t[:30].cumprod(0),
              lambda t: t.std(), lambda t: t.norm(), lambda t: t.view(20, 1000).norm(dim=1),
              lambda t: t.norm(p=3)):  # norm: float16 squares overflowed (inf)
        e, t = f(ember.tensor(x)), f(torch.tensor(x))
        assert e.dtype is ember.float16
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_scans_signs_and_statistics_match_torch(torch):
    # cummax/cummin, logcumsumexp, signbit, heaviside, cov, corrcoef raised AttributeError;
    # logaddexp(-inf, -inf) was nan
    inf = float("inf")
    a = np.random.RandomState(0).randn(3, 5).astype(np.float32)
    a[1, 3] = a[1, 1] = 5.0  # ties: the latest index, as PyTorch
    cases = [lambda m, x: m.cummax(x, 1), lambda m, x: x.cummin(0), lambda m, x: x.logcumsumexp(1),
             lambda m, x: m.logcumsumexp(x * 500, 0), lambda m, x: m.signbit(x), lambda m, x: m.cov(x),
             lambda m, x: m.corrcoef(x), lambda m, x: m.heaviside(x.detach().round(), m.tensor(0.5)),
             lambda m, x: m.logaddexp(m.tensor([-inf, inf, -inf, 1.0]), m.tensor([-inf, inf, 0.0, -inf]))]
    for f in cases:
        outs = []
        for m in (ember, torch):
            x = m.tensor(a, requires_grad=True)
            r = f(m, x)
            r0 = r[0] if isinstance(r, tuple) else r
            if r0.requires_grad:
                (r0 * m.arange(float(r0.numel())).reshape(r0.shape)).sum().backward()
            outs.append([t.detach().numpy() for t in (r if isinstance(r, tuple) else (r,))]
                        + ([x.grad.numpy()] if x.grad is not None else []))
        for e, t in zip(*outs):
            np.testing.assert_allclose(e, t, rtol=2e-4, atol=1e-5)  # (PyTorch's own x*500 gradient is rounded)
