"""Forward-mode AD: dual levels, make_dual/unpack_dual, custom Function.jvp, modules with dual
parameters, nesting with reverse mode and vmap."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.autograd.forward_ad as fwAD
from ember.func import vmap, functional_call


def _np(t):
    return t.detach().numpy()


def test_make_dual_is_a_view_and_tangent_identity():
    p, t = ember.randn(3, 4), ember.randn(3, 4)
    with fwAD.dual_level():
        d = fwAD.make_dual(p, t)
        assert d._base is p or d._base is p._base  # a view of the primal
        assert fwAD.unpack_dual(d).tangent is t
        primal, tangent = fwAD.unpack_dual(d)
        assert tangent is t and primal is not d
        np.testing.assert_array_equal(_np(primal), _np(p))
        assert fwAD.unpack_dual(p).tangent is None


def test_tangents_die_with_the_level():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(2), ember.ones(2))
        y = d * 3
        assert fwAD.unpack_dual(y).tangent is not None
    assert fwAD.unpack_dual(y).tangent is None
    assert fwAD.unpack_dual(d).tangent is None
    z = y * 2  # ops after the level are plain
    assert fwAD.unpack_dual(z).tangent is None


def test_make_dual_errors():
    with pytest.raises(RuntimeError, match="no forward AD level"):
        fwAD.make_dual(ember.ones(2), ember.ones(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(ember.ones(2), ember.ones(3))


def test_against_torch_forward_ad(torch):
    x = np.random.randn(4, 5)
    v = np.random.randn(4, 5)

    def f(m, a):
        return (a.sin() * a.exp()).sum(1).softmax(0) @ a

    out = {}
    for lib, fa in ((ember, fwAD), (torch, torch.autograd.forward_ad)):
        with fa.dual_level():
            d = fa.make_dual(lib.tensor(x), lib.tensor(v))
            out[lib.__name__] = fa.unpack_dual(f(lib, d)).tangent.detach().numpy()
    np.testing.assert_allclose(out["ember"], out["torch"], rtol=1e-10, atol=1e-12)


def test_nested_levels_give_second_derivative():
    x = ember.tensor([0.3, -1.2], dtype=ember.float64)
    with fwAD.dual_level() as outer:
        d1 = fwAD.make_dual(x, ember.ones(2, dtype=ember.float64))
        with fwAD.dual_level() as inner:
            d2 = fwAD.make_dual(d1, ember.ones(2, dtype=ember.float64), level=inner)
            y = d2.sin()
            t_inner = fwAD.unpack_dual(y, level=inner).tangent
        second = fwAD.unpack_dual(t_inner, level=outer).tangent
    np.testing.assert_allclose(_np(second), -np.sin(_np(x)), rtol=1e-12)


def test_forward_over_reverse():
    """Tangents flow through a backward pass: a Hessian-vector product."""
    x = ember.randn(5, dtype=ember.float64, requires_grad=True)
    v = ember.randn(5, dtype=ember.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        y = (d ** 3).sum()
        (g,) = ember.autograd.grad(y, d, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(_np(hvp), 6 * _np(x) * _np(v), rtol=1e-12)


class Exp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_forward(y)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    @staticmethod
    def jvp(ctx, t):
        (y,) = ctx._saved_fw
        return t * y


class NoJvp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp():
    x, t = ember.randn(3, dtype=ember.float64), ember.randn(3, dtype=ember.float64)
    with fwAD.dual_level():
        y = Exp.apply(fwAD.make_dual(x, t))
        np.testing.assert_allclose(_np(fwAD.unpack_dual(y).tangent), _np(t * x.exp()), rtol=1e-12)
        with pytest.raises(NotImplementedError, match="jvp"):
            NoJvp.apply(fwAD.make_dual(x, t))


def test_module_with_dual_parameters_and_functional_call():
    model = nn.Linear(3, 2)
    inp = ember.randn(4, 3)
    tangents = {n: ember.randn_like(p) for n, p in model.named_parameters()}
    with fwAD.dual_level():
        duals = {n: fwAD.make_dual(p.detach(), tangents[n]) for n, p in model.named_parameters()}
        jv = fwAD.unpack_dual(functional_call(model, duals, inp)).tangent
    np.testing.assert_allclose(_np(jv), _np(inp @ tangents["weight"].t() + tangents["bias"]), rtol=1e-5,
                               atol=1e-6)


def test_vmap_of_forward_ad():
    """Batched tangents: vmap over a function that opens a dual level."""
    x = ember.randn(4, dtype=ember.float64)
    vs = ember.eye(4, dtype=ember.float64)

    def jvp_row(v):
        with fwAD.dual_level():
            return fwAD.unpack_dual((fwAD.make_dual(x, v) ** 2).sum()).tangent
    np.testing.assert_allclose(_np(vmap(jvp_row)(vs)), 2 * _np(x), rtol=1e-12)


def test_non_differentiable_ops_drop_tangents():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor([1.0, 3.0, 2.0]), ember.ones(3))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 1).tangent is None
        v, i = d.sort()
        assert fwAD.unpack_dual(v).tangent is not None and fwAD.unpack_dual(i).tangent is None


def test_inplace_on_dual():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 1.0]))
        y = d.clone()
        y.mul_(d)
        np.testing.assert_allclose(_np(fwAD.unpack_dual(y).tangent), [2.0, 4.0])


def test_inplace_into_views_updates_the_base_tangent(torch):
    import torch.autograd.forward_ad as tfw
    res = {}
    for lib, fa in ((ember, fwAD), (torch, tfw)):
        x = lib.tensor([1.5, 2.0, 3.0], dtype=lib.float64)
        t = lib.tensor([1.0, 10.0, 100.0], dtype=lib.float64)
        with fa.dual_level():
            d = fa.make_dual(x, t)
            y = d * 2
            y[1:].mul_(d[:2])      # the view has the base's tangent
            z = x * 1
            z[0] = d[2]            # the base had no tangent
            w = d * 1
            w[1:] = 5.0            # a constant write zeroes that part of the tangent
            res[lib.__name__] = [fa.unpack_dual(v).tangent.numpy() for v in (y, z, w)]
    for a, b in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_cumprod_tangent_at_zeros(torch):
    # cumprod's forward-mode rule divided by x: nan at a zero entry
    outs = []
    for m in (ember, torch):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(m.tensor([2.0, 0.0, 3.0, 0.0, 5.0]), m.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
            outs.append(fw.unpack_dual(x.cumprod(0)).tangent.numpy())
    np.testing.assert_allclose(outs[0], outs[1])
