"""ember.autograd.functional against torch.autograd.functional: values, output structure,
create_graph and strict-mode errors."""
import importlib.util

import numpy as np
import pytest

import ember
from ember.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp


def _has(mod):
    try:
        return importlib.util.find_spec(mod) is not None
    except ModuleNotFoundError:
        return False


HAS_FUNC = _has("ember.func")
HAS_FWD = _has("ember.autograd.forward_ad")


def _np(x):
    return x.detach().numpy()


def assert_same(e, t):
    """Same nesting (tensor / tuple) and the same values."""
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t), (type(e), e)
        for a, b in zip(e, t):
            assert_same(a, b)
        return
    assert isinstance(e, ember.Tensor), type(e)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def both(torch, *arrays):
    return (tuple(ember.from_numpy(a.copy()) for a in arrays),
            tuple(torch.from_numpy(a.copy()) for a in arrays))


# functions written once for both libraries (only methods and operators)
def f_scalar(x):
    return (x ** 2).sum()


def f_vec(x):
    return x.sin() * x[0]


def f_two_in(x, y):
    return (x * y.sum()).exp()


def f_two_out(x):
    return x.tanh(), (x ** 3).sum()


def f_two_in_out(x, y):
    return x * y.sum(), (x ** 2).sum() + y


def f_scalar_two_in(x, y):
    return (x.sin() * y.cos()).sum() + (x ** 2 * y).sum()


RNG = np.random.default_rng(0)
X3 = RNG.standard_normal(3)
Y3 = RNG.standard_normal(3)
M23 = RNG.standard_normal((2, 3))


JAC_CASES = [
    ("scalar", f_scalar, (M23,), False),
    ("vec", f_vec, (X3,), False),
    ("two_in", f_two_in, (X3, Y3), True),
    ("two_out", f_two_out, (M23,), False),
    ("two_in_out", f_two_in_out, (X3, Y3), True),
]


@pytest.mark.parametrize("name,fn,arrays,tupled", JAC_CASES, ids=[c[0] for c in JAC_CASES])
def test_jacobian_matches_torch(torch, name, fn, arrays, tupled):
    e_in, t_in = both(torch, *arrays)
    if not tupled:
        e_in, t_in = e_in[0], t_in[0]
    assert_same(jacobian(fn, e_in), torch.autograd.functional.jacobian(fn, t_in))


@pytest.mark.parametrize("create_graph", [False, True])
def test_hessian_matches_torch(torch, create_graph):
    (ex, ey), (tx, ty) = both(torch, X3, Y3)
    assert_same(hessian(f_scalar_two_in, (ex, ey), create_graph=create_graph),
                torch.autograd.functional.hessian(f_scalar_two_in, (tx, ty)))
    assert_same(hessian(lambda x: (x.sin() * x).sum(), ex),
                torch.autograd.functional.hessian(lambda x: (x.sin() * x).sum(), tx))


def test_products_match_torch(torch):
    (ex, ey, ev), (tx, ty, tv) = both(torch, X3, Y3, RNG.standard_normal(3))
    F = torch.autograd.functional
    assert_same(vjp(f_vec, ex, ev), F.vjp(f_vec, tx, tv))
    assert_same(vjp(f_two_in, (ex, ey), ev), F.vjp(f_two_in, (tx, ty), tv))
    assert_same(jvp(f_vec, ex, ev), F.jvp(f_vec, tx, tv))
    assert_same(jvp(f_two_out, ex, ev), F.jvp(f_two_out, tx, tv))
    assert_same(jvp(f_two_in_out, (ex, ey), (ev, ex)), F.jvp(f_two_in_out, (tx, ty), (tv, tx)))
    assert_same(hvp(f_scalar_two_in, (ex, ey), (ev, ey)), F.hvp(f_scalar_two_in, (tx, ty), (tv, ty)))
    assert_same(vhp(f_scalar_two_in, (ex, ey), (ev, ey)), F.vhp(f_scalar_two_in, (tx, ty), (tv, ty)))
    assert_same(hvp(f_scalar, ex, ev), F.hvp(f_scalar, tx, tv))
    # v may be omitted for a single-element output (vjp) or input (jvp)
    s_e, s_t = both(torch, np.array([0.7]))
    assert_same(vjp(f_scalar, ex), F.vjp(f_scalar, tx))
    assert_same(jvp(lambda t: t.exp() * 2, s_e[0]), F.jvp(lambda t: t.exp() * 2, s_t[0]))


def test_results_detached_without_create_graph():
    x = ember.randn(3, requires_grad=True)
    j = jacobian(lambda t: t.sin(), x)
    assert not j.requires_grad
    out, g = vjp(lambda t: t.sin().sum(), x)
    assert not out.requires_grad and not g.requires_grad


def test_create_graph_is_differentiable():
    xg = ember.randn(3, dtype=ember.float64, requires_grad=True)
    jj = jacobian(lambda t: (t ** 3).sum(), xg, create_graph=True)
    assert jj.requires_grad
    jj.sum().backward()
    np.testing.assert_allclose(_np(xg.grad), 6 * _np(xg))
    xg.grad = None
    _, hv = hvp(lambda t: (t ** 4).sum(), xg, ember.ones(3, dtype=ember.float64), create_graph=True)
    hv.sum().backward()
    np.testing.assert_allclose(_np(xg.grad), 24 * _np(xg))


def test_independent_input_gives_zeros_when_not_strict():
    x, y = ember.randn(3), ember.randn(2)
    jx, jy = jacobian(lambda a, b: a * 2, (x, y))
    assert tuple(jy.shape) == (3, 2) and not _np(jy).any()
    _, (gx, gy) = vjp(lambda a, b: (a * 2).sum(), (x, y))
    assert tuple(gy.shape) == (2,) and not _np(gy).any()


# ----------------------------------------------------------------------------- strict mode
# Messages name the function, the index and what is independent of what.

_OF = "of the user-provided function"


def test_strict_output_independent_of_every_input():
    with pytest.raises(RuntimeError, match=f"jacobian: output 0 {_OF} does not require grad"):
        jacobian(lambda t: ember.ones(2), ember.randn(2), strict=True)
    with pytest.raises(RuntimeError, match=f"vjp: output 0 {_OF} does not require grad"):
        vjp(lambda t: ember.ones(2), ember.randn(2), ember.ones(2), strict=True)


def test_strict_output_independent_of_one_input():
    x, y = ember.randn(3), ember.randn(2)
    with pytest.raises(RuntimeError, match=f"jacobian: output 0 {_OF} is independent of input 1"):
        jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match=f"vjp: the output {_OF} is independent of input 1"):
        vjp(lambda a, b: (a * 2).sum(), (x, y), strict=True)


def test_strict_hessian_of_linear_function():
    x, v = ember.randn(3), ember.ones(3)
    for name, call in [("hessian", lambda f: hessian(f, x, strict=True)),
                       ("vhp", lambda f: vhp(f, x, v, strict=True)),
                       ("hvp", lambda f: hvp(f, x, v, strict=True))]:
        with pytest.raises(RuntimeError, match=f"{name}: the gradient with respect to input 0 does not "
                                               f"depend on the inputs"):
            call(lambda t: (t * 3).sum())


def test_strict_jvp_independent_input():
    x, y = ember.randn(3), ember.randn(3)
    with pytest.raises(RuntimeError, match=f"jvp: the output {_OF} is independent of input 1"):
        jvp(lambda a, b: a * 2, (x, y), (x, y), strict=True)


def test_strict_create_graph_needs_a_differentiable_result(torch):
    """strict=True with create_graph=True: a result that is constant in the inputs is an error, as in
    PyTorch; without strict it is returned."""
    F = torch.autograd.functional
    x, v = X3, RNG.standard_normal(3)
    cases = [("vjp", vjp, F.vjp, lambda t: t * 3, "the result for input 0"),
             ("jvp", jvp, F.jvp, lambda t: t * 3, f"the result for output 0 {_OF}"),
             ("vhp", vhp, F.vhp, lambda t: (t * t).sum(), "the result for input 0"),
             ("hvp", hvp, F.hvp, lambda t: (t * t).sum(), "the result for input 0")]
    for name, ours, theirs, f, what in cases:
        (ex, ev), (tx, tv) = both(torch, x, v)
        with pytest.raises(RuntimeError, match=f"{name}: {what} does not depend on the inputs"):
            ours(f, ex, ev, create_graph=True, strict=True)
        with pytest.raises(RuntimeError):
            theirs(f, tx, tv, create_graph=True, strict=True)
        assert_same(ours(f, ex, ev, create_graph=True), theirs(f, tx, tv, create_graph=True))
    with pytest.raises(RuntimeError, match=f"jacobian: the derivative of output 0 {_OF} with respect to "
                                           f"input 0 does not depend on the inputs"):
        jacobian(lambda t: t * 3, ember.randn(3), create_graph=True, strict=True)


def test_strict_matches_torch_on_valid_input(torch):
    (ex, ey), (tx, ty) = both(torch, X3, Y3)
    assert_same(jacobian(f_two_in_out, (ex, ey), strict=True),
                torch.autograd.functional.jacobian(f_two_in_out, (tx, ty), strict=True))


# ----------------------------------------------------------------------------- argument errors


def test_argument_errors():
    x = ember.randn(3)
    with pytest.raises(TypeError, match="jacobian: the inputs must be either a Tensor or a tuple of "):
        jacobian(lambda t: t, [1.0, 2.0])
    with pytest.raises(TypeError, match="vjp: the inputs .* the value at index 1 has type float"):
        vjp(lambda a, b: a, (x, 2.0))
    with pytest.raises(RuntimeError, match="vjp: v can only be None when .* single output with a single "):
        vjp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match="jvp: v can only be None when .* single input with a single "):
        jvp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match=r"vjp: v\[0\] has shape \(2,\) but output 0 .* has shape \(3,\)"):
        vjp(lambda t: t * 2, x, ember.ones(2))
    with pytest.raises(RuntimeError, match="jvp: v has 1 Tensors but the user-provided function has 2 "):
        jvp(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(RuntimeError, match="hessian: the user-provided function should return a single "):
        hessian(lambda t: (t.sum(), t.sum()), x)
    with pytest.raises(RuntimeError, match="hvp: .* should contain a single element, got shape"):
        hvp(lambda t: t * 2, x, x)
    with pytest.raises(ValueError, match="forward-mode"):
        jacobian(lambda t: t, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        jacobian(lambda t: t, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        jacobian(lambda t: t, x, strategy="forward-mode", create_graph=True, vectorize=True)
    with pytest.raises(RuntimeError, match="strict=True"):
        jacobian(lambda t: t, x, vectorize=True, strict=True)


# ----------------------------------------------------------------------------- vectorized paths


@pytest.mark.skipif(not HAS_FUNC, reason="needs ember.func.vmap")
@pytest.mark.parametrize("name,fn,arrays,tupled", JAC_CASES, ids=[c[0] for c in JAC_CASES])
def test_vectorized_jacobian_matches_loop(name, fn, arrays, tupled):
    ins = tuple(ember.from_numpy(a.copy()) for a in arrays)
    if not tupled:
        ins = ins[0]
    assert_same_ember(jacobian(fn, ins, vectorize=True), jacobian(fn, ins))
    assert_same_ember(hessian(f_scalar_two_in, (ins if tupled else (ins, ins)), vectorize=True),
                      hessian(f_scalar_two_in, (ins if tupled else (ins, ins))))


@pytest.mark.skipif(not (HAS_FUNC and HAS_FWD), reason="needs ember.func.vmap and forward_ad")
@pytest.mark.parametrize("name,fn,arrays,tupled", JAC_CASES, ids=[c[0] for c in JAC_CASES])
def test_forward_mode_jacobian_matches_loop(name, fn, arrays, tupled):
    ins = tuple(ember.from_numpy(a.copy()) for a in arrays)
    if not tupled:
        ins = ins[0]
    assert_same_ember(jacobian(fn, ins, vectorize=True, strategy="forward-mode"), jacobian(fn, ins))


@pytest.mark.skipif(not (HAS_FUNC and HAS_FWD), reason="needs ember.func.vmap and forward_ad")
def test_forward_over_reverse_hessian():
    x = ember.from_numpy(X3.copy())
    assert_same_ember(hessian(lambda t: (t.sin() * t).sum(), x, vectorize=True,
                              outer_jacobian_strategy="forward-mode"),
                      hessian(lambda t: (t.sin() * t).sum(), x))


def assert_same_ember(a, b):
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b)
        for p, q in zip(a, b):
            assert_same_ember(p, q)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not HAS_FUNC, reason="needs ember.func.vmap")
def test_vectorized_jacobian_with_unused_input():
    x, y = ember.randn(3, dtype=ember.float64), ember.randn(2, dtype=ember.float64)
    assert_same_ember(jacobian(lambda a, b: (a * 2, b.sum()), (x, y), vectorize=True),
                      jacobian(lambda a, b: (a * 2, b.sum()), (x, y)))
