"""Elementwise primitives: arithmetic, unary math, activations, comparisons, where, clamp.

Unary maths declare one rule, ``deriv(ctx) -> f'(x)``, that serves both modes: the vjp is
``g * f'(x)`` and the jvp ``t * f'(x)``.
"""
import inspect
import math
import threading

import numpy as np
import scipy.special as _special
try:  # (the clip ufunc itself: np.clip's wrapper costs several microseconds a call)
    from numpy._core import umath as _umath
except ImportError:  # NumPy 1.x
    from numpy.core import umath as _umath

from .. import _dispatch as D
from .. import _parallel as _P
from .._dispatch import defop, dispatch
from . import _util as U

_nd = np.ndarray
EW = "elementwise"


def _big(a, b):
    """Whether a binary op's result is big enough to split over the intra-op threads: an operand
    is, or their broadcast is (an outer product of two small ones)."""
    m = _P.MIN_SIZE
    sa = a.size if type(a) is _nd else 1
    sb = b.size if type(b) is _nd else 1
    if sa >= m or sb >= m:
        return True
    return sa * sb >= m and math.prod(np.broadcast_shapes(a.shape, b.shape)) >= m  # (both arrays here)


def _same(a, b):
    return type(a) is _nd and type(b) is _nd and a.dtype is b.dtype


def _no_bool(name, a, b):
    if (type(a) is _nd and a.dtype.kind == "b") or (type(b) is _nd and b.dtype.kind == "b"):
        raise RuntimeError(f"{name}: Subtraction, the `-` operator, with a bool tensor is not supported "
                           f"(got {getattr(a, 'dtype', type(a).__name__)} and "
                           f"{getattr(b, 'dtype', type(b).__name__)}). If you are trying to invert a mask, "
                           f"use the `~` or `logical_not()` operator instead.")


def _no_complex_binary(name, a, b):
    for x in (a, b):
        if (type(x) is _nd and x.dtype.kind == "c") or type(x) is complex:
            U.no_complex(name + "_cpu", x if type(x) is _nd else np.asarray(x))


def _binary_impl(uf, name, floating=False, nobool=False, real_only=False):
    # nobool (sub): a bool operand raises; checked only where promotion happens (bool - bool has
    # one dtype and NumPy itself refuses it), so the common float path pays nothing
    mul = name == "mul"  # bfloat16 * number: the number stays float32 (other ops round it to bfloat16)

    def impl(xp, a, b):
        if type(a) is _nd:
            if type(b) is _nd:
                if floating or a.dtype is not b.dtype:
                    if nobool:
                        _no_bool(name, a, b)
                    a, b = U.promote(a, b, floating)
            elif not ((type(b) is float or type(b) is int) and a.dtype.kind == "f"):
                # (a floating array with a Python number keeps its dtype: NumPy's weak scalars
                #  agree with PyTorch there, so no promotion is needed)
                if a.dtype == U.BF16 and mul and type(b) in (float, int, bool):  # PyTorch keeps the
                    return U.bf16_f32(uf, a, b)                                 # number in float32
                if nobool:
                    _no_bool(name, a, b)
                a, b = U.promote(a, b, floating)
        elif not ((type(a) is float or type(a) is int) and type(b) is _nd and b.dtype.kind == "f"):
            if mul and type(b) is _nd and b.dtype == U.BF16 and type(a) in (float, int, bool):
                return U.bf16_f32(uf, a, b)
            if nobool:
                _no_bool(name, a, b)
            if type(b) is not _nd:  # two Python numbers: a 0-dim result of PyTorch's type (float32)
                a = np.asarray(a, U.result_dtype(a, b).np)
            a, b = U.promote(a, b, floating)
        if real_only:
            _no_complex_binary(name, a, b)
        try:
            if type(b) is _nd and type(a) is _nd and a.ndim > 1 and not a.flags.c_contiguous \
                    and a.shape == b.shape and b.flags.c_contiguous:
                return _first_operand_layout(uf, a, b)
            if _big(a, b):
                return _P.ufunc(uf, a, b)  # big: split over the intra-op threads
            return uf(a, b)
        except ValueError:
            raise U.broadcast_error(name, a, b) from None
        except OverflowError:  # a Python int outside the array's dtype: PyTorch wraps it around
            a, b = U.wrap_int_scalars(a, b)
            return uf(a, b)
        except TypeError as e:
            if nobool:
                _no_bool(name, a, b)
            raise RuntimeError(f"{name}: not supported for these dtypes "
                               f"({getattr(a, 'dtype', type(a).__name__)}, "
                               f"{getattr(b, 'dtype', type(b).__name__)}): {e}") from None
    impl.ufunc = uf
    return impl


def _first_operand_layout(uf, a, b):
    """PyTorch's rule when two same-shape operands disagree on layout: the first one's wins
    (channels_last + contiguous is channels_last); NumPy would pick C order. Computing on both
    operands permuted so that ``a`` is C-ordered gives a C-ordered result in that order, which
    permuted back has ``a``'s strides."""
    if 0 in a.strides:
        return uf(a, b)
    perm = sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))
    inv = [0] * a.ndim
    for i, d in enumerate(perm):
        inv[d] = i
    return uf(a.transpose(perm), b.transpose(perm)).transpose(inv)


# ----------------------------------------------------------------------------- arithmetic

add_op = defop("add", _binary_impl(np.add, "add"), bcast=True, family=EW)


@add_op.def_vjp
def _(ctx, g):
    return g, g


@add_op.def_jvp
def _(ctx, ta, tb):
    return _tsum(ta, tb)


def _sub_name(args, params):
    # `2 - t` is PyTorch's rsub(t, 2) (the Scalar overload)
    return "SubBackward0" if isinstance(args[0], D.Tensor) else "RsubBackward1"


sub_op = defop("sub", _binary_impl(np.subtract, "sub", nobool=True), bcast=True, family=EW,
               node_name=_sub_name)


@sub_op.def_vjp
def _(ctx, g):
    return g, (-g if ctx.needs[1] else None)


@sub_op.def_jvp
def _(ctx, ta, tb):
    if tb is None:
        return ta
    return -tb if ta is None else ta - tb


mul_op = defop("mul", _binary_impl(np.multiply, "mul"), save=("inputs",), bcast=True, family=EW)


def _cj(x):
    """conj(x) of a complex tensor or number (the vjp of a holomorphic op multiplies by conj(f'));
    x itself when real, at the cost of one dtype check."""
    if type(x) is complex or (isinstance(x, D.Tensor) and x._data.dtype.kind == "c"):
        from .complex import cj
        return cj(x)
    return x


@mul_op.def_vjp
def _(ctx, g):
    a, b = ctx.inputs
    n = ctx.needs
    # dispatch(mul_op, ...) is g * b without the operator's extra call (this rule is hot)
    return (dispatch(mul_op, (g, _cj(b))) if n[0] else None), (dispatch(mul_op, (g, _cj(a))) if n[1] else None)


@mul_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    return _tsum(None if ta is None else ta * b, None if tb is None else a * tb)


def _true_div(xp, a, b):
    if not (type(a) is _nd and a.dtype.kind == "f" and (
            (type(b) is _nd and b.dtype is a.dtype) or type(b) is float or type(b) is int)):
        if (type(a) is _nd and a.dtype == U.BF16 and type(b) in (float, int)) or \
                (type(b) is _nd and b.dtype == U.BF16 and type(a) in (float, int)):
            return U.bf16_f32(xp.true_divide, a, b)  # the number stays float32, as in PyTorch
        a, b = U.promote(a, b, floating=True)
    if _big(a, b):
        return _P.ufunc(xp.true_divide, a, b)
    return xp.true_divide(a, b)


def _div_impl(xp, a, b, rounding_mode=None):
    try:
        if rounding_mode is None:
            return _true_div(xp, a, b)
        if not _same(a, b):
            a, b = U.promote(a, b)
        U.check_int_divisor("div", a, b)
        if rounding_mode in ("floor", "trunc") and np.result_type(a, b).kind == "c":
            U.no_complex(f"div_{rounding_mode}_cpu", np.empty(0, np.result_type(a, b)))
        if rounding_mode == "floor":
            return xp.floor_divide(a, b)
        if rounding_mode == "trunc":
            q = xp.true_divide(a, b)
            q = xp.trunc(q)
            kind = np.result_type(a, b).kind
            return q.astype(np.result_type(a, b)) if kind != "f" else q
    except ValueError:
        raise U.broadcast_error("div", a, b) from None
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                     f"'{rounding_mode}'")


div_op = defop("div", _div_impl, save=("inputs", "out"), bcast=True, family=EW)


@div_op.def_vjp
def _(ctx, g):
    if ctx.params.get("rounding_mode") is not None:
        return (g * 0 if ctx.needs[0] else None), (g * 0 if ctx.needs[1] else None)
    a, b = ctx.inputs
    n = ctx.needs
    ga = g / _cj(b) if n[0] else None
    gb = -g * _cj(ctx.out / b) if n[1] else None
    return ga, gb


@div_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    if ctx.params.get("rounding_mode") is not None:
        return ctx.out * 0
    r = None if ta is None else ta / b
    if tb is not None:
        r = _tsum(r, -tb * ctx.out / b)
    return r


def _pow_impl(xp, a, b):
    if type(a) is _nd and a.dtype.kind in "iub" and type(b) is _nd and b.dtype.kind in "iub":
        neg = b < 0
        if neg.any():  # PyTorch computes these (a tensor exponent): 1 ** -k = 1, (-1) ** -k = (-1) ** k, else 0
            a, b = U.promote(a, b)
            try:
                r = xp.power(a, xp.abs(b))
            except ValueError:
                raise U.broadcast_error("pow", a, b) from None
            return xp.where(neg & (xp.abs(a) > 1), 0, r).astype(r.dtype, copy=False)
    a, b = U.promote(a, b)
    try:
        if _big(a, b):
            return _P.ufunc(xp.power, a, b)
        return xp.power(a, b)
    except ValueError:
        if type(a) is _nd and a.dtype.kind in "iub" and not isinstance(b, _nd) and b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.") from None
        raise U.broadcast_error("pow", a, b) from None


def _pow_name(args, params):
    # PyTorch's overloads: pow(Tensor, Scalar), pow(Tensor, Tensor), pow(Scalar, Tensor)
    if not isinstance(args[0], D.Tensor):
        return "PowBackward2"
    return "PowBackward1" if isinstance(args[1], D.Tensor) else "PowBackward0"


pow_op = defop("pow", _pow_impl, save=("inputs", "out"), bcast=True, family=EW, tensor_edges_only=True,
               node_name=_pow_name)


@pow_op.def_vjp
def _(ctx, g):
    a, b = ctx.inputs
    n = ctx.needs
    ga = gb = None
    if n[0]:
        ga = g * _cj(_pow_deriv_base(a, b))
    if n[1]:
        gb = g * _cj(_pow_deriv_exp(a, b, ctx.out))
    return ga, gb


@pow_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    r = None if ta is None else ta * _pow_deriv_base(a, b)
    if tb is not None:
        r = _tsum(r, tb * _pow_deriv_exp(a, b, ctx.out))
    return r


def _pow_deriv_base(a, b):
    if not U.is_tensor(b):
        if b == 0:
            return a * 0
        return b * a ** (b - 1)
    return where(b == 0, 0.0, b * a ** (b - 1))


def _pow_deriv_exp(a, b, out):
    if not U.is_tensor(a):
        return out * math.log(a) if a > 0 else out * (0.0 if a == 0 else math.nan)
    if U.is_tensor(b) and b._data.dtype.kind == "c":
        from .complex import real
        b = real(b)
    return where((a == 0) & (b >= 0), 0.0, out * log(a))  # PyTorch: 0 ** b has slope 0 in b for b >= 0


def _minmax_impl(uf, name):
    def impl(xp, a, b):
        if not _same(a, b):
            a, b = U.promote(a, b)
        if (type(a) is _nd and a.dtype.kind == "c") or (type(b) is _nd and b.dtype.kind == "c"):
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        try:
            if type(b) is _nd and type(a) is _nd and a.ndim > 1 and not a.flags.c_contiguous \
                    and a.shape == b.shape and b.flags.c_contiguous:
                return _first_operand_layout(uf, a, b)
            if _big(a, b):
                return _P.ufunc(uf, a, b)  # big: split over the intra-op threads
            return uf(a, b)
        except ValueError:
            raise U.broadcast_error(name, a, b) from None
    return impl


maximum_op = defop("maximum", _minmax_impl(np.maximum, "maximum"), save=("inputs",), bcast=True,
                   family=EW)
minimum_op = defop("minimum", _minmax_impl(np.minimum, "minimum"), save=("inputs",), bcast=True,
                   family=EW)


def _minmax_masks(ctx, greater):
    a, b = ctx.inputs
    wa = (a > b) if greater else (a < b)
    tie = (a == b)
    return wa.to(_fdtype(a, b)) + tie.to(_fdtype(a, b)) * 0.5


def _fdtype(a, b):
    return a.dtype if a.dtype.is_floating_point else b.dtype


for _op, _gt in ((maximum_op, True), (minimum_op, False)):
    def _mk(gt):
        def vjp(ctx, g):
            w = _minmax_masks(ctx, gt)
            n = ctx.needs
            return (g * w if n[0] else None), (g * (1 - w) if n[1] else None)

        def jvp(ctx, ta, tb):
            w = _minmax_masks(ctx, gt)
            return _tsum(None if ta is None else ta * w, None if tb is None else tb * (1 - w))
        return vjp, jvp
    _op.vjp, _op.jvp = _mk(_gt)


atan2_op = defop("atan2", _binary_impl(np.arctan2, "atan2", floating=True, real_only=True), save=("inputs",),
                 bcast=True, family=EW)


def _atan2_den(a, b):
    den = a * a + b * b
    return where(den == 0, 1.0, den)  # at (0, 0) both numerators are 0: slope 0, as PyTorch, not 0/0


@atan2_op.def_vjp
def _(ctx, g):
    a, b = ctx.inputs
    den = _atan2_den(a, b)
    return g * b / den, -g * a / den


@atan2_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    den = _atan2_den(a, b)
    return _tsum(None if ta is None else ta * b / den, None if tb is None else -tb * a / den)


def _modulo_op(name, quotient):
    """a - q(a / b) * b with q = floor (remainder) or trunc (fmod): d/da = 1, d/db = -q(a / b)."""
    def impl(xp, a, b):
        if not _same(a, b):
            a, b = U.promote(a, b)
        _no_complex_binary(name, a, b)
        U.check_int_divisor(name, a, b)
        return getattr(xp, name)(a, b)
    op = defop(name, impl, save=("inputs",), bcast=True, family=EW)
    op.vjp = lambda ctx, g: (g, -g * quotient(*ctx.inputs) if ctx.needs[1] else None)
    op.jvp = lambda ctx, ta, tb: _tsum(ta, None if tb is None else -tb * quotient(*ctx.inputs))
    return op


remainder_op = _modulo_op("remainder", lambda a, b: floor_divide(a, b))
fmod_op = _modulo_op("fmod", lambda a, b: (a / b).trunc())


def _floor_divide(a, b):
    U.check_int_divisor("floor_divide", a, b)
    return np.floor_divide(a, b)


floor_divide_op = defop("floor_divide", _binary_impl(_floor_divide, "div_floor", real_only=True),
                        differentiable=False, family=EW)


def _tsum(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


# ----------------------------------------------------------------------------- unary maths


_F16 = np.dtype(np.float16)

def _unary(name, fn, deriv=None, save=("inputs",), floating=True, linear=None, params_ok=False):
    """A unary op. ``fn(xp, a, **params)`` on arrays; ``deriv(ctx)`` gives f'(x) as a tensor
    (vjp = g * f'(x), jvp = t * f'(x)); ``linear`` (a function of the gradient) for ops that are
    their own derivative map (neg)."""
    code = getattr(fn, "__code__", None)
    if floating and code is not None and code.co_argcount == 2 and not code.co_flags & (
            inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        def impl(xp, a):  # no parameters: no keyword dict on every call
            d = a.dtype
            if d.kind != "f":
                if d == U.BF16:  # computed in float32, rounded once (PyTorch's opmath)
                    return U.bf16_f32(fn, xp, a)
                a = U.to_float(a)
            elif d is _F16:  # float16 too (NumPy's float16 formulas would round at each step)
                return U.lowp_f32(fn, xp, a)
            return fn(xp, a)
    elif floating:
        def impl(xp, a, **p):
            if a.dtype.kind != "f":
                if a.dtype == U.BF16:
                    return U.bf16_f32(fn, xp, a, **p)
                a = U.to_float(a)
            elif a.dtype is _F16:
                return U.lowp_f32(fn, xp, a, **p)
            return fn(xp, a, **p)
    else:
        impl = fn
    op = defop(name, impl, save=save if deriv is not None else (), family=EW)
    if linear is not None:
        op.vjp = lambda ctx, g: linear(g)
        op.jvp = lambda ctx, t: linear(t)
    elif deriv is not None:
        op.vjp = lambda ctx, g: g * _cj(deriv(ctx))
        op.jvp = lambda ctx, t: t * deriv(ctx)
    else:
        op.differentiable = False
    return op


def _x(ctx):
    return ctx.inputs[0]


neg_op = _unary("neg", lambda xp, a: xp.negative(a), floating=False, linear=lambda g: -g)
exp_op = _unary("exp", lambda xp, a: xp.exp(a), lambda c: c.out, save=("out",))
exp_op.vjp = lambda ctx, g: dispatch(mul_op, (g, _cj(ctx.out)))  # g * conj(deriv(ctx)), two calls shorter (hot)
exp2_op = _unary("exp2", lambda xp, a: xp.exp2(a), lambda c: c.out * math.log(2.0), save=("out",))
log_op = _unary("log", lambda xp, a: xp.log(a), lambda c: _x(c).reciprocal())
log2_op = _unary("log2", lambda xp, a: xp.log2(a), lambda c: (_x(c) * math.log(2.0)).reciprocal())
log10_op = _unary("log10", lambda xp, a: xp.log10(a), lambda c: (_x(c) * math.log(10.0)).reciprocal())
log1p_op = _unary("log1p", lambda xp, a: xp.log1p(a), lambda c: (_x(c) + 1).reciprocal())
expm1_op = _unary("expm1", lambda xp, a: xp.expm1(a), lambda c: c.out + 1, save=("out",))
sqrt_op = _unary("sqrt", lambda xp, a: xp.sqrt(a), lambda c: 0.5 / c.out, save=("out",))
rsqrt_op = _unary("rsqrt", lambda xp, a: 1.0 / xp.sqrt(a) if a.ndim else xp.asarray(1.0 / xp.sqrt(a)),
                  lambda c: -0.5 * c.out ** 3, save=("out",))
sin_op = _unary("sin", lambda xp, a: xp.sin(a), lambda c: _x(c).cos())
cos_op = _unary("cos", lambda xp, a: xp.cos(a), lambda c: -_x(c).sin())
tan_op = _unary("tan", lambda xp, a: xp.tan(a), lambda c: 1 + c.out * c.out, save=("out",))
asin_op = _unary("asin", lambda xp, a: xp.arcsin(a), lambda c: (1 - _x(c) ** 2).rsqrt())
acos_op = _unary("acos", lambda xp, a: xp.arccos(a), lambda c: -(1 - _x(c) ** 2).rsqrt())
atan_op = _unary("atan", lambda xp, a: xp.arctan(a), lambda c: (1 + _x(c) ** 2).reciprocal())
sinh_op = _unary("sinh", lambda xp, a: xp.sinh(a), lambda c: _x(c).cosh())
cosh_op = _unary("cosh", lambda xp, a: xp.cosh(a), lambda c: _x(c).sinh())
tanh_op = _unary("tanh", lambda xp, a: xp.tanh(a), lambda c: 1 - c.out * c.out, save=("out",))
asinh_op = _unary("asinh", lambda xp, a: xp.arcsinh(a), lambda c: (_x(c) ** 2 + 1).rsqrt())
atanh_op = _unary("atanh", lambda xp, a: xp.arctanh(a), lambda c: (1 - _x(c) ** 2).reciprocal())
reciprocal_op = _unary("reciprocal", lambda xp, a: xp.reciprocal(a), lambda c: -c.out * c.out,
                       save=("out",))


def _sigmoid(xp, a):
    if a.dtype.kind == "c":
        return 1 / (1 + xp.exp(-a))
    # stable for large |a| without overflow warnings
    out = xp.exp(-xp.abs(a))
    pos = a >= 0
    num = xp.where(pos, 1.0, out).astype(a.dtype, copy=False)
    return num / (1.0 + out)


sigmoid_op = _unary("sigmoid", _sigmoid, lambda c: c.out * (1 - c.out), save=("out",))


def _erf_arr(xp, a):
    if a.dtype.kind == "c":
        U.no_complex("erf_vml_cpu", a)
    return _special.erf(a).astype(a.dtype, copy=False)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
erf_op = _unary("erf", _erf_arr, lambda c: _TWO_OVER_SQRT_PI * (-(_x(c) ** 2)).exp())


def _erfinv_arr(xp, a):
    """+-inf at +-1 and nan outside [-1, 1], as scipy.special.erfinv gives them."""
    if a.dtype.kind == "c":
        U.no_complex("erfinv_vml_cpu", a)
    return _special.erfinv(a).astype(a.dtype, copy=False)


erfinv_op = _unary("erfinv", _erfinv_arr,
                   lambda c: (c.out ** 2).exp() * (math.sqrt(math.pi) / 2), save=("out",))

abs_op = _unary("abs", lambda xp, a: xp.abs(a), lambda c: _x(c).sign(), floating=False)


def _abs_vjp(ctx, g):
    x = ctx.inputs[0]
    if x._data.dtype.kind == "c":  # |z| is real: the gradient g z/|z| (no conjugate)
        from .complex import sgn
        return g * sgn(x)
    return g * x.sign()


def _abs_jvp(ctx, t):
    x = ctx.inputs[0]
    if x._data.dtype.kind == "c":  # d|z| = Re(conj(z/|z|) dz)
        from .complex import cj, real, sgn
        return real(cj(sgn(x)) * t)
    return t * x.sign()


abs_op.vjp, abs_op.jvp = _abs_vjp, _abs_jvp


# piecewise constant: the gradient is 0 everywhere, +-inf included (x * 0 would be nan there)
def _sign(xp, a):
    if a.dtype.kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead.")
    if a.dtype.kind == "b":
        return a.copy()
    r = xp.sign(a)
    if a.dtype.kind == "f":  # PyTorch: the sign of NaN is 0
        r = xp.where(xp.isnan(a), a.dtype.type(0), r)
    return r


sign_op = _unary("sign", _sign, floating=False, linear=lambda g: g * 0)
sgn_op = sign_op
def _rounding(name, f):
    def impl(xp, a):
        if a.dtype.kind in "fV":  # (V: bfloat16, which ml_dtypes' ufuncs round)
            return f(a)
        if a.dtype.kind == "c":
            raise NotImplementedError(f"{name} is not supported for complex inputs ({a.dtype})")
        return a.copy()
    return impl


for _n, _f in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)):
    _unary(_n, _rounding(_n, _f), floating=False, linear=lambda g: g * 0)
def _round(xp, a, decimals=0):
    if a.dtype == U.BF16:
        return U.bf16_f32(_round, xp, a, decimals)
    if a.dtype.kind == "f":
        return xp.round(a, decimals)
    if a.dtype.kind == "c":
        U.no_complex("round_vml_cpu", a)
    if decimals:
        raise RuntimeError(f"round: decimals={decimals} is not implemented for dtype {a.dtype} (floating point "
                           f"inputs only)")
    return a.copy()


_unary("round", _round, floating=False, linear=lambda g: g * 0)
_unary("frac", lambda xp, a: U.float_only("frac", a) - xp.trunc(a), floating=False,
       linear=lambda g: g)  # slope 1 everywhere (x * 0 + 1 was NaN at +-inf)


def _no_complex_clamp(a):
    if a.dtype.kind == "c":
        raise NotImplementedError(f"clamp is not supported for complex types ({a.dtype})")


def _relu(xp, a):
    if a.dtype.kind == "b":
        raise RuntimeError("relu: not implemented for 'Bool'")
    if a.dtype.kind == "c":
        _no_complex_clamp(a)
    return xp.maximum(a, 0) if a.size < _P.MIN_SIZE else _P.ufunc(xp.maximum, a, 0)


relu_op = defop("relu", _relu, save=("out",), family=EW)
# PyTorch's threshold_backward: where(out <= 0, 0, g), so a NaN input passes its gradient through and a
# NaN or infinite gradient is 0 where the output is (two passes: no bool mask to negate and promote)
relu_op.vjp = lambda ctx, g: where(ctx.out <= 0, 0.0, g)
relu_op.jvp = lambda ctx, t: where(ctx.out <= 0, 0.0, t)


def _leaky_relu(xp, a, negative_slope=0.01):
    U.float_only("leaky_relu", a)
    return _P.where(a > 0, a, a * a.dtype.type(negative_slope))


leaky_relu_op = defop("leaky_relu", _leaky_relu, save=("inputs",), family=EW)
leaky_relu_op.vjp = lambda ctx, g: where(ctx.inputs[0] > 0, g, g * ctx.params.get("negative_slope", 0.01))
leaky_relu_op.jvp = lambda ctx, t: t * where(ctx.inputs[0] > 0, 1.0, ctx.params.get("negative_slope", 0.01))


def _elu(xp, a, alpha=1.0, scale=1.0):
    a = U.float_only("elu", a)
    r = _P.where(a > 0, a, alpha * xp.expm1(xp.minimum(a, 0))).astype(a.dtype, copy=False)
    if scale != 1.0:  # (selu: PyTorch runs it as elu with a scale, EluBackward0)
        r *= scale
    return r


def _elu_deriv(c):
    x = c.inputs[0]
    p = c.params
    scale = p.get("scale", 1.0)
    return where(x > 0, scale, c.out + p.get("alpha", 1.0) * scale)


elu_op = defop("elu", _elu, save=("inputs", "out"), family=EW)
elu_op.vjp = lambda ctx, g: g * _elu_deriv(ctx)
elu_op.jvp = lambda ctx, t: t * _elu_deriv(ctx)


def _hardtanh(xp, a, min_val=-1.0, max_val=1.0):
    _no_complex_clamp(a)
    return xp.clip(a, min_val, max_val).astype(a.dtype, copy=False)


def _hardtanh_deriv(c):
    x = c.inputs[0]
    p = c.params
    return ((x > p.get("min_val", -1.0)) & (x < p.get("max_val", 1.0))).to(x.dtype)


hardtanh_op = defop("hardtanh", _hardtanh, save=("inputs",), family=EW)
hardtanh_op.vjp = lambda ctx, g: g * _hardtanh_deriv(ctx)
hardtanh_op.jvp = lambda ctx, t: t * _hardtanh_deriv(ctx)

_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# float32 GELU x * Phi(x) without erf (SciPy's erf is a scalar loop, ~12 ns an element): Phi from its
# Taylor expansion at the nearest point x_i = i / 512 of a table on [-14.5, 14.5], quadratic in
# dx = x - x_i (|dx| <= 1/1024): with Phi'' = -x pdf,
#     Phi(x_i + dx) ~ Phi(x_i) + pdf(x_i) dx (1 - x_i dx / 2).
# Only Phi(x_i) and pdf(x_i) come from the table (two gathers, the costliest passes). The node comes
# from one float32 addition: x + (1.5 * 2^14 + 14.5) lies in [2^14, 2^15), where float32 numbers are
# the multiples of 2^-9, so the sum is rounded to the nearest node (plus the constant), its bits
# less those of 1.5 * 2^14 are the node's index, and subtracting the constant again gives x_i
# exactly (no floor, float-to-int or scaling pass); dx = x - x_i is then exact too. The dropped
# cubic term is below 1e-10 near 0; within about 2.2 ulps of the exact float64 GELU wherever it is a
# normal number above -6 (the erf formula loses the left tail to the cancellation in 1 + erf). x is
# clipped to [-14.5, 14.5] first (beyond, Phi is 0 or 1 in float32), a NaN gets an arbitrary
# (clipped) index and stays NaN through dx. Evaluated over large chunks in reused buffers (a NumPy
# call costs about a microsecond: small chunks pay it often).
_GELU_L, _GELU_K, _GELU_CHUNK = 14.5, 512, 65536
_gelu_tab = []
_gelu_scratch = threading.local()


def _gelu_table():
    if not _gelu_tab:
        xi = np.arange(int(2 * _GELU_L * _GELU_K) + 1) / _GELU_K - _GELU_L
        pdf = np.exp(-0.5 * xi * xi) / math.sqrt(2 * math.pi)
        _gelu_tab.extend(c.astype(np.float32) for c in (_special.ndtr(xi), pdf))
        magic = np.float32(1.5 * 2 ** 14)  # float32 numbers in [2^14, 2^15) are the multiples of 1/512
        _gelu_tab.extend((magic + np.float32(_GELU_L), np.array(magic).view(np.int32),
                          np.array(-_GELU_L, np.float32), np.array(_GELU_L, np.float32)))
    return _gelu_tab


def _gelu_f32(xp, a, deriv=None):
    """deriv: when given (an array of a's shape), it receives GELU's derivative Phi(x) + x pdf(x), pdf
    from the same node: pdf(x_i + dx) ~ pdf(x_i) (1 - x_i dx) (|error| of the derivative below 3e-7,
    PyTorch's own float32 one 2.3e-7), for the fused backward (no exp pass there)."""
    c0, c1, shift, shift_bits, lo_x, hi_x = _gelu_table()
    flat = a.reshape(-1)
    out = xp.empty(a.shape, dtype=a.dtype)
    oflat = out.reshape(-1)
    dflat = None if deriv is None else deriv.reshape(-1)
    half = np.float32(-0.5)

    def part(start, stop):  # (elementwise: the same values on any number of threads)
        n = stop - start
        ch = max(1, min(n, _GELU_CHUNK))
        bufs = getattr(_gelu_scratch, "bufs", None)  # (each thread its own)
        if bufs is None or bufs[0].size < ch:
            bufs = _gelu_scratch.bufs = (xp.empty(ch, np.float32), xp.empty(ch, np.float32),
                                         xp.empty(ch, np.float32), xp.empty(ch, np.float32), xp.empty(ch, np.intp))
        with np.errstate(invalid="ignore"):  # (NaN: an arbitrary index, its dx and result stay NaN)
            for lo in range(start, stop, ch):
                hi = min(stop, lo + ch)
                m = hi - lo
                x = flat[lo:hi]
                p, q, t, u, i = (b[:m] for b in bufs)
                _umath.clip(x, lo_x, hi_x, out=p)
                xp.add(p, shift, out=q)       # the nearest node x_i, plus shift
                xp.subtract(q.view(np.int32), shift_bits, out=i)  # the node's index
                q -= shift                    # x_i (exact)
                p -= q                        # dx (exact)
                q *= p
                q *= half                     # -x_i dx / 2
                xp.add(q, 1, out=t)           # 1 - x_i dx / 2
                if dflat is not None:
                    xp.add(t, q, out=u)       # 1 - x_i dx: pdf(x) / pdf(x_i)
                t *= p
                e = xp.take(c1, i, out=p, mode="clip")   # pdf(x_i)
                t *= e
                if dflat is not None:
                    u *= e
                t += xp.take(c0, i, out=q, mode="clip")  # Phi(x)
                xp.multiply(t, x, out=oflat[lo:hi])
                if dflat is not None:
                    u *= x
                    xp.add(u, t, out=dflat[lo:hi])
    if flat.size >= _P.MIN_SIZE:
        _P.parallel_for(flat.size, part)
    else:
        part(0, flat.size)
    return out


def _gelu(xp, a, approximate="none"):
    a = U.float_only("gelu", a)
    if U.is_lowp(a):  # float32 inside, rounded once (PyTorch's opmath)
        return U.lowp_f32(_gelu, xp, a, approximate)
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (a + 0.044715 * a * a * a)
        return 0.5 * a * (1.0 + xp.tanh(inner))
    if approximate != "none":
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    if a.dtype == np.float32:
        if D.keeping():  # (gelu(): a node will be recorded, the derivative goes to its backward)
            d = xp.empty(a.shape, a.dtype)
            D.keep(d)
            return _gelu_f32(xp, a, d)
        return _gelu_f32(xp, a)
    if a.ndim and (a.dtype == np.float32 or a.dtype == np.float64):
        # in place on one temporary; (a * (1 + erf)) * 0.5 is 0.5 * a * (1 + erf) (a power of two)
        t = a * a.dtype.type(_SQRT_HALF)
        _special.erf(t, out=t)
        t += 1.0
        t *= a
        t *= 0.5
        return t
    return 0.5 * a * (1.0 + _erf_arr(xp, a * a.dtype.type(_SQRT_HALF)))


def _gelu_deriv(c):
    x = c.inputs[0]
    if c.params.get("approximate", "none") == "tanh":
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        th = inner.tanh()
        dinner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * dinner
    cdf = 0.5 * (1 + (x * _SQRT_HALF).erf())
    pdf = (-0.5 * x * x).exp() * (1.0 / math.sqrt(2 * math.pi))
    return cdf + x * pdf


def _gelu_bwd_from_out(xp, g, x, y):
    """g * (cdf + x pdf) with cdf = y / x, over cache-sized chunks in reused buffers. y / x is cdf to
    the rounding of y while y is a normal number: a chunk holding an |x| below 4 * tiny, an infinite
    or a NaN x takes erf for those elements."""
    dt = x.dtype
    xf, yf, gf = (a.reshape(-1) for a in (x, y, g))
    out = xp.empty(x.shape, dtype=dt)
    of = out.reshape(-1)
    n = xf.size
    ch = _GELU_CHUNK
    key = "bwd64" if dt == np.float64 else "bwd32"
    bufs = getattr(_gelu_scratch, key, None)
    if bufs is None:
        bufs = xp.empty(ch, dt)
        setattr(_gelu_scratch, key, bufs)
    lo_ok = 4 * np.finfo(dt).tiny
    c = 1.0 / math.sqrt(2 * math.pi)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # (inf and NaN inputs)
        for lo in range(0, n, ch):
            hi = min(n, lo + ch)
            xx, d = xf[lo:hi], of[lo:hi]
            t = bufs[:hi - lo]
            xp.abs(xx, out=t)
            ok = t.min() >= lo_ok and t.max() < np.inf  # (NaN: False)
            xp.multiply(xx, -0.5, out=t)   # x pdf(x)
            t *= xx
            xp.exp(t, out=t)
            t *= c
            t *= xx
            xp.divide(yf[lo:hi], xx, out=d)
            if not ok:
                bad = ~(xp.abs(xx) >= lo_ok)
                bad |= xp.isinf(xx)
                d[bad] = 0.5 * (1.0 + _special.erf(xx[bad] * _SQRT_HALF))
            d += t
            d *= gf[lo:hi]
    return out


def _gelu_bwd(xp, g, x, y=None, deriv=None, approximate="none"):
    """g * gelu'(x) in one pass over raw arrays (the fused backward; no graph is recorded through
    it): the same formulas as _gelu_deriv, with two temporaries instead of a dozen. y: the forward's
    output gelu(x) = x * cdf(x), when the caller has it: cdf is then y / x, the forward's own
    rounding of it, instead of a second erf (the costliest pass); x near zero, infinite or NaN
    takes erf. deriv: gelu'(x) computed by the float32 forward, when the caller has it (overwritten
    with the result)."""
    if (deriv is not None and deriv.shape == x.shape == g.shape and deriv.dtype == x.dtype == g.dtype
            and approximate == "none"):
        xp.multiply(deriv, g, out=deriv)
        return deriv
    x = U.float_only("gelu", x)
    if U.is_lowp(x):  # (in float32 from x alone: y is the low-precision rounding of the forward)
        return U.lowp_f32(_gelu_bwd, xp, g, x, None, approximate=approximate)
    if (y is not None and approximate == "none" and x.ndim and (x.dtype == np.float32 or x.dtype == np.float64)
            and y.dtype == x.dtype and y.shape == x.shape and g.shape == x.shape):
        return _gelu_bwd_from_out(xp, g, x, y)
    if approximate == "tanh":
        th = xp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
        d = 0.5 * x * (1 - th * th) * (_SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x))
        th += 1
        th *= 0.5
        d += th
    elif x.ndim and (x.dtype == np.float32 or x.dtype == np.float64):
        pdf = -0.5 * x
        pdf *= x
        xp.exp(pdf, out=pdf)
        pdf *= 1.0 / math.sqrt(2 * math.pi)
        pdf *= x
        d = x * _SQRT_HALF
        _special.erf(d, out=d)
        d += 1
        d *= 0.5
        d += pdf
    else:
        pdf = xp.exp(-0.5 * x * x)
        pdf *= 1.0 / math.sqrt(2 * math.pi)
        pdf *= x
        d = _erf_arr(xp, x * _SQRT_HALF)
        d += 1
        d *= 0.5
        d += pdf
    if d.shape == g.shape:
        d *= g
        return d
    return d * g


gelu_op = defop("gelu", _gelu, save=("inputs",), family=EW)
gelu_bwd_op = defop("gelu_backward", _gelu_bwd, family=EW, differentiable=False)


def _gelu_vjp(ctx, g):
    if not D.grad_mode.enabled and D.state.simple and g._data.shape == ctx.inputs[0]._data.shape:
        x = ctx.inputs[0]  # (checks that x is unchanged since the forward: the derivative is x's)
        deriv = ctx.__dict__.pop("_kept", None)  # (used once: overwritten by the backward)
        if deriv is not None:
            return dispatch(gelu_bwd_op, (g, x, None, deriv), ctx.params)
        kept = ctx.__dict__.get("_gelu_out")  # (set by gelu(): the output, unless changed in place since)
        y = kept[0] if kept is not None and kept[1][0] == kept[2] else None
        return dispatch(gelu_bwd_op, (g, x, y), ctx.params)
    return g * _gelu_deriv(ctx)


gelu_op.vjp = _gelu_vjp
gelu_op.jvp = lambda ctx, t: t * _gelu_deriv(ctx)


def _silu(xp, a):
    a = U.float_only("silu", a, complex_ok=True)
    if U.is_lowp(a):
        return U.lowp_f32(_silu, xp, a)
    return a * _sigmoid(xp, a)


def _silu_deriv(c):
    x = c.inputs[0]
    s = x.sigmoid()
    return s * (1 + x * (1 - s))


silu_op = defop("silu", _silu, save=("inputs",), family=EW)
silu_op.vjp = lambda ctx, g: g * _silu_deriv(ctx)
silu_op.jvp = lambda ctx, t: t * _silu_deriv(ctx)


def _softplus(xp, a, beta=1.0, threshold=20.0):
    a = U.float_only("softplus", a)
    z = a * beta
    soft = xp.logaddexp(0, z) / beta
    return _P.where(z > threshold, a, soft).astype(a.dtype, copy=False)


def _softplus_deriv(c):
    x = c.inputs[0]
    beta = c.params.get("beta", 1.0)
    thr = c.params.get("threshold", 20.0)
    z = x * beta
    return where(z > thr, 1.0, z.sigmoid())


softplus_op = defop("softplus", _softplus, save=("inputs",), family=EW)
softplus_op.vjp = lambda ctx, g: g * _softplus_deriv(ctx)
softplus_op.jvp = lambda ctx, t: t * _softplus_deriv(ctx)


# activations PyTorch runs as ops of their own (LogSigmoidBackward0, MishBackward0, ...): one pass
# forward, f'(x) in ember ops


def _log_sigmoid(xp, a):
    return -(xp.maximum(-a, 0) + xp.log1p(xp.exp(-xp.abs(a))))


def _mish(xp, a):
    return a * xp.tanh(xp.maximum(a, 0) + xp.log1p(xp.exp(-xp.abs(a))))


def _mish_deriv(c):
    x = c.inputs[0]
    t = dispatch(softplus_op, (x,)).tanh()
    return t + x * x.sigmoid() * (1 - t * t)


def _float_unary(name, fn, deriv):
    """A unary op defined for floating inputs only (PyTorch has no integer kernel for it); float16
    and bfloat16 computed in float32, rounded once."""
    return _unary(name, lambda xp, a: fn(xp, U.float_only(name, a)) if a.dtype != U.BF16 and a.dtype is not _F16
                  else U.lowp_f32(fn, xp, a), deriv, floating=False)


log_sigmoid_op = _float_unary("log_sigmoid", _log_sigmoid, lambda c: (-c.inputs[0]).sigmoid())
mish_op = _float_unary("mish", _mish, _mish_deriv)
hardswish_op = _float_unary("hardswish", lambda xp, a: a * xp.clip(a + 3, 0, 6) / 6,
                            lambda c: where(c.inputs[0] <= -3, 0.0,  # (PyTorch's one-sided values at +-3)
                                            where(c.inputs[0] < 3, (2 * c.inputs[0] + 3) / 6, 1.0)).to(c.inputs[0].dtype))
hardsigmoid_op = _float_unary("hardsigmoid", lambda xp, a: xp.clip(a / 6 + 0.5, 0, 1),
                              lambda c: where((c.inputs[0] > -3) & (c.inputs[0] < 3), 1 / 6, 0.0).to(c.inputs[0].dtype))


def _clamp(xp, a, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    _no_complex_clamp(a)
    if a.dtype.kind != "f" and (isinstance(min, float) or isinstance(max, float)):
        if a.dtype == U.BF16:
            return U.bf16_f32(_clamp, xp, a, min, max)
        a = U.to_float(a)
    if min is not None and max is not None:
        return xp.minimum(xp.maximum(a, min), max)
    if min is not None:
        return xp.maximum(a, min)
    return xp.minimum(a, max)


def _clamp_mask(c):
    x = c.inputs[0]
    lo, hi = c.params.get("min"), c.params.get("max")
    m = None
    if lo is not None:
        m = x >= lo
    if hi is not None:
        m = (x <= hi) if m is None else m & (x <= hi)
    return m


clamp_op = defop("clamp", _clamp, save=("inputs",), family=EW, node_name="ClampBackward1")  # (Scalar bounds)
clamp_op.vjp = lambda ctx, g: g * _clamp_mask(ctx)
clamp_op.jvp = lambda ctx, t: t * _clamp_mask(ctx)


def _clamp_tensor(xp, a, lo, hi):
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    for x in (a, lo, hi):
        if type(x) is _nd:
            _no_complex_clamp(x)
    t = U.result_dtype(*[v for v in (a, lo, hi) if v is not None]).np  # PyTorch's promotion, not NumPy's
    r = a if lo is None else xp.maximum(a, lo)
    r = r if hi is None else xp.minimum(r, hi)
    return r.astype(t, copy=False) if r.dtype != t else r


def _clamp_tensor_masks(ctx):
    """Where the output is x, the lower bound and the upper bound (lo > hi gives hi, as PyTorch)."""
    x, lo, hi = ctx.inputs
    mx = mlo = mhi = None
    if lo is not None and hi is not None:
        mx = (x >= lo) & (x <= hi)
        mlo = (x < lo) & (lo <= hi)
        mhi = (x > hi) | (lo > hi)
    elif lo is not None:
        mx, mlo = x >= lo, x < lo
    else:
        mx, mhi = x <= hi, x > hi
    return mx, mlo, mhi


# clamp with tensor bounds: PyTorch's ClampBackward0 (one node, not maximum and minimum)
clamp_tensor_op = defop("clamp_tensor", _clamp_tensor, save=("inputs",), bcast=True, family=EW,
                        node_name="ClampBackward0")


@clamp_tensor_op.def_vjp
def _(ctx, g):
    n = ctx.needs
    mx, mlo, mhi = _clamp_tensor_masks(ctx)
    return ((g * mx) if n[0] else None), ((g * mlo) if n[1] else None), ((g * mhi) if n[2] else None)


@clamp_tensor_op.def_jvp
def _(ctx, tx, tlo, thi):
    mx, mlo, mhi = _clamp_tensor_masks(ctx)
    r = None
    for t, m in ((tx, mx), (tlo, mlo), (thi, mhi)):
        if t is not None and m is not None:
            r = t * m if r is None else r + t * m
    return r


# ----------------------------------------------------------------------------- comparisons & logic


def _cmp(name, uf, ordered=False):
    def impl(xp, a, b):
        if ordered:  # (no order on complex numbers)
            _no_complex_binary(name, a, b)
        try:
            if type(b) is _nd and type(a) is _nd and a.ndim > 1 and not a.flags.c_contiguous \
                    and a.shape == b.shape and b.flags.c_contiguous:
                return _first_operand_layout(uf, a, b)
            if _big(a, b):
                return _P.ufunc(uf, a, b)  # big: split over the intra-op threads
            return uf(a, b)
        except ValueError:
            raise U.broadcast_error(name, a, b) from None
    return defop(name, impl, differentiable=False, family=EW)


eq_op = _cmp("eq", np.equal)
ne_op = _cmp("ne", np.not_equal)
lt_op = _cmp("lt", np.less, True)
le_op = _cmp("le", np.less_equal, True)
gt_op = _cmp("gt", np.greater, True)
ge_op = _cmp("ge", np.greater_equal, True)
logical_and_op = _cmp("logical_and", np.logical_and)
logical_or_op = _cmp("logical_or", np.logical_or)
logical_xor_op = _cmp("logical_xor", np.logical_xor)
logical_not_op = defop("logical_not", lambda xp, a: xp.logical_not(a), differentiable=False, family=EW)
isnan_op = defop("isnan", lambda xp, a: xp.isnan(a), differentiable=False, family=EW)
isinf_op = defop("isinf", lambda xp, a: xp.isinf(a), differentiable=False, family=EW)
isfinite_op = defop("isfinite", lambda xp, a: xp.isfinite(a), differentiable=False, family=EW)
signbit_op = defop("signbit", lambda xp, a: xp.signbit(a), differentiable=False, family=EW)


def _bitwise(name, uf):
    def impl(xp, a, b):
        if not _same(a, b):
            a, b = U.promote(a, b)
        if (type(a) is _nd and a.dtype.kind == "f") or (type(b) is _nd and b.dtype.kind == "f") \
                or isinstance(a, float) or isinstance(b, float):
            raise RuntimeError(f"\"{name}_cpu\" not implemented for 'Float'")
        return uf(a, b)
    return defop(name, impl, differentiable=False, family=EW)


bitwise_and_op = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or_op = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor_op = _bitwise("bitwise_xor", np.bitwise_xor)
bitwise_left_shift_op = _bitwise("bitwise_left_shift", np.left_shift)
bitwise_right_shift_op = _bitwise("bitwise_right_shift", np.right_shift)


def _bitwise_not(xp, a):
    if a.dtype.kind == "f":
        raise RuntimeError("\"bitwise_not_cpu\" not implemented for 'Float'")
    return xp.invert(a)


bitwise_not_op = defop("bitwise_not", _bitwise_not, differentiable=False, family=EW)


def _where(xp, cond, a, b):
    if type(cond) is _nd and cond.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {U.dt.FROM_NP[cond.dtype].name.capitalize()}")
    if type(a) is not _nd and type(b) is not _nd:  # two Python numbers: PyTorch's scalar type
        r = U.result_dtype(a, b).np
        a, b = r.type(a), r.type(b)
    elif not _same(a, b):
        a, b = U.promote(a, b)
    try:
        return _P.where(cond, a, b)
    except ValueError:
        raise RuntimeError(f"where: shapes {list(np.shape(cond))}, {list(np.shape(a))} and "
                           f"{list(np.shape(b))} cannot be broadcast together") from None


where_op = defop("where", _where, save=("inputs",), bcast=True, family=EW)


@where_op.def_vjp
def _(ctx, g):
    c = ctx.inputs[0]
    n = ctx.needs
    return None, (where(c, g, 0.0) if n[1] else None), (where(c, 0.0, g) if n[2] else None)


@where_op.def_jvp
def _(ctx, tc, ta, tb):
    c = ctx.inputs[0]
    return where(c, 0.0 if ta is None else ta, 0.0 if tb is None else tb)


def _nan_to_num(xp, a, nan=0.0, posinf=None, neginf=None):
    return xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


nan_to_num_op = defop("nan_to_num", _nan_to_num, save=("inputs",), family=EW)
nan_to_num_op.vjp = lambda ctx, g: g * ctx.inputs[0].isfinite()
nan_to_num_op.jvp = lambda ctx, t: t * ctx.inputs[0].isfinite()


# ----------------------------------------------------------------------------- public functions


def _alpha(other, alpha, input=None):
    if alpha == 1:
        return other
    if isinstance(alpha, float) and all(not U.is_tensor(t) or t._data.dtype.kind in "iub" for t in (input, other)):
        raise RuntimeError(f"add/sub: For integral input tensors, argument alpha must not be a floating point "
                           f"number (got alpha={alpha})")
    return other * alpha


def add(input, other, *, alpha=1, out=None):
    if not U.is_tensor(input) and U.is_tensor(other):
        input, other = other, input
        r = dispatch(add_op, (_alpha(other, alpha, input) if alpha != 1 else other, input)) if alpha != 1 \
            else dispatch(add_op, (other, input))
        return _out(r, out)
    r = dispatch(add_op, (input, _alpha(other, alpha, input)))
    return _out(r, out)


def sub(input, other, *, alpha=1, out=None):
    return _out(dispatch(sub_op, (input, _alpha(other, alpha, input))), out)


subtract = sub


def mul(input, other, *, out=None):
    return _out(dispatch(mul_op, (input, other)), out)


multiply = mul


def _scalar_pair(a, b):
    """Two Python numbers: the first as a 0-dim tensor of their PyTorch result type (float32 for
    floats, not NumPy's float64)."""
    return D._new_tensor(np.asarray(a, U.result_dtype(a, b).np))


def div(input, other, *, rounding_mode=None, out=None):
    if not isinstance(input, D.Tensor) and not isinstance(other, D.Tensor):
        input = _scalar_pair(input, other)
    p = {} if rounding_mode is None else {"rounding_mode": rounding_mode}
    return _out(dispatch(div_op, (input, other), p), out)


divide = div
true_divide = div


def floor_divide(input, other):
    if not isinstance(input, D.Tensor) and not isinstance(other, D.Tensor):
        input = _scalar_pair(input, other)
    return dispatch(floor_divide_op, (input, other))


def _one_tensor(name, a, b):
    if not (isinstance(a, D.Tensor) or isinstance(b, D.Tensor)):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(b).__name__}): one of them must be a Tensor")


def remainder(input, other):
    if not isinstance(input, D.Tensor):
        _one_tensor("remainder", input, other)
    return dispatch(remainder_op, (input, other))


def fmod(input, other):
    if not isinstance(input, D.Tensor):
        _need_tensor("fmod", input)
    return dispatch(fmod_op, (input, other))


def pow(input, exponent, *, out=None):
    if not isinstance(input, D.Tensor):
        _one_tensor("pow", input, exponent)
    return _out(dispatch(pow_op, (input, exponent)), out)


def float_power(input, exponent):
    _one_tensor("float_power", input, exponent)
    from .. import float64, complex128
    cx = (U.is_tensor(input) and input.is_complex()) or (U.is_tensor(exponent) and exponent.is_complex()) or \
        type(input) is complex or type(exponent) is complex
    d = complex128 if cx else float64  # (double precision, complex when either operand is)
    a = input.to(d) if U.is_tensor(input) else (complex(input) if cx else float(input))
    b = exponent.to(d) if U.is_tensor(exponent) else (complex(exponent) if cx else float(exponent))
    return dispatch(pow_op, (a, b))


def maximum(input, other):
    if not (isinstance(input, D.Tensor) and isinstance(other, D.Tensor)):
        _need_tensor("maximum", input, other)
    return dispatch(maximum_op, (input, other))


def minimum(input, other):
    if not (isinstance(input, D.Tensor) and isinstance(other, D.Tensor)):
        _need_tensor("minimum", input, other)
    return dispatch(minimum_op, (input, other))


def fmax(input, other):
    """The larger of the two, ignoring a NaN (NaN only where both are); a tie's gradient goes to
    input, as PyTorch's."""
    _need_tensor("fmax", input, other)
    return where((input >= other) | isnan(other), input, other)


def fmin(input, other):
    """The smaller of the two, ignoring a NaN (NaN only where both are); a tie's gradient goes to
    input, as PyTorch's."""
    _need_tensor("fmin", input, other)
    return where((input <= other) | isnan(other), input, other)


def atan2(input, other):
    if not (isinstance(input, D.Tensor) and isinstance(other, D.Tensor)):
        _need_tensor("atan2", input, other)
    return dispatch(atan2_op, (input, other))


arctan2 = atan2


def where(condition, input=None, other=None):
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    return dispatch(where_op, (condition, input, other))


def clamp(input, min=None, max=None, *, out=None):
    if not isinstance(input, D.Tensor):
        _need_tensor("clamp", input)
    if U.is_tensor(min) or U.is_tensor(max):
        return _out(dispatch(clamp_tensor_op, (input, min, max)), out)
    p = {}
    if min is not None:
        p["min"] = min
    if max is not None:
        p["max"] = max
    return _out(dispatch(clamp_op, (input,), p), out)


clip = clamp


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


_out = U.write_out


def _mk_unary(op):
    def f(input, *, out=None):
        r = dispatch(op, (input,))
        return r if out is None else _out(r, out)
    f.__name__ = op.name
    return f


exp = _mk_unary(exp_op)
exp2 = _mk_unary(exp2_op)
log = _mk_unary(log_op)
log2 = _mk_unary(log2_op)
log10 = _mk_unary(log10_op)
log1p = _mk_unary(log1p_op)
expm1 = _mk_unary(expm1_op)
sqrt = _mk_unary(sqrt_op)
rsqrt = _mk_unary(rsqrt_op)
sin = _mk_unary(sin_op)
cos = _mk_unary(cos_op)
tan = _mk_unary(tan_op)
asin = arcsin = _mk_unary(asin_op)
acos = arccos = _mk_unary(acos_op)
atan = arctan = _mk_unary(atan_op)
sinh = _mk_unary(sinh_op)
cosh = _mk_unary(cosh_op)
tanh = _mk_unary(tanh_op)
asinh = arcsinh = _mk_unary(asinh_op)
atanh = arctanh = _mk_unary(atanh_op)
reciprocal = _mk_unary(reciprocal_op)
sigmoid = _mk_unary(sigmoid_op)
erf = _mk_unary(erf_op)
erfinv = _mk_unary(erfinv_op)
abs = absolute = _mk_unary(abs_op)
sign = sgn = _mk_unary(sign_op)
floor = _mk_unary(D.REGISTRY["floor"])
ceil = _mk_unary(D.REGISTRY["ceil"])
trunc = fix = _mk_unary(D.REGISTRY["trunc"])
frac = _mk_unary(D.REGISTRY["frac"])
relu = _mk_unary(relu_op)
silu = _mk_unary(silu_op)
isnan = _mk_unary(isnan_op)
isinf = _mk_unary(isinf_op)
isfinite = _mk_unary(isfinite_op)
logical_not = _mk_unary(logical_not_op)
bitwise_not = _mk_unary(bitwise_not_op)


def neg(input, *, out=None):
    return _out(dispatch(neg_op, (input,)), out)


negative = neg


def round(input, *, decimals=0):
    return dispatch(D.REGISTRY["round"], (input,), {"decimals": decimals} if decimals else {})


def square(input):
    return dispatch(pow_op, (input, 2))


def gelu(input, approximate="none"):
    # the float32 forward computes the derivative for the fused backward on the way
    out = D.dispatch_keeping(gelu_op, (input,), {"approximate": approximate},
                             on=approximate == "none" and isinstance(input, D.Tensor) and input._rg
                             and D.grad_mode.enabled and D.state.simple and input._data.dtype == np.float32)
    node = out._fn
    if node is not None and approximate == "none" and getattr(type(node), "_op", None) is gelu_op:
        # the node notes the output and its version: the fused backward reads cdf(x) from it
        if out._vc is None:
            out._vc = [0, None]
        node._gelu_out = (out._data, out._vc, out._vc[0])
    return out


def softplus(input, beta=1.0, threshold=20.0):
    return dispatch(softplus_op, (input,), {"beta": beta, "threshold": threshold})


def leaky_relu(input, negative_slope=0.01):
    return dispatch(leaky_relu_op, (input,), {"negative_slope": negative_slope})


def elu(input, alpha=1.0):
    return dispatch(elu_op, (input,), {"alpha": alpha})


def hardtanh(input, min_val=-1.0, max_val=1.0):
    return dispatch(hardtanh_op, (input,), {"min_val": min_val, "max_val": max_val})


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return dispatch(nan_to_num_op, (input,), {"nan": nan, "posinf": posinf, "neginf": neginf})


def _need_tensor(name, *args):
    """PyTorch refuses Python numbers where its signature says Tensor (torch.eq(2, 3),
    torch.maximum(x, 2)): a TypeError, never an answer."""
    for k, a in enumerate(args):
        if not isinstance(a, D.Tensor):
            what = "input" if k == 0 else "other"
            raise TypeError(f"{name}(): argument '{what}' (position {k + 1}) must be Tensor, not "
                            f"{type(a).__name__}")


def _mk_cmp(op, both=False, number_input=False):
    name = op.name

    def f(input, other, *, out=None):
        if not isinstance(input, D.Tensor) and not (number_input and isinstance(other, D.Tensor)) \
                or both and not isinstance(other, D.Tensor):
            _need_tensor(name, input, *((other,) if both else ()))
        return _out(dispatch(op, (input, other)), out)
    f.__name__ = op.name
    return f


eq = _mk_cmp(eq_op)
ne = not_equal = _mk_cmp(ne_op)
lt = less = _mk_cmp(lt_op)
le = less_equal = _mk_cmp(le_op)
gt = greater = _mk_cmp(gt_op)
ge = greater_equal = _mk_cmp(ge_op)
logical_and = _mk_cmp(logical_and_op, both=True)
logical_or = _mk_cmp(logical_or_op, both=True)
logical_xor = _mk_cmp(logical_xor_op, both=True)
bitwise_and = _mk_cmp(bitwise_and_op, number_input=True)
bitwise_or = _mk_cmp(bitwise_or_op, number_input=True)
bitwise_xor = _mk_cmp(bitwise_xor_op, number_input=True)
bitwise_left_shift = _mk_cmp(bitwise_left_shift_op, number_input=True)
bitwise_right_shift = _mk_cmp(bitwise_right_shift_op, number_input=True)


def lerp(input, end, weight):
    if U.is_tensor(input) and U.is_lowp(input._data):  # PyTorch's float32 formula, rounded once
        r = _lowp_opmath(_lerp_opmath, input, end, weight) if U.is_tensor(weight) else \
            _lowp_opmath(lambda a, b: _lerp_opmath(a, b, weight), input, end)
        if r is not None:
            return r
    return input + weight * (end - input)


def _lerp_opmath(a, b, w):
    # a + w (b - a) for |w| < 0.5, b - (b - a)(1 - w) otherwise: exact at both ends
    d = b - a
    if not U.is_tensor(w):
        return a + w * d if abs(w) < 0.5 else b - d * (1 - w)
    return where(w.abs() < 0.5, a + w * d, b - d * (1 - w))


def _lowp_opmath(f, *ts):
    """f of the tensors in float32 when their result dtype is float16/bfloat16, rounded once, as
    PyTorch's CPU kernels of fused pointwise ops compute these dtypes; None otherwise."""
    if not all(U.is_tensor(t) for t in ts):
        return None
    r = U.result_dtype(*(t._data for t in ts))
    if r is not U.dt.float16 and r is not U.dt.bfloat16:
        return None
    return f(*(t.float() if t.dtype is r else t for t in ts)).to(r)


def addcmul(input, tensor1, tensor2, *, value=1):
    if U.is_tensor(input) and U.is_lowp(input._data):
        r = _lowp_opmath(lambda a, b, c: addcmul(a, b, c, value=value), input, tensor1, tensor2)
        if r is not None:
            return r
    return input + value * tensor1 * tensor2 if value != 1 else input + tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    if U.is_tensor(input) and U.is_lowp(input._data):
        r = _lowp_opmath(lambda a, b, c: addcdiv(a, b, c, value=value), input, tensor1, tensor2)
        if r is not None:
            return r
    return input + value * (tensor1 / tensor2) if value != 1 else input + tensor1 / tensor2


def _real_only(name, *xs):
    for x in xs:
        if (U.is_tensor(x) and x._data.dtype.kind == "c") or type(x) is complex:
            U.no_complex(name + "_cpu", x._data if U.is_tensor(x) else np.asarray(x))


def hypot(input, other):
    _real_only("hypot", input, other)
    _need_tensor("hypot", input, other)
    # scaled by the larger magnitude, so that squares of large (small) values do not overflow
    # (underflow): hypot(1e30, 1e30) is 1.41e30 in float32, as PyTorch's
    m = maximum(abs(input), abs(other)).detach()
    s = where(m == 0, 1.0, m)
    s = where(isinf(s), 1.0, s)
    a, b = input / s, other / s
    r = (a * a + b * b).sqrt() * s
    return where(isinf(input) | isinf(other), math.inf, r)  # inf even against NaN (C's hypot)


def logit(input, eps=None):
    _real_only("logit", input)
    x = input if eps is None else clamp(input, eps, 1 - eps)
    return (x / (1 - x)).log()


def xlogy(input, other):
    """input * log(other), 0 where input == 0 (unless other is nan); either may be a Python number."""
    _real_only("xlogy", input, other)
    _one_tensor("xlogy", input, other)
    if not U.is_tensor(other):
        other = math.log(other) if other > 0 else (-math.inf if other == 0 else math.nan)
        prod = input * other
        return prod if math.isnan(other) else where(input == 0, 0.0, prod)
    if not U.is_tensor(input):
        prod = input * log(other)
        return where(isnan(other), prod, 0.0) if input == 0 else prod
    # where input is 0 and log(other) is not finite (other <= 0 or inf), log(1) stands in: the value is 0
    # and the slope in input 0 (PyTorch's), not 0 * -inf = nan; elsewhere the slope in input is log(other)
    bad = (input == 0) & ((other <= 0) | isinf(other))
    return input * log(where(bad, 1.0, other))


def logaddexp(input, other):
    if (U.is_tensor(input) and input.is_complex()) or (U.is_tensor(other) and other.is_complex()):
        return _complex_logaddexp(input, other)
    m = maximum(input, other).detach()
    m = where(isinf(m), 0.0, m)  # both -inf (or an inf): no shift, so log(0) = -inf and log(inf) = inf, not nan
    return m + ((input - m).exp() + (other - m).exp()).log()


def _complex_logaddexp(a, b, tie_first=True):
    """log(exp(a) + exp(b)) for complex a, b as PyTorch computes it: the operand of larger real part (a
    on a tie, or b with tie_first=False: logcumsumexp's rule) plus log1p(exp(smaller - larger)), so large
    real parts do not overflow and the imaginary part runs on from the larger operand's (it is not
    wrapped into (-pi, pi]); both real parts -inf: the first operand."""
    if not U.is_tensor(a):
        a = b * 0 + a
    if not U.is_tensor(b):
        b = a * 0 + b
    first = a.real >= b.real if tie_first else a.real > b.real
    hi, lo = where(first, a, b), where(first, b, a)
    out = hi + (lo - hi).exp().log1p()
    return where(hi.real == -math.inf, hi, out)


def mish(input):
    return input * tanh(softplus(input))


def relu6(input):
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input):
    return clamp(input / 6 + 0.5, 0.0, 1.0)


def hardswish(input):
    return input * hardsigmoid(input)


def selu(input):
    return 1.0507009873554804934193349852946 * elu(input, 1.6732632423543772848170429916717)


def celu(input, alpha=1.0):
    # where, not max + min: their tie at 0 split the gradient (1.5 near 0), and exp overflowed to nan at +inf
    return where(input > 0, input, alpha * expm1(clamp_max(input, 0.0) / alpha))


def softsign(input):
    return input / (1 + abs(input))


def logsigmoid(input):
    return -softplus(-input)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _need_tensor("isclose", input, other)
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not v >= 0:
            raise RuntimeError(f"isclose: {name} must be greater than or equal to zero, but got {v}")
    from .._creation import as_tensor
    a, b = as_tensor(input), as_tensor(other)
    if a._wr is not None or b._wr is not None:  # under a transform: composed from registry ops
        # unequal infinities are never close (|inf - -inf| <= rtol * inf would say they are)
        close = (a == b) | (isfinite(a) & isfinite(b) & ((a - b).abs() <= atol + rtol * b.abs()))
        return close | (a.isnan() & b.isnan()) if equal_nan else close
    r = np.isclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return D._new_tensor(np.asarray(r))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    r = isclose(input, other, rtol, atol, equal_nan)
    if r._wr is not None:  # a transform wrapper: its level decides whether the value can be read
        return bool(r.all())
    return bool(r._data.all())


def equal(input, other):
    if input._wr is not None or (U.is_tensor(other) and other._wr is not None):
        return input.shape == other.shape and bool((input == other).all())
    return input.shape == other.shape and bool((input._data == other._data).all())
