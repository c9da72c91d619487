"""torch.special against PyTorch: every function's values (float64 and float32, edge cases),
gradients where PyTorch has them, PyTorch's errors where it has none."""
import math

import numpy as np
import pytest

import ember

EDGES = np.array([-np.inf, -3.0, -2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 1e-30, 0.25, 0.5, 1.0, 2.0,
                  7.5, 30.0, np.inf, np.nan])

UNARY = ["erf", "erfc", "erfcx", "erfinv", "expit", "exp2", "expm1", "log1p", "gammaln", "digamma",
         "psi", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "sinc", "entr", "bessel_j0",
         "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai", "logit"]
POLY = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
        "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
        "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


def _close(e, t, rtol, atol=0.0):
    assert str(e.dtype).replace("ember.", "") == str(t.dtype).replace("torch.", "")
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


def test_every_torch_special_function_exists(torch):
    names = [n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))
             and n not in ("Tensor",)]
    missing = [n for n in names if not hasattr(ember.special, n)]
    assert not missing, missing


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_unary_values_match_torch(name, dtype, torch):
    rng = np.random.default_rng(0)
    x = np.concatenate([EDGES, rng.uniform(-5, 5, 40), rng.uniform(0, 1, 10)]).astype(dtype)
    e = getattr(ember.special, name)(ember.tensor(x))
    t = getattr(torch.special, name)(torch.tensor(x))
    # PyTorch's own kernels (float32 in float32; airy_ai) are a few ulps off SciPy's
    # (SciPy's values agree with mpmath; PyTorch's float64 Bessel/Airy kernels are off by up to
    #  1e-7 relative, 1e-8 absolute, its ndtr by 1e-10)
    rtol, atol = (1e-12, 1e-30) if dtype == "float64" else (2e-5, 1e-6)
    if "bessel" in name or name == "airy_ai":
        rtol, atol = max(rtol, 1e-6), max(atol, 1e-6)
    elif name == "ndtr":
        rtol = max(rtol, 1e-9)
    _close(e, t, rtol, atol)


def test_integer_inputs_promote(torch):
    x = np.array([1, 2, 5])
    for name in ("gammaln", "erfc", "i0", "ndtr", "bessel_j0", "sinc"):
        _close(getattr(ember.special, name)(ember.tensor(x)), getattr(torch.special, name)(torch.tensor(x)), 1e-6)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc", "xlogy", "xlog1py", "zeta"])
def test_binary_values_match_torch(name, torch):
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(0.1, 6, 30), [0.0, 1.0, 2.0, np.inf, np.nan, -1.0, 0.0]])
    b = np.concatenate([rng.uniform(0.1, 6, 30), [1.0, 0.0, np.inf, 2.0, 1.0, 2.0, -1.0]])
    for dt in ("float64", "float32"):
        e = getattr(ember.special, name)(ember.tensor(a.astype(dt)), ember.tensor(b.astype(dt)))
        t = getattr(torch.special, name)(torch.tensor(a.astype(dt)), torch.tensor(b.astype(dt)))
        _close(e, t, 1e-10 if dt == "float64" else 2e-5, 1e-12 if dt == "float64" else 1e-6)


@pytest.mark.parametrize("name", POLY)
def test_polynomials_match_torch(name, torch):
    rng = np.random.default_rng(2)
    x = rng.uniform(-1.5, 1.5, (4, 6))
    n = np.array([-1, 0, 1, 2, 5, 9])
    e = getattr(ember.special, name)(ember.tensor(x), ember.tensor(n))
    t = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n))
    _close(e, t, 1e-9, 1e-9)
    e = getattr(ember.special, name)(ember.tensor(x), 3)
    t = getattr(torch.special, name)(torch.tensor(x), 3)
    _close(e, t, 1e-9, 1e-9)
    assert not getattr(ember.special, name)(ember.tensor(x, requires_grad=True), 2).requires_grad


GRAD_FNS = {
    "erfc": (lambda m, x: m.special.erfc(x), (-2, 2)),
    "erfcx": (lambda m, x: m.special.erfcx(x), (-2, 3)),
    "gammaln": (lambda m, x: m.special.gammaln(x), (0.2, 4)),
    "digamma": (lambda m, x: m.special.digamma(x), (0.2, 4)),
    "polygamma2": (lambda m, x: m.special.polygamma(2, x), (0.3, 4)),
    "multigammaln": (lambda m, x: m.special.multigammaln(x, 3), (1.1, 4)),
    "i0": (lambda m, x: m.special.i0(x), (-3, 3)),
    "i0e": (lambda m, x: m.special.i0e(x), (0.1, 3)),
    "i1": (lambda m, x: m.special.i1(x), (-3, 3)),
    "i1e": (lambda m, x: m.special.i1e(x), (-3, -0.1)),
    "ndtr": (lambda m, x: m.special.ndtr(x), (-3, 3)),
    "ndtri": (lambda m, x: m.special.ndtri(x), (0.05, 0.95)),
    "log_ndtr": (lambda m, x: m.special.log_ndtr(x), (-6, 3)),
    "sinc": (lambda m, x: m.special.sinc(x), (-2, 2)),
    "entr": (lambda m, x: m.special.entr(x), (0.1, 3)),
}


@pytest.mark.parametrize("name", sorted(GRAD_FNS))
def test_gradients_match_torch_and_gradcheck(name, torch):
    fn, (lo, hi) = GRAD_FNS[name]
    x = np.random.default_rng(3).uniform(lo, hi, 7)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    fn(ember, ex).sum().backward()
    fn(torch, tx).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert ember.autograd.gradcheck(lambda v: fn(ember, v), (ember.tensor(x, requires_grad=True),))
    assert ember.autograd.gradgradcheck(lambda v: fn(ember, v), (ember.tensor(x, requires_grad=True),))


def test_gradients_at_the_special_points(torch):
    x = np.array([0.0, 1.0, -0.5])
    for name in ("sinc", "i1", "i1e"):
        ex = ember.tensor(x, requires_grad=True)
        tx = torch.tensor(x, requires_grad=True)
        getattr(ember.special, name)(ex).sum().backward()
        getattr(torch.special, name)(tx).sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12, err_msg=name)


def test_second_argument_gradients(torch):
    rng = np.random.default_rng(4)
    a, x = rng.uniform(0.5, 3, 5), rng.uniform(0.5, 3, 5)
    for name in ("gammainc", "gammaincc", "zeta", "xlog1py", "xlogy"):
        aa = a + 1.0 if name == "zeta" else a
        ex = ember.tensor(x, requires_grad=True)
        tx = torch.tensor(x, requires_grad=True)
        getattr(ember.special, name)(ember.tensor(aa), ex).sum().backward()
        getattr(torch.special, name)(torch.tensor(aa), tx).sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9, err_msg=name)
        assert ember.autograd.gradcheck(lambda v: getattr(ember.special, name)(ember.tensor(aa), v),
                                        (ember.tensor(x, requires_grad=True),))


@pytest.mark.parametrize("name,what", [("gammainc", "igamma: input"), ("gammaincc", "igammac: input"),
                                       ("zeta", "zeta")])
def test_first_argument_derivatives_not_implemented(name, what, torch):
    e = ember.tensor([1.5, 2.5], dtype=ember.float64, requires_grad=True)
    y = getattr(ember.special, name)(e, ember.tensor([0.5, 1.0], dtype=ember.float64))
    with pytest.raises(NotImplementedError, match=f"the derivative for '{what}' is not implemented"):
        y.sum().backward()
    t = torch.tensor([1.5, 2.5], dtype=torch.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="not implemented"):
        getattr(torch.special, name)(t, torch.tensor([0.5, 1.0], dtype=torch.float64)).sum().backward()


def test_torch_namespace_aliases_and_methods(torch):
    x = np.array([0.3, 1.7, 2.5])
    for name in ("lgamma", "digamma", "erfc", "i0", "sinc"):
        _close(getattr(ember, name)(ember.tensor(x)), getattr(torch, name)(torch.tensor(x)), 1e-12)
        _close(getattr(ember.tensor(x), name)(), getattr(torch.tensor(x), name)(), 1e-12)
        e, t = ember.tensor(x), torch.tensor(x)
        getattr(e, name + "_")()
        getattr(t, name + "_")()
        _close(e, t, 1e-12)
    # (PyTorch's polygamma is 1e-10 off mpmath near 0.3; SciPy's agrees with it)
    _close(ember.polygamma(1, ember.tensor(x)), torch.polygamma(1, torch.tensor(x)), 1e-9)
    _close(ember.tensor(x).polygamma(2), torch.tensor(x).polygamma(2), 1e-9)
    _close(ember.mvlgamma(ember.tensor(x + 1), 2), torch.mvlgamma(torch.tensor(x + 1), 2), 1e-12)
    _close(ember.tensor(x + 1).mvlgamma(2), torch.tensor(x + 1).mvlgamma(2), 1e-12)
    _close(ember.igamma(ember.tensor(x), ember.tensor(x)), torch.igamma(torch.tensor(x), torch.tensor(x)), 1e-12)
    _close(ember.igammac(ember.tensor(x), ember.tensor(x)), torch.igammac(torch.tensor(x), torch.tensor(x)), 1e-12)


def test_reductions_and_round(torch):
    x = np.random.default_rng(5).standard_normal((3, 4))
    for name, kw in (("softmax", dict(dim=1)), ("log_softmax", dict(dim=0)), ("logsumexp", dict(dim=1))):
        _close(getattr(ember.special, name)(ember.tensor(x), **kw), getattr(torch.special, name)(torch.tensor(x), **kw),
               1e-12)
    _close(ember.special.softmax(ember.tensor(x), 1, dtype=ember.float32),
           torch.special.softmax(torch.tensor(x), 1, dtype=torch.float32), 1e-6)
    _close(ember.special.round(ember.tensor(x), decimals=2), torch.special.round(torch.tensor(x), decimals=2), 1e-12)
    _close(ember.special.logit(ember.tensor(x).sigmoid(), eps=0.2), torch.special.logit(torch.tensor(x).sigmoid(), eps=0.2),
           1e-12)


def test_errors_match_torch(torch):
    with pytest.raises(RuntimeError, match="does not support negative n"):
        ember.polygamma(-1, ember.tensor([1.0]))
    with pytest.raises(RuntimeError):
        torch.polygamma(-1, torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        ember.mvlgamma(ember.tensor([1.4]), 0)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        torch.mvlgamma(torch.tensor([1.4]), 0)
    with pytest.raises(RuntimeError, match="size of tensor a"):
        ember.special.zeta(ember.tensor([2.0, 3.0]), ember.tensor([1.0, 2.0, 3.0]))


def test_vmap_and_forward_mode():
    x = ember.tensor(np.linspace(0.5, 3, 6).reshape(2, 3))
    v = ember.vmap(ember.special.gammaln)(x)
    np.testing.assert_allclose(v.numpy(), ember.special.gammaln(x).numpy())
    f = ember.func.jacfwd(lambda t: ember.special.digamma(t).sum())
    np.testing.assert_allclose(f(ember.tensor([1.5, 2.5], dtype=ember.float64)).numpy(),
                               [ember.special.polygamma(1, ember.tensor(1.5, dtype=ember.float64)).item(),
                                ember.special.polygamma(1, ember.tensor(2.5, dtype=ember.float64)).item()])
    g = ember.func.grad(lambda t: ember.special.gammainc(ember.tensor(2.0, dtype=ember.float64), t))
    t0 = 1.3
    assert math.isclose(g(ember.tensor(t0, dtype=ember.float64)).item(),
                        t0 * math.exp(-t0) / math.gamma(2.0), rel_tol=1e-12)


# ----------------------------------------------------------------------------- PyTorch's OpInfos

_ALIASES = {"lgamma", "digamma", "polygamma", "mvlgamma", "erfc", "i0", "sinc", "xlogy", "igamma", "igammac",
            "erf", "erfinv", "logit"}


@pytest.fixture(scope="module")
def special_opinfos():
    pytest.importorskip("torch")
    mod = pytest.importorskip("torch.testing._internal.common_methods_invocations")
    return [op for op in mod.op_db if op.name.startswith("special.") or op.name in _ALIASES]


def _resolve(name):
    obj = ember
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _ember_call(op, args, kwargs):
    conv = [ember.tensor(a.detach().numpy(), requires_grad=a.requires_grad) if hasattr(a, "detach") else a
            for a in args]
    if "polygamma" in op.name:  # the OpInfo's op takes (x, n); the function (n, x)
        conv = [conv[1], conv[0]] + conv[2:]
    return conv, _resolve(op.name)(*conv, **kwargs)


def test_torch_opinfo_samples_values_and_gradients(special_opinfos, torch):
    """Every sample of PyTorch's OpInfos for torch.special (and the torch.* aliases): values in
    float64/float32/int64 and float64 gradients of the sum."""
    assert len(special_opinfos) >= 50
    bad, n = [], 0
    for op in special_opinfos:
        for dtype in (torch.float64, torch.float32, torch.int64):
            if dtype not in op.supported_dtypes("cpu"):
                continue
            grad = dtype == torch.float64 and op.supports_autograd
            for s in op.sample_inputs("cpu", dtype, requires_grad=grad):
                targs = [s.input] + list(s.args)
                try:
                    want = op.op(*targs, **s.kwargs)
                except Exception:
                    continue
                eargs, got = _ember_call(op, targs, s.kwargs)
                n += 1
                # (SciPy's values: PyTorch's float32 kernels and its float64 Bessel ones are less exact)
                tol = 1e-7 if dtype == torch.float64 and "bessel" not in op.name else 2e-5
                if "polygamma" in op.name and dtype == torch.float32:
                    tol = 2e-5 * max(1.0, float(want.abs().max()))
                if (str(got.dtype)[6:] != str(want.dtype)[6:]
                        or not np.allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol,
                                           equal_nan=True)):
                    bad.append((op.name, op.variant_test_name, str(dtype), tuple(want.shape)))
                    continue
                tw = [a for a in targs if hasattr(a, "requires_grad") and a.requires_grad]
                if not grad or not tw:
                    continue
                tg = torch.autograd.grad(want.sum(), tw, allow_unused=True)
                ew = [a for a in eargs if isinstance(a, ember.Tensor) and a.requires_grad]
                eg = ember.autograd.grad(got.sum(), ew, allow_unused=True)
                for a, b in zip(eg, tg):
                    a = np.zeros(1) if a is None else a.numpy()
                    b = np.zeros(1) if b is None else b.numpy()
                    if not np.allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True):
                        bad.append((op.name, op.variant_test_name, "grad"))
    assert n > 400
    assert not bad, bad


def test_binary_functions_refuse_two_numbers_as_torch(torch):
    for name in ("zeta", "xlog1py", "chebyshev_polynomial_t", "hermite_polynomial_h"):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            getattr(ember.special, name)(2, 3)
        with pytest.raises(TypeError):
            getattr(torch.special, name)(2, 3)
    with pytest.raises(TypeError, match="argument 'other' \\(position 2\\) must be Tensor, not float"):
        ember.special.gammainc(ember.tensor([1.0]), 1.5)
    with pytest.raises(TypeError):
        torch.special.gammainc(torch.tensor([1.0]), 1.5)
    assert ember.special.zeta(2.0, ember.tensor([1.0])).shape == (1,)
