"""The fused kernels added for speed (issue 22) against PyTorch and against ember's own composite
rules: the LSTM layer primitive (forward, fused backward, create_graph/double backward through the
rules in ember ops, vmap) and GELU's fused backward."""
import numpy as np
import pytest

import ember
from ember.ops.rnn import lstm_layer, _composite_forward


def _pair(torch, dtype, inp=5, **kw):
    torch.manual_seed(0)
    tm = torch.nn.LSTM(inp, 6, num_layers=2, **kw).to(getattr(torch, dtype))
    em = ember.nn.LSTM(inp, 6, num_layers=2, **kw).to(getattr(ember, dtype))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, em


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("kw", [{}, {"batch_first": True, "bidirectional": True}, {"bias": False}])
@pytest.mark.parametrize("inp", [5, 70])  # (a narrow input's projection in the step's GEMM; a wide one's before the loop)
def test_lstm_matches_torch_values_and_grads(torch, dtype, tol, kw, inp):
    tm, em = _pair(torch, dtype, inp, **kw)
    r = np.random.default_rng(1)
    x = r.standard_normal((4, 3, inp)).astype(dtype)
    nd = 4 if kw.get("bidirectional") else 2
    h0 = r.standard_normal((nd, 4 if kw.get("batch_first") else 3, 6)).astype(dtype)
    ins_t = [torch.tensor(a, requires_grad=True) for a in (x, h0, h0 * 0.5)]
    ins_e = [ember.tensor(a, requires_grad=True) for a in (x, h0, h0 * 0.5)]
    ot, (ht, ct) = tm(ins_t[0], tuple(ins_t[1:]))
    oe, (he, ce) = em(ins_e[0], tuple(ins_e[1:]))
    (ot.sin().sum() + ht.sum() + (ct * ct).sum()).backward()
    (oe.sin().sum() + he.sum() + (ce * ce).sum()).backward()
    for a, b in zip((ot, ht, ct), (oe, he, ce)):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=tol, atol=tol)
    for a, b in list(zip(ins_t, ins_e)) + list(zip(tm.parameters(), em.parameters())):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=10 * tol, atol=10 * tol)


def test_lstm_double_backward_matches_torch(torch):
    tm, em = _pair(torch, "float64")
    x = np.random.default_rng(2).standard_normal((3, 2, 5))
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad(tm(xt)[0].pow(2).sum(), xt, create_graph=True)
    (ge,) = ember.autograd.grad(em(xe)[0].pow(2).sum(), xe, create_graph=True)
    np.testing.assert_allclose(ge.detach().numpy(), gt.detach().numpy(), rtol=1e-10, atol=1e-12)
    gt.sum().backward()
    ge.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
    for p, q in zip(tm.parameters(), em.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("inp", [4, 70])
def test_lstm_layer_fused_backward_equals_composite(inp):
    r = np.random.default_rng(3)
    args = [ember.tensor(r.standard_normal(s), requires_grad=True)
            for s in ((5, 2, inp), (2, 3), (2, 3), (12, inp), (12, 3), (12,))]
    for rev in (False, True):
        out = lstm_layer(*args, reverse=rev)
        ref = _composite_forward(*args, rev)
        w = [ember.tensor(r.standard_normal(tuple(o.shape))) for o in out]
        fused = ember.autograd.grad(out, args, w, retain_graph=True)                     # grad mode off: the NumPy kernel
        comp = ember.autograd.grad(out, args, w, create_graph=True)     # the rules in ember ops
        direct = ember.autograd.grad(ref, args, w)                      # autograd through the composite
        for a, b, c in zip(fused, comp, direct):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


def test_lstm_layer_rejects_bad_shapes():
    with pytest.raises(RuntimeError, match="lstm_layer: shapes do not fit"):
        lstm_layer(ember.zeros(3, 2, 5), ember.zeros(2, 3), ember.zeros(2, 3), ember.zeros(8, 5), ember.zeros(8, 3))
    with pytest.raises(RuntimeError, match="T > 0"):
        lstm_layer(ember.zeros(0, 2, 5), ember.zeros(2, 2), ember.zeros(2, 2), ember.zeros(8, 5), ember.zeros(8, 2))


def test_lstm_vmap_over_sequences_matches_loop():
    em = ember.nn.LSTM(3, 4)
    xs = ember.randn(5, 6, 2, 3)
    got = ember.func.vmap(lambda x: em(x)[0])(xs)
    want = ember.stack([em(x)[0] for x in xs])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_fused_backward(torch, approximate, dtype):
    r = np.random.default_rng(4)
    x = (r.standard_normal((6, 7)) * 3).astype(dtype)
    g = r.standard_normal((6, 7)).astype(dtype)
    xe = ember.tensor(x, requires_grad=True)
    ember.nn.functional.gelu(xe, approximate=approximate).backward(ember.tensor(g))
    xc = ember.tensor(x, requires_grad=True)
    (gc,) = ember.autograd.grad(ember.nn.functional.gelu(xc, approximate=approximate), xc, ember.tensor(g),
                                create_graph=True)
    # the same formulas (the fused one reads cdf(x) from the forward's output: an ulp or two apart)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(xe.grad.numpy(), gc.detach().numpy(), rtol=8 * eps, atol=8 * eps)
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.gelu(xt, approximate=approximate).backward(torch.tensor(g))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("inp", [5, 70])
def test_lstm_layer_backward_with_kept_buffers_equals_recomputed(inp):
    """The node keeps the forward's buffers (no second run of the recurrence); the gradients are those
    of the recomputing kernel, and an output changed in place afterwards makes the backward run the
    forward again instead of reading the changed buffer."""
    from ember.ops.rnn import lstm_layer_bwd_op, _proj_vjp
    r = np.random.default_rng(4)
    for rev in (False, True):
        args = [ember.tensor(r.standard_normal(s), requires_grad=True)
                for s in ((6, 3, inp), (3, 4), (3, 4), (16, inp), (16, 4), (16,))]
        out, hn, cn = lstm_layer(*args, reverse=rev)
        assert np.shares_memory(out.grad_fn._kept[0], out.detach().numpy())
        w = [ember.tensor(r.standard_normal(tuple(o.shape))) for o in (out, hn, cn)]
        with ember.no_grad():
            gxw, gh0, gc0, gw_hh, gb = lstm_layer_bwd_op(*w, *[a.detach() for a in args], reverse=rev)
            want = (*_proj_vjp(gxw, args[0].detach(), args[3].detach()), gh0, gc0, gw_hh, gb)
            want = (want[0], want[2], want[3], want[1], want[4], want[5])  # (x, h0, c0, w_ih, w_hh, b)
        got = ember.autograd.grad((out, hn, cn), args, w, retain_graph=True)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        with ember.no_grad():
            out.mul_(2.0)   # (PyTorch allows this: the LSTM's backward does not read its output)
        again = ember.autograd.grad((out, hn, cn), args, w)
        for a, b in zip(again, want):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_fused_backward_edges_and_changed_output(torch, dtype):
    """cdf from the kept output y / x: zero, subnormal, huge, infinite and NaN inputs take erf; an
    output changed in place is not read (PyTorch's GELU backward does not read its output either)."""
    tiny = np.finfo(dtype).tiny
    x = np.array([0.0, -0.0, tiny / 8, -tiny / 8, tiny, 3 * tiny, 1e-20, -1e-20, 0.5, -0.5, 3.0, -3.0, -7.0, -12.0,
                  -30.0, 30.0, 1e30, -1e30, np.inf, -np.inf, np.nan], dtype=dtype)
    g = np.linspace(0.5, 1.5, x.size).astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.gelu(xt).backward(torch.tensor(g))
    for change in (False, True):
        xe = ember.tensor(x, requires_grad=True)
        y = ember.nn.functional.gelu(xe)
        if change:
            with ember.no_grad():
                y.mul_(3.0)
        y.backward(ember.tensor(g))
        tol = 1e-6 if dtype == "float32" else 1e-13
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_backward_from_kept_forward_buffers(torch, reduction):
    """The node keeps the forward's exp(x - max) and row sums and the fused backward overwrites them
    (no second exp pass): a second backward (retain_graph) runs the exp again and agrees."""
    r = np.random.default_rng(5)
    x = (r.standard_normal((7, 11)) * 4).astype(np.float32)
    t = r.integers(0, 11, 7)
    xe = ember.tensor(x, requires_grad=True)
    loss = ember.nn.functional.cross_entropy(xe, ember.tensor(t), reduction=reduction)
    assert loss.grad_fn._kept[0].shape == (7, 11)
    w = ember.ones(loss.shape) if reduction == "none" else None
    (g1,) = ember.autograd.grad(loss, xe, w, retain_graph=True)
    assert "_kept" not in loss.grad_fn.__dict__   # used once
    (g2,) = ember.autograd.grad(loss, xe, w)
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    xt = torch.tensor(x, requires_grad=True)
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), reduction=reduction)
    np.testing.assert_allclose(loss.detach().numpy(), lt.detach().numpy(), rtol=1e-6, atol=1e-6)
    (gt,) = torch.autograd.grad(lt, xt, None if w is None else torch.ones(lt.shape))
    np.testing.assert_allclose(g1.numpy(), gt.numpy(), rtol=1e-6, atol=1e-7)


def test_gelu_float32_table_within_ulps_of_exact(torch):
    """float32 GELU from the table of Phi's Taylor coefficients: within 2.5 ulps of the float64 value
    x * Phi(x) above -3 and 5 ulps above -6 wherever |gelu| is a normal number (the erf formula's
    cancellation is gone from the left tail), PyTorch's values to their own rounding, any shape and
    stride, the edges."""
    from scipy.special import ndtr
    x = np.concatenate([np.linspace(-16, 16, 200001), np.random.default_rng(6).standard_normal(5000) * 4])
    x = x.astype(np.float32)
    got = ember.nn.functional.gelu(ember.tensor(x)).numpy()
    assert got.dtype == np.float32
    xd = x.astype(np.float64)
    exact = xd * ndtr(xd)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    m = (xd > -6) & (np.abs(exact) > np.finfo(np.float32).tiny)
    err = np.abs(got - exact) / ulp
    assert err[m & (xd > -3)].max() <= 2.5 and err[m].max() <= 5
    assert np.abs(got - exact).max() < 5e-7
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-6)
    y = np.random.default_rng(7).standard_normal((3, 50, 41)).astype(np.float32)[:, ::2, 1:]
    np.testing.assert_allclose(ember.nn.functional.gelu(ember.tensor(y)).numpy(),
                               torch.nn.functional.gelu(torch.from_numpy(y)).numpy(), rtol=1e-6, atol=2e-6)
    e = np.array([0.0, -0.0, 1e-40, -1e-40, -14.4, -14.6, -40.0, 14.6, 40.0, np.nan, -np.inf], np.float32)
    ge = ember.nn.functional.gelu(ember.tensor(e)).numpy()
    np.testing.assert_array_equal(np.signbit(ge[:2]), [False, True])
    np.testing.assert_allclose(ge[:9], (e[:9].astype(np.float64) * ndtr(e[:9].astype(np.float64))).astype(np.float32),
                               rtol=1e-6, atol=0)
    assert np.isnan(ge[9]) and np.isnan(ge[10])   # (-inf * Phi(-inf) = -inf * 0, as the erf formula gives)
    assert ember.nn.functional.gelu(ember.tensor(np.float32(1.5))).shape == ()


def test_relu_backward_is_threshold_backward(torch):
    """ReLU's gradient is where(out <= 0, 0, g) as PyTorch's threshold_backward: a NaN input passes its
    gradient, a NaN or infinite gradient is 0 where the output is 0 (g * mask made those NaN);
    forward mode and vmap(grad) through the same rule."""
    x = [-1.0, 0.0, 2.0, float("nan"), -3.0]
    g = [float("nan"), float("inf"), 3.0, 4.0, float("-inf")]
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    torch.relu(xt).backward(torch.tensor(g))
    ember.relu(xe).backward(ember.tensor(g))
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())
    xs = np.random.default_rng(8).standard_normal((4, 5))
    got = ember.func.vmap(ember.func.grad(lambda v: ember.relu(v).pow(2).sum()))(ember.tensor(xs))
    np.testing.assert_allclose(got.numpy(), 2 * np.maximum(xs, 0))
    _, tan = ember.func.jvp(ember.relu, (ember.tensor(xs),), (ember.ones(4, 5),))
    np.testing.assert_array_equal(tan.numpy(), (xs > 0).astype(float))
