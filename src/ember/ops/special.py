"""Special functions (torch.special and their torch.* aliases): gamma family, error functions,
Bessel functions, the normal distribution's functions, zeta, orthogonal polynomials.

Values come from ``scipy.special`` (computed in float64 or float32 by SciPy's loops, returned in
the input's dtype). Derivatives are PyTorch's formulas written in ember ops, so they compose
(higher order, forward mode, vmap); where PyTorch has no derivative (the first argument of
igamma/igammac/zeta) the backward raises PyTorch's NotImplementedError, and the functions
PyTorch declares non-differentiable (Bessel functions of the first/second kind, Airy, the
orthogonal polynomials) give outputs that do not require grad.
"""
import math

import numpy as np
import scipy.special as _sp

from .._dispatch import defop, dispatch
from . import _util as U
from .elementwise import _unary, _x, _tsum, where, EW

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _real(name, a):
    """PyTorch's special functions have no complex kernels: its error for a complex input."""
    if getattr(a, "dtype", None) is not None and a.dtype.kind == "c":
        U.no_complex(name + "_cpu", a)


def _sc(fn):
    """An array impl from a scipy ufunc: the result in the input's (floating) dtype."""
    def impl(xp, a):
        _real(getattr(fn, "__name__", "special"), a)
        with np.errstate(all="ignore"):  # (inf/nan results are the answers, as PyTorch's, not warnings)
            return np.asarray(fn(a)).astype(a.dtype, copy=False)
    impl.__name__ = getattr(fn, "__name__", "special")
    return impl


def _safe(x):
    """x with its zeros replaced by 1: a denominator whose other branch is chosen at 0 (the
    double-where trick, so that the unused branch's gradient is 0, not nan)."""
    return where(x == 0, 1.0, x)


def _not_implemented(what):
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


# ----------------------------------------------------------------------------- unary, differentiable

erfc_op = _unary("erfc", _sc(_sp.erfc), lambda c: -_TWO_OVER_SQRT_PI * (-(_x(c) ** 2)).exp())
erfcx_op = _unary("special_erfcx", _sc(_sp.erfcx),
                  lambda c: 2.0 * _x(c) * c.out - _TWO_OVER_SQRT_PI, save=("inputs", "out"))
def _lgamma(xp, a):
    _real("lgamma", a)
    r = np.asarray(_sp.gammaln(a))
    if r.ndim:
        r[np.isneginf(a)] = np.inf  # PyTorch's lgamma(-inf) is +inf (SciPy's gammaln gives -inf)
    elif np.isneginf(a):
        r = np.asarray(np.inf)
    return r.astype(a.dtype, copy=False)


lgamma_op = _unary("lgamma", _lgamma, lambda c: digamma(_x(c)))
digamma_op = _unary("digamma", _sc(_sp.psi), lambda c: polygamma(1, _x(c)))


def _polygamma_impl(xp, a, n=0):
    _real("polygamma", a)
    r = _sp.psi(a) if n == 0 else _sp.polygamma(n, a)
    if n == 1:   # trigamma has no limit at -inf (a pole at every negative integer): NaN, as PyTorch (SciPy: inf)
        r = np.where(np.isneginf(a), np.nan, r)
    return np.asarray(r).astype(a.dtype, copy=False)


polygamma_op = _unary("polygamma", _polygamma_impl,
                      lambda c: polygamma(c.params["n"] + 1, _x(c)))
i0_op = _unary("i0", _sc(_sp.i0), lambda c: i1(_x(c)))
i0e_op = _unary("special_i0e", _sc(_sp.i0e), lambda c: i1e(_x(c)) - _x(c).sign() * c.out,
                save=("inputs", "out"))
i1_op = _unary("special_i1", _sc(_sp.i1),
               lambda c: where(_x(c) == 0, 0.5, i0(_x(c)) - c.out / _safe(_x(c))),
               save=("inputs", "out"))
i1e_op = _unary("special_i1e", _sc(_sp.i1e),
                lambda c: where(_x(c) == 0, 0.5,
                                i0e(_x(c)) - c.out * (_x(c).sign() + _safe(_x(c)).reciprocal())),
                save=("inputs", "out"))
ndtr_op = _unary("special_ndtr", _sc(_sp.ndtr), lambda c: (-0.5 * _x(c) ** 2).exp() / _SQRT_2PI)
ndtri_op = _unary("special_ndtri", _sc(_sp.ndtri), lambda c: _SQRT_2PI * (0.5 * c.out ** 2).exp(),
                  save=("out",))
log_ndtr_op = _unary("special_log_ndtr", _sc(_sp.log_ndtr),
                     lambda c: (-0.5 * _x(c) ** 2 - c.out).exp() / _SQRT_2PI, save=("inputs", "out"))


def _sinc_deriv(c):
    x = _x(c)
    xs = _safe(x)
    return where(x == 0, 0.0, ((math.pi * xs).cos() - c.out) / xs)


def _sinc(xp, a):  # (PyTorch's sinc, unlike the other special functions, takes complex input)
    with np.errstate(all="ignore"):
        return np.asarray(np.sinc(a)).astype(a.dtype, copy=False)


sinc_op = _unary("sinc", _sinc, _sinc_deriv, save=("inputs", "out"))
entr_op = _unary("special_entr", _sc(_sp.entr), lambda c: -(1 + _x(c).log()))

# ----------------------------------------------------------------------------- unary, not differentiable
# (PyTorch has no derivative formula for these: their outputs do not require grad)

_NONDIFF_UNARY = {
    "special_bessel_j0": _sp.j0, "special_bessel_j1": _sp.j1,
    "special_bessel_y0": _sp.y0, "special_bessel_y1": _sp.y1,
    "special_modified_bessel_i0": _sp.i0, "special_modified_bessel_i1": _sp.i1,
    "special_modified_bessel_k0": _sp.k0, "special_modified_bessel_k1": _sp.k1,
    "special_scaled_modified_bessel_k0": _sp.k0e, "special_scaled_modified_bessel_k1": _sp.k1e,
    "special_spherical_bessel_j0": lambda a: _sp.spherical_jn(0, a),
    "special_airy_ai": lambda a: _sp.airy(a)[0],
}
_nondiff_ops = {n: _unary(n, _sc(f)) for n, f in _NONDIFF_UNARY.items()}

# ----------------------------------------------------------------------------- binary


_TORCH_INT_NAMES = {"b": "Bool", "u1": "Byte", "i1": "Char", "i2": "Short", "i4": "Int", "i8": "Long"}


def _no_int(name, a, b):
    """PyTorch's igamma/igammac have no integer kernels (it raises NotImplementedError)."""
    r = U.result_dtype(a, b)
    if not r.is_floating_point:
        k = r.np.kind + (str(r.np.itemsize) if r.np.kind != "b" else "")
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_TORCH_INT_NAMES.get(k, k)}\' '
                                  f"({name}: inputs of dtype {r.name}; a floating point dtype is expected)")


def _binary(name, fn, differentiable=True, float_only=False):
    """A broadcasting two-input op computed by ``fn(a, b)`` on arrays promoted to PyTorch's
    floating result type (numbers allowed on either side)."""
    def impl(xp, a, b):
        _real(name, a)
        _real(name, b)
        if float_only:
            _no_int(name, a, b)
        a, b = U.promote(a, b, floating=True)
        ref = a if type(a) is np.ndarray else b
        dtype = ref.dtype if type(ref) is np.ndarray else np.dtype(np.float32)
        if dtype == U.BF16:
            return U.bf16_f32(lambda p, q: np.asarray(fn(p, q)).astype(np.float32), a, b)
        try:
            np.broadcast_shapes(np.shape(a), np.shape(b))
        except ValueError:
            raise U.broadcast_error(name, a, b) from None
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b)).astype(dtype, copy=False)
    return defop(name, impl, save=("inputs",) if differentiable else (), bcast=True, family=EW,
                 differentiable=differentiable)


def _igamma_grad_x(a, x):
    lg = lgamma(a) if U.is_tensor(a) else math.lgamma(a)
    return ((a - 1) * x.log() - x - lg).exp()


igamma_op = _binary("igamma", _sp.gammainc, float_only=True)
igammac_op = _binary("igammac", _sp.gammaincc, float_only=True)


def _igamma_rules(op, sign, label):
    @op.def_vjp
    def _(ctx, g):
        a, x = ctx.inputs
        if ctx.needs[0]:
            _not_implemented(label)
        return None, sign * g * _igamma_grad_x(a, x)

    @op.def_jvp
    def _(ctx, ta, tx):
        if ta is not None:
            _not_implemented(label)
        a, x = ctx.inputs
        return sign * tx * _igamma_grad_x(a, x)


_igamma_rules(igamma_op, 1.0, "igamma: input")
_igamma_rules(igammac_op, -1.0, "igammac: input")

def _zeta(x, q):
    r = np.asarray(_sp.zeta(x, q))
    return np.where(np.isposinf(q), np.nan, r)  # (PyTorch's zeta(x, inf) is nan; SciPy's 0)


zeta_op = _binary("special_zeta", _zeta)


@zeta_op.def_vjp
def _(ctx, g):
    x, q = ctx.inputs
    if ctx.needs[0]:
        _not_implemented("zeta")
    return None, g * -x * zeta(x + 1.0, q)


@zeta_op.def_jvp
def _(ctx, tx, tq):
    if tx is not None:
        _not_implemented("zeta")
    x, q = ctx.inputs
    return tq * -x * zeta(x + 1.0, q)


xlog1py_op = _binary("special_xlog1py", _sp.xlog1py)


def _xlog1py_dx(x, y):
    """d/dx x * log1p(y) = log1p(y) (it is linear in x, at x = 0 too), but 0 where x is 0 and y <= -1 (the
    value there is 0 by definition, log1p(y) -inf or NaN): PyTorch's rule."""
    if U.is_tensor(y):
        return where((x == 0) & (y <= -1), 0.0, y.log1p())
    with np.errstate(all="ignore"):
        ly = float(np.log1p(np.float64(y)))
    return where(x == 0, 0.0, ly) if y <= -1 else ly


@xlog1py_op.def_vjp
def _(ctx, g):
    x, y = ctx.inputs
    n = ctx.needs
    gx = g * _xlog1py_dx(x, y) if n[0] else None
    gy = g * x / (y + 1) if n[1] else None
    return gx, gy


@xlog1py_op.def_jvp
def _(ctx, tx, ty):
    x, y = ctx.inputs
    return _tsum(None if tx is None else tx * _xlog1py_dx(x, y),
                 None if ty is None else ty * x / (y + 1))


# orthogonal polynomials p_n(x): n is truncated to an integer, negative n gives 0 (PyTorch's)

_POLY_MAX_N = 2 ** 31   # SciPy's integer-degree evaluations take O(n) steps: a degree of 1e20 never ends


def _poly(evaluate, shift=False):
    def fn(x, n):
        n = np.trunc(np.asarray(n, np.float64))
        # a degree with no int64 value (NaN, +-inf, |n| >= 2**63) is 0, as PyTorch's CPU kernels give: their
        # int64 conversion of it is negative. (A NaN degree cast to int64 here would be -2**63, a loop of
        # 2**63 steps in SciPy's recurrences.)
        neg = (n < 0) | ~(np.abs(n) < 2.0 ** 63)
        big = ~neg & (n > _POLY_MAX_N)   # NaN, not an endless loop
        ni = np.where(neg | big, 0, n).astype(np.int64)
        xx = 2.0 * np.asarray(x) - 1.0 if shift else x
        r = evaluate(ni, xx)
        return np.where(neg, 0.0, np.where(big, np.nan, r))
    return fn


def _cheb_v(n, x):   # third kind: U_n - U_{n-1}
    return _sp.eval_chebyu(n, x) - np.where(n > 0, _sp.eval_chebyu(np.maximum(n - 1, 0), x), 0.0)


def _cheb_w(n, x):   # fourth kind: U_n + U_{n-1}
    return _sp.eval_chebyu(n, x) + np.where(n > 0, _sp.eval_chebyu(np.maximum(n - 1, 0), x), 0.0)


_POLY = {
    "chebyshev_polynomial_t": _poly(_sp.eval_chebyt), "chebyshev_polynomial_u": _poly(_sp.eval_chebyu),
    "chebyshev_polynomial_v": _poly(_cheb_v), "chebyshev_polynomial_w": _poly(_cheb_w),
    "shifted_chebyshev_polynomial_t": _poly(_sp.eval_chebyt, True),
    "shifted_chebyshev_polynomial_u": _poly(_sp.eval_chebyu, True),
    "shifted_chebyshev_polynomial_v": _poly(_cheb_v, True),
    "shifted_chebyshev_polynomial_w": _poly(_cheb_w, True),
    "hermite_polynomial_h": _poly(_sp.eval_hermite), "hermite_polynomial_he": _poly(_sp.eval_hermitenorm),
    "laguerre_polynomial_l": _poly(_sp.eval_laguerre), "legendre_polynomial_p": _poly(_sp.eval_legendre),
}
_poly_ops = {n: _binary("special_" + n, f, differentiable=False) for n, f in _POLY.items()}

# PyTorch's CPU build has float32/float64 kernels only for these: float16/bfloat16 get its error
for _op in (erfcx_op, ndtri_op, log_ndtr_op, zeta_op, *_nondiff_ops.values(), *_poly_ops.values()):
    U.refuse_lowp(_op, _op.name[len("special_"):] + "_cpu")

# ----------------------------------------------------------------------------- public functions

_out = U.write_out


def _mk1(op, name):
    def f(input, *, out=None):
        r = dispatch(op, (input,))
        return r if out is None else _out(r, out)
    f.__name__ = name
    return f


def _need_tensor(name, input, other, both=False):
    """PyTorch's binary special functions take a number on one side at most (igamma on neither)."""
    ta, tb = U.is_tensor(input), U.is_tensor(other)
    if both and not (ta and tb):
        pos, arg, val = (1, "input", input) if not ta else (2, "other", other)
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(val).__name__}")
    if not (ta or tb):
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"{type(other).__name__}), but expected one of: (Tensor input, Tensor other), "
                        f"(Number self, Tensor other), (Tensor self, Number other)")


def _mk2(op, name, both=False):
    def f(input, other, *, out=None):
        _need_tensor(name, input, other, both)
        r = dispatch(op, (input, other))
        return r if out is None else _out(r, out)
    f.__name__ = name[len("special_"):] if name.startswith("special_") else name
    return f


erfc = _mk1(erfc_op, "erfc")
lgamma = _mk1(lgamma_op, "lgamma")
digamma = _mk1(digamma_op, "digamma")
i0 = _mk1(i0_op, "i0")
sinc = _mk1(sinc_op, "sinc")
igamma = _mk2(igamma_op, "igamma", both=True)
igammac = _mk2(igammac_op, "igammac", both=True)


def polygamma(n, input, *, out=None):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    r = dispatch(polygamma_op, (input,), {"n": int(n)})
    return r if out is None else _out(r, out)


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum_j lgamma(x - j/2) + p(p-1)/4 log(pi)."""
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, but got p={p}")
    from .shape import stack
    x = input
    if x.is_complex():
        raise NotImplementedError(f"mvlgamma: complex input is not supported (PyTorch's CPU build refuses it too), "
                                  f"got {x.dtype}")
    if not x.dtype.is_floating_point:
        x = x.float()
    terms = stack([lgamma(x - j / 2.0) for j in range(p)], dim=-1)
    from .reduce import sum as _sum
    return _sum(terms, dim=-1) + p * (p - 1) / 4.0 * math.log(math.pi)


def xlog1py(input, other, *, out=None):
    _need_tensor("special_xlog1py", input, other)
    r = dispatch(xlog1py_op, (input, other))
    return r if out is None else _out(r, out)


def zeta(input, other, *, out=None):
    _need_tensor("special_zeta", input, other)
    r = dispatch(zeta_op, (input, other))
    return r if out is None else _out(r, out)


erfcx = _mk1(erfcx_op, "erfcx")
i0e = _mk1(i0e_op, "i0e")
i1 = _mk1(i1_op, "i1")
i1e = _mk1(i1e_op, "i1e")
ndtr = _mk1(ndtr_op, "ndtr")
ndtri = _mk1(ndtri_op, "ndtri")
log_ndtr = _mk1(log_ndtr_op, "log_ndtr")
entr = _mk1(entr_op, "entr")

# the torch.special namespace's own functions (not torch.* names): in ember.special
SPECIAL_ONLY = {n[len("special_"):]: _mk1(op, n[len("special_"):]) for n, op in _nondiff_ops.items()}
SPECIAL_ONLY.update({n: _mk2(op, "special_" + n) for n, op in
                     ((k, _poly_ops[k]) for k in _POLY)})
SPECIAL_ONLY.update(erfcx=erfcx, i0e=i0e, i1=i1, i1e=i1e, ndtr=ndtr, ndtri=ndtri, log_ndtr=log_ndtr,
                    entr=entr, xlog1py=xlog1py, zeta=zeta)

__all__ = ["erfc", "lgamma", "digamma", "polygamma", "mvlgamma", "i0", "sinc", "igamma", "igammac"]
