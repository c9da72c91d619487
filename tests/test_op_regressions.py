"""Regression tests for the silent wrong answers and validation gaps of issue 15: each one was a
value, shape, dtype or gradient that differed from PyTorch's without an error (or an input PyTorch
refuses that ember answered). The expected values are PyTorch's (worked out by hand where short);
the `torch` fixture adds a side-by-side check where that is the clearest oracle."""
import math
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _t(a, **kw):
    return ember.tensor(np.asarray(a), **kw)


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if isinstance(a, ember.Tensor) else a, np.float64),
                               np.asarray(b, np.float64), rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- values


def test_cosine_similarity_broadcasts_before_the_norms(torch):
    rng = np.random.default_rng(0)
    a, b = rng.random((2, 1)), rng.random((2, 5))
    got = F.cosine_similarity(_t(a), _t(b))
    _close(got, torch.nn.functional.cosine_similarity(torch.tensor(a), torch.tensor(b)).numpy())
    assert float(got.max()) <= 1 + 1e-12
    # by hand: one column against a row of five is |a| (b . 1) / (|a| sqrt(5) |b|)
    want = b.sum(1) / (math.sqrt(5) * np.linalg.norm(b, axis=1))
    _close(got, want)


@pytest.mark.parametrize("pad", [(-1, 2), (2, -1), (-2, -1), (-1, -1), (3, -2)])
def test_circular_pad_with_negative_pads_crops_then_wraps(pad):
    x = _t(np.arange(6.0).reshape(1, 1, 6))
    start, stop = max(-pad[0], 0), 6 - max(-pad[1], 0)
    kept = np.arange(6.0)[start:stop]
    want = np.concatenate([kept[len(kept) - max(pad[0], 0):], kept, kept[:max(pad[1], 0)]])
    _close(F.pad(x, pad, mode="circular")[0, 0], want)


def test_circular_pad_2d_negative_against_torch(torch):
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6))
    got = F.pad(_t(x), (-1, 2, 2, -1), mode="circular")
    _close(got, torch.nn.functional.pad(torch.tensor(x), (-1, 2, 2, -1), mode="circular").numpy())


def test_negative_order_norms_of_a_vector_with_a_zero_are_zero():
    v = _t([0.0, 1.0, 2.0], dtype=ember.float64, requires_grad=True)
    for r in (ember.linalg.vector_norm(v, -1), ember.linalg.norm(v, -2), ember.linalg.vector_norm(v, -0.5)):
        assert float(r) == 0.0
    r = ember.linalg.vector_norm(v, -1)
    r.backward()
    assert v.grad.tolist() == [0.0, 0.0, 0.0]        # PyTorch: 0, not nan
    # without a zero: the harmonic-style norm (sum |x|^p)^(1/p)
    w = _t([0.5, 1.0, 2.0], dtype=ember.float64)
    _close(ember.linalg.vector_norm(w, -1.5), (0.5 ** -1.5 + 1 + 2 ** -1.5) ** (-1 / 1.5))


def test_take_along_dim_broadcasts_indices():
    a = _t(np.arange(12.0).reshape(3, 4))
    r = ember.take_along_dim(a, _t([[0, 3]]), dim=1)
    assert tuple(r.shape) == (3, 2)
    _close(r, [[0, 3], [4, 7], [8, 11]])
    r = ember.take_along_dim(_t(np.arange(4.0).reshape(1, 4)), _t([[1], [2], [3]]), dim=1)
    _close(r, [[1], [2], [3]])


def test_take_with_negative_and_0_dim_indices():
    a = _t(np.arange(12.0).reshape(3, 4))
    _close(ember.take(a, _t([[0, -1], [5, 11]])), [[0, 11], [5, 11]])
    r = ember.take(_t(2.5), _t(0))
    assert r.shape == () and float(r) == 2.5


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
def test_var_mean_with_a_bool_second_argument_is_unbiased_over_all(fn):
    x = np.random.default_rng(2).standard_normal((3, 4))
    s, m = getattr(ember, fn)(_t(x), True)
    assert s.shape == () and m.shape == ()
    _close(m, x.mean())
    _close(s, x.var(ddof=1) if fn == "var_mean" else x.std(ddof=1))
    s, m = getattr(ember, fn)(_t(x), False)
    _close(s, x.var() if fn == "var_mean" else x.std())


def test_clamp_with_integer_tensor_bounds_keeps_the_float_dtype():
    x = _t(np.array([-1.5, 0.5, 3.5], np.float32))
    lo, hi = _t(np.zeros(3, np.int32)), _t(np.full(3, 2, np.int32))
    r = ember.clamp(x, lo, hi)
    assert r.dtype == ember.float32
    _close(r, [0, 0.5, 2])
    assert ember.clamp(_t(np.array([1, 5], np.int32)), _t(np.array([2.5, 0.0]))).dtype == ember.float64


def test_dstack_of_1d_tensors():
    v = _t([1.0, 2.0, 3.0])
    r = ember.dstack([v, v * 2])
    assert tuple(r.shape) == (1, 3, 2)
    _close(r[0], [[1, 2], [2, 4], [3, 6]])
    assert tuple(ember.dstack([_t(np.ones((2, 3))), _t(np.ones((2, 3)))]).shape) == (2, 3, 2)


def test_zero_dim_inputs_keep_zero_dim_shapes():
    s = _t(2.5)
    for r in (ember.cumsum(s, 0), ember.cumprod(s, 0), ember.index_select(s, 0, _t([0])), ember.take(s, _t(0))):
        assert r.shape == () and float(r) == 2.5
    (nz,) = ember.nonzero(s, as_tuple=True)
    assert nz.tolist() == [0]
    (nz,) = ember.nonzero(_t(0.0), as_tuple=True)
    assert nz.tolist() == []
    for fn in (ember.max, ember.min, ember.median):
        v, i = fn(s, 0)
        assert v.shape == () and i.shape == () and float(v) == 2.5 and int(i) == 0
    v, i = ember.kthvalue(s, 1, 0)
    assert v.shape == () and float(v) == 2.5
    v, i = ember.topk(s, 1, 0)
    assert v.shape == () and float(v) == 2.5
    assert ember.corrcoef(_t([1.0, 2.0])).shape == ()
    a = _t(1.0)
    a2 = ember.index_add(a, 0, _t([0]), _t(2.0))
    assert a2.shape == () and float(a2) == 3.0


def test_zero_dim_index_select_gradient():
    s = _t(2.5, requires_grad=True)
    ember.index_select(s, 0, _t([0])).backward(_t(3.0))
    assert s.grad.shape == () and float(s.grad) == 3.0


@pytest.mark.parametrize("xs,ws,kw", [
    ((1, 4, 5, 5), (4, 1, 3, 3), dict(groups=2, dilation=2, output_padding=1, stride=2)),
    # output_padding >= stride (allowed below the dilation): the input gradient had an extra column
    ((2, 2, 4, 4), (2, 2, 4, 5), dict(stride=[3, 2], padding=[1, 2], output_padding=[2, 3], groups=2,
                                      dilation=[4, 4])),
])
def test_conv_transpose2d_groups_dilation_output_padding_gradients(torch, xs, ws, kw):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    res = []
    for m in (ember, torch):
        xi, wi = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
        y = m.nn.functional.conv_transpose2d(xi, wi, **kw)
        (y * y).sum().backward()
        res.append((y.detach().numpy(), xi.grad.numpy(), wi.grad.numpy()))
    for a, b in zip(*res):
        assert a.shape == b.shape
        _close(a, b, 1e-9)


@pytest.mark.parametrize("shapes,dims", [(((3, 4, 5), (4, 5, 2)), ([1, 2], [0, 1])),
                                         (((3, 4, 5), (5, 3, 2)), ([2, 0], [0, 1])),
                                         (((2, 3), (3, 2)), 1), (((2, 3), (4,)), 0)])
def test_tensordot_gradients(torch, shapes, dims):
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(s) for s in shapes)
    res = []
    for m in (ember, torch):
        ai, bi = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
        y = m.tensordot(ai, bi, dims=dims)
        (y * y).sum().backward()
        res.append((y.detach().numpy(), ai.grad.numpy(), bi.grad.numpy()))
    for x, y in zip(*res):
        assert x.shape == y.shape
        _close(x, y, 1e-9)


def test_vmap_of_logaddexp_logcumsumexp_and_unfold():
    rng = np.random.default_rng(5)
    p, q = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    _close(ember.func.vmap(ember.logaddexp)(_t(p), _t(q)), np.logaddexp(p, q))
    _close(ember.func.vmap(lambda t: ember.logcumsumexp(t, 0))(_t(p)), np.logaddexp.accumulate(p, axis=1))
    got = ember.func.vmap(lambda t: t.unfold(0, 2, 1))(_t(p))
    want = np.stack([np.stack([row[i:i + 2] for i in range(3)]) for row in p])
    _close(got, want)
    got = ember.func.vmap(lambda t: t.unfold(0, 2, 1), in_dims=1)(_t(p))
    _close(got, np.stack([np.stack([p[i:i + 2, j] for i in range(2)]) for j in range(4)]))


def test_detach_under_vmap_keeps_the_batch():
    p = _t(np.arange(6.0).reshape(2, 3))
    _close(ember.func.vmap(lambda a: a.detach() * 2)(p), np.arange(6.0).reshape(2, 3) * 2)


def test_gaussian_nll_loss_var_one_dim_short_is_per_row():
    rng = np.random.default_rng(6)
    x, t, v = rng.standard_normal((4, 4)), rng.standard_normal((4, 4)), rng.random(4) + 0.1
    want = (0.5 * (np.log(v[:, None]) + (x - t) ** 2 / v[:, None])).mean()
    _close(F.gaussian_nll_loss(_t(x), _t(t), _t(v)), want)
    x3, t3, v3 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.random(3) + 0.1
    want = (0.5 * (np.log(v3[:, None]) + (x3 - t3) ** 2 / v3[:, None])).mean()
    _close(F.gaussian_nll_loss(_t(x3), _t(t3), _t(v3)), want)
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(_t(x3), _t(t3), _t(rng.random(4)))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(_t(x3), _t(t3), _t(-v3))


def test_gaussian_nll_loss_clamped_var_keeps_its_gradient():
    v = _t([1e-9, 1.0], dtype=ember.float64, requires_grad=True)
    F.gaussian_nll_loss(_t([0.0, 0.0], dtype=ember.float64), _t([0.0, 0.0], dtype=ember.float64), v,
                        reduction="sum").backward()
    _close(v.grad, [0.5 / 1e-6, 0.5])   # PyTorch clamps without recording: d/dv of 0.5 log(clamped)


def test_fmax_fmin_ignore_nan_and_give_ties_to_the_first():
    a, b = _t([1.0, math.nan, 2.0, 3.0, math.nan]), _t([math.nan, 1.0, 2.0, math.nan, math.nan])
    assert ember.fmax(a, b).tolist()[:4] == [1.0, 1.0, 2.0, 3.0] and math.isnan(ember.fmax(a, b).tolist()[4])
    assert ember.fmin(a, b).tolist()[:4] == [1.0, 1.0, 2.0, 3.0]
    x, y = _t([1.0, 2.0], requires_grad=True), _t([1.0, 3.0], requires_grad=True)
    ember.fmax(x, y).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0] and y.grad.tolist() == [0.0, 1.0]
    x, y = _t([1.0, 2.0], requires_grad=True), _t([1.0, 3.0], requires_grad=True)
    ember.fmin(x, y).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [0.0, 0.0]


def test_cat_gradient_keeps_float16():
    a = _t(np.ones(3, np.float16), requires_grad=True)
    b = _t(np.ones(2, np.float16), requires_grad=True)
    (ember.cat([a, b]) * 2).sum().backward()
    assert a.grad.dtype == ember.float16 and b.grad.dtype == ember.float16


def test_mixed_dtype_cat_and_stack_gradients_keep_each_input_dtype():
    for join in (ember.cat, ember.stack):
        a = _t(np.ones(3, np.float16), requires_grad=True)
        b = _t(np.ones(3, np.float64), requires_grad=True)
        join([a, b]).sum().backward()
        assert a.grad.dtype == ember.float16 and b.grad.dtype == ember.float64


def test_hypot_does_not_overflow_in_float32():
    r = ember.hypot(_t(np.float32(1e30)), _t(np.float32(1e30)))
    assert r.dtype == ember.float32
    _close(r / 1e30, math.sqrt(2), 1e-6)
    r = ember.hypot(_t(np.float32(1e-30)), _t(np.float32(1e-30)))
    _close(r / 1e-30, math.sqrt(2), 1e-6)
    x, y = _t([3.0], requires_grad=True), _t([4.0], requires_grad=True)
    ember.hypot(x, y).sum().backward()
    _close(x.grad, [0.6])
    _close(y.grad, [0.8])


def test_diff_with_n_0_ignores_prepend_and_append():
    r = ember.diff(_t([1.0, 2.0, 4.0]), n=0, prepend=_t([0.0]), append=_t([9.0]))
    assert r.tolist() == [1.0, 2.0, 4.0]


def test_threshold_keeps_nan():
    r = F.threshold(_t([math.nan, 1.0, -1.0]), 0.0, 5.0)
    assert math.isnan(r.tolist()[0]) and r.tolist()[1:] == [1.0, 5.0]


@pytest.mark.parametrize("fn", ["floor", "round", "ceil", "trunc", "sign"])
def test_rounding_gradients_at_infinity_are_zero(fn):
    a = _t([math.inf, -math.inf, 1.5], requires_grad=True)
    getattr(ember, fn)(a).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


# ----------------------------------------------------------------------------- found by running programs


def test_copyslices_with_a_non_contiguous_incoming_gradient():
    a, b = _t([1.0, 2.0], requires_grad=True), _t([3.0, 4.0], requires_grad=True)
    buf = ember.zeros(2, 2)
    buf[0] = a * 1
    buf[1] = b * 1
    g = _t([[0.0, 1.0], [3.0, 0.0]]).t()       # [[0, 3], [1, 0]], transposed in memory
    buf.backward(g)
    assert a.grad.tolist() == [0.0, 3.0] and b.grad.tolist() == [1.0, 0.0]


def test_dropout2d_on_a_2d_input_drops_elementwise_and_warns():
    ember.manual_seed(0)
    with pytest.warns(UserWarning, match="2-D input to dropout2d"):
        y = nn.Dropout2d(0.5)(ember.ones(8, 50))
    zero = (y == 0).numpy()
    assert 0.3 < zero.mean() < 0.7
    assert not all(r.all() or not r.any() for r in zero)   # not whole rows: element-wise
    y = F.dropout2d(ember.ones(4, 6, 5, 5), 0.5)            # 4-D: whole (sample, channel) planes
    z = (y == 0).numpy().reshape(24, 25)
    assert all(r.all() or not r.any() for r in z)


@pytest.mark.parametrize("make", [lambda: nn.LeakyReLU(0.2, inplace=True), lambda: nn.ReLU6(inplace=True),
                                  lambda: nn.ELU(inplace=True), lambda: nn.SiLU(inplace=True),
                                  lambda: nn.Hardtanh(inplace=True), lambda: nn.Hardswish(inplace=True),
                                  lambda: nn.Mish(inplace=True), lambda: nn.CELU(inplace=True)])
def test_inplace_activations_on_a_non_leaf_run_backward(make):
    x = _t([1.0, -2.0, 3.0], dtype=ember.float64, requires_grad=True)
    make()(x * 2).sum().backward()
    ref = _t([1.0, -2.0, 3.0], dtype=ember.float64, requires_grad=True)
    m = make()
    m.inplace = False
    m(ref * 2).sum().backward()
    _close(x.grad, ref.grad.numpy())
    x = _t([1.0, -2.0, 3.0], requires_grad=True)
    F.leaky_relu(x * 2, 0.2, inplace=True).sum().backward()
    _close(x.grad, [2.0, 0.4, 2.0])


def test_pickled_module_runs_forward():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3))
    again = pickle.loads(pickle.dumps(model))
    x = ember.ones(1, 1, 6, 6)
    model.eval()
    again.eval()
    _close(again(x), model(x).detach().numpy())
    arr = pickle.loads(pickle.dumps(np.ones((1, 3), np.float32)))   # an equal but distinct dtype object
    assert tuple(nn.Linear(3, 2)(ember.from_numpy(arr)).shape) == (1, 2)


# ----------------------------------------------------------------------------- validation gaps


@pytest.mark.parametrize("call", [
    lambda x, t: F.poisson_nll_loss(x, t, reduction="abc"),
    lambda x, t: F.gaussian_nll_loss(x, t, x.abs() + 0.1, reduction="abc"),
    lambda x, t: F.hinge_embedding_loss(x, t.sign(), reduction="abc"),
    lambda x, t: F.soft_margin_loss(x, t.sign(), reduction="abc"),
    lambda x, t: F.multilabel_soft_margin_loss(x, t, reduction="abc"),
    lambda x, t: F.cosine_embedding_loss(x, t, t[:, 0].sign(), reduction="abc"),
    lambda x, t: F.margin_ranking_loss(x, t, t.sign(), reduction="abc"),
    lambda x, t: F.triplet_margin_loss(x, t, x, reduction="abc"),
])
def test_unknown_reduction_raises(call):
    rng = np.random.default_rng(7)
    x, t = _t(rng.random((3, 4)) + 0.1), _t(rng.standard_normal((3, 4)))
    with pytest.raises(ValueError, match="abc is not a valid"):
        call(x, t)


def test_negative_parameters_raise():
    x, t = ember.rand(3, 4), ember.rand(3, 4)
    with pytest.raises(RuntimeError, match="delta"):
        F.huber_loss(x, t, delta=-1.0)
    with pytest.raises(RuntimeError, match="delta"):
        F.huber_loss(x, t, delta=0.0)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_loss(x, t, x, margin=-1.0)
    with pytest.raises(RuntimeError, match="lambda"):
        F.softshrink(x, -1.0)
    for kw in ({"rtol": -1.0}, {"atol": -1.0}):
        with pytest.raises(RuntimeError, match="greater than or equal to zero"):
            ember.isclose(x, t, **kw)
        with pytest.raises(RuntimeError, match="greater than or equal to zero"):
            ember.allclose(x, t, **kw)
    with pytest.raises(RuntimeError, match="std >= 0"):
        ember.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="std >= 0"):
        ember.normal(x, -1.0)
    with pytest.raises(RuntimeError, match="std >= 0"):
        ember.normal(x, -t)
    with pytest.raises(RuntimeError, match="std >= 0"):
        ember.empty(3).normal_(0.0, -1.0)
    with pytest.raises(RuntimeError, match="std >= 0"):
        nn.init.normal_(ember.empty(3), 0.0, -1.0)
    assert F.softshrink(_t([-1.0, 0.2, 1.0]), 0.5).tolist() == [-0.5, 0.0, 0.5]   # still works


def test_rot90_movedim_index_add_shape_checks():
    x = ember.rand(3, 4)
    with pytest.raises(RuntimeError, match="rotation dims to be different"):
        ember.rot90(x, 1, (1, 1))
    with pytest.raises(RuntimeError, match="rotation dims to be different"):
        ember.rot90(x, 1, (0, -2))
    _close(ember.rot90(x, 1, (0, -1)), np.rot90(x.numpy(), 1, (0, 1)))
    with pytest.raises(RuntimeError, match="repeated dim in `destination`"):
        ember.movedim(x, (0, 1), (0, 0))
    with pytest.raises(RuntimeError, match="repeated dim in `source`"):
        ember.movedim(x, (0, 0), (0, 1))
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        ember.index_add(x, 0, _t([0, 1]), ember.ones(2, 1))      # would broadcast in NumPy
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        ember.index_add(x, 1, _t([0, 1]), ember.ones(2, 2))


@pytest.mark.parametrize("call", [lambda: ember.eq(2, 3), lambda: ember.lt(2, ember.ones(2)),
                                  lambda: ember.eq(2, ember.ones(2)), lambda: ember.maximum(ember.ones(2), 2),
                                  lambda: ember.minimum(ember.ones(2), 2.0), lambda: ember.atan2(ember.ones(2), 2.0),
                                  lambda: ember.hypot(ember.ones(2), 2.0), lambda: ember.fmax(ember.ones(2), 1.0),
                                  lambda: ember.logical_and(ember.ones(2), 1), lambda: ember.pow(2, 3),
                                  lambda: ember.fmod(2.0, ember.ones(2))])
def test_python_numbers_pytorch_refuses(call):
    with pytest.raises(TypeError):
        call()


def test_python_numbers_pytorch_accepts():
    x = ember.ones(2)
    assert ember.eq(x, 1).tolist() == [True, True]
    assert (x == 1).tolist() == [True, True] and (2 > x).tolist() == [True, True]
    assert ember.pow(2, x).tolist() == [2.0, 2.0] and ember.remainder(2.0, x).tolist() == [0.0, 0.0]
    assert ember.add(2, 3) == 5 or float(ember.add(2, 3)) == 5


# ----------------------------------------------------------------------------- found by the op_db harness


def test_cov_with_frequency_and_observation_weights(torch):
    rng = np.random.default_rng(8)
    x, fw, aw = rng.random((3, 5)), np.array([1, 2, 0, 3, 1]), rng.random(5)
    for kw in ({"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw, "correction": 0},
               {"fweights": fw, "aweights": aw}):
        got = ember.cov(_t(x), **{k: (_t(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()})
        want = torch.cov(torch.tensor(x), **{k: (torch.tensor(v) if isinstance(v, np.ndarray) else v)
                                             for k, v in kw.items()})
        _close(got, want.numpy(), 1e-10)
    with pytest.raises(RuntimeError, match="fweights cannot be negative"):
        ember.cov(_t(x), fweights=_t(-fw))
    assert ember.cov(_t([[1.0, 2.0]])).shape == () and ember.corrcoef(_t([[1.0, 2.0]])).shape == ()


def test_inner_masked_fill_hinge_take_along_dim():
    _close(ember.inner(_t(2.0), _t([[1.0, 2.0]])), [[2.0, 4.0]])
    assert tuple(ember.inner(ember.ones(2, 3), ember.ones(4, 3)).shape) == (2, 4)
    r = ember.masked_fill(ember.ones(3), _t([[True, False, False], [False, False, True]]), 2.0)
    assert r.tolist() == [[2.0, 1.0, 1.0], [1.0, 1.0, 2.0]]
    # a target that is neither 1 nor -1 counts both terms (PyTorch): 0.3 + max(0, 1 - 0.3)
    _close(F.hinge_embedding_loss(_t(0.3), _t(0.7)), 1.0)
    r = ember.take_along_dim(_t(np.arange(6.0).reshape(2, 3)), _t([[-1, 0], [-3, 2]]), 1)
    assert r.tolist() == [[2.0, 0.0], [3.0, 5.0]]


def test_zero_dim_gather_scatter_index_fill():
    s = _t(2.5)
    assert ember.gather(s, 0, _t(0)).shape == () and float(ember.gather(s, 0, _t(0))) == 2.5
    assert float(ember.scatter(s, 0, _t(0), 4.0)) == 4.0
    assert float(ember.scatter_add(s, 0, _t(0), _t(1.0))) == 3.5
    assert float(ember.index_fill(s, 0, _t([0]), 7.0)) == 7.0
    x = _t(2.5, requires_grad=True)
    ember.max(x, 0)[0].backward()
    assert float(x.grad) == 1.0
    assert tuple(ember.gather(ember.ones(5), 0, _t(np.zeros((2, 0), np.int64))).shape) == (2, 0)


def test_vmap_of_zero_dim_scans_and_softmax():
    x = _t([1.0, 2.0])
    assert ember.func.vmap(lambda t: t.cumsum(0))(x).tolist() == [1.0, 2.0]
    assert ember.func.vmap(lambda t: t.softmax(0))(x).tolist() == [1.0, 1.0]
    assert ember.func.vmap(lambda t: t.max(0)[0])(x).tolist() == [1.0, 2.0]


def test_index_put_with_a_vmap_batched_mask_refuses_instead_of_reading_a_placeholder():
    x = ember.zeros(3, 3)
    masks = _t([[True, False, False], [False, True, False]])
    with pytest.raises(RuntimeError, match="vmap: index_put"):
        ember.func.vmap(lambda m: ember.index_put(x, (m,), _t(1.0)))(masks)


def test_backward_casts_grad_outputs_to_the_output_dtype():
    x = _t([0.1234567], dtype=ember.float64, requires_grad=True)
    y = x.half()
    (g,) = ember.autograd.grad(y, x, _t([0.1234567], dtype=ember.float64))
    assert g.dtype == ember.float64
    _close(g, [float(np.float16(0.1234567))], 1e-12)


@pytest.mark.parametrize("call,exc", [
    (lambda: ember.heaviside(_t([1, 0]), 2), TypeError), (lambda: ember.isclose(_t([1, 2]), 2), TypeError),
    (lambda: ember.remainder(2, 3), TypeError), (lambda: ember.float_power(2, 3), TypeError),
    (lambda: ember.xlogy(2, 3), TypeError), (lambda: ember.clamp_min(2, _t([1, 2])), TypeError),
    (lambda: ember.diff(ember.ones(3), -1), RuntimeError), (lambda: ember.flipud(_t(1.0)), RuntimeError),
    (lambda: F.hardtanh(ember.ones(2), 0.5, -0.5), ValueError),
    (lambda: ember.multinomial(_t([1, 2]), 1), RuntimeError),
    (lambda: ember.mean(_t([1, 2])), RuntimeError), (lambda: ember.mean(ember.ones(2), dtype=ember.int64), RuntimeError),
])
def test_more_inputs_pytorch_refuses(call, exc):
    with pytest.raises(exc):
        call()


def test_diag_embed_with_other_dims_and_offsets(torch):
    x = np.random.default_rng(9).random((5, 4, 3))
    for kw in (dict(offset=-2, dim1=0, dim2=1), dict(offset=1, dim1=0, dim2=2), dict(offset=2, dim1=-1, dim2=1),
               dict(offset=-1, dim1=3, dim2=1)):
        got, want = ember.diag_embed(_t(x), **kw), torch.diag_embed(torch.tensor(x), **kw)
        assert tuple(got.shape) == tuple(want.shape)
        _close(got, want.numpy())
    with pytest.raises(RuntimeError, match="cannot be identical"):
        ember.diag_embed(_t(x), dim1=1, dim2=1)


def test_masked_fill_complex_value_and_multinomial_zero_samples_raise():
    with pytest.raises(RuntimeError, match="cannot be converted"):
        ember.masked_fill(ember.ones(2), _t([True, False]), 1j)
    with pytest.raises(RuntimeError, match="n_sample <= 0"):
        ember.multinomial(_t([0.5, 0.5]), 0)


def test_vmap_of_gather_scatter_sort_topk_on_zero_dim_samples():
    x, i = _t([1.0, 2.0]), _t([0, 0])
    assert ember.func.vmap(lambda t: t.topk(1, -1)[0])(x).tolist() == [1.0, 2.0]
    assert ember.func.vmap(lambda t, j: t.gather(0, j))(x, i).tolist() == [1.0, 2.0]
    assert ember.func.vmap(lambda t, j: t.scatter(0, j, 5.0))(x, i).tolist() == [5.0, 5.0]
    assert ember.func.vmap(lambda t, j: t.scatter_add(0, j, t))(x, i).tolist() == [2.0, 4.0]
    assert ember.func.vmap(lambda t: t.unsqueeze(0))(x).tolist() == [[1.0], [2.0]]   # not a gather-like op


def test_zero_norm_keeps_a_zero_gradient():
    x = _t([[0.0, 1.0, -2.0]], requires_grad=True)
    r = ember.cdist(x, _t([[0.0, 1.0, 3.0]]), 0.0)
    assert r.requires_grad and r.tolist() == [[1.0]]
    r.sum().backward()
    assert np.abs(x.grad.numpy()).sum() == 0


def test_vmap_of_index_select_on_zero_dim_samples():
    x = _t([1.0, 2.0])
    assert ember.func.vmap(lambda t: t.index_select(0, _t([0])))(x).tolist() == [1.0, 2.0]
    assert ember.func.vmap(lambda t, j: t.index_select(0, j))(x, _t([[0], [0]])).tolist() == [1.0, 2.0]


def test_two_python_numbers_give_pytorch_result_dtypes():
    assert ember.add(2.5, 3.5).dtype == ember.float32 and ember.mul(2, 3.5).dtype == ember.float32
    assert ember.sub(2.0, 1).dtype == ember.float32 and ember.add(2, 3).dtype == ember.int64
    assert ember.div(2, 3).dtype == ember.float32 and ember.floor_divide(7.0, 2).dtype == ember.float32
    assert ember.div(7, 2, rounding_mode="floor").dtype == ember.int64
    # bitwise ops take a number as input (PyTorch's Scalar-Tensor overloads)
    assert ember.bitwise_and(1, _t([3])).tolist() == [1] and ember.bitwise_left_shift(1, _t([3])).tolist() == [8]


def test_quantile_of_a_zero_dim_input_along_dim_0():
    x = _t(2.5)
    assert ember.quantile(x, 0.5, dim=0).shape == () and float(ember.quantile(x, 0.5, dim=0)) == 2.5
    assert tuple(ember.quantile(x, _t([0.2, 0.5]), dim=0).shape) == (2,)
    assert float(ember.nanquantile(x, 0.5, dim=-1)) == 2.5


def test_relu_and_frac_gradients_at_nan_and_inf():
    x = _t([math.nan, -1.0, 2.0, math.inf, -math.inf], requires_grad=True)
    ember.relu(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0, 1.0, 0.0]     # NaN passes its gradient, as PyTorch's
    x = _t([math.nan, -1.5, math.inf, -math.inf], requires_grad=True)
    ember.frac(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_sign_of_zero_dim_and_its_users():
    assert float(ember.sign(_t(-2.0))) == -1.0 and ember.sign(_t(-2.0)).shape == ()
    x = _t(0.5, dtype=ember.float64, requires_grad=True)
    F.softsign(x).backward()
    _close(x.grad, 1 / 1.5 ** 2)


def test_isclose_under_vmap_keeps_unequal_infinities_apart():
    a = _t([[math.inf, 1.0, math.nan, -math.inf], [1.0, 2.0, 3.0, math.inf]])
    b = _t([[-math.inf, 1.0000001, math.nan, -math.inf], [1.0, 2.5, 3.0, math.inf]])
    assert ember.func.vmap(ember.isclose)(a, b).tolist() == ember.isclose(a, b).tolist()
    assert ember.isclose(a, b).tolist() == [[False, True, False, True], [True, False, True, True]]


def test_matmul_over_one_term_is_the_broadcast_product():
    """matmul with an inner dimension of 1 (a one-output layer's input gradient) runs as the
    broadcast product: bit for bit NumPy's matmul, batch dims broadcast as matmul's, and its error
    for batch dims that do not broadcast."""
    rs = np.random.RandomState(3)
    for sa, sb, dt in [((800, 1), (1, 64), np.float32), ((16, 50, 1), (1, 64), np.float32),
                       ((2, 3, 5, 1), (3, 1, 4), np.float64), ((5, 1), (2, 1, 4), np.float32),
                       ((4, 1), (1, 3), np.int64)]:
        a = (rs.randn(*sa) * 5).astype(dt)
        b = (rs.randn(*sb) * 5).astype(dt)
        got = (ember.tensor(a) @ ember.tensor(b)).numpy()
        want = np.matmul(a, b)
        assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want), (sa, sb)
    with pytest.raises(RuntimeError, match="batch dimensions"):
        ember.randn(2, 5, 1) @ ember.randn(3, 1, 4)
