"""Pointwise number functions beyond elementwise.py: acosh, copysign, gcd/lcm, nextafter, frexp
(primitives), and deg2rad/rad2deg, logaddexp2, ldexp, isposinf/isneginf, rsub, positive
(composites of registry ops)."""
import math

import numpy as np

from .._dispatch import defop, dispatch
from . import _util as U
from . import _results
from .elementwise import _unary, _binary_impl, where, EW

_nd = np.ndarray

# ----------------------------------------------------------------------------- primitives

acosh_op = _unary("acosh", lambda xp, a: xp.arccosh(a),
                  lambda c: _acosh_slope(c.inputs[0]))


def _copysign(xp, a, b):
    return xp.copysign(a, b)


copysign_op = defop("copysign", _binary_impl(np.copysign, "copysign", floating=True), save=("inputs", "out"),
                    bcast=True, family=EW, tensor_edges_only=True)


def _copysign_slope(ctx):
    a = ctx.inputs[0]
    # d/da |a| sign(b) = out / a, 0 at a == 0 (PyTorch's value); no slope in b
    return where(a == 0, 0.0, ctx.out / where(a == 0, 1.0, a))


@copysign_op.def_vjp
def _(ctx, g):
    return (g * _copysign_slope(ctx) if ctx.needs[0] else None), (g * 0 if ctx.needs[1] else None)


@copysign_op.def_jvp
def _(ctx, ta, tb):
    if ta is None:
        return ctx.out * 0
    return ta * _copysign_slope(ctx)


def _int_binary(name, uf):
    def impl(xp, a, b):
        for x in (a, b):
            if (type(x) is _nd and x.dtype.kind not in "iu") or isinstance(x, float):
                kind = x.dtype.name if type(x) is _nd else "float"
                raise RuntimeError(f"\"{name}_cpu\" not implemented for '{kind}': {name} expects integer "
                                   f"tensors")
        if not (type(a) is _nd and type(b) is _nd and a.dtype is b.dtype):
            a, b = U.promote(a, b)
        try:
            return uf(a, b)
        except ValueError:
            raise U.broadcast_error(name, a, b) from None
    return defop(name, impl, differentiable=False, family=EW)


gcd_op = _int_binary("gcd", np.gcd)


def _lcm(a, b):
    # |a * b| / gcd in the integer dtype, wrapping as PyTorch's kernel does
    return np.lcm(a, b)


lcm_op = _int_binary("lcm", _lcm)


def _nextafter(xp, a, b):
    if not (type(a) is _nd and type(b) is _nd and a.dtype is b.dtype):
        a, b = U.promote(a, b)
    for x in (a, b):
        if type(x) is _nd and x.dtype.kind == "c":
            U.no_complex("nextafter_cpu", x)
        if type(x) is _nd and x.dtype.kind != "f" and x.dtype != U.BF16:  # (ml_dtypes steps bfloat16's ulps)
            raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{x.dtype.name}': nextafter expects "
                               f"floating point tensors")
    try:
        return xp.nextafter(a, b)
    except ValueError:
        raise U.broadcast_error("nextafter", a, b) from None


nextafter_op = defop("nextafter", _nextafter, save=("inputs",), bcast=True, family=EW)
# PyTorch's rule: slope 1 in input where it moves (one ulp is no change), 0 where input == other
# (the result is then other's value) and 0 in other
nextafter_op.vjp = lambda ctx, g: ((g * (ctx.inputs[0] != ctx.inputs[1]) if ctx.needs[0] else None),
                                   (g * 0 if ctx.needs[1] else None))
nextafter_op.jvp = lambda ctx, ta, tb: (ta * (ctx.inputs[0] != ctx.inputs[1]) if ta is not None else tb * 0)


def _frexp(xp, a):
    if a.dtype.kind != "f" and a.dtype != U.BF16:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {a.dtype.name}")
    m, e = xp.frexp(a)
    return m, e.astype(np.int32)


frexp_op = defop("frexp", _frexp, nout=2, diff_outputs=(0,), save=("out",), family=EW)


@frexp_op.def_vjp
def _(ctx, g, ge=None):
    # mantissa = x / 2 ** exponent, the exponent piecewise constant
    return g / ctx.outs[1].to(g.dtype).exp2()


@frexp_op.def_jvp
def _(ctx, t):
    return t / ctx.outs[1].to(t.dtype).exp2(), None

# ----------------------------------------------------------------------------- public functions


def acosh(input, *, out=None):
    return U.write_out(dispatch(acosh_op, (input,)), out)


arccosh = acosh


def _no_complex(kernel, *xs):
    """PyTorch's NotImplementedError for a complex operand of a kernel that has no complex version."""
    for x in xs:
        if U.is_tensor(x) and x.is_complex():
            U.no_complex(kernel, x)


def copysign(input, other, *, out=None):
    if not U.is_tensor(input):
        raise TypeError(f"copysign(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    _no_complex("copysign_cpu", input, other)
    return U.write_out(dispatch(copysign_op, (input, other)), out)


def _tensors(name, *xs):
    for i, x in enumerate(xs):
        if not U.is_tensor(x):
            raise TypeError(f"{name}(): argument '{('input', 'other')[i]}' (position {i + 1}) must be Tensor, not "
                            f"{type(x).__name__}")


def gcd(input, other, *, out=None):
    _tensors("gcd", input, other)
    return U.write_out(dispatch(gcd_op, (input, other)), out)


def lcm(input, other, *, out=None):
    _tensors("lcm", input, other)
    return U.write_out(dispatch(lcm_op, (input, other)), out)


def nextafter(input, other, *, out=None):
    _tensors("nextafter", input, other)
    return U.write_out(dispatch(nextafter_op, (input, other)), out)


def frexp(input, *, out=None):
    m, e = dispatch(frexp_op, (input,))
    if out is not None:
        U.write_out(m, out[0])
        U.write_out(e, out[1])
        m, e = out
    return _results.frexp(m, e)


def _float_of(input):
    return input if input.is_floating_point() else input.to(_default_float())


def _default_float():
    from .. import get_default_dtype
    return get_default_dtype()


def _no_complex_angle(op, input):
    if input.is_complex():
        raise RuntimeError(f"{op} is not supported for complex tensors.")


def deg2rad(input, *, out=None):
    _no_complex_angle("deg2rad", input)
    return U.write_out(_float_of(input) * (math.pi / 180.0), out)


def rad2deg(input, *, out=None):
    _no_complex_angle("rad2deg", input)
    return U.write_out(_float_of(input) * (180.0 / math.pi), out)


def logaddexp2(input, other, *, out=None):
    """log2(2**input + 2**other), shifted by the larger operand so that it does not overflow."""
    from .elementwise import maximum, isinf
    _no_complex("logaddexp2_cpu", input, other)
    # (the shift's own slope cancels exactly, so it needs no detach(), which vmap does not carry today)
    m = maximum(input, other)
    m = where(isinf(m), 0.0, m)
    return U.write_out(m + ((input - m).exp2() + (other - m).exp2()).log2(), out)


def ldexp(input, other, *, out=None):
    """input * 2 ** other (a floating result)."""
    _tensors("ldexp", input, other)
    if not (input.is_floating_point() or input.is_complex()) and not other.is_floating_point():
        input = input.to(_default_float())
    scale = other.exp2() if other.is_floating_point() or other.is_complex() else other.to(input.dtype).exp2()
    return U.write_out(input * scale, out)


def isposinf(input, *, out=None):
    if input.is_complex():
        raise RuntimeError("isposinf does not support complex inputs.")
    if not input.is_floating_point():
        return U.write_out(input != input, out) if input.dtype.name != "bool" else U.write_out(input & False, out)
    return U.write_out(input == math.inf, out)


def isneginf(input, *, out=None):
    if input.is_complex():
        raise RuntimeError("isneginf does not support complex inputs.")
    if not input.is_floating_point():
        return U.write_out(input != input, out) if input.dtype.name != "bool" else U.write_out(input & False, out)
    return U.write_out(input == -math.inf, out)


def rsub(input, other, *, alpha=1):
    """other - alpha * input (PyTorch's reversed subtraction)."""
    _tensors("rsub", input)
    from .elementwise import sub
    if not U.is_tensor(other):
        if input.dtype.name == "bool" or isinstance(other, bool):
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        return sub(other, input, alpha=alpha) if alpha == 1 else sub(other, input * alpha)
    return sub(other, input, alpha=alpha)


def positive(input):
    if input.dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def renorm(input, p, dim, maxnorm):
    """Each slice along dim scaled down to p-norm maxnorm where its norm exceeds it (by
    maxnorm / (norm + 1e-7), PyTorch's factor); differentiable through the norm."""
    from .reduce import norm
    if not input.is_floating_point() and not input.is_complex():
        raise RuntimeError(f"renorm: input must be a floating point or complex tensor, got {input.dtype}")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported (got p={p})")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    n = input.dim()
    if n <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {n} dimensions")
    d = U.wrap_dim(dim, n, "renorm")
    others = tuple(i for i in range(n) if i != d)
    nrm = norm(input, p, others, True)
    factor = where(nrm > maxnorm, maxnorm / (nrm + 1e-7), 1.0)
    return input * factor.to(input.dtype)


def _rdiv_method(self, other):
    """Tensor.__rdiv__: other / self."""
    _tensors("__rdiv__", self)
    return self.__rtruediv__(other)


def _acosh_slope(x):
    """acosh's derivative: 1 / sqrt(x^2 - 1) for real x (>= 1); for complex x 1 / (sqrt(x - 1) sqrt(x + 1)),
    the principal branch's (sqrt(x^2 - 1) has the opposite sign where Re x < 0)."""
    if x.is_complex():
        return ((x - 1).sqrt() * (x + 1).sqrt()).reciprocal()
    return (x * x - 1).rsqrt()
