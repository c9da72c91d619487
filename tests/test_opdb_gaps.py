"""Regression tests for the op_db findings closed in issue 15 (each was a KNOWN BUG or GAP entry of
tests/test_torch_op_db.py's XFAIL table): PyTorch is the oracle where it is installed."""
import numpy as np
import pytest

import ember


def _rows(seq):
    """A batch of two sequences: the sorted one and its reverse (unsorted, as op_db's vmap check
    builds its second row)."""
    return np.stack([seq, seq[..., ::-1]])


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_vmap_batched_sequence_matches_loop(torch, side):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.standard_normal((3, 6)), -1)
    vals = rng.standard_normal((3, 4))
    s_b, v_b = _rows(seq), _rows(vals)
    f = (lambda s, v: ember.searchsorted(s, v, side=side))
    got = ember.func.vmap(f)(ember.tensor(s_b), ember.tensor(v_b))
    loop = ember.stack([f(ember.tensor(s_b[i]), ember.tensor(v_b[i])) for i in range(2)])
    ref = torch.func.vmap(lambda s, v: torch.searchsorted(s, v, side=side))(torch.tensor(s_b), torch.tensor(v_b))
    np.testing.assert_array_equal(got.numpy(), loop.numpy())
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    assert got.dtype == ember.int64


def test_bucketize_vmap_over_boundaries_and_scalar_inputs(torch):
    rng = np.random.default_rng(1)
    b = _rows(np.sort(rng.standard_normal(5)))
    x = rng.standard_normal((2, 5, 5))
    for in_dims in [(0, 0), (None, 0), (0, None)]:
        xs = x[0] if in_dims[0] is None else x
        bs = b[0] if in_dims[1] is None else b
        got = ember.func.vmap(lambda a, c: ember.bucketize(a, c, right=True, out_int32=True),
                              in_dims=in_dims)(ember.tensor(xs), ember.tensor(bs))
        ref = torch.func.vmap(lambda a, c: torch.bucketize(a, c, right=True, out_int32=True),
                              in_dims=in_dims)(torch.tensor(xs), torch.tensor(bs))
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
        assert got.dtype == ember.int32


def test_searchsorted_vmap_sorter_and_python_number(torch):
    rng = np.random.default_rng(2)
    seq = rng.standard_normal((2, 8))
    sorter = np.argsort(seq, -1)
    got = ember.func.vmap(lambda s, o: ember.searchsorted(s, -0.2, sorter=o, right=True))(
        ember.tensor(seq), ember.tensor(sorter))
    ref = torch.func.vmap(lambda s, o: torch.searchsorted(s, -0.2, sorter=o, right=True))(
        torch.tensor(seq), torch.tensor(sorter))
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


# ----------------------------------------------------------------------------- validation (PyTorch's errors)

import ember.nn.functional as F  # noqa: E402


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_rrelu_lower_above_upper():
    _raises(RuntimeError, "rrelu: Lower bound should be less than or equal to the upper bound",
            lambda: F.rrelu(ember.randn(5, 5), 0.3, 0.1))
    assert F.rrelu(ember.randn(3), 0.2, 0.2).shape == (3,)


@pytest.mark.parametrize("shape", [(0, 1, 2, 10), (2, 1, 0, 1, 2), (2, 0, 2, 2, 2)])
def test_pool3d_empty_non_batch_dims(torch, shape):
    for name in ("max_pool3d", "avg_pool3d"):
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.nn.functional, name)(torch.zeros(shape), 1)
        assert "non-batch dimensions to have positive length" in str(theirs.value)
        _raises(RuntimeError, f"{name}\\(\\): Expected input's non-batch dimensions to have positive length",
                lambda: getattr(F, name)(ember.zeros(shape), 1))
    assert F.max_pool3d(ember.zeros(0, 1, 2, 2, 2), 1).shape == (0, 1, 2, 2, 2)   # an empty batch is fine


def test_multinomial_out_must_be_long():
    p = ember.rand(2, 3)
    for dt in (ember.float64, ember.int32):
        _raises(RuntimeError, "multinomial expects Long tensor out", lambda: ember.multinomial(p, 2, out=ember.empty(2, 2, dtype=dt)))
    out = ember.empty(2, 2, dtype=ember.int64)
    assert ember.multinomial(p, 2, out=out) is out


def test_bernoulli_expanded_out_is_refused():
    _raises(RuntimeError, "unsupported operation", lambda: ember.bernoulli(ember.full((6,), 0.5), out=ember.zeros(1).expand(6)))


def test_linear_cross_entropy_validation():
    x, w = ember.randn(2, 3), ember.randn(2, 3)
    _raises(RuntimeError, "ignore_index cannot be specified when target contains probabilities",
            lambda: F.linear_cross_entropy(x, w, ember.rand(2, 2), ignore_index=-100))
    _raises(RuntimeError, "K-dimensional loss defined by linear_weight shape \\(2, 4, 3\\) requires batched input",
            lambda: F.linear_cross_entropy(ember.randn(3), ember.randn(2, 4, 3), ember.rand(2, 4)))
    assert F.linear_cross_entropy(x, w, ember.tensor([0, 1]), ignore_index=0).dim() == 0


def test_error_types_as_pytorch():
    _raises(ValueError, "Input dimension should be at least 4", lambda: F.adaptive_avg_pool3d(ember.randn(2, 2, 2), (2, 2, 2)))
    _raises(ValueError, "Input dimension should be at least 4", lambda: F.adaptive_max_pool3d(ember.randn(2, 2, 2), (2, 2, 2)))
    _raises(RuntimeError, "Expected 4D or 5D", lambda: F.adaptive_avg_pool3d(ember.randn(2, 2, 2), 2))
    for conv, x, w in ((F.conv3d, ember.randn(1, 1, 4, 4, 4), ember.randn(1, 1, 2, 2, 2)),
                       (F.conv2d, ember.randn(1, 1, 4, 4), ember.randn(1, 1, 2, 2)),
                       (F.conv1d, ember.randn(1, 1, 4), ember.randn(1, 1, 2))):
        _raises(RuntimeError, "padding='same' is not supported for strided convolutions",
                lambda: conv(x, w, stride=2, padding="same"))
    t = ember.tensor([0, 1, 2, 3, 0])
    for wt in (ember.tensor(1.0), ember.randn(5, 4)):
        _raises(ValueError, "weight must be one-dimensional", lambda: F.multi_margin_loss(ember.randn(5, 4), t, weight=wt))
    _raises(RuntimeError, "inconsistent weight size", lambda: F.multi_margin_loss(ember.randn(5, 4), t, weight=ember.ones(5)))
    s = ember.tensor(1.0)
    _raises(RuntimeError, "input must have at least 2 dimensions", lambda: ember.ormqr(s, s, s))
    _raises(RuntimeError, "other must have at least 2 dimensions", lambda: ember.ormqr(ember.randn(3, 3), ember.randn(3), ember.randn(3)))


# ----------------------------------------------------------------------------- what PyTorch accepts


@pytest.mark.parametrize("target", [0, [0]])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_margin_losses_of_a_0dim_input(torch, target, reduction):
    for name in ("multi_margin_loss", "multilabel_margin_loss"):
        x_t = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
        x_e = ember.tensor(0.7, dtype=ember.float64, requires_grad=True)
        r_t = getattr(torch.nn.functional, name)(x_t, torch.tensor(target), reduction=reduction)
        r_e = getattr(F, name)(x_e, ember.tensor(target), reduction=reduction)
        assert tuple(r_e.shape) == tuple(r_t.shape)
        np.testing.assert_allclose(r_e.detach().numpy(), r_t.detach().numpy())
        g_t, = torch.autograd.grad(r_t.sum(), x_t)
        g_e, = ember.autograd.grad(r_e.sum(), x_e)
        np.testing.assert_allclose(g_e.numpy(), g_t.numpy())


def test_multi_margin_loss_1d_input_keeps_the_target_shape(torch):
    x = np.random.default_rng(3).standard_normal(3)
    for target in (1, [1]):
        r_t = torch.nn.functional.multi_margin_loss(torch.tensor(x), torch.tensor(target), reduction="none")
        r_e = F.multi_margin_loss(ember.tensor(x), ember.tensor(target), reduction="none")
        assert tuple(r_e.shape) == tuple(r_t.shape)
        np.testing.assert_allclose(r_e.numpy(), r_t.numpy())


def test_unfold_of_an_empty_batch_stays_in_the_graph():
    x = ember.randn(0, 3, 4, 4, requires_grad=True)
    y = F.unfold(x, 2)
    assert y.shape == (0, 12, 9) and y.requires_grad
    y.sum().backward()
    assert x.grad.shape == x.shape


def test_resize_as_function():
    a, b = ember.randn(2, 3), ember.arange(4.0)
    r = ember.resize_as_(b, a)
    assert r is b and b.shape == (2, 3)
    np.testing.assert_array_equal(b.numpy().reshape(-1)[:4], np.arange(4.0))


def test_resize_under_vmap_resizes_each_row(torch):
    x = ember.arange(6.0).reshape(2, 3)
    y = ember.func.vmap(lambda a, b: a.resize_as_(b) * 2)(x.clone(), ember.randn(2, 3))
    np.testing.assert_array_equal(y.numpy(), np.arange(6.0).reshape(2, 3) * 2)
    r = ember.func.vmap(lambda a: a.resize_(4))(x.clone())
    np.testing.assert_array_equal(r.numpy(), [[0, 1, 2, 0], [3, 4, 5, 0]])
    assert ember.func.vmap(lambda a: a.resize_(2))(x.clone()).shape == (2, 2)


# ----------------------------------------------------------------------------- found by the full sweep


@pytest.mark.parametrize("a_shape,b_shape", [((5, 5, 0), (0, 5)), ((2, 3, 0), (0, 4)), ((5, 0), (0, 5))])
def test_matmul_with_an_empty_inner_dim(torch, a_shape, b_shape):
    a = ember.randn(*a_shape, dtype=ember.float64, requires_grad=True)
    b = ember.randn(*b_shape, dtype=ember.float64, requires_grad=True)
    r = ember.matmul(a, b)
    assert tuple(r.shape) == tuple(torch.matmul(torch.zeros(a_shape), torch.zeros(b_shape)).shape)
    assert not r.detach().numpy().any()
    r.sum().backward()
    assert a.grad.shape == a.shape and b.grad.shape == b.shape


@pytest.mark.parametrize("x_shape,w_shape", [((2, 3, 0), (4, 0)), ((2, 3, 5), (0, 5)), ((0, 3, 5), (4, 5))])
def test_linear_with_empty_dims(torch, x_shape, w_shape):
    x = ember.randn(*x_shape, dtype=ember.float64, requires_grad=True)
    w = ember.randn(*w_shape, dtype=ember.float64, requires_grad=True)
    b = ember.ones(w_shape[0], dtype=ember.float64)
    y = F.linear(x, w, b)
    ref = torch.nn.functional.linear(torch.zeros(x_shape, dtype=torch.float64), torch.zeros(w_shape, dtype=torch.float64),
                                     torch.ones(w_shape[0], dtype=torch.float64))
    np.testing.assert_array_equal(y.detach().numpy(), ref.numpy())
    y.sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape


# ----------------------------------------------------------------------------- vmap of composites that check values


def _vmap_both(torch, fe, ft, *arrays, in_dims=0):
    got = ember.func.vmap(fe, in_dims=in_dims)(*[ember.tensor(a) for a in arrays])
    ref = torch.func.vmap(ft, in_dims=in_dims)(*[torch.tensor(a) for a in arrays])
    got = got if isinstance(got, tuple) else (got,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert tuple(g.shape) == tuple(r.shape)
        np.testing.assert_allclose(g.numpy(), r.numpy())


def test_vmap_unravel_index(torch):
    idx = np.array([[0, 5, -1, 11], [3, 7, 2, -12]])
    _vmap_both(torch, lambda i: ember.unravel_index(i, (3, 4)), lambda i: torch.unravel_index(i, (3, 4)), idx)
    with pytest.raises(ValueError, match="must be in range"):   # every row is checked
        ember.func.vmap(lambda i: ember.unravel_index(i, (3, 4)))(ember.tensor([[0, 1], [2, 12]]))


@pytest.mark.parametrize("accumulate", [False, True])
def test_vmap_put(torch, accumulate):
    rng = np.random.default_rng(4)
    x, src = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 4))
    idx = np.array([[0, 8, -1, 4], [2, 2, 5, -9]]) if accumulate else np.array([[0, 8, -2, 4], [2, 3, 5, -9]])
    _vmap_both(torch, lambda a, i, s: ember.put(a, i, s, accumulate), lambda a, i, s: torch.put(a, i, s, accumulate),
               x, idx, src)
    with pytest.raises(IndexError, match="out of range"):
        ember.func.vmap(lambda a, i, s: ember.put(a, i, s))(ember.tensor(x), ember.tensor([[0, 1, 2, 3], [0, 1, 2, 9]]),
                                                             ember.tensor(src))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_vmap_index_reduce(torch, reduce):
    rng = np.random.default_rng(5)
    x, src = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3))
    idx = np.array([[0, 1, 1, 3, 0], [2, 2, 2, 0, 1]])
    _vmap_both(torch, lambda a, i, s: a.index_reduce(0, i, s, reduce), lambda a, i, s: a.index_reduce(0, i, s, reduce),
               x, idx, src)
    _vmap_both(torch, lambda a, s: a.index_reduce(1, ember.tensor([0, 0, 2, 1, 2]), s, reduce, include_self=False),
               lambda a, s: a.index_reduce(1, torch.tensor([0, 0, 2, 1, 2]), s, reduce, include_self=False),
               x.transpose(0, 2, 1).copy(), src.transpose(0, 2, 1).copy())


def test_vmap_nonzero_static(torch):
    x = np.array([[0.0, 1.0, 0.0, 2.0], [3.0, 0.0, 0.0, 0.0]])
    for size in (1, 3, 6):
        _vmap_both(torch, lambda a: ember.nonzero_static(a, size=size), lambda a: torch.nonzero_static(a, size=size), x)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_vmap_segment_reduce_lengths(torch, reduce):
    rng = np.random.default_rng(6)
    data = rng.standard_normal((2, 6, 2))
    lengths = np.array([[1, 2, 0, 3], [3, 3, 0, 0]])
    _vmap_both(torch, lambda d, n: ember.segment_reduce(d, reduce, lengths=n),
               lambda d, n: torch.segment_reduce(d, reduce, lengths=n), data, lengths)
    with pytest.raises(RuntimeError, match="sum to data.size"):
        ember.func.vmap(lambda d, n: ember.segment_reduce(d, reduce, lengths=n))(
            ember.tensor(data), ember.tensor([[1, 2, 0, 3], [3, 3, 0, 1]]))


_POLY_NAMES = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
               "shifted_chebyshev_polynomial_t")


def test_orthogonal_polynomials_of_a_huge_degree_end():
    """op_db's reference sample has degrees of 1e20: SciPy's integer-degree recurrences take O(n) steps
    (the sweep never ended); a degree with no int64 value (1e20, inf, NaN) gives 0 as in PyTorch, one
    beyond 2**31 NaN, smaller degrees are evaluated."""
    x = ember.tensor([0.3, -0.3, 1.5], dtype=ember.float64)
    for name in _POLY_NAMES:
        r = getattr(ember.special, name)(x, ember.tensor([1e20, 2.0 ** 40, -1e20], dtype=ember.float64)).numpy()
        assert r[0] == 0.0 and np.isnan(r[1]) and r[2] == 0.0
        small = getattr(ember.special, name)(x, ember.tensor([3.0, 3.0, 3.0], dtype=ember.float64)).numpy()
        assert np.isfinite(small).all()


def test_orthogonal_polynomials_of_a_nan_or_infinite_degree(torch):
    """op_db's extremal sample (x and n from inf, -inf, NaN) hung ember: a NaN degree cast to int64 is -2**63,
    a 2**63-step recurrence in SciPy. Such degrees (and 1e20) give PyTorch's 0, at once."""
    vals = [np.inf, -np.inf, np.nan, 0.5]
    x = np.repeat(vals, 4)
    n = np.tile([np.inf, -np.inf, np.nan, 1e20], 4)
    for name in _POLY_NAMES:
        got = getattr(ember.special, name)(ember.tensor(x), ember.tensor(n)).numpy()
        want = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_trigamma_at_minus_infinity_is_nan(torch):
    """polygamma(1, -inf) (digamma's derivative there) has no limit: NaN as PyTorch, not SciPy's inf."""
    x = np.array([-np.inf, np.inf, -2.5, 3.0])
    np.testing.assert_allclose(ember.polygamma(1, ember.tensor(x)).numpy(),
                               torch.polygamma(1, torch.tensor(x)).numpy(), rtol=1e-9)
    g = ember.tensor(x, requires_grad=True)
    ember.digamma(g).sum().backward()
    assert np.isnan(g.grad.numpy()[0]) and g.grad.numpy()[1] == 0.0


def test_xlog1py_gradient_at_x_zero_is_log1p_y(torch):
    """x * log1p(y) is linear in x: at x = 0 its x-derivative is log1p(y) (ember gave 0, a wrong gradient
    that op_db's reference sample found); PyTorch's, finite differences and forward mode agree."""
    x = np.array([0.0, 0.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 1.0])
    y = np.array([0.25, -0.5, 3.0, 0.7, -1.0, -2.0, -np.inf, np.inf, -2.0])   # (0, y <= -1): 0, as PyTorch
    xe, ye = ember.tensor(x, requires_grad=True), ember.tensor(y, requires_grad=True)
    ember.special.xlog1py(xe, ye).sum().backward()
    xt, yt = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    torch.special.xlog1py(xt, yt).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ye.grad.numpy(), yt.grad.numpy(), rtol=1e-12)
    xf, yf = ember.tensor(x[:4], requires_grad=True), ember.tensor(y[:4], requires_grad=True)
    assert ember.autograd.gradcheck(ember.special.xlog1py, (xf, yf))
    _, t = ember.func.jvp(lambda a: ember.special.xlog1py(a, ember.tensor(y)), (ember.tensor(x),),
                          (ember.ones(len(x), dtype=ember.float64),))
    np.testing.assert_allclose(t.numpy(), xt.grad.numpy(), rtol=1e-12)
    for num in (0.5, -1.0):     # a number as other
        xs = ember.tensor([0.0, 2.0], dtype=ember.float64, requires_grad=True)
        ember.special.xlog1py(xs, num).sum().backward()
        ts = torch.tensor([0.0, 2.0], dtype=torch.float64, requires_grad=True)
        torch.special.xlog1py(ts, num).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), ts.grad.numpy(), rtol=1e-12)


def test_error_types_of_empty_lists_and_degenerate_arguments(torch):
    """op_db's error inputs: the exception type (and message) PyTorch raises, where ember raised a bare
    IndexError/ValueError from inside."""
    for L in (ember, torch):
        cases = [lambda: L.hstack([]), lambda: L.vstack([]), lambda: L.dstack([]),
                 lambda: L.roll(L.ones(5), []), lambda: L.narrow(L.tensor(1.0), 0, 0, 1),
                 lambda: L.narrow(L.ones(4), 0, L.tensor(True), 1), lambda: L.eye(-1), lambda: L.eye(3, -1),
                 lambda: L.nn.functional.adaptive_avg_pool1d(L.ones(1, 2, 3), [])]
        for k, fn in enumerate(cases):
            with pytest.raises(RuntimeError):
                fn()
        for fn in (L.nn.functional.adaptive_avg_pool2d, L.nn.functional.adaptive_max_pool2d):
            with pytest.raises(ValueError, match="Input dimension should be at least 3"):
                fn(L.ones(2, 2), [2, 2])
            for bad in ([-1, 2], [3]):
                with pytest.raises(RuntimeError):
                    fn(L.ones(1, 2, 3, 4), bad)
            assert tuple(fn(L.ones(1, 2, 3, 4), [2, 0]).shape) == (1, 2, 2, 0)   # an empty result
    assert ember.narrow(ember.arange(5), 0, ember.tensor(1), 2).tolist() == [1, 2]
    assert ember.eye(0).shape == (0, 0)


# ----------------------------------------------------------------------------- vmap rules (issue 15, round 3)


def test_vmap_cummax_cummin_signbit(torch):
    x = np.array([[[1., 3., 2., np.nan, 0.], [5., 4., 6., 1., 7.]], [[0., -0., -1., 2., 2.], [3., 3., 1., 9., -2.]]])
    for name in ("cummax", "cummin"):
        for d in (0, 1, -1):
            _vmap_both(torch, lambda a: getattr(ember, name)(a, d), lambda a: getattr(torch, name)(a, d), x)
    _vmap_both(torch, ember.signbit, torch.signbit, x)
    _vmap_both(torch, lambda a: ember.cummax(a, 0), lambda a: torch.cummax(a, 0), np.array([2., -1.]))  # 0-dim rows


@pytest.mark.parametrize("invert", [False, True])
def test_vmap_isin(torch, invert):
    e, t = np.array([[1, 2, 3, 7], [4, 5, 6, 7]]), np.array([[2, 5, 7], [4, 4, 9]])
    f = (lambda lib: lambda a, b: lib.isin(a, b, invert=invert))
    _vmap_both(torch, f(ember), f(torch), e, t)
    _vmap_both(torch, f(ember), f(torch), e, t[0], in_dims=(0, None))
    _vmap_both(torch, f(ember), f(torch), e[0], t, in_dims=(None, 0))
    _vmap_both(torch, f(ember), f(torch), e.astype(np.float64), t)    # mixed dtypes


def test_vmap_index_fill_copy_put(torch):
    rng = np.random.default_rng(7)
    x, src = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 3))
    idx = np.array([[0, 3, 2], [3, 1, 1]])
    _vmap_both(torch, lambda a, i: ember.index_fill(a, 0, i, -2.), lambda a, i: torch.index_fill(a, 0, i, -2.), x, idx)
    # negative indices: against PyTorch's loop (torch.func.vmap's own index_fill rule mis-wraps them in 2.13)
    neg = np.array([[0, -1], [1, -4]])
    got = ember.func.vmap(lambda a, i: ember.index_fill(a, 0, i, -2.))(ember.tensor(x), ember.tensor(neg))
    ref = torch.stack([torch.index_fill(torch.tensor(x[k]), 0, torch.tensor(neg[k]), -2.) for k in range(2)])
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    perm = np.array([[2, 0, 1, 3], [3, 1, 0, 2]])
    _vmap_both(torch, lambda a, i, s: ember.index_copy(a, 0, i, s), lambda a, i, s: torch.index_copy(a, 0, i, s),
               x, perm, src)
    for acc in (False, True):
        i2 = np.array([[1, 1, 3], [0, 2, 0]])
        v = rng.standard_normal((2, 3, 3))
        _vmap_both(torch, lambda a, i, w: ember.index_put(a, (i,), w, acc), lambda a, i, w: torch.index_put(a, (i,), w, acc),
                   x, i2, v)


def test_vmap_masked_scatter(torch):
    m = np.array([[[True, False, True], [False, True, True]], [[False, False, False], [True, True, True]]])
    x, s = np.zeros((2, 2, 3)), np.arange(12.).reshape(2, 2, 3)
    _vmap_both(torch, ember.masked_scatter, torch.masked_scatter, x, m, s)
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        ember.func.vmap(ember.masked_scatter)(ember.tensor(x), ember.tensor(m), ember.tensor(s[:, :1, :2]))


def test_vmap_bincount_argwhere(torch):
    x, w = np.array([[0, 1, 3, 1], [3, 0, 0, 2]]), np.array([[.5, 1., 2., 4.], [1., 2., 3., 4.]])
    _vmap_both(torch, ember.bincount, torch.bincount, x)
    _vmap_both(torch, lambda a, b: ember.bincount(a, b, minlength=6), lambda a, b: torch.bincount(a, b, minlength=6), x, w)
    with pytest.raises(RuntimeError, match="different lengths"):   # torch.func.vmap refuses too (its stack)
        ember.func.vmap(ember.bincount)(ember.tensor([[0, 1], [0, 5]]))
    _vmap_both(torch, ember.argwhere, torch.argwhere, np.array([[1., 0., 2.], [0., 3., 4.]]))
    with pytest.raises(RuntimeError, match="different shapes"):
        ember.func.vmap(ember.argwhere)(ember.tensor([[1., 0., 2.], [0., 0., 4.]]))
    with pytest.raises(RuntimeError, match="vmap"):     # nonzero itself refuses, as torch.func.vmap does
        ember.func.vmap(ember.nonzero)(ember.tensor([[1., 0.], [0., 1.]]))


def test_vmap_zero_dim_gather_index_add_and_negative_take_along_dim(torch):
    a, i = np.array([3., 4.]), np.array([[0], [0]])
    _vmap_both(torch, lambda x, j: ember.gather(x, 0, j), lambda x, j: torch.gather(x, 0, j), a, i)
    _vmap_both(torch, lambda x, j, s: ember.index_add(x, 0, j, s, alpha=2),
               lambda x, j, s: torch.index_add(x, 0, j, s, alpha=2), a, i, np.array([1., 2.]))
    x, j = np.arange(10.).reshape(2, 5), np.array([[-1, 0], [-5, 4]])
    _vmap_both(torch, lambda u, k: ember.take_along_dim(u, k, 0), lambda u, k: torch.take_along_dim(u, k, 0), x, j)


def test_vmap_quantile_batched_q(torch):
    rng = np.random.default_rng(8)
    x, q = rng.standard_normal((2, 5, 3)), np.array([[0.2, 0.5], [0.9, 0.1]])
    for name in ("quantile", "nanquantile"):
        _vmap_both(torch, lambda a, b: getattr(ember, name)(a, b, dim=0, keepdim=True),
                   lambda a, b: getattr(torch, name)(a, b, dim=0, keepdim=True), x, q)
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        ember.func.vmap(ember.quantile)(ember.tensor(x), ember.tensor([[0.2, 0.5], [0.9, 1.5]]))


def test_vmap_batched_index_one_hot_embedding_repeat_interleave(torch):
    idx = np.array([[[0, 2], [3, 1]], [[4, 4], [2, 0]]])
    _vmap_both(torch, lambda i: F.one_hot(i, 5), lambda i: torch.nn.functional.one_hot(i, 5), idx)
    with pytest.raises(RuntimeError, match="num_classes"):   # as torch.func.vmap
        ember.func.vmap(F.one_hot)(ember.tensor(idx))
    rng = np.random.default_rng(9)
    w = rng.standard_normal((2, 5, 3)) * 3
    _vmap_both(torch, lambda a, i: F.embedding(i, a.clone(), max_norm=1.0),
               lambda a, i: torch.nn.functional.embedding(i, a.clone(), max_norm=1.0), w, idx)
    for mode in ("sum", "mean", "max"):
        _vmap_both(torch, lambda a, i: F.embedding_bag(i, a, mode=mode, padding_idx=2),
                   lambda a, i: torch.nn.functional.embedding_bag(i, a, mode=mode, padding_idx=2), w, idx)
    flat, off = np.array([[0, 2, 3, 1], [4, 4, 2, 0]]), np.array([[0, 1], [0, 3]])
    _vmap_both(torch, lambda a, i, o: F.embedding_bag(i, a, o), lambda a, i, o: torch.nn.functional.embedding_bag(i, a, o),
               w, flat, off)
    reps = np.array([[1, 2, 0], [0, 0, 3]])
    _vmap_both(torch, lambda r: ember.repeat_interleave(ember.arange(3.), r, output_size=3),
               lambda r: torch.repeat_interleave(torch.arange(3.), r, output_size=3), reps)
    _vmap_both(torch, ember.repeat_interleave, torch.repeat_interleave, reps)


# ----------------------------------------------------------------------------- errors as PyTorch raises them


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_arange_integer_dtype_truncates_like_torch(torch, dtype):
    for args in [(0, 3, 1.5), (0.5, 10, 2.5), (1.5, 9.7, 2), (0, 10, 2.7), (-3.5, 2, 1.5), (5, 0.5, -1.5)]:
        ref = torch.arange(*args, dtype=getattr(torch, dtype))
        got = ember.arange(*args, dtype=getattr(ember, dtype))
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
        out = ember.empty(0, dtype=getattr(ember, dtype))
        ember.arange(*args, out=out)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
    if dtype == "int64":
        with pytest.raises(ValueError, match="step must be nonzero"):
            ember.arange(0, 64, 0.5, out=ember.empty(0, dtype=ember.int64))
    for bad in [(0, float("inf"), 2), (float("-inf"), 1, 2), (0, float("nan"), 1)]:
        with pytest.raises(RuntimeError, match="unsupported range"):
            ember.arange(*bad)


@pytest.mark.parametrize("pool", ["max_pool1d", "avg_pool1d"])
def test_pool1d_only_the_batch_may_be_empty(torch, pool):
    for shape in [(0, 10), (2, 0), (3, 0, 10), (2, 3, 0), (0, 3, 10)]:
        try:
            getattr(torch.nn.functional, pool)(torch.rand(shape), 1)
            raised = None
        except RuntimeError as e:
            raised = e
        if raised is None:
            assert tuple(getattr(F, pool)(ember.rand(*shape), 1).shape) == shape
        else:
            with pytest.raises(RuntimeError, match="optional 0 dim batch size"):
                getattr(F, pool)(ember.rand(*shape), 1)


def test_out_keyword_checks_like_torch(torch):
    x = ember.rand(4, 3)
    i = ember.tensor([[0, 1, 0]])
    cases = [
        ("gather", lambda o: ember.gather(x, 0, i, out=o)), ("index_select", lambda o: ember.index_select(x, 0, i[0], out=o)),
        ("take", lambda o: ember.take(x, i[0], out=o)), ("masked_select", lambda o: ember.masked_select(x, x > .5, out=o)),
        ("amax", lambda o: ember.amax(x, 0, out=o)), ("amin", lambda o: ember.amin(x, 0, out=o))]
    for name, f in cases:
        o = ember.empty(0)
        assert f(o) is o and o.shape == f(None).shape
        with pytest.raises(RuntimeError, match=name):            # a wider dtype: PyTorch does not cast into out=
            f(ember.empty(0, dtype=ember.float64))
        with pytest.raises(RuntimeError, match="unsupported operation"):   # an expanded out=
            f(ember.empty(1).expand(f(None).numel()).reshape(f(None).shape) if f(None).numel() > 1 else ember.empty(1).expand(2))
    v, k = ember.empty(0), ember.empty(0, dtype=ember.int64)
    r = ember.kthvalue(x, 2, 0, out=(v, k))
    assert r[0] is v and r[1] is k
    np.testing.assert_array_equal(v.numpy(), torch.kthvalue(torch.tensor(x.numpy()), 2, 0)[0].numpy())
    with pytest.raises(RuntimeError):
        ember.aminmax(x, dim=0, out=(ember.empty(0), ember.empty(0, dtype=ember.float64)))
    for f in (lambda: ember.take(x, i[0], out=x), lambda: ember.gather(x, 0, i, out=x),
              lambda: ember.masked_select(x, x > .5, out=x), lambda: ember.cat([x, x], out=x)):
        with pytest.raises(RuntimeError, match="single memory location"):
            f()
    e = ember.empty(0)
    with pytest.raises(RuntimeError, match="single memory location"):   # out= is the (empty) input itself
        ember.cat([e, x], out=e)
    y = ember.rand(4, 6)
    assert ember.cat([y[:, :3], y[:, 3:]], out=ember.empty(0)).shape == (8, 3)   # disjoint views: fine


def test_out_keyword_on_meta_tensors_is_not_an_overlap():
    m = ember.empty(2, 3, device="meta")     # (a meta tensor's data is a stride-0 placeholder)
    assert ember.add(m, m, out=ember.empty(2, 3, device="meta")).shape == (2, 3)
    assert ember.amax(m, 0, out=ember.empty(0, device="meta")).shape == (3,)
    assert ember.cat([m, m], out=ember.empty(0, device="meta")).shape == (4, 3)
